"""The plain networks (no training): shapes, activations, initialisations, smoothing, losses."""

import math

import pytest
import torch

from featlearn.models import TwoLayerNetwork
from featlearn.models.losses import LOSSES
from featlearn.models.networks import Initialization, TwoLayerArchitecture


def network(width, ensemble_size=1, input_dim=8, init=None, seed=0, **architecture):
    net = TwoLayerNetwork(input_dim, width, ensemble_size, **architecture)
    net.initialize_(Initialization() if init is None else init, seed)
    return net


def test_network_shapes_and_activations():
    net = network(6, ensemble_size=3, bias=True, activation="quadratic")
    assert net.w.shape == (3, 6, 8) and net.a.shape == (3, 6) and net.b.shape == (3, 6)
    x = torch.randn(4, 8)
    out = net(x)
    assert out.shape == (3, 4)
    brute = torch.stack([((x @ net.w[s].T + net.b[s]) ** 2 @ net.a[s]) / 6 for s in range(3)])
    torch.testing.assert_close(out, brute)
    assert net(x.expand(3, 4, 8)).shape == (3, 4)


def test_gaussian_symmetric_init_outputs_zero():
    init = Initialization("gaussian_symmetric", sigma_w=1.0, sigma_b=0.5, sigma_a=2.0)
    net = network(6, 2, init=init, bias=True, activation="truncated_relu", output_scale="standard")
    x = torch.randn(5, 8)
    torch.testing.assert_close(net(x), torch.zeros(2, 5))
    assert float(net.w[0].detach().std()) == pytest.approx(1.0, abs=0.5)


def test_gaussian_init_draws_every_neuron_independently_at_the_given_stds():
    init = Initialization("gaussian", sigma_w=0.5, sigma_b=0.25, sigma_a=2.0)
    net = network(4000, 2, input_dim=10, init=init, bias=True, output_scale="standard")
    assert float(net.w.detach().std()) == pytest.approx(0.5, rel=0.02)
    assert float(net.b.detach().std()) == pytest.approx(0.25, rel=0.05)
    assert float(net.a.detach().std()) == pytest.approx(2.0, rel=0.05)
    half = net.width // 2  # unlike gaussian_symmetric: no mirrored pairs, so f is not 0 at the start
    assert not torch.equal(net.w[:, :half], net.w[:, half:])
    assert net(torch.randn(5, 10)).abs().min() > 0
    assert not torch.equal(net.w[0], net.w[1])  # members draw from their own streams
    with pytest.raises(ValueError, match="model.init.sigma_a must be set.*scheme: gaussian"):
        network(4, init=Initialization("gaussian", sigma_w=1.0, sigma_b=1.0))


def test_sphere_init_is_glasgows():
    """||w_j|| = theta, a_j = +-||w_j||, no bias, c = 1/p; theta defaults to 1/log d."""
    net = network(32, input_dim=16, init=Initialization(scale=0.3))
    assert net.scale == pytest.approx(1 / 32) and net.b is None and net.activation == "relu"
    norms = net.w[0].norm(dim=1)
    torch.testing.assert_close(norms, torch.full((32,), 0.3))
    torch.testing.assert_close(net.a[0].abs(), norms)
    assert (net.a > 0).any() and (net.a < 0).any()
    default = network(4, input_dim=16)
    torch.testing.assert_close(default.w[0].norm(dim=1), torch.full((4,), 1 / math.log(16)))


def test_members_are_initialised_from_consecutive_seeds():
    ensemble = network(6, ensemble_size=3, seed=10)
    for s in range(3):
        assert torch.equal(ensemble.w[s], network(6, seed=10 + s).w[0])


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: TwoLayerArchitecture(0), "model.network.width"),
        (lambda: TwoLayerArchitecture(4, activation="tanh"), "model.network.activation"),
        (lambda: TwoLayerArchitecture(4, output_scale="ntk"), "model.network.output_scale"),
        (lambda: Initialization("xavier"), "model.init.scheme"),
        (lambda: Initialization(scale=-1.0), "model.init.scale"),
        (lambda: Initialization("gaussian_symmetric", sigma_w=float("nan")), "model.init.sigma_w"),
        (lambda: network(5, init=Initialization("gaussian_symmetric", None, 1.0, 1.0, 1.0)), "even"),
        (lambda: Initialization("sphere", sigma_w=0.1), "model.init.sigma_w is not used by scheme sphere"),
        (lambda: Initialization("gaussian_symmetric", scale=0.3), "model.init.scale is not used"),
        (lambda: TwoLayerNetwork(0, 4), "model.input_dim"),
        (lambda: TwoLayerNetwork(3, 4, ensemble_size=0), "model.ensemble_size"),
        (lambda: network(4, init=Initialization("gaussian_symmetric", sigma_w=1.0)), "model.init.sigma_b"),
    ],
)
def test_bad_architecture_or_initialisation_names_the_parameter(build, match):
    with pytest.raises(ValueError, match=match):
        build()


@pytest.mark.parametrize("activation", ["relu", "truncated_relu", "quadratic"])
def test_noise_in_expectation_is_the_monte_carlo_limit(activation):
    net = network(4, input_dim=6, activation=activation, bias=True, output_scale="standard")
    x = torch.randn(3, 6, dtype=torch.float64)
    net.double()
    std = 0.4
    exact = net(x, smoothing_std=std)
    gen = torch.Generator().manual_seed(0)
    n = 20000
    noise = std * torch.randn(1, n * 3, 4, generator=gen, dtype=torch.float64)
    draws = net(x.repeat(n, 1).unsqueeze(0), noise=noise).reshape(n, 3)  # one forward for all draws
    sem = draws.std(0) / n**0.5
    assert ((exact - draws.mean(0)).abs() <= 5 * sem + 1e-12).all()
    # and it tends to the noiseless network as the noise vanishes
    torch.testing.assert_close(net(x, smoothing_std=1e-6), net(x), atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_derivative_matches_autograd(name):
    loss, derivative_abs = LOSSES[name]
    margin = torch.tensor([-3.0, -0.5, 0.3, 0.99, 2.0, 5.0], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(loss(margin).sum(), margin)
    torch.testing.assert_close(derivative_abs(margin.detach()), grad.abs())
    if name == "logistic":
        torch.testing.assert_close(loss(margin.detach()), 2 * torch.log1p(torch.exp(-margin.detach())))
        assert loss(torch.zeros(1)).item() == pytest.approx(2 * math.log(2))


def test_sphere_initialisation_with_a_fixed_second_layer_norm_keeps_the_same_draws():
    balanced = network(32, input_dim=16, init=Initialization(scale=0.3))
    unit = network(32, input_dim=16, init=Initialization(scale=0.3, a_scale=1.0))
    assert torch.equal(balanced.w, unit.w)  # the same w and signs: only |a_j| differs
    assert torch.equal(torch.sign(balanced.a), torch.sign(unit.a))
    assert torch.allclose(unit.a.abs(), torch.ones_like(unit.a))
    assert torch.allclose(balanced.a.abs(), torch.full_like(balanced.a, 0.3))
    with pytest.raises(ValueError, match="model.init.a_scale is not used by scheme gaussian_symmetric"):
        Initialization("gaussian_symmetric", sigma_w=1.0, sigma_b=1.0, sigma_a=1.0, a_scale=1.0)
    with pytest.raises(ValueError, match="model.init.a_scale"):
        Initialization(a_scale=0.0)
