r"""Teacher-relabelled mixtures of real and injected inputs (Shi et al. 2022, Section 6 and E.5)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from featlearn.datamodules.base import DataModel
from featlearn.datamodules.images import ImageSource, fit_standardizer
from featlearn.datamodules.sources import (
    SOURCES,
    image_folder,
    load_source,
    natural_photographs,
    random_patches,
    to_image_shape,
)
from featlearn.seeding import INJECTED_SET, TRAIN_SET, derive_seed
from featlearn.validation import check_choice, check_int, check_number

INJECTED_SOURCES = ("gaussian", "natural_patches", "image_folder")
GAUSSIAN_COVARIANCES = ("isotropic", "matched")
#: Origin codes of :meth:`TeacherMixture.origins`.
ORIGINAL, INJECTED = 0, 1


class TeacherMixture(ImageSource, DataModel):
    r"""A mixture of real inputs L and injected inputs U, every input labelled by one teacher.

    Shi et al. keep the labelling function and change the input distribution: a teacher
    network f (chosen and trained by Algorithm 1, :mod:`featlearn.teacher`) labels
    the mixture

    .. math::

        M = \{(x, \arg\max_j f(x)_j) : x \in L_{1-\alpha} \cup U_\alpha\},

    where a fraction alpha of the N training inputs come from the injected source U and
    the rest from the real dataset L (whose own labels are replaced by the teacher's, as
    the paper does). Each input keeps its origin (:meth:`origins`) so a student's
    accuracy can be read per part (:meth:`part_sets`).

    **The parts.** L: every class of the image ``source`` (C = 10 classes for the
    shipped sources), pixels in [0, 1]. U (``injected``):

    * ``gaussian``: with ``gaussian_covariance: isotropic``, x ~ N(m, v I), m the per-pixel
      mean of L's training images and v their average per-pixel variance (same mean and
      same E||x - m||^2 as L, no structure); ``matched``, x ~ N(m, Sigma) with L's
      pixel covariance Sigma (L's second-order statistics, none of its higher-order
      structure). Values are not clipped to [0, 1].
    * ``natural_patches``: random ``patch_size`` crops of the natural photographs that
      scikit-learn and scikit-image ship (offline stand-in for Tiny ImageNet).
    * ``image_folder``: images of a torchvision image folder at ``injected_root`` (a
      placed Tiny ImageNet's ``train/``).

    Natural images are brought to L's shape (:func:`~featlearn.datamodules.sources.to_image_shape`:
    grey <-> RGB, antialiased resize) and normalised to L's pixel mean and standard
    deviation (an affine map of all their pixels). Then both parts go through the same
    ``standardize`` (statistics of L's training rows) and ``flatten``.

    **Splits.** L's training part is shuffled once (``split_seed``); N = ``train_size``
    of its rows (default: all) make L's training rows. U's training pool has N inputs
    as well, drawn from the stream ``(split_seed, INJECTED_SET, 0)``. The mixture's
    training set is the first round((1 - alpha) N) rows of L and the first
    N - round((1 - alpha) N) of U's pool. The teacher sees L's N rows with their own labels
    and U's whole pool (its regulariser): neither depends on alpha, so one teacher serves
    every alpha. Test parts: ``test_size`` rows of L's test part (or ``test_fraction``
    of the source where it has none) and ``test_size`` fresh inputs from U; the mixture's
    test set takes round((1 - alpha) T) and T - round((1 - alpha) T) of them.

    **Reference members.** With ``reference_members: R`` the last R members of the
    ensemble train on L's N training rows alone (alpha = 0, same N, same teacher labels),
    the paper's "training on the original data" curve, in the same run.

    Until the teacher has labelled it (:meth:`relabel`), the data model has inputs and
    L's own labels only; asking for a training or test set raises.

    Args:
        source: The labelled data L (see :mod:`featlearn.datamodules.sources`).
        root: L's folder where the source needs one.
        download: Let torchvision download L (needs internet).
        injected: U: ``gaussian``, ``natural_patches`` or ``image_folder``.
        gaussian_covariance: ``isotropic`` or ``matched`` (for ``injected: gaussian``).
        injected_root: The image folder of ``injected: image_folder``.
        patch_size: Side of the photograph crops of ``injected: natural_patches`` before resizing.
        alpha: The fraction of injected inputs in the mixture, in [0, 1].
        train_size: N, the mixture's training inputs (default: all of L's training rows).
        test_size: T, test inputs per part (default: all of L's test rows).
        test_fraction: For sources without a test part, the fraction of rows set aside.
        standardize: ``none``, ``global`` or ``per_feature`` (statistics of L's training rows).
        flatten: Inputs as vectors (FC(m)) or (C, H, W) images (ResNet(m)).
        split_seed: Seed of L's shuffle and of U's draws (fixed while the training seed varies).
        reference_members: R, the last members that train on L alone (0: none).
        **kwargs: :class:`DataModel`'s (``batch_size``, ``seed``, ``eval_batch_size``,
            ``ensemble_size``, ``updates_per_batch``).
    """


    #: Where the files are may change between runs (a moved folder resumes).
    resume_free_arguments = DataModel.resume_free_arguments + ("root", "download", "injected_root")

    def __init__(
        self,
        source: str = "mnist_5k",
        root: str | None = None,
        download: bool = False,
        injected: str = "gaussian",
        gaussian_covariance: str = "isotropic",
        injected_root: str | None = None,
        patch_size: int = 64,
        alpha: float = 0.5,
        train_size: int | None = None,
        test_size: int | None = None,
        test_fraction: float = 0.2,
        standardize: str = "global",
        flatten: bool = True,
        split_seed: int = 0,
        reference_members: int = 0,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.set_source(source, root, download, test_fraction, standardize, flatten, split_seed)
        self.injected = check_choice("data.injected", injected, INJECTED_SOURCES)
        self.gaussian_covariance = check_choice("data.gaussian_covariance", gaussian_covariance, GAUSSIAN_COVARIANCES)
        self.patch_size = check_int("data.patch_size", patch_size, 1)
        self.alpha = float(check_number("data.alpha", alpha, 0.0, 1.0))
        if train_size is not None:
            check_int("data.train_size", train_size, 2, hint=" (or null: all of L's training rows)")
        if test_size is not None:
            check_int("data.test_size", test_size, 1, hint=" (or null: all of L's test rows)")
        self.train_size_requested = train_size
        self.test_size_requested = test_size
        self.reference_members = check_int("data.reference_members", reference_members, 0)
        if self.reference_members >= self.ensemble_size:
            raise ValueError(
                f"data.reference_members = {reference_members} leaves no member for the mixture (ensemble size "
                f"{self.ensemble_size}): raise model.init_args.ensemble_size or lower data.reference_members."
            )
        if injected == "image_folder" and injected_root is None:
            raise ValueError(
                "data.injected: image_folder needs data.injected_root, a folder of images (one sub-folder per "
                "class, as torchvision's ImageFolder reads, e.g. tiny-imagenet-200/train)."
            )
        self.injected_root = injected_root
        self._parts: dict[str, Tensor] | None = None  # CPU inputs (n, ...) by part name
        self._own_labels: dict[str, Tensor] | None = None  # L's labels by split
        self._labels: dict[str, Tensor] | None = None  # the teacher's, by part name

    # ------------------------------------------------------------------ shape and sizes
    @property
    def num_classes(self) -> int:
        """C, the classes of L (and of the teacher's labels)."""
        return SOURCES[self.source].num_classes

    @property
    def train_size(self) -> int:
        """N, the mixture's training inputs (reads the data the first time)."""
        return self._load()["train_original"].shape[0]

    def part_sizes(self, split: str) -> tuple[int, int]:
        """(inputs from L, inputs from U) of the mixture's ``split`` (``train`` or ``test``)."""
        n = self._load()[f"{split}_original"].shape[0]
        from_l = int(round((1.0 - self.alpha) * n))
        return from_l, n - from_l

    # ------------------------------------------------------------------ the teacher's view
    def teacher_data(self) -> dict[str, Tensor]:
        """What the teacher is trained and tested on, on the CPU.

        ``train_x`` (N, ...), ``train_y`` (N,): L's training rows with their own labels;
        ``test_x``, ``test_y``: L's test rows; ``unlabelled`` (N, ...): U's training pool.
        None of it depends on alpha or on the reference members.
        """
        parts, labels = self._load(), self._own_labels
        return {
            "train_x": parts["train_original"],
            "train_y": labels["train"],
            "test_x": parts["test_original"],
            "test_y": labels["test"],
            "unlabelled": parts["train_injected"],
        }

    def teacher_data_key(self) -> dict:
        """Everything that determines :meth:`teacher_data`: a teacher cache is keyed by it."""
        return {
            "source": self.source,
            "root": None if self.root is None else str(self.root),
            "injected": self.injected,
            "gaussian_covariance": self.gaussian_covariance if self.injected == "gaussian" else None,
            "injected_root": self.injected_root if self.injected == "image_folder" else None,
            "patch_size": self.patch_size if self.injected == "natural_patches" else None,
            "train_size": self.train_size_requested,
            "test_size": self.test_size_requested,
            "test_fraction": self.test_fraction,
            "standardize": self.standardize,
            "flatten": self.flatten,
            "split_seed": self.split_seed,
        }

    def labelled_data_key(self) -> dict:
        """The part of :meth:`teacher_data_key` that determines L's rows alone (what a sweep on L depends on)."""
        injected = ("injected", "gaussian_covariance", "injected_root", "patch_size")
        return {k: v for k, v in self.teacher_data_key().items() if k not in injected}

    def relabel(self, labeller: Callable[[Tensor], Tensor], chunk: int = 4096) -> None:
        """Label every input of both parts by ``labeller``: inputs (n, ...) on the CPU -> classes (n,).

        Raises:
            ValueError: The labeller returns other than n class indices in 0..C-1.
        """
        labels = {}
        for name, x in self._load().items():
            with torch.no_grad():
                y = torch.cat([labeller(x[i : i + chunk]).reshape(-1) for i in range(0, x.shape[0], chunk)])
            if y.shape != (x.shape[0],) or (y.numel() and (y.min() < 0 or y.max() >= self.num_classes)):
                raise ValueError(f"The teacher's labels of {name} are not {x.shape[0]} classes in 0..C-1.")
            labels[name] = y.long()
        self._labels = labels
        self.forget_device_views()

    def labelled_part(self, split: str, part: str) -> tuple[Tensor, Tensor]:
        """One part of one split with the teacher's labels, on the CPU: x (n, ...), y (n,).

        ``split``: ``train`` or ``test``; ``part``: ``original`` or ``injected`` (for
        ``train``, U's whole training pool). For studies of the labelling itself, such as
        students trained on the injected part alone (Shi et al.'s Figure 26).
        """
        self._require_labels()
        key = f"{split}_{part}"
        return self._load()[key], self._labels[key]

    @property
    def is_labelled(self) -> bool:
        """Whether a teacher has labelled the inputs (:meth:`relabel`)."""
        return self._labels is not None

    def label_counts(self) -> dict[str, Tensor]:
        """How many inputs of each part carry each teacher label: part name -> (C,)."""
        self._require_labels()
        return {k: torch.bincount(v, minlength=self.num_classes) for k, v in self._labels.items()}

    # ------------------------------------------------------------------ sets
    def member_groups(self) -> dict[str, list[int]]:
        """Member indices by what they train on: ``mixture`` and ``reference`` (L alone)."""
        split = self.ensemble_size - self.reference_members
        return {"mixture": list(range(split)), "reference": list(range(split, self.ensemble_size))}

    def origins(self, split: str = "train") -> Tensor:
        """Where each input of the mixture's ``split`` comes from: (n,) of 0 (L) and 1 (U)."""
        from_l, from_u = self.part_sizes(split)
        return torch.cat([torch.full((from_l,), ORIGINAL), torch.full((from_u,), INJECTED)])

    def train_set(self) -> tuple[Tensor, Tensor]:
        """The training set on the device: x (S, N, ...), y (S, N); reference members see L alone."""
        return self._members_set("train")

    def eval_set(self, split: str) -> tuple[Tensor, Tensor]:
        """The mixture's test set (``"test"``, see the splits above), or an empty ``"val"``: (S, n, ...), (S, n)."""
        if split == "val":
            x, y = self._members_set("test")
            return x[:, :0], y[:, :0]
        return self.shared_views("test_mixture", *self._mixture("test"))

    def part_sets(self, split: str = "test") -> dict[str, tuple[Tensor, Tensor]]:
        """Each part of ``split`` alone, labelled by the teacher: ``original`` and ``injected``, (S, n, ...), (S, n)."""
        self._require_labels()
        parts = self._load()
        return {
            part: self.shared_views(f"{split}_{part}", parts[f"{split}_{part}"], self._labels[f"{split}_{part}"])
            for part in ("original", "injected")
        }

    def _mixture(self, split: str) -> tuple[Tensor, Tensor]:
        self._require_labels()
        parts, labels = self._load(), self._labels
        from_l, from_u = self.part_sizes(split)
        x = torch.cat([parts[f"{split}_original"][:from_l], parts[f"{split}_injected"][:from_u]])
        y = torch.cat([labels[f"{split}_original"][:from_l], labels[f"{split}_injected"][:from_u]])
        return x, y

    def _members_set(self, split: str) -> tuple[Tensor, Tensor]:
        if not self.reference_members:
            return self.shared_views(f"{split}_mixture", *self._mixture(split))

        def build() -> tuple[Tensor, Tensor]:
            # Two groups with different sets: one copy per member (no stride-0 view spans both).
            mixture = self._mixture(split)
            original = (self._load()[f"{split}_original"], self._labels[f"{split}_original"])
            groups = self.member_groups()
            return tuple(
                torch.stack([mixture[i]] * len(groups["mixture"]) + [original[i]] * len(groups["reference"]))
                for i in range(2)
            )

        return self.shared_views(f"{split}_members", build=build)

    def _require_labels(self) -> None:
        if self._labels is None:
            raise RuntimeError(
                "TeacherMixture has no labels yet: its inputs are labelled by a teacher. Give the config a "
                "`teacher:` section (featlearn.teacher.TeacherSearch), which trains or loads the teacher "
                "and labels the data before training."
            )

    # ------------------------------------------------------------------ loading
    def prepare_data(self) -> None:
        """Read L and draw U once, before training."""
        self._load()

    def _load(self) -> dict[str, Tensor]:
        if self._parts is None:
            self._parts, self._own_labels = self._build()
        return self._parts

    def _build(self) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
        """L's splits and U's draws, preprocessed: inputs by part, L's own labels by split."""
        splits = load_source(self.source, self.root, self.download)
        gen = torch.Generator().manual_seed(derive_seed(self.split_seed, TRAIN_SET))
        order = torch.randperm(splits.train_labels.shape[0], generator=gen)
        train_x, train_y = splits.train_images[order], splits.train_labels[order]
        if splits.test_images is None:
            n_test = int(round(self.test_fraction * train_y.shape[0]))
            test_x, test_y = train_x[:n_test], train_y[:n_test]
            train_x, train_y = train_x[n_test:], train_y[n_test:]
        else:
            test_order = torch.randperm(splits.test_labels.shape[0], generator=gen)
            test_x, test_y = splits.test_images[test_order], splits.test_labels[test_order]
        for name, wanted, have in (
            ("train_size", self.train_size_requested, train_y.shape[0]),
            ("test_size", self.test_size_requested, test_y.shape[0]),
        ):
            if wanted is not None and wanted > have:
                raise ValueError(
                    f"data.{name} = {wanted} but {self.source} has {have} such rows: lower it, or null for all."
                )
        n = train_y.shape[0] if self.train_size_requested is None else self.train_size_requested
        t = test_y.shape[0] if self.test_size_requested is None else self.test_size_requested
        shape = SOURCES[self.source].shape
        original = {"train": train_x[:n].to(torch.float64) / 255.0, "test": test_x[:t].to(torch.float64) / 255.0}
        injected = self._injected(original["train"], {"train": n, "test": t}, shape)
        standardize = fit_standardizer(original["train"], self.standardize)
        parts = {}
        for split in ("train", "test"):
            for part, values in (("original", original[split]), ("injected", injected[split])):
                values = standardize(values).reshape(values.shape[0], *self.input_shape)
                parts[f"{split}_{part}"] = values.to(self.dtype).contiguous()
        return parts, {"train": train_y[:n].long(), "test": test_y[:t].long()}

    def _injected(self, original: Tensor, sizes: dict[str, int], shape: tuple[int, int, int]) -> dict[str, Tensor]:
        """U's training pool and test inputs, (n, C, H, W) float64 on L's pixel scale."""
        out = {}
        for i, (split, n) in enumerate(sizes.items()):
            gen = torch.Generator().manual_seed(derive_seed(self.split_seed, INJECTED_SET, i))
            if self.injected == "gaussian":
                out[split] = self._gaussian(original, n, gen)
            elif self.injected == "natural_patches":
                photos = natural_photographs()
                smallest = min(min(img.shape[1:]) for img in photos)
                if self.patch_size > smallest:
                    raise ValueError(
                        f"data.patch_size = {self.patch_size} exceeds the smallest shipped photograph's side "
                        f"({smallest}): lower it."
                    )
                patches = random_patches(photos, n, self.patch_size, gen)
                out[split] = self._normalised(
                    to_image_shape(patches, shape, "data.injected: natural_patches"), original
                )
            else:
                images = image_folder(self.injected_root, n, gen)
                images = to_image_shape(images, shape, f"data.injected_root {self.injected_root!r}")
                out[split] = self._normalised(images, original)
        return out

    @staticmethod
    def _normalised(images: Tensor, original: Tensor) -> Tensor:
        """Natural images given L's pixel statistics: (x - mean_U) / std_U * std_L + mean_L.

        Photographs are brighter and higher in contrast than digits; without this their
        inputs' norms would differ from L's by a factor (2.5 for MNIST against the shipped
        photographs), and the quadratic students diverged. Each part's statistics are
        over all of its pixels.
        """
        std = images.std()
        scale = original.std() / std if std > 0 else 1.0
        return (images - images.mean()) * scale + original.mean()

    def _gaussian(self, original: Tensor, n: int, gen: torch.Generator) -> Tensor:
        """Draw n Gaussian images with L's per-pixel mean and its covariance (matched) or average variance."""
        flat = original.flatten(1)  # (N, d)
        mean = flat.mean(0)
        noise = torch.randn(n, flat.shape[1], generator=gen, dtype=torch.float64)  # (n, d)
        if self.gaussian_covariance == "isotropic":
            samples = mean + noise * flat.var(0).mean().sqrt()
        else:
            centred = flat - mean
            cov = centred.T @ centred / max(flat.shape[0] - 1, 1)  # (d, d)
            values, vectors = torch.linalg.eigh(cov)
            root = vectors * values.clamp_min(0.0).sqrt()  # Sigma = root root^T
            samples = mean + noise @ root.T
        return samples.reshape(n, *original.shape[1:])
