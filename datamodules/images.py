r"""Real images as a data model: a binary subset of MNIST, Fashion-MNIST, CIFAR-10, SVHN, ..."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from featlearn.contracts import GroundTruth
from featlearn.datamodules.base import DataModel
from featlearn.datamodules.sources import DEBIAN_FASHION_MNIST, SOURCES, load_source
from featlearn.seeding import LABEL_NOISE, TRAIN_SET, derive_seed
from featlearn.validation import check_bool, check_choice, check_int, check_number, is_int

STANDARDIZATIONS = ("none", "global", "per_feature")


def fit_standardizer(train: Tensor, mode: str) -> Callable[[Tensor], Tensor]:
    """The map ``standardize: mode`` applies, with its statistics fitted on ``train`` (n, ...).

    ``global``: x <- (x - m) / s with the mean m and standard deviation s of all values of
    ``train``; ``per_feature``: x_j <- (x_j - m_j) / s_j per value (s_j := 1 where a value
    is constant on ``train``); ``none``: the identity.
    """
    if mode == "global":
        mean, std = train.mean(), train.std()
        std = std if std > 0 else torch.ones_like(std)
        return lambda x: (x - mean) / std
    if mode == "per_feature":
        mean, std = train.mean(0), train.std(0)
        std = torch.where(std > 0, std, torch.ones_like(std))
        return lambda x: (x - mean) / std
    return lambda x: x


class ImageSource:
    """What the data models on an image ``source`` share: its settings, checked, and the input shape."""

    source: str
    flatten: bool

    def set_source(
        self,
        source: str,
        root: str | None,
        download: bool,
        test_fraction: float,
        standardize: str,
        flatten: bool,
        split_seed: int,
    ) -> None:
        """Check and keep the source's settings (see :class:`ImageDataModule` for their meaning)."""
        self.source = check_choice("data.source", source, sorted(SOURCES))
        self.test_fraction = check_number("data.test_fraction", test_fraction, 0.0, 1.0, strict=True)
        self.standardize = check_choice("data.standardize", standardize, STANDARDIZATIONS)
        self.flatten = check_bool("data.flatten", flatten)
        self.download = check_bool("data.download", download)
        self.split_seed = check_int("data.split_seed", split_seed, 0)
        if root is None and source == "fashion_mnist":
            root = DEBIAN_FASHION_MNIST
        if SOURCES[source].needs_root and root is None:
            raise ValueError(f"data.root is required for source: {source}: {SOURCES[source].how_to_get}.")
        self.root = root

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The shape of one input: (d,) when flattened, else (C, H, W)."""
        c, h, w = SOURCES[self.source].shape
        return (c * h * w,) if self.flatten else (c, h, w)

    @property
    def input_dim(self) -> int:
        """The number of pixel values C H W: d of the flattened inputs."""
        c, h, w = SOURCES[self.source].shape
        return c * h * w


class ImageDataModule(ImageSource, DataModel):
    r"""A finite set of real images with two classes, labelled y in {-1, +1}.

    The images of ``classes = (c_-, c_+)`` are taken from the source (see
    :mod:`featlearn.datamodules.sources`); class c_- gets y = -1 and c_+ gets y = +1.
    Preprocessing, in order, with every statistic computed on the training rows only:

    1. pixels scaled to [0, 1] (x / 255);
    2. ``standardize``: ``global``, x <- (x - m) / s with the mean m and standard deviation
       s of all training pixels; ``per_feature``, x_j <- (x_j - m_j) / s_j per pixel
       (s_j := 1 where a pixel is constant on the training rows); ``none``;
    3. ``unit_second_moment``: x <- x / sqrt(mean_i ||x_i||^2), so that E||x||^2 = 1 on
       the training rows, the scale of Shi et al.'s synthetic data (their process's
       constants then apply);
    4. ``flatten``: x in R^d with d = C H W for the two-layer network; false keeps
       (C, H, W) for convolutional learners (batches (S, B, C, H, W)).

    **Splits.** The training part of the source, restricted to the two classes, is
    shuffled once (seeded by ``split_seed``); the first ``val_size`` rows are the validation
    set and the next ``train_size`` (default: all the rest) the training set. The test set
    is the source's test part (its first ``test_size`` rows after the same shuffle, or
    all of them). Sources without a test part (``mnist_5k``, ``digits``) set aside
    ``test_fraction`` of the class rows as the test set first.

    **Ensembles.** Every member trains on the same set (the data are the data); member s
    draws its own minibatch sequence from stream ``seed + s``, so the members differ in
    their initialisation and minibatch order only, and member s sees exactly the batches
    of a single run with ``seed + s`` (the split depends on ``split_seed`` alone). The
    set is stored once on the training device and shared, not copied, by the members.

    Args:
        source: ``mnist``, ``fashion_mnist``, ``cifar10``, ``svhn`` (files under ``root``),
            ``mnist_5k`` or ``digits`` (shipped by installed packages).
        root: The folder holding the source's files (see the sources table); for
            ``fashion_mnist`` it defaults to Debian's ``/usr/share/datasets/fashion-mnist``.
        download: Let torchvision download the files into ``root`` (needs internet).
        classes: The two class indices (c_-, c_+) of the binary task.
        train_size: Training rows to use (default: all the class rows left after the
            validation split).
        val_size: Validation rows held out of the training part.
        test_size: Test rows (default: all).
        test_fraction: For sources without a test part, the fraction of rows set aside.
        standardize: ``none``, ``global`` or ``per_feature`` (see above).
        unit_second_moment: Rescale so that E||x||^2 = 1 on the training rows.
        flatten: Inputs as vectors (two-layer networks) or as (C, H, W) images.
        split_seed: Seed of the shuffle that makes the splits (``seed`` drives the minibatches).
        label_noise: The probability, in [0, 0.5], that a training or validation label is flipped,
            once per member: member s flips its own labels, seeded by ``seed + s`` as its minibatch
            stream is, so the spread over members is the spread over draws of the noise (the
            images and their order stay those of ``split_seed``). At 0.5 the labels say nothing
            about the images: training on noise, the control of a claim about what the labels
            teach. The test rows keep their labels, so the test accuracy says what the noisy
            training taught about the true ones.
        **kwargs: :class:`DataModel`'s (``batch_size``, ``seed``, ``eval_batch_size``,
            ``ensemble_size``, ``updates_per_batch``).
    """


    #: Where the files are may change between runs (a moved folder resumes).
    resume_free_arguments = DataModel.resume_free_arguments + ("root", "download")

    def __init__(
        self,
        source: str = "mnist_5k",
        root: str | None = None,
        download: bool = False,
        classes: Sequence[int] = (0, 1),
        train_size: int | None = None,
        val_size: int = 0,
        test_size: int | None = None,
        test_fraction: float = 0.2,
        standardize: str = "none",
        unit_second_moment: bool = False,
        flatten: bool = True,
        split_seed: int = 0,
        label_noise: float = 0.0,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.label_noise = float(check_number("data.label_noise", label_noise, 0.0, 0.5))
        self.set_source(source, root, download, test_fraction, standardize, flatten, split_seed)
        info = SOURCES[source]
        classes = list(classes) if isinstance(classes, Sequence) and not isinstance(classes, str) else classes
        if (
            not isinstance(classes, list)
            or len(classes) != 2
            or not all(is_int(c) and 0 <= c < info.num_classes for c in classes)
            or classes[0] == classes[1]
        ):
            raise ValueError(
                f"data.classes must be two distinct class indices in 0..{info.num_classes - 1} for {source} "
                f"(the first gets y = -1, the second y = +1), e.g. [0, 1]; got {classes!r}."
            )
        self.classes = [int(c) for c in classes]
        if train_size is not None:
            check_int("data.train_size", train_size, 1, hint=" (or null: every training row)")
        check_int("data.val_size", val_size, 0)
        if test_size is not None:
            check_int("data.test_size", test_size, 1, hint=" (or null: every test row)")
        self.train_size_requested = train_size
        self.val_size = val_size
        self.test_size = test_size
        self.unit_second_moment = check_bool("data.unit_second_moment", unit_second_moment)
        self._splits: dict[str, tuple[Tensor, Tensor]] | None = None  # CPU, preprocessed: x (n, ...), y (n,)

    # ------------------------------------------------------------------ sizes
    @property
    def train_size(self) -> int:
        """n, the number of training rows (reads the data the first time)."""
        return self._load()["train"][1].shape[0]

    # ------------------------------------------------------------------ data
    def prepare_data(self) -> None:
        """Read (and, with ``download: true``, fetch) the source once, before training starts."""
        self._load()

    def train_set(self) -> tuple[Tensor, Tensor]:
        """The training rows on the training device: x (S, n, ...) stored once for all members, y (S, n).

        Each member's y is its own draw of ``label_noise``; without it, y is shared too.
        """
        return self._device_split("train")

    def eval_set(self, split: str) -> tuple[Tensor, Tensor]:
        """The validation (``"val"``) or test (``"test"``) rows: x (S, n, ...), y (S, n)."""
        return self._device_split(split)

    def ground_truth(self) -> GroundTruth:
        """Real data have no ground-truth features: the class-mean directions stand in for them.

        ``class_means`` (2, d), the mean preprocessed training input of class c_- and c_+
        (flattened), and ``class_mean_labels`` (2,) = (-1, +1). ``FeatureAlignment``
        marks them in its pictures and measures the neurons against them.
        """
        return GroundTruth(class_means=self.class_means().flatten(1), class_mean_labels=torch.tensor([-1.0, 1.0]))

    def class_means(self) -> Tensor:
        """The mean preprocessed training input of each class, (2, d) or (2, C, H, W): rows c_-, c_+.

        Real data have no ground-truth features; diagnostics mark these directions instead. They
        are the means of the true classes: ``label_noise`` changes what a run trains on, not them.
        """
        x, y = self._load()["train"]  # the true labels: label_noise flips only the members' device views
        return torch.stack([x[y == -1].mean(0), x[y == 1].mean(0)])

    def _device_split(self, split: str) -> tuple[Tensor, Tensor]:
        x, y = self._load()[split]  # (n, ...), (n,)
        if not self.label_noise or split == "test":
            return self.shared_views(split, x, y)
        # The images once (stride 0 along S), each member's labels its own draw of the noise: (S, n).
        members, device = self.ensemble_size, self.device
        # Moved before the expand: moving a stride-0 view would copy the images once per member.
        return self.shared_views(
            split,
            build=lambda: (x.to(device).unsqueeze(0).expand(members, *x.shape), self.noisy_labels(split, y, members)),
        )

    def noisy_labels(self, split: str, labels: Tensor, members: int) -> Tensor:
        """Each member's labels of ``split``, each flipped with probability ``label_noise``: (S, n).

        Member s draws from the stream seeded by ``(seed + s, LABEL_NOISE)``, the training
        flips first and the validation flips after them: a member's labels are those of a
        single run with seed ``seed + s``, whatever the ensemble size.
        """
        rows, n_train = [], self._load()["train"][1].shape[0]
        for s in range(members):
            flips = torch.Generator().manual_seed(derive_seed(self.seed + s, LABEL_NOISE))
            draws = torch.rand(n_train + (labels.shape[0] if split == "val" else 0), generator=flips)
            flip = (draws[n_train:] if split == "val" else draws) < self.label_noise  # (n,)
            rows.append(torch.where(flip, -labels, labels))
        return torch.stack(rows)  # (S, n)

    def _load(self) -> dict[str, tuple[Tensor, Tensor]]:
        if self._splits is None:
            self._splits = self._preprocess(load_source(self.source, self.root, self.download))
        return self._splits

    def _preprocess(self, splits) -> dict[str, tuple[Tensor, Tensor]]:
        """Class subset, splits, scaling and standardisation (statistics of the training rows)."""
        gen = torch.Generator().manual_seed(derive_seed(self.split_seed, TRAIN_SET))

        def subset(images: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
            keep = (labels == self.classes[0]) | (labels == self.classes[1])
            images, labels = images[keep], labels[keep]
            order = torch.randperm(labels.shape[0], generator=gen)
            return images[order], torch.where(labels[order] == self.classes[1], 1.0, -1.0)

        train_x, train_y = subset(splits.train_images, splits.train_labels)
        if splits.test_images is None:
            n_test = int(round(self.test_fraction * train_y.shape[0]))
            test_x, test_y = train_x[:n_test], train_y[:n_test]
            train_x, train_y = train_x[n_test:], train_y[n_test:]
        else:
            test_x, test_y = subset(splits.test_images, splits.test_labels)
        for name, labels in (("training", train_y), ("test", test_y)):
            if labels.numel() == 0 or labels.abs().sum() == labels.sum().abs():
                raise ValueError(
                    f"data.classes {self.classes}: the {name} part of {self.source} holds "
                    f"{'no rows' if labels.numel() == 0 else 'only one'} of the two classes; pick other classes."
                )
        available = train_y.shape[0] - self.val_size
        wanted = available if self.train_size_requested is None else self.train_size_requested
        if available < 1 or wanted > available:
            raise ValueError(
                f"data.train_size = {self.train_size_requested} and data.val_size = {self.val_size} need "
                f"{wanted + self.val_size} training rows, but {self.source} classes {self.classes} have "
                f"{train_y.shape[0]}: lower them."
            )
        if self.test_size is not None:
            if self.test_size > test_y.shape[0]:
                raise ValueError(
                    f"data.test_size = {self.test_size} but {self.source} classes {self.classes} have "
                    f"{test_y.shape[0]} test rows: lower it or set it to null (all)."
                )
            test_x, test_y = test_x[: self.test_size], test_y[: self.test_size]
        val_x, val_y = train_x[: self.val_size], train_y[: self.val_size]
        train_x, train_y = (
            train_x[self.val_size : self.val_size + wanted],
            train_y[self.val_size : self.val_size + wanted],
        )

        parts = {"train": train_x, "val": val_x, "test": test_x}
        parts = {k: v.to(torch.float64) / 255.0 for k, v in parts.items()}  # (n, C, H, W) in [0, 1]
        standardize = fit_standardizer(parts["train"], self.standardize)
        parts = {k: standardize(v) for k, v in parts.items()}
        if self.unit_second_moment:
            scale = parts["train"].flatten(1).pow(2).sum(1).mean().sqrt()
            parts = {k: v / scale for k, v in parts.items()}
        shape = self.input_shape
        labels = {"train": train_y, "val": val_y, "test": test_y}
        return {
            k: (v.reshape(v.shape[0], *shape).to(self.dtype).contiguous(), labels[k].to(self.dtype))
            for k, v in parts.items()
        }
