"""Idle parameter groups cost nothing: the classifier stage of Shi et al.'s process, side by side.

From step 3 on, Shi et al.'s process (``configs/experiments/shi_parity.yaml``) trains only
the second layer: the first layer's rate is 0. featlearn then computes no gradient for it
(``ScheduledSGDModule._idle_parameters``). This script times that stage at E.1.1's size
(d = 500, 600 neurons, 5 seeds as one ensemble, batches of 1000 from 50000 training
samples) with the skip and with every gradient computed (the code before the change,
restored in the same process), back to back, and checks that both give the same weights.

Usage: ``python benchmarks/bench_idle_groups.py [--steps N] [--repeats R]``; the ratio is
the median of the per-pair ratios (see ``bench_throughput.py``).
"""

from __future__ import annotations

import argparse
import warnings

import torch
from bench_baselines import shi
from bench_throughput import paired, timed_fit

from featlearn.datamodules import SparseCoding
from featlearn.models import TwoLayerNet

warnings.filterwarnings("ignore")
SEEDS = 5
#: The classifier stage: first layer (w, b) at rate 0, second layer at Shi's rate.
STAGE = dict(lr_w=0.0, lr_a=1000.0, ensemble_size=SEEDS, seed=0)
DATA = dict(d=500, D=100, k=5, train_size=50000, test_size=0, val_size=0, batch_size=1000, ensemble_size=SEEDS)


def run(skip: bool, steps: int, warmup: int = 3) -> tuple[float, torch.Tensor]:
    """(member-steps per second, final a) of the classifier stage, with or without the skip."""
    original = TwoLayerNet._idle_parameters
    if not skip:
        TwoLayerNet._idle_parameters = lambda self, step: []  # every group differentiated, as before
    try:
        model = TwoLayerNet(500, **shi(600, **STAGE))
        rate = timed_fit(model, SparseCoding(**DATA), steps, warmup, tensorboard=False)
    finally:
        TwoLayerNet._idle_parameters = original
    return rate * SEEDS, model.output_weights().clone()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")
    weights = {}

    def side(skip):
        rate, weights[skip] = run(skip, args.steps)
        return rate

    skipped, computed, ratio = paired(args.repeats, lambda: side(True), lambda: side(False))
    same = torch.equal(weights[True], weights[False])
    print(f"{'case':<62}{'skip':>9}{'compute':>9}{'ratio':>8}")
    label = f"Shi E.1.1 classifier stage, {SEEDS} seeds (member-steps/s)"
    print(f"{label:<62}{skipped:>9.1f}{computed:>9.1f}{ratio:>8.2f}  same weights: {same}")


if __name__ == "__main__":
    main()
