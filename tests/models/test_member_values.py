"""Per-point hyperparameters: a tuning grid times its seeds trains as one ensemble.

Each point's block of members must equal the run of that point's values on the same seeds
(the trial ``featlearn compare`` ran per grid point before), bit for bit on the CPU.
"""

from __future__ import annotations

import pytest
import torch

from featlearn.cli import build_cli
from featlearn.models import LinearizedTwoLayerNet, TwoLayerNet
from featlearn.schedules import PointSchedules

#: A small Shi process: two full-batch feature steps with noise and decay, then a classifier stage.
SMALL = [
    "--config", "shi_parity", "--config", "debug/smoke",
    "--trainer.max_steps", "6", "--trainer.logger", "false", "--test_after_fit", "false",
    "--data.init_args.d", "40", "--data.init_args.D", "10", "--data.init_args.k", "3",
    "--data.init_args.train_size", "300", "--data.init_args.test_size", "100", "--data.init_args.val_size", "100",
    "--data.init_args.batch_size", "[{start: 1, end: 2, value: 300}, {start: 3, value: 50}]",
    "--model.init_args.network.init_args.width", "20",
]  # fmt: skip


def fit(extra: list[str]):
    return build_cli(["fit", *SMALL, *extra])


def parameters(model) -> dict[str, torch.Tensor]:
    net = model.two_layer
    return {name: getattr(net, name).detach().clone() for name in ("w", "b", "a")}


@pytest.mark.parametrize(
    ("learner", "grid"),
    [
        ("TwoLayerNet", {"lr_a": [300.0, 1000.0, 3000.0], "weight_decay_w": [500.0, 400.0, 500.0]}),
        (
            "TwoLayerNet",
            {
                "noise_std": [0.0, 0.2],
                "lr_w": [
                    [
                        {"start": 1, "end": 1, "value": 0.001},
                        {"start": 2, "end": 2, "value": 1.0},
                        {"start": 3, "value": 0.0},
                    ],
                    [
                        {"start": 1, "end": 1, "value": 0.002},
                        {"start": 2, "end": 2, "value": 0.5},
                        {"start": 3, "value": 0.0},
                    ],
                ],
            },
        ),  # noqa: E501
        ("LinearizedTwoLayerNet", {"lr_w": [1e-3, 1e-2], "lr_b": [1e-3, 1e-2], "lr_a": [1e-3, 1e-2]}),
    ],
)
def test_each_grid_point_equals_the_run_of_its_values_on_the_same_seeds_bit_for_bit(learner, grid):
    seeds = 2
    overrides = ["--model.class_path", learner] if learner != "TwoLayerNet" else []
    if learner == "LinearizedTwoLayerNet":  # the NTK method: constant rates, no decay or noise
        overrides += [
            "--model.init_args.training.weight_decay_w", "0", "--model.init_args.training.weight_decay_b", "0",
            "--model.init_args.training.weight_decay_a", "0", "--model.init_args.training.noise_std", "0",
        ]  # fmt: skip
    values = "{" + ", ".join(f"{k}: {v!r}" for k, v in grid.items()) + "}"
    together = fit(
        [*overrides, "--model.init_args.ensemble_size", str(seeds), "--model.init_args.member_values", values]
    )
    model = together.model
    points = len(next(iter(grid.values())))
    assert model.ensemble_size == points * seeds and model.streams == seeds
    assert any(isinstance(lr, PointSchedules) for _, lr, _ in model.sgd.groups.values()) or "noise_std" in grid
    grid_params = parameters(model)
    for g in range(points):
        point = [a for name, v in grid.items() for a in (f"--model.init_args.training.{name}", repr(v[g]))]
        alone = fit([*overrides, *point, "--model.init_args.ensemble_size", str(seeds)])
        for name, value in parameters(alone.model).items():
            assert torch.equal(grid_params[name][g * seeds : (g + 1) * seeds], value), (name, g)


def test_a_diverging_member_is_recorded_and_the_others_train_on():
    run = fit(["--model.init_args.ensemble_size", "2", "--model.init_args.member_values", "{lr_a: [1000.0, 1.0e+30]}"])
    model = run.model
    assert set(model.updates.diverged_points) == {1}
    assert all(member >= 2 for member in model.updates.diverged_members)
    assert torch.isfinite(model.two_layer.a[:2]).all()


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"lr_q": [1.0]}, "cannot set \\['lr_q'\\]"),
        ({"lr_a": [1.0, 2.0], "lr_w": [1.0]}, "same length"),
        ({"lr_a": []}, "non-empty list"),
        ([1.0], "must map arguments"),
    ],
)
def test_bad_member_values_name_the_setting(values, match):
    with pytest.raises(ValueError, match=match):
        TwoLayerNet(input_dim=4, network={"width": 4}, training=dict(lr=0.1), member_values=values)


def test_per_point_rates_refuse_momentum_and_the_kernel_form():
    with pytest.raises(ValueError, match="need plain SGD"):
        TwoLayerNet(
            input_dim=4, network={"width": 4}, training=dict(lr=0.1), momentum=0.9, member_values={"lr_a": [1.0, 2.0]}
        )
    with pytest.raises(ValueError, match="form: kernel"):
        LinearizedTwoLayerNet(
            input_dim=4, network={"width": 4}, training=dict(lr=0.1), form="kernel", member_values={"lr_a": [1.0, 2.0]}
        )
