"""Random signs from random bits: the right law, reproducible, any shape."""

import math

import pytest
import torch

from featlearn import sampling
from featlearn.sampling import distinct_indices, rademacher


@pytest.mark.parametrize("shape", [(1,), (3, 7), (64,), (5, 13, 3), (4096, 9)])
def test_signs_have_the_shape_dtype_and_values_asked_for(shape):
    x = rademacher(shape, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64)
    assert x.shape == shape and x.dtype == torch.float64 and x.is_contiguous()
    assert set(x.unique().tolist()) <= {-1.0, 1.0}


def test_signs_are_reproducible_from_the_seed():
    def draw(seed):
        return rademacher((100, 33), torch.Generator().manual_seed(seed), torch.device("cpu"), torch.float32)

    assert torch.equal(draw(4), draw(4)) and not torch.equal(draw(4), draw(5))


def test_signs_are_fair_and_uncorrelated_within_and_across_bytes():
    """Mean 0, and no correlation between any two of the 64 signs one random integer gives."""
    n = 20000
    x = rademacher((n, 64), torch.Generator().manual_seed(1), torch.device("cpu"), torch.float64)  # row = one word
    se = 1 / n**0.5
    assert x.mean(0).abs().max() < 5 * se
    corr = (x.T @ x) / n  # (64, 64): bit i against bit j of the same word
    off = corr - torch.eye(64, dtype=torch.float64)
    assert off.abs().max() < 5.5 * se  # 2016 pairs: the largest of them stays within ~5.5 standard errors
    assert ((x[:-1] * x[1:]).mean(0)).abs().max() < 5 * se  # across consecutive words


def _subset_counts(n, size, draws, seed=0):
    """How often each unordered subset and each (position, index) pair came out of ``draws`` draws."""
    gen = torch.Generator().manual_seed(seed)
    subsets, positions = {}, torch.zeros(size, n)
    for _ in range(draws):
        idx = distinct_indices(n, size, gen, torch.device("cpu"))
        assert idx.dtype == torch.int64 and idx.shape == (size,) and len(set(idx.tolist())) == size
        assert 0 <= int(idx.min()) and int(idx.max()) < n
        key = tuple(sorted(idx.tolist()))
        subsets[key] = subsets.get(key, 0) + 1
        positions[torch.arange(size), idx] += 1
    return subsets, positions


def _chi2_ok(counts, cells, draws):
    """Pearson's chi-square of uniform counts below mean + 5 sd (df = cells - 1)."""
    expected = draws / cells
    chi2 = sum((c - expected) ** 2 / expected for c in counts) + (cells - len(counts)) * expected
    df = cells - 1
    return chi2 < df + 5 * (2 * df) ** 0.5


@pytest.mark.parametrize("n, size", [(8, 2), (12, 3), (9, 3)])  # (9, 3) takes the randperm branch
def test_distinct_indices_are_a_uniform_subset_in_uniform_order(n, size):
    draws = 6000
    subsets, positions = _subset_counts(n, size, draws)
    assert _chi2_ok(list(subsets.values()), math.comb(n, size), draws)
    for row in positions:  # every position holds every index equally often
        assert _chi2_ok(row.tolist(), n, draws)


def test_distinct_indices_draw_again_when_the_first_sequence_repeats_too_much(monkeypatch):
    monkeypatch.setattr(sampling, "_REPEAT_MARGIN", 0)  # the first sequence is often short of distinct values
    sequences, randint = [], torch.randint
    monkeypatch.setattr(torch, "randint", lambda *a, **k: sequences.append(1) or randint(*a, **k))
    draws = 6000
    subsets, positions = _subset_counts(40, 10, draws, seed=3)
    assert sum(subsets.values()) == draws and len(sequences) > draws * 1.05  # the second draw did happen
    for row in positions:
        assert _chi2_ok(row.tolist(), 40, draws)


def test_distinct_indices_are_reproducible_and_checked():
    def draw(seed):
        return distinct_indices(50000, 1000, torch.Generator().manual_seed(seed), torch.device("cpu"))

    assert torch.equal(draw(1), draw(1)) and not torch.equal(draw(1), draw(2))
    for size in (0, 11):
        with pytest.raises(ValueError, match="size must lie in 1..n"):
            distinct_indices(10, size, torch.Generator(), torch.device("cpu"))
