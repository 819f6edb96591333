"""A learner for any ``nn.Module`` with C class scores, trained by scheduled SGD on the cross-entropy."""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from featlearn.batches import batch_unlabelled
from featlearn.contracts import ClassData, EvaluationData
from featlearn.models.classifier import NetworkEnsemble, member_outputs
from featlearn.schedules import ScheduleSpec, as_schedule
from featlearn.validation import check_int, check_number


def balance_entropy_regularizer(logits: Tensor, entropy_weight: float) -> Tensor:
    r"""Shi et al.'s regulariser R = R1 + lambda R2 on unlabelled inputs (eqs. 291-293), per member.

    With p_i = softmax(g(x_i)) the class probabilities of unlabelled input i (of m) and
    :math:`\bar p = \frac1m \sum_i p_i`,

    .. math::

        R_1 = \sum_j \bar p_j \ln \bar p_j, \qquad
        R_2 = -\frac1m \sum_i \sum_j p_{ij} \ln p_{ij}.

    Minimising R1 (the negative entropy of the average prediction) keeps every class
    equally likely on average; minimising R2 (the mean entropy of each prediction)
    pushes each prediction away from uniform.

    Args:
        logits: (S, m, C) class scores of every member on its unlabelled inputs.
        entropy_weight: lambda.

    Returns:
        (S,) the regulariser of each member.
    """
    log_p = F.log_softmax(logits, dim=-1)  # (S, m, C)
    p = log_p.exp()
    mean_p = p.mean(dim=1)  # (S, C)
    r1 = (mean_p * torch.log(mean_p.clamp_min(torch.finfo(mean_p.dtype).tiny))).sum(-1)
    r2 = -(p * log_p).sum(-1).mean(-1)
    return r1 + entropy_weight * r2


class MulticlassClassifier(NetworkEnsemble):
    r"""Trains S copies of a network ``g: x -> R^C`` by scheduled SGD on the cross-entropy.

    Member s minimises

    .. math::

        L_s = \frac1B \sum_i \big(-\log \operatorname{softmax}(g_s(x_i))_{y_i}\big)
              + \lambda(t) \lVert \theta_s \rVert^2 + \rho(t)\, R(g_s; u_s),

    with the step :math:`\theta_s \leftarrow \theta_s - \eta(t) b_s` (b the heavy-ball
    buffer of ``momentum``, see :class:`ScheduledSGDModule`) and every hyperparameter a
    per-step schedule. Labels y are class indices 0..C-1. R is
    :func:`balance_entropy_regularizer` on the unlabelled inputs u_s that the batch
    carries (:attr:`TrainBatch.unlabelled <featlearn.batches.TrainBatch>`): Shi et al.'s
    teacher objective of Algorithm 1; with ``regularizer_weight`` 0 (the default) the
    learner is a plain multi-class classifier. The network is any ``nn.Module`` with C
    outputs: :class:`~featlearn.models.fc.QuadraticFC` (FC(m)) or
    :class:`~featlearn.models.resnet.ScaledResNet18` (ResNet(m)) with ``num_outputs: C``.

    Member s is the network re-initialised from the stream ``(seed + s, INIT)``.
    Updates run in training mode, every evaluation in evaluation mode (batch norm on
    its running statistics), as in :class:`~featlearn.models.ModuleClassifier`.

    Args:
        network: The network of one member: one sample's input shape in, C scores out.
        num_classes: C; the network must give C outputs and the labels lie in 0..C-1.
        lr: *schedule*, the learning rate eta(t).
        weight_decay: *schedule*, lambda(t) (L2 on every parameter, written in the loss).
        momentum: *schedule*, SGD momentum mu(t) in [0, 1).
        regularizer_weight: *schedule*, rho(t) >= 0, the weight of R on unlabelled inputs.
        entropy_weight: lambda of R = R1 + lambda R2 (eq. 291), >= 0.
        ensemble_size: S independent copies trained together.
        seed: Initialisation seed; default: the global seed.
        max_members_logged: Per-member curves are logged when S is at most this.
        linearize: Train the network's linearisation at its initialisation (its NTK regime).
        update_rule: ``sgd`` or ``sign`` (sign SGD; see :class:`~featlearn.models.base.ScheduledSGDModule`).
    """

    data_requirements = (EvaluationData, ClassData)

    def __init__(
        self,
        network: nn.Module,
        num_classes: int,
        lr: ScheduleSpec,
        weight_decay: ScheduleSpec = 0.0,
        momentum: ScheduleSpec = 0.0,
        regularizer_weight: ScheduleSpec = 0.0,
        entropy_weight: float = 1.0,
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
            linearize=linearize,
            update_rule=update_rule,
        )
        self.num_classes = check_int("model.num_classes", num_classes, 2)
        self.entropy_weight = float(check_number("model.entropy_weight", entropy_weight, 0.0))
        self.regularizer_weight = as_schedule(regularizer_weight, "model.regularizer_weight")
        self.loss_name = "cross_entropy"
        self.margin_loss = self.margin_loss_derivative_abs = None  # no margin y f with C classes
        self.save_hyperparameters(ignore=["network"])

    # ------------------------------------------------------------------ outputs
    def network_outputs(self, x: Tensor) -> Tensor:
        """Logits of every member: x (S, B, ...) -> (S, B, C)."""
        logits = member_outputs(self.net, x)
        if logits.shape[2] != self.num_classes:
            raise ValueError(
                f"model.network gives {logits.shape[2]} outputs but model.num_classes is {self.num_classes}: "
                f"set the network's num_outputs to {self.num_classes}."
            )
        return logits

    def scores(self, x: Tensor) -> Tensor:
        """Logits (S, B, C) in evaluation mode."""
        return super().scores(x)

    @torch.no_grad()
    def predict_classes(self, x: Tensor) -> Tensor:
        """The predicted class of every member: x (S, B, ...) -> (S, B) indices."""
        return self.scores(x).argmax(-1)

    # ------------------------------------------------------------------ objective
    def member_losses(self, f: Tensor, y: Tensor) -> Tensor:
        """Mean cross-entropy of each member: logits f (S, B, C), labels y (S, B) -> (S,)."""
        members, batch, classes = f.shape
        losses = F.cross_entropy(f.reshape(members * batch, classes), y.reshape(-1).long(), reduction="none")
        return losses.view(members, batch).mean(dim=1)

    def extra_objective(self, batch: tuple[Tensor, Tensor], step: int) -> Tensor | None:
        """rho(t) times the sum over members of R on the batch's unlabelled inputs (when rho(t) > 0)."""
        weight = self.regularizer_weight(step)
        if not weight:
            return None
        unlabelled = batch_unlabelled(batch)
        if unlabelled is None:
            raise ValueError(
                f"model.regularizer_weight is {weight:g} at step {step} but the data model's batches carry no "
                f"unlabelled inputs: give the data model an unlabelled set, or set model.regularizer_weight: 0."
            )
        return weight * balance_entropy_regularizer(self.network_outputs(unlabelled), self.entropy_weight).sum()

    #: The regulariser's weight is logged only where it is used.
    QUIET_WHEN_ZERO: ClassVar[frozenset[str]] = NetworkEnsemble.QUIET_WHEN_ZERO | {"regularizer_weight"}

    def named_schedules(self) -> dict:  # noqa: D102
        return {**super().named_schedules(), "regularizer_weight": self.regularizer_weight}

    def connect_data(self, data) -> None:
        """Also refuse a data model with another number of classes, before anything runs."""
        super().connect_data(data)
        classes = None if data is None else data.num_classes
        if classes is not None and classes != self.num_classes:
            raise ValueError(
                f"The data model has {classes} classes but model.num_classes is {self.num_classes}: set "
                f"model.init_args.num_classes (and the network's num_outputs) to {classes}."
            )

    # ------------------------------------------------------------------ evaluation
    def evaluate_scores(self, logits: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Per-member cross-entropy and 0-1 error of the arg-max class of logits (S, B, C): (S,), (S,)."""
        error = (logits.argmax(-1) != y.long()).to(logits.dtype).mean(dim=1)
        return self.member_losses(logits, y), error
