"""The hidden-representation data model of Shi, Wei & Liang (2022), Appendix E.3.1."""

from __future__ import annotations

import torch
from torch import Tensor

from featlearn.datamodules.dictionary import DictionaryDataModule
from featlearn.datamodules.sparse_coding_law import HiddenLaw, code_law
from featlearn.validation import check_int, check_number, check_probability, is_number

# Largest k for which the random codes are drawn by a permutation of all 2^k binary
# vectors (beyond it, collisions are rare and rejection is cheaper).
_CODES_BY_PERMUTATION_MAX_K = 16


class HiddenRepresentation(DictionaryDataModule):
    r"""Sparse-coding inputs whose relevant patterns form one of a table of labelled codes.

    Shi, Wei & Liang (2022), Appendix E.3.1: with a dictionary M, a class-relevant
    set A of k patterns and noise zeta as in :class:`DictionaryDataModule`,

    .. math::

        \tilde x = M \tilde\phi + \zeta, \qquad
        \tilde\phi_A \sim \mathrm{Uniform}\{c_1, \dots, c_N\}, \qquad
        \tilde\phi_j \overset{iid}{\sim} \mathrm{Bernoulli}(p_o) \ (j \notin A), \qquad
        y = \ell(\tilde\phi_A),

    where ``c_1..c_N in {0, 1}^k`` is a table of distinct codes with labels
    ``l(c_j) in {-1, +1}`` (bit i of a code is pattern ``A[i]``). By default the table
    holds ``codes_per_class`` uniformly random distinct codes per label, drawn from
    ``structure_seed`` after M and A (paper: 50 per class, d = 500, D = 250,
    k = 50); ``codes`` and ``code_labels`` give it explicitly. The irrelevant patterns
    are "uniformly at random" in the paper, i.e. p_o = 1/2. This generalises E.1.1's
    D^(1), whose two codes are all-zeros (y = -1 for odd k parity) and all-ones
    (y = +1).

    Inputs are normalised exactly, x = (x~ - E x~) / sigma~, and ``negative_ratio``
    conditions the class proportions (see :class:`DictionaryDataModule`). There is
    no variant without input structure: a code table labels only its own codes, so
    :meth:`structure_free_overrides` raises.

    Args:
        d: Input dimension d (paper: 500).
        D: Number of dictionary patterns D (paper: 250).
        k: Number of class-relevant patterns k = |A|, 1 <= k <= D (paper: 50).
        codes_per_class: Number of random codes per label (None: 50, unless
            ``codes`` is given); at most 2^k / 2.
        codes: An explicit code table: distinct 0/1 lists of length k.
        code_labels: The label (+1 or -1) of each code in ``codes``.
        p_o: Probability of each irrelevant pattern, in [0, 1] (None: 1/2).
        label_noise: The probability, in [0, 0.5], that a sample's label is flipped (drawn
            after the sample, from its own generator: none at 0, so the draws are unchanged).
            At 0.5 the labels say nothing about the codes: training on noise, the control of
            E.3.1's "the neuron weights are updated to form clusters".
        **kwargs: :class:`DictionaryDataModule`'s shared arguments (``negative_ratio``,
            ``dictionary``, ``sigma_zeta``, ``relevant``, ``structure_seed``, ``batch_size``,
            paper: 1000) and :class:`SyntheticDataModule`'s (``train_size``, ``test_size``,
            ``seed``, ...).
    """

    def __init__(
        self,
        d: int = 500,
        D: int = 250,
        k: int = 50,
        codes_per_class: int | None = None,
        codes: list[list[int]] | None = None,
        code_labels: list[int] | None = None,
        p_o: float | None = None,
        label_noise: float = 0.0,
        **kwargs,
    ) -> None:
        super().__init__(d=d, D=D, k=k, **kwargs)
        self.label_noise = float(check_number("data.label_noise", label_noise, 0.0, 0.5))
        p_o = 0.5 if p_o is None else p_o
        check_probability("data.p_o", p_o)
        codes, code_labels, codes_per_class = self._check_codes(k, codes, code_labels, codes_per_class)
        self.p_o = p_o
        self.codes_per_class = codes_per_class
        self._given_codes, self._given_code_labels = codes, code_labels
        self._set_law()

    def sample_with_hidden(
        self, n: int, generator: torch.Generator, device: torch.device
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The dictionary's draw (x, y, phi), each label then flipped with probability ``label_noise``."""
        x, y, phi = super().sample_with_hidden(n, generator, device)
        if self.label_noise:
            flip = torch.rand(n, generator=generator, device=device) < self.label_noise  # (n,)
            y = torch.where(flip, -y, y)
        return x, y, phi

    @staticmethod
    def _check_codes(
        k: int, codes: list[list[int]] | None, code_labels: list[int] | None, codes_per_class: int | None
    ) -> tuple[Tensor | None, Tensor | None, int | None]:
        """Validate the code table: (codes, labels, None) if given, else (None, None, codes_per_class)."""
        if codes is None:
            if code_labels is not None:
                raise ValueError("data.code_labels needs data.codes (the codes they label): set both or neither.")
            codes_per_class = 50 if codes_per_class is None else codes_per_class
            check_int("data.codes_per_class", codes_per_class, 1)
            if k < 62 and 2 * codes_per_class > 2**k:
                raise ValueError(
                    f"data.codes_per_class must be <= 2^k / 2 = {2**k // 2} (distinct binary codes "
                    f"of length k={k}), got {codes_per_class}: lower it or raise data.k."
                )
            return None, None, codes_per_class
        if codes_per_class is not None:
            raise ValueError("data.codes_per_class and data.codes exclude each other: give one of them.")
        rows = [list(c) for c in codes]
        if not rows or not all(len(c) == k and all(is_number(b) and b in (0, 1) for b in c) for c in rows):
            raise ValueError(f"data.codes must be a non-empty list of 0/1 lists of length k={k}, got {codes!r}.")
        if len({tuple(c) for c in rows}) != len(rows):
            raise ValueError("data.codes must be distinct (a repeated code would be weighted twice or labelled twice).")
        if (
            code_labels is None
            or len(code_labels) != len(rows)
            or not all(is_number(v) and v in (-1, 1) for v in code_labels)
        ):
            raise ValueError(
                f"data.code_labels must give a label +1 or -1 for each of the {len(rows)} codes, got {code_labels!r}."
            )
        return (
            torch.tensor(rows, dtype=torch.float64),
            torch.tensor(list(code_labels), dtype=torch.float64),
            None,
        )

    def _single_class_error(self, only: str, p_pos: float) -> str:
        return (
            f"The code table gives every sample the label {only} (Pr[y = +1] = {p_pos:.3g}): "
            f"data.code_labels must contain both +1 and -1."
        )

    # ------------------------------------------------------------------ the law of phi~
    def _natural_law(self) -> HiddenLaw:
        """phi~_A uniform over the code table, outside entries i.i.d. Bernoulli(p_o) (code form)."""
        if self._given_codes is not None:
            labels = self._given_code_labels
        else:  # first codes_per_class codes are positive, the others negative
            n = self.codes_per_class
            labels = torch.cat([torch.ones(n), -torch.ones(n)]).to(torch.float64)
        return code_law(labels, self.p_o)

    def _draw_codes(self, generator: torch.Generator) -> Tensor:
        """The given code table, or 2 * codes_per_class distinct uniformly random codes in {0, 1}^k (float64)."""
        if self._given_codes is not None:
            return self._given_codes
        k, n = self.k, 2 * self.codes_per_class
        if k <= _CODES_BY_PERMUTATION_MAX_K:
            ints = torch.randperm(2**k, generator=generator)[:n]
            return ((ints[:, None] >> torch.arange(k)) & 1).to(torch.float64)
        rows: list[tuple[int, ...]] = []
        seen: set[tuple[int, ...]] = set()
        while len(rows) < n:  # rejection of repeats: rare for k > 16
            for row in torch.randint(0, 2, (n - len(rows), k), generator=generator).tolist():
                if tuple(row) not in seen:
                    seen.add(tuple(row))
                    rows.append(tuple(row))
        return torch.tensor(rows, dtype=torch.float64)

    # ------------------------------------------------------------------ public API
    @property
    def codes(self) -> tuple[Tensor, Tensor]:
        """The code table: codes (N, k) in {0, 1} (float64, bit i is pattern A[i]) and their labels (N,)."""
        return self._structure_tensors()["codes"].clone(), self._law.labels.clone()
