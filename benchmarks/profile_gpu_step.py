"""Where a ``glasgow_xor`` step's time goes on a GPU: wall time per update against kernel time per update.

The experiment of ``configs/experiments/glasgow_xor.yaml`` (d = 512, p = 512, m = 4096, both
layers, step size theta = 1/log d) costs two (4096 x 512) x (512 x 512) products a step,
plus the batch draw and a few element-wise passes: a fraction of a millisecond of GPU
work. Everything else is per-step overhead (Python, Lightning's loop and hooks, kernel
launches). This script measures, for each row, in one process on one device:

- ``wall``: seconds per update of an unprofiled run (the clock read after a synchronise,
  warm-up steps excluded);
- ``kernels``: seconds per update that the device spends in kernels, copies and memsets,
  summed from a ``torch.profiler`` trace of a second run of the same steps (kernels on one
  stream do not overlap, so the sum is the busy time);
- ``ratio`` = wall / kernels: 1 is an update that costs only its kernels.

Rows: featlearn's fit (the experiment's trainer: TensorBoard every 10 steps) with one
update per Lightning batch (K = 1) and with ``data.updates_per_batch = K``; a hand-written
loop of the same update; and that loop with each update captured once as a CUDA graph
and replayed, the floor that removing all per-step launch overhead would reach. The
profiled featlearn run also lists the host-side operations that cost the most time.

Usage: ``python benchmarks/profile_gpu_step.py [--steps N] [--warmup W] [--updates-per-batch K]
[--device cuda|cpu] [--json PATH]``. On the CPU it only checks that the rows run (no kernel
times: ratios are left empty).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
import warnings

import pytorch_lightning as pl
import torch
from bench_throughput import _synchronize, experiment_trainer, timed_fit

from featlearn.datamodules import BooleanXOR
from featlearn.models import TwoLayerNet

warnings.filterwarnings("ignore")
D, P, M = 512, 512, 4096
THETA = 1 / math.log(D)


def experiment(updates_per_batch: int) -> tuple[TwoLayerNet, BooleanXOR]:
    """glasgow_xor.yaml's learner and data model (sphere init at scale theta, step size theta)."""
    model = TwoLayerNet(
        D, network={"width": P}, init={"scheme": "sphere", "scale": THETA}, training=dict(lr=THETA), seed=0
    )
    data = BooleanXOR(dim=D, batch_size=M, test_size=0, val_size=0, updates_per_batch=updates_per_batch, seed=0)
    return model, data


def device_seconds(prof: torch.profiler.profile) -> float:
    """Seconds of device activity (kernels, copies, memsets) in a finished profile."""
    total_us = 0.0
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            total_us += event.time_range.elapsed_us()
    return total_us * 1e-6


class _ProfileWindow(pl.Callback):
    """Profile the updates after ``warmup`` until the end of the fit (host and device activity)."""

    def __init__(self, warmup: int, device: str) -> None:
        self.warmup, self.device = warmup, device
        self.prof = self.start_step = self.end_step = None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self.prof is None and trainer.global_step >= self.warmup:
            _synchronize(pl_module.device)
            activities = [torch.profiler.ProfilerActivity.CPU]
            if self.device == "cuda":
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            self.prof = torch.profiler.profile(activities=activities)
            self.prof.__enter__()
            self.start_step = trainer.global_step

    def on_train_end(self, trainer, pl_module):
        _synchronize(pl_module.device)
        self.prof.__exit__(None, None, None)
        self.end_step = trainer.global_step


def featlearn_profile(updates_per_batch: int, steps: int, warmup: int, device: str) -> tuple[float, str]:
    """(device seconds per update, table of host-side operations) of a profiled featlearn fit."""
    model, data = experiment(updates_per_batch)
    window = _ProfileWindow(warmup, device)
    with tempfile.TemporaryDirectory() as tmp:
        experiment_trainer(tmp, warmup + steps, device, [window]).fit(model, data)
    updates = window.end_step - window.start_step
    table = window.prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15)
    return device_seconds(window.prof) / updates, table


def hand_update(w: torch.Tensor, a: torch.Tensor, gen: torch.Generator | None, device: str) -> None:
    """One online mean-field SGD update of f = (1/p) a . relu(W x) on a fresh XOR batch (in place)."""
    x = torch.randint(0, 2, (M, D), generator=gen, device=device, dtype=torch.float32).mul_(2).sub_(1)  # (m, d)
    y = -x[:, 0] * x[:, 1]  # (m,)
    f = torch.relu(x @ w.T) @ a / P  # (m,)
    loss = torch.nn.functional.softplus(-y * f).mean()
    grad_w, grad_a = torch.autograd.grad(loss, (w, a))
    with torch.no_grad():  # gradients scaled by p (mean-field): the rate is theta p
        w.sub_(grad_w, alpha=THETA * P)
        a.sub_(grad_a, alpha=THETA * P)


def hand_parameters(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Sphere initialisation at scale theta: W (p, d), a (p,)."""
    gen = torch.Generator(device=device).manual_seed(0)
    g = torch.randn(P, D, generator=gen, device=device)
    w = (THETA * g / g.norm(dim=1, keepdim=True)).requires_grad_()
    a = (torch.where(torch.rand(P, generator=gen, device=device) < 0.5, -1.0, 1.0) * THETA).requires_grad_()
    return w, a


def hand_loop(steps: int, warmup: int, device: str, graphed: bool, profile: bool) -> float:
    """Seconds per update of the hand-written loop (wall), or of its device activity when ``profile``."""
    w, a = hand_parameters(device)
    if graphed:  # capture one update (draw, forward, backward, step) and replay it; default generator
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                hand_update(w, a, None, device)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            hand_update(w, a, None, device)
        update = graph.replay
    else:
        gen = torch.Generator(device=device).manual_seed(0)

        def update():
            hand_update(w, a, gen, device)

    for _ in range(warmup):
        update()
    _synchronize(device)
    if profile:
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(steps):
                update()
            _synchronize(device)
        return device_seconds(prof) / steps
    start = time.perf_counter()
    for _ in range(steps):
        update()
    _synchronize(device)
    return (time.perf_counter() - start) / steps


def table_lines(record: dict) -> list[str]:
    """The Markdown table of a run's rows (what ``benchmarks/README.md`` shows, from ``--json``'s file)."""
    lines = ["| case | wall per update (ms) | kernels per update (ms) | wall / kernels |"]
    lines.append("| --- | ---: | ---: | ---: |")
    for row in record["rows"]:
        kernel, ratio = row["kernel_s"], row["ratio"]
        cells = [f"{row['wall_s'] * 1e3:.3f}", f"{kernel * 1e3:.3f}" if kernel else "-"]
        cells.append(f"{ratio:.2f}" if ratio else "-")
        lines.append(f"| {row['case']} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--updates-per-batch", type=int, default=10)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        parser.error("--device cuda needs a CUDA device: pass --device cpu to check that the rows run")
    rows, tables = [], {}
    for k in (1, args.updates_per_batch):
        wall = 1.0 / timed_fit(*experiment(k), args.steps, args.warmup, device=args.device)
        kernels, table = featlearn_profile(k, args.steps, args.warmup, args.device)
        rows.append({"case": f"featlearn fit, K={k}", "wall_s": wall, "kernel_s": kernels if cuda else None})
        tables[f"featlearn fit, K={k}"] = table
    for graphed in (False, True) if cuda else (False,):
        wall = hand_loop(args.steps, args.warmup, args.device, graphed, profile=False)
        kernels = hand_loop(args.steps, args.warmup, args.device, graphed, profile=True) if cuda else None
        name = "hand-written loop, one CUDA graph per update" if graphed else "hand-written loop"
        rows.append({"case": name, "wall_s": wall, "kernel_s": kernels})
    device = torch.cuda.get_device_name() if cuda else "cpu"
    record = {"device": device, "torch": torch.__version__, "steps": args.steps, "rows": rows}
    for row in rows:
        row["ratio"] = row["wall_s"] / row["kernel_s"] if row["kernel_s"] else None
    print(f"\nglasgow_xor step (d={D}, p={P}, m={M}) on {device}, torch {torch.__version__}, {args.steps} updates:\n")
    print("\n".join(table_lines(record)))
    for name, table in tables.items():
        print(f"\nHost-side operations of the profiled {name} (self CPU time):\n{table}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(record, handle, indent=1)


if __name__ == "__main__":
    main()
