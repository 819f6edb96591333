"""HiddenRepresentation against Shi, Wei & Liang (2022), Appendix E.3.1 (and Section 3, F).

The reference below is written from the paper's definition, independently of the
data model's implementation: for D <= 8 it enumerates all 2^D hidden vectors phi~
with their exact probabilities (phi~_A uniform over the code table, the other
entries i.i.d. Bernoulli(p_o), the label the code's label).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from featlearn.datamodules import HiddenRepresentation

from .dictionary_oracle import (
    CPU,
    FAST,
    PROBS,
    Z,
    all_hidden_vectors,
    assert_exact_moments,
    bernoulli_prob,
    condition_on_negative_ratio,
    dictionary_arguments,
    encode,
    gen,
)

E31 = dict(d=500, D=250, k=50, codes_per_class=50, p_o=0.5)  # the paper's sizes


# ---------------------------------------------------------------------- paper reference
def paper_labels(dm: HiddenRepresentation, phi: torch.Tensor) -> torch.Tensor:
    """y from phi~ by brute force: the label of the code phi~_A in the table."""
    codes, labels = dm.codes
    table = {tuple(int(b) for b in c): float(v) for c, v in zip(codes.tolist(), labels.tolist(), strict=True)}
    return torch.tensor([table[tuple(int(b) for b in row)] for row in phi[:, dm.A].tolist()])


def paper_law(dm: HiddenRepresentation, cfg: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """All phi~ in {0,1}^D (2^D, D), their probabilities and labels (0 off the support), from E.3.1."""
    D = cfg["D"]
    phi = all_hidden_vectors(D)
    a = dm.A
    outside = torch.tensor([j for j in range(D) if j not in set(a.tolist())], dtype=torch.long)
    codes, _ = dm.codes
    in_table = (phi[:, a][:, None, :] == codes[None]).all(-1).any(-1).to(torch.float64)
    p = in_table / codes.shape[0] * bernoulli_prob(phi[:, outside], cfg.get("p_o", 0.5))
    labels = torch.zeros(2**D, dtype=torch.float64)
    support = p > 0
    labels[support] = paper_labels(dm, phi[support]).to(torch.float64)
    return phi, condition_on_negative_ratio(p, labels, cfg.get("negative_ratio")), labels


# ---------------------------------------------------------------------- configurations


@st.composite
def configs(draw, max_D: int = 8) -> dict:
    cfg = dictionary_arguments(draw, max_D)
    cfg["p_o"] = draw(st.sampled_from(PROBS))
    cfg["codes_per_class"] = draw(st.integers(1, min(3, 2 ** (cfg["k"] - 1))))
    return cfg


def build(cfg: dict) -> HiddenRepresentation | None:
    """The data model, or None when its inputs are constant (sigma~ = 0: checked by the caller)."""
    dm = HiddenRepresentation(**cfg)
    try:
        _ = dm.sigma_tilde
    except ValueError as err:
        if "sigma~ = 0" in str(err):
            return None
        raise
    return dm


# ---------------------------------------------------------------------- exact law
@FAST
@given(cfg=configs())
def test_exact_moments_and_label_probability_match_the_paper(cfg):
    dm = build(cfg)
    assume(dm is not None)
    phi, p, labels = paper_law(dm, cfg)
    assert_exact_moments(dm, cfg, phi, p, labels)
    # gamma = E[y phi~_i] - E[y] E[phi~_i], averaged over A.
    a = dm.A
    gamma = ((p * labels) @ phi[:, a] - (p @ labels) * (p @ phi[:, a])).mean()
    assert dm.gamma == pytest.approx(gamma.item(), abs=1e-12)


@FAST
@given(cfg=configs(max_D=12), seed=st.integers(0, 2**31))
def test_samples_follow_the_code_table_and_normalisation_formula(cfg, seed):
    dm = build(cfg)
    assume(dm is not None)
    x, y, phi = dm.sample_with_hidden(300, gen(seed), CPU)
    assert x.shape == (300, dm.d) and y.shape == (300,) and phi.shape == (300, dm.D)
    assert x.dtype == y.dtype == phi.dtype == torch.float32
    assert set(phi.unique().tolist()) <= {0.0, 1.0}
    codes, _ = dm.codes
    assert (phi[:, dm.A][:, None, :].double() == codes[None]).all(-1).any(-1).all()  # phi~_A is a code
    torch.testing.assert_close(y, paper_labels(dm, phi))  # the code's label, by brute force
    if dm.sigma_zeta == 0:  # x = (M phi~ - E x~) / sigma~ exactly
        expected = (phi.double() @ dm.M.T - dm.mean_tilde) / dm.sigma_tilde
        torch.testing.assert_close(x.double(), expected, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- the sampler
@pytest.mark.parametrize(
    "cfg",
    [
        dict(d=8, D=6, k=4, codes_per_class=3, p_o=0.3),
        dict(d=4, D=6, k=3, codes_per_class=2, p_o=0.6, dictionary="incoherent", negative_ratio=0.8),
    ],
    ids=["plain", "incoherent-imbalanced"],
)
def test_sampler_frequencies_match_the_exact_law(cfg):
    """Every one of the 2^D hidden vectors appears with its paper probability."""
    dm = HiddenRepresentation(**cfg)
    _, p, labels = paper_law(dm, cfg)
    n = 200_000
    _, y, phi = dm.sample_with_hidden(n, gen(1), CPU)
    freq = torch.bincount(encode(phi), minlength=2**dm.D).double() / n
    # Binomial z-scores per state (Bonferroni over 64 states at Z = 5: false alarm < 1e-4).
    sd = (p * (1 - p) / n).sqrt()
    assert (freq[p == 0] == 0).all()
    assert ((freq - p).abs() <= Z * sd + 1e-12).all(), ((freq - p) / sd.clamp_min(1e-30)).abs().max()
    torch.testing.assert_close(y.double(), labels[encode(phi)])


def test_normalised_data_has_zero_mean_and_unit_total_variance():
    """E x = 0 and E||x||^2 = 1 (sigma~^2 = E||x~ - E x~||^2), within Z standard errors."""
    dm = HiddenRepresentation(d=24, D=20, k=8, codes_per_class=5, p_o=0.2)
    n = 200_000
    x, _ = dm.sample(n, gen(2), CPU)
    x = x.double()
    mean, var = x.mean(0), x.var(0)
    assert ((mean.abs() / (var / n).sqrt()) < Z).all()  # per coordinate, d = 24 checks
    sq = (x**2).sum(1)
    assert sq.std() > 0.1  # a real check, not a constant norm
    assert abs(sq.mean().item() - 1.0) < Z * sq.std().item() / math.sqrt(n) + 1e-6


@pytest.mark.parametrize("cfg", [dict(d=20, D=15, k=6, codes_per_class=4), E31], ids=["small", "E.3.1"])
def test_classes_are_balanced(cfg):
    """(A0): as many positive as negative codes, so Pr[y = +1] = 1/2 exactly, and empirically."""
    dm = HiddenRepresentation(**cfg)
    assert dm.positive_probability == pytest.approx(0.5, abs=1e-12)
    n = 100_000
    _, y = dm.sample(n, gen(3), CPU)
    assert abs((y > 0).double().mean().item() - 0.5) < Z * 0.5 / math.sqrt(n)


def test_negative_ratio_sets_the_fraction_of_negatives():
    dm = HiddenRepresentation(d=20, D=15, k=6, codes_per_class=4, negative_ratio=0.8)
    n = 100_000
    _, y = dm.sample(n, gen(4), CPU)
    assert abs((y < 0).double().mean().item() - 0.8) < Z * math.sqrt(0.8 * 0.2 / n)


# ---------------------------------------------------------------------- the code table
def test_random_codes_at_the_paper_sizes():
    dm = HiddenRepresentation(d=300, D=250, k=50)  # E.3.1 sizes, codes_per_class defaults to 50
    codes, labels = dm.codes
    assert codes.shape == (100, 50) and len({tuple(c) for c in codes.tolist()}) == 100
    assert set(codes.unique().tolist()) <= {0.0, 1.0}
    assert (labels == 1).sum() == 50 and (labels == -1).sum() == 50
    assert dm.p_o == 0.5


def test_explicit_codes():
    dm = HiddenRepresentation(d=8, D=6, k=2, codes=[[0, 0], [1, 1], [1, 0]], code_labels=[-1, 1, 1])
    assert dm.positive_probability == pytest.approx(2 / 3)
    codes, labels = dm.codes
    assert codes.tolist() == [[0, 0], [1, 1], [1, 0]] and labels.tolist() == [-1, 1, 1]


def test_structure_seed_fixes_m_a_and_the_codes_and_the_draw_order_keeps_them():
    a, b = (
        HiddenRepresentation(d=30, D=20, k=6, codes_per_class=4, seed=1),
        HiddenRepresentation(d=30, D=20, k=6, codes_per_class=4, seed=2),
    )
    assert torch.equal(a.M, b.M) and torch.equal(a.A, b.A) and torch.equal(a.codes[0], b.codes[0])
    c = HiddenRepresentation(d=30, D=20, k=6, codes_per_class=4, structure_seed=1)
    assert not torch.equal(a.M, c.M) and not torch.equal(a.codes[0], c.codes[0])
    # Giving A explicitly changes neither M nor the codes (drawn in the order M, A, codes).
    d = HiddenRepresentation(d=30, D=20, k=6, codes_per_class=4, relevant=[4, 0, 7, 1, 2, 3])
    assert torch.equal(d.M, a.M) and torch.equal(d.codes[0], a.codes[0]) and d.A.tolist() == [4, 0, 7, 1, 2, 3]


def test_same_generator_seed_gives_the_same_samples():
    dm = HiddenRepresentation(d=30, D=20, k=6, codes_per_class=4, sigma_zeta=0.1)
    a = dm.sample_with_hidden(500, gen(7), CPU)
    b = dm.sample_with_hidden(500, gen(7), CPU)
    c = dm.sample_with_hidden(500, gen(8), CPU)
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])


def test_ground_truth():
    dm = HiddenRepresentation(d=30, D=20, k=6, codes_per_class=4)
    gt = dm.ground_truth()
    m = dm.M
    torch.testing.assert_close(m.T @ m, torch.eye(20, dtype=torch.float64))
    assert gt.relevant.tolist() == dm.A.tolist()
    torch.testing.assert_close(gt.feature, m[:, dm.A].sum(1).float())


def test_has_no_variant_without_input_structure():
    """A code table labels only its own codes: uniform phi~ would have no label."""
    with pytest.raises(NotImplementedError):
        HiddenRepresentation(d=20, D=15, k=6, codes_per_class=4).structure_free_overrides()


# ---------------------------------------------------------------------- process constants
def test_process_constants_use_e11_gamma_at_the_paper_sizes():
    """Random codes have no per-pattern signal (gamma ~ 0): sigma_a = sigma~^2 / (k^2 / 4)."""
    dm = HiddenRepresentation(**E31)
    k, codes = 50, dm.codes[0]
    # Orthonormal M: sigma~^2 = sum_j Var(phi~_j), with the codes' bit frequencies on A
    # and Bernoulli(1/2) (variance 1/4) on the 200 other patterns.
    freq = codes.mean(0)
    sigma2 = (freq * (1 - freq)).sum().item() + 200 * 0.25
    assert dm.sigma_tilde**2 == pytest.approx(sigma2, rel=1e-12)
    assert dm.gamma <= 1e-3
    expected = {"sigma_w": 1 / k, "sigma_b": 1 / k**2, "sigma_xi": 1 / k**1.5, "sigma_a": sigma2 / (0.25 * k**2)}
    expected["positive_rate"] = dm.positive_probability  # the data's class prior (eq. 295's weights)
    constants = dm.process_constants()
    assert list(constants) == list(expected) and all(type(v) is float for v in constants.values())
    assert constants == pytest.approx(expected, rel=1e-12)


def test_process_constants_match_a_monte_carlo_estimate():
    # Two codes with opposite bits and labels: gamma = (1/2 - 1/2) / 2 = 0 exactly, so 1/4 is used.
    dm = HiddenRepresentation(
        d=12, D=10, k=2, codes=[[1, 0], [0, 1]], code_labels=[1, -1], p_o=0.3, dictionary="incoherent"
    )
    assert dm.gamma == pytest.approx(0.0, abs=1e-15)
    n = 200_000
    _, _, phi = dm.sample_with_hidden(n, gen(11), CPU)
    x = phi.double() @ dm.M.T
    sq = ((x - x.mean(0)) ** 2).sum(1)  # ||x~ - E x~||^2
    sigma_a = dm.process_constants()["sigma_a"]
    assert sigma_a == pytest.approx(sq.mean().item() / (0.25 * 2**2), rel=Z * sq.std().item() / math.sqrt(n))
    assert dm.process_constants()["sigma_xi"] == pytest.approx(2**-1.5)


def test_process_constants_keep_a_real_signal():
    # E[y] = 1/3; bit 0: Cov(y, phi~_0) = 2/3 - (1/3)(2/3) = 4/9; bit 1: 1/3 - (1/3)(1/3) = 2/9; gamma = 1/3.
    dm = HiddenRepresentation(d=6, D=4, k=2, codes=[[0, 0], [1, 1], [1, 0]], code_labels=[-1, 1, 1])
    assert dm.gamma == pytest.approx(1 / 3)
    # Orthonormal M: sigma~^2 = sum_j Var(phi~_j) = 2/9 + 2/9 on A, plus 2 x 1/4 outside A.
    sigma2 = 4 / 9 + 1 / 2
    assert dm.process_constants()["sigma_a"] == pytest.approx(sigma2 / (1 / 3 * 2**2), rel=1e-12)


# ---------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(k=6, D=5), r"data\.k must be <= data\.D"),
        (dict(d=10, D=20), r"data\.D must be <= data\.d .*incoherent"),
        (dict(k=True), r"data\.k must be an integer"),
        (dict(p_o=2.0), r"data\.p_o must be a probability in \[0, 1\]"),
        (dict(p_o=float("nan")), r"data\.p_o must be a probability"),
        (dict(negative_ratio=0.0), r"data\.negative_ratio must be null .* strictly between 0 and 1"),
        (dict(sigma_zeta=-1.0), r"data\.sigma_zeta must be a finite number >= 0"),
        (dict(structure_seed=-1), r"data\.structure_seed must be an integer >= 0"),
        (dict(k=3, codes_per_class=5), r"data\.codes_per_class must be <="),
        (dict(codes_per_class=0), r"data\.codes_per_class must be an integer >= 1"),
        (dict(codes_per_class=True), r"data\.codes_per_class must be an integer"),
        (dict(k=2, codes=[[0, 1], [0, 1]], code_labels=[1, -1]), r"data\.codes must be distinct"),
        (dict(k=2, codes=[[0, 1], [1, 2]], code_labels=[1, -1]), r"data\.codes must be a non-empty list of 0/1"),
        (dict(k=2, codes=[[0, 1], [True, 0]], code_labels=[1, -1]), r"data\.codes must be a non-empty list of 0/1"),
        (dict(k=2, codes=[[0, 1], [1, 0]], code_labels=[1]), r"data\.code_labels must give a label"),
        (dict(k=2, codes=[[0, 1], [1, 0]], code_labels=[1, 0]), r"data\.code_labels must give a label"),
        (dict(k=2, code_labels=[1, -1]), r"data\.code_labels needs data\.codes"),
        (dict(k=2, codes=[[0, 1]], code_labels=[1], codes_per_class=1), r"exclude each other"),
        (dict(k=2, codes=[[0, 1]], code_labels=[1]), r"gives every sample the label \+1"),
        (dict(k=5, relevant=[0, 1, 1, 2, 3]), r"data\.relevant must list k=5 distinct"),
        (dict(k=2, codes=[[0, 1], [1, 0]], code_labels=[1, -1], label_noise=0.6), r"data\.label_noise"),
    ],
)
def test_invalid_parameters_are_refused_with_the_parameter_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HiddenRepresentation(**{"d": 20, "D": 15, "k": 6, **kwargs})


@pytest.mark.parametrize("name", ["patterns", "labeling", "structure"])
def test_sparse_coding_only_parameters_are_not_accepted(name):
    with pytest.raises(TypeError):
        HiddenRepresentation(d=20, D=15, k=6, **{name: None})


def test_labels_of_noise_flip_the_codes_labels_and_leave_the_inputs_as_drawn():
    clean = HiddenRepresentation(d=30, D=20, k=6, codes_per_class=4)
    noisy = HiddenRepresentation(d=30, D=20, k=6, codes_per_class=4, label_noise=0.5)
    x, y, phi = clean.sample_with_hidden(4000, gen(0), CPU)
    xn, yn, phin = noisy.sample_with_hidden(4000, gen(0), CPU)
    assert torch.equal(x, xn) and torch.equal(phi, phin)  # the flips are drawn after the sample
    torch.testing.assert_close(y, paper_labels(clean, phi))
    assert 0.45 < float((y != yn).double().mean()) < 0.55  # about half flipped: labels independent of the code
    zero = HiddenRepresentation(d=30, D=20, k=6, codes_per_class=4, label_noise=0.0)
    assert torch.equal(zero.sample_with_hidden(50, gen(1), CPU)[1], clean.sample_with_hidden(50, gen(1), CPU)[1])
