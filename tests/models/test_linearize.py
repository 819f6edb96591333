"""The generic linearisation (featlearn.models.Linearized) against brute force and the closed form."""

import pytest
import torch
from torch import nn

from featlearn.datamodules import ImageDataModule, SparseCoding
from featlearn.models import Linearized, LinearizedTwoLayerNet, ModuleClassifier, QuadraticFC

from ..conftest import SHI_PROCESS, grouped  # noqa: TID252

SHI_NET = dict(SHI_PROCESS, sigma_w=0.3, sigma_b=0.2, sigma_a=2.0)


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2)).double()


def brute_taylor(origin, theta, x):
    """f(x; theta0) + J(x; theta0) (theta - theta0) with the Jacobian formed entry by entry."""
    names = [n for n, _ in origin.named_parameters()]
    theta0 = [p.detach() for _, p in origin.named_parameters()]

    def f(*params):
        return torch.func.functional_call(origin, dict(zip(names, params, strict=True)), (x,))

    jac = torch.autograd.functional.jacobian(f, tuple(theta0))  # one (B, C, *shape) block per parameter
    f0 = f(*theta0)
    change = sum((j * (theta[n] - t0)).flatten(2).sum(-1) for j, n, t0 in zip(jac, names, theta0, strict=True))
    return f0 + change


def test_generic_linearisation_is_the_first_order_taylor_expansion():
    net = mlp()
    lazy = Linearized(net)
    x = torch.randn(4, 5, dtype=torch.float64)
    torch.testing.assert_close(lazy(x), net(x))  # at theta0 the lazy model is the network
    with torch.no_grad():
        for p in lazy.base.parameters():
            p.add_(0.3 * torch.randn_like(p))
    theta = {n: p.detach() for n, p in lazy.base.named_parameters()}
    torch.testing.assert_close(lazy(x), brute_taylor(lazy.origin, theta, x))
    assert not torch.allclose(lazy(x), lazy.base(x))  # and it is not the network any more


def test_generic_linearisation_is_linear_in_theta_and_its_gradient_is_the_jacobian():
    net = mlp()
    lazy = Linearized(net)
    x = torch.randn(3, 5, dtype=torch.float64)
    step = {n: 0.2 * torch.randn_like(p) for n, p in lazy.base.named_parameters()}

    def at(scale):
        with torch.no_grad():
            for n, p in lazy.base.named_parameters():
                p.copy_(getattr_path(lazy.origin, n) + scale * step[n])
        return lazy(x).detach()

    f0, f1, f2 = at(0.0), at(1.0), at(2.0)
    torch.testing.assert_close(f2 - f0, 2 * (f1 - f0))  # exactly linear along any direction
    lazy.zero_grad()
    lazy(x).sum().backward()
    origin = lazy.origin
    jac = torch.autograd.functional.jacobian(
        lambda *ps: torch.func.functional_call(
            origin, dict(zip([n for n, _ in origin.named_parameters()], ps, strict=True)), (x,)
        ).sum(),
        tuple(p.detach() for p in origin.parameters()),
    )
    for (name, p), expected in zip(lazy.base.named_parameters(), jac, strict=True):
        torch.testing.assert_close(p.grad, expected, msg=name)
    assert all(p.grad is None for p in lazy.origin.parameters())  # theta0 never trains


def getattr_path(module, name):
    for part in name.split("."):
        module = getattr(module, part)
    return module.detach()


@pytest.mark.parametrize("smoothing_std", [0.0, 0.3])
def test_closed_form_and_autodiff_give_the_same_two_layer_predictions(smoothing_std):
    closed = LinearizedTwoLayerNet(6, **grouped(8, lr=0.1, ensemble_size=2, seed=3, **SHI_NET))
    auto = LinearizedTwoLayerNet(6, jacobian="autodiff", **grouped(8, lr=0.1, ensemble_size=2, seed=3, **SHI_NET))
    with torch.no_grad():
        for p, q in zip(closed.two_layer.parameters(), auto.two_layer.parameters(), strict=True):
            p.add_(0.1 * torch.randn_like(p))
            q.copy_(p)
    x = torch.randn(2, 9, 6)
    noise = 0.2 * torch.randn(2, 9, 8)
    torch.testing.assert_close(auto.net(x, None, smoothing_std), closed.net(x, None, smoothing_std))
    torch.testing.assert_close(auto.net(x, noise), closed.net(x, noise))


def test_closed_form_and_autodiff_train_the_same_trajectory(fit):
    """Shi's process on sparse coding (noise, L2, hinge, per-step rates): the same weights after 6 steps."""
    runs = {}
    for jacobian in ("closed_form", "autodiff"):
        data = SparseCoding(
            d=12, D=6, k=3, train_size=200, test_size=100, val_size=0, batch_size=50, seed=1, ensemble_size=2
        )
        model = LinearizedTwoLayerNet(
            data.input_dim,
            jacobian=jacobian,
            **grouped(10, lr=0.05, noise_std=0.1, weight_decay_w=1e-3, seed=0, ensemble_size=2, **SHI_NET),
        )
        fit(model, data, 6)
        runs[jacobian] = (model, data)
    closed, auto = runs["closed_form"][0], runs["autodiff"][0]
    assert not torch.equal(
        closed.two_layer.w,
        LinearizedTwoLayerNet(12, **grouped(10, lr=0.05, seed=0, ensemble_size=2, **SHI_NET)).two_layer.w,
    )  # it trained
    for p, q in zip(closed.two_layer.parameters(), auto.two_layer.parameters(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)
    x, y = runs["closed_form"][1].eval_set("test")
    torch.testing.assert_close(auto.evaluate_dataset(x, y)[0], closed.evaluate_dataset(x, y)[0], rtol=1e-5, atol=1e-6)


def test_autodiff_refuses_the_kernel_form():
    with pytest.raises(ValueError, match="model.jacobian: closed_form"):
        LinearizedTwoLayerNet(6, form="kernel", jacobian="autodiff", **grouped(8, lr=0.1, seed=0, **SHI_NET))
    with pytest.raises(ValueError, match="model.jacobian"):
        LinearizedTwoLayerNet(6, jacobian="numerical", **grouped(8, lr=0.1, seed=0, **SHI_NET))


def test_any_network_trains_lazily_as_a_module_classifier(fit):
    """FC(m) on MNIST 0/1, linearised: theta moves, theta0 stays, member s is the single run with seed + s."""
    data = ImageDataModule(source="mnist_5k", classes=[0, 1], batch_size=32, ensemble_size=2, test_fraction=0.2)
    lazy = ModuleClassifier(QuadraticFC(784, 6, 1), lr=0.05, linearize=True, ensemble_size=2, seed=4)
    origin = [p.clone() for p in lazy.net[1].origin.parameters()]
    start = [p.clone() for p in lazy.member_network(1).parameters()]
    fit(lazy, data, 3)
    assert all(torch.equal(a, b) for a, b in zip(origin, lazy.net[1].origin.parameters(), strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(start, lazy.member_network(1).parameters(), strict=True))
    single = ModuleClassifier(QuadraticFC(784, 6, 1), lr=0.05, linearize=True, seed=5)
    fit(single, ImageDataModule(source="mnist_5k", classes=[0, 1], batch_size=32, seed=1, test_fraction=0.2), 3)
    for a, b in zip(lazy.member_network(1).parameters(), single.member_network(0).parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_linearize_is_validated():
    with pytest.raises(ValueError, match="model.linearize"):
        ModuleClassifier(QuadraticFC(4, 2, 1), lr=0.1, linearize="yes")
