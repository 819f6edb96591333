"""HiddenUnits: the hidden units that fire on a set, the inputs none fires on, the first layer's size."""

import pytest
import torch

from featlearn.callbacks import HiddenUnits
from featlearn.contracts import HiddenLearner
from featlearn.datamodules import SparseCoding
from featlearn.models import LinearizedTwoLayerNet, ModuleClassifier, QuadraticFC, TwoLayerNet

from ..conftest import grouped  # noqa: TID252


def small_parity(**kwargs) -> SparseCoding:
    kwargs = {"ensemble_size": 2, **kwargs}
    return SparseCoding(d=40, D=20, k=5, train_size=600, test_size=300, batch_size=100, **kwargs)


def test_the_shares_count_the_units_and_inputs_the_activations_say(fit):
    dm = small_parity(eval_batch_size=128)  # several chunks: the shares gather across them
    model = TwoLayerNet(dm.input_dim, **grouped(32, lr=0.5, init_scale=0.5, seed=0), ensemble_size=2)
    callback = HiddenUnits(cadence=5)
    fit(model, dm, 10, callbacks=[callback])
    results = callback.member_results()
    assert set(results) == {f"units_{n}" for n in ("active_share", "firing_rate", "silent_inputs", "w_norm")}
    x, _ = dm.train_set()  # (S, n, d)
    h = model.hidden_units(x)  # (S, n, p)
    for member in range(2):
        alive = h[member] != 0  # (n, p)
        assert results["units_active_share"][member] == pytest.approx(100.0 * float(alive.any(0).double().mean()))
        assert results["units_firing_rate"][member] == pytest.approx(100.0 * float(alive.double().mean()))
        assert results["units_silent_inputs"][member] == pytest.approx(100.0 * float((~alive.any(1)).double().mean()))
        w = model.first_layer_features()[member].double()
        assert results["units_w_norm"][member] == pytest.approx(float(w.norm(dim=1).mean()))
    assert [entry["step"] for entry in callback.history] == [0, 5, 10]


def test_units_that_never_fire_and_inputs_no_unit_fires_on_are_counted():
    dm = small_parity()
    model = TwoLayerNet(dm.input_dim, **grouped(8, lr=0.5, init_scale=0.5, bias=True, seed=0), ensemble_size=2)
    callback = HiddenUnits()
    callback.connect_data(dm)
    with torch.no_grad():  # member 0: every unit dead (a bias far below every pre-activation); member 1: all alive
        model.two_layer.b[0].fill_(-1e3)
        model.two_layer.b[1].fill_(1e3)
    callback.compute(None, model, 0)
    assert callback.member_results()["units_active_share"] == [0.0, 100.0]
    assert callback.member_results()["units_silent_inputs"] == [100.0, 0.0]


def test_a_learner_without_a_hidden_layer_is_refused_with_the_fix(fit):
    dm = small_parity(ensemble_size=1)
    assert isinstance(TwoLayerNet(dm.input_dim, **grouped(8, lr=0.1, seed=0)), HiddenLearner)
    model = ModuleClassifier(QuadraticFC(dm.input_dim, 4, 1), lr=0.1)
    assert not isinstance(model, HiddenLearner)
    refused = r"\(no hidden_units\(\), or first_layer_features\(\) is None\): remove HiddenUnits"
    with pytest.raises(ValueError, match=refused):
        fit(model, dm, 1, callbacks=[HiddenUnits()])
    ntk = LinearizedTwoLayerNet(dm.input_dim, **grouped(8, lr=0.1, seed=0))  # linear in its tangent features
    assert ntk.hidden_units(dm.train_set()[0]) is None
    with pytest.raises(ValueError, match=refused):
        fit(ntk, dm, 1, callbacks=[HiddenUnits()])


def test_a_diverged_members_units_fire_on_nothing():
    dm = small_parity()
    model = TwoLayerNet(dm.input_dim, **grouped(8, lr=0.5, init_scale=0.5, bias=True, seed=0), ensemble_size=2)
    callback = HiddenUnits()
    callback.connect_data(dm)
    with torch.no_grad():
        model.two_layer.w[0].fill_(float("nan"))
    callback.compute(None, model, 0)
    assert callback.member_results()["units_active_share"][0] == 0.0
    assert callback.member_results()["units_silent_inputs"][0] == 100.0


@pytest.mark.parametrize("bad", [dict(split="all"), dict(cadence=0), dict(points_per_decade=0)])
def test_bad_settings_are_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"HiddenUnits\.(split|cadence|points_per_decade)"):
        HiddenUnits(**bad)
