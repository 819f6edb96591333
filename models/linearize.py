r"""The linearisation of any network at its initial parameters: the lazy (NTK) version of a model.

A generic transform of a network, as neural-tangents' ``linearize(f, params)``: it knows
nothing of the network it wraps. :class:`~featlearn.models.networks.LinearizedTwoLayerNetwork`
is the closed form of the same transform for the two-layer network (faster, and it gives
the kernel matrices); tests check that the two agree in predictions and in training.
"""

from __future__ import annotations

import copy

from torch import Tensor, nn
from torch.func import functional_call, jvp


class Linearized(nn.Module):
    r"""The first-order Taylor expansion of ``base`` at the parameters it has when wrapped.

    With :math:`\theta` the parameters of ``base`` (trained) and :math:`\theta_0` their
    values when this module is built (kept frozen in :attr:`origin`),

    .. math::

        f_{\mathrm{lin}}(x; \theta) = f(x; \theta_0) + J_\theta f(x; \theta_0)\, (\theta - \theta_0),

    a linear model in the network's tangent features whose kernel is its neural tangent
    kernel at initialisation. Both terms come from one forward-mode product,
    ``torch.func.jvp`` of :math:`\theta \mapsto f(x; \theta)` (``functional_call`` on the
    frozen copy) at :math:`\theta_0` in the direction :math:`\theta - \theta_0`: about the
    cost of two forward passes, no Jacobian is formed. Gradients reach :math:`\theta`
    through the direction, so SGD on :math:`\theta` is SGD on the lazy model, and the same
    schedules and L2 terms apply as to the network itself.

    Buffers (batch norm's running statistics) are the frozen copy's: the expansion point
    includes them. The module evaluates ``base`` in the mode (train or eval) it is in.

    Args:
        base: The network to linearise, at its initial parameters; its parameters are the
            ones trained.
    """

    def __init__(self, base: nn.Module) -> None:
        super().__init__()
        self.base = base
        #: The network at theta_0: a frozen copy, the point of expansion.
        self.origin = copy.deepcopy(base).requires_grad_(False)

    def forward(self, *args, **kwargs) -> Tensor:
        """f_lin of the wrapped network's inputs (the same arguments as ``base``)."""
        theta0 = dict(self.origin.named_parameters())
        theta = dict(self.base.named_parameters())
        direction = {name: theta[name] - value for name, value in theta0.items()}

        def network(params: dict[str, Tensor]) -> Tensor:
            return functional_call(self.origin, params, args, kwargs)

        f0, change = jvp(network, (theta0,), (direction,))
        return f0 + change
