"""GaussianMixture against Shi, Wei & Liang (2022), Appendix E.3.2, eq. (290), Table 6."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from featlearn.datamodules.gaussian_mixture import GaussianMixture
from featlearn.models import TwoLayerNet

CPU = torch.device("cpu")
Z = 5.0  # z-score bound of the statistical checks
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TABLE_6 = [dict(d=100, k=4, sigma_r=1.0), dict(d=25, k=4, sigma_r=0.7), dict(d=100, k=5, sigma_r=1.0)]


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def cluster_index(eps: torch.Tensor) -> torch.Tensor:
    """Index j of the cluster with signs eps_i = 1 - 2 bit_i(j)."""
    bits = ((1 - eps) / 2).round().long()
    return (bits << torch.arange(eps.shape[1])).sum(1)


@FAST
@given(d=st.integers(1, 12), k=st.integers(1, 6), sigma_r=st.sampled_from([0.0, 0.5, 1.0]), seed=st.integers(0, 2**31))
def test_label_is_the_parity_of_the_cluster_signs(d, k, sigma_r, seed):
    if k > d:
        with pytest.raises(ValueError, match=r"data\.k must be <= data\.d"):
            GaussianMixture(d=d, k=k, sigma_r=sigma_r)
        return
    dm = GaussianMixture(d=d, k=k, sigma_r=sigma_r)
    x, y, eps = dm.sample_with_hidden(200, gen(seed), CPU)
    assert x.shape == (200, d) and y.shape == (200,) and eps.shape == (200, k)
    assert x.dtype == y.dtype == torch.float32
    assert set(eps.unique().tolist()) <= {-1.0, 1.0}
    # y = prod_i eps_i, recomputed one sample at a time.
    assert y.tolist() == [float(math.prod(row)) for row in eps.tolist()]
    gt = dm.ground_truth()
    j = cluster_index(eps)
    torch.testing.assert_close(y, gt.centre_labels[j])
    if sigma_r == 0:  # the samples are the cluster centres
        torch.testing.assert_close(x, gt.centres[j], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cfg", TABLE_6, ids=["exp1", "exp2", "exp3"])
def test_noise_variance_class_balance_and_moments(cfg):
    """g ~ N(0, sigma_r^2 k / d I_d), Pr[y = +1] = 1/2, E x = 0, E||x||^2 = k (1 + sigma_r^2)."""
    dm = GaussianMixture(**cfg)
    d, k, s = cfg["d"], cfg["k"], cfg["sigma_r"]
    n = 40_000
    x, y, eps = dm.sample_with_hidden(n, gen(1), CPU)
    x, eps = x.double(), eps.double()
    g = x - eps @ dm.M.T
    var = s**2 * k / d
    assert dm.noise_std == pytest.approx(math.sqrt(var))
    # Sample variance of n d i.i.d. N(0, var) entries: standard error var sqrt(2 / (n d)).
    assert abs(g.pow(2).mean().item() - var) < Z * var * math.sqrt(2 / (n * d))
    # g is isotropic: its covariance in the span of M is var I_k too.
    cov = (g @ dm.M).T @ (g @ dm.M) / n
    assert ((cov - var * torch.eye(k, dtype=torch.float64)).abs() < Z * var * math.sqrt(2 / n)).all()
    assert abs((y > 0).double().mean().item() - 0.5) < Z * 0.5 / math.sqrt(n)
    # Every cluster is equally likely: 2^k cells.
    freq = torch.bincount(cluster_index(eps), minlength=2**k).double() / n
    p = 2.0**-k
    assert ((freq - p).abs() < Z * math.sqrt(p * (1 - p) / n)).all()
    mean_sd = (x.var(0) / n).sqrt()
    assert ((x.mean(0).abs() / mean_sd) < Z).all()
    sq = (x**2).sum(1)
    assert abs(sq.mean().item() - k * (1 + s**2)) < Z * sq.std().item() / math.sqrt(n)


def test_ground_truth_centres_lie_on_hypercube_vertices():
    dm = GaussianMixture(d=25, k=4, sigma_r=0.7)
    gt = dm.ground_truth()
    centres, labels, m = gt.centres.double(), gt.centre_labels, dm.M
    assert centres.shape == (16, 25) and labels.shape == (16,) and gt.dictionary.shape == (25, 4)
    torch.testing.assert_close(m.T @ m, torch.eye(4, dtype=torch.float64))
    coords = centres @ m  # the signs of each centre
    torch.testing.assert_close(coords.abs(), torch.ones(16, 4, dtype=torch.float64), rtol=0, atol=1e-5)
    assert len({tuple(c) for c in coords.round().long().tolist()}) == 16
    torch.testing.assert_close(labels.double(), coords.round().prod(1))
    torch.testing.assert_close(centres[0], m.sum(1), rtol=0, atol=1e-5)  # cluster 0: all signs +1
    assert labels[0] == 1 and (labels == 1).sum() == 8
    torch.testing.assert_close(centres.norm(dim=1), torch.full((16,), 2.0, dtype=torch.float64))


def test_determinism_and_shared_structure():
    dm = GaussianMixture(d=25, k=4, sigma_r=0.7)
    a, b, c = (dm.sample_with_hidden(300, gen(s), CPU) for s in (3, 3, 4))
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])
    other_stream = GaussianMixture(d=25, k=4, sigma_r=0.7, seed=5)
    assert torch.equal(dm.M, other_stream.M)  # every ensemble member, one distribution
    assert not torch.equal(dm.M, GaussianMixture(d=25, k=4, sigma_r=0.7, structure_seed=1).M)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(d=3, k=4), r"data\.k must be <= data\.d"),
        (dict(d=30, k=21), r"data\.k must be <= 20"),
        (dict(d=0), r"data\.d must be an integer >= 1"),
        (dict(k=0), r"data\.k must be an integer >= 1"),
        (dict(sigma_r=-0.1), r"data\.sigma_r must be a finite number >= 0"),
        (dict(sigma_r=float("inf")), r"data\.sigma_r"),
        (dict(structure_seed=-2), r"data\.structure_seed must be an integer >= 0"),
    ],
)
def test_invalid_parameters_are_refused_with_the_parameter_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GaussianMixture(**kwargs)


def test_short_training_run(fit):
    dm = GaussianMixture(d=25, k=4, sigma_r=0.7, batch_size=32, val_size=64, test_size=64)
    model = TwoLayerNet(input_dim=dm.input_dim, network={"width": 8}, training=dict(lr=0.1))
    trainer = fit(model, dm, 3)
    assert trainer.global_step == 3
    assert all(torch.isfinite(p).all() for p in model.parameters())
