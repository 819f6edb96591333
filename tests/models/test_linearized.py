import pytest
import pytorch_lightning as pl
import torch
from torch.func import functional_call, jvp

from featlearn.datamodules import SparseCoding
from featlearn.models import LinearizedTwoLayerNet, TwoLayerNet

from ..conftest import SHI_PROCESS, grouped  # noqa: TID252

SHI_NET = dict(SHI_PROCESS, sigma_w=0.3, sigma_b=0.2, sigma_a=2.0)


def tangent_prediction(model, theta, x, smoothing_std=0.0):
    """f(x; theta0) + grad_theta f(x; theta0) . (theta - theta0), by forward-mode autodiff."""
    names = ["w", "b", "a"]
    theta0 = {n: getattr(model.net, f"{n}0") for n in names}
    tangent = {n: theta[n] - theta0[n] for n in names}

    def f(params):
        return functional_call(model.two_layer, params, (x,), {"smoothing_std": smoothing_std})

    value, derivative = jvp(f, (theta0,), (tangent,))
    return value + derivative


@pytest.mark.parametrize("activation", ["truncated_relu", "relu", "quadratic"])
@pytest.mark.parametrize("smoothing_std", [0.0, 0.3])
def test_linearized_is_the_first_order_taylor_expansion(activation, smoothing_std):
    torch.manual_seed(0)
    model = LinearizedTwoLayerNet(
        6, **grouped(8, lr=0.1, ensemble_size=2, seed=3, **{**SHI_NET, "activation": activation})
    )
    x = torch.randn(2, 5, 6)
    # At theta0 the linear model is the network.
    torch.testing.assert_close(model.net(x, None, smoothing_std), model.two_layer(x, None, smoothing_std))
    with torch.no_grad():
        for p in model.two_layer.parameters():
            p.add_(0.1 * torch.randn_like(p))
    theta = {n: getattr(model.two_layer, n).detach() for n in ("w", "b", "a")}
    expected = tangent_prediction(model, theta, x, smoothing_std)
    torch.testing.assert_close(model.net(x, None, smoothing_std), expected, rtol=1e-5, atol=1e-5)


def test_linearized_training_moves_theta_but_never_the_features(fit):
    data = SparseCoding(d=12, D=6, k=3, train_size=200, test_size=100, val_size=0, batch_size=50, seed=1)
    model = LinearizedTwoLayerNet(data.input_dim, **grouped(10, lr=0.05, seed=0, **SHI_NET))
    w0 = model.net.w0.clone()
    fit(model, data, 5)
    assert not torch.equal(model.two_layer.w, w0)  # theta trained
    torch.testing.assert_close(model.net.w0, w0)  # theta0 (the tangent features) fixed
    assert model.first_layer_features() is None


def test_linearized_and_network_share_initialisation_and_first_step_gradient():
    # Same arguments, same seed: the same theta0; and at theta0 both have the same gradient.
    net = TwoLayerNet(6, **grouped(8, lr=0.1, seed=5, **SHI_NET))
    lin = LinearizedTwoLayerNet(6, **grouped(8, lr=0.1, seed=5, **SHI_NET))
    torch.testing.assert_close(net.net.w, lin.two_layer.w)
    x, y = torch.randn(1, 7, 6), torch.tensor([[1.0, -1, 1, 1, -1, -1, 1]])
    for m in (net, lin):
        m.member_losses(m.training_output(x, 1), y).sum().backward()
    for name in ("w", "b", "a"):
        torch.testing.assert_close(getattr(net.net, name).grad, getattr(lin.two_layer, name).grad)


def test_ntk_blocks_are_inner_products_of_parameter_gradients():
    from torch.func import jacrev

    model = LinearizedTwoLayerNet(5, **grouped(6, lr=0.1, ensemble_size=2, seed=1, **SHI_NET))
    x1, x2 = torch.randn(2, 3, 5, dtype=torch.float32), torch.randn(2, 4, 5)
    params = {n: getattr(model.two_layer, n).detach() for n in ("w", "b", "a")}

    def f(p, x):
        return functional_call(model.two_layer, p, (x,))  # (S, B)

    j1, j2 = jacrev(f)(params, x1), jacrev(f)(params, x2)  # name -> (S, B, *param shape)
    blocks = model.net.ntk_blocks(x1, x2)
    for name in ("w", "b", "a"):
        for s in range(2):
            a = j1[name][s].reshape(3, -1)  # (B1, #params): member s's output against all parameters
            b = j2[name][s].reshape(4, -1)
            torch.testing.assert_close(blocks[name][s], a @ b.T, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.ntk(x1, x2), sum(blocks.values()))


def kernel_pair(**overrides):
    options = dict(lr_w=0.3, lr_b=0.2, lr_a=[{"start": 1, "end": 2, "value": 0.5}, {"start": 3, "value": 0.1}], seed=2)
    options.update(overrides)
    net_args = {**SHI_NET, "loss": "logistic", "ensemble_size": 2}
    return (
        LinearizedTwoLayerNet(10, **grouped(8, form="linear", **options, **net_args)),
        LinearizedTwoLayerNet(10, **grouped(8, form="kernel", **options, **net_args)),
    )


def small_parity_data():
    batch = [{"start": 1, "end": 1, "value": 64}, {"start": 2, "value": 16}]  # full set, then subsets
    return SparseCoding(
        d=10, D=6, k=3, train_size=64, test_size=50, val_size=0, batch_size=batch, seed=3, ensemble_size=2
    )


def test_kernel_form_predicts_exactly_what_the_linear_form_does(fit):
    linear, kernel = kernel_pair()
    fit(linear, small_parity_data(), 6)
    trainer = fit(kernel, small_parity_data(), 6)
    assert set(kernel.alpha) == {"w", "b", "a"} and kernel.alpha["w"].shape == (2, 64)
    x, _ = trainer.datamodule.eval_set("test")  # (S, n, d)
    with torch.no_grad():
        torch.testing.assert_close(kernel.scores(x), linear.scores(x), rtol=1e-4, atol=1e-5)
        assert (kernel.scores(x) - kernel.net.initial_output(x)).abs().max() > 1e-2  # it did train


@pytest.mark.parametrize(
    "override, match",
    [
        ({"weight_decay_w": 0.1}, "weight_decay_w to 0"),
        ({"noise_std": 0.1}, "noise_std to 0"),
        ({"form": "dual"}, "model.form must be"),
        ({"kernel_max_samples": 0}, "kernel_max_samples must be"),
    ],
)
def test_kernel_form_refuses_what_it_cannot_express(override, match):
    with pytest.raises(ValueError, match=match):
        LinearizedTwoLayerNet(10, **grouped(8, lr=0.1, **{"form": "kernel", **override}, **SHI_NET))


@pytest.mark.parametrize("data_args, match", [({"train_size": None}, "None"), ({"train_size": 64}, "is 64")])
def test_kernel_form_needs_a_small_finite_training_set(fit, data_args, match):
    data = SparseCoding(d=10, D=6, k=3, test_size=50, val_size=0, batch_size=16, **data_args)
    model = LinearizedTwoLayerNet(10, **grouped(8, lr=0.1, form="kernel", kernel_max_samples=32, **SHI_NET))
    with pytest.raises(ValueError, match=f"kernel_max_samples = 32.*{match}" if match != "None" else "is None"):
        fit(model, data, 1)


def test_kernel_form_refuses_several_processes(monkeypatch):
    """Its gradients are set by hand, which DDP would not average: a clear error, not diverging ranks."""
    trainer = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False)
    monkeypatch.setattr(pl.Trainer, "world_size", property(lambda self: 2))
    model = LinearizedTwoLayerNet(input_dim=4, network={"width": 3}, training=dict(lr=0.1), form="kernel")
    model.trainer = trainer
    with pytest.raises(ValueError, match="form: kernel trains in one process only"):
        model.setup("fit")


def _count_tangent_features(monkeypatch) -> list:
    """The shapes of the sets whose tangent features the closed-form NTK computes, in order."""
    from featlearn.models.networks import LinearizedTwoLayerNetwork

    calls, original = [], LinearizedTwoLayerNetwork.tangent_features

    def counting(self, x, *args, **kwargs):
        calls.append(x.shape)
        return original(self, x, *args, **kwargs)

    monkeypatch.setattr(LinearizedTwoLayerNetwork, "tangent_features", counting)
    return calls


def test_the_tangent_features_of_a_training_set_are_computed_once_and_change_nothing_but_round_off(fit, monkeypatch):
    calls = _count_tangent_features(monkeypatch)
    runs = {}
    for budget in (2048.0, 0.0):  # 0: the cache is off, every step computes w0 . x
        data = SparseCoding(
            d=12, D=6, k=3, train_size=200, test_size=100, val_size=0, batch_size=50, seed=1, ensemble_size=2
        )
        model = LinearizedTwoLayerNet(
            data.input_dim, **grouped(10, lr=0.05, seed=0, ensemble_size=2, preactivation_cache_mb=budget, **SHI_NET)
        )
        fit(model, data, 8)
        runs[budget] = model
    assert calls == [(2, 200, 12)]  # built once, for the whole set, by the cached run only
    for p, q in zip(runs[2048.0].two_layer.parameters(), runs[0.0].two_layer.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-7)
    assert not torch.equal(runs[2048.0].two_layer.w, runs[2048.0].net.w0)  # theta trained


def test_steps_with_noise_compute_their_tangent_features_afresh(fit):
    data = SparseCoding(d=12, D=6, k=3, train_size=200, test_size=100, val_size=0, batch_size=50, seed=1)
    model = LinearizedTwoLayerNet(data.input_dim, **grouped(10, lr=0.05, seed=0, noise_std=0.1, **SHI_NET))
    fit(model, data, 5)
    assert model._tangent_cache is None  # noqa: SLF001 - the learner's own state, read by its test


def test_a_held_out_sets_tangent_features_are_kept_between_evaluations(fit, monkeypatch):
    calls = _count_tangent_features(monkeypatch)
    data = SparseCoding(d=12, D=6, k=3, train_size=200, test_size=100, val_size=0, batch_size=50, seed=1)
    model = LinearizedTwoLayerNet(data.input_dim, **grouped(10, lr=0.05, seed=0, **SHI_NET))
    seen = []

    class EvaluateEveryStep(pl.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            x, y = data.eval_set("test")
            seen.append((pl_module.evaluate_dataset(x, y, chunk=30), pl_module.evaluate_scores(pl_module.scores(x), y)))

    fit(model, data, 4, callbacks=[EvaluateEveryStep()])
    assert calls == [(1, 200, 12), (1, 100, 12)]  # the training set's, then the test set's: once each
    for kept, computed in seen:  # kept features against the product on the whole set
        torch.testing.assert_close(kept, computed, rtol=1e-5, atol=1e-6)
    model.form = "kernel"  # the kernel form's outputs come from its dual coefficients: no kept features
    assert model.set_scorer(data.eval_set("test")[0]) is None


def test_the_kernel_form_refuses_sign_sgd():
    with pytest.raises(ValueError, match="model.update_rule: sign.*model.form: linear"):
        LinearizedTwoLayerNet(6, **grouped(8, lr=0.1, seed=5, form="kernel", update_rule="sign", **SHI_NET))
    assert LinearizedTwoLayerNet(6, **grouped(8, lr=0.1, seed=5, update_rule="sign", **SHI_NET)).sgd.rule == "sign"
