r"""One Step / Two Step / k Step: the best linear classifier on features learned in k steps."""

from __future__ import annotations

import torch
from pytorch_lightning.utilities import rank_zero_warn
from torch import Tensor, nn

from featlearn.contracts import EvaluationData, ProbeData
from featlearn.models.two_layer import TwoLayerNet
from featlearn.validation import check_choice, check_int, check_number


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

    **A first-order solver, to test conditioning.** ``probe_solver: sgd`` fits the same
    classifier by minibatch SGD on the hinge loss :math:`\max(0, 1 - y_i (v \cdot u_i + c))`
    (the process's loss), ``probe_sgd_steps`` steps of ``probe_sgd_batch`` samples at rate
    ``probe_sgd_lr``, from v = 0, c = 0. With ``probe_whiten`` the standardised features are
    whitened first, :math:`u \mapsto L^\top u` with :math:`L L^\top = (\hat\Sigma +
    \epsilon I)^{-1}` (:math:`\hat\Sigma` their covariance on the training set), so that
    every direction has unit second moment: the rate then moves every direction alike. Beside
    the process's own readout (SGD on the raw features), the three say whether a first-order
    readout's miss is the features' conditioning (raw features fail, whitened succeed) or the
    features themselves (all fail, as Newton's would). Not a baseline of the paper.

    It is the converged reading of Shi et al.'s One Step (k = 1) and Two Step (k = 2)
    baselines (Appendix E: "fix the weight of the 1st layer after the first step/second
    step ... and train the best classifiers on top of them"): compare's "One Step" and
    "Two Step" columns. compare's "One Step (SGD readout)" and "Two Step (SGD readout)"
    run the process's own classifier stage on the same features instead (the first layer
    frozen, the second trained by the process's rates and loss to T): featlearn's own check,
    shown beside the paper's numbers, while the paper's rows are this class's ("the best
    classifiers"). It works for any data model.

    Args:
        *args: :class:`TwoLayerNet`'s arguments.
        probe_l2: lambda >= 0, the ridge penalty on v (standardised features).
        probe_max_iter: Most Newton iterations.
        probe_tol: Gradient tolerance of the stopping rule.
        probe_samples: Size of the fitting sample in online mode (the training set
            is used in finite-sample mode).
        probe_solver: ``newton`` (the converged logistic regression, the default) or
            ``sgd`` (minibatch SGD on the hinge loss; see above).
        probe_whiten: With ``sgd``: whiten the standardised features first.
        probe_sgd_lr: With ``sgd``: the rate, > 0.
        probe_sgd_steps: With ``sgd``: the number of steps, >= 1.
        probe_sgd_batch: With ``sgd``: samples per step, >= 1 (drawn with replacement).
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
        probe_solver: str = "newton",
        probe_whiten: bool = False,
        probe_sgd_lr: float = 1.0,
        probe_sgd_steps: int = 600,
        probe_sgd_batch: int = 1000,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.probe_solver = check_choice("model.probe_solver", probe_solver, PROBE_SOLVERS)
        if not isinstance(probe_whiten, bool) or (probe_whiten and probe_solver != "sgd"):
            raise ValueError(
                f"model.probe_whiten must be true or false, and true only with model.probe_solver: sgd (Newton's "
                f"method is invariant to a linear change of the features); got {probe_whiten!r} with "
                f"{probe_solver!r}."
            )
        self.probe_whiten = probe_whiten
        self.probe_sgd_lr = check_number("model.probe_sgd_lr", probe_sgd_lr, 0.0, strict=True)
        self.probe_sgd_steps = check_int("model.probe_sgd_steps", probe_sgd_steps, 1)
        self.probe_sgd_batch = check_int("model.probe_sgd_batch", probe_sgd_batch, 1)
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
        if self.probe_solver == "newton":
            v, c, solver = logistic_regression(u, y, self.probe_l2, self.probe_tol, self.probe_max_iter)
            if solver["grad_max"] > self.probe_tol:
                rank_zero_warn(
                    f"SteppedFeatureProbe: Newton's method stopped after {solver['iterations']:.0f} iterations "
                    f"with max |gradient| {solver['grad_max']:.2e} > model.probe_tol = {self.probe_tol:g}. Raise "
                    f"model.probe_max_iter or model.probe_l2 for a converged classifier."
                )
        else:
            whitening = whitening_map(u) if self.probe_whiten else None  # (S, p, p)
            z = u if whitening is None else torch.bmm(u, whitening)
            generator = torch.Generator(device="cpu").manual_seed(int(torch.initial_seed()) % 2**63)
            v, c, solver = hinge_sgd(z, y, self.probe_sgd_lr, self.probe_sgd_steps, self.probe_sgd_batch, generator)
            if whitening is not None:  # back to the standardised features: v . (L^T u) = (L v) . u
                v = torch.bmm(whitening, v.unsqueeze(-1)).squeeze(-1)
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


#: The probe's solvers: the converged logistic regression, or first-order SGD on the hinge loss.
PROBE_SOLVERS = ("newton", "sgd")


@torch.no_grad()
def whitening_map(u: Tensor, eps: float = 1e-8) -> Tensor:
    r"""L (S, p, p) with :math:`L L^\top = (\hat\Sigma + \epsilon I)^{-1}`, :math:`\hat\Sigma = U^\top U / n`.

    For centred features u (S, n, p), :math:`z = L^\top u` has second moment
    :math:`L^\top \hat\Sigma L \approx I`: every direction is on one scale. ``eps`` keeps the
    inverse defined where features are collinear (dead units are constant, and standardised
    to 0).
    """
    members, n, p = u.shape
    eye = torch.eye(p, dtype=u.dtype, device=u.device)
    ones = u.new_ones(members, n)
    sigma, _ = weighted_gram(u, ones / n)  # (S, p, p)
    return torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(sigma + eps * eye)))


@torch.no_grad()
def hinge_sgd(
    u: Tensor, y: Tensor, lr: float, steps: int, batch: int, generator: torch.Generator
) -> tuple[Tensor, Tensor, dict[str, float]]:
    r"""Minibatch SGD on the hinge loss of a linear classifier with an intercept, from 0.

    Each member s takes ``steps`` steps on
    :math:`\frac1B \sum_{i \in \text{batch}} \max(0, 1 - y_{si}(u_{si} \cdot v + c))`, the
    batch drawn with replacement from its n rows (the members share the draws).

    Args:
        u: Features (S, n, p).
        y: Labels in {-1, +1}, (S, n).
        lr: The rate.
        steps: The number of steps.
        batch: Samples per step.
        generator: The draws' generator (on the CPU).

    Returns:
        ``v`` (S, p), ``c`` (S,), and ``{"iterations", "objective"}`` (the members' mean hinge
        loss on all n rows at the end).
    """
    members, n, p = u.shape
    y = y.to(u.dtype)
    v = u.new_zeros(members, p)
    c = u.new_zeros(members)
    for _ in range(steps):
        rows = torch.randint(0, n, (batch,), generator=generator).to(u.device)
        ub, yb = u[:, rows], y[:, rows]  # (S, B, p), (S, B)
        margins = yb * (torch.bmm(ub, v.unsqueeze(-1)).squeeze(-1) + c.unsqueeze(1))
        r = -yb * (margins < 1).to(u.dtype) / batch  # (S, B): d loss / d score
        v -= lr * torch.bmm(ub.transpose(1, 2), r.unsqueeze(-1)).squeeze(-1)
        c -= lr * r.sum(dim=1)
    margins = y * (torch.bmm(u, v.unsqueeze(-1)).squeeze(-1) + c.unsqueeze(1))
    loss = torch.clamp(1 - margins, min=0).mean(dim=1)
    return v, c, {"iterations": float(steps), "objective": float(loss.mean())}


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
