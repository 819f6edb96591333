r"""The NTK baseline: a learner that trains the two-layer network linearised at its initialisation."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from featlearn.batches import SetRows, TrainBatch, batch_rows, take_rows
from featlearn.models.linearize import Linearized
from featlearn.models.networks import LinearizedTwoLayerNetwork, TwoLayerNetwork, repeat_streams
from featlearn.models.two_layer import TwoLayerNet
from featlearn.validation import check_choice, check_int

#: ``linear``: train theta (cost about two forward passes); ``kernel``: train the dual
#: coefficients against the n x n tangent-kernel matrices of the training set.
FORMS = ("linear", "kernel")
#: How the linear form's tangent term is computed (the same predictor either way).
JACOBIANS = ("closed_form", "autodiff")


class LinearizedTwoLayerNet(TwoLayerNet):
    r"""Trains :class:`~featlearn.models.networks.LinearizedTwoLayerNetwork`: the NTK baseline.

    The network is the two-layer network replaced by its first-order Taylor expansion
    at initialisation, f0 + grad f0 . (theta - theta0); training it by SGD on the loss
    is training the kernel machine with the network's neural tangent kernel at
    initialisation (the NTK baseline of Shi et al. 2022, Appendix E). Every argument
    but the two below is :class:`TwoLayerNet`'s, with the same meaning: theta is the
    two-layer network's parameters, so the same schedules and L2 terms
    lambda ||theta||^2 apply.

    ``form: kernel`` trains the same predictor in its dual form, for small training
    sets: the n x n kernel matrices K_g of the training set (one per trained group
    g in {w, b, a}, the network's ``ntk_blocks``) and coefficients alpha_g (S, n), with
    theta_g - theta_0g = sum_i alpha_gi grad_g f0(x_i) (see :meth:`setup`). Its
    predictions equal the linear form's step for step; it exists to study the kernel
    itself (:meth:`ntk`). It needs a finite training set, no L2 term and no noise.

    ``jacobian: autodiff`` computes the linear form with the generic transform
    :class:`~featlearn.models.linearize.Linearized` (``torch.func.jvp``) instead of the
    closed form: the same predictor for any network, kept here to check one against the other.

    Args:
        *args: :class:`TwoLayerNet`'s arguments.
        form: ``linear`` (train theta) or ``kernel`` (train the dual coefficients).
        jacobian: ``closed_form`` (:class:`~featlearn.models.networks.LinearizedTwoLayerNetwork`,
            the default: faster) or ``autodiff`` (:class:`~featlearn.models.linearize.Linearized`).
        kernel_max_samples: Largest training set the kernel form accepts (memory:
            up to 3 S n^2 floats).
        **kwargs: :class:`TwoLayerNet`'s keyword arguments.
    """

    def __init__(
        self, *args, form: str = "linear", jacobian: str = "closed_form", kernel_max_samples: int = 5000, **kwargs
    ) -> None:
        super().__init__(*args, **kwargs)
        self.form = check_choice("model.form", form, FORMS)
        self.jacobian = check_choice("model.jacobian", jacobian, JACOBIANS)
        if jacobian == "autodiff":
            if form == "kernel":
                raise ValueError(
                    "model.form: kernel needs the closed form's kernel blocks: set model.jacobian: closed_form "
                    "(or use form: linear)."
                )
            self.net = Linearized(self.two_layer)  # the same base network, expanded by torch.func
        self.kernel_max_samples = check_int("model.kernel_max_samples", kernel_max_samples, 1)
        if form == "kernel" and self.sgd.rule == "sign":
            raise ValueError(
                "model.update_rule: sign steps on the signs of the parameters' gradient, which the kernel form "
                "(a step on dual coefficients) cannot take: set model.form: linear, or update_rule: sgd."
            )
        if form == "kernel" and self.grid_points > 1:
            raise ValueError(
                "model.form: kernel trains one set of dual coefficients per member from the data's streams: "
                "it takes no model.member_values (use form: linear, the same predictor)."
            )
        if form == "kernel":
            nonzero = [name for name, (_, _, wd) in self.sgd.groups.items() if not wd.is_zero]
            if nonzero:
                raise ValueError(
                    f"model.form: kernel trains the dual coefficients, where an L2 term on theta has no "
                    f"counterpart: set model.training.weight_decay_{nonzero[0]} to 0 (or use form: linear)."
                )
            if not self.noise_std.is_zero:
                raise ValueError(
                    "model.form: kernel uses the fixed kernel at theta_0: set model.training.noise_std to 0 "
                    "(or use form: linear)."
                )
        #: Kernel form: the dual coefficients alpha_g (S, n), one per trained group (set up in ``setup``).
        self.alpha = nn.ParameterDict()
        #: (the set X it was built from, h0 (S, n, p), a0 sigma'(z0) (S, n, p)): see :meth:`tangent_feature_cache`.
        self._tangent_cache: tuple[Tensor, Tensor, Tensor] | None = None
        #: The same for held-out sets: see :meth:`set_tangent_features`.
        self._set_tangent_caches: list[tuple[Tensor, Tensor, Tensor]] = []

    def training_output(self, x: Tensor, step: int, rows: SetRows | None = None) -> Tensor:
        """F_lin (S, B); on rows of a fixed training set without noise, from the rows' cached tangent features.

        The tangent features of a training sample, h0 = sigma(z0) and a0 sigma'(z0) with
        z0 = w0 . x + b0, never change: theta0 is fixed. So on a finite training set they are
        computed once for the whole set X (S, n, d) and each step looks its rows up
        (:meth:`tangent_feature_cache`), leaving one matrix product forward (the change
        (w - w0) . x) instead of two. The predictions equal the product's up to round-off.
        Steps with pre-activation noise, the kernel form and ``jacobian: autodiff`` compute
        as before.
        """
        if self.form == "linear" and self.jacobian == "closed_form" and self.noise_std(step) == 0:
            cached = self.tangent_feature_cache(rows, step)
            if cached is not None:
                return self.net.output_from_tangent_features(x, *cached)
        return super().training_output(x, step, rows)

    def tangent_feature_cache(self, rows: SetRows | None, step: int) -> tuple[Tensor, Tensor] | None:
        """The batch rows' tangent features (h0, a0 sigma'(z0)), each (S, B, p), from the set's cache; or None.

        The cache (2 S n p floats) is built for a set the first time a batch of its rows
        comes, if it fits ``preactivation_cache_mb`` and the run ahead draws at least n
        rows; it is rebuilt for another set object. None where the batch is not rows of a
        fixed set or the cache does not pay.
        """
        if rows is None:
            return None
        cache = self._tangent_cache
        if cache is None or cache[0] is not rows.inputs:
            self._tangent_cache = cache = None
            # theta_0 of member g K + j is seed j's for every grid point g: the features of the K
            # streams' first block serve every point (K n p floats each, not S n p).
            streams = rows.inputs.shape[0]
            if not self._cache_pays(rows, step, self._tangent_bytes(rows.inputs), valid_through=math.inf):
                return None
            with torch.no_grad():
                h0, g0a0 = self.net.tangent_features(rows.inputs, members=slice(0, streams))  # (K, n, p) each
            self._tangent_cache = cache = (rows.inputs, h0, g0a0)
        _, h0, g0a0 = cache
        if rows.index is not None:
            h0, g0a0 = take_rows(h0, rows.index), take_rows(g0a0, rows.index)  # (K, B, p)
        return repeat_streams(h0, self.ensemble_size), repeat_streams(g0a0, self.ensemble_size)

    def set_tangent_features(self, x: Tensor) -> tuple[Tensor, Tensor] | None:
        """A whole fixed set's tangent features (h0, a0 sigma'(z0)), each (K, n, p), kept between evaluations; or None.

        They never change (theta_0 is fixed), so a held-out set evaluated every few steps
        (``HeldOutAccuracy``'s curve) has them computed once: each evaluation then makes
        one matrix product, (w - w0) . x, instead of two. The training set's come from the
        training cache; another set's are kept within ``preactivation_cache_mb`` (for all
        caches together) when an evaluation is still to come after this step.
        """
        for inputs, h0, g0a0 in self._tangent_caches():
            if inputs is x:
                return h0, g0a0
        if self.global_step >= self._max_steps() or not self._cache_fits(self._tangent_bytes(x)):
            return None  # the last evaluation (nothing to keep it for), or no memory left
        with torch.no_grad():
            h0, g0a0 = self.net.tangent_features(x, members=slice(0, x.shape[0]))  # (K, n, p) each
        self._set_tangent_caches.append((x, h0, g0a0))
        return h0, g0a0

    def _tangent_caches(self) -> list[tuple[Tensor, Tensor, Tensor]]:
        return [c for c in (self._tangent_cache, *self._set_tangent_caches) if c is not None]

    def _tangent_bytes(self, x: Tensor) -> int:
        """The bytes of a set x's (K, n, d) tangent features: h0 and a0 sigma'(z0), (K, n, p) each."""
        return 2 * x[..., :1].numel() * self.width * x.element_size()

    def held_cache_bytes(self) -> int:  # noqa: D102
        return super().held_cache_bytes() + sum(2 * h.numel() * h.element_size() for _, h, _ in self._tangent_caches())

    def set_scorer(self, x: Tensor):  # noqa: D102
        if self.form != "linear" or self.jacobian != "closed_form":
            return None
        features = self.set_tangent_features(x)
        if features is None:
            return None
        h0, g0a0 = features
        members = self.ensemble_size
        return lambda rows: self.net.output_from_tangent_features(
            x[:, rows], repeat_streams(h0[:, rows], members), repeat_streams(g0a0[:, rows], members)
        )  # (S, B)

    def on_train_end(self) -> None:  # noqa: D102
        self._tangent_cache = None  # frees the sets' tangent features
        self._set_tangent_caches = []
        super().on_train_end()

    def wrap_network(self, base: TwoLayerNetwork) -> LinearizedTwoLayerNetwork:
        """The linearisation of ``base`` at its initial parameters."""
        return LinearizedTwoLayerNetwork(base)

    @property
    def two_layer(self) -> TwoLayerNetwork:  # noqa: D102
        return self.net.base

    def ntk(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The neural tangent kernel at initialisation over the trained parameter groups: (S, n1, n2).

        Raises:
            ValueError: With ``jacobian: autodiff`` (the kernel blocks are the closed form's).
        """
        if self.jacobian != "closed_form":
            raise ValueError("LinearizedTwoLayerNet.ntk needs model.jacobian: closed_form (its kernel blocks).")
        return self.net.ntk(x1, x2, tuple(self.sgd.groups))

    # ------------------------------------------------------------------ kernel form
    def setup(self, stage: str) -> None:
        r"""Kernel form: build the Gram matrices of the training set and the dual coefficients.

        With :math:`\theta_g - \theta_{0,g} = \sum_i \alpha_{g,i} \nabla_g f_0(x_i)`, the SGD step
        :math:`\theta_g \leftarrow \theta_g - \eta_g \sum_{i \in I_t} \partial L / \partial f_i\,
        \nabla_g f_0(x_i)` is :math:`\alpha_{g,i} \leftarrow \alpha_{g,i} - \eta_g\, \partial L /
        \partial f_i` on the batch, and :math:`f(x) = f_0(x) + \sum_g K_g(x, X) \alpha_g`: the same
        predictor as the linear form, computed from n x n matrices.
        """
        if self.form != "kernel" or stage != "fit" or self.alpha:
            return
        if self.trainer.world_size > 1:  # its gradients are set by hand: DDP would not average them
            raise ValueError(
                f"model.form: kernel trains in one process only (this run has {self.trainer.world_size}): "
                f"use form: linear (the same predictor) with several processes."
            )
        data = self.data_model
        n = None if data is None else data.set_size("train")
        if n is None or n > self.kernel_max_samples:
            raise ValueError(
                f"model.form: kernel needs a finite training set of at most model.kernel_max_samples = "
                f"{self.kernel_max_samples} samples (it stores n x n matrices); data.train_size is {n}. "
                f"Set data.train_size, raise model.kernel_max_samples, or use form: linear."
            )
        x, _ = data.train_set()  # (S, n, d), on the training device
        # Lightning calls setup before it moves the model there; build the n x n blocks
        # on that device now rather than on the CPU.
        self.to(x.device)
        with torch.no_grad():
            blocks = self.net.ntk_blocks(x, x)
            f0 = self.net.initial_output(x)  # (S, n)
        groups = {}
        for name, (_, lr, wd) in self.sgd.groups.items():
            self.register_buffer(f"gram_{name}", blocks[name], persistent=False)  # (S, n, n)
            self.alpha[name] = nn.Parameter(torch.zeros(self.ensemble_size, n, device=x.device))
            groups[name] = ([self.alpha[name]], lr, wd)
        self.register_buffer("f0_train", f0, persistent=False)
        self.register_buffer("x_train", x, persistent=False)
        self.sgd.set_groups(groups)

    def _kernel_train_scores(self) -> Tensor:
        """F on every training sample: f0 + sum_g K_g alpha_g, (S, n)."""
        f = self.f0_train
        for name, alpha in self.alpha.items():
            f = f + torch.bmm(getattr(self, f"gram_{name}"), alpha.unsqueeze(-1)).squeeze(-1)
        return f

    def _kernel_scores(self, x: Tensor, chunk: int = 2048) -> Tensor:
        """F(x) = f0(x) + sum_g K_g(x, X) alpha_g for x (S, B, d): (S, B), ``chunk`` rows of K at a time."""
        x = self.two_layer.per_member(x)
        out = []
        for i in range(0, x.shape[1], chunk):
            xc = x[:, i : i + chunk]
            blocks = self.net.ntk_blocks(xc, self.x_train)
            f = self.net.initial_output(xc)
            for name, alpha in self.alpha.items():
                f = f + torch.bmm(blocks[name], alpha.unsqueeze(-1)).squeeze(-1)
            out.append(f)
        return torch.cat(out, dim=1)

    def training_update(self, batch: TrainBatch) -> Tensor:
        """Linear form: the base SGD step on theta. Kernel form: the same step on the dual coefficients.

        The kernel form reads which training rows the batch holds from ``batch.rows``.
        """
        if self.form == "linear":
            return super().training_update(batch)
        x, y = batch
        step = self.global_step + 1
        self.check_batch(x)
        rows = batch_rows(batch)
        if rows is None or rows.inputs.shape != self.x_train.shape:
            raise ValueError(
                "model.form: kernel trains on rows of the finite training set its Gram matrices were built "
                "from, but this batch does not say which rows it holds: use a featlearn data model with "
                "data.train_size set (its batches carry their rows)."
            )
        idx = rows.index  # (S, B), or None: the whole set
        f_all = self._kernel_train_scores().detach()  # (S, n)
        f = f_all if idx is None else torch.gather(f_all, 1, idx)  # (S, B)
        f.requires_grad_(True)
        losses = self.training_losses(f, y, step)  # (S,)
        (dl_df,) = torch.autograd.grad(losses.sum(), f)  # (S, B): dL_s / df_i
        optimizer = self.optimizers()
        for alpha in self.alpha.values():
            alpha.grad = dl_df.clone() if idx is None else torch.zeros_like(alpha).scatter_add_(1, idx, dl_df)
        self.sgd.step(optimizer, step, self.gradient_scale)
        self.updates.add(self, losses.detach(), step, batch_size=x.shape[1])
        return losses.sum().detach()

    # ------------------------------------------------------------------ outputs
    def scores(self, x: Tensor) -> Tensor:  # noqa: D102
        return self._kernel_scores(x) if self.alpha else self.net(x)

    def first_layer_features(self) -> None:
        """None: the features are the fixed tangent features at theta_0, not rows of w."""
        return None

    def hidden_units(self, x: Tensor) -> None:
        """None: the model's output is linear in the tangent features, not a readout of these units."""
        return None

    def output_weights(self) -> None:
        """None: there are no learned neurons for output weights to sit on."""
        return None

    def first_layer_gradient(self, x: Tensor, y: Tensor, chunk: int = 65536) -> None:
        """None: the lazy model has no learned neurons whose gradient would mean what the network's does."""
        return None
