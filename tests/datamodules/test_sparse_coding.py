"""SparseCoding against the definitions of Shi, Wei & Liang (2022), Section 3, E.1, E.2, F.

The reference below is written from the paper's formulas, independently of the data
model's own (count-table) implementation: for D <= 8 it enumerates all 2^D hidden
vectors phi~ with their exact probabilities.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from featlearn.datamodules.sparse_coding import SparseCoding
from featlearn.models import TwoLayerNet

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


# ---------------------------------------------------------------------- paper reference
def paper_positive_counts(cfg: dict) -> set[int]:
    """P from Section 3 / Appendix E, for the labelings that use counts."""
    k, labeling = cfg["k"], cfg.get("labeling") or "parity"
    if labeling == "parity":
        return {s for s in range(k + 1) if s % 2 == 1}
    if labeling == "threshold":
        return {s for s in range(1, k + 1) if s > k / 2}
    if labeling == "interval":
        t1, t2 = cfg["interval"]
        return set(range(t1, t2 + 1))
    return set(cfg["label_set"])


def paper_labels(dm: SparseCoding, cfg: dict, phi: torch.Tensor) -> torch.Tensor:
    """y from phi~ by brute force: the count on A in P."""
    a = dm.A
    positive = paper_positive_counts(cfg)
    counts = phi[:, a].sum(1).round().long().tolist()
    return torch.tensor([1.0 if s in positive else -1.0 for s in counts])


def paper_law(dm: SparseCoding | None, cfg: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """All phi~ in {0,1}^D (2^D, D), their probabilities and labels, from the paper.

    Uses only the config (with the paper's defaults) and, from ``dm``, the drawn
    structure A; without ``dm`` (a refused config), A = {0..k-1}.
    """
    D, k = cfg["D"], cfg["k"]
    patterns = cfg.get("patterns", "mixture")
    phi = all_hidden_vectors(D)
    a = dm.A if dm is not None else torch.arange(k)
    outside = torch.tensor([j for j in range(D) if j not in set(a.tolist())], dtype=torch.long)
    phi_a, phi_out = phi[:, a], phi[:, outside]
    count = phi_a.sum(1)
    if not cfg.get("structure", True):  # (A1')
        p = torch.full((2**D,), 0.5**D, dtype=torch.float64)
    elif patterns == "mixture":  # E.1.1: p_o D^(0) + (1 - p_o) D^(1)
        p_o = cfg.get("p_o", 0.5)
        p0 = torch.full((2**D,), 0.5**D, dtype=torch.float64)
        same = ((count == 0) | (count == k)).to(torch.float64)
        p1 = same * 0.5 * bernoulli_prob(phi_out, p_o / (2 - 2 * p_o))
        p = p_o * p0 + (1 - p_o) * p1
    else:  # E.1.2
        p = bernoulli_prob(phi_a, cfg.get("p_in", 2 / 3)) * bernoulli_prob(phi_out, cfg.get("p_out", 0.5))
    positive = paper_positive_counts(cfg)
    labels = torch.tensor([1.0 if int(s) in positive else -1.0 for s in count.tolist()], dtype=torch.float64)
    return phi, condition_on_negative_ratio(p, labels, cfg.get("negative_ratio")), labels


# ---------------------------------------------------------------------- configurations


@st.composite
def configs(draw, max_D: int = 8) -> dict:
    cfg = dictionary_arguments(draw, max_D)
    k = cfg["k"]
    patterns = draw(st.sampled_from(["mixture", "bernoulli"]))
    cfg["patterns"] = patterns
    if patterns == "mixture":
        cfg["p_o"] = draw(st.sampled_from([p for p in PROBS if p <= 2 / 3]))
    else:
        cfg["p_in"], cfg["p_out"] = draw(st.sampled_from(PROBS)), draw(st.sampled_from(PROBS))
    cfg["structure"] = draw(st.booleans())
    labeling = draw(st.sampled_from(["parity", "threshold", "interval", "set"]))
    cfg["labeling"] = labeling
    if labeling == "interval":
        t1 = draw(st.integers(0, k))
        cfg["interval"] = (t1, draw(st.integers(t1, k)))
    elif labeling == "set":
        cfg["label_set"] = draw(st.lists(st.integers(0, k), max_size=k + 1, unique=True))
    return cfg


def build(cfg: dict) -> SparseCoding | None:
    """The data model, or None when the config gives a single class (checked by the caller)."""
    try:
        return SparseCoding(**cfg)
    except ValueError as err:
        if "gives every sample the label" in str(err):
            return None
        raise


# ---------------------------------------------------------------------- exact law
@FAST
@given(cfg=configs())
def test_exact_moments_and_label_probability_match_the_paper(cfg):
    dm = build(cfg)
    assume(dm is not None)
    phi, p, labels = paper_law(dm, cfg)
    assert_exact_moments(dm, cfg, phi, p, labels)


@FAST
@given(cfg=configs())
def test_single_class_configs_are_refused_exactly_when_one_label_has_probability_one(cfg):
    dm = build(cfg)
    _, p, labels = paper_law(dm, {**cfg, "negative_ratio": None})
    p_pos = p[labels > 0].sum().item()
    if dm is None:
        assert p_pos < 1e-12 or p_pos > 1 - 1e-12
    else:
        assert 0 < p_pos < 1


@FAST
@given(cfg=configs(max_D=12), seed=st.integers(0, 2**31))
def test_samples_follow_the_label_rule_and_normalisation_formula(cfg, seed):
    dm = build(cfg)
    assume(dm is not None)
    x, y, phi = dm.sample_with_hidden(300, gen(seed), CPU)
    assert x.shape == (300, dm.d) and y.shape == (300,) and phi.shape == (300, dm.D)
    assert x.dtype == y.dtype == phi.dtype == torch.float32
    assert set(phi.unique().tolist()) <= {0.0, 1.0}
    torch.testing.assert_close(y, paper_labels(dm, cfg, phi))  # the label rule, by brute force
    if dm.sigma_zeta == 0:  # x = (M phi~ - E x~) / sigma~ exactly
        expected = (phi.double() @ dm.M.T - dm.mean_tilde) / dm.sigma_tilde
        torch.testing.assert_close(x.double(), expected, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- the sampler
SAMPLER_CASES = {
    "mixture p_o=0.3": dict(d=8, D=6, k=3, p_o=0.3),  # D^(1) outside-A probability 3/14
    "mixture imbalanced": dict(d=8, D=6, k=3, negative_ratio=0.8),
    "bernoulli threshold": dict(d=6, D=6, k=4, patterns="bernoulli", p_in=0.7, p_out=0.2, labeling="threshold"),
    "interval incoherent": dict(
        d=4, D=6, k=5, patterns="bernoulli", labeling="interval", interval=(2, 3), dictionary="incoherent"
    ),
    "no structure": dict(d=8, D=6, k=3, p_o=0.3, structure=False),
}


@pytest.mark.parametrize("cfg", SAMPLER_CASES.values(), ids=SAMPLER_CASES.keys())
def test_sampler_frequencies_match_the_exact_law(cfg):
    """Every one of the 2^D hidden vectors appears with its paper probability."""
    dm = SparseCoding(**cfg)
    _, p, labels = paper_law(dm, cfg)
    n = 200_000
    _, y, phi = dm.sample_with_hidden(n, gen(1), CPU)
    freq = torch.bincount(encode(phi), minlength=2**dm.D).double() / n
    # Binomial z-scores per state (Bonferroni over 64 states at Z = 5: false alarm < 1e-4).
    sd = (p * (1 - p) / n).sqrt()
    assert (freq[p == 0] == 0).all()
    assert ((freq - p).abs() <= Z * sd + 1e-12).all(), ((freq - p) / sd.clamp_min(1e-30)).abs().max()
    torch.testing.assert_close(y.double(), labels[encode(phi)])


@pytest.mark.parametrize(
    "cfg",
    [
        # E.1.1 mixture, parity; p_o != 1/2, else ||phi~ - E phi~||^2 = D/4 is constant.
        dict(d=24, D=20, k=5, p_o=0.3),
        dict(
            d=12,
            D=20,
            k=6,
            patterns="bernoulli",
            labeling="interval",
            interval=(3, 5),
            dictionary="incoherent",
            sigma_zeta=0.2,
            negative_ratio=0.9,
        ),
    ],
    ids=["mixture", "incoherent-noisy-imbalanced"],
)
def test_normalised_data_has_zero_mean_and_unit_total_variance(cfg):
    """E x = 0 and E||x||^2 = 1 (sigma~^2 = E||x~ - E x~||^2), within Z standard errors."""
    dm = SparseCoding(**cfg)
    n = 200_000
    x, _ = dm.sample(n, gen(2), CPU)
    x = x.double()
    mean, var = x.mean(0), x.var(0)
    assert ((mean.abs() / (var / n).sqrt()) < Z).all()  # per coordinate, d <= 24 checks
    sq = (x**2).sum(1)
    assert sq.std() > 0.1  # a real check, not a constant norm
    # Z standard errors, plus float32 rounding of the samples.
    assert abs(sq.mean().item() - 1.0) < Z * sq.std().item() / math.sqrt(n) + 1e-6


# ---------------------------------------------------------------------- paper assumptions
@pytest.mark.parametrize(
    "cfg",
    [
        dict(d=20, D=15, k=5),  # E.1.1: parity, p_o = 1/2, k odd
        dict(d=20, D=15, k=5, p_o=0.2),  # any p_o: D^(0) and D^(1) are balanced for odd k
        dict(d=20, D=15, k=5, patterns="bernoulli", p_in=0.5, labeling="threshold"),  # symmetry
        dict(d=20, D=15, k=4, structure=False),  # (A1'): parity of uniform bits
    ],
)
def test_classes_are_balanced_where_the_paper_assumes_it(cfg):
    """(A0): Pr[y = +1] = 1/2 exactly, and empirically within Z standard errors."""
    dm = SparseCoding(**cfg)
    assert dm.positive_probability == pytest.approx(0.5, abs=1e-12)
    n = 100_000
    _, y = dm.sample(n, gen(3), CPU)
    assert abs((y > 0).double().mean().item() - 0.5) < Z * 0.5 / math.sqrt(n)


@pytest.mark.parametrize("ratio", [0.8, 0.9])
def test_negative_ratio_sets_the_fraction_of_negatives(ratio):
    dm = SparseCoding(d=20, D=15, k=5, negative_ratio=ratio)
    n = 100_000
    _, y = dm.sample(n, gen(4), CPU)
    assert abs((y < 0).double().mean().item() - ratio) < Z * math.sqrt(ratio * (1 - ratio) / n)


def test_mixture_satisfies_assumption_a1_and_a2_marginals():
    """E.1.1's D_mix: equal gamma > 0 on A (A1), Pr[phi~_j = 1] = p_o outside A (A2)."""
    cfg = dict(d=8, D=7, k=3, p_o=0.3)
    dm = SparseCoding(**cfg)
    phi, p, y = paper_law(dm, cfg)
    a = dm.A
    e_y = p @ y
    gamma = (p * y) @ phi[:, a] - e_y * (p @ phi[:, a])
    assert torch.allclose(gamma, gamma[0].expand_as(gamma)) and gamma[0] > 0.1
    outside = [j for j in range(dm.D) if j not in set(a.tolist())]
    torch.testing.assert_close(p @ phi[:, outside], torch.full((len(outside),), 0.3, dtype=torch.float64))
    # Without structure the same labeling has no correlation with any pattern.
    dm_u = SparseCoding(**cfg, structure=False)
    phi, p, y = paper_law(dm_u, {**cfg, "structure": False})
    gamma_u = (p * y) @ phi[:, a] - (p @ y) * (p @ phi[:, a])
    torch.testing.assert_close(gamma_u, torch.zeros_like(gamma_u), rtol=0, atol=1e-12)


def test_without_structure_keeps_the_labeling_and_makes_patterns_uniform():
    cfg = dict(d=10, D=8, k=3, p_o=0.2, labeling="threshold")
    dm, dm_u = SparseCoding(**cfg), SparseCoding(**cfg, structure=False)
    assert torch.equal(dm.A, dm_u.A) and torch.equal(dm.M, dm_u.M)
    assert dm.positive_counts == dm_u.positive_counts == (2, 3)
    n = 200_000
    _, y, phi = dm_u.sample_with_hidden(n, gen(5), CPU)
    torch.testing.assert_close(y, paper_labels(dm_u, cfg, phi))
    freq = torch.bincount(encode(phi), minlength=2**8).double() / n
    p = 0.5**8
    assert ((freq - p).abs() < Z * math.sqrt(p * (1 - p) / n)).all()
    assert dm_u.sigma_tilde == pytest.approx(math.sqrt(8 / 4))  # sum of Var = D / 4


# ---------------------------------------------------------------------- structure, determinism
def test_same_generator_seed_gives_the_same_samples():
    dm = SparseCoding(d=30, D=20, k=5, sigma_zeta=0.1)
    a = dm.sample_with_hidden(500, gen(7), CPU)
    b = dm.sample_with_hidden(500, gen(7), CPU)
    c = dm.sample_with_hidden(500, gen(8), CPU)
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])
    # The base class's seeded streams too.
    torch.testing.assert_close(dm.draw(64, 0, 1, 5, CPU), dm.draw(64, 0, 1, 5, CPU), rtol=0, atol=0)


def test_structure_seed_fixes_the_distribution_for_every_sample_seed():
    a, b = SparseCoding(d=30, D=20, k=5, seed=1), SparseCoding(d=30, D=20, k=5, seed=2)
    assert torch.equal(a.M, b.M) and torch.equal(a.A, b.A)
    c = SparseCoding(d=30, D=20, k=5, structure_seed=1)
    assert not torch.equal(a.M, c.M) and not torch.equal(a.A, c.A)
    # Giving A explicitly does not change M.
    d = SparseCoding(d=30, D=20, k=3, relevant=[4, 0, 7])
    assert torch.equal(d.M, a.M) and d.A.tolist() == [4, 0, 7]


def test_ground_truth_and_dictionaries():
    dm = SparseCoding(d=30, D=20, k=5)
    gt = dm.ground_truth()
    assert gt.feature.shape == (30,) and gt.dictionary.shape == (30, 20)
    assert gt.relevant.dtype == torch.long and gt.relevant.shape == (5,)
    m = dm.M
    torch.testing.assert_close(m.T @ m, torch.eye(20, dtype=torch.float64))
    torch.testing.assert_close(gt.feature, m[:, gt.relevant].sum(1).float())
    assert len(set(gt.relevant.tolist())) == 5 and gt.relevant.max() < 20
    wide = SparseCoding(d=10, D=40, k=5, dictionary="incoherent")
    torch.testing.assert_close(wide.M.norm(dim=0), torch.ones(40, dtype=torch.float64))
    assert wide.ground_truth().dictionary.shape == (10, 40)


# ---------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(k=6, D=5), r"data\.k must be <= data\.D"),
        (dict(d=10, D=20), r"data\.D must be <= data\.d .*incoherent"),
        (dict(d=0), r"data\.d must be an integer >= 1"),
        (dict(k=True), r"data\.k must be an integer"),
        (dict(p_o=0.7), r"data\.p_o must be a probability in \[0, 0\.6667\]"),
        (dict(p_o=-0.1), r"data\.p_o must be a probability"),
        (dict(patterns="bernoulli", p_in=1.5), r"data\.p_in must be a probability in \[0, 1\]"),
        (dict(patterns="bernoulli", p_out=-0.2), r"data\.p_out must be a probability"),
        (dict(negative_ratio=1.0), r"data\.negative_ratio must be null .* strictly between 0 and 1"),
        (dict(negative_ratio=-0.5), r"data\.negative_ratio"),
        (dict(labeling="interval", interval=(3, 2)), r"data\.interval must have t1 <= t2"),
        (dict(labeling="interval", interval=(1, 9)), r"data\.interval must lie in \[0, k\]"),
        (dict(labeling="interval"), r"data\.labeling: interval needs data\.interval"),
        (dict(labeling="set", label_set=[7]), r"data\.label_set must list counts in \[0, k\]"),
        (dict(labeling="majority"), r"data\.labeling must be one of"),
        (dict(patterns="gaussian"), r"data\.patterns must be one of"),
        (dict(dictionary="random"), r"data\.dictionary must be one of"),
        (dict(sigma_zeta=-1.0), r"data\.sigma_zeta must be a finite number >= 0"),
        (dict(sigma_zeta=float("nan")), r"data\.sigma_zeta"),
        (dict(structure_seed=-1), r"data\.structure_seed must be an integer >= 0"),
        (dict(structure="no"), r"data\.structure must be true or false"),
        (dict(p_in=0.5), r"data\.p_in is only used with data\.patterns in \['bernoulli'\]"),
        (dict(patterns="bernoulli", p_o=0.5), r"data\.p_o is only used with data\.patterns in \['mixture'\]"),
        (dict(interval=(1, 2)), r"data\.interval is only used with data\.labeling: interval"),
        # E.3.1's code table is its own data model now: the message says where it went.
        (dict(labeling="codes"), r"class_path: HiddenRepresentation"),
        (dict(patterns="hidden_representation"), r"class_path: HiddenRepresentation"),
        (dict(relevant=[0, 1, 1, 2, 3]), r"data\.relevant must list k=5 distinct"),
        (dict(relevant=[0, 1]), r"data\.relevant must list k=5"),
        (dict(patterns="bernoulli", p_in=0.0, labeling="threshold"), r"gives every sample the label -1"),
        (dict(k=4, labeling="set", label_set=[]), r"gives every sample the label -1"),
    ],
)
def test_invalid_parameters_are_refused_with_the_parameter_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SparseCoding(**kwargs)


# ---------------------------------------------------------------------- end to end
def test_short_training_run(fit):
    dm = SparseCoding(d=20, D=10, k=3, batch_size=32, val_size=64, test_size=64)
    model = TwoLayerNet(input_dim=dm.input_dim, network={"width": 8}, training=dict(lr=0.1))
    trainer = fit(model, dm, 3)
    assert trainer.global_step == 3
    assert all(torch.isfinite(p).all() for p in model.parameters())


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(d=40, D=20, k=5),  # E.1.1 parity mixture
        dict(d=40, D=20, k=6, patterns="bernoulli", labeling="interval", interval=(2, 4), p_in=2 / 3, p_out=0.5),
        dict(d=40, D=20, k=5, negative_ratio=0.8),
    ],
)
def test_gamma_matches_a_monte_carlo_estimate(kwargs):
    dm = SparseCoding(**kwargs)
    _, y, phi = dm.sample_with_hidden(200_000, torch.Generator().manual_seed(0), torch.device("cpu"))
    phi_a = phi[:, dm.A].double()  # (n, k)
    y = y.double()
    estimate = ((y[:, None] * phi_a).mean(0) - y.mean() * phi_a.mean(0)).mean()
    # Each term is a mean of bounded variables: 5 standard errors of 1/sqrt(n) cover it.
    assert abs(dm.gamma - float(estimate)) < 5 / 200_000**0.5


def test_gamma_of_the_parity_mixture_by_hand():
    # D(1) (weight 1 - p_o): phi_A all ones (odd count, y = +1) or all zeros (y = -1);
    # D(0): y is independent of any single phi_i. gamma = (1 - p_o) * (1/2 - 0) = 1/4.
    assert SparseCoding(d=40, D=20, k=5).gamma == pytest.approx(0.25)


# ---------------------------------------------------------------------- process constants
def paper_process(sigma2: float, gamma: float, k: int) -> dict[str, float]:
    """Section 3.1 / Lemma 23: sigma_w = 1/k, sigma_b = 1/k^2, sigma_xi = k^(-3/2), sigma_a = sigma~^2/(gamma k^2)."""
    return {"sigma_w": 1 / k, "sigma_b": 1 / k**2, "sigma_xi": 1 / k**1.5, "sigma_a": sigma2 / (gamma * k**2)}


def process_only(constants: dict[str, float]) -> dict[str, float]:
    """The network's process constants, without the data's own class prior ``positive_rate``."""
    return {name: value for name, value in constants.items() if name != "positive_rate"}


def monte_carlo_sigma2_and_gamma(dm: SparseCoding, n: int = 200_000) -> tuple[float, float, float]:
    """E||x~ - E x~||^2 (+ d sigma_zeta^2 for the noise), gamma, and the standard error of the former."""
    _, y, phi = dm.sample_with_hidden(n, gen(11), CPU)
    phi, y = phi.double(), y.double()
    x = phi @ dm.M.T  # x~ without the noise
    sq = ((x - x.mean(0)) ** 2).sum(1)
    sigma2 = sq.mean().item() + dm.d * dm.sigma_zeta**2
    phi_a = phi[:, dm.A]
    gamma = ((y[:, None] * phi_a).mean(0) - y.mean() * phi_a.mean(0)).mean().item()
    return sigma2, gamma, sq.std().item() / math.sqrt(n)


def test_process_constants_of_e11_by_hand():
    """E.1.1: sigma~^2 = sum_j Var(phi~_j) = D/4 = 25 and gamma = (1 - p_o)/2 = 1/4, so sigma_a = 4."""
    dm = SparseCoding(d=500, D=100, k=5)
    assert dm.sigma_tilde == pytest.approx(5.0, rel=1e-12) and dm.gamma == pytest.approx(0.25, rel=1e-12)
    constants = dm.process_constants()
    assert list(constants) == ["sigma_w", "sigma_b", "sigma_xi", "sigma_a", "positive_rate"]
    assert all(type(v) is float for v in constants.values())
    assert process_only(constants) == pytest.approx(paper_process(25.0, 0.25, 5), rel=1e-12)
    assert constants["positive_rate"] == dm.positive_probability  # Pr[y = +1], for eq. 295's class weights
    assert constants["sigma_a"] == pytest.approx(4.0, rel=1e-12)


@pytest.mark.parametrize(
    "cfg",
    [
        dict(d=40, D=20, k=5, p_o=0.3),  # mixture, gamma = 0.35
        dict(d=60, D=40, k=30, patterns="bernoulli", labeling="interval", interval=(20, 30)),  # E.1.2 shape
        dict(
            d=15, D=30, k=5, p_o=0.4, labeling="threshold", dictionary="incoherent", sigma_zeta=0.2, negative_ratio=0.7
        ),
    ],
    ids=["mixture", "interval", "incoherent-noisy-imbalanced"],
)
def test_process_constants_match_a_monte_carlo_estimate(cfg):
    dm = SparseCoding(**cfg)
    k = dm.k
    sigma2, gamma, se = monte_carlo_sigma2_and_gamma(dm)
    assert gamma > 0.01  # the paper's rule applies (no fallback)
    expected = paper_process(sigma2, gamma, k)
    constants = dm.process_constants()
    for name in ("sigma_w", "sigma_b", "sigma_xi"):
        assert constants[name] == pytest.approx(expected[name], rel=1e-12)
    # Loose: Z standard errors of sigma~^2, plus 5/sqrt(n) on gamma (as in the gamma test).
    tolerance = Z * se / sigma2 + 5 / math.sqrt(200_000) / gamma
    assert constants["sigma_a"] == pytest.approx(expected["sigma_a"], rel=tolerance)


@pytest.mark.parametrize(
    "cfg",
    [
        dict(d=500, D=100, k=5),
        dict(d=60, D=40, k=30, patterns="bernoulli", p_in=2 / 3, p_out=0.5, labeling="interval", interval=(20, 30)),
        dict(d=40, D=20, k=5, negative_ratio=0.8),
    ],
)
def test_process_constants_without_structure_are_those_of_the_structured_twin(cfg):
    dm, free = SparseCoding(**cfg), SparseCoding(**cfg, structure=False)
    # bit for bit; the class prior is the data's own (the labels' law is the same here)
    assert process_only(free.process_constants()) == process_only(dm.process_constants())
    assert free.process_constants()["positive_rate"] == free.positive_probability
    # ... and not the structure-free data's own: uniform phi~ has sigma~^2 = D/4 (and gamma ~ 0 for parity).
    assert free.sigma_tilde == pytest.approx(math.sqrt(cfg["D"] / 4))
    assert (free.sigma_tilde, free.gamma) != (dm.sigma_tilde, dm.gamma)


def test_process_constants_use_e11_gamma_without_per_pattern_signal():
    # Few ones labelled +1 (P = {0, 1}): gamma < 0, so sigma_a falls back to gamma = 1/4.
    dm = SparseCoding(d=20, D=16, k=4, patterns="bernoulli", p_in=0.5, p_out=0.5, labeling="interval", interval=(0, 1))
    assert dm.gamma < 0
    assert process_only(dm.process_constants()) == pytest.approx(paper_process(16 / 4, 0.25, 4), rel=1e-12)


def test_process_constants_need_a_valid_structured_twin():
    # Uniform phi~ has both classes, but p_in = 0 under structure labels everything -1.
    free = SparseCoding(d=10, D=8, k=3, patterns="bernoulli", p_in=0.0, labeling="threshold", structure=False)
    with pytest.raises(ValueError, match=r"structured distribution .* gives every sample the label -1"):
        free.process_constants()
