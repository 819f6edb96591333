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

from featlearn.schedules import Schedule

#: A parameter group: its parameters, its rate schedule eta_g(t), its L2 schedule lambda_g(t).
Group = tuple[list[nn.Parameter], Schedule, Schedule]


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

    Args:
        momentum: The momentum schedule mu(t), in [0, 1).
    """

    def __init__(self, momentum: Schedule) -> None:
        self.momentum = momentum
        #: The trained groups: name -> (parameters, rate schedule, L2 schedule), in optimizer order.
        self.groups: dict[str, Group] = {}

    def set_groups(self, groups: dict[str, tuple[Iterable[nn.Parameter], Schedule, Schedule]]) -> None:
        """Declare the groups; empty ones are dropped."""
        listed = {name: (list(params), lr, wd) for name, (params, lr, wd) in groups.items()}
        self.groups = {name: group for name, group in listed.items() if group[0]}

    def optimizer(self) -> torch.optim.SGD:
        """Torch's SGD with one group per parameter group; :meth:`step` sets the rates."""
        return torch.optim.SGD([{"params": params, "lr": 0.0} for params, _, _ in self.groups.values()], lr=0.0)

    def l2_terms(self, step: int) -> list[Tensor]:
        """The nonzero L2 terms lambda_g(step) ||theta_g||^2, one per group, in group order."""
        terms = []
        for params, _, wd in self.groups.values():
            lam = wd(step)
            if lam:
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
        momentum = self.momentum(step)
        for group, (_, lr, _) in zip(inner.param_groups, self.groups.values(), strict=True):
            group["lr"] = scale * lr(step)
            group["momentum"] = momentum
        optimizer.step()
        if momentum == 0 and not self.momentum.is_zero:
            # torch's SGD leaves its buffer alone at momentum 0 and restarts it from the gradient
            # when momentum returns; the heavy ball b_t = mu(t) b_{t-1} + g_t has b_t = g_t here.
            for group in inner.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        inner.state[p]["momentum_buffer"] = p.grad.detach().clone()

    def values(self, step: int) -> dict[str, float]:
        """The rates, decays and (when scheduled) momentum in effect at ``step``, by log name."""
        values = {}
        for name, (_, lr, wd) in self.groups.items():
            values[f"lr_{name}"] = lr(step)
            values[f"weight_decay_{name}"] = wd(step)
        if not self.momentum.is_zero:
            values["momentum"] = self.momentum(step)
        return values

    def schedules(self) -> list[Schedule]:
        """Every schedule: the groups' rates and decays, then the momentum."""
        return [s for _, lr, wd in self.groups.values() for s in (lr, wd)] + [self.momentum]


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

    def check(self, reduce: Callable[[Tensor], Tensor], describe: Callable[[int], str]) -> None:
        """Raise at the first waiting update with a NaN or infinite loss; then forget them all.

        Args:
            reduce: Maps the stacked losses (n, S) to what every process sees (the mean over
                processes; NaN survives it), so all processes raise together.
            describe: The hyperparameters in effect at a step, for the message.

        Raises:
            FloatingPointError: Naming the step and what was in effect then.
        """
        if not self.pending:
            return
        finite = torch.isfinite(reduce(torch.stack(self.pending))).all(dim=1)  # (n,)
        self.pending.clear()
        if not bool(finite.all()):
            bad = self.first_step + int((~finite).nonzero()[0, 0])
            raise FloatingPointError(
                f"Training diverged: the loss became NaN or infinite at update step {bad} "
                f"(in effect then: {describe(bad)}). Lower the learning rate (model.lr / lr_w / lr_a) "
                f"from that step, or shrink the initialisation."
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
