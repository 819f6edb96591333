r"""Convolutional filters as neurons (Shi et al. 2022, E.4.1): MDS pictures, clusters, early gradients."""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import Tensor

from featlearn.callbacks.base import DiagnosticCallback
from featlearn.callbacks.pictures import cosines, mds_embedding, publish_figure, publish_text
from featlearn.contracts import FilterLearner
from featlearn.validation import check_int, is_int


def cluster_filters(filters: Tensor, max_clusters: int = 6, seed: int = 0) -> tuple[int, Tensor]:
    """K-means of the unit filters (n, fan_in), k in 2..max_clusters chosen by the best silhouette.

    Returns:
        ``(k, labels (n,))``; ``(1, zeros)`` when there are fewer than 3 distinct filters.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    unit = filters / filters.norm(dim=1, keepdim=True).clamp_min(1e-30)
    points = unit.double().numpy()
    best = (1, torch.zeros(len(points), dtype=torch.long), -1.0)
    for k in range(2, min(max_clusters, len(points) - 1) + 1):
        labels = KMeans(n_clusters=k, n_init=4, random_state=seed).fit_predict(points)
        if len(set(labels.tolist())) < 2:
            continue
        score = silhouette_score(points, labels, metric="cosine")
        if score > best[2]:
            best = (k, torch.from_numpy(labels).long(), score)
    return best[0], best[1]


def early_gradient_cosines(gradients: Tensor, chunks: int) -> dict[str, float]:
    r"""Table 7: how steady a neuron's early gradients are.

    The gradients g_1..g_T (T, fan_in) of one filter over the first T steps are split in
    ``chunks`` consecutive chunks of T / chunks steps (sizes differing by at most one when
    ``chunks`` does not divide T; T >= ``chunks``); v_c is the mean of chunk c and
    :math:`\bar v = \frac{1}{C}\sum_c v_c`. Returns cos(v_c, v̄) for every c (``cos_v{c}_vbar``)
    and cos(v_c, v_c') for every pair (``cos_v{c}_v{c'}``). Values near 1 say the early
    steps keep pushing the neuron one way (the paper finds 0.65 to 0.97).
    """
    # tensor_split, not chunk: Tensor.chunk(3) of T = 4 rows gives 2 chunks of 2.
    means = torch.stack([part.mean(0) for part in torch.tensor_split(gradients.double(), chunks)])  # (C, fan_in)
    vbar = means.mean(0, keepdim=True)
    out = {f"cos_v{c + 1}_vbar": float(v) for c, v in enumerate(cosines(means, vbar).squeeze(-1))}
    pairwise = cosines(means, means)
    for i in range(chunks):
        for j in range(i + 1, chunks):
            out[f"cos_v{i + 1}_v{j + 1}"] = float(pairwise[i, j])
    return out


class FilterDynamics(DiagnosticCallback):
    r"""The filters of a convolutional network as neurons: pictures, cluster counts, early gradients.

    Reads the learner's ``filter_banks()`` (every convolution of ensemble member 0, one
    row per filter; :class:`~featlearn.models.ModuleClassifier`).

    * **Pictures** (Figures 20-21): at ``mds_steps`` (-1: the last step) the normalised
      filters of each layer in ``layers`` (default: every residual block) are embedded in 2-D by metric MDS on cosine
      distances, coloured by their k-means cluster at the last step (k chosen by the
      silhouette, :func:`cluster_filters`), drawn at the end of ``fit`` to TensorBoard
      (``filters/<layer>``) and as ``filters_<layer>_step<t>.png`` in the run folder.
    * **Cluster count** ``filters/<layer>/clusters``: the silhouette-chosen k, logged at
      the picture steps: a scalar for how many groups the filters have formed.
    * **Table 7** for ``table_layer``: the gradients of every filter over the first
      ``gradient_steps`` updates are kept (captured just before each optimizer step);
      at the end, the filter closest to the mean of the largest final cluster is chosen
      and :func:`early_gradient_cosines` of its gradients in ``chunks`` chunks is written
      to TensorBoard's text tab (``filters/early_gradients``) and kept in :attr:`table`.
    * **Change between epochs** (E.4.1: "the change between Epoch 0 and Epoch 3 is much more
      significant than that between Epoch 3 and Epoch 20"): with ``change_steps`` [a, b, c],
      the mean over ``layers`` and their filters of :math:`1 - \cos(w_i(s), w_i(t))` from a to
      b (``filter_change_early``) and from b to c (``filter_change_late``).

    :meth:`member_results` hands a study ``early_gradient_min_cos`` (the smallest of Table 7's
    cosines) and the two changes, of member 0, the one ``filter_banks()`` shows.

    Args:
        layers: Layer names to picture (as ``filter_banks()`` names them); default: the
            first convolution and the first convolution of every residual block
            (``...conv1``: 8 in ResNet(m)).
        table_layer: The layer of Table 7 (default: the first convolution).
        mds_steps: Steps to picture (-1: the last step).
        gradient_steps: T, the early steps whose gradients Table 7 uses.
        chunks: Chunks of the T steps (the paper: 3 of 10).
        max_clusters: The largest k the cluster count tries.
        change_steps: Three steps a < b < c (-1: the last) whose filters are kept and compared;
            None or empty: no change measured.
    """

    state_attributes = ("history", "snapshots", "gradients")

    def __init__(
        self,
        layers: list[str] | None = None,
        table_layer: str | None = None,
        mds_steps: list[int] | None = None,
        gradient_steps: int = 30,
        chunks: int = 3,
        max_clusters: int = 6,
        change_steps: list[int] | None = None,
    ) -> None:
        super().__init__()
        check_int("FilterDynamics.gradient_steps", gradient_steps, 1)
        check_int("FilterDynamics.chunks", chunks, 1)
        if chunks > gradient_steps:
            raise ValueError(f"FilterDynamics.chunks = {chunks} exceeds gradient_steps = {gradient_steps}: lower it.")
        check_int("FilterDynamics.max_clusters", max_clusters, 2)
        self.mds_steps = [0, -1] if mds_steps is None else list(mds_steps)
        if any(not is_int(s) or s < -1 for s in self.mds_steps):
            raise ValueError(f"FilterDynamics.mds_steps must be steps >= 0 (or -1: the last), got {self.mds_steps}.")
        self.change_steps = list(change_steps or [])
        if self.change_steps and (
            len(self.change_steps) != 3
            or any(not is_int(s) or s < -1 for s in self.change_steps)
            or sorted(self.change_steps[:2]) != self.change_steps[:2]
            or -1 in self.change_steps[:2]
            or (self.change_steps[2] != -1 and self.change_steps[2] <= self.change_steps[1])
        ):
            raise ValueError(
                f"FilterDynamics.change_steps must be three increasing steps a < b < c (c may be -1: the last), "
                f"got {self.change_steps}."
            )
        self.layers, self.table_layer = layers, table_layer
        self.gradient_steps, self.chunks, self.max_clusters = gradient_steps, chunks, max_clusters
        self.snapshots: dict[int, dict[str, Tensor]] = {}  # step -> layer -> filters (n, fan_in), CPU
        self.gradients: list[Tensor] = []  # per early step: the table layer's gradients (n, fan_in), CPU
        self.images: dict[tuple[str, int], Tensor] = {}
        self.table: dict[str, float] = {}
        self._last_step: int | None = None

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        super().on_fit_start(trainer, pl_module)
        banks = pl_module.filter_banks() if isinstance(pl_module, FilterLearner) else None
        if not banks:
            raise ValueError(
                f"FilterDynamics needs a learner with convolutional filters (filter_banks(), e.g. "
                f"ModuleClassifier with ScaledResNet18); {type(pl_module).__name__} has none. Remove the callback."
            )
        names = list(banks)
        if self.layers is None:  # the first convolution and each residual block's first one
            self.layers = [names[0]] + [n for n in names if n.endswith(".conv1")]
        if self.table_layer is None:
            self.table_layer = names[0]
        for name in [*self.layers, self.table_layer]:
            if name not in banks:
                raise ValueError(f"FilterDynamics: no convolution named {name!r}; the network has {names}.")
        self._last_step = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None
        self.gradients.clear()

    def _wants_snapshot(self, step: int) -> bool:
        wanted = [*self.mds_steps, *self.change_steps]
        return step in wanted or (-1 in wanted and step == self._last_step)

    def _resolved_change_steps(self) -> list[int]:
        return [self._last_step if s == -1 else s for s in self.change_steps]

    def member_results(self) -> dict[str, list]:
        """Member 0's ``early_gradient_min_cos`` and ``filter_change_early`` / ``_late`` (see the class).

        A value is None where the run did not reach it (fewer than ``chunks`` early steps, a
        change step past the run's last step).
        """
        out: dict[str, list] = {}
        cosines_of_table = [v for k, v in self.table.items() if k.startswith("cos")]
        out["early_gradient_min_cos"] = [min(cosines_of_table) if cosines_of_table else None]
        if self.change_steps:
            a, b, c = self._resolved_change_steps()
            out["filter_change_early"] = [self._change(a, b)]
            out["filter_change_late"] = [self._change(b, c)]
        return out

    def _change(self, start: int | None, end: int | None) -> float | None:
        r"""Mean over layers and filters of :math:`1 - \cos(w_i(start), w_i(end))`; None if a step is missing."""
        if start not in self.snapshots or end not in self.snapshots:
            return None
        changes = [
            1.0 - cosines(self.snapshots[start][name], self.snapshots[end][name]).diagonal().mean()
            for name in self.layers
        ]
        return float(torch.stack(changes).mean())

    def is_due(self, step: int) -> bool:
        """The picture steps only (clustering every layer is too dear for a dense cadence)."""
        return self._wants_snapshot(step)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        """Keep the table layer's gradients of the first ``gradient_steps`` updates."""
        if len(self.gradients) < self.gradient_steps and trainer.global_step < self.gradient_steps:
            grads = pl_module.filter_banks(gradients=True)[self.table_layer]
            self.gradients.append(grads.to("cpu", torch.float64).clone())

    def compute(self, trainer: pl.Trainer, pl_module: pl.LightningModule, step: int) -> dict[str, float]:  # noqa: D102
        banks = pl_module.filter_banks()
        out = {}
        for name in self.layers:
            filters = banks[name].to("cpu", torch.float64)
            if self._wants_snapshot(step):
                self.snapshots.setdefault(step, {})[name] = filters.clone()
            out[f"filters/{name}/clusters"] = float(cluster_filters(filters, self.max_clusters)[0])
        return out

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        if not trainer.is_global_zero:
            return
        final = {name: f.to("cpu", torch.float64) for name, f in pl_module.filter_banks().items()}
        # The final k-means clusters colour every picture of a layer and pick Table 7's filter.
        labels = {name: cluster_filters(final[name], self.max_clusters)[1] for name in {*self.layers, self.table_layer}}
        self._early_gradient_table(trainer, final[self.table_layer], labels[self.table_layer])
        pictured = [
            s for s in sorted(self.snapshots) if s in self.mds_steps or (-1 in self.mds_steps and s == self._last_step)
        ]
        for name in self.layers:
            for step in pictured:
                if name in self.snapshots[step]:
                    self._picture(trainer, name, step, self.snapshots[step][name], labels[name])

    def _early_gradient_table(self, trainer: pl.Trainer, filters: Tensor, labels: Tensor) -> None:
        if len(self.gradients) < self.chunks:
            return
        largest = int(torch.bincount(labels).argmax())
        members = (labels == largest).nonzero().squeeze(-1)
        unit = filters / filters.norm(dim=1, keepdim=True).clamp_min(1e-30)
        centre = unit[members].mean(0, keepdim=True)
        chosen = int(members[cosines(unit[members], centre).squeeze(-1).argmax()])
        grads = torch.stack([g[chosen] for g in self.gradients])  # (T, fan_in)
        self.table = {
            "filter": float(chosen),
            "steps": float(len(self.gradients)),
            **early_gradient_cosines(grads, self.chunks),
        }
        rows = "\n".join(f"| {k} | {v:.4f} |" for k, v in self.table.items())
        text = f"Early gradients of filter {chosen} of `{self.table_layer}` (Table 7)\n\n| | |\n|---|---|\n{rows}"
        publish_text(trainer, "filters/early_gradients", text, trainer.global_step, line_breaks=False)

    def _picture(self, trainer, name: str, step: int, filters: Tensor, labels: Tensor) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        xy = mds_embedding(filters)
        figure, axis = plt.subplots(figsize=(5, 5))
        axis.scatter(xy[:, 0], xy[:, 1], s=10, c=labels.numpy(), cmap="tab10", vmin=0, vmax=9, linewidths=0)
        axis.set_title(f"{name}: filters (MDS of cosine distances), step {step}", fontsize=9)
        axis.set_xticks([])
        axis.set_yticks([])
        figure.tight_layout()
        filename = f"filters_{name}_step{step}.png"
        self.images[name, step] = publish_figure(trainer, f"filters/{name}", figure, step, filename)
