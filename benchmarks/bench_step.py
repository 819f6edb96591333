"""A featlearn training step against the two matrix products it cannot avoid, in one run.

At the XOR experiment size (d = 512, p = 512, m = 4096, ``configs/experiments/glasgow_xor.yaml``)
an SGD step needs two matrix products: the forward pre-activations x W^T, (m, d) x (d, p),
and the first layer's gradient G^T x, (p, m) x (m, d). Everything else (drawing the batch,
the activation, the loss, the second layer, Lightning's per-step work, logging) is
overhead on top of them. This script times featlearn's whole step (``timed_fit``: the
experiments' trainer, TensorBoard every 10 steps) and the two products alone
(``torch.mm`` on tensors of the same shapes), back to back, and reports their ratio:
step time / matmul time (1 would be a step that costs only its products).

Usage: ``python benchmarks/bench_step.py [--steps N] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings

import torch
from bench_throughput import timed_fit

import featlearn.datamodules.xor as xor_module
from featlearn.datamodules import BooleanXOR
from featlearn.models import TwoLayerNet

warnings.filterwarnings("ignore")
D, P, M = 512, 512, 4096


def one_draw_per_sign(shape, generator, device, dtype):
    """The sampler before ``featlearn.sampling.rademacher``: one random number per sign."""
    return torch.randint(0, 2, shape, generator=generator, device=device, dtype=dtype).mul_(2.0).sub_(1.0)


def step_seconds(steps: int, updates_per_batch: int, warmup: int = 5, sampler=None) -> float:
    """Seconds per featlearn update at the experiment size (``sampler`` replaces the sign sampler)."""
    if sampler is not None:
        original, xor_module.rademacher = xor_module.rademacher, sampler
        try:
            return step_seconds(steps, updates_per_batch, warmup)
        finally:
            xor_module.rademacher = original
    theta = 1 / math.log(D)
    model = TwoLayerNet(
        D, network={"width": P}, init={"scheme": "sphere", "scale": theta}, training=dict(lr=theta), seed=0
    )
    data = BooleanXOR(dim=D, batch_size=M, test_size=0, val_size=0, updates_per_batch=updates_per_batch)
    return 1.0 / timed_fit(model, data, steps, warmup)


def matmul_seconds(repeats: int) -> float:
    """Seconds for the step's two products, x W^T and G^T x (median over ``repeats``)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(M, D, generator=gen)
    w = torch.randn(P, D, generator=gen)
    g = torch.randn(M, P, generator=gen)
    z, grad_w = torch.empty(M, P), torch.empty(P, D)
    times = []
    for _ in range(repeats + 2):
        start = time.perf_counter()
        torch.mm(x, w.T, out=z)
        torch.mm(g.T, x, out=grad_w)
        times.append(time.perf_counter() - start)
    return statistics.median(times[2:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU; d={D} p={P} m={M}")
    print(f"{'case':<44}{'step ms':>9}{'matmul ms':>11}{'ratio':>8}  target")
    for label, k, sampler in (
        ("XOR step, K=1, one draw per sign (before)", 1, one_draw_per_sign),
        ("XOR step, K=1", 1, None),
        ("XOR step, K=10", 10, None),
    ):
        pairs = [
            (step_seconds(args.steps, k, sampler=sampler), matmul_seconds(args.steps)) for _ in range(args.repeats)
        ]
        step = statistics.median(s for s, _ in pairs)
        products = statistics.median(m for _, m in pairs)
        ratio = statistics.median(s / m for s, m in pairs)
        print(f"{label:<44}{1e3 * step:>9.2f}{1e3 * products:>11.2f}{ratio:>8.2f}  <= 1.6")


if __name__ == "__main__":
    main()
