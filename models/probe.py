r"""One Step / Two Step / k Step: the best linear classifier on features learned in k steps."""

from __future__ import annotations

import torch
from pytorch_lightning.utilities import rank_zero_warn
from torch import Tensor, nn

from featlearn.contracts import EvaluationData, ProbeData
from featlearn.models.two_layer import TwoLayerNet
from featlearn.validation import check_int, check_number


class SteppedFeatureProbe(TwoLayerNet):
    r"""Train the network for k steps, freeze its first layer, fit the best linear classifier on top.

    The first ``trainer.max_steps`` = k updates are exactly :class:`TwoLayerNet`'s (same
    schedules, data stream and initialisation). After the last update the hidden
    features :math:`h(x) = \sigma(W x + b) \in \mathbb{R}^p` are frozen and the
    output layer is replaced by the L2-regularised logistic-regression classifier
    on them, fit to convergence on the training set
    :math:`\{(x_i, y_i)\}_{i=1}^n` (the data model's :meth:`probe_set`):

    .. math::

        \min_{v \in \mathbb{R}^p,\, c \in \mathbb{R}} \;
        \frac{1}{n} \sum_{i=1}^{n} \log\!\big(1 + e^{-y_i (v \cdot u_i + c)}\big)
        + \frac{\lambda}{2} \lVert v \rVert^2,
        \qquad u_{ij} = \frac{h_j(x_i) - \mu_j}{s_j},

    with :math:`\mu_j, s_j` the mean and standard deviation of feature j on the
    training set (s_j := 1 for a constant feature). The problem is strictly convex
    in v; standardising changes no decision boundary the intercept c can express,
    only the conditioning (raw features carry a large common offset). The
    classifier is then written back into the network, :math:`a_j = v_j / (c_{out}
    s_j)` and an output bias :math:`c - \sum_j v_j \mu_j / s_j`, so
    :meth:`scores` evaluates :math:`f(x) = v \cdot u(x) + c`.

    **Stopping rule.** Newton's method (:func:`logistic_regression`) for each member,
    stopped when every entry of its gradient is at most ``probe_tol`` in absolute
    value, or after ``probe_max_iter`` iterations (then a warning reports the
    remaining gradient).

    It is the converged reading of Shi et al.'s One Step (k = 1) and Two Step (k = 2)
    baselines (Appendix E: "fix the weight of the 1st layer after the first step/second
    step ... and train the best classifiers on top of them"): compare's "One Step" and
    "Two Step" columns. compare's "One Step (SGD readout)" and "Two Step (SGD readout)"
    run the process's own classifier stage on the same features instead (the first layer
    frozen, the second trained by the process's rates and loss to T); the paper's numbers
    are judged against both, since it names neither. It works for any data model.

    Args:
        *args: :class:`TwoLayerNet`'s arguments.
        probe_l2: lambda >= 0, the ridge penalty on v (standardised features).
        probe_max_iter: Most Newton iterations.
        probe_tol: Gradient tolerance of the stopping rule.
        probe_samples: Size of the fitting sample in online mode (the training set
            is used in finite-sample mode).
        **kwargs: :class:`TwoLayerNet`'s keyword arguments.
    """

    data_requirements = (EvaluationData, ProbeData)

    def __init__(
        self,
        *args,
        probe_l2: float = 1e-4,
        probe_max_iter: int = 100,
        probe_tol: float = 1e-6,
        probe_samples: int = 50000,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.probe_l2 = check_number("model.probe_l2", probe_l2, 0.0)
        self.probe_max_iter = check_int("model.probe_max_iter", probe_max_iter, 1)
        self.probe_tol = check_number("model.probe_tol", probe_tol, 0.0, strict=True)
        self.probe_samples = check_int("model.probe_samples", probe_samples, 1)
        self.register_buffer("output_bias", torch.zeros(self.ensemble_size))  # (S,)
        self.register_buffer("probed_at", torch.zeros((), dtype=torch.long))  # 0: not yet
        #: The last fit's summary: iterations, max |gradient|, objective, train error.
        self.probe_report: dict[str, float] = {}

    def scores(self, x: Tensor) -> Tensor:  # noqa: D102
        return self.net(x) + self.output_bias.unsqueeze(1)

    def set_scorer(self, x: Tensor):  # noqa: D102
        scorer = super().set_scorer(x)
        return None if scorer is None else (lambda rows: scorer(rows) + self.output_bias.unsqueeze(1))

    def training_step(self, batch, batch_idx: int) -> Tensor:
        """The update(s) of the process; after the last one (step k), fit the probe."""
        out = super().training_step(batch, batch_idx)
        if self.global_step >= self.trainer.max_steps:
            self.updates.check(self)  # no probe on NaN features
            self.fit_probe(self.global_step)
        return out

    def on_train_end(self) -> None:
        """Fit the probe if training stopped before ``max_steps`` (for example ``max_time``)."""
        super().on_train_end()
        if int(self.probed_at) == 0 and self.global_step > 0 and not self.trainer.interrupted:
            self.fit_probe(self.global_step)

    @torch.no_grad()
    def _standardised_features(self, x: Tensor, chunk: int = 16384) -> tuple[Tensor, Tensor, Tensor]:
        """U (S, n, p) float64, mu (S, p), s (S, p) of the hidden features on x (S, n, d)."""
        h = torch.cat([self.two_layer.hidden(x[:, i : i + chunk]) for i in range(0, x.shape[1], chunk)], dim=1)
        h = h.double()  # (S, n, p)
        mu = h.mean(dim=1)  # (S, p)
        sd = h.std(dim=1, correction=0)
        sd = torch.where(sd > 1e-12, sd, torch.ones_like(sd))
        # In place: at Shi et al.'s size (5 seeds x 50 000 x 600) each copy is 1.2 GB.
        return h.sub_(mu.unsqueeze(1)).div_(sd.unsqueeze(1)), mu, sd

    def fit_probe(self, step: int) -> dict[str, float]:
        """Fit the classifier on the frozen features after ``step`` updates; write it into the network.

        Returns:
            The summary also kept in :attr:`probe_report` and logged under ``probe/``.
        """
        x, y = self.data_model.probe_set(self.probe_samples)  # (S, n, d), (S, n)
        u, mu, sd = self._standardised_features(x)
        y = y.double()
        v, c, solver = logistic_regression(u, y, self.probe_l2, self.probe_tol, self.probe_max_iter)
        if solver["grad_max"] > self.probe_tol:
            rank_zero_warn(
                f"SteppedFeatureProbe: Newton's method stopped after {solver['iterations']:.0f} iterations with "
                f"max |gradient| {solver['grad_max']:.2e} > model.probe_tol = {self.probe_tol:g}. Raise "
                f"model.probe_max_iter or model.probe_l2 for a converged classifier."
            )
        with torch.no_grad():
            self.two_layer.a.copy_((v / (sd * self.two_layer.scale)).to(self.two_layer.a.dtype))
            self.output_bias.copy_((c - (v * mu / sd).sum(dim=1)).to(self.output_bias.dtype))
            self.probed_at.fill_(step)
            train_error = (y * self.scores(x).double() <= 0).double().mean()
        self.probe_report = {**solver, "train_error": float(train_error)}
        if self.trainer.is_global_zero:
            for logger in self.loggers:
                logger.log_metrics({f"probe/{k}": v for k, v in self.probe_report.items()}, step=step)
        return self.probe_report


@torch.no_grad()
def logistic_regression(
    u: Tensor, y: Tensor, l2: float, tol: float, max_iter: int
) -> tuple[Tensor, Tensor, dict[str, float]]:
    r"""Fit each member's L2-regularised logistic regression by Newton's method.

    For each member s independently, minimise

    .. math::  J_s(v, c) = \frac{1}{n}\sum_i \log\big(1 + e^{-y_{si}(u_{si} \cdot v + c)}\big)
               + \frac{\lambda}{2}\lVert v \rVert^2

    with Newton steps (the exact Hessian :math:`U^\top D U / n + \lambda I`, with
    :math:`D = \mathrm{diag}(\pi_i(1-\pi_i))`, a Cholesky solve, and backtracking until
    the Armijo condition holds), the method of choice when n >> p. A member stops
    when every entry of its gradient is at most ``tol`` in absolute value; all stop
    after ``max_iter`` iterations.

    Args:
        u: Features (S, n, p), float64.
        y: Labels in {-1, +1}, (S, n).
        l2: lambda >= 0 (the intercept c is not penalised).
        tol: Gradient tolerance.
        max_iter: Most Newton iterations.

    Returns:
        ``v`` (S, p), ``c`` (S,), and ``{"iterations", "grad_max", "objective"}``
        (the worst member's gradient, the members' mean objective).
    """
    members, n, p = u.shape
    y = y.to(u.dtype)
    v = torch.zeros(members, p, dtype=u.dtype, device=u.device)
    c = torch.zeros(members, dtype=u.dtype, device=u.device)
    eye = torch.eye(p + 1, dtype=u.dtype, device=u.device)
    ridge = l2 * eye.clone()
    ridge[p, p] = 0.0  # no penalty on the intercept

    def objective(v: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
        margins = y * (torch.bmm(u, v.unsqueeze(-1)).squeeze(-1) + c.unsqueeze(1))  # (S, n)
        return nn.functional.softplus(-margins).mean(dim=1) + 0.5 * l2 * (v * v).sum(dim=1), margins

    value, margins = objective(v, c)
    iterations = 0
    while True:
        r = -y * torch.sigmoid(-margins) / n  # (S, n): dJ/d(u.v + c) per sample
        grad = torch.cat([torch.bmm(u.transpose(1, 2), r.unsqueeze(-1)).squeeze(-1) + l2 * v, r.sum(1, True)], 1)
        grad_max = grad.abs().amax(dim=1)  # (S,)
        active = grad_max > tol
        if not bool(active.any()) or iterations >= max_iter:
            break
        iterations += 1
        pi = torch.sigmoid(margins)
        weight = pi * (1.0 - pi) / n  # (S, n)
        h_vv, h_vc = weighted_gram(u, weight)  # (S, p, p), (S, p, 1)
        hessian = (
            torch.cat(
                [torch.cat([h_vv, h_vc], 2), torch.cat([h_vc.transpose(1, 2), weight.sum(1).view(-1, 1, 1)], 2)], 1
            )
            + ridge
        )  # (S, p + 1, p + 1)
        # A whisper of damping keeps the solve defined where a feature is constant (lambda = 0).
        factor, _ = torch.linalg.cholesky_ex(hessian + 1e-12 * eye)
        direction = -torch.cholesky_solve(grad.unsqueeze(-1), factor).squeeze(-1)  # (S, p + 1)
        direction = direction * active.unsqueeze(1)  # converged members stay put
        slope = (grad * direction).sum(1)  # (S,) < 0
        step = torch.ones(members, dtype=u.dtype, device=u.device)
        for _ in range(40):  # backtracking: halve the step until J decreases enough (Armijo, c1 = 1e-4)
            new_v, new_c = v + step.unsqueeze(1) * direction[:, :p], c + step * direction[:, p]
            new_value, new_margins = objective(new_v, new_c)
            ok = new_value <= value + 1e-4 * step * slope
            if bool(ok.all()):
                break
            step = torch.where(ok, step, 0.5 * step)
        # A member whose step still failed after 40 halvings keeps its point (it is at
        # the limit of float64 and its gradient test will say so).
        v, c = torch.where(ok.unsqueeze(1), new_v, v), torch.where(ok, new_c, c)
        value, margins = torch.where(ok, new_value, value), torch.where(ok.unsqueeze(1), new_margins, margins)
    report = {"iterations": float(iterations), "grad_max": float(grad_max.max()), "objective": float(value.mean())}
    return v, c, report


#: Bytes of one block of weighted rows in :func:`weighted_gram`. A block this small is
#: served again from the allocator's heap; one (S, n, p) float64 copy per Newton iteration
#: (1.2 GB at Shi et al.'s E.1.1 size) was mapped afresh each time, its pages zeroed by the
#: kernel, and it raised the probe's peak memory by its size.
GRAM_BLOCK_BYTES = 16 * 2**20


def weighted_gram(u: Tensor, weight: Tensor, block_bytes: int = GRAM_BLOCK_BYTES) -> tuple[Tensor, Tensor]:
    r"""The Hessian's blocks :math:`U^\top D U` (S, p, p) and :math:`U^\top w` (S, p, 1), D = diag(w).

    Accumulated over blocks of rows of ``u`` (S, n, p), each weighted copy at most about
    ``block_bytes``; the sums equal the one-product form to round-off.
    """
    members, n, p = u.shape
    rows = max(1, block_bytes // max(1, members * p * u.element_size()))
    h_vv = u.new_zeros(members, p, p)
    h_vc = u.new_zeros(members, p, 1)
    for first in range(0, n, rows):
        block, w = u[:, first : first + rows], weight[:, first : first + rows].unsqueeze(-1)  # (S, r, p), (S, r, 1)
        h_vv.baddbmm_(block.transpose(1, 2), block * w)
        h_vc.baddbmm_(block.transpose(1, 2), w)
    return h_vv, h_vc
