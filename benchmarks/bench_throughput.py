"""Throughput of featlearn against a hand-written PyTorch loop of the same update.

Measured side by side in one process, on the same machine, as ratios:

1. Glasgow's XOR network (online SGD, fresh batch every step) trained for the same
   number of steps by featlearn (Trainer + TwoLayerNet + BooleanXOR, TensorBoard
   logging every 10 steps as in configs/base.yaml) and by a plain loop that draws
   the batch, runs forward/backward and applies the same mean-field SGD step.
   Sizes: small (d=64, p=256, m=2048) and the experiment's (d=512, p=512, m=4096),
   each with one update per Lightning batch (K=1) and with the data model's
   ``updates_per_batch=K`` (default 10), which hands Lightning several steps at once.
2. An ensemble of S=8 networks in one batched featlearn run against 8 single
   featlearn runs, at a tiny size (d=16, p=32, m=256) where per-step overhead
   dominates; on a GPU also S=32 at the experiment size against one run.

Usage: ``python benchmarks/bench_throughput.py [--steps N] [--repeats R] [--device cpu|cuda]``.
Prints a table. The two sides of a comparison run back to back, ``repeats`` times;
the ratio is the median of the per-pair ratios, which cancels the slow drifts in
this machine's speed that a best-of-each comparison would not (the rates shown are
the medians too). The targets are the CPU's; with ``--device cuda`` the same cases
run on the GPU, each side synchronised before its clock is read.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
import warnings

import pytorch_lightning as pl
import torch
from pytorch_lightning.loggers import TensorBoardLogger

from featlearn.datamodules import BooleanXOR
from featlearn.models import TwoLayerNet

warnings.filterwarnings("ignore")


def _synchronize(device) -> None:
    """Wait for the device's queued work, so a clock read after it counts that work."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


class _StepTimer(pl.Callback):
    """Wall time of the training steps after ``warmup`` steps (setup excluded)."""

    def __init__(self, warmup: int) -> None:
        self.warmup, self.start, self.end = warmup, None, None
        self.start_step = self.end_step = None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self.start is None and trainer.global_step >= self.warmup:
            _synchronize(pl_module.device)
            self.start, self.start_step = time.perf_counter(), trainer.global_step

    def on_train_end(self, trainer, pl_module):
        _synchronize(pl_module.device)
        self.end, self.end_step = time.perf_counter(), trainer.global_step

    def rate(self) -> float:
        """Updates per second between the first batch after warm-up and the end."""
        return (self.end_step - self.start_step) / (self.end - self.start)


def timed_fit(model, datamodule, steps, warmup, device="cpu", tensorboard=True):
    """Updates per second of ``trainer.fit(model, datamodule)`` after ``warmup`` steps, setup excluded.

    The trainer is the experiments' (TensorBoard every 10 steps, or no logger) with
    checkpoints, progress bar, summary and validation off, on ``device`` (cpu or cuda).
    """
    timer = _StepTimer(warmup)
    with tempfile.TemporaryDirectory() as tmp:
        experiment_trainer(tmp, warmup + steps, device, [timer], tensorboard).fit(model, datamodule)
    return timer.rate()


def experiment_trainer(folder, max_steps, device, callbacks, tensorboard=True):
    """The experiments' trainer in ``folder`` (TensorBoard every 10 steps, or no logger), the rest off."""
    return pl.Trainer(
        max_steps=max_steps,
        accelerator="gpu" if device == "cuda" else "cpu",
        devices=1,
        logger=TensorBoardLogger(folder, name="bench") if tensorboard else False,
        default_root_dir=folder,
        log_every_n_steps=10,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=0,
        callbacks=callbacks,
    )


def featlearn_steps_per_s(d, p, m, steps, warmup, ensemble_size=1, seed=0, updates_per_batch=1, device="cpu"):
    """Steps per second of a featlearn fit (steps after warmup) on ``device`` (cpu or cuda)."""
    model = TwoLayerNet(
        d,
        network={"width": p},
        init={"scheme": "sphere", "scale": 1 / math.log(d)},
        training=dict(lr=0.05),
        ensemble_size=ensemble_size,
        seed=seed,
    )
    data = BooleanXOR(dim=d, batch_size=m, seed=seed, ensemble_size=ensemble_size, updates_per_batch=updates_per_batch)
    return timed_fit(model, data, steps, warmup, device=device)


def plain_steps_per_s(d, p, m, steps, warmup, seed=0, device="cpu"):
    """Steps per second of a hand-written loop of the same online mean-field SGD update."""
    gen = torch.Generator(device=device).manual_seed(seed)
    g = torch.randn(p, d, generator=gen, device=device)
    theta = 1 / math.log(d)
    w = (theta * g / g.norm(dim=1, keepdim=True)).requires_grad_()
    a = (torch.where(torch.rand(p, generator=gen, device=device) < 0.5, -1.0, 1.0) * theta).requires_grad_()
    lr = 0.05 * p  # mean-field convention: gradients scaled by p
    start = None
    for step in range(warmup + steps):
        if step == warmup:
            _synchronize(device)
            start = time.perf_counter()
        x = torch.randint(0, 2, (m, d), generator=gen, device=device, dtype=torch.float32).mul_(2).sub_(1)
        y = -x[:, 0] * x[:, 1]
        f = torch.relu(x @ w.T) @ a / p
        loss = (2 * torch.nn.functional.softplus(-y * f)).mean()
        w.grad = a.grad = None
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            a -= lr * a.grad
    _synchronize(device)
    return steps / (time.perf_counter() - start)


def paired(repeats, ours, baseline):
    """Run ``ours()`` and ``baseline()`` back to back; medians of rates and of ratios."""
    pairs = [(ours(), baseline()) for _ in range(repeats)]
    return (
        statistics.median(o for o, _ in pairs),
        statistics.median(b for _, b in pairs),
        statistics.median(o / b for o, b in pairs),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="timed steps per run (small size)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--updates-per-batch", type=int, default=10, help="K of the second featlearn row (data.updates_per_batch)"
    )
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where both sides train")
    args = parser.parse_args()
    device = args.device
    if device == "cuda":
        if not torch.cuda.is_available():
            parser.error("--device cuda: no CUDA device is visible; run on a GPU machine or use --device cpu.")
        print(f"torch {torch.__version__}, {torch.cuda.get_device_name()} (targets are the CPU's)")
    else:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")
    print(f"{'case':<44}{'featlearn':>12}{'baseline':>12}{'ratio':>8}  target")
    for label, (d, p, m), steps, target in (
        ("XOR small d=64 p=256 m=2048", (64, 256, 2048), args.steps, 0.8),
        ("XOR experiment d=512 p=512 m=4096", (512, 512, 4096), max(args.steps // 4, 20), 0.9),
    ):
        for k in (1, args.updates_per_batch):
            ours, plain, ratio = paired(
                args.repeats,
                lambda: featlearn_steps_per_s(d, p, m, steps, warmup=10, updates_per_batch=k, device=device),  # noqa: B023
                lambda: plain_steps_per_s(d, p, m, steps, warmup=10, device=device),  # noqa: B023
            )
            row = f"{label}, K={k} (steps/s)"
            print(f"{row:<44}{ours:>12.1f}{plain:>12.1f}{ratio:>8.2f}  >= {target}")

    d, p, m, steps = 16, 32, 256, args.steps * 2

    def ensemble_rate():  # member-steps per second: the ensemble does 8 per step
        return 8 * featlearn_steps_per_s(d, p, m, steps, warmup=20, ensemble_size=8, device=device)

    def singles_rate():  # 8 runs, one after the other: 8 member-steps take the sum of step times
        return 8 / sum(1 / featlearn_steps_per_s(d, p, m, steps, warmup=20, seed=s, device=device) for s in range(8))

    ours, singles, ratio = paired(args.repeats, ensemble_rate, singles_rate)
    label = "ensemble S=8 vs 8 runs d=16 p=32 m=256 (member-steps/s)"
    print(f"{label:<44}{ours:>12.1f}{singles:>12.1f}{ratio:>8.2f}  >= 4")

    if device == "cuda":  # where ensembles pay most: members fill a GPU that one run leaves idle
        d, p, m, steps, size = 512, 512, 4096, max(args.steps // 4, 20), 32
        ours, single, ratio = paired(
            args.repeats,
            lambda: size * featlearn_steps_per_s(d, p, m, steps, warmup=10, ensemble_size=size, device=device),
            lambda: featlearn_steps_per_s(d, p, m, steps, warmup=10, device=device),
        )
        label = f"ensemble S={size} vs 1 run d={d} p={p} m={m} (member-steps/s)"
        print(f"{label:<44}{ours:>12.1f}{single:>12.1f}{ratio:>8.2f}  -")


if __name__ == "__main__":
    main()
