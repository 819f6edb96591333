"""CountAccuracy: the test accuracy and mean output at each count of class-relevant patterns."""

import math

import pytest
import torch

from featlearn.callbacks import CountAccuracy
from featlearn.callbacks.counts import affine_residual, count_means
from featlearn.contracts import CountedData, require
from featlearn.datamodules import BooleanXOR, SparseCoding
from featlearn.models import TwoLayerNet

from ..conftest import grouped  # noqa: TID252


def small_parity(**kwargs) -> SparseCoding:
    return SparseCoding(d=40, D=20, k=5, train_size=2000, test_size=3000, ensemble_size=2, batch_size=200, **kwargs)


@pytest.mark.parametrize("split", ["val", "test"])
def test_the_counts_belong_to_the_rows_of_the_set(split):
    dm = small_parity()
    x, y = dm.eval_set(split)
    counts, k = dm.count_sets(split)
    assert k == 5 and counts.shape == y.shape and counts.dtype == torch.long
    # Parity: y = +1 exactly at the odd counts, row by row, for both members.
    assert torch.equal(y > 0, counts % 2 == 1)
    # The count is the number of relevant patterns: x's coordinate along sum_A M_j is affine in it.
    along = x.double() @ dm.ground_truth().feature.double()  # (S, n)
    for member in range(2):
        values = torch.stack([along[member][counts[member] == s].mean() for s in range(k + 1)])
        steps = values.diff()
        assert torch.allclose(steps, steps[0].expand_as(steps), rtol=1e-6) and steps[0] > 0
    # E.1.1's mixture: counts 0 and k carry 1/4 + 1/64 each, counts 1 and 4 5/64 each.
    share = torch.bincount(counts.reshape(-1), minlength=k + 1).double() / counts.numel()
    assert share[0] == pytest.approx(17 / 64, abs=0.03) and share[1] == pytest.approx(5 / 64, abs=0.02)


def test_a_data_model_without_counts_is_refused_by_name():
    assert isinstance(small_parity(), CountedData)
    with pytest.raises(TypeError, match="CountAccuracy needs a data model that is a featlearn.contracts.CountedData"):
        require(BooleanXOR(dim=4), CountedData, "CountAccuracy")


def test_count_means_leave_an_absent_count_out():
    values = torch.tensor([[1.0, 3.0, 5.0, 7.0]])
    counts = torch.tensor([[0, 0, 2, 2]])
    means = count_means(values, counts, 2)
    assert means[0, 0] == 2.0 and math.isnan(means[0, 1]) and means[0, 2] == 6.0


def test_the_affine_residual_is_zero_on_a_line_and_large_on_parity():
    line = torch.tensor([[-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]])
    alternating = torch.tensor([[-1.0, 1.0, -1.0, 1.0, -1.0, 1.0]])
    assert affine_residual(line)[0] == pytest.approx(0.0, abs=1e-12)
    # Its least-squares line has slope 3/17.5 through (2.5, 0); the largest residual, at s = 1 and 4,
    # is 1 + 1.5 * 3/17.5 of the range 2.
    assert affine_residual(alternating)[0] == pytest.approx((1 + 1.5 * 3 / 17.5) / 2, rel=1e-12)
    # Fewer than three counts present, or a flat row: no residual to speak of.
    assert math.isnan(affine_residual(torch.tensor([[0.0, float("nan"), 1.0]]))[0])
    assert math.isnan(affine_residual(torch.tensor([[2.0, 2.0, 2.0]]))[0])


def test_the_per_count_accuracies_make_up_the_test_accuracy(fit):
    dm = small_parity()
    model = TwoLayerNet(dm.input_dim, **grouped(64, lr=0.5, init_scale=0.5, seed=0), ensemble_size=2)
    callback = CountAccuracy(cadence=10)
    fit(model, dm, 20, callbacks=[callback])
    results = callback.member_results()
    assert set(results) == {f"count_acc_{s}" for s in range(6)} | {"count_affine_residual"}
    x, y = dm.eval_set("test")
    counts, _ = dm.count_sets("test")
    _, error = model.evaluate_dataset(x, y)
    for member in range(2):
        share = torch.bincount(counts[member], minlength=6).double() / counts.shape[1]
        weighted = sum(share[s] * results[f"count_acc_{s}"][member] for s in range(6))
        assert float(weighted) == pytest.approx(100.0 * (1.0 - float(error[member])), abs=1e-6)
    last = callback.history[-1]
    assert last["step"] == 20 and "counts/affine_residual" in last
    assert last["counts/acc_3"] == pytest.approx(sum(results["count_acc_3"]) / 2, abs=1e-9)
