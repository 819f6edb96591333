"""ResNet(m): ResNet-18 with m filters in its first residual stage (Shi et al. 2022, E.4.1 and E.5)."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torchvision.models.resnet import BasicBlock

from featlearn.validation import check_int


class ScaledResNet18(nn.Module):
    r"""ResNet-18 whose widths scale with m: ResNet(m).

    Four stages of two torchvision ``BasicBlock`` s each, with m, 2m, 4m and 8m filters
    (stride 1, 2, 2, 2), after a stem of one 3x3 convolution with m filters, batch norm
    and ReLU; global average pooling and a linear head with ``num_outputs`` units.
    ResNet(64) is the standard ResNet-18 as used on 32x32 images (CIFAR): torchvision's
    ``resnet18`` with its ImageNet stem (7x7 stride-2 convolution and max pooling)
    replaced by the 3x3 one, which keeps the small images' resolution. Shi et al. train
    ResNet(m) on binary CIFAR-10 (E.4.1, m = 128, 256) and use ResNet(9) as the student
    of their CIFAR-10/SVHN mixtures (E.5).

    Args:
        width: m, the filters of the stem and of the first stage (>= 1).
        in_channels: C of the input images (B, C, H, W).
        num_outputs: Output units: 1 for a binary classifier's score f, C for C classes.
    """

    def __init__(self, width: int = 64, in_channels: int = 3, num_outputs: int = 1) -> None:
        super().__init__()
        check_int("model.network.width", width, 1)
        check_int("model.network.in_channels", in_channels, 1)
        check_int("model.network.num_outputs", num_outputs, 1)
        self.width, self.in_channels, self.num_outputs = width, in_channels, num_outputs
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, width, kernel_size=3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
        )
        stages, planes_in = [], width
        for i, stride in enumerate((1, 2, 2, 2)):
            planes = width * 2**i
            stages.append(self._stage(planes_in, planes, stride))
            planes_in = planes
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(planes_in, num_outputs)
        self.reset_parameters()

    @staticmethod
    def _stage(planes_in: int, planes: int, stride: int) -> nn.Sequential:
        downsample = None
        if stride != 1 or planes_in != planes:
            downsample = nn.Sequential(
                nn.Conv2d(planes_in, planes, kernel_size=1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )
        return nn.Sequential(BasicBlock(planes_in, planes, stride, downsample), BasicBlock(planes, planes))

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Kaiming-normal convolutions (fan-out, as torchvision's ResNet), unit batch norms, default head."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        self.head.reset_parameters()

    def first_filters(self) -> Tensor:
        """The stem's filters, one row per filter: (m, C * 3 * 3)."""
        return self.stem[0].weight.flatten(1)

    def forward(self, x: Tensor) -> Tensor:
        """Scores (B, num_outputs) for images x (B, C, H, W)."""
        h = self.stages(self.stem(x))  # (B, 8m, H', W')
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(h, 1), 1))

    def extra_repr(self) -> str:  # noqa: D102
        return f"m={self.width}, C={self.in_channels}, outputs={self.num_outputs}"
