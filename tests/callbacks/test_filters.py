"""Convolutional filters as neurons: clusters, Table 7's early-gradient cosines, pictures."""

import pytest
import torch
from pytorch_lightning.loggers import TensorBoardLogger

from featlearn.callbacks import FilterDynamics
from featlearn.callbacks.filters import cluster_filters, early_gradient_cosines
from featlearn.datamodules import ImageDataModule
from featlearn.models import ModuleClassifier, ScaledResNet18, TwoLayerNet


def test_early_gradient_cosines_by_hand():
    e1, e2 = torch.eye(2, dtype=torch.float64)
    grads = torch.stack([e1, e1, e2, e2, e1 + e2, e1 + e2])  # chunk means: e1, e2, e1 + e2
    out = early_gradient_cosines(grads, 3)
    assert out["cos_v1_v2"] == pytest.approx(0.0) and out["cos_v1_v3"] == pytest.approx(2**-0.5)
    assert out["cos_v3_vbar"] == pytest.approx(1.0) and out["cos_v1_vbar"] == pytest.approx(2**-0.5)
    assert set(out) == {"cos_v1_vbar", "cos_v2_vbar", "cos_v3_vbar", "cos_v1_v2", "cos_v1_v3", "cos_v2_v3"}


def test_early_gradient_cosines_make_as_many_chunks_as_asked_when_they_do_not_divide_t():
    e1, e2 = torch.eye(2, dtype=torch.float64)
    grads = torch.stack([e1, e1, e2, e1 + e2])  # T = 4, 3 chunks: [e1, e1], [e2], [e1 + e2]
    out = early_gradient_cosines(grads, 3)
    assert out["cos_v1_v2"] == pytest.approx(0.0) and out["cos_v2_v3"] == pytest.approx(2**-0.5)
    assert len(out) == 6


def test_clusters_of_directions_are_counted_by_the_silhouette():
    gen = torch.Generator().manual_seed(0)
    centres = torch.eye(6, dtype=torch.float64)[:3] * 5  # three orthogonal directions
    filters = torch.cat([c + 0.1 * torch.randn(10, 6, generator=gen, dtype=torch.float64) for c in centres])
    k, labels = cluster_filters(filters)
    assert k == 3 and all(len(set(labels[i * 10 : (i + 1) * 10].tolist())) == 1 for i in range(3))


def _run(fit, tmp_path, callback, steps=6):
    data = ImageDataModule(source="digits", classes=[0, 1], flatten=False, standardize="global", batch_size=16)
    model = ModuleClassifier(ScaledResNet18(3, in_channels=1), lr=0.05, seed=2)
    fit(model, data, steps, logger=TensorBoardLogger(tmp_path, name="filters"), callbacks=[callback])
    return model, data


def test_filters_are_pictured_counted_and_their_early_gradients_tabled(fit, tmp_path):
    callback = FilterDynamics(mds_steps=[0, -1], gradient_steps=6, chunks=3)
    model, data = _run(fit, tmp_path, callback)
    blocks = [f"stages.{stage}.{block}.conv1" for stage in range(4) for block in range(2)]
    assert callback.layers == ["stem.0", *blocks]  # the stem and every residual block
    assert sorted(callback.images) == sorted((name, s) for name in callback.layers for s in (0, 6))
    assert (tmp_path / "filters" / "version_0" / "filters_stem.0_step6.png").is_file()
    assert len(callback.gradients) == 6 and callback.gradients[0].shape == (3, 9)
    assert {"cos_v1_vbar", "cos_v2_v3"} <= set(callback.table) and 0 <= callback.table["filter"] < 3
    assert all(-1 - 1e-9 <= v <= 1 + 1e-9 for k, v in callback.table.items() if k.startswith("cos"))
    assert {h["step"] for h in callback.history} == {0, 6} and "filters/stem.0/clusters" in callback.history[-1]


def test_the_captured_gradient_is_the_updates_gradient(fit, tmp_path):
    callback = FilterDynamics(mds_steps=[], gradient_steps=1, chunks=1)
    _run(fit, tmp_path, callback, steps=1)
    fresh = ModuleClassifier(ScaledResNet18(3, in_channels=1), lr=0.05, seed=2)  # the same initial weights
    data = ImageDataModule(source="digits", classes=[0, 1], flatten=False, standardize="global", batch_size=16)
    x, y = data.train_batch(1)
    fresh.train()
    fresh.member_losses(fresh.training_output(x, 1), y).sum().backward()
    torch.testing.assert_close(callback.gradients[0], fresh.net[0].stem[0].weight.grad.flatten(1).double())


def test_filter_dynamics_needs_convolutions_and_known_layers(tmp_path, fit):
    data = ImageDataModule(source="digits", classes=[0, 1], batch_size=16)
    with pytest.raises(ValueError, match="needs a learner with convolutional filters"):
        fit(TwoLayerNet(64, network={"width": 4}, training=dict(lr=0.1)), data, 1, callbacks=[FilterDynamics()])
    with pytest.raises(ValueError, match="no convolution named 'fc'"):
        _run(fit, tmp_path, FilterDynamics(layers=["fc"]), steps=1)
    for kwargs, name in (
        (dict(gradient_steps=2, chunks=3), "chunks"),
        (dict(gradient_steps=0), "gradient_steps"),
        (dict(max_clusters=1), "max_clusters"),
        (dict(mds_steps=[-2]), "mds_steps"),
    ):
        with pytest.raises(ValueError, match=f"FilterDynamics.{name}"):
            FilterDynamics(**kwargs)


def test_filters_hand_their_change_between_epochs_and_table_7_to_a_study(fit, tmp_path):
    callback = FilterDynamics(mds_steps=[], gradient_steps=6, chunks=3, change_steps=[0, 2, -1])
    model, _ = _run(fit, tmp_path, callback)
    results = callback.member_results()
    # By hand: 1 - cos of each filter between the kept steps, averaged over filters and layers.
    start, middle, end = (callback.snapshots[step] for step in (0, 2, 6))
    early = [
        float(1 - torch.nn.functional.cosine_similarity(start[n], middle[n], dim=1).mean()) for n in callback.layers
    ]
    late = [float(1 - torch.nn.functional.cosine_similarity(middle[n], end[n], dim=1).mean()) for n in callback.layers]
    assert results["filter_change_early"] == [pytest.approx(sum(early) / len(early))]
    assert results["filter_change_late"] == [pytest.approx(sum(late) / len(late))]
    table = [v for k, v in callback.table.items() if k.startswith("cos")]
    assert results["early_gradient_min_cos"] == [min(table)]
    assert set(callback.snapshots) == {0, 2, 6} and not callback.images  # kept, not pictured: none asked
    with pytest.raises(ValueError, match="change_steps must be three increasing steps"):
        FilterDynamics(change_steps=[2, 1, -1])
    with pytest.raises(ValueError, match="change_steps"):
        FilterDynamics(change_steps=[0, -1, 5])
