"""What Algorithm 1 leaves in the student's run: its summary, the sweep's curve, table and picture."""

from __future__ import annotations

import csv
import json
import math
import warnings
from typing import TYPE_CHECKING

import pytorch_lightning as pl
import torch
from torch import Tensor, nn

from featlearn.callbacks.pictures import publish_figure, publish_text, run_folder

if TYPE_CHECKING:
    from featlearn.teacher.search import TeacherSearch


def publish_teacher(
    search: TeacherSearch, trainer: pl.Trainer, teacher: nn.Module, data: dict[str, Tensor], datamodule
) -> None:
    """Write the search's summary, sweep curve, ``teacher.json``, ``teacher_sweep.csv`` and picture to the run."""
    with torch.no_grad():
        accuracy = 100.0 * float((teacher(data["test_x"]).argmax(-1) == data["test_y"]).double().mean())
    counts = datamodule.label_counts()
    share = counts["train_injected"].double() / max(int(counts["train_injected"].sum()), 1)
    if search.size:
        how = "set by teacher.init_args.size"
    elif search.sweep and search.chosen_size == search.sweep[-1]["size"]:
        how = "the grid's largest size: the test loss fell over the whole grid, no minimum found"
    else:
        how = "the first minimum of the smoothed test-loss curve"
    summary = (
        f"teacher m = {search.chosen_size} ({how}); "
        f"test accuracy on L (its own labels) {accuracy:.1f}%; class shares of its labels on U's training "
        f"inputs: {', '.join(f'{v:.2f}' for v in share.tolist())}"
    )
    search.summary = {"size": search.chosen_size, "test_acc_on_L": accuracy, "injected_label_shares": share.tolist()}
    if not trainer.is_global_zero:
        return
    folder = run_folder(trainer)
    publish_text(trainer, "teacher/summary", summary, 0)
    for logger in trainer.loggers:
        for row in search.sweep:
            logger.log_metrics(
                {"teacher/test_loss": sum(row["test_loss"]) / len(row["test_loss"])}, step=row["parameters"]
            )
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "teacher.json").write_text(json.dumps({**search.summary, "sweep": search.sweep}, indent=1))
    if search.sweep:
        if folder is not None:
            with open(folder / "teacher_sweep.csv", "w", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(
                    ["size", "parameters", "mean_test_loss", "smoothed_log_loss", "chosen"]
                    + [f"test_loss_seed{s}" for s in range(search.seeds)]
                )
                for row in search.sweep:
                    losses = row["test_loss"]
                    writer.writerow(
                        [
                            row["size"],
                            row["parameters"],
                            sum(losses) / len(losses),
                            row["smoothed_log_loss"],
                            int(row["size"] == search.chosen_size),
                            *losses,
                        ]
                    )
        plot_sweep(search, trainer)


def plot_sweep(search: TeacherSearch, trainer: pl.Trainer) -> None:
    """Figure 26's curve: the teachers' test loss against their number of parameters, the chosen size starred."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        warnings.warn("matplotlib is not installed: no teacher_sweep.png (pip install matplotlib).", stacklevel=2)
        return
    params = [row["parameters"] for row in search.sweep]
    figure, axes = plt.subplots(figsize=(6, 4))
    for s in range(search.seeds):
        axes.plot(params, [row["test_loss"][s] for row in search.sweep], "o", color="0.6", ms=3)
    axes.plot(params, [math.exp(row["smoothed_log_loss"]) for row in search.sweep], "-", label="smoothed mean")
    chosen = next(row for row in search.sweep if row["size"] == search.chosen_size)
    axes.plot(
        [chosen["parameters"]],
        [math.exp(chosen["smoothed_log_loss"])],
        "r*",
        ms=14,
        label=f"chosen m = {search.chosen_size}",
    )
    for row in search.sweep:
        axes.annotate(
            str(row["size"]),
            (row["parameters"], sum(row["test_loss"]) / len(row["test_loss"])),
            fontsize=7,
            xytext=(2, 4),
            textcoords="offset points",
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("parameters of the teacher")
    axes.set_ylabel("test loss on L (cross-entropy)")
    axes.set_title("Algorithm 1: the teacher's test loss against its size")
    axes.legend()
    figure.tight_layout()
    publish_figure(trainer, "teacher/sweep", figure, step=0, filename="teacher_sweep.png")
