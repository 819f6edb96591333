"""Random signs from random bits: the right law, reproducible, any shape."""

import pytest
import torch

from featlearn.sampling import rademacher


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
