"""Brute-force pieces of the sparse-coding laws, shared by the tests of both dictionary data models.

Everything here enumerates {0, 1}^D directly from the paper's definitions, so the data
models' exact laws, moments and samplers can be checked against it on small D.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

CPU = torch.device("cpu")
Z = 5.0  # z-score bound of the statistical checks (two-sided tail ~ 6e-7 per check)
FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROBS = [0.0, 0.1, 0.25, 0.5, 0.6, 2 / 3, 0.9, 1.0]


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def bernoulli_prob(bits: torch.Tensor, p: float) -> torch.Tensor:
    """prod_j p^b_j (1 - p)^(1 - b_j) over the last axis (0^0 = 1)."""
    p = torch.tensor(p, dtype=torch.float64)
    return (p**bits * (1 - p) ** (1 - bits)).prod(-1)


def all_hidden_vectors(D: int) -> torch.Tensor:
    """Every phi~ in {0, 1}^D, (2^D, D), row i the bits of i."""
    return ((torch.arange(2**D)[:, None] >> torch.arange(D)) & 1).to(torch.float64)


def encode(phi: torch.Tensor) -> torch.Tensor:
    """Index of each binary row in all_hidden_vectors order."""
    return (phi.round().long() << torch.arange(phi.shape[1])).sum(1)


def condition_on_negative_ratio(p: torch.Tensor, labels: torch.Tensor, r: float | None) -> torch.Tensor:
    """E.2.2: the law r D(. | y = -1) + (1 - r) D(. | y = +1); ``p`` unchanged when r is None."""
    if r is None:
        return p
    p_neg = p[labels < 0].sum()
    return torch.where(labels < 0, p * r / p_neg, p * (1 - r) / (1 - p_neg))


def assert_exact_moments(dm, cfg: dict, phi: torch.Tensor, p: torch.Tensor, labels: torch.Tensor) -> None:
    """A data model's exact E phi~, E x~, sigma~ and Pr[y = +1] against the brute-force law ``p`` over ``phi``."""
    assert p.sum().item() == pytest.approx(1.0, abs=1e-12)
    m = dm.M
    mean_phi = p @ phi
    mean_x = m @ mean_phi
    centred = (phi - mean_phi) @ m.T  # (2^D, d)
    sigma2 = (p * (centred**2).sum(1)).sum() + dm.d * dm.sigma_zeta**2  # E||x~ - E x~||^2
    torch.testing.assert_close(dm.hidden_mean, mean_phi, rtol=0, atol=1e-12)
    torch.testing.assert_close(dm.mean_tilde, mean_x, rtol=0, atol=1e-12)
    assert dm.sigma_tilde == pytest.approx(math.sqrt(sigma2), rel=1e-10)
    assert dm.positive_probability == pytest.approx(p[labels > 0].sum().item(), abs=1e-12)
    if cfg["negative_ratio"] is not None:
        assert dm.positive_probability == pytest.approx(1 - cfg["negative_ratio"], abs=1e-12)


def dictionary_arguments(draw, max_D: int = 8) -> dict:
    """The arguments every dictionary data model shares, drawn for a hypothesis ``configs`` strategy.

    Returns d, D, k, dictionary, structure_seed, sigma_zeta, negative_ratio and, half of
    the time, an explicit relevant set.
    """
    D = draw(st.integers(1, max_D))
    k = draw(st.integers(1, D))
    dictionary = draw(st.sampled_from(["orthonormal", "incoherent"]))
    # d >= 2 keeps random unit columns from coinciding exactly (d = 1: M_j = +-1).
    d = draw(st.integers(D, D + 3)) if dictionary == "orthonormal" else draw(st.integers(2, D + 2))
    args = dict(
        d=d,
        D=D,
        k=k,
        dictionary=dictionary,
        structure_seed=draw(st.integers(0, 3)),
        sigma_zeta=draw(st.sampled_from([0.0, 0.3])),
        negative_ratio=draw(st.sampled_from([None, None, 0.2, 0.8])),
    )
    if draw(st.booleans()):
        args["relevant"] = draw(st.permutations(list(range(D))))[:k]
    return args
