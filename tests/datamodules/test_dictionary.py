"""DictionaryDataModule, the machinery under SparseCoding and HiddenRepresentation, on laws of its own.

The data model here, :class:`TableLaw`, states its law of (phi~, y) in full (a count
table with components, or a code table with unequal weights), unlike the paper's data
models; everything the base class adds (the dictionary M, the set A, the exact
normalisation, the conditioning on ``negative_ratio``, gamma, the process constants,
the sampler) is checked against the docstring's formulas by enumerating {0, 1}^D.
"""

from __future__ import annotations

import math

import pytest
import torch

from featlearn.datamodules.dictionary import E11_GAMMA, DictionaryDataModule
from featlearn.datamodules.sparse_coding_law import HiddenLaw

from .dictionary_oracle import (
    CPU,
    Z,
    all_hidden_vectors,
    assert_exact_moments,
    bernoulli_prob,
    condition_on_negative_ratio,
    encode,
    gen,
)

F64 = torch.float64


class TableLaw(DictionaryDataModule):
    """phi~ from a law given in full.

    Count form (``codes`` None): Pr[component c, |phi~_A| = s] = ``probs[c][s]``, the s ones
    at a uniformly random s-subset of A, the entries outside A i.i.d. Bernoulli(``q[c]``),
    y = ``labels[s]``. Code form: phi~_A = row j of the code table with probability
    ``probs[j]`` and label ``labels[j]``, outside A i.i.d. Bernoulli(``q[0]``). The table
    is ``codes`` with each bit column flipped by a mask drawn from the structure seed.
    """

    def __init__(self, d, D, k, probs, q, labels, codes=None, **kwargs):
        super().__init__(d=d, D=D, k=k, **kwargs)
        self.table = probs, q, labels, codes
        self._set_law()

    def _natural_law(self) -> HiddenLaw:
        probs, q, labels, codes = self.table
        kind = "count" if codes is None else "code"
        return HiddenLaw(
            kind, torch.tensor(probs, dtype=F64), torch.tensor(q, dtype=F64), torch.tensor(labels, dtype=F64)
        )

    def _single_class_error(self, only: str, p_pos: float) -> str:
        return f"This table gives every sample the label {only} (Pr[y = +1] = {p_pos:.3g})."

    def _draw_codes(self, generator):
        codes = self.table[3]
        if codes is None:
            return None
        mask = torch.randint(0, 2, (self.k,), generator=generator).to(F64)
        return (torch.tensor(codes, dtype=F64) + mask) % 2

    @property
    def codes(self):
        return self._structure_tensors()["codes"]


# Two components, labels by count: +1 for s in {1, 3}; k = 3 of D = 5 patterns.
COUNT = dict(k=3, D=5, probs=[[0.1, 0.05, 0.15, 0.1], [0.2, 0.0, 0.1, 0.3]], q=[0.3, 0.8], labels=[-1, 1, -1, 1])
# Three codes with unequal weights, not exchangeable on A.
CODE = dict(k=3, D=5, probs=[0.5, 0.3, 0.2], q=[0.4], labels=[1, -1, 1], codes=[[1, 0, 0], [1, 1, 0], [0, 1, 1]])
LAWS = {"count": COUNT, "code": CODE}


def brute_force_law(dm: TableLaw, table: dict, negative_ratio=None):
    """All phi~ in {0, 1}^D, their probabilities and labels (0 off the support), from TableLaw's docstring."""
    k, D = table["k"], table["D"]
    phi = all_hidden_vectors(D)
    a = dm.A
    outside = torch.tensor([j for j in range(D) if j not in set(a.tolist())])
    phi_a, phi_out = phi[:, a], phi[:, outside]
    if "codes" not in table:
        count = phi_a.sum(1).long()
        p = torch.zeros(2**D, dtype=F64)
        for c, q in enumerate(table["q"]):
            per_count = torch.tensor(table["probs"][c], dtype=F64)[count]
            p += per_count / torch.tensor([math.comb(k, int(s)) for s in count], dtype=F64) * bernoulli_prob(phi_out, q)
        labels = torch.tensor(table["labels"], dtype=F64)[count]
    else:
        p, labels = torch.zeros(2**D, dtype=F64), torch.zeros(2**D, dtype=F64)
        for code, weight, label in zip(dm.codes, table["probs"], table["labels"], strict=True):
            match = (phi_a == code).all(1).to(F64)
            p += match * weight * bernoulli_prob(phi_out, table["q"][0])
            labels[match > 0] = label
    return phi, condition_on_negative_ratio(p, labels, negative_ratio), labels


def build(law="count", d=6, dictionary="orthonormal", **kwargs) -> TableLaw:
    return TableLaw(d=d, dictionary=dictionary, **{**LAWS[law], **kwargs})


CASES = {
    "count": dict(law="count"),
    "code": dict(law="code"),
    "count incoherent noisy": dict(law="count", d=4, dictionary="incoherent", sigma_zeta=0.3),
    "code imbalanced": dict(law="code", negative_ratio=0.7, structure_seed=2),
    "count imbalanced incoherent": dict(law="count", d=3, dictionary="incoherent", negative_ratio=0.2),
    "code relevant given": dict(law="code", relevant=[4, 0, 2], sigma_zeta=0.1),
}


# ---------------------------------------------------------------------- exact law
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_exact_moments_and_class_probability_match_the_brute_force_law(case):
    dm = build(**case)
    phi, p, labels = brute_force_law(dm, LAWS[case["law"]], case.get("negative_ratio"))
    assert_exact_moments(dm, {"negative_ratio": case.get("negative_ratio")}, phi, p, labels)
    # sigma~^2 = tr(M^T M Cov(phi~)) + d sigma_zeta^2, the docstring's form (cross terms kept for incoherent M)
    mean = p @ phi
    cov = (phi - mean).T @ (p[:, None] * (phi - mean))
    m = dm.M
    assert dm.sigma_tilde**2 == pytest.approx(float(torch.trace(m.T @ m @ cov)) + dm.d * dm.sigma_zeta**2, rel=1e-10)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_gamma_is_the_covariance_of_y_and_phi_i_averaged_over_a(case):
    dm = build(**case)
    phi, p, labels = brute_force_law(dm, LAWS[case["law"]], case.get("negative_ratio"))
    per_pattern = [
        float((p * labels * phi[:, i]).sum() - (p * labels).sum() * (p * phi[:, i]).sum()) for i in dm.A.tolist()
    ]
    assert dm.gamma == pytest.approx(sum(per_pattern) / len(per_pattern), abs=1e-12)
    if case["law"] == "code":  # not exchangeable: the average of unequal per-pattern values
        assert max(per_pattern) - min(per_pattern) > 0.1


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_samples_follow_the_law_and_the_normalisation_formula(case):
    dm = build(**case)
    _, p, labels = brute_force_law(dm, LAWS[case["law"]], case.get("negative_ratio"))
    n = 60_000
    x, y, phi = dm.sample_with_hidden(n, gen(3), CPU)
    assert x.shape == (n, dm.d) and y.shape == (n,) and phi.shape == (n, dm.D) and x.dtype == torch.float32
    states = encode(phi)
    freq = torch.bincount(states, minlength=len(p)).double() / n
    sd = (p * (1 - p) / n).sqrt()
    assert (freq[p == 0] == 0).all()
    assert ((freq - p).abs() <= Z * sd + 1e-12).all(), ((freq - p) / sd.clamp_min(1e-30)).abs().max()
    torch.testing.assert_close(y.double(), labels[states])  # each sample's label is its phi~'s
    clean = (phi.double() @ dm.M.T - dm.mean_tilde) / dm.sigma_tilde  # (x~ - E x~) / sigma~ without zeta
    noise = x.double() - clean  # zeta / sigma~: N(0, (sigma_zeta / sigma~)^2) per coordinate
    if dm.sigma_zeta == 0:
        assert noise.abs().max() < 1e-5
    else:
        scale = dm.sigma_zeta / dm.sigma_tilde
        assert noise.mean().abs() < Z * scale / math.sqrt(noise.numel())
        assert (noise / scale).pow(2).mean().item() == pytest.approx(1.0, abs=Z * math.sqrt(2 / noise.numel()))
    # E[x] = 0 and E||x||^2 = 1 (unit total variance), within sampling error
    assert (x.double().mean(0).norm() ** 2).item() < 30 / n  # E = 1 / n; a tail beyond 30 / n is < 1e-7
    squares = x.double().pow(2).sum(1)  # ||x||^2 per sample
    assert squares.mean().item() == pytest.approx(1.0, abs=Z * squares.std().item() / math.sqrt(n))


# ---------------------------------------------------------------------- the structure
def test_orthonormal_and_incoherent_dictionaries_have_the_stated_geometry():
    m = build(d=6, D=5).M
    torch.testing.assert_close(m.T @ m, torch.eye(5, dtype=F64), rtol=0, atol=1e-12)
    wide = build(d=3, D=5, dictionary="incoherent").M  # D > d: allowed for an incoherent dictionary
    assert wide.shape == (3, 5) and wide.dtype == F64
    torch.testing.assert_close(wide.norm(dim=0), torch.ones(5, dtype=F64), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match=r"data\.D must be <= data\.d .* got D=5 > d=3.*data\.dictionary: incoherent"):
        build(d=3, D=5)


@pytest.mark.parametrize("dictionary", ["orthonormal", "incoherent"])
def test_dictionary_columns_are_uniformly_distributed_over_structure_seeds(dictionary):
    """Haar (orthonormal) or i.i.d. uniform (incoherent) columns: each entry symmetric, E M_ij^2 = 1/d."""
    d, seeds = 4, 400
    ms = torch.stack([build(d=d, D=3, dictionary=dictionary, structure_seed=s).M for s in range(seeds)])  # (N, d, D)
    positive = (ms > 0).double().mean(0)  # each entry's sign is a fair coin
    assert ((positive - 0.5).abs() <= Z * 0.5 / math.sqrt(seeds)).all(), positive
    second = ms.pow(2).mean(0)  # Var(M_ij^2) = 2 (d - 1) / (d^2 (d + 2)) = 1 / d^2 at d = 4
    assert ((second - 1 / d).abs() <= Z / (d * math.sqrt(seeds))).all(), second


def test_the_structure_seed_fixes_m_a_and_the_codes_and_a_given_relevant_set_changes_only_a():
    dm = build("code", structure_seed=1)
    again = build("code", structure_seed=1)
    assert torch.equal(dm.M, again.M) and torch.equal(dm.A, again.A) and torch.equal(dm.codes, again.codes)
    assert dm.A.tolist() == sorted(dm.A.tolist()) and len(set(dm.A.tolist())) == 3
    other = build("code", structure_seed=2)
    assert not torch.equal(dm.M, other.M)
    given = build("code", structure_seed=1, relevant=[4, 0, 2])
    assert given.A.tolist() == [4, 0, 2]  # code bit i is pattern A[i], in the order given
    assert torch.equal(given.M, dm.M) and torch.equal(given.codes, dm.codes)  # drawn in order: M, A, codes
    assert dm.A.dtype == torch.long
    flips = (dm.codes - torch.tensor(CODE["codes"], dtype=F64)) % 2  # the given table, bit columns flipped
    assert (flips == flips[0]).all()


def test_ground_truth_is_the_sum_of_the_relevant_columns():
    dm = build("count", d=6, relevant=[1, 3, 4])
    truth = dm.ground_truth()
    m = dm.M
    torch.testing.assert_close(truth.feature, (m[:, 1] + m[:, 3] + m[:, 4]).float())
    torch.testing.assert_close(truth.dictionary, m.float())
    assert truth.relevant.tolist() == [1, 3, 4] and truth.feature.dtype == torch.float32


# ---------------------------------------------------------------------- training constants
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_process_constants_follow_section_3_1(case):
    dm = build(**case)
    k = LAWS[case["law"]]["k"]
    _, p, labels = brute_force_law(dm, LAWS[case["law"]], case.get("negative_ratio"))
    constants = dm.process_constants()
    assert constants == pytest.approx(
        {
            "sigma_w": 1 / k,
            "sigma_b": 1 / k**2,
            "sigma_xi": k**-1.5,
            "sigma_a": dm.sigma_tilde**2 / (dm.gamma * k**2),
            "positive_rate": float(p[labels > 0].sum()),
        },
        rel=1e-12,
    )
    assert all(type(v) is float for v in constants.values())


def test_without_per_pattern_signal_e11s_gamma_sets_sigma_a():
    """A uniform count on A labelled by parity: gamma = 0 exactly, so sigma_a uses gamma = 1/4."""
    parity = dict(probs=[[1 / 8, 3 / 8, 3 / 8, 1 / 8]], q=[0.5], labels=[-1, 1, -1, 1])
    dm = build("count", **parity)
    assert dm.gamma == pytest.approx(0.0, abs=1e-15)
    assert dm.process_constants()["sigma_a"] == pytest.approx(dm.sigma_tilde**2 / (E11_GAMMA * 9), rel=1e-12)


# ---------------------------------------------------------------------- refusals
def test_a_law_with_one_label_is_refused_with_the_subclass_message_before_conditioning():
    with pytest.raises(ValueError, match=r"^This table gives every sample the label -1 \(Pr\[y = \+1\] = 0\)\.$"):
        build("count", labels=[-1, -1, -1, -1], negative_ratio=0.5)  # no reweighting makes a class out of none
    with pytest.raises(ValueError, match=r"label \+1 \(Pr\[y = \+1\] = 1\)"):
        build("code", labels=[1, 1, 1])


def test_constant_inputs_cannot_be_normalised_and_say_what_to_change():
    dm = build("count", probs=[[0.5, 0.0, 0.0, 0.5]], q=[1.0], labels=[-1, 1, -1, 1], D=3)  # phi~ = 0 or 1 on A: varies
    assert dm.sigma_tilde > 0
    one_code = dict(probs=[0.5, 0.5], labels=[1, -1], codes=[[1, 0, 0], [1, 0, 0]], q=[0.0])  # phi~ fixed
    with pytest.raises(ValueError, match=r"constant \(sigma~ = 0\).*data\.sigma_zeta > 0"):
        _ = build("code", **one_code).sigma_tilde
    assert build("code", **one_code, sigma_zeta=0.5).sigma_tilde == pytest.approx(math.sqrt(6 * 0.5**2))  # d sigma^2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(k=6), r"data\.k must be <= data\.D \(A is a subset of the D patterns\), got k=6 > D=5: lower data\.k"),
        (dict(d=0), r"data\.d must be an integer >= 1"),
        (dict(relevant=[0, 1, 5]), r"data\.relevant must list k=3 distinct pattern indices in \[0, 4\]"),
        (dict(negative_ratio=0.0), r"data\.negative_ratio must be null .* strictly between 0 and 1 .* got 0\.0"),
        (dict(negative_ratio=True), r"data\.negative_ratio must be null"),
    ],
)
def test_invalid_structure_arguments_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build("count", **kwargs)
