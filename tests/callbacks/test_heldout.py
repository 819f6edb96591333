from types import SimpleNamespace

import pytest
import torch

from featlearn.callbacks import HeldOutAccuracy
from featlearn.datamodules import SparseCoding
from featlearn.models import TwoLayerNet

from ..conftest import grouped  # noqa: TID252


def test_heldout_accuracy_is_the_direct_count(fit):
    data = SparseCoding(
        d=12, D=6, k=3, train_size=100, test_size=300, val_size=0, batch_size=50, eval_batch_size=64, ensemble_size=3
    )
    model = TwoLayerNet(data.input_dim, **grouped(8, lr=0.5, ensemble_size=3, seed=1))
    callback = HeldOutAccuracy(cadence=2, dense_until=1)
    fit(model, data, 4, callbacks=[callback])
    assert [h["step"] for h in callback.history] == [0, 1, 2, 4]
    x, y = data.eval_set("test")  # (S, n, d), (S, n)
    with torch.no_grad():
        direct = (y * model.net(x) > 0).double().mean(dim=1)  # (S,), a fraction as every logged accuracy
    last = callback.history[-1]
    torch.testing.assert_close(callback.member_accuracy[4].double(), direct, rtol=0, atol=1e-4)
    assert last["heldout/test_acc"] == pytest.approx(float(direct.mean()), abs=1e-6)
    assert last["heldout/test_acc_min"] == pytest.approx(float(direct.min()), abs=1e-6)
    assert last["heldout/test_acc_max"] == pytest.approx(float(direct.max()), abs=1e-6)


def test_heldout_accuracy_needs_a_test_set(fit):
    data = SparseCoding(d=12, D=6, k=3, train_size=100, test_size=0, val_size=0, batch_size=50)
    with pytest.raises(ValueError, match="data.test_size > 0"):
        fit(TwoLayerNet(data.input_dim, **grouped(8, lr=0.5)), data, 1, callbacks=[HeldOutAccuracy()])


@pytest.mark.parametrize("kwargs", [{"dense_until": -1}, {"split": "validation"}, {"cadence": 0}])
def test_heldout_accuracy_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError):
        HeldOutAccuracy(**kwargs)


def test_training_set_accuracy_is_logged_for_finite_training_sets(fit):
    data = SparseCoding(d=12, D=6, k=3, train_size=100, test_size=50, val_size=0, batch_size=50, ensemble_size=2)
    model = TwoLayerNet(data.input_dim, **grouped(8, lr=0.5, ensemble_size=2))
    accuracy = HeldOutAccuracy(split="train", cadence=1)
    fit(model, data, 3, callbacks=[accuracy])
    _, error = model.evaluate_dataset(*data.train_set(), chunk=1024)
    assert torch.allclose(accuracy.member_accuracy[3], 1 - error, atol=1e-6)
    logged = accuracy.compute(SimpleNamespace(datamodule=data), model, 3)
    assert logged["trainset/train_acc"] == pytest.approx(float((1 - error).mean()), abs=1e-6)
