"""Deterministic seeds for independent random streams.

Every random draw in featlearn (a training batch, the injected noise, an
initialisation) comes from a ``torch.Generator`` seeded by :func:`derive_seed` from
a few integers: the user's seed, the ensemble member, the kind of stream and the
update step. A batch is therefore a pure function of its step, which is what makes
a resumed run continue the same sample stream and lets member ``s`` of an ensemble
reproduce a single run with seed ``seed + s``.
"""

from __future__ import annotations

import torch

_MASK64 = (1 << 64) - 1

# Stream identifiers: distinct draws never share a seed.
TRAIN_BATCH = 1
TRAIN_SET = 2
VAL_SET = 3
TEST_SET = 4
NOISE = 5
INIT = 6
STRUCTURE = 7
PROBE_SET = 8
UNLABELLED_BATCH = 9
INJECTED_SET = 10
LABEL_NOISE = 11


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def derive_seed(*keys: int) -> int:
    """Hash integer keys into a 63-bit seed (splitmix64 chaining).

    Args:
        *keys: Integers, e.g. ``(seed, stream, step)``; order matters.

    Returns:
        A seed in [0, 2^63) for ``torch.Generator.manual_seed``.
    """
    h = 0x243F6A8885A308D3
    for k in keys:
        h = _splitmix64(h ^ (int(k) & _MASK64))
    return h >> 1


class GeneratorPool:
    """One reusable ``torch.Generator`` per device, re-seeded for each draw.

    Creating a generator costs far more than seeding one; draws on the hot path
    re-seed the pooled generator instead.
    """

    def __init__(self) -> None:
        self._generators: dict[torch.device, torch.Generator] = {}

    def get(self, device: torch.device | str, *keys: int) -> torch.Generator:
        """Return the pool's generator for ``device``, seeded from ``keys``."""
        device = torch.device(device)
        gen = self._generators.get(device)
        if gen is None:
            gen = torch.Generator(device=device)
            self._generators[device] = gen
        gen.manual_seed(derive_seed(*keys))
        return gen
