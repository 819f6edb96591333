r"""The scheduled SGD update of featlearn's learners, apart from Lightning: testable without a Trainer.

:class:`ScheduledSGD` holds the parameter groups with their per-step rate and L2
schedules and the momentum schedule, and takes the step; :class:`DivergenceGuard` finds
the first update whose loss is NaN or infinite without a host sync per update;
:func:`member_metrics` names the per-member values a learner logs.
:class:`~featlearn.models.base.ScheduledSGDModule` composes them with Lightning's loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from pytorch_lightning.core.optimizer import LightningOptimizer
from torch import Tensor, nn

from featlearn.schedules import PointSchedules, Schedule, point_values
from featlearn.validation import check_choice

#: What a step follows: the gradient (``sgd``) or the sign of each of its coordinates (``sign``).
UPDATE_RULES = ("sgd", "sign")
#: A rate or L2 schedule: shared by every member, or one per grid point (:class:`PointSchedules`).
AnySchedule = Schedule | PointSchedules
#: A parameter group: its parameters, its rate schedule eta_g(t), its L2 schedule lambda_g(t).
Group = tuple[list[nn.Parameter], AnySchedule, AnySchedule]


class ScheduledSGD:
    r"""SGD whose every hyperparameter is a function of the step, one parameter group at a time.

    Group g takes the heavy-ball step

    .. math::

        b_t = \mu(t)\, b_{t-1} + g_t, \qquad \theta_g \leftarrow \theta_g - c\, \eta_g(t)\, b_t ,

    with :math:`g_t` the gradient of the objective, which carries the L2 terms
    :math:`\lambda_g(t) \lVert \theta_g \rVert^2` itself (:meth:`l2_terms`; no optimizer-side
    decay), c the learner's gradient scale, and :math:`b_t = g_t` at every step where
    :math:`\mu(t) = 0` (plain SGD bit for bit when :math:`\mu \equiv 0`). The rates and the
    momentum are set on torch's ``SGD`` before each step; its buffers live in the
    optimizer's state, so checkpoints keep them.

    **Per-point values.** A group's rate or L2 schedule may be a
    :class:`~featlearn.schedules.PointSchedules`: the ensemble's S = G K members are G grid
    points of K members each (dimension 0 of every parameter), and block g takes point g's
    value. Each block then steps as ``theta.add_(grad, alpha=-c eta)``, torch's own SGD
    update, and its L2 term is lambda_g ||theta_block||^2: a member's arithmetic is that of
    a run with the point's values alone, bit for bit on the CPU (tested). Per-point values
    need plain SGD (no momentum).

    **Sign SGD.** With ``rule="sign"`` every coordinate of g_t is replaced by its sign before
    the step, :math:`\theta_g \leftarrow \theta_g - c\, \eta_g(t)\, \mathrm{sign}(g_t)`
    (sign(0) = 0): the update of Kou et al. (2024) for sparse parities, on the same groups,
    schedules and per-point blocks. The sign is taken coordinate by coordinate, so the
    members stay independent. It takes plain steps (no momentum: Signum's sign of the
    buffer is another rule).

    Args:
        momentum: The momentum schedule mu(t), in [0, 1).
        rule: ``sgd`` (the gradient) or ``sign`` (its coordinates' signs), one of :data:`UPDATE_RULES`.
    """

    def __init__(self, momentum: Schedule, rule: str = "sgd") -> None:
        check_choice("model.update_rule", rule, UPDATE_RULES)
        if rule == "sign" and not momentum.is_zero:
            raise ValueError(
                "model.update_rule 'sign' takes plain sign steps: set model.momentum to 0 (or use update_rule: sgd)."
            )
        self.momentum = momentum
        #: ``sgd`` or ``sign``: what each step follows, the gradient or its signs.
        self.rule = rule
        #: The trained groups: name -> (parameters, rate schedule, L2 schedule), in optimizer order.
        self.groups: dict[str, Group] = {}

    def set_groups(self, groups: dict[str, tuple[Iterable[nn.Parameter], Schedule, Schedule]]) -> None:
        """Declare the groups; empty ones are dropped."""
        listed = {name: (list(params), lr, wd) for name, (params, lr, wd) in groups.items()}
        self.groups = {name: group for name, group in listed.items() if group[0]}
        per_point = [name for name, (_, lr, wd) in self.groups.items() if PointSchedules in (type(lr), type(wd))]
        if per_point and not self.momentum.is_zero:
            raise ValueError(
                f"Per-point values of the {per_point[0]!r} group's rate or decay need plain SGD: set model.momentum "
                f"to 0, or train the grid points as separate runs."
            )

    def optimizer(self) -> torch.optim.SGD:
        """Torch's SGD with one group per parameter group; :meth:`step` sets the rates."""
        return torch.optim.SGD([{"params": params, "lr": 0.0} for params, _, _ in self.groups.values()], lr=0.0)

    def l2_terms(self, step: int) -> list[Tensor]:
        """The nonzero L2 terms lambda_g(step) ||theta_g||^2, one per group, in group order."""
        terms = []
        for params, _, wd in self.groups.values():
            lam = wd(step)
            if isinstance(lam, tuple):  # lambda of each member's point, (S, 1, ...) against theta (S, ...)
                terms.append(sum((_member_column(lam, p) * (p * p)).sum() for p in params))
            elif lam:
                terms.append(lam * sum((p * p).sum() for p in params))
        return terms

    def idle_parameters(self, step: int, processes: int = 1) -> list[nn.Parameter]:
        """The parameters of the groups whose rate is 0 at ``step``: the update needs no gradient for them.

        A plain SGD step at rate 0 leaves its parameters unchanged whatever their gradient
        (and decay) is, so they may stop requiring gradients for that one update and
        autograd skip their backward (in Shi et al.'s process, the first layer's from step 3
        on, half of each step's arithmetic): the weights are exactly those of computing it.
        None with momentum (a rate-0 group still moves its buffer) or with several
        processes (DDP waits for a gradient of every parameter it was given).
        """
        if not self.momentum.is_zero or processes > 1:
            return []
        return [p for params, lr, _ in self.groups.values() if lr(step) == 0 for p in params]

    def step(self, optimizer: torch.optim.Optimizer | LightningOptimizer, step: int, scale: float) -> None:
        """Set every group's rate c * eta_g(step) and momentum mu(step), and step on the gradients in place.

        ``optimizer`` is :meth:`optimizer`'s, or Lightning's wrapper of it (its ``step`` is
        the one taken then, so strategies and precision plugins see it).
        """
        inner = optimizer.optimizer if isinstance(optimizer, LightningOptimizer) else optimizer
        if self.rule == "sign":
            _sign_gradients(inner)
        momentum = self.momentum(step)
        for group, (params, lr, _) in zip(inner.param_groups, self.groups.values(), strict=True):
            rate = lr(step)
            if isinstance(rate, tuple):  # per-point rates: each block steps here; torch's step skips them
                _step_per_point(params, rate, scale)
                rate = 0.0
            group["lr"] = scale * rate
            group["momentum"] = momentum
        optimizer.step()
        if momentum == 0 and not self.momentum.is_zero:
            # torch's SGD leaves its buffer alone at momentum 0 and restarts it from the gradient
            # when momentum returns; the heavy ball b_t = mu(t) b_{t-1} + g_t has b_t = g_t here.
            for group in inner.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        inner.state[p]["momentum_buffer"] = p.grad.detach().clone()

    def named_schedules(self) -> dict[str, AnySchedule]:
        """Every schedule by log name: each group's ``lr_<g>`` and ``weight_decay_<g>``, then ``momentum``."""
        named = {}
        for name, (_, lr, wd) in self.groups.items():
            named[f"lr_{name}"], named[f"weight_decay_{name}"] = lr, wd
        named["momentum"] = self.momentum
        return named


def named_values(name: str, value: float | tuple[float, ...]) -> dict[str, float]:
    """``{name: value}``, or ``{name_point0: v0, ...}`` for per-point values: how they are logged."""
    if isinstance(value, tuple):
        return {f"{name}_point{g}": v for g, v in enumerate(value)}
    return {name: value}


def _member_column(values: tuple[float, ...], like: Tensor) -> Tensor:
    """Per-point ``values`` as one value per member, shaped (S, 1, ...) to broadcast against ``like`` (S, ...)."""
    column = torch.tensor(point_values(values, like.shape[0]), dtype=like.dtype, device=like.device)
    return column.view(-1, *([1] * (like.dim() - 1)))


@torch.no_grad()
def _sign_gradients(optimizer: torch.optim.Optimizer) -> None:
    """Replace every gradient by the signs of its coordinates, in place (sign SGD)."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                p.grad.sign_()


@torch.no_grad()
def _step_per_point(params: list[nn.Parameter], rates: tuple[float, ...], scale: float) -> None:
    """theta_block -= c eta_g grad_block for each point's block of members, as torch's SGD steps; then drop the grads.

    ``theta.add_(grad, alpha=-lr)`` is the update of ``torch.optim.SGD`` without momentum,
    weight decay or foreach, so a block's values are those of a run of its point alone.
    """
    for p in params:
        if p.grad is None:
            continue
        block = p.shape[0] // len(rates)
        for g, rate in enumerate(rates):
            if rate:
                p[g * block : (g + 1) * block].add_(p.grad[g * block : (g + 1) * block], alpha=-(scale * rate))
        p.grad = None


class DivergenceGuard:
    """Finds the first update whose loss is NaN or infinite, checking many updates in one go.

    The per-member losses (S,) of the updates since the last check wait here on their
    device; :meth:`check` looks at all of them at once (on logging steps, every
    :attr:`check_every` updates and at the end), so training pays no host sync per
    update and the error still names the exact step.
    """

    #: The most updates whose losses wait for a check (bounds their memory).
    check_every = 256

    def __init__(self) -> None:
        #: The waiting losses, one (S,) tensor per update, the first from :attr:`first_step`.
        self.pending: list[Tensor] = []
        self.first_step = 0

    def add(self, losses: Tensor, step: int) -> bool:
        """Keep update ``step``'s losses (S,); True when :attr:`check_every` of them wait."""
        if not self.pending:
            self.first_step = step
        self.pending.append(losses)
        return len(self.pending) >= self.check_every

    def clear(self) -> None:
        """Forget the waiting losses (left over from an interrupted fit)."""
        self.pending.clear()

    def diverged_members(self, reduce: Callable[[Tensor], Tensor]) -> dict[int, int]:
        """The members with a NaN or infinite waiting loss: member -> its first such step; then forget them all.

        For ensembles whose members may diverge alone (a tuning grid's large rates): nothing raises.
        """
        if not self.pending:
            return {}
        finite = torch.isfinite(reduce(torch.stack(self.pending)))  # (n, S)
        self.pending.clear()
        if bool(finite.all()):
            return {}
        bad = (~finite).nonzero()  # (k, 2): (update, member), in update order
        found: dict[int, int] = {}
        for update, member in bad.tolist():
            found.setdefault(member, self.first_step + update)
        return found

    def check(self, reduce: Callable[[Tensor], Tensor], describe: Callable[[int], str]) -> None:
        """Raise at the first waiting update with a NaN or infinite loss; then forget them all.

        Args:
            reduce: Maps the stacked losses (n, S) to what every process sees (the mean over
                processes; NaN survives it), so all processes raise together.
            describe: The hyperparameters in effect at a step, for the message.

        Raises:
            FloatingPointError: Naming the step and what was in effect then.
        """
        found = self.diverged_members(reduce)
        if found:
            bad = min(found.values())
            raise FloatingPointError(
                f"Training diverged: the loss became NaN or infinite at update step {bad} "
                f"(in effect then: {describe(bad)}). Lower the learning rate from that step (TwoLayerNet: "
                f"model.training.lr / lr_w / lr_a; the classifiers: model.lr), or shrink the initialisation."
            )


def member_metrics(split: str, name: str, values: Tensor, max_logged: int) -> dict[str, Tensor]:
    """Min and max across members of ``values`` (S,), and each member's value when S <= ``max_logged``.

    Tags ``{split}/{name}_min``, ``{split}/{name}_max`` and ``{split}_members/{name}_{s}``;
    nothing for a single member (the mean is the value).
    """
    if values.numel() == 1:
        return {}
    out = {f"{split}/{name}_min": values.min(), f"{split}/{name}_max": values.max()}
    if values.numel() <= max_logged:
        out.update({f"{split}_members/{name}_{s}": v for s, v in enumerate(values)})
    return out
