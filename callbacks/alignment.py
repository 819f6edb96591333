r"""Feature-alignment diagnostics (Shi, Wei, Liang 2022): do the neurons find the features?"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities import rank_zero_warn
from torch import Tensor

from featlearn.callbacks.base import DiagnosticCallback
from featlearn.callbacks.pictures import cosines, mds_embedding, publish_figure
from featlearn.contracts import EvaluationData, GroundTruth
from featlearn.validation import check_int, check_number, is_int


def feature_alignment(w: Tensor, feature: Tensor, top: int, threshold: float) -> dict[str, Tensor]:
    r"""Alignment of neurons w (p, d) with the ground truth g = sum_{j in A} M_j and -g.

    * ``max_cos`` = max_i cos(w_i, g): the paper's "Cos Similarity"; ``max_cos_neg``
      = max_i cos(w_i, -g) (neurons with a_i < 0 align with -g).
    * ``top_mean_cos``: mean of the ``top`` largest cos(w_i, g).
    * ``frac_above_pos`` / ``frac_above_neg``: fraction of neurons with
      cos(w_i, +-g) > ``threshold``.
    """
    cos = cosines(w, feature.unsqueeze(0)).squeeze(-1)  # (p,)
    top = min(top, cos.numel())
    return {
        "max_cos": cos.max(),
        "max_cos_neg": (-cos).max(),
        "top_mean_cos": cos.topk(top).values.mean(),
        "frac_above_pos": (cos > threshold).double().mean(),
        "frac_above_neg": (-cos > threshold).double().mean(),
    }


def dictionary_snr(w: Tensor, dictionary: Tensor, relevant: Tensor) -> dict[str, Tensor]:
    r"""How much of each neuron lies on class-relevant against background patterns.

    With coefficients :math:`T_{ij} = \langle w_i, M_j \rangle` (the T_j of Lemmas 6 and
    18: after step 1, T_j is about beta gamma / sigma~ on A and small off A), the
    per-neuron signal-to-noise ratio compares the mean magnitude per pattern,

    .. math::  \mathrm{SNR}_i = \sqrt{\tfrac{1}{k}\sum_{j \in A} T_{ij}^2} \Big/
               \sqrt{\tfrac{1}{D-k}\sum_{j \notin A} T_{ij}^2},

    and ``relevant_frac`` is :math:`\sum_{j\in A} T_{ij}^2 / \sum_j T_{ij}^2`.

    Args:
        w: Neurons (p, d).
        dictionary: M (d, D).
        relevant: A, indices (k,) into the D columns.

    Returns:
        ``snr_median``, ``snr_max`` over neurons and ``relevant_frac_mean``.
    """
    coeff = w @ dictionary.to(w.dtype)  # (p, D)
    mask = torch.zeros(dictionary.shape[1], dtype=torch.bool, device=w.device)
    mask[relevant.to(w.device)] = True
    on = coeff[:, mask].pow(2)
    off = coeff[:, ~mask].pow(2)
    out = {"relevant_frac_mean": (on.sum(1) / (on.sum(1) + off.sum(1)).clamp_min(1e-30)).mean()}
    if off.shape[1] > 0:
        snr = on.mean(1).sqrt() / off.mean(1).sqrt().clamp_min(1e-30)
        out["snr_median"] = snr.median()
        out["snr_max"] = snr.max()
    return out


#: The cosine a neuron needs to cover a cluster centre (FeatureAlignment's and compare's default).
COVERAGE_THRESHOLD = 0.9


def centre_coverage(w: Tensor, centres: Tensor, threshold: float) -> dict[str, Tensor]:
    """Gaussian mixtures: is every cluster centre c found by some neuron?

    ``centre_coverage`` is the fraction of centres with max_i cos(w_i, c) >=
    ``threshold``; ``centre_max_cos_mean`` the mean over centres of that maximum.
    """
    best = cosines(w, centres).max(dim=0).values  # (C,)
    return {"centre_coverage": (best >= threshold).double().mean(), "centre_max_cos_mean": best.mean()}


def class_mean_alignment(w: Tensor, means: Tensor, labels: Tensor, a: Tensor | None) -> dict[str, Tensor]:
    r"""Real data: how close the neurons are to the class-mean directions, and to the right one.

    With class means :math:`m_c` (labels :math:`y_c`) and, for neuron i, its nearest mean
    :math:`c(i) = \arg\max_c \cos(w_i, m_c)`:

    * ``class_mean_cos`` = mean_i max_c cos(w_i, m_c): rises from its random-direction
      level as the neurons gather around the class structure, the scalar analogue of
      Figure 17's clusters forming (one number per step, readable off a curve, unlike a
      cluster count that jumps between integers and depends on a clustering rule);
    * ``class_mean_sign_agreement`` = the fraction of neurons with sign(a_i) = y_{c(i)}:
      a neuron that votes for class +1 (a_i > 0) sits nearer the +1 class mean (None
      without output weights).
    """
    cos = cosines(w, means)  # (p, C)
    best, nearest = cos.max(dim=1)
    out = {"class_mean_cos": best.mean()}
    if a is not None:
        out["class_mean_sign_agreement"] = (torch.sign(a) == labels.to(a)[nearest]).double().mean()
    return out


def two_clusters(w: Tensor, seed: int = 0) -> dict[str, Tensor]:
    r"""How tightly the neurons gather into two groups, measured as Shi et al.'s E.4.1 measures its filters.

    The unit directions :math:`u_i = w_i / \lVert w_i \rVert` are split in two by k-means
    (scikit-learn, k = 2, ``n_init = 10``, ``random_state = seed``: the same split on a rerun).
    With each group's centre :math:`c_g`, the normalised mean of its :math:`u_i`:

    * ``cluster_cos`` = :math:`\frac1p \sum_i \cos(u_i, c_{g(i)})`, E.4.1's "average cosine
      similarity between the green/red points in the clusters to their centers". Random
      directions give about :math:`\sqrt{2/p}` (a centre is the mean of p/2 nearly orthogonal
      vectors), so it is read against its value at initialisation, not against 0;
    * ``centre_cos`` = :math:`\cos(c_1, c_2)`, E.4.1's "cosine similarity between two cluster
      centers" (about -0.72 for its Figure 20(a) filters).

    Args:
        w: The neurons (p, d), p >= 2.
        seed: k-means' random state.

    Returns:
        ``{"cluster_cos", "centre_cos"}`` (0-d tensors, float64).
    """
    from sklearn.cluster import KMeans

    u = torch.nn.functional.normalize(w.detach().to("cpu", torch.float64), dim=1)  # (p, d)
    if torch.equal(u, u[:1].expand_as(u)):  # every direction identical: one group, fully gathered
        return {
            "cluster_cos": torch.tensor(1.0, dtype=torch.float64),
            "centre_cos": torch.tensor(1.0, dtype=torch.float64),
        }
    groups = torch.as_tensor(KMeans(n_clusters=2, n_init=10, random_state=seed).fit_predict(u.numpy()))  # (p,)
    centres = torch.nn.functional.normalize(torch.stack([u[groups == g].mean(0) for g in (0, 1)]), dim=1)  # (2, d)
    return {
        "cluster_cos": (u * centres[groups]).sum(1).mean(),
        "centre_cos": (centres[0] * centres[1]).sum(),
    }


def random_max_cos(dim: int, directions: int) -> dict[str, float]:
    r"""The law of :math:`\max_{i \le n} \cos(u_i, v)` for n independent uniform unit vectors in :math:`\mathbb{R}^d`.

    What ``align/max_cos`` reads for a first layer that never left an isotropic Gaussian
    initialisation (random features), against which a measured cosine is judged. One cosine
    :math:`c` has :math:`(1 + c)/2 \sim \mathrm{Beta}(\frac{d-1}{2}, \frac{d-1}{2})`, with CDF
    :math:`F`; the largest of n has CDF :math:`F^n`, density :math:`n F^{n-1} F'`, and
    quantiles :math:`F^{-1}(q^{1/n})`. Exact (numerical quadrature), no sampling.

    Args:
        dim: The input dimension d >= 2.
        directions: n, the number of independent directions (m for a mirrored-pair layer of 2m neurons).

    Returns:
        ``{"mean", "std", "q025", "q975"}`` of the largest cosine.
    """
    import math

    from scipy import integrate, stats

    one = stats.beta((dim - 1) / 2, (dim - 1) / 2)

    def density(c: float) -> float:
        return directions * one.cdf((1 + c) / 2) ** (directions - 1) * one.pdf((1 + c) / 2) / 2

    scale = 1.0 / math.sqrt(dim)  # where the mass lies: a quadrature hint
    hints = [0.0, 3.0 * scale]
    mean = integrate.quad(lambda c: c * density(c), -1.0, 1.0, points=hints, limit=200)[0]
    var = integrate.quad(lambda c: (c - mean) ** 2 * density(c), -1.0, 1.0, points=hints, limit=200)[0]

    def quantile(q: float) -> float:
        return float(2.0 * one.ppf(q ** (1.0 / directions)) - 1.0)

    return {"mean": float(mean), "std": math.sqrt(var), "q025": quantile(0.025), "q975": quantile(0.975)}


def overlapping_points(xy, colours, resolution: float = 0.01) -> list[tuple[float, float, str, int]]:
    """Points of one colour that fall in one cell of a grid (``resolution`` times the picture's extent), merged.

    Returns:
        ``(x, y, colour, count)`` per occupied cell and colour, at the mean of its points.
    """
    import numpy as np

    xy = np.asarray(xy, dtype=float)
    extent = float(np.ptp(xy, axis=0).max()) if len(xy) else 0.0
    cell = max(extent * resolution, 1e-12)
    groups: dict[tuple[int, int, str], list[int]] = {}
    for i, (x, y) in enumerate(xy):
        groups.setdefault((round(x / cell), round(y / cell), str(colours[i])), []).append(i)
    return [(float(xy[m, 0].mean()), float(xy[m, 1].mean()), key[2], len(m)) for key, m in groups.items()]


class FeatureAlignment(DiagnosticCallback):
    r"""Logs how the first-layer neurons align with the data model's ground truth, under ``align/``.

    Uses what the data model's ``ground_truth()`` (a :class:`~featlearn.contracts.GroundTruth`) provides:

    * ``feature`` (d,), the effective feature sum_{j in A} M_j: ``align/max_cos``
      (the paper's Cos Similarity), ``align/max_cos_neg``, ``align/top_mean_cos``,
      ``align/frac_above_pos``, ``align/frac_above_neg`` (:func:`feature_alignment`);
    * ``dictionary`` (d, D) and ``relevant`` (k,): ``align/snr_median``,
      ``align/snr_max``, ``align/relevant_frac_mean`` (:func:`dictionary_snr`);
    * ``centres`` (C, d): ``align/centre_coverage``, ``align/centre_max_cos_mean``
      (:func:`centre_coverage`);
    * ``class_means`` (C, d) with ``class_mean_labels`` (real data, which have no ground
      truth): ``align/class_mean_cos``, ``align/class_mean_sign_agreement``
      (:func:`class_mean_alignment`);
    * with ``clusters`` (by default on real data): how the neurons gather into two groups,
      ``align/cluster_cos`` and ``align/centre_cos`` (:func:`two_clusters`: Figures 15 and
      17-19's "the weights ... form clusters"), whose per-member values at the first and the
      last step the run's :meth:`member_results` hands to a study.

    The neurons are the learner's ``first_layer_features()``; a learner without
    learned neurons (the NTK baseline) gets no ``align/`` metrics and no pictures, as
    ``featlearn compare`` reports NA for it. Values are averaged over ensemble members.
    Every step up to ``dense_until`` is logged (the first steps are where Shi et al.'s
    features appear), then the cadence.

    **MDS pictures.** At ``mds_steps`` (default: initialisation, steps 1 and 2, and the
    last step) the neurons of member 0 are embedded in 2-D by metric MDS on the cosine
    distances 1 - cos(w_i, w_j) (scikit-learn), together with the ground truth: +g
    (red star) and -g (orange star) as in Figures 2 and 6, or the cluster centres
    (stars coloured by label) as in Figure 16. Neurons with cos >= ``highlight_cos``
    to +g (red) or -g (orange) at step ``highlight_step`` keep their colour in every
    picture, so one sees where the aligned neurons came from. On real data the stars
    are the class means (red: y = +1, blue: y = -1) and each neuron is coloured by the
    sign of its output weight at that step (red a > 0, blue a < 0), as in Figures
    17-19. The pictures are drawn
    at the end of ``fit``, written to TensorBoard (``align/mds``) and saved as PNG
    files in the logger's folder.

    Args:
        cadence: ``"log"`` or every N steps.
        points_per_decade: Density of the log-spaced cadence.
        dense_until: Log every step up to this one.
        top: How many neurons ``top_mean_cos`` averages.
        cos_threshold: Threshold of ``frac_above_*``.
        coverage_threshold: Cosine a neuron needs to cover a cluster centre.
        mds_steps: Steps to picture (``-1`` = the last step); empty: no pictures.
        highlight_step: Step whose aligned neurons are coloured in every picture.
        highlight_cos: Cosine that makes a neuron "aligned" for the colouring.
        clusters: Measure :func:`two_clusters` at every step computed; None: where the data model
            has class means (real data), whose neurons no other ground truth describes. A k-means
            per member and step: about 0.1 s at m = 300, d = 2000.
    """

    data_requirement = EvaluationData
    state_attributes = ("history", "snapshots", "output_signs", "member_clusters")
    result_tags = ("align/max_cos", "align/snr_median", "align/centre_coverage", "align/class_mean_cos")

    def __init__(
        self,
        cadence: str | int = "log",
        points_per_decade: int = 20,
        dense_until: int = 10,
        top: int = 10,
        cos_threshold: float = 0.99,
        coverage_threshold: float = COVERAGE_THRESHOLD,
        mds_steps: list[int] | None = None,
        highlight_step: int = 2,
        highlight_cos: float = 0.9,
        clusters: bool | None = None,
    ) -> None:
        super().__init__(cadence=cadence, points_per_decade=points_per_decade)
        for name, value in (
            ("cos_threshold", cos_threshold),
            ("coverage_threshold", coverage_threshold),
            ("highlight_cos", highlight_cos),
        ):
            check_number(f"FeatureAlignment.{name}", value, -1.0, 1.0, hint=" (a cosine)")
        check_int("FeatureAlignment.top", top, 1)
        check_int("FeatureAlignment.dense_until", dense_until, 0)
        mds_steps = [0, 1, 2, -1] if mds_steps is None else list(mds_steps)
        if any(not is_int(s) or s < -1 for s in mds_steps):
            raise ValueError(
                f"FeatureAlignment.mds_steps must be steps >= 0 (or -1 for the last step), got {mds_steps}."
            )
        self.dense_until = dense_until
        self.top = top
        self.cos_threshold = cos_threshold
        self.coverage_threshold = coverage_threshold
        self.mds_steps = mds_steps
        self.highlight_step = highlight_step
        self.highlight_cos = highlight_cos
        if clusters is not None and not isinstance(clusters, bool):
            raise ValueError(f"FeatureAlignment.clusters must be true, false or null (on real data), got {clusters!r}.")
        self.clusters = clusters
        self.snapshots: dict[int, Tensor] = {}  # step -> w of member 0 (p, d), CPU
        self.output_signs: dict[int, Tensor] = {}  # step -> sign(a) of member 0 (p,), CPU
        self.images: dict[int, Tensor] = {}  # step -> (3, H, W) uint8, after fit
        #: step -> per-member two_clusters values: the first and the last step are kept.
        self.member_clusters: dict[int, list[dict[str, float]]] = {}
        self._last_step: int | None = None

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        super().on_fit_start(trainer, pl_module)
        data = self.data_model
        wanted = ("feature", "centres", "class_means")
        data.ground_truth().require(wanted, "FeatureAlignment", type(data).__name__, any_of=True)
        if self.mds_steps:
            try:
                import matplotlib  # noqa: F401
                import sklearn  # noqa: F401
            except ImportError as err:
                raise ImportError(
                    "FeatureAlignment's MDS pictures need matplotlib and scikit-learn: "
                    "`pip install matplotlib scikit-learn` (dependencies of featlearn), or set mds_steps: []."
                ) from err
        self._last_step = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None

    def is_due(self, step: int) -> bool:  # noqa: D102
        return step <= self.dense_until or super().is_due(step) or self._wants_snapshot(step)

    def _wants_snapshot(self, step: int) -> bool:
        return step in self.mds_steps or (-1 in self.mds_steps and step == self._last_step)

    def compute(self, trainer: pl.Trainer, pl_module: pl.LightningModule, step: int) -> dict[str, float]:  # noqa: D102
        w = pl_module.first_layer_features()  # (S, p, d), or None: no learned neurons (the NTK)
        if w is None:
            return {}
        truth = self.data_model.ground_truth()
        clusters = truth.class_means is not None if self.clusters is None else self.clusters
        a = pl_module.output_weights()  # (S, p) or None
        if self._wants_snapshot(step) or step == self.highlight_step:
            self.snapshots[step] = w[0].to("cpu", torch.float64).clone()
            if a is not None:
                self.output_signs[step] = torch.sign(a[0]).to("cpu", torch.float64)
        per_member = []
        for s, ws in enumerate(w.to(torch.float64)):
            values = {}
            if truth.feature is not None:
                values.update(feature_alignment(ws, truth.feature.to(ws), self.top, self.cos_threshold))
            if truth.relevant is not None:
                values.update(dictionary_snr(ws, truth.dictionary.to(ws), truth.relevant))
            if truth.centres is not None:
                values.update(centre_coverage(ws, truth.centres.to(ws), self.coverage_threshold))
            if truth.class_means is not None:
                means, labels = truth.class_means.to(ws), truth.class_mean_labels
                values.update(class_mean_alignment(ws, means, labels, None if a is None else a[s].to(ws)))
            if clusters:
                values.update(two_clusters(ws))
            per_member.append(values)
        if clusters:
            first = min(self.member_clusters, default=step)
            kept = [k for k in ("cluster_cos", "centre_cos", "class_mean_cos") if k in per_member[0]]
            now = [{k: float(v[k]) for k in kept} for v in per_member]
            self.member_clusters = {**{first: self.member_clusters.get(first, now)}, step: now}
        return {f"align/{k}": torch.stack([v[k] for v in per_member]).mean() for k in per_member[0]}

    def member_results(self) -> dict[str, list]:
        """Per member, with ``clusters``: :func:`two_clusters` at the first and the last step computed.

        ``cluster_cos`` and ``centre_cos`` at the last step; ``cluster_cos_start`` and
        ``centre_cos_start`` at the first (step 0: the initialisation); on real data also
        ``class_mean_cos`` and ``class_mean_cos_start`` (:func:`class_mean_alignment`). Empty
        without ``clusters``.
        """
        if not self.member_clusters:
            return {}
        first, last = self.member_clusters[min(self.member_clusters)], self.member_clusters[max(self.member_clusters)]
        out = {}
        for key in (k for k in last[0] if k in first[0]):  # a checkpoint from before a key was kept lacks it
            out[key] = [member[key] for member in last]
            out[f"{key}_start"] = [member[key] for member in first]
        return out

    # ------------------------------------------------------------------ pictures
    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        if not self.mds_steps or not trainer.is_global_zero or not self.snapshots:
            return
        truth = self.data_model.ground_truth().to("cpu", torch.float64)
        highlight = self.snapshots.get(self.highlight_step)
        steps = sorted(s for s in self.snapshots if self._wants_snapshot(s))
        for step in steps:
            figure = self._draw(self.snapshots[step], truth, highlight, step, self.output_signs.get(step))
            self.images[step] = publish_figure(trainer, "align/mds", figure, step, f"mds_step{step}.png")

    def _draw(self, w: Tensor, truth: GroundTruth, highlight: Tensor | None, step: int, signs=None):
        """MDS of neurons and ground-truth points: the drawn figure."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np

        if truth.feature is not None:
            stars = torch.stack([truth.feature, -truth.feature])
            star_colours = ["red", "orange"]
            legend = {"red": "+sum_A M_j", "orange": "-sum_A M_j"}
        elif truth.centres is not None:
            stars = truth.centres
            star_colours = ["red" if lab > 0 else "blue" for lab in truth.centre_labels.tolist()]
            legend = {"red": "centre, y=+1", "blue": "centre, y=-1"}
        else:
            stars = truth.class_means
            star_colours = ["red" if lab > 0 else "blue" for lab in truth.class_mean_labels.tolist()]
            legend = {"red": "class mean, y=+1", "blue": "class mean, y=-1"}
        points = torch.cat([w, stars])  # (p + C, d)
        xy = mds_embedding(points)  # (p + C, 2)
        p = w.shape[0]
        colours = np.array(["lightgray"] * p, dtype=object)
        if highlight is not None and truth.feature is not None:
            cos = cosines(highlight, truth.feature.unsqueeze(0)).squeeze(-1)
            colours[(cos >= self.highlight_cos).numpy()] = "red"
            colours[(-cos >= self.highlight_cos).numpy()] = "orange"
            neuron_legend = {
                "red": f"neuron, cos >= {self.highlight_cos:g} to +g at step {self.highlight_step}",
                "orange": f"neuron, cos >= {self.highlight_cos:g} to -g at step {self.highlight_step}",
                "lightgray": "other neuron",
            }
            look_for = "look for: the coloured neurons gathering at the stars"
        elif truth.centres is not None:
            best = cosines(w, truth.centres).argmax(dim=1)
            colours = np.array([star_colours[c] for c in best.tolist()], dtype=object)
            neuron_legend = {"red": "neuron nearest a y=+1 centre", "blue": "neuron nearest a y=-1 centre"}
            look_for = "look for: neurons leaving the cloud for the stars (align/centre_coverage counts them)"
        elif signs is not None:  # real data: each neuron by the sign of its output weight
            colours = np.where(signs.numpy() > 0, "red", "blue").astype(object)
            neuron_legend = {"red": "neuron with a > 0", "blue": "neuron with a < 0"}
            look_for = "look for: the red and blue neurons moving to their class means"
        else:
            neuron_legend, look_for = {"lightgray": "neuron"}, ""
        figure, axis = plt.subplots(figsize=(5.5, 5.8))
        # Neurons on one spot (a trained network's gather at a few directions) are drawn once,
        # sized by their number, which is written beside them: the picture shows how many.
        spots = overlapping_points(xy[:p], colours)
        axis.scatter(
            [s[0] for s in spots],
            [s[1] for s in spots],
            s=[8 + 4 * min(s[3], 60) for s in spots],
            c=[s[2] for s in spots],
            alpha=0.7,
            linewidths=0,
            zorder=4,
        )
        for x, y, _, count in spots:
            if count > 1:
                axis.annotate(str(count), (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points", zorder=5)
        axis.scatter(xy[p:, 0], xy[p:, 1], s=220, c=star_colours, marker="*", edgecolors="black", zorder=3)
        shown = list(dict.fromkeys(star_colours))
        handles = [plt.Line2D([], [], marker="*", color=c, linestyle="", markersize=12) for c in shown]
        labels = [legend[c] for c in shown]
        for colour in dict.fromkeys(colours.tolist()):
            handles.append(plt.Line2D([], [], marker="o", color=colour, linestyle="", markersize=6))
            labels.append(neuron_legend.get(colour, "neuron"))
        # Below the axes: inside, it can hide a star sitting in a corner.
        axis.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2, fontsize=7)
        epochs = self.data_model.epochs_at(step) if self.data_model is not None else None
        when = f"step {step}" + (f" (epoch {epochs:.3g})" if epochs is not None else "")
        title = f"neurons (MDS of cosine distances), {when}; {p} neurons"
        axis.set_title(title + (f"\n{look_for}" if look_for else ""), fontsize=9)
        axis.set_xticks([])
        axis.set_yticks([])
        figure.tight_layout()
        if not torch.isfinite(torch.as_tensor(xy)).all():
            rank_zero_warn(f"FeatureAlignment: the MDS embedding at step {step} has non-finite points.")
        return figure
