import pytest
import torch
from pytorch_lightning.loggers import TensorBoardLogger

from featlearn.callbacks import FeatureAlignment
from featlearn.callbacks.alignment import (
    centre_coverage,
    class_mean_alignment,
    dictionary_snr,
    feature_alignment,
    random_max_cos,
    two_clusters,
)
from featlearn.datamodules import BooleanXOR, GaussianMixture, ImageDataModule, SparseCoding
from featlearn.models import TwoLayerNet

from ..conftest import SHI_PROCESS, grouped  # noqa: TID252


def brute_cos(u, v):
    return float(u @ v) / (float(u.norm()) * float(v.norm()))


def test_feature_alignment_by_hand():
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(7, 5, generator=gen, dtype=torch.float64)
    g = torch.randn(5, generator=gen, dtype=torch.float64)
    w[3] = 2.5 * g  # one neuron exactly on +g
    w[4] = -0.1 * g + 1e-9  # one (almost) on -g
    got = feature_alignment(w, g, top=3, threshold=0.99)
    cos = sorted((brute_cos(wi, g) for wi in w), reverse=True)
    assert float(got["max_cos"]) == pytest.approx(cos[0]) == pytest.approx(1.0)
    assert float(got["max_cos_neg"]) == pytest.approx(-cos[-1])
    assert float(got["top_mean_cos"]) == pytest.approx(sum(cos[:3]) / 3)
    assert float(got["frac_above_pos"]) == pytest.approx(sum(c > 0.99 for c in cos) / 7)
    assert float(got["frac_above_neg"]) == pytest.approx(sum(-c > 0.99 for c in cos) / 7)


def test_dictionary_snr_by_hand():
    gen = torch.Generator().manual_seed(1)
    q, _ = torch.linalg.qr(torch.randn(8, 6, generator=gen, dtype=torch.float64))  # M: (8, 6) orthonormal
    relevant = torch.tensor([1, 4])
    w = torch.randn(5, 8, generator=gen, dtype=torch.float64)
    got = dictionary_snr(w, q, relevant)
    snrs, fracs = [], []
    for wi in w:
        t = [float(wi @ q[:, j]) for j in range(6)]
        on = [t[j] ** 2 for j in (1, 4)]
        off = [t[j] ** 2 for j in (0, 2, 3, 5)]
        snrs.append((sum(on) / 2) ** 0.5 / (sum(off) / 4) ** 0.5)
        fracs.append(sum(on) / (sum(on) + sum(off)))
    assert float(got["snr_max"]) == pytest.approx(max(snrs))
    assert float(got["snr_median"]) == pytest.approx(float(torch.tensor(snrs).median()))
    assert float(got["relevant_frac_mean"]) == pytest.approx(sum(fracs) / 5)


def test_centre_coverage_by_hand():
    centres = torch.tensor([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [1.0, 1.0, 0]], dtype=torch.float64)
    w = torch.tensor([[2.0, 0.1, 0], [0, 0.5, 0.5], [1.0, 1.0, 0.01]], dtype=torch.float64)
    got = centre_coverage(w, centres, threshold=0.9)
    best = [max(brute_cos(wi, c) for wi in w) for c in centres]
    assert float(got["centre_coverage"]) == pytest.approx(sum(b >= 0.9 for b in best) / 4)
    assert float(got["centre_max_cos_mean"]) == pytest.approx(sum(best) / 4)


def shi_model(dm, **kwargs):
    return TwoLayerNet(
        dm.input_dim,
        **grouped(
            16,
            lr=0.05,
            **SHI_PROCESS,
            sigma_w=0.2,
            sigma_b=0.04,
            sigma_a=1.0,
            seed=0,
            **kwargs,
        ),
    )


def test_callback_logs_direct_values_and_draws_mds_pictures(fit, tmp_path):
    dm = SparseCoding(d=30, D=12, k=3, batch_size=64, test_size=64, ensemble_size=2)
    model = shi_model(dm, ensemble_size=2)
    cb = FeatureAlignment(cadence=5, dense_until=3, mds_steps=[0, 2, -1])
    logger = TensorBoardLogger(tmp_path, name="align")
    fit(model, dm, 6, callbacks=[cb], logger=logger)
    assert [h["step"] for h in cb.history] == [0, 1, 2, 3, 5, 6]
    last = cb.history[-1]
    truth = dm.ground_truth()
    expected = torch.stack(
        [feature_alignment(ws.double(), truth.feature.double(), 10, 0.99)["max_cos"] for ws in model.net.w.detach()]
    ).mean()
    assert last["align/max_cos"] == pytest.approx(float(expected))
    assert {"align/snr_median", "align/relevant_frac_mean", "align/frac_above_neg"} <= set(last)
    assert sorted(cb.images) == [0, 2, 6]
    image = cb.images[2]
    assert image.dtype == torch.uint8 and image.shape[0] == 3 and image.float().std() > 0
    pngs = sorted(p.name for p in (tmp_path / "align" / "version_0").glob("mds_step*.png"))
    assert pngs == ["mds_step0.png", "mds_step2.png", "mds_step6.png"]


def test_gaussian_mixture_coverage_and_picture(fit):
    dm = GaussianMixture(d=12, k=2, sigma_r=0.5, batch_size=64, test_size=64)
    model = TwoLayerNet(
        dm.input_dim, **grouped(16, lr=0.5, bias=True, output_scale="standard", mean_field_gradient=False, seed=0)
    )
    cb = FeatureAlignment(cadence=4, mds_steps=[-1])
    fit(model, dm, 4, callbacks=[cb])
    last = cb.history[-1]
    assert 0.0 <= last["align/centre_coverage"] <= 1.0 and "align/max_cos" not in last
    assert sorted(cb.images) == [4]


def test_refuses_a_data_model_without_features(fit):
    with pytest.raises(ValueError, match="FeatureAlignment reads GroundTruth.feature or centres or class_means"):
        fit(
            TwoLayerNet(6, **grouped(4, lr=0.1, seed=0)),
            BooleanXOR(dim=6, batch_size=8),
            2,
            callbacks=[FeatureAlignment()],
        )


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(cos_threshold=1.5), "cos_threshold"),
        (dict(top=0), "top"),
        (dict(dense_until=-1), "dense_until"),
        (dict(mds_steps=[-3]), "mds_steps"),
        (dict(cadence="sometimes"), "cadence"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FeatureAlignment(**kwargs)


def test_a_learner_without_neurons_gets_no_alignment_and_compare_agrees(fit):
    """The NTK has no learned first layer: FeatureAlignment logs nothing, as compare reports NA."""
    from featlearn.models import LinearizedTwoLayerNet

    dm = SparseCoding(d=30, D=12, k=3, batch_size=64, test_size=64)
    model = LinearizedTwoLayerNet(dm.input_dim, **grouped(16, lr=0.1, seed=0))
    cb = FeatureAlignment(cadence=2, mds_steps=[0, -1])
    fit(model, dm, 3, callbacks=[cb])
    assert model.first_layer_features() is None and cb.history == [] and cb.images == {}


def test_mds_steps_refuse_non_steps():
    with pytest.raises(ValueError, match="FeatureAlignment.mds_steps"):
        FeatureAlignment(mds_steps=[0, True])


def test_class_mean_alignment_by_hand():
    w = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], dtype=torch.float64)  # (p=3, d=2)
    means = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)  # class -1 along e1, +1 along e2
    out = class_mean_alignment(w, means, torch.tensor([-1.0, 1.0]), torch.tensor([-1.0, 1.0, 1.0], dtype=torch.float64))
    assert float(out["class_mean_cos"]) == pytest.approx((1 + 1 + 2**-0.5) / 3)
    # Neuron 3 is equally near both means; argmax picks the first (y = -1) and its a > 0 disagrees.
    assert float(out["class_mean_sign_agreement"]) == pytest.approx(2 / 3)
    assert "class_mean_sign_agreement" not in class_mean_alignment(w, means, torch.tensor([-1.0, 1.0]), None)


def test_real_images_get_class_mean_metrics_and_pictures_coloured_by_output_sign(fit, tmp_path):
    dm = ImageDataModule(source="digits", classes=[0, 1], batch_size=32, ensemble_size=2, unit_second_moment=True)
    model = TwoLayerNet(
        dm.input_dim,
        **grouped(10, lr=0.2, bias=True, output_scale="standard", mean_field_gradient=False, ensemble_size=2, seed=0),
    )
    cb = FeatureAlignment(cadence=5, dense_until=0, mds_steps=[0, -1])
    fit(model, dm, 5, callbacks=[cb], logger=TensorBoardLogger(tmp_path, name="real"))
    truth = dm.ground_truth()
    expected = torch.stack(
        [
            class_mean_alignment(ws.double(), truth.class_means.double(), truth.class_mean_labels, a.double())[
                "class_mean_sign_agreement"
            ]
            for ws, a in zip(model.net.w.detach(), model.net.a.detach(), strict=True)
        ]
    ).mean()
    assert cb.history[-1]["align/class_mean_sign_agreement"] == pytest.approx(float(expected))
    assert torch.equal(cb.output_signs[5], torch.sign(model.net.a[0].detach()).double())
    assert sorted(cb.images) == [0, 5] and (tmp_path / "real" / "version_0" / "mds_step5.png").is_file()


def test_two_clusters_by_hand():
    # Two groups of three directions around +e1 and -e1 (p=6, d=3): each neuron's cosine to its
    # group's centre is that of (1, +-0.1, 0) to e1, and the two centres point opposite ways.
    w = torch.tensor(
        [[1.0, 0.1, 0.0], [1.0, -0.1, 0.0], [2.0, 0.0, 0.0], [-1.0, 0.0, 0.1], [-1.0, 0.0, -0.1], [-3.0, 0.0, 0.0]],
        dtype=torch.float64,
    )
    out = two_clusters(w)
    u = torch.nn.functional.normalize(w, dim=1)
    centre = torch.nn.functional.normalize(u[:3].mean(0), dim=0)  # along e1 by symmetry
    assert float(out["cluster_cos"]) == pytest.approx(float((u[:3] @ centre).mean()))
    assert float(out["centre_cos"]) == pytest.approx(-1.0)
    # Random directions: about sqrt(2/p) within a group (the mean of p/2 near-orthogonal vectors).
    random = two_clusters(torch.randn(50, 784, generator=torch.Generator().manual_seed(0), dtype=torch.float64))
    assert 0.15 < float(random["cluster_cos"]) < 0.3
    # One direction repeated: one group, fully gathered.
    assert float(two_clusters(torch.ones(4, 3))["cluster_cos"]) == 1.0


def test_real_images_hand_the_clusters_at_the_first_and_last_step_to_a_study(fit):
    dm = ImageDataModule(source="digits", classes=[0, 1], batch_size=32, ensemble_size=2, unit_second_moment=True)
    model = TwoLayerNet(
        dm.input_dim,
        **grouped(10, lr=0.2, bias=True, output_scale="standard", mean_field_gradient=False, ensemble_size=2, seed=0),
    )
    cb = FeatureAlignment(cadence=2, dense_until=0, mds_steps=[])
    fit(model, dm, 6, callbacks=[cb])
    results = cb.member_results()
    assert sorted(cb.member_clusters) == [0, 6]  # only the first and the last step are kept
    for s, ws in enumerate(model.net.w.detach()):
        assert results["cluster_cos"][s] == pytest.approx(float(two_clusters(ws)["cluster_cos"]))
        assert results["centre_cos"][s] == pytest.approx(float(two_clusters(ws)["centre_cos"]))
    assert len(results["cluster_cos_start"]) == 2 and results["cluster_cos_start"] != results["cluster_cos"]
    assert cb.history[0]["align/cluster_cos"] == pytest.approx(sum(results["cluster_cos_start"]) / 2)
    # On real data the neurons' cosine with their nearest class mean too, at the same two steps.
    truth = dm.ground_truth()
    for s, ws in enumerate(model.net.w.detach()):
        means, labels = truth.class_means.double(), truth.class_mean_labels
        expected = class_mean_alignment(ws.double(), means, labels, None)["class_mean_cos"]
        assert results["class_mean_cos"][s] == pytest.approx(float(expected))
    assert cb.history[0]["align/class_mean_cos"] == pytest.approx(sum(results["class_mean_cos_start"]) / 2)
    assert FeatureAlignment().member_results() == {}  # nothing computed: nothing handed over


def test_clusters_on_synthetic_data_only_when_asked(fit):
    def run(**kwargs):
        dm = GaussianMixture(d=12, k=2, sigma_r=0.5, batch_size=64, test_size=64)
        model = TwoLayerNet(
            dm.input_dim, **grouped(16, lr=0.5, bias=True, output_scale="standard", mean_field_gradient=False, seed=0)
        )
        cb = FeatureAlignment(cadence=4, dense_until=0, mds_steps=[], **kwargs)
        fit(model, dm, 4, callbacks=[cb])
        return cb, model

    default, _ = run()
    assert default.member_results() == {} and "align/cluster_cos" not in default.history[-1]
    asked, model = run(clusters=True)
    assert sorted(asked.member_clusters) == [0, 4] and "align/centre_cos" in asked.history[-1]
    expected = two_clusters(model.net.w.detach()[0])
    assert asked.member_results()["centre_cos"] == [pytest.approx(float(expected["centre_cos"]))]


@pytest.mark.parametrize("value", ["yes", 1, 0.0])
def test_clusters_refuses_what_is_not_a_flag(value):
    with pytest.raises(ValueError, match="FeatureAlignment.clusters must be true, false or null"):
        FeatureAlignment(clusters=value)


def test_random_max_cos_matches_sampled_directions():
    """The exact law of the largest cosine of n random directions against a sampled one (d = 100, n = 300)."""
    law = random_max_cos(100, 300)
    gen = torch.Generator().manual_seed(0)
    largest = []
    for _ in range(4):  # 4 x 500 draws of 300 directions, 60 MB at a time
        g = torch.randn(500, 300, 100, generator=gen, dtype=torch.float64)
        largest.append((g[..., 0] / g.norm(dim=-1)).max(dim=1).values)  # cos with e_1, the largest of 300: (500,)
    largest = torch.cat(largest)  # (2000,)
    assert abs(float(largest.mean()) - law["mean"]) < 3 * law["std"] / 2000**0.5
    assert float(largest.std()) == pytest.approx(law["std"], rel=0.1)
    inside = ((largest >= law["q025"]) & (largest <= law["q975"])).double().mean()
    assert float(inside) == pytest.approx(0.95, abs=0.02)
    # The numbers the Shi report's RF reasons cite (featlearn/papers/shi2022.yaml).
    assert (round(law["mean"], 3), round(law["std"], 3), round(law["q975"], 3)) == (0.284, 0.036, 0.366)
    wide = random_max_cos(500, 300)
    assert (round(wide["mean"], 3), round(wide["std"], 3), round(wide["q975"], 3)) == (0.128, 0.017, 0.167)
