"""The sparse-coding data model of Shi, Wei & Liang (2022), and the dictionary machinery it shares.

:class:`DictionaryDataModule` holds what every data model ``x~ = M phi~ + zeta`` of
the paper shares (the dictionary M, the class-relevant set A, the exact
normalisation, class conditioning, sampling from the law of phi~, the constants of
the training process); :class:`SparseCoding` (Section 3, E.1, E.2) and
:class:`~featlearn.datamodules.hidden_representation.HiddenRepresentation` (E.3.1)
each state their law of phi~. The law and its moments are pure functions in
:mod:`featlearn.datamodules.sparse_coding_law`.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import torch
from torch import Tensor

from featlearn.datamodules.base import SyntheticDataModule
from featlearn.datamodules.sparse_coding_law import (
    HiddenLaw,
    bernoulli_law,
    complement,
    hidden_moments,
    input_moments,
    mixture_law,
    random_subsets,
    signal_strength,
    uniform_law,
)
from featlearn.linalg import orthonormal_columns, unit_columns
from featlearn.schedules import ScheduleSpec
from featlearn.seeding import STRUCTURE, derive_seed
from featlearn.validation import check_bool, check_choice, check_int, check_number, check_probability, is_int, is_number

LABELINGS = ("parity", "threshold", "interval", "set")
PATTERNS = ("mixture", "bernoulli")
DICTIONARIES = ("orthonormal", "incoherent")

#: process_constants(): a signal strength gamma at or below this is "no per-pattern
#: signal" (a random code table), and E.1.1's gamma is used instead.
GAMMA_FLOOR = 1e-3
#: E.1.1's gamma (the parity mixture with p_o = 1/2): (1 - p_o) / 2 = 1/4.
E11_GAMMA = 0.25


class DictionaryDataModule(SyntheticDataModule):
    r"""Inputs ``x~ = M phi~ + zeta`` from a dictionary M and a hidden binary vector phi~.

    Shi, Wei & Liang (2022), Section 3, eq. (1), with the generalisations of
    Appendix F (eq. 294). A dictionary ``M in R^{d x D}`` holds D patterns; a hidden
    vector ``phi~ in {0, 1}^D`` says which are present; a subset ``A`` of k
    class-relevant patterns carries the label:

    .. math::

        \tilde x = M \tilde\phi + \zeta, \quad \zeta \sim N(0, \sigma_\zeta^2 I_d).

    A subclass states the law of (phi~, y) by :meth:`_natural_law` (a
    :class:`~featlearn.datamodules.sparse_coding_law.HiddenLaw`), the message of
    :meth:`_single_class_error`, and, if its law is over a code table, draws the
    table in :meth:`_draw_codes`; it calls :meth:`_set_law` at the end of its
    ``__init__``. This class does the rest:

    **Dictionary** (``dictionary``): ``orthonormal`` (Section 3; M^T M = I, needs
    D <= d; Haar-random via QR of a Gaussian) or ``incoherent`` (Appendix F (D): i.i.d.
    uniformly random unit columns, so |<M_i, M_j>| = O(sqrt(log D / d)); allows
    D > d). M, then A (a uniformly random k-subset unless ``relevant`` is given), then
    the code table are drawn in that order from ``structure_seed``.

    **Class imbalance** (``negative_ratio = r``, E.2.2): the distribution is
    conditioned to Pr[y = -1] = r, i.e. ``r D(. | y=-1) + (1 - r) D(. | y=+1)``,
    exactly (by reweighting the law of phi~; no rejection loop, no batch
    statistics). The paper fixes the class counts of a finite set; here each sample
    is negative with probability r independently.

    **Normalisation** (Section 3 "Loss Function", Appendix F.1.1): the data model
    returns ``x = (x~ - E[x~]) / sigma~`` with the exact mean and the exact *total*
    standard deviation

    .. math::

        \tilde\sigma^2 = E \|\tilde x - E\tilde x\|_2^2
        = \sum_{i=1}^d \mathrm{Var}(\tilde x_i)
        = \mathrm{tr}(M^\top M \,\mathrm{Cov}(\tilde\phi)) + d \sigma_\zeta^2 ,

    so that E[x] = 0 and E||x||^2 = 1 (unit *total* variance; each coordinate has
    variance 1/d on average, not 1). For orthonormal M this is the paper's
    sum_j Var(phi~_j) + d sigma_zeta^2; for an incoherent M the cross terms
    <M_i, M_j> Cov(phi~_i, phi~_j) are kept (the paper's F.1.1 formula drops them).
    Both moments are computed analytically from the law of phi~, not estimated.

    Args:
        d: Input dimension d.
        D: Number of dictionary patterns D.
        k: Number of class-relevant patterns k = |A|, 1 <= k <= D.
        negative_ratio: None (the natural class proportions) or r in (0, 1), the
            probability of the label -1.
        dictionary: ``orthonormal`` or ``incoherent``.
        sigma_zeta: Standard deviation of the input noise zeta (Appendix F), >= 0.
        relevant: The class-relevant set A (k distinct indices in [0, D)); None draws
            a uniformly random k-subset from ``structure_seed`` (sorted).
        structure_seed: Seed of M, A and any random code table: part of the
            distribution, shared by every ensemble member.
        batch_size: Samples per update step (int or schedule); paper: 1000.
        **kwargs: Forwarded to :class:`SyntheticDataModule` (``train_size``,
            ``test_size``, ``seed``, ...).
    """

    state_keys = SyntheticDataModule.state_keys + ("d", "D", "k", "structure_seed")

    def __init__(
        self,
        d: int,
        D: int,
        k: int,
        negative_ratio: float | None = None,
        dictionary: str = "orthonormal",
        sigma_zeta: float = 0.0,
        relevant: list[int] | None = None,
        structure_seed: int = 0,
        batch_size: ScheduleSpec = 1000,
        **kwargs,
    ) -> None:
        super().__init__(batch_size=batch_size, **kwargs)
        for name, value in (("d", d), ("D", D), ("k", k)):
            check_int(f"data.{name}", value, 1)
        if k > D:
            raise ValueError(
                f"data.k must be <= data.D (A is a subset of the D patterns), got k={k} > D={D}: "
                f"lower data.k or raise data.D."
            )
        check_choice("data.dictionary", dictionary, DICTIONARIES)
        if dictionary == "orthonormal" and D > d:
            raise ValueError(
                f"data.D must be <= data.d for an orthonormal dictionary (D orthonormal columns in "
                f"R^d), got D={D} > d={d}: lower data.D, raise data.d, or set "
                f"data.dictionary: incoherent."
            )
        check_int("data.structure_seed", structure_seed, 0)
        sigma_zeta = check_number(
            "data.sigma_zeta",
            sigma_zeta,
            minimum=0.0,
            hint=" (the standard deviation of the input noise zeta; 0 for none)",
        )
        if negative_ratio is not None:
            if not (is_number(negative_ratio) and 0.0 < negative_ratio < 1.0):
                raise ValueError(
                    f"data.negative_ratio must be null (natural class proportions) or a probability "
                    f"strictly between 0 and 1 (the fraction of label -1), got {negative_ratio!r}."
                )
            negative_ratio = float(negative_ratio)
        if relevant is not None:
            relevant = list(relevant)
            if len(relevant) != k or not all(is_int(i) and 0 <= i < D for i in relevant) or len(set(relevant)) != k:
                raise ValueError(
                    f"data.relevant must list k={k} distinct pattern indices in [0, {D - 1}] "
                    f"(or be null for a random A), got {relevant!r}."
                )
        self.d, self.D, self.k = d, D, k
        self.negative_ratio = negative_ratio
        self.dictionary, self.sigma_zeta = dictionary, sigma_zeta
        self.relevant, self.structure_seed = relevant, structure_seed
        self._law: HiddenLaw | None = None  # set by _set_law()
        self._structure: dict[str, Tensor] | None = None  # float64 / long, on the CPU
        self._on: dict[torch.device, dict[str, Tensor]] = {}

    # ------------------------------------------------------------------ subclass API
    @abc.abstractmethod
    def _natural_law(self) -> HiddenLaw:
        """The law of (phi~, y) before any class conditioning."""

    @abc.abstractmethod
    def _single_class_error(self, only: str, p_pos: float) -> str:
        """The message refusing a law under which every sample has the label ``only`` (Pr[y = +1] = p_pos).

        It must contain "gives every sample the label".
        """

    def _draw_codes(self, generator: torch.Generator) -> Tensor | None:
        """The code table (N, k) float64 of a law of code form, drawn after M and A (None: no table)."""
        return None

    def _set_law(self) -> None:
        """Compute the law, refuse a single class, and condition on ``negative_ratio``.

        Raises:
            ValueError: If one label has probability 1 (or 0).
        """
        law = self._natural_law()
        p_pos = law.positive_probability()
        if not 1e-12 < p_pos < 1.0 - 1e-12:
            raise ValueError(self._single_class_error("+1" if p_pos >= 0.5 else "-1", p_pos))
        self._law = law if self.negative_ratio is None else law.conditioned(self.negative_ratio)

    def _structured(self) -> DictionaryDataModule:
        """The data model whose sigma~ and gamma set the training process (see :meth:`process_constants`)."""
        return self

    # ------------------------------------------------------------------ the structure
    def _structure_tensors(self) -> dict[str, Tensor]:
        """M, A and the codes, drawn once from ``structure_seed`` (CPU, float64/long)."""
        if self._structure is None:
            gen = torch.Generator().manual_seed(derive_seed(self.structure_seed, STRUCTURE))
            # Fixed draw order (M, then A, then codes) so that each is the same whatever
            # the other options: e.g. giving `relevant` does not change M or the codes.
            draw = orthonormal_columns if self.dictionary == "orthonormal" else unit_columns
            m = draw(self.d, self.D, gen)
            a = torch.randperm(self.D, generator=gen)[: self.k].sort().values
            if self.relevant is not None:
                a = torch.tensor(self.relevant, dtype=torch.long)
            structure = {"M": m, "A": a}
            codes = self._draw_codes(gen)
            if codes is not None:
                structure["codes"] = codes
            self._structure = structure
        return self._structure

    def _codes_of_law(self) -> Tensor | None:
        """The code table when the law is of code form (drawing the structure), else None."""
        return self._structure_tensors()["codes"] if self._law.kind == "code" else None

    def _moments(self) -> dict[str, Tensor]:
        """E phi~ (D,), E x~ (d,) and sigma~ (a 0-dim tensor), exact, float64 (cached)."""
        structure = self._structure_tensors()
        if "sigma" not in structure:
            moments = hidden_moments(self._law, self.k, self._codes_of_law())
            mean_phi, mean_x, var = input_moments(structure["M"], structure["A"], moments, self.sigma_zeta)
            if not var > 0:
                raise ValueError(
                    "The inputs of this data model are constant (sigma~ = 0), so they cannot be "
                    "normalised: choose pattern probabilities strictly between 0 and 1 or "
                    "data.sigma_zeta > 0."
                )
            structure["mean_phi"] = mean_phi
            structure["mean_x"] = mean_x
            structure["sigma"] = var.sqrt()
        return structure

    def _tensors_on(self, device: torch.device) -> dict[str, Tensor]:
        """What sampling needs, on ``device`` (cached per device)."""
        device = torch.device(device)
        cached = self._on.get(device)
        if cached is None:
            s = self._moments()
            law = self._law
            a = s["A"]
            cached = {
                "A": a.to(device),
                "outside": complement(a, self.D).to(device),
                "mean_phi": s["mean_phi"].to(device=device, dtype=self.dtype),
                # x = (phi~ - E phi~) (M / sigma~)^T: one matmul per batch.
                "proj": (s["M"] / s["sigma"]).T.contiguous().to(device=device, dtype=self.dtype),
                "noise": (self.sigma_zeta / s["sigma"]).to(device=device, dtype=self.dtype),
                "probs": law.probs.reshape(-1).to(device=device, dtype=torch.float64),
                "q": law.q.to(device=device, dtype=torch.float64),
                "labels": law.labels.to(device=device, dtype=self.dtype),
            }
            if law.kind == "code":
                cached["codes"] = s["codes"].to(device=device, dtype=torch.bool)
            self._on[device] = cached
        return cached

    # ------------------------------------------------------------------ public API
    @property
    def input_dim(self) -> int:  # noqa: D102
        return self.d

    @property
    def M(self) -> Tensor:
        """The dictionary M (d, D), float64: orthonormal or unit columns."""
        return self._structure_tensors()["M"].clone()

    @property
    def A(self) -> Tensor:
        """The class-relevant set A (k,), long (code bit i is pattern A[i])."""
        return self._structure_tensors()["A"].clone()

    @property
    def sigma_tilde(self) -> float:
        """sigma~ = sqrt(E||x~ - E x~||^2), the exact total standard deviation of x~."""
        return float(self._moments()["sigma"])

    @property
    def mean_tilde(self) -> Tensor:
        """E[x~] = M E[phi~] (d,), float64 (exact)."""
        return self._moments()["mean_x"].clone()

    @property
    def hidden_mean(self) -> Tensor:
        """E[phi~] (D,), float64 (exact)."""
        return self._moments()["mean_phi"].clone()

    @property
    def positive_probability(self) -> float:
        """Pr[y = +1] under this distribution (exact)."""
        return self._law.positive_probability()

    @property
    def gamma(self) -> float:
        r"""The signal strength gamma = E[y phi~_i] - E[y] E[phi~_i] for i in A (assumption A1), exact.

        Averaged over A (the count-based laws are exchangeable on A, so every i has
        the same value; a code table may not be). Shi et al. scale the second-layer
        initialisation by it: sigma_a = sigma~^2 / (gamma k^2).
        """
        return signal_strength(self._law, self.k, self._codes_of_law())

    def process_constants(self) -> dict[str, float]:
        r"""The constants of Shi, Wei & Liang (2022)'s training process for a network trained on this data.

        Section 3.1 (initialisation) and Lemma 23 (the noise of the first two steps):

        .. math::

            \sigma_w = \frac1k, \quad \sigma_b = \frac1{k^2}, \quad
            \sigma_\xi = k^{-3/2}, \quad
            \sigma_a = \frac{\tilde\sigma^2}{\gamma k^2},

        with sigma~ (:attr:`sigma_tilde`) and gamma (:attr:`gamma`) those of the
        *structured* distribution: a data model without input structure (A1') keeps
        the process of the network it is compared against. Where gamma <= 1e-3 (a
        random code table has no per-pattern signal, so Section 3.1's sigma_a is
        undefined), E.1.1's gamma = 1/4 is used instead.

        Returns:
            ``{"sigma_w", "sigma_b", "sigma_xi", "sigma_a"}`` as Python floats.
        """
        structured = self._structured()
        k, sigma, gamma = structured.k, structured.sigma_tilde, structured.gamma
        if not gamma > GAMMA_FLOOR:
            gamma = E11_GAMMA
        sigma_a = sigma**2 / (gamma * k**2)
        return {"sigma_w": 1 / k, "sigma_b": 1 / k**2, "sigma_xi": k**-1.5, "sigma_a": sigma_a}

    def sample(self, n: int, generator: torch.Generator, device: torch.device) -> tuple[Tensor, Tensor]:
        """Draw n normalised inputs x = (x~ - E x~)/sigma~ and their labels."""
        x, y, _ = self.sample_with_hidden(n, generator, device)
        return x, y

    def sample_with_hidden(
        self, n: int, generator: torch.Generator, device: torch.device
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Draw n samples and the hidden vectors that generated them.

        Args:
            n: Number of samples.
            generator: The only source of randomness (on ``device``).
            device: Where to create the tensors.

        Returns:
            ``x`` (n, d) normalised inputs, ``y`` (n,) labels in {-1, +1}, and
            ``phi`` (n, D) the hidden vectors phi~ in {0, 1} (all of dtype
            :attr:`dtype`).
        """
        t = self._tensors_on(device)
        k, law = self.k, self._law
        # 1. The component and the pattern on A, from the exact (conditioned) law.
        idx = torch.multinomial(t["probs"], n, replacement=True, generator=generator)  # (n,)
        if law.kind == "count":
            comp, count = idx // (k + 1), idx % (k + 1)
            y = t["labels"][count]
            phi_a = random_subsets(count, k, generator, device)  # (n, k) bool
            q = t["q"][comp]  # (n,)
        else:
            y = t["labels"][idx]
            phi_a = t["codes"][idx]
            q = t["q"].expand(n)
        # 2. The irrelevant patterns: i.i.d. Bernoulli(q) given the component.
        outside = t["outside"]
        u = torch.rand(n, outside.numel(), generator=generator, device=device, dtype=torch.float64)
        phi = torch.empty(n, self.D, device=device, dtype=self.dtype)
        phi[:, t["A"]] = phi_a.to(self.dtype)
        phi[:, outside] = (u < q[:, None]).to(self.dtype)
        # 3. Normalised input, plus the normalised noise zeta / sigma~.
        x = (phi - t["mean_phi"]) @ t["proj"]
        if self.sigma_zeta > 0:
            x = x + t["noise"] * torch.randn(n, self.d, generator=generator, device=device, dtype=self.dtype)
        return x, y, phi

    def ground_truth(self) -> dict[str, Tensor]:
        """``feature`` = sum_{j in A} M_j (d,), ``dictionary`` = M (d, D), ``relevant`` = A (k,) long."""
        s = self._structure_tensors()
        m, a = s["M"], s["A"]
        return {
            "feature": m[:, a].sum(1).to(self.dtype),
            "dictionary": m.to(self.dtype),
            "relevant": a.clone(),
        }


class SparseCoding(DictionaryDataModule):
    r"""Sparse-coding inputs labelled by the number of class-relevant patterns.

    Shi, Wei & Liang (2022), Section 3, eq. (1), with the generalisations of
    Appendix F (eq. 294); see :class:`DictionaryDataModule` for the dictionary, the
    normalisation and ``negative_ratio``. A set ``P`` of counts defines the label:

    .. math::

        \tilde x = M \tilde\phi + \zeta, \quad \zeta \sim N(0, \sigma_\zeta^2 I_d),
        \qquad y = +1 \text{ if } \textstyle\sum_{i \in A} \tilde\phi_i \in P
        \text{ else } -1 .

    **Labeling** (``labeling``), i.e. the set P of counts (Section 3, Appendix E):

    * ``parity``: P = {odd counts} (Example 2; the paper takes k odd).
    * ``threshold``: P = {s in [k] : s > k/2} (Example 1).
    * ``interval``: P = {t1, ..., t2} with ``interval = (t1, t2)`` (E.1.2).
    * ``set``: P = ``label_set``.

    The paper has P subset of [k] = {1, ..., k}; here P may also contain the count 0
    (``interval`` with t1 = 0, or 0 in ``label_set``), a harmless generalisation.

    **Pattern distribution** (``patterns``), the law D_phi~ of phi~:

    * ``mixture`` (E.1.1 and the proof of Theorem 2): D_mix = p_o D^(0) + (1 - p_o)
      D^(1), one component per sample. Under D^(0) all D entries are i.i.d.
      Bernoulli(1/2). Under D^(1), phi~_A = (0, ..., 0) or (1, ..., 1) with
      probability 1/2 each, and the entries outside A are i.i.d.
      Bernoulli(p_o / (2 - 2 p_o)), which needs p_o <= 2/3. Each entry outside A is
      then 1 with probability p_o (as in (A2)); but for p_o != 1/2 the outside entries
      are not independent of phi~_A and of each other (they share the component), so
      (A2) holds literally only at the paper's p_o = 1/2, where outside entries are
      i.i.d. Bernoulli(1/2) in both components. We follow the paper's definition.
    * ``bernoulli`` (E.1.2): independent entries, Pr[phi~_i = 1] = ``p_in`` for
      i in A and ``p_out`` outside A (paper: 2/3 and 1/2).

    E.3.1's hidden representation (a table of labelled codes) is its own data model,
    :class:`~featlearn.datamodules.hidden_representation.HiddenRepresentation`.

    ``structure=False`` is learning *without input structure* (A1'): phi~ uniform
    over {0, 1}^D (i.i.d. Bernoulli(1/2)) with the same A, P and M (the pattern
    parameters are then unused).

    Args:
        d: Input dimension d (paper E.1.1: 500).
        D: Number of dictionary patterns D (paper: 100).
        k: Number of class-relevant patterns k = |A|, 1 <= k <= D (paper: 5).
        labeling: ``parity``, ``threshold``, ``interval`` or ``set`` (None: parity).
        interval: ``(t1, t2)``, 0 <= t1 <= t2 <= k, for ``labeling=interval``.
        label_set: The counts in P (each in [0, k]) for ``labeling=set``.
        patterns: ``mixture`` or ``bernoulli``.
        p_o: Probability of an irrelevant pattern with ``patterns=mixture``, in
            [0, 2/3]. None means the paper's 1/2.
        p_in: Pr[phi~_i = 1] for i in A with ``patterns=bernoulli`` (None: 2/3).
        p_out: Pr[phi~_i = 1] for i not in A with ``patterns=bernoulli`` (None: 1/2).
        structure: False removes the input structure (A1'): phi~ uniform.
        negative_ratio: None (the natural class proportions) or r in (0, 1), the
            probability of the label -1.
        dictionary: ``orthonormal`` or ``incoherent``.
        sigma_zeta: Standard deviation of the input noise zeta (Appendix F), >= 0.
        relevant: The class-relevant set A (k distinct indices in [0, D)); None draws
            a uniformly random k-subset from ``structure_seed`` (sorted).
        structure_seed: Seed of M and A: part of the distribution, shared by every
            ensemble member.
        batch_size: Samples per update step (int or schedule); paper: 1000.
        **kwargs: Forwarded to :class:`SyntheticDataModule` (``train_size``,
            ``test_size``, ``seed``, ...).
    """

    def __init__(
        self,
        d: int = 500,
        D: int = 100,
        k: int = 5,
        labeling: str | None = "parity",
        interval: tuple[int, int] | None = None,
        label_set: list[int] | None = None,
        patterns: str = "mixture",
        p_o: float | None = None,
        p_in: float | None = None,
        p_out: float | None = None,
        structure: bool = True,
        negative_ratio: float | None = None,
        dictionary: str = "orthonormal",
        sigma_zeta: float = 0.0,
        relevant: list[int] | None = None,
        structure_seed: int = 0,
        batch_size: ScheduleSpec = 1000,
        **kwargs,
    ) -> None:
        super().__init__(
            d=d,
            D=D,
            k=k,
            negative_ratio=negative_ratio,
            dictionary=dictionary,
            sigma_zeta=sigma_zeta,
            relevant=relevant,
            structure_seed=structure_seed,
            batch_size=batch_size,
            **kwargs,
        )
        if patterns == "hidden_representation" or labeling == "codes":
            raise ValueError(
                "E.3.1's hidden representation is its own data model: set class_path: HiddenRepresentation "
                "(with d, D, k, codes_per_class or codes + code_labels, p_o) instead of "
                "SparseCoding with data.patterns: hidden_representation / data.labeling: codes."
            )
        check_choice("data.patterns", patterns, PATTERNS)
        labeling = "parity" if labeling is None else labeling
        check_choice("data.labeling", labeling, LABELINGS)
        check_bool("data.structure", structure)
        positive = self._positive_counts(labeling, k, interval, label_set)

        # Pattern parameters: each belongs to one pattern distribution; refuse the others
        # rather than silently ignore them.
        owners = {"p_o": ("mixture",), "p_in": ("bernoulli",), "p_out": ("bernoulli",)}
        given = {"p_o": p_o, "p_in": p_in, "p_out": p_out}
        for name, value in given.items():
            if value is not None and patterns not in owners[name]:
                raise ValueError(
                    f"data.{name} is only used with data.patterns in {list(owners[name])}, but "
                    f"data.patterns is {patterns!r}: remove data.{name}."
                )
        if patterns == "mixture":
            p_o = 0.5 if p_o is None else p_o
            check_probability(
                "data.p_o",
                p_o,
                maximum=2.0 / 3.0,
                why=" for data.patterns: mixture (D^(1) draws irrelevant patterns with probability "
                "p_o / (2 - 2 p_o), which must be <= 1)",
            )
        else:
            p_in = 2.0 / 3.0 if p_in is None else p_in
            p_out = 0.5 if p_out is None else p_out
            check_probability("data.p_in", p_in)
            check_probability("data.p_out", p_out)

        self.labeling, self.interval, self.label_set = labeling, interval, label_set
        self.patterns, self.p_o, self.p_in, self.p_out = patterns, p_o, p_in, p_out
        self.structure = structure
        self._positive = positive
        self._twin: SparseCoding | None = None  # the structured twin, for process_constants()
        self._set_law()

    # ------------------------------------------------------------------ validation helpers
    @staticmethod
    def _positive_counts(
        labeling: str, k: int, interval: Sequence[int] | None, label_set: Sequence[int] | None
    ) -> frozenset[int]:
        """The set P of counts labelled +1."""
        if interval is not None and labeling != "interval":
            raise ValueError(f"data.interval is only used with data.labeling: interval, got {labeling!r}: remove it.")
        if label_set is not None and labeling != "set":
            raise ValueError(f"data.label_set is only used with data.labeling: set, got {labeling!r}: remove it.")
        counts = range(k + 1)
        if labeling == "parity":
            return frozenset(s for s in counts if s % 2 == 1)
        if labeling == "threshold":
            return frozenset(s for s in counts if s > k / 2)
        if labeling == "interval":
            if interval is None:
                raise ValueError("data.labeling: interval needs data.interval: [t1, t2] (0 <= t1 <= t2 <= k).")
            pair = list(interval)
            if len(pair) != 2 or not all(is_int(t) for t in pair):
                raise ValueError(f"data.interval must be two integers [t1, t2], got {interval!r}.")
            t1, t2 = pair
            if t1 > t2:
                raise ValueError(f"data.interval must have t1 <= t2, got [{t1}, {t2}]: swap them.")
            if t1 < 0 or t2 > k:
                raise ValueError(
                    f"data.interval must lie in [0, k] = [0, {k}] (counts of relevant patterns), got [{t1}, {t2}]."
                )
            return frozenset(range(t1, t2 + 1))
        # set
        if label_set is None:
            raise ValueError("data.labeling: set needs data.label_set: the list of counts in P.")
        values = list(label_set)
        if not all(is_int(s) and 0 <= s <= k for s in values):
            raise ValueError(f"data.label_set must list counts in [0, k] = [0, {k}], got {label_set!r}.")
        return frozenset(values)

    def _single_class_error(self, only: str, p_pos: float) -> str:
        patterns = self.patterns if self.structure else "uniform (structure: false)"
        return (
            f"data.labeling: {self.labeling} gives every sample the label {only} under "
            f"data.patterns: {patterns} (Pr[y = +1] = {p_pos:.3g}): choose a labeling and pattern "
            f"probabilities under which both classes occur."
        )

    # ------------------------------------------------------------------ the law of phi~
    def _natural_law(self) -> HiddenLaw:
        """The law of phi~ before any class conditioning (count form, see :class:`HiddenLaw`)."""
        if not self.structure:  # (A1'): all D entries i.i.d. Bernoulli(1/2)
            return uniform_law(self.k, self._positive)
        if self.patterns == "bernoulli":  # E.1.2: independent entries
            return bernoulli_law(self.k, self.p_in, self.p_out, self._positive)
        return mixture_law(self.k, self.p_o, self._positive)  # E.1.1: p_o D^(0) + (1 - p_o) D^(1)

    def _structured(self) -> DictionaryDataModule:
        """This data model with ``structure=True`` (itself when it has structure)."""
        if self.structure:
            return self
        if self._twin is None:
            args = dict(
                d=self.d,
                D=self.D,
                k=self.k,
                labeling=self.labeling,
                interval=self.interval,
                label_set=self.label_set,
                patterns=self.patterns,
                negative_ratio=self.negative_ratio,
                dictionary=self.dictionary,
                sigma_zeta=self.sigma_zeta,
                relevant=self.relevant,
                structure_seed=self.structure_seed,
            )
            if self.patterns == "mixture":
                args["p_o"] = self.p_o
            else:
                args.update(p_in=self.p_in, p_out=self.p_out)
            try:
                self._twin = SparseCoding(**args)
            except ValueError as err:
                raise ValueError(
                    "process_constants() takes sigma~ and gamma from the structured distribution "
                    f"(data.structure: true), which these parameters do not define: {err}"
                ) from err
        return self._twin

    # ------------------------------------------------------------------ public API
    @property
    def positive_counts(self) -> tuple[int, ...]:
        """The set P of counts labelled +1, sorted."""
        return tuple(sorted(self._positive))

    def structure_free_overrides(self) -> dict:
        """``{"structure": False}``: the same labeling on uniform phi~ (assumption A1')."""
        return {"structure": False}
