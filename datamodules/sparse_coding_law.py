r"""The law of the hidden vector phi~ of the sparse-coding data models, and its moments.

Shi, Wei & Liang (2022), Section 3 and Appendices E-F: an input is
``x~ = M phi~ + zeta`` with a dictionary ``M in R^{d x D}``, a hidden vector
``phi~ in {0, 1}^D`` and noise ``zeta ~ N(0, sigma_zeta^2 I_d)``; a set ``A`` of k
class-relevant patterns carries the label. Every distribution of phi~ used here is
a finite mixture described by a :class:`HiddenLaw`, from which the moments of phi~
and of x~ follow exactly (no sampling, no estimation).

Pure torch functions (float64, CPU): no Lightning, no state. The data models
(:mod:`featlearn.datamodules.sparse_coding`,
:mod:`featlearn.datamodules.hidden_representation`) build their law here and
sample from it.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class HiddenLaw:
    r"""The law of the hidden vector phi~, as a finite mixture of simple components.

    Either *count* form (``kind="count"``): a joint table ``probs[c, s]`` over a
    component c and the number s of ones in phi~_A. Given (c, s), the ones sit at a
    uniformly random s-subset of A (every pattern distribution here is exchangeable
    on A), and the entries outside A are i.i.d. Bernoulli(``q[c]``), independent of
    phi~_A given c.

    Or *code* form (``kind="code"``): ``probs[j]`` over the rows of a code table
    (phi~_A = codes[j]), one component, entries outside A i.i.d.
    Bernoulli(``q[0]``). The table itself is part of the data model's structure
    (drawn from its seed) and is passed to the functions that need it.

    Attributes:
        kind: ``"count"`` or ``"code"``.
        probs: (C, k + 1) or (N,), float64, sums to 1.
        q: (C,) float64, the outside-A success probability of each component.
        labels: (k + 1,) or (N,), float64 in {-1, +1}: the label of each count s
            (count form) or code j (code form).
    """

    kind: str
    probs: Tensor
    q: Tensor
    labels: Tensor

    def positive_probability(self) -> float:
        """Pr[y = +1] = sum of the probabilities of the positive counts (or codes)."""
        per_label = self.probs.sum(0) if self.kind == "count" else self.probs
        return float(per_label[self.labels > 0].sum())

    def conditioned(self, negative_ratio: float) -> HiddenLaw:
        r"""The law conditioned to Pr[y = -1] = r (exact reweighting).

        ``D_r = r D(. | y = -1) + (1 - r) D(. | y = +1)``: each class keeps its own
        conditional law, only the class proportions change (Appendix E.2.2). Each
        negative entry is multiplied by r / Pr[y = -1], each positive one by
        (1 - r) / Pr[y = +1].

        Args:
            negative_ratio: r in (0, 1).

        Returns:
            The reweighted law (same components, same q and labels).
        """
        p_pos = self.positive_probability()
        # float64 weights (torch.where with Python scalars would round them to float32).
        weight = torch.full_like(self.labels, negative_ratio / (1.0 - p_pos))
        weight[self.labels > 0] = (1.0 - negative_ratio) / p_pos
        return HiddenLaw(self.kind, self.probs * weight, self.q, self.labels)


# ---------------------------------------------------------------------- building laws
def binomial_pmf(k: int, p: float) -> Tensor:
    r"""Pr[Binomial(k, p) = s] = C(k, s) p^s (1 - p)^(k - s) for s = 0..k, float64.

    Computed in log space (no overflow for large k); p = 0 and p = 1 give the point
    masses at s = 0 and s = k.
    """
    if p <= 0.0 or p >= 1.0:
        pmf = torch.zeros(k + 1, dtype=torch.float64)
        pmf[0 if p <= 0.0 else k] = 1.0
        return pmf
    s = torch.arange(k + 1, dtype=torch.float64)
    log_comb = torch.lgamma(torch.tensor(k + 1.0, dtype=torch.float64)) - torch.lgamma(s + 1) - torch.lgamma(k - s + 1)
    return torch.exp(log_comb + s * math.log(p) + (k - s) * math.log1p(-p))


def count_labels(k: int, positive: Collection[int]) -> Tensor:
    """The label of each count s = 0..k: +1 if s is in the set P (``positive``), else -1 (float64)."""
    return torch.tensor([1.0 if s in positive else -1.0 for s in range(k + 1)], dtype=torch.float64)


def uniform_law(k: int, positive: Collection[int]) -> HiddenLaw:
    """(A1'), learning without input structure: all D entries i.i.d. Bernoulli(1/2).

    One component: the count on A is Binomial(k, 1/2) and q = 1/2.
    """
    probs, q = binomial_pmf(k, 0.5)[None], [0.5]
    return HiddenLaw("count", probs, torch.tensor(q, dtype=torch.float64), count_labels(k, positive))


def bernoulli_law(k: int, p_in: float, p_out: float, positive: Collection[int]) -> HiddenLaw:
    """E.1.2: independent entries, Pr[phi~_i = 1] = p_in on A and p_out outside A.

    One component: the count on A is Binomial(k, p_in) and q = p_out.
    """
    probs, q = binomial_pmf(k, p_in)[None], [p_out]
    return HiddenLaw("count", probs, torch.tensor(q, dtype=torch.float64), count_labels(k, positive))


def mixture_law(k: int, p_o: float, positive: Collection[int]) -> HiddenLaw:
    """E.1.1 and the proof of Theorem 2: D_mix = p_o D^(0) + (1 - p_o) D^(1).

    Under D^(0) all entries are i.i.d. Bernoulli(1/2): count Binomial(k, 1/2),
    q = 1/2. Under D^(1), phi~_A is all zeros or all ones with probability 1/2 each
    (count 0 or k) and the entries outside A are i.i.d. Bernoulli(p_o / (2 - 2 p_o)),
    so that each outside entry is 1 with probability p_o overall; this needs
    p_o <= 2/3.
    """
    component_1 = torch.zeros(k + 1, dtype=torch.float64)
    component_1[0] += 0.5  # phi~_A = (0, ..., 0)
    component_1[k] += 0.5  # phi~_A = (1, ..., 1)
    probs = torch.stack([p_o * binomial_pmf(k, 0.5), (1.0 - p_o) * component_1])
    q = [0.5, p_o / (2.0 - 2.0 * p_o)]  # p_o <= 2/3 keeps this <= 1
    return HiddenLaw("count", probs, torch.tensor(q, dtype=torch.float64), count_labels(k, positive))


def code_law(labels: Tensor, p_o: float) -> HiddenLaw:
    """E.3.1: phi~_A uniform over the N codes of a table, entries outside A i.i.d. Bernoulli(p_o).

    Args:
        labels: (N,) float64 in {-1, +1}, the label of each code.
        p_o: Probability of each irrelevant pattern.
    """
    probs = torch.full((labels.numel(),), 1.0 / labels.numel(), dtype=torch.float64)
    return HiddenLaw("code", probs, torch.tensor([p_o], dtype=torch.float64), labels)


# ---------------------------------------------------------------------- moments
def hidden_moments(law: HiddenLaw, k: int, codes: Tensor | None = None) -> dict[str, Tensor | float]:
    r"""Exact first and second moments of phi~ from its law (float64).

    Count form, with p(c, s) = ``law.probs``: E phi~_i = sum_s p(s) s / k on A, and
    E phi~_i phi~_j = sum_s p(s) s (s - 1) / (k (k - 1)) for i != j in A (s ones at a
    uniformly random s-subset); outside A, E phi~_j = sum_c p(c) q_c and
    E phi~_j phi~_l = sum_c p(c) q_c^2 (j != l); across,
    E phi~_i phi~_j = sum_{c,s} p(c, s) (s / k) q_c. Code form: the mean and
    covariance of the code table's rows under ``law.probs``, and independent
    i.i.d. Bernoulli(q_0) entries outside A.

    Args:
        law: The law of phi~.
        k: |A|.
        codes: (N, k) float64 code table, for the code form.

    Returns:
        ``mean_a`` (k,) and ``cov_aa`` (k, k): mean and covariance on A; ``cov_ao``
        (k,): Cov(phi~_i, phi~_j) for i in A and any j outside A; ``mean_o``,
        ``var_o``, ``cov_oo`` (floats): mean, variance and pairwise covariance of the
        (exchangeable) entries outside A.
    """
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
        if codes is None:
            raise ValueError("hidden_moments: a law of code form needs its code table (codes).")
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


def input_moments(
    m: Tensor, a: Tensor, moments: dict[str, Tensor | float], sigma_zeta: float
) -> tuple[Tensor, Tensor, Tensor]:
    r"""E phi~, E x~ = M E phi~ and the total variance sigma~^2 of x~ = M phi~ + zeta, exact.

    .. math::

        \tilde\sigma^2 = E \|\tilde x - E\tilde x\|_2^2
        = \mathrm{tr}(M^\top M \,\mathrm{Cov}(\tilde\phi)) + d \sigma_\zeta^2 ,

    split into the blocks (A, A), (outside, outside) and twice (A, outside) of
    Cov(phi~). The columns of M have unit norm, so with ``u`` the sum of the columns
    outside A, the outside block is ``var_o n_o + cov_oo (u^T u - n_o)``. The cross
    terms <M_i, M_j> Cov(phi~_i, phi~_j) are kept (they vanish for orthonormal M).

    Args:
        m: The dictionary M (d, D), float64, unit columns.
        a: The class-relevant set A (k,), long.
        moments: :func:`hidden_moments` of the law.
        sigma_zeta: Standard deviation of the noise zeta.

    Returns:
        ``mean_phi`` (D,), ``mean_x`` (d,) and ``variance`` (0-dim), sigma~^2, all
        float64. The variance may be 0 (constant inputs): the caller decides.
    """
    d, n_patterns = m.shape
    outside = complement(a, n_patterns)
    m_a, m_o = m[:, a], m[:, outside]
    u_o = m_o.sum(1)  # sum of the irrelevant columns, (d,)
    n_o = outside.numel()
    var = torch.trace(m_a.T @ m_a @ moments["cov_aa"])
    var = var + moments["var_o"] * n_o + moments["cov_oo"] * (u_o @ u_o - n_o)
    var = var + 2.0 * moments["cov_ao"] @ (m_a.T @ u_o)
    var = var + d * sigma_zeta**2
    mean_phi = torch.empty(n_patterns, dtype=torch.float64)
    mean_phi[a] = moments["mean_a"]
    mean_phi[outside] = moments["mean_o"]
    return mean_phi, m @ mean_phi, var


def signal_strength(law: HiddenLaw, k: int, codes: Tensor | None = None) -> float:
    r"""The signal strength gamma = E[y phi~_i] - E[y] E[phi~_i], i in A (A1), averaged over A, exact.

    The count-based laws are exchangeable on A, so every i has the same value; a
    code table may not be, hence the average (codes.mean(1) is the fraction of ones
    of each code).

    Args:
        law: The law of phi~ (with its labels).
        k: |A|.
        codes: (N, k) float64 code table, for the code form.
    """
    if law.kind == "count":
        s = torch.arange(k + 1, dtype=torch.float64)
        per_count = law.probs.sum(0)  # (k + 1,)
        e_y_phi = float((per_count * law.labels * s).sum()) / k
        e_y = float((per_count * law.labels).sum())
        e_phi = float((per_count * s).sum()) / k
    else:
        if codes is None:
            raise ValueError("signal_strength: a law of code form needs its code table (codes).")
        e_y_phi = float((law.probs * law.labels) @ codes.mean(1))
        e_y = float((law.probs * law.labels).sum())
        e_phi = float(law.probs @ codes.mean(1))
    return e_y_phi - e_y * e_phi


# ---------------------------------------------------------------------- sampling helpers
def random_subsets(count: Tensor, k: int, generator: torch.Generator, device: torch.device) -> Tensor:
    """Rows of k bits with ``count[i]`` ones at a uniformly random subset (exact).

    Sequential sampling without replacement: position j is a one with probability
    (ones still to place) / (positions left), which gives every count-subset the same
    probability. Float64 uniforms keep the comparison bias below 2^-53.

    Args:
        count: (n,) integer counts in [0, k].
        k: Row length.
        generator: The source of randomness (on ``device``).
        device: Where to create the tensors.

    Returns:
        (n, k) bool.
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


def complement(a: Tensor, size: int) -> Tensor:
    """The indices of [0, size) not in ``a``, ascending (long)."""
    keep = torch.ones(size, dtype=torch.bool)
    keep[a] = False
    return torch.arange(size)[keep]
