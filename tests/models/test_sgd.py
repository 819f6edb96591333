"""The scheduled SGD update and the divergence guard, without a Trainer, against direct computations."""

import pytest
import torch
from torch import nn

from featlearn.models.sgd import DivergenceGuard, ScheduledSGD, member_metrics
from featlearn.schedules import PointSchedules, as_schedule


def test_the_step_is_the_heavy_ball_with_every_hyperparameter_a_function_of_the_step():
    torch.manual_seed(0)
    w, a = nn.Parameter(torch.randn(3, 2, dtype=torch.float64)), nn.Parameter(torch.randn(4, dtype=torch.float64))
    momentum = as_schedule(
        [{"start": 1, "end": 2, "value": 0.9}, {"start": 3, "end": 3, "value": 0.0}, {"start": 4, "value": 0.5}],
        "momentum",
    )
    rate_w = as_schedule([{"start": 1, "end": 2, "value": 0.1}, {"start": 3, "value": 0.05}], "lr_w")
    sgd = ScheduledSGD(momentum)
    sgd.set_groups(
        {"w": ([w], rate_w, as_schedule(0.0, "wd")), "a": ([a], as_schedule(0.2, "lr_a"), as_schedule(0.0, "wd"))}
    )
    optimizer = sgd.optimizer()
    theta = {"w": w.detach().clone(), "a": a.detach().clone()}
    buffer = {"w": None, "a": None}
    for step in range(1, 6):
        grads = {"w": torch.randn(3, 2, dtype=torch.float64), "a": torch.randn(4, dtype=torch.float64)}
        w.grad, a.grad = grads["w"].clone(), grads["a"].clone()
        sgd.step(optimizer, step, scale=2.0)
        mu = momentum(step)
        for name, rate in (("w", rate_w(step)), ("a", 0.2)):  # b_t = mu b_{t-1} + g_t; b_t = g_t where mu = 0
            b = grads[name] if buffer[name] is None or mu == 0 else mu * buffer[name] + grads[name]
            buffer[name] = b
            theta[name] = theta[name] - 2.0 * rate * b
        torch.testing.assert_close(w.detach(), theta["w"])
        torch.testing.assert_close(a.detach(), theta["a"])
    values = {name: schedule(3) for name, schedule in sgd.named_schedules().items()}
    assert values == {"lr_w": 0.05, "weight_decay_w": 0.0, "lr_a": 0.2, "weight_decay_a": 0.0, "momentum": 0.0}


def test_idle_groups_are_those_at_rate_zero_and_only_without_momentum_on_one_process():
    w, a = nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(2))
    groups = {
        "w": (
            [w],
            as_schedule([{"start": 1, "end": 2, "value": 1.0}, {"start": 3, "value": 0.0}], "lr"),
            as_schedule(0.0, "wd"),
        ),
        "a": ([a], as_schedule(1.0, "lr"), as_schedule(0.0, "wd")),
    }
    plain = ScheduledSGD(as_schedule(0.0, "momentum"))
    plain.set_groups(groups)
    assert plain.idle_parameters(2) == [] and plain.idle_parameters(3) == [w]
    assert plain.idle_parameters(3, processes=2) == []  # DDP waits for every gradient
    heavy = ScheduledSGD(as_schedule(0.9, "momentum"))
    heavy.set_groups(groups)
    assert heavy.idle_parameters(3) == []  # a rate-0 group still moves its buffer
    empty = ScheduledSGD(as_schedule(0.0, "momentum"))
    empty.set_groups({"none": ([], as_schedule(1.0, "lr"), as_schedule(0.0, "wd"))})
    assert empty.groups == {}


def test_l2_terms_are_lambda_times_the_squared_norm_of_each_group():
    w, a = nn.Parameter(torch.tensor([1.0, 2.0])), nn.Parameter(torch.tensor([3.0]))
    sgd = ScheduledSGD(as_schedule(0.0, "momentum"))
    sgd.set_groups(
        {
            "w": ([w], as_schedule(1.0, "lr"), as_schedule(0.5, "wd")),
            "a": ([a], as_schedule(1.0, "lr"), as_schedule(0.0, "wd")),
        }
    )
    terms = sgd.l2_terms(1)
    assert len(terms) == 1 and float(terms[0]) == pytest.approx(0.5 * 5.0)


def test_the_guard_names_the_first_bad_step_and_keeps_at_most_check_every_losses():
    guard = DivergenceGuard()
    guard.check_every = 3
    assert guard.add(torch.tensor([1.0, 1.0]), 7) is False
    assert guard.add(torch.tensor([1.0, float("nan")]), 8) is False
    assert guard.add(torch.tensor([float("inf"), 1.0]), 9) is True
    with pytest.raises(FloatingPointError, match=r"update step 8 \(in effect then: lr=8\)"):
        guard.check(lambda x: x, lambda step: f"lr={step}")
    assert guard.pending == []
    guard.add(torch.tensor([1.0]), 10)
    guard.check(lambda x: x, str)  # finite: no error, and forgotten
    assert guard.pending == []


def test_member_metrics_name_min_max_and_each_member_of_a_small_ensemble():
    values = torch.tensor([0.1, 0.3, 0.2])
    out = member_metrics("train", "loss", values, max_logged=3)
    assert set(out) == {
        "train/loss_min",
        "train/loss_max",
        "train_members/loss_0",
        "train_members/loss_1",
        "train_members/loss_2",
    }
    assert float(out["train/loss_max"]) == pytest.approx(0.3)
    assert set(member_metrics("train", "loss", values, max_logged=2)) == {"train/loss_min", "train/loss_max"}
    assert member_metrics("train", "loss", values[:1], max_logged=8) == {}


def test_sign_sgd_steps_along_the_sign_of_each_coordinate_and_refuses_momentum():
    torch.manual_seed(1)
    w = nn.Parameter(torch.randn(4, 3, dtype=torch.float64))
    rate = as_schedule([{"start": 1, "end": 2, "value": 0.1}, {"start": 3, "value": 0.01}], "lr")
    sgd = ScheduledSGD(as_schedule(0.0, "momentum"), rule="sign")
    sgd.set_groups({"w": ([w], rate, as_schedule(0.0, "wd"))})
    optimizer = sgd.optimizer()
    theta = w.detach().clone()
    for step in range(1, 5):
        grad = torch.randn(4, 3, dtype=torch.float64)
        grad[0, 0] = 0.0  # sign(0) = 0: that coordinate stays
        w.grad = grad.clone()
        sgd.step(optimizer, step, scale=3.0)
        theta = theta - 3.0 * rate(step) * torch.sign(grad)
        torch.testing.assert_close(w.detach(), theta)
    # The step's size no longer depends on the gradient's: a plain step would differ.
    assert not torch.allclose(theta, w.detach() + 1.0)
    with pytest.raises(ValueError, match="model.update_rule 'sign'.*model.momentum to 0"):
        ScheduledSGD(as_schedule(0.9, "momentum"), rule="sign")
    with pytest.raises(ValueError, match="model.update_rule"):
        ScheduledSGD(as_schedule(0.0, "momentum"), rule="adam")


def test_sign_sgd_per_point_blocks_step_by_their_own_rates():
    w = nn.Parameter(torch.zeros(4, 2, dtype=torch.float64))  # S = G K = 2 points x 2 members
    sgd = ScheduledSGD(as_schedule(0.0, "momentum"), rule="sign")
    rates = PointSchedules((as_schedule(0.5, "lr"), as_schedule(2.0, "lr")), "model.training.lr")
    sgd.set_groups({"w": ([w], rates, as_schedule(0.0, "wd"))})
    w.grad = torch.tensor([[3.0, -1e-6], [0.2, 0.0], [-7.0, 1.0], [1e-9, -4.0]], dtype=torch.float64)
    sgd.step(sgd.optimizer(), 1, scale=1.0)
    expected = torch.tensor([[-0.5, 0.5], [-0.5, 0.0], [2.0, -2.0], [-2.0, 2.0]], dtype=torch.float64)
    torch.testing.assert_close(w.detach(), expected)
