"""A learner for any ``nn.Module`` binary classifier, trained by scheduled SGD."""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from featlearn.batches import SetRows
from featlearn.models.base import ScheduledSGDModule
from featlearn.models.linearize import Linearized
from featlearn.schedules import ScheduleSpec, as_schedule
from featlearn.seeding import INIT, derive_seed
from featlearn.validation import check_bool, check_int


def initialised_copies(network: nn.Module, seed: int, count: int) -> nn.ModuleList:
    """``count`` copies of ``network``, copy s re-initialised from the stream ``(seed + s, INIT)``.

    Every submodule's ``reset_parameters`` runs, children first and the network itself
    last (its own scheme, if any, has the last word), so copy s equals the network of a
    single run with seed ``seed + s``.
    """
    members = []
    for s in range(count):
        member = copy.deepcopy(network)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed + s, INIT))
            for module in reversed(list(member.modules())):
                if callable(getattr(module, "reset_parameters", None)):
                    module.reset_parameters()
        members.append(member)
    return nn.ModuleList(members)


def member_outputs(members: nn.ModuleList, x: Tensor) -> Tensor:
    """Every member on its own inputs: x (S, B, ...) -> (S, B, outputs).

    Raises:
        ValueError: The network cannot take inputs of this shape, or gives other than (B, outputs).
    """
    try:
        outs = [member(x[s]) for s, member in enumerate(members)]
    except RuntimeError as error:
        if "channels" not in str(error) and "shape" not in str(error) and "size" not in str(error):
            raise
        raise ValueError(
            f"model.network cannot take the data model's inputs of shape {tuple(x.shape[2:])} per sample "
            f"({error}): set the network's input size to match (e.g. ScaledResNet18's in_channels: "
            f"{x.shape[2] if x.dim() == 5 else '?'}, QuadraticFC's in_features), or flatten the images for a "
            f"fully connected network."
        ) from error
    for out in outs:
        if out.dim() != 2:
            raise ValueError(f"model.network must give (B, outputs) per batch; it gave {tuple(out.shape)}.")
    return torch.stack(outs)


class NetworkEnsemble(ScheduledSGDModule):
    """The part of :class:`ModuleClassifier` and :class:`~featlearn.models.MulticlassClassifier` they share.

    S copies of a given ``nn.Module`` (:func:`initialised_copies`) as ``self.net``, one
    parameter group with rate, decay and momentum schedules, updates in training mode,
    every evaluation (:meth:`scores`) in evaluation mode (batch norm on its running
    statistics, so diagnostics never move them), and the networks' convolutions as
    :meth:`filter_banks`. A subclass states the loss and :meth:`network_outputs`.

    With ``linearize``, each member is the lazy version of its network,
    :class:`~featlearn.models.linearize.Linearized` at its initialisation: the NTK
    baseline of any network (FC(m), ResNet(m), a user's own), trained by the same schedules.
    """

    def __init__(
        self,
        network: nn.Module,
        lr: ScheduleSpec,
        weight_decay: ScheduleSpec,
        momentum: ScheduleSpec,
        ensemble_size: int,
        seed: int | None,
        max_members_logged: int,
        loss: str = "logistic",
        linearize: bool = False,
        update_rule: str = "sgd",
    ) -> None:
        super().__init__(
            loss=loss,
            ensemble_size=ensemble_size,
            max_members_logged=max_members_logged,
            momentum=momentum,
            update_rule=update_rule,
        )
        if not isinstance(network, nn.Module):
            raise ValueError(f"model.network must be an nn.Module (a class_path and init_args), got {network!r}.")
        self.seed = int(torch.initial_seed()) % (2**62) if seed is None else check_int("model.seed", seed, 0)
        self.linearize = check_bool("model.linearize", linearize)
        members = initialised_copies(network, self.seed, ensemble_size)
        # Lazy: member s is its network's linearisation at its initialisation (theta_0 frozen inside).
        self.net = nn.ModuleList(Linearized(m) for m in members) if linearize else members
        params = [p for p in self.net.parameters() if p.requires_grad]
        self.sgd.set_groups(
            {"all": (params, as_schedule(lr, "model.lr"), as_schedule(weight_decay, "model.weight_decay"))}
        )

    def member_network(self, member: int) -> nn.Module:
        """Member ``member``'s own network (a copy of the one the learner was given; its trained parameters).

        For a linearised learner, the network whose parameters theta the lazy model trains.
        """
        return self.net[member].base if self.linearize else self.net[member]

    def network_outputs(self, x: Tensor) -> Tensor:
        """Every member's outputs on its inputs x (S, B, ...): what a subclass states."""
        raise NotImplementedError

    def filter_banks(self, member: int = 0, gradients: bool = False) -> dict[str, Tensor] | None:
        """Every ``nn.Conv2d`` of member ``member`` by module name: (out_channels, in_channels * kh * kw)."""
        banks = {}
        for name, module in self.member_network(member).named_modules():
            if isinstance(module, nn.Conv2d):
                weight = module.weight
                value = weight.grad if gradients else weight
                if value is None:
                    value = torch.zeros_like(weight)
                banks[name] = value.detach().flatten(1)
        return banks or None

    def training_output(self, x: Tensor, step: int, rows: SetRows | None = None) -> Tensor:  # noqa: D102
        return self.network_outputs(x)

    def scores(self, x: Tensor) -> Tensor:
        """The outputs in evaluation mode (batch norm on its running statistics)."""
        self.check_batch(x)  # the training update checks its batches itself
        was_training = self.net.training
        self.net.eval()
        try:
            return self.network_outputs(x)
        finally:
            self.net.train(was_training)

    def forward(self, x: Tensor) -> Tensor:
        """:meth:`scores` for x (S, B, ...)."""
        return self.scores(x)


class ModuleClassifier(NetworkEnsemble):
    r"""Trains S copies of a network ``g: x -> R`` by scheduled SGD on a margin loss.

    Member s minimises :math:`\frac1B \sum_i \ell(y_i\, g_s(x_i)) + \lambda(t) \lVert \theta_s
    \rVert^2` with the step :math:`\theta_s \leftarrow \theta_s - \eta(t)\, b_s`, b the
    heavy-ball buffer of ``momentum`` (see :class:`ScheduledSGDModule`), every
    hyperparameter a per-step schedule. The network is any ``nn.Module`` with one output
    unit, e.g. :class:`~featlearn.models.resnet.ScaledResNet18` (Shi et al.'s ResNet(m) of
    E.4.1) on images (S, B, C, H, W). Member s is the given network re-initialised from
    the stream ``(seed + s, INIT)`` (every submodule's ``reset_parameters``), so members
    differ in initialisation and, through the data model, minibatch order.

    Batch norm and other train-time behaviour: updates run in training mode; every
    evaluation (:meth:`scores`, used by diagnostics and the test set) in evaluation mode,
    so diagnostics during training never move the running statistics.

    Args:
        network: The network of one member: input one sample's shape, one output unit.
        lr: *schedule*, the learning rate eta(t).
        weight_decay: *schedule*, lambda(t) (L2 on every parameter, written in the loss).
        momentum: *schedule*, SGD momentum mu(t) in [0, 1).
        loss: ``logistic`` or ``hinge``.
        ensemble_size: S independent copies trained together.
        seed: Initialisation seed; default: the global seed.
        max_members_logged: Per-member curves are logged when S is at most this.
        linearize: Train the network's linearisation at its initialisation instead (the
            NTK baseline of this network: :class:`~featlearn.models.linearize.Linearized`).
        update_rule: ``sgd`` or ``sign`` (sign SGD; see :class:`ScheduledSGDModule`).
    """

    def __init__(
        self,
        network: nn.Module,
        lr: ScheduleSpec,
        weight_decay: ScheduleSpec = 0.0,
        momentum: ScheduleSpec = 0.0,
        loss: str = "logistic",
        ensemble_size: int = 1,
        seed: int | None = None,
        max_members_logged: int = 8,
        linearize: bool = False,
        update_rule: str = "sgd",
    ) -> None:
        super().__init__(
            network,
            lr,
            weight_decay,
            momentum,
            ensemble_size,
            seed,
            max_members_logged,
            loss=loss,
            linearize=linearize,
            update_rule=update_rule,
        )
        self.save_hyperparameters(ignore=["network"])

    def network_outputs(self, x: Tensor) -> Tensor:
        """G_s(x_s) for every member: x (S, B, ...) -> (S, B)."""
        scores = member_outputs(self.net, x)  # (S, B, outputs)
        if scores.shape[2] != 1:
            raise ValueError(
                f"model.network must give one output unit per sample, (B, 1); it gave (B, {scores.shape[2]}). "
                f"Set its num_outputs to 1 for a binary task (MulticlassClassifier trains C outputs)."
            )
        return scores[..., 0]
