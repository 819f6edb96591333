r"""The NTK baseline: the two-layer network linearised at its initialisation."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from featlearn.models.networks import SMOOTHED_ACTIVATIONS
from featlearn.models.two_layer import TwoLayerNet

#: ``linear``: train theta (cost about two forward passes); ``kernel``: train the dual
#: coefficients against the n x n tangent-kernel matrices of the training set.
FORMS = ("linear", "kernel")


class LinearizedTwoLayerNet(TwoLayerNet):
    r"""The two-layer network replaced by its first-order Taylor expansion at initialisation.

    With :math:`\theta = (w, b, a)` and :math:`\theta_0` its initial value, the model is

    .. math::

        f_{\mathrm{lin}}(x; \theta) &= f(x; \theta_0) + \nabla_\theta f(x; \theta_0) \cdot (\theta - \theta_0) \\
        &= c \sum_{j=1}^{p} \Big[ a_j\, \sigma(z^0_j) + a^0_j\, \sigma'(z^0_j)
           \big((w_j - w^0_j) \cdot x + b_j - b^0_j\big) \Big],
        \qquad z^0_j = w^0_j \cdot x + b^0_j ,

    a linear model in the fixed features :math:`\nabla_\theta f(x; \theta_0)`, whose
    inner product is the network's neural tangent kernel at initialisation

    .. math::

        K(x, x') = c^2 \sum_j \Big[\sigma(z^0_j)\sigma(z'^0_j)
                   + (a^0_j)^2 \sigma'(z^0_j)\sigma'(z'^0_j)(x \cdot x' + 1)\Big]

    (the ``+ 1`` only with biases). Training it by SGD on the loss is training the
    kernel machine with that kernel (the NTK baseline of Shi et al. 2022, Appendix E),
    at the cost of about two network forward passes per step: no n x n kernel matrix.

    Every argument but the two below is :class:`TwoLayerNet`'s, with the same meaning;
    the parameters keep their names (``net.w``, ``net.b``, ``net.a`` hold theta), so the
    same schedules and L2 terms lambda ||theta||^2 apply. Pre-activation noise, when
    scheduled, enters as in the network: sigma(z0 + xi) and sigma'(z0 + xi) (or their
    smoothings).

    ``form: kernel`` trains the same predictor in its dual form, for small training
    sets: the n x n kernel matrices K_g of the training set (one per trained group
    g in {w, b, a}, see :meth:`ntk_blocks`) and coefficients alpha_g (S, n), with
    theta_g - theta_0g = sum_i alpha_gi grad_g f0(x_i) (see :meth:`setup`). Its
    predictions equal the linear form's step for step; it exists to study the kernel
    itself (:meth:`ntk`). It needs a finite training set, no L2 term and no noise.

    Args:
        *args: :class:`TwoLayerNet`'s arguments.
        form: ``linear`` (train theta) or ``kernel`` (train the dual coefficients).
        kernel_max_samples: Largest training set the kernel form accepts (memory:
            up to 3 S n^2 floats).
        **kwargs: :class:`TwoLayerNet`'s keyword arguments.
    """

    def __init__(self, *args, form: str = "linear", kernel_max_samples: int = 5000, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if form not in FORMS:
            raise ValueError(f"model.form must be one of {FORMS}, got {form!r}.")
        if isinstance(kernel_max_samples, bool) or not isinstance(kernel_max_samples, int) or kernel_max_samples < 1:
            raise ValueError(f"model.kernel_max_samples must be an integer >= 1, got {kernel_max_samples!r}.")
        self.form = form
        self.kernel_max_samples = kernel_max_samples
        if form == "kernel":
            nonzero = [name for name, (_, _, wd) in self._groups.items() if not wd.is_zero]
            if nonzero:
                raise ValueError(
                    f"model.form: kernel trains the dual coefficients, where an L2 term on theta has no "
                    f"counterpart: set model.weight_decay_{nonzero[0]} to 0 (or use form: linear)."
                )
            if not self.noise_std.is_zero:
                raise ValueError(
                    "model.form: kernel uses the fixed kernel at theta_0: set model.noise_std to 0 "
                    "(or use form: linear)."
                )
        # theta_0, frozen: the point of linearisation. (S, p, d), (S, p), (S, p).
        self.register_buffer("w0", self.net.w.detach().clone())
        self.register_buffer("a0", self.net.a.detach().clone())
        self.register_buffer("b0", None if self.net.b is None else self.net.b.detach().clone())
        #: Kernel form: the dual coefficients alpha_g (S, n), one per trained group (set up in ``setup``).
        self.alpha = nn.ParameterDict()

    def linearized(self, x: Tensor, noise: Tensor | None = None, smoothing_std: float = 0.0) -> Tensor:
        """f_lin (S, B) for x (S, B, d) or (B, d), with optional pre-activation noise (S, B, p)."""
        net = self.net
        x = net._per_member(x)  # (S, B, d)
        z0 = self._initial_preactivation(x)  # (S, B, p)
        dz = torch.bmm(x, (net.w - self.w0).transpose(1, 2))  # (S, B, p)
        if self.b0 is not None:
            dz = dz + (net.b - self.b0).unsqueeze(1)
        if noise is not None:
            z0 = z0 + noise
        h0 = SMOOTHED_ACTIVATIONS[net.activation](z0, smoothing_std) if smoothing_std > 0 else net.sigma(z0)
        g0 = net.activation_derivative(z0, smoothing_std)  # (S, B, p)
        per_neuron = h0 * net.a.unsqueeze(1) + g0 * dz * self.a0.unsqueeze(1)  # (S, B, p)
        return per_neuron.sum(dim=-1) * net.scale  # (S, B)

    def _initial_preactivation(self, x: Tensor) -> Tensor:
        """Z0 = w0 . x + b0 for x (S, B, d): (S, B, p)."""
        if self.b0 is None:
            return torch.bmm(x, self.w0.transpose(1, 2))
        return torch.baddbmm(self.b0.unsqueeze(1), x, self.w0.transpose(1, 2))

    # ------------------------------------------------------------------ tangent kernel
    def tangent_parts(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The pieces of the tangent features at theta_0: h = sigma(z0), g = a0 sigma'(z0), each (S, B, p).

        Returns:
            ``(x, h, g)`` with x broadcast to (S, B, d).
        """
        x = self.net._per_member(x)
        z0 = self._initial_preactivation(x)  # (S, B, p)
        return x, self.net.sigma(z0), self.net.activation_derivative(z0) * self.a0.unsqueeze(1)

    def ntk_blocks(self, x1: Tensor, x2: Tensor) -> dict[str, Tensor]:
        r"""The tangent kernel of each parameter group, K_g(x, x') = grad_g f0(x) . grad_g f0(x').

        .. math::

            K_a = c^2 \sum_j \sigma(z_j)\sigma(z'_j), \quad
            K_b = c^2 \sum_j (a^0_j)^2 \sigma'(z_j)\sigma'(z'_j), \quad
            K_w = K_b \, (x \cdot x').

        Args:
            x1: (S, n1, d) or (n1, d).
            x2: (S, n2, d) or (n2, d).

        Returns:
            ``{"w", "a"[, "b"]}`` -> (S, n1, n2).
        """
        (x1, h1, g1), (x2, h2, g2) = self.tangent_parts(x1), self.tangent_parts(x2)
        c2 = self.net.scale**2
        gg = c2 * torch.bmm(g1, g2.transpose(1, 2))  # (S, n1, n2)
        blocks = {"w": gg * torch.bmm(x1, x2.transpose(1, 2)), "a": c2 * torch.bmm(h1, h2.transpose(1, 2))}
        if self.b0 is not None:
            blocks["b"] = gg
        return blocks

    def ntk(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The neural tangent kernel at initialisation over the trained parameter groups: (S, n1, n2)."""
        blocks = self.ntk_blocks(x1, x2)
        return sum(blocks[name] for name in self._groups)

    def initial_output(self, x: Tensor) -> Tensor:
        """F0(x) = f(x; theta_0), (S, B)."""
        _, h, _ = self.tangent_parts(x)
        return (h * self.a0.unsqueeze(1)).sum(dim=-1) * self.net.scale

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
        data = self.trainer.datamodule
        n = getattr(data, "train_size", None)
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
            blocks = self.ntk_blocks(x, x)
            f0 = self.initial_output(x)  # (S, n)
        groups = {}
        for name, (_, lr, wd) in self._groups.items():
            self.register_buffer(f"gram_{name}", blocks[name], persistent=False)  # (S, n, n)
            self.alpha[name] = nn.Parameter(torch.zeros(self.ensemble_size, n, device=x.device))
            groups[name] = ([self.alpha[name]], lr, wd)
        self.register_buffer("f0_train", f0, persistent=False)
        self.register_buffer("x_train", x, persistent=False)
        self._set_groups(groups)

    def _kernel_train_scores(self) -> Tensor:
        """F on every training sample: f0 + sum_g K_g alpha_g, (S, n)."""
        f = self.f0_train
        for name, alpha in self.alpha.items():
            f = f + torch.bmm(getattr(self, f"gram_{name}"), alpha.unsqueeze(-1)).squeeze(-1)
        return f

    def _kernel_scores(self, x: Tensor, chunk: int = 2048) -> Tensor:
        """F(x) = f0(x) + sum_g K_g(x, X) alpha_g for x (S, B, d): (S, B), ``chunk`` rows of K at a time."""
        x = self.net._per_member(x)
        out = []
        for i in range(0, x.shape[1], chunk):
            xc = x[:, i : i + chunk]
            blocks = self.ntk_blocks(xc, self.x_train)
            f = self.initial_output(xc)
            for name, alpha in self.alpha.items():
                f = f + torch.bmm(blocks[name], alpha.unsqueeze(-1)).squeeze(-1)
            out.append(f)
        return torch.cat(out, dim=1)

    def training_update(self, batch: tuple[Tensor, Tensor]) -> Tensor:
        """Linear form: the base SGD step on theta. Kernel form: the same step on the dual coefficients."""
        if self.form == "linear":
            return super().training_update(batch)
        x, y = batch
        step = self.global_step + 1
        idx = self.trainer.datamodule.train_batch_indices(step)  # (S, B) or None: the whole set
        f_all = self._kernel_train_scores().detach()  # (S, n)
        f = f_all if idx is None else torch.gather(f_all, 1, idx)  # (S, B)
        f.requires_grad_(True)
        losses = self.member_losses(f, y)  # (S,)
        (dl_df,) = torch.autograd.grad(losses.sum(), f)  # (S, B): dL_s / df_i
        optimizer = self.optimizers()
        for alpha in self.alpha.values():
            alpha.grad = dl_df.clone() if idx is None else torch.zeros_like(alpha).scatter_add_(1, idx, dl_df)
        self._step_optimizer(optimizer, step)
        self._after_update(losses.detach(), step, batch_size=x.shape[1])
        return losses.sum().detach()

    # ------------------------------------------------------------------ outputs
    def training_output(self, x: Tensor, step: int) -> Tensor:  # noqa: D102
        noise, smoothing_std = self.step_noise(x, step)
        return self.linearized(x, noise, smoothing_std)

    def scores(self, x: Tensor) -> Tensor:  # noqa: D102
        return self._kernel_scores(x) if self.alpha else self.linearized(x)

    def forward(self, x: Tensor) -> Tensor:
        """f_lin (S, B) for x (S, B, d) or (B, d)."""
        return self.scores(x)

    def first_layer_features(self) -> None:
        """None: the features are the fixed tangent features at theta_0, not rows of w."""
        return None
