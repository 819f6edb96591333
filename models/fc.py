"""FC(m): one hidden layer of m quadratic units and C outputs (Shi et al. 2022, E.5.2)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from featlearn.validation import check_int


class QuadraticFC(nn.Module):
    r"""A one-hidden-layer network with quadratic activation: FC(m).

    .. math::  g(x) = A\, \sigma(W x + b) + c, \qquad \sigma(z) = z^2,

    with W (m, d), b (m,), A (C, m), c (C,): C class scores (logits) per input.
    Shi et al. use FC(m) as MNIST's teacher and student in their study of the input
    structure (E.5.2, FC(9); E.5.3, FC(50)). Inputs of any shape are flattened to
    d = ``in_features`` values.

    Initialisation (``reset_parameters``): W, b uniform in ±1/sqrt(d) (torch's ``Linear``
    default), A, c uniform in ±1/sqrt(m); then E[(w x)^2] is of order ||x||^2 / d per unit,
    so for inputs with E||x||^2 of order d the logits start of order one at every width.

    Args:
        in_features: d, the number of input values (C H W of an image).
        width: m, the hidden units (>= 1).
        num_outputs: C, the class scores.
    """

    def __init__(self, in_features: int = 784, width: int = 9, num_outputs: int = 10) -> None:
        super().__init__()
        check_int("network.in_features", in_features, 1)
        check_int("network.width", width, 1)
        check_int("network.num_outputs", num_outputs, 1)
        self.in_features, self.width, self.num_outputs = in_features, width, num_outputs
        self.hidden = nn.Linear(in_features, width)
        self.head = nn.Linear(width, num_outputs)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Uniform initialisation at each layer's fan-in scale (see the class docstring)."""
        for layer in (self.hidden, self.head):
            bound = 1.0 / math.sqrt(layer.in_features)
            nn.init.uniform_(layer.weight, -bound, bound)
            nn.init.uniform_(layer.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        """Logits (B, C) for inputs x (B, ...) with d values each."""
        z = self.hidden(x.flatten(1))  # (B, m)
        return self.head(z * z)  # (B, C)

    def extra_repr(self) -> str:  # noqa: D102
        return f"d={self.in_features}, m={self.width}, outputs={self.num_outputs}"
