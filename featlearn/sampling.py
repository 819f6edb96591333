"""Cheap random signs: Rademacher variables from random bits.

Drawing an m x d batch of signs with ``torch.randint(0, 2, ...)`` costs one random
number per entry, more than a matrix product of the same batch on a CPU. Here each
64-bit random integer gives 64 signs: the integers' bytes index a (256, 8) table of
+-1 rows, one gather for the whole batch. The signs are i.i.d. uniform on {-1, +1}
(the integers are uniform over the 64-bit range up to one excluded value, a bias of
2^-64) and, like every draw in featlearn, a pure function of the generator's seed.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

#: (256, 8): row b holds the signs 2 bit_i(b) - 1 of the byte b, bit 0 first; per (device, dtype).
_SIGN_TABLES: dict[tuple[torch.device, torch.dtype], Tensor] = {}


def _sign_table(device: torch.device, dtype: torch.dtype) -> Tensor:
    key = (torch.device(device), dtype)
    table = _SIGN_TABLES.get(key)
    if table is None:
        bits = (torch.arange(256)[:, None] >> torch.arange(8)) & 1  # (256, 8)
        table = _SIGN_TABLES[key] = (2 * bits - 1).to(device=device, dtype=dtype)
    return table


def rademacher(shape: tuple[int, ...], generator: torch.Generator, device: torch.device, dtype: torch.dtype) -> Tensor:
    """I.i.d. uniform signs in {-1, +1} of the given shape, 64 per random integer.

    Args:
        shape: The output shape.
        generator: The only source of randomness (on ``device``).
        device: Where to create the tensor.
        dtype: A floating dtype of the output.

    Returns:
        A contiguous tensor of ``shape`` with entries -1 or +1.
    """
    n = math.prod(shape)
    words = torch.randint(
        -(2**63), 2**63 - 1, (max((n + 63) // 64, 1),), generator=generator, device=device, dtype=torch.int64
    )
    index = words.view(torch.uint8).to(torch.int32)  # (8 words,): one byte per 8 signs
    signs = torch.index_select(_sign_table(device, dtype), 0, index)  # (bytes, 8)
    return signs.view(-1)[:n].view(shape)


#: Extra draws beyond the expected size + size^2 / n, so that a second draw is rare.
_REPEAT_MARGIN = 16


def distinct_indices(n: int, size: int, generator: torch.Generator, device: torch.device) -> Tensor:
    """A uniformly random subset of ``size`` distinct indices of ``range(n)``, in random order.

    ``torch.randperm(n)[:size]`` costs O(n) per draw: at Shi et al.'s n = 50000 and
    batches of 1000 that is most of the cost of a minibatch. Here, for ``size`` at most
    n / 4, the subset is the first ``size`` distinct values of an i.i.d. uniform
    sequence on ``range(n)`` (O(size log size)): by exchangeability that set is uniform
    over the size-subsets and its order uniform too. About ``size^2 / (2n)`` draws are
    repeats; the sequence is drawn with that margin, and drawn again twice as long in
    the rare case it holds too few distinct values. Larger subsets use ``randperm``.

    Args:
        n: The population size.
        size: How many distinct indices (``1 <= size <= n``).
        generator: The only source of randomness (on ``device``).
        device: Where to create the tensor.

    Returns:
        Indices of shape (size,), dtype int64.
    """
    if not 1 <= size <= n:
        raise ValueError(f"distinct_indices: size must lie in 1..n = {n}, got {size}.")
    if 4 * size > n:
        return torch.randperm(n, generator=generator, device=device)[:size]
    length = size + size * size // n + _REPEAT_MARGIN
    while True:
        draws = torch.randint(n, (length,), generator=generator, device=device)  # (length,)
        values, order = torch.sort(draws, stable=True)
        first = torch.ones(length, dtype=torch.bool, device=device)
        first[1:] = values[1:] != values[:-1]  # first occurrence of each value, by position
        positions = order[first].sort().values  # where the distinct values first appear, in draw order
        if positions.numel() >= size:
            return draws[positions[:size]]
        length *= 2
