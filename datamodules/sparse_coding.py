"""The sparse-coding data model of Shi, Wei & Liang (2022)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from featlearn.datamodules.base import SyntheticDataModule
from featlearn.schedules import ScheduleSpec
from featlearn.seeding import STRUCTURE, derive_seed

LABELINGS = ("parity", "threshold", "interval", "set", "codes")
PATTERNS = ("mixture", "bernoulli", "hidden_representation")
DICTIONARIES = ("orthonormal", "incoherent")

# Largest k for which hidden_representation draws its random codes by a permutation of
# all 2^k binary vectors (beyond it, collisions are rare and rejection is cheaper).
_CODES_BY_PERMUTATION_MAX_K = 16


def orthonormal_columns(d: int, n_cols: int, generator: torch.Generator) -> Tensor:
    """A Haar-random d x n_cols matrix with orthonormal columns (n_cols <= d), float64.

    Args:
        d: Number of rows.
        n_cols: Number of columns, at most ``d``.
        generator: CPU generator to draw the Gaussian matrix from.

    Returns:
        ``Q`` of shape (d, n_cols) with ``Q^T Q = I``.
    """
    q, r = torch.linalg.qr(torch.randn(d, n_cols, generator=generator, dtype=torch.float64))
    return q * torch.sign(torch.diagonal(r))  # fix QR's sign ambiguity: Haar-distributed


def unit_columns(d: int, n_cols: int, generator: torch.Generator) -> Tensor:
    """A d x n_cols matrix of i.i.d. uniformly random unit columns, float64.

    Independent directions on the sphere are mu-incoherent with
    ``mu = O(sqrt(log n_cols))`` w.h.p. (|<M_i, M_j>| ~ 1/sqrt(d)), Appendix F (D).
    """
    m = torch.randn(d, n_cols, generator=generator, dtype=torch.float64)
    return m / m.norm(dim=0, keepdim=True)


def _binomial_pmf(k: int, p: float) -> Tensor:
    """Pr[Binomial(k, p) = s] for s = 0..k, float64 (log-space: no overflow for large k)."""
    if p <= 0.0 or p >= 1.0:
        pmf = torch.zeros(k + 1, dtype=torch.float64)
        pmf[0 if p <= 0.0 else k] = 1.0
        return pmf
    s = torch.arange(k + 1, dtype=torch.float64)
    log_comb = torch.lgamma(torch.tensor(k + 1.0, dtype=torch.float64)) - torch.lgamma(s + 1) - torch.lgamma(k - s + 1)
    return torch.exp(log_comb + s * math.log(p) + (k - s) * math.log1p(-p))


@dataclass
class _HiddenLaw:
    """The law of the hidden vector phi~, as a finite mixture of simple components.

    Either *count* form: a joint table ``probs[c, s]`` over a component c and the
    number s of ones in phi~_A, where given (c, s) the ones sit at a uniformly random
    s-subset of A (every pattern distribution here is exchangeable on A), and the
    entries outside A are i.i.d. Bernoulli(``q[c]``), independent of phi~_A given c.
    Or *code* form: ``probs[j]`` over the rows of a code table (phi~_A = codes[j]),
    one component, entries outside A i.i.d. Bernoulli(``q[0]``).

    ``labels`` is the label of each count s (count form) or code j (code form).
    """

    kind: str  # "count" | "code"
    probs: Tensor  # (C, k + 1) or (N,), float64, sums to 1
    q: Tensor  # (C,) float64, outside-A success probability per component
    labels: Tensor  # (k + 1,) or (N,), float64 in {-1, +1}

    def positive_probability(self) -> float:
        """Pr[y = +1]."""
        per_label = self.probs.sum(0) if self.kind == "count" else self.probs
        return float(per_label[self.labels > 0].sum())

    def conditioned(self, negative_ratio: float) -> _HiddenLaw:
        """The law conditioned to Pr[y = -1] = negative_ratio (exact reweighting).

        ``D_r = r D(. | y = -1) + (1 - r) D(. | y = +1)``: each class keeps its own
        conditional law, only the class proportions change (Appendix E.2.2).
        """
        p_pos = self.positive_probability()
        # float64 weights (torch.where with Python scalars would round them to float32).
        weight = torch.full_like(self.labels, negative_ratio / (1.0 - p_pos))
        weight[self.labels > 0] = (1.0 - negative_ratio) / p_pos
        return _HiddenLaw(self.kind, self.probs * weight, self.q, self.labels)


class SparseCoding(SyntheticDataModule):
    r"""Sparse-coding inputs labelled by the number of class-relevant patterns.

    Shi, Wei & Liang (2022), Section 3, eq. (1), with the generalisations of
    Appendix F (eq. 294). A dictionary ``M in R^{d x D}`` holds D patterns; a hidden
    vector ``phi~ in {0, 1}^D`` says which are present; a subset ``A`` of k
    class-relevant patterns and a set ``P`` of counts define the label:

    .. math::

        \tilde x = M \tilde\phi + \zeta, \quad \zeta \sim N(0, \sigma_\zeta^2 I_d),
        \qquad y = +1 \text{ if } \textstyle\sum_{i \in A} \tilde\phi_i \in P
        \text{ else } -1 .

    **Dictionary** (``dictionary``): ``orthonormal`` (Section 3; M^T M = I, needs
    D <= d; Haar-random via QR of a Gaussian) or ``incoherent`` (Appendix F (D): i.i.d.
    uniformly random unit columns, so |<M_i, M_j>| = O(sqrt(log D / d)); allows
    D > d).

    **Labeling** (``labeling``), i.e. the set P of counts (Section 3, Appendix E):

    * ``parity``: P = {odd counts} (Example 2; the paper takes k odd).
    * ``threshold``: P = {s in [k] : s > k/2} (Example 1).
    * ``interval``: P = {t1, ..., t2} with ``interval = (t1, t2)`` (E.1.2).
    * ``set``: P = ``label_set``.
    * ``codes``: the label of a code table, the only labeling of
      ``patterns=hidden_representation`` (and its default).

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
    * ``hidden_representation`` (E.3.1): phi~_A is uniform over a table of labelled
      binary codes (by default ``codes_per_class`` random distinct codes per label,
      drawn from ``structure_seed``; paper: 50), and the entries outside A are
      i.i.d. Bernoulli(p_o) (paper: "uniformly at random", p_o = 1/2). The label is
      the code's label. This generalises D^(1), whose two codes are all-zeros (y=-1
      for odd k parity) and all-ones (y=+1).

    ``structure=False`` is learning *without input structure* (A1'): phi~ uniform
    over {0, 1}^D (i.i.d. Bernoulli(1/2)) with the same A, P and M (the pattern
    parameters are then unused). It is undefined for ``hidden_representation``
    (the code table labels only its own codes).

    **Class imbalance** (``negative_ratio = r``, E.2.2): the distribution is
    conditioned to Pr[y = -1] = r, i.e. ``r D(. | y=-1) + (1 - r) D(. | y=+1)``,
    exactly (by reweighting the law of phi~_A; no rejection loop, no batch
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
    Both moments are computed analytically from the law of phi~ (a table over the
    component and the count on A, or over the codes), not estimated.

    Args:
        d: Input dimension d (paper E.1.1: 500).
        D: Number of dictionary patterns D (paper: 100).
        k: Number of class-relevant patterns k = |A|, 1 <= k <= D (paper: 5).
        labeling: ``parity``, ``threshold``, ``interval``, ``set`` or ``codes``;
            None picks ``codes`` for ``hidden_representation`` and ``parity``
            otherwise.
        interval: ``(t1, t2)``, 0 <= t1 <= t2 <= k, for ``labeling=interval``.
        label_set: The counts in P (each in [0, k]) for ``labeling=set``.
        patterns: ``mixture``, ``bernoulli`` or ``hidden_representation``.
        p_o: Probability of an irrelevant pattern (mixture: in [0, 2/3]; hidden
            representation: in [0, 1]). None means the paper's 1/2.
        p_in: Pr[phi~_i = 1] for i in A with ``patterns=bernoulli`` (None: 2/3).
        p_out: Pr[phi~_i = 1] for i not in A with ``patterns=bernoulli`` (None: 1/2).
        codes_per_class: Number of random codes per label for
            ``hidden_representation`` (None: 50, unless ``codes`` is given).
        codes: An explicit code table for ``hidden_representation``: distinct 0/1
            lists of length k (bit i is pattern ``A[i]``).
        code_labels: The label (+1 or -1) of each code in ``codes``.
        structure: False removes the input structure (A1'): phi~ uniform.
        negative_ratio: None (the natural class proportions) or r in (0, 1), the
            probability of the label -1.
        dictionary: ``orthonormal`` or ``incoherent``.
        sigma_zeta: Standard deviation of the input noise zeta (Appendix F), >= 0.
        relevant: The class-relevant set A (k distinct indices in [0, D)); None draws
            a uniformly random k-subset from ``structure_seed`` (sorted).
        structure_seed: Seed of M, A and the random codes: part of the distribution,
            shared by every ensemble member.
        batch_size: Samples per update step (int or schedule); paper: 1000.
        **kwargs: Forwarded to :class:`SyntheticDataModule` (``train_size``,
            ``test_size``, ``seed``, ...).
    """

    state_keys = SyntheticDataModule.state_keys + ("d", "D", "k", "structure_seed")

    def __init__(
        self,
        d: int = 500,
        D: int = 100,
        k: int = 5,
        labeling: str | None = None,
        interval: tuple[int, int] | None = None,
        label_set: list[int] | None = None,
        patterns: str = "mixture",
        p_o: float | None = None,
        p_in: float | None = None,
        p_out: float | None = None,
        codes_per_class: int | None = None,
        codes: list[list[int]] | None = None,
        code_labels: list[int] | None = None,
        structure: bool = True,
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
            _check_int(name, value, 1)
        if k > D:
            raise ValueError(
                f"data.k must be <= data.D (A is a subset of the D patterns), got k={k} > D={D}: "
                f"lower data.k or raise data.D."
            )
        if dictionary not in DICTIONARIES:
            raise ValueError(f"data.dictionary must be one of {list(DICTIONARIES)}, got {dictionary!r}.")
        if dictionary == "orthonormal" and D > d:
            raise ValueError(
                f"data.D must be <= data.d for an orthonormal dictionary (D orthonormal columns in "
                f"R^d), got D={D} > d={d}: lower data.D, raise data.d, or set "
                f"data.dictionary: incoherent."
            )
        if patterns not in PATTERNS:
            raise ValueError(f"data.patterns must be one of {list(PATTERNS)}, got {patterns!r}.")
        if labeling is None:
            labeling = "codes" if patterns == "hidden_representation" else "parity"
        if labeling not in LABELINGS:
            raise ValueError(f"data.labeling must be one of {list(LABELINGS)}, got {labeling!r}.")
        if (labeling == "codes") != (patterns == "hidden_representation"):
            raise ValueError(
                "data.labeling: codes goes with data.patterns: hidden_representation and only with "
                f"it (the code table defines the labels), got labeling={labeling!r} and "
                f"patterns={patterns!r}: set both, or neither."
            )
        if not isinstance(structure, bool):
            raise ValueError(f"data.structure must be true or false, got {structure!r}.")
        if not structure and patterns == "hidden_representation":
            raise ValueError(
                "data.structure: false (uniform phi~) is undefined with data.patterns: "
                "hidden_representation, whose code table labels only its own codes: use another "
                "data.patterns to compare against learning without input structure."
            )
        _check_nonnegative_int("structure_seed", structure_seed)
        if (
            isinstance(sigma_zeta, bool)
            or not isinstance(sigma_zeta, (int, float))
            or not math.isfinite(sigma_zeta)
            or sigma_zeta < 0
        ):
            raise ValueError(
                f"data.sigma_zeta must be a finite number >= 0 (the standard deviation of the input "
                f"noise zeta; 0 for none), got {sigma_zeta!r}."
            )

        # The labeling: the set P of positive counts (None for codes).
        positive = self._positive_counts(labeling, k, interval, label_set)

        # Pattern parameters: each belongs to one pattern distribution; refuse the others
        # rather than silently ignore them.
        owners = {
            "p_o": ("mixture", "hidden_representation"),
            "p_in": ("bernoulli",),
            "p_out": ("bernoulli",),
            "codes_per_class": ("hidden_representation",),
            "codes": ("hidden_representation",),
            "code_labels": ("hidden_representation",),
        }
        given = {
            "p_o": p_o,
            "p_in": p_in,
            "p_out": p_out,
            "codes_per_class": codes_per_class,
            "codes": codes,
            "code_labels": code_labels,
        }
        for name, value in given.items():
            if value is not None and patterns not in owners[name]:
                raise ValueError(
                    f"data.{name} is only used with data.patterns in {list(owners[name])}, but "
                    f"data.patterns is {patterns!r}: remove data.{name}."
                )
        if patterns == "mixture":
            p_o = 0.5 if p_o is None else p_o
            _check_probability(
                "p_o",
                p_o,
                hi=2.0 / 3.0,
                why=" for data.patterns: mixture (D^(1) draws irrelevant patterns with probability "
                "p_o / (2 - 2 p_o), which must be <= 1)",
            )
        elif patterns == "bernoulli":
            p_in = 2.0 / 3.0 if p_in is None else p_in
            p_out = 0.5 if p_out is None else p_out
            _check_probability("p_in", p_in)
            _check_probability("p_out", p_out)
        else:
            p_o = 0.5 if p_o is None else p_o
            _check_probability("p_o", p_o)
            codes, code_labels, codes_per_class = self._check_codes(k, codes, code_labels, codes_per_class)

        if negative_ratio is not None:
            if (
                isinstance(negative_ratio, bool)
                or not isinstance(negative_ratio, (int, float))
                or not 0.0 < negative_ratio < 1.0
            ):
                raise ValueError(
                    f"data.negative_ratio must be null (natural class proportions) or a probability "
                    f"strictly between 0 and 1 (the fraction of label -1), got {negative_ratio!r}."
                )
            negative_ratio = float(negative_ratio)

        if relevant is not None:
            relevant = list(relevant)
            if (
                len(relevant) != k
                or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < D for i in relevant)
                or len(set(relevant)) != k
            ):
                raise ValueError(
                    f"data.relevant must list k={k} distinct pattern indices in [0, {D - 1}] "
                    f"(or be null for a random A), got {relevant!r}."
                )

        self.d, self.D, self.k = d, D, k
        self.labeling, self.interval, self.label_set = labeling, interval, label_set
        self.patterns, self.p_o, self.p_in, self.p_out = patterns, p_o, p_in, p_out
        self.codes_per_class = codes_per_class
        self.structure, self.negative_ratio = structure, negative_ratio
        self.dictionary, self.sigma_zeta = dictionary, float(sigma_zeta)
        self.relevant, self.structure_seed = relevant, structure_seed
        self._given_codes, self._given_code_labels = codes, code_labels
        self._positive = positive

        law = self._natural_law()
        p_pos = law.positive_probability()
        if not 1e-12 < p_pos < 1.0 - 1e-12:
            only = "+1" if p_pos >= 0.5 else "-1"
            raise ValueError(
                f"data.labeling: {labeling} gives every sample the label {only} under "
                f"data.patterns: {patterns if structure else 'uniform (structure: false)'} "
                f"(Pr[y = +1] = {p_pos:.3g}): choose a labeling and pattern probabilities under "
                f"which both classes occur."
            )
        self._law = law if negative_ratio is None else law.conditioned(negative_ratio)
        self._structure: dict[str, Tensor] | None = None  # float64 / long, on the CPU
        self._on: dict[torch.device, dict[str, Tensor]] = {}

    # ------------------------------------------------------------------ validation helpers
    @staticmethod
    def _positive_counts(
        labeling: str, k: int, interval: Sequence[int] | None, label_set: Sequence[int] | None
    ) -> frozenset[int] | None:
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
            if len(pair) != 2 or not all(isinstance(t, int) and not isinstance(t, bool) for t in pair):
                raise ValueError(f"data.interval must be two integers [t1, t2], got {interval!r}.")
            t1, t2 = pair
            if t1 > t2:
                raise ValueError(f"data.interval must have t1 <= t2, got [{t1}, {t2}]: swap them.")
            if t1 < 0 or t2 > k:
                raise ValueError(
                    f"data.interval must lie in [0, k] = [0, {k}] (counts of relevant patterns), got [{t1}, {t2}]."
                )
            return frozenset(range(t1, t2 + 1))
        if labeling == "set":
            if label_set is None:
                raise ValueError("data.labeling: set needs data.label_set: the list of counts in P.")
            values = list(label_set)
            if not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= k for s in values):
                raise ValueError(f"data.label_set must list counts in [0, k] = [0, {k}], got {label_set!r}.")
            return frozenset(values)
        return None  # codes

    @staticmethod
    def _check_codes(
        k: int, codes: list[list[int]] | None, code_labels: list[int] | None, codes_per_class: int | None
    ) -> tuple[Tensor | None, Tensor | None, int | None]:
        if codes is None:
            if code_labels is not None:
                raise ValueError("data.code_labels needs data.codes (the codes they label): set both or neither.")
            codes_per_class = 50 if codes_per_class is None else codes_per_class
            _check_int("codes_per_class", codes_per_class, 1)
            if k < 62 and 2 * codes_per_class > 2**k:
                raise ValueError(
                    f"data.codes_per_class must be <= 2^k / 2 = {2**k // 2} (distinct binary codes "
                    f"of length k={k}), got {codes_per_class}: lower it or raise data.k."
                )
            return None, None, codes_per_class
        if codes_per_class is not None:
            raise ValueError("data.codes_per_class and data.codes exclude each other: give one of them.")
        rows = [list(c) for c in codes]
        if not rows or not all(len(c) == k and all(b in (0, 1) and not isinstance(b, bool) for b in c) for c in rows):
            raise ValueError(f"data.codes must be a non-empty list of 0/1 lists of length k={k}, got {codes!r}.")
        if len({tuple(c) for c in rows}) != len(rows):
            raise ValueError("data.codes must be distinct (a repeated code would be weighted twice or labelled twice).")
        if (
            code_labels is None
            or len(code_labels) != len(rows)
            or not all(v in (-1, 1) and not isinstance(v, bool) for v in code_labels)
        ):
            raise ValueError(
                f"data.code_labels must give a label +1 or -1 for each of the {len(rows)} codes, got {code_labels!r}."
            )
        return (
            torch.tensor(rows, dtype=torch.float64),
            torch.tensor(list(code_labels), dtype=torch.float64),
            None,
        )

    # ------------------------------------------------------------------ the law of phi~
    def _natural_law(self) -> _HiddenLaw:
        """The law of phi~ before any class conditioning (see :class:`_HiddenLaw`)."""
        k = self.k
        if self.patterns == "hidden_representation":
            if self._given_codes is not None:
                labels = self._given_code_labels
            else:  # first codes_per_class codes are positive, the others negative
                n = self.codes_per_class
                labels = torch.cat([torch.ones(n), -torch.ones(n)]).to(torch.float64)
            probs = torch.full((labels.numel(),), 1.0 / labels.numel(), dtype=torch.float64)
            return _HiddenLaw("code", probs, torch.tensor([self.p_o], dtype=torch.float64), labels)
        if not self.structure:  # (A1'): all D entries i.i.d. Bernoulli(1/2)
            probs, q = _binomial_pmf(k, 0.5)[None], [0.5]
        elif self.patterns == "bernoulli":  # E.1.2: independent entries
            probs, q = _binomial_pmf(k, self.p_in)[None], [self.p_out]
        else:  # mixture, E.1.1: p_o D^(0) + (1 - p_o) D^(1)
            p_o = self.p_o
            component_1 = torch.zeros(k + 1, dtype=torch.float64)
            component_1[0] += 0.5  # phi~_A = (0, ..., 0)
            component_1[k] += 0.5  # phi~_A = (1, ..., 1)
            probs = torch.stack([p_o * _binomial_pmf(k, 0.5), (1.0 - p_o) * component_1])
            q = [0.5, p_o / (2.0 - 2.0 * p_o)]  # p_o <= 2/3 keeps this <= 1
        labels = torch.tensor([1.0 if s in self._positive else -1.0 for s in range(k + 1)], dtype=torch.float64)
        return _HiddenLaw("count", probs, torch.tensor(q, dtype=torch.float64), labels)

    def _hidden_moments(self) -> dict[str, Tensor | float]:
        """Exact first and second moments of phi~ from its law (float64).

        Returns the mean on A (k,), the covariance on A (k, k), the covariance of each
        i in A with any j outside A (k,), and the mean, variance and pairwise
        covariance of the (exchangeable) entries outside A.
        """
        law, k = self._law, self.k
        if law.kind == "count":
            s = torch.arange(k + 1, dtype=torch.float64)
            p_comp = law.probs.sum(1)  # (C,)
            m_a = float((law.probs * s).sum()) / k  # E phi_i, i in A
            # E phi_i phi_j (i != j in A): given s ones at a random s-subset, s(s-1)/(k(k-1)).
            e_aa = float((law.probs * s * (s - 1)).sum()) / (k * (k - 1)) if k > 1 else 0.0
            cov_aa = (m_a - m_a**2) * torch.eye(k, dtype=torch.float64)
            cov_aa += (e_aa - m_a**2) * (1.0 - torch.eye(k, dtype=torch.float64))
            mean_a = torch.full((k,), m_a, dtype=torch.float64)
            m_o = float((p_comp * law.q).sum())
            e_oo = float((p_comp * law.q**2).sum())  # E phi_j phi_l, j != l outside A
            e_ao = float((law.probs * s[None, :] / k * law.q[:, None]).sum())
            cov_ao = torch.full((k,), e_ao - m_a * m_o, dtype=torch.float64)
        else:
            codes = self._structure_tensors()["codes"]  # (N, k)
            mean_a = law.probs @ codes
            cov_aa = codes.T @ (law.probs[:, None] * codes) - torch.outer(mean_a, mean_a)
            # One component: the outside entries are i.i.d., independent of phi~_A.
            m_o = float(law.q[0])
            e_oo = m_o**2
            cov_ao = torch.zeros(k, dtype=torch.float64)
        return {
            "mean_a": mean_a,
            "cov_aa": cov_aa,
            "cov_ao": cov_ao,
            "mean_o": m_o,
            "var_o": m_o - m_o**2,
            "cov_oo": e_oo - m_o**2,
        }

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
            if self.patterns == "hidden_representation":
                structure["codes"] = self._given_codes if self._given_codes is not None else self._random_codes(gen)
            self._structure = structure
        return self._structure

    def _random_codes(self, gen: torch.Generator) -> Tensor:
        """2 * codes_per_class distinct uniformly random codes in {0, 1}^k (float64)."""
        k, n = self.k, 2 * self.codes_per_class
        if k <= _CODES_BY_PERMUTATION_MAX_K:
            ints = torch.randperm(2**k, generator=gen)[:n]
            return ((ints[:, None] >> torch.arange(k)) & 1).to(torch.float64)
        rows: list[tuple[int, ...]] = []
        seen: set[tuple[int, ...]] = set()
        while len(rows) < n:  # rejection of repeats: rare for k > 16
            for row in torch.randint(0, 2, (n - len(rows), k), generator=gen).tolist():
                if tuple(row) not in seen:
                    seen.add(tuple(row))
                    rows.append(tuple(row))
        return torch.tensor(rows, dtype=torch.float64)

    def _moments(self) -> dict[str, Tensor]:
        """E phi~ (D,), E x~ (d,) and sigma~ (a 0-dim tensor), exact, float64 (cached)."""
        structure = self._structure_tensors()
        if "sigma" not in structure:
            m, a = structure["M"], structure["A"]
            outside = _complement(a, self.D)
            mom = self._hidden_moments()
            m_a, m_o = m[:, a], m[:, outside]
            u_o = m_o.sum(1)  # sum of the irrelevant columns, (d,)
            n_o = outside.numel()
            # sigma~^2 = tr(M^T M Cov(phi~)) + d sigma_zeta^2, split into the blocks
            # (A, A), (outside, outside) and twice (A, outside); columns have unit norm.
            var = torch.trace(m_a.T @ m_a @ mom["cov_aa"])
            var = var + mom["var_o"] * n_o + mom["cov_oo"] * (u_o @ u_o - n_o)
            var = var + 2.0 * mom["cov_ao"] @ (m_a.T @ u_o)
            var = var + self.d * self.sigma_zeta**2
            if not var > 0:
                raise ValueError(
                    "The inputs of this data model are constant (sigma~ = 0), so they cannot be "
                    "normalised: choose pattern probabilities strictly between 0 and 1 or "
                    "data.sigma_zeta > 0."
                )
            mean_phi = torch.empty(self.D, dtype=torch.float64)
            mean_phi[a] = mom["mean_a"]
            mean_phi[outside] = mom["mean_o"]
            structure["mean_phi"] = mean_phi
            structure["mean_x"] = m @ mean_phi
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
                "outside": _complement(a, self.D).to(device),
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
    def positive_counts(self) -> tuple[int, ...] | None:
        """The set P of counts labelled +1, sorted (None for ``labeling=codes``)."""
        return None if self._positive is None else tuple(sorted(self._positive))

    @property
    def codes(self) -> tuple[Tensor, Tensor] | None:
        """The code table of ``hidden_representation``: codes (N, k) in {0, 1} and labels (N,)."""
        if self.patterns != "hidden_representation":
            return None
        return self._structure_tensors()["codes"].clone(), self._law.labels.clone()

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
        law, k = self._law, self.k
        if law.kind == "count":
            s = torch.arange(k + 1, dtype=torch.float64)
            per_count = law.probs.sum(0)  # (k + 1,)
            e_y_phi = float((per_count * law.labels * s).sum()) / k
            e_y = float((per_count * law.labels).sum())
            e_phi = float((per_count * s).sum()) / k
        else:
            codes = self._structure_tensors()["codes"]  # (N, k)
            e_y_phi = float((law.probs * law.labels) @ codes.mean(1))
            e_y = float((law.probs * law.labels).sum())
            e_phi = float(law.probs @ codes.mean(1))
        return e_y_phi - e_y * e_phi

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
            phi_a = _random_subsets(count, k, generator, device)  # (n, k) bool
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

    def structure_free_overrides(self) -> dict:
        """``{"structure": False}``: the same labeling on uniform phi~ (assumption A1')."""
        if self.patterns == "hidden_representation":
            return super().structure_free_overrides()
        return {"structure": False}

    def ground_truth(self) -> dict[str, Tensor]:
        """``feature`` = sum_{j in A} M_j (d,), ``dictionary`` = M (d, D), ``relevant`` = A (k,) long."""
        s = self._structure_tensors()
        m, a = s["M"], s["A"]
        return {
            "feature": m[:, a].sum(1).to(self.dtype),
            "dictionary": m.to(self.dtype),
            "relevant": a.clone(),
        }


def _random_subsets(count: Tensor, k: int, generator: torch.Generator, device: torch.device) -> Tensor:
    """Rows of k bits with ``count[i]`` ones at a uniformly random subset (exact).

    Sequential sampling without replacement: position j is a one with probability
    (ones still to place) / (positions left), which gives every count-subset the same
    probability. Float64 uniforms keep the comparison bias below 2^-53.
    """
    n = count.numel()
    u = torch.rand(n, k, generator=generator, device=device, dtype=torch.float64)
    remaining = count.to(torch.float64)
    bits = torch.empty(n, k, dtype=torch.bool, device=device)
    for j in range(k):
        take = u[:, j] * (k - j) < remaining
        bits[:, j] = take
        remaining = remaining - take.to(torch.float64)
    return bits


def _complement(a: Tensor, size: int) -> Tensor:
    """The indices of [0, size) not in ``a``, ascending (long)."""
    keep = torch.ones(size, dtype=torch.bool)
    keep[a] = False
    return torch.arange(size)[keep]


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"data.{name} must be an integer >= {minimum}, got {value!r}.")


def _check_nonnegative_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"data.{name} must be a non-negative integer, got {value!r}.")


def _check_probability(name: str, value, hi: float = 1.0, why: str = "") -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0.0 <= value <= hi
    ):
        bound = "1" if hi == 1.0 else f"{hi:.4g}"
        raise ValueError(f"data.{name} must be a probability in [0, {bound}]{why}, got {value!r}.")
