"""The dictionary machinery that Shi, Wei & Liang (2022)'s sparse-coding data models share.

:class:`DictionaryDataModule` holds what every data model ``x~ = M phi~ + zeta`` of
the paper shares (the dictionary M, the class-relevant set A, the exact
normalisation, class conditioning, sampling from the law of phi~, the constants of
the training process); :class:`~featlearn.datamodules.sparse_coding.SparseCoding`
(Section 3, E.1, E.2) and
:class:`~featlearn.datamodules.hidden_representation.HiddenRepresentation` (E.3.1)
each state their law of phi~. The law and its moments are pure functions in
:mod:`featlearn.datamodules.sparse_coding_law`.
"""

from __future__ import annotations

import abc

import torch
from torch import Tensor

from featlearn.contracts import GroundTruth
from featlearn.datamodules.base import HiddenVariableDataModule
from featlearn.datamodules.sparse_coding_law import (
    HiddenLaw,
    complement,
    hidden_moments,
    input_moments,
    random_subsets,
    signal_strength,
)
from featlearn.linalg import orthonormal_columns, unit_columns
from featlearn.schedules import ScheduleSpec
from featlearn.seeding import STRUCTURE, TEST_SET, VAL_SET, derive_seed
from featlearn.validation import check_choice, check_int, check_number, is_int, is_number

DICTIONARIES = ("orthonormal", "incoherent")

#: process_constants(): a signal strength gamma at or below this is "no per-pattern
#: signal" (a random code table), and E.1.1's gamma is used instead.
GAMMA_FLOOR = 1e-3
#: E.1.1's gamma (the parity mixture with p_o = 1/2): (1 - p_o) / 2 = 1/4.
E11_GAMMA = 0.25


class DictionaryDataModule(HiddenVariableDataModule):
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
        self._count_sets: dict[str, Tensor] = {}  # split -> (S, n) counts of its held-out rows

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
    def count_sets(self, split: str) -> tuple[Tensor, int]:
        """The count s = sum_{i in A} phi~_i of every row of :meth:`eval_set` ``(split)``: (K, n) long, and k.

        The rows are drawn again from their streams, with the hidden vectors this time: the same
        generators give the same inputs, so row j of the counts belongs to row j of the set.
        """
        stream, n = {"val": (VAL_SET, self.val_size), "test": (TEST_SET, self.test_size)}[split]
        device = self.device
        cached = self._count_sets.get(split)
        if cached is None or cached.device != device or cached.shape[0] != self.ensemble_size:
            relevant = self._tensors_on(device)["A"]
            counts = []
            for member in range(self.ensemble_size):
                _, _, phi = self.sample_with_hidden(n, self.stream_generator(member, stream, 0, device), device)
                counts.append(phi[:, relevant].sum(dim=1).round().long())  # (n,)
            cached = torch.stack(counts)  # (K, n): one row per data stream, as eval_set's
            self._count_sets[split] = cached
        return cached, self.k

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

        Also ``positive_rate``, Pr[y = +1] of *this* distribution (exact), which the class
        weights alpha_v = 1 / (2 Pr[y = v]) of Appendix F.1.1 (eq. 295) need.

        Returns:
            ``{"sigma_w", "sigma_b", "sigma_xi", "sigma_a", "positive_rate"}`` as Python floats.
        """
        structured = self._structured()
        k, sigma, gamma = structured.k, structured.sigma_tilde, structured.gamma
        if not gamma > GAMMA_FLOOR:
            gamma = E11_GAMMA
        sigma_a = sigma**2 / (gamma * k**2)
        return {
            "sigma_w": 1 / k,
            "sigma_b": 1 / k**2,
            "sigma_xi": k**-1.5,
            "sigma_a": sigma_a,
            "positive_rate": float(self.positive_probability),
        }

    def sample_with_hidden(
        self, n: int, generator: torch.Generator, device: torch.device
    ) -> tuple[Tensor, Tensor, Tensor]:
        """N normalised inputs x = (x~ - E x~)/sigma~, their labels, and ``phi`` (n, D): the hidden phi~ in {0, 1}."""
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

    def ground_truth(self) -> GroundTruth:
        """``feature`` = sum_{j in A} M_j (d,), ``dictionary`` = M (d, D), ``relevant`` = A (k,) long."""
        s = self._structure_tensors()
        m, a = s["M"], s["A"]
        return GroundTruth(feature=m[:, a].sum(1).to(self.dtype), dictionary=m.to(self.dtype), relevant=a.clone())
