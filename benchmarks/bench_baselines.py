"""Cost of the baselines against the network they are built from, side by side.

1. NTK (``LinearizedTwoLayerNet``, linear form) against the network (``TwoLayerNet``):
   training steps per second at E.1.1's classifier-stage size (d=500, p=600, batch 1000,
   Shi et al.'s architecture, all layers trained at a constant rate). The linear form
   needs no kernel matrix: two batched matmuls forward instead of one.
2. The NTK's kernel form against its linear form on a small training set (n=2000,
   d=100, p=200, batch 200): the price of training through n x n kernel matrices
   (setup excluded: building the Gram matrices happens once, before the first step).
3. The NTK on a finite training set with its tangent features cached (computed once for
   the set, looked up per batch) against the same run computing them every step
   (``preactivation_cache_mb: 0``): d=500, p=600, n=10000, batch 1000, 120 steps (12 passes
   over the set, as compare's NTK makes over E.1.1's 50000 rows), the cache's build included.

Usage: ``python benchmarks/bench_baselines.py [--steps N] [--repeats R]``. The two
sides of each comparison run back to back ``repeats`` times; the ratio is the median
of the per-pair ratios (see ``bench_throughput.py``).
"""

from __future__ import annotations

import argparse
import warnings

import torch
from bench_throughput import paired, timed_fit

from featlearn.datamodules import SparseCoding
from featlearn.models import LinearizedTwoLayerNet, TwoLayerNet

warnings.filterwarnings("ignore")
#: Shi et al.'s architecture and initialisation (E.1.1's constants), trained at a constant rate.
SHI_NETWORK = dict(activation="truncated_relu", bias=True, output_scale="standard")
SHI = dict(
    init=dict(scheme="gaussian_symmetric", sigma_w=0.2, sigma_b=0.04, sigma_a=4.0),
    mean_field_gradient=False,
    loss="hinge",
    training=dict(lr=1e-4),
)


def shi(width: int, training: dict | None = None, **kwargs) -> dict:
    """A learner's keyword arguments: Shi et al.'s network of ``width`` neurons, ``SHI``'s settings, ``kwargs``.

    ``training`` is merged into ``SHI``'s rates field by field.
    """
    rates = {**SHI["training"], **(training or {})}
    return {"network": {"width": width, **SHI_NETWORK}, **SHI, "training": rates, **kwargs}


def steps_per_s(make_model, data_args, steps, warmup=5):
    """Training steps per second of ``make_model(input_dim)`` on a SparseCoding stream (no logger)."""
    data = SparseCoding(**data_args)
    return timed_fit(make_model(data.input_dim), data, steps, warmup, tensorboard=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")
    print(f"{'case':<58}{'baseline':>10}{'reference':>11}{'ratio':>8}")

    data = dict(d=500, D=100, k=5, train_size=None, test_size=0, val_size=0, batch_size=1000)
    ntk, net, ratio = paired(
        args.repeats,
        lambda: steps_per_s(lambda d: LinearizedTwoLayerNet(d, **shi(600)), data, args.steps),
        lambda: steps_per_s(lambda d: TwoLayerNet(d, **shi(600)), data, args.steps),
    )
    print(f"{'NTK linear form vs network, d=500 p=600 B=1000 (steps/s)':<58}{ntk:>10.1f}{net:>11.1f}{ratio:>8.2f}")

    small = dict(d=100, D=50, k=5, train_size=2000, test_size=0, val_size=0, batch_size=200)
    kernel, linear, ratio = paired(
        args.repeats,
        lambda: steps_per_s(lambda d: LinearizedTwoLayerNet(d, **shi(200, form="kernel")), small, args.steps * 4),
        lambda: steps_per_s(lambda d: LinearizedTwoLayerNet(d, **shi(200)), small, args.steps * 4),
    )
    label = "NTK kernel form vs linear form, n=2000 p=200 B=200 (steps/s)"
    print(f"{label:<58}{kernel:>10.1f}{linear:>11.1f}{ratio:>8.2f}")

    finite = dict(d=500, D=100, k=5, train_size=10000, test_size=0, val_size=0, batch_size=1000)

    def ntk(cache_mb: float):
        data = SparseCoding(**finite)
        model = LinearizedTwoLayerNet(data.input_dim, **shi(600, preactivation_cache_mb=cache_mb))
        return timed_fit(model, data, 120, 0, tensorboard=False)  # warmup 0: the cache's build is timed

    cached, fresh, ratio = paired(args.repeats, lambda: ntk(2048.0), lambda: ntk(0.0))
    label = "NTK tangent features cached vs computed, n=10000 (steps/s)"
    print(f"{label:<58}{cached:>10.1f}{fresh:>11.1f}{ratio:>8.2f}")


if __name__ == "__main__":
    main()
