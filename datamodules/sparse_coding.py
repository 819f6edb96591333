"""The sparse-coding data model of Shi, Wei & Liang (2022): labels from counts of relevant patterns."""

from __future__ import annotations

from collections.abc import Sequence

from featlearn.datamodules.dictionary import DictionaryDataModule
from featlearn.datamodules.sparse_coding_law import (
    HiddenLaw,
    bernoulli_law,
    mixture_law,
    uniform_law,
)
from featlearn.validation import check_bool, check_choice, check_probability, is_int

LABELINGS = ("parity", "threshold", "interval", "set")
PATTERNS = ("mixture", "bernoulli")


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
        **kwargs: :class:`DictionaryDataModule`'s shared arguments (``negative_ratio``,
            ``dictionary``, ``sigma_zeta``, ``relevant``, ``structure_seed``, ``batch_size``,
            paper: 1000) and :class:`SyntheticDataModule`'s (``train_size``, ``test_size``,
            ``seed``, ...).
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
        **kwargs,
    ) -> None:
        super().__init__(d=d, D=D, k=k, **kwargs)
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
