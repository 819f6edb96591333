"""Pictures the diagnostics draw: 2-D MDS maps of unit directions, rendered for TensorBoard."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import torch
from torch import Tensor


def cosines(w: Tensor, directions: Tensor) -> Tensor:
    """cos(w_i, g_c) for rows w (p, d) and directions g (C, d): (p, C)."""
    w_unit = w / w.norm(dim=-1, keepdim=True).clamp_min(1e-30)
    g_unit = directions / directions.norm(dim=-1, keepdim=True).clamp_min(1e-30)
    return w_unit @ g_unit.T


def mds_embedding(points: Tensor) -> np.ndarray:
    """2-D metric MDS (scikit-learn) of rows (n, d) on their cosine distances 1 - cos: (n, 2)."""
    from sklearn.manifold import MDS

    distances = (1.0 - cosines(points, points)).clamp_min(0.0)
    distances = 0.5 * (distances + distances.T)
    distances.fill_diagonal_(0.0)
    options = dict(n_components=2, n_init=1, max_iter=300, random_state=0)
    if "metric_mds" in inspect.signature(MDS).parameters:  # scikit-learn >= 1.8
        mds = MDS(metric="precomputed", init="random", **options)
    else:
        mds = MDS(dissimilarity="precomputed", **options)
    return mds.fit_transform(distances.numpy())


def figure_image(figure) -> Tensor:
    """A drawn matplotlib figure as a (3, H, W) uint8 tensor (TensorBoard's add_image layout)."""
    figure.canvas.draw()
    rgba = np.asarray(figure.canvas.buffer_rgba())  # (H, W, 4)
    return torch.from_numpy(rgba[..., :3].copy()).permute(2, 0, 1)


def run_folder(trainer) -> Path | None:
    """The run's folder: the first logger's ``log_dir`` (its ``save_dir`` if it has none); None without one.

    What ``trainer.log_dir`` says, read from the logger itself: under DDP ``trainer.log_dir``
    is a broadcast every process must join, and pictures are drawn on rank 0 alone.
    """
    if not trainer.loggers:
        return None
    logger = trainer.loggers[0]
    folder = getattr(logger, "log_dir", None) or logger.save_dir
    return Path(folder) if folder else None


def publish_text(trainer, tag: str, text: str, step: int, line_breaks: bool = True) -> None:
    """Write Markdown ``text`` under ``tag`` to every logger that takes text (TensorBoard's Text tab).

    With ``line_breaks``, each newline becomes a Markdown line break (two spaces before
    it), so a summary reads as it prints; a Markdown table keeps its newlines as they are.
    """
    markdown = text.replace("\n", "  \n") if line_breaks else text
    for logger in trainer.loggers:
        experiment = getattr(logger, "experiment", None)
        if hasattr(experiment, "add_text"):
            experiment.add_text(tag, markdown, global_step=step)


def publish_figure(trainer, tag: str, figure, step: int, filename: str | None) -> Tensor:
    """Send a drawn figure to every logger that takes images, save it as a PNG, close it.

    The PNG goes to :func:`run_folder` / ``filename`` when the run has a logger (and a
    ``filename``). Returns the image (3, H, W) uint8.
    """
    import matplotlib.pyplot as plt

    image = figure_image(figure)
    for logger in trainer.loggers:
        experiment = getattr(logger, "experiment", None)
        if hasattr(experiment, "add_image"):
            experiment.add_image(tag, image, global_step=step)
    folder = run_folder(trainer)
    if filename is not None and folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        figure.savefig(folder / filename, dpi=100)
    plt.close(figure)
    return image


def publish_chart(trainer, title: str, tags: list[str]) -> None:
    """Draw ``tags`` on one TensorBoard chart, ``title`` (the Custom Scalars tab), in every logger that can.

    Only the global-zero process writes; a logger without ``add_custom_scalars`` is skipped.
    """
    if not trainer.is_global_zero:
        return
    layout = {"featlearn": {title: ["Multiline", list(tags)]}}
    for logger in trainer.loggers:
        experiment = getattr(logger, "experiment", None)
        if hasattr(experiment, "add_custom_scalars"):
            experiment.add_custom_scalars(layout)
