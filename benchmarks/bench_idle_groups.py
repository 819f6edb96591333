"""Idle parameter groups cost nothing: the classifier stage of Shi et al.'s process, side by side.

From step 3 on, Shi et al.'s process (``configs/experiments/shi_parity.yaml``) trains only
the second layer: the first layer's rate is 0. featlearn then computes no gradient for it
(``featlearn.models.sgd.ScheduledSGD.idle_parameters``), and takes the pre-activations of the batch's
training rows from Z = W X + b computed once for the training set
(``TwoLayerNet.frozen_preactivations``). This script times that stage at E.1.1's size
(d = 500, 600 neurons, 5 seeds as one ensemble, batches of 1000 from 50000 training
samples) three ways, in the same process: every gradient computed and no cache (the code
before both changes, restored here), the skip alone (``preactivation_cache_mb: 0``), and
the skip with the cache. Rows pair them back to back and check the weights agree
(exactly for the skip; to round-off with the cache, whose products sum in another order).
The cache is built in the warm-up steps, so its one-off cost (one product over the
50000 samples, about as much as 50 steps' products) is not in these rates; the whole
run of ``bench_against_wheel.py`` pays it.

Usage: ``python benchmarks/bench_idle_groups.py [--steps N] [--repeats R]``; the ratio is
the median of the per-pair ratios (see ``bench_throughput.py``). With fewer than 47 steps
the frozen stretch draws fewer rows than the set holds and the cache is (rightly) not built.
"""

from __future__ import annotations

import argparse
import warnings

import torch
from bench_baselines import shi
from bench_throughput import paired, timed_fit

from featlearn.datamodules import SparseCoding
from featlearn.models import TwoLayerNet
from featlearn.models.sgd import ScheduledSGD

warnings.filterwarnings("ignore")
SEEDS = 5
#: The classifier stage: first layer (w, b) at rate 0, second layer at Shi's rate.
STAGE = dict(training=dict(lr_w=0.0, lr_a=1000.0), ensemble_size=SEEDS, seed=0)
DATA = dict(d=500, D=100, k=5, train_size=50000, test_size=0, val_size=0, batch_size=1000, ensemble_size=SEEDS)


def run(skip: bool, cache: bool, steps: int, warmup: int = 3) -> tuple[float, torch.Tensor]:
    """(member-steps per second, final a) of the classifier stage with or without the skip and the cache."""
    original = ScheduledSGD.idle_parameters
    if not skip:
        ScheduledSGD.idle_parameters = lambda self, step, processes=1: []  # every group differentiated, as before
    try:
        model = TwoLayerNet(500, **shi(600, preactivation_cache_mb=2048.0 if cache else 0.0, **STAGE))
        rate = timed_fit(model, SparseCoding(**DATA), steps, warmup, tensorboard=False)
    finally:
        ScheduledSGD.idle_parameters = original
    return rate * SEEDS, model.output_weights().clone()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")
    weights = {}

    def side(skip, cache):
        rate, weights[skip, cache] = run(skip, cache, args.steps)
        return rate

    label = f"Shi E.1.1 classifier stage, {SEEDS} seeds (member-steps/s)"
    print(f"{'case':<72}{'ours':>9}{'before':>9}{'ratio':>8}")
    fast, slow, ratio = paired(args.repeats, lambda: side(True, False), lambda: side(False, False))
    same = torch.equal(weights[True, False], weights[False, False])
    print(f"{label + ': skip vs compute':<72}{fast:>9.1f}{slow:>9.1f}{ratio:>8.2f}  same weights: {same}")
    fast, slow, ratio = paired(args.repeats, lambda: side(True, True), lambda: side(True, False))
    gap = float((weights[True, True] - weights[True, False]).abs().max() / weights[True, False].abs().max())
    print(f"{label + ': skip+cache vs skip':<72}{fast:>9.1f}{slow:>9.1f}{ratio:>8.2f}  max rel. diff of a: {gap:.1e}")
    fast, slow, ratio = paired(args.repeats, lambda: side(True, True), lambda: side(False, False))
    print(f"{label + ': skip+cache vs compute':<72}{fast:>9.1f}{slow:>9.1f}{ratio:>8.2f}")


if __name__ == "__main__":
    main()
