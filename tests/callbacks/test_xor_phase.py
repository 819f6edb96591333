import math

import pytest
import torch

from featlearn.callbacks import XORPhaseDiagnostics, log_spaced_steps
from featlearn.callbacks.xor_phase import (
    TAU,
    cluster_coverage,
    cluster_points,
    growth_evidence,
    neuron_components,
    signal_heavy,
)
from featlearn.datamodules import BooleanXOR
from featlearn.models import TwoLayerNet

from ..conftest import grouped  # noqa: TID252


def brute_components(w, a, mu_1, mu_2):
    """Table 1 by its matrices, one neuron at a time (float64)."""
    out = []
    for wj, aj in zip(w.double(), a.double(), strict=True):
        P1 = 0.5 * torch.outer(mu_1, mu_1).double()
        P2 = 0.5 * torch.outer(mu_2, mu_2).double()
        sig, opp = (P1 @ wj, P2 @ wj) if aj >= 0 else (P2 @ wj, P1 @ wj)
        out.append((sig.norm(), opp.norm(), (wj - sig - opp).norm()))
    return torch.tensor(out)


@pytest.mark.parametrize("rotate", [False, True])
def test_components_match_table_1(rotate):
    dm = BooleanXOR(dim=7, pair=(2, 5), rotate=rotate)
    mu = dm.ground_truth()
    gen = torch.Generator().manual_seed(0)
    w, a = torch.randn(2, 9, 7, generator=gen), torch.randn(2, 9, generator=gen)
    comp = neuron_components(w, a, mu.mu_1, mu.mu_2)
    for s in range(2):
        brute = brute_components(w[s], a[s], mu.mu_1, mu.mu_2)
        torch.testing.assert_close(comp["sig"][s].double(), brute[:, 0], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(comp["opp"][s].double(), brute[:, 1], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(comp["perp"][s].double(), brute[:, 2], rtol=1e-5, atol=1e-6)
        # cluster: the centre that w_sig points to has positive inner product with w
        centres = torch.stack([mu.mu_1, -mu.mu_1, mu.mu_2, -mu.mu_2])
        for j in range(9):
            assert centres[comp["cluster"][s, j]] @ w[s, j] > 0
            assert (comp["cluster"][s, j] < 2) == bool(a[s, j] >= 0)


def test_coverage_and_signal_heavy_by_hand():
    comp = {
        "sig": torch.tensor([[3.0, 1.0, 5.0, 0.1]]),
        "opp": torch.tensor([[1.0, 1.0, 1.0, 1.0]]),
        "perp": torch.tensor([[1.0, 1.0, 1.0, 1.0]]),
        "cluster": torch.tensor([[0, 1, 2, 3]]),
    }
    heavy = signal_heavy(comp, 1.0)
    assert heavy.tolist() == [[True, False, True, False]]
    torch.testing.assert_close(
        cluster_coverage(heavy, comp["cluster"]), torch.tensor([[0.25, 0.0, 0.25, 0.0]], dtype=torch.float64)
    )


def test_log_spaced_steps():
    steps = log_spaced_steps(1000, 10)
    assert steps[:5] == [0, 1, 2, 3, 4] and steps[-1] == 1000 and 100 in steps and len(steps) == len(set(steps))


def test_logged_values_match_direct_computation(fit):
    dm = BooleanXOR(dim=10, batch_size=64, test_size=500, ensemble_size=2)
    model = TwoLayerNet(10, **grouped(12, lr=0.3, seed=0, ensemble_size=2))
    cb = XORPhaseDiagnostics(cadence=2, quantiles=(0.5,))
    fit(model, dm, 4, callbacks=[cb])
    assert [h["step"] for h in cb.history] == [0, 2, 4]
    last = cb.history[-1]
    w, a = model.net.w.detach(), model.net.a.detach()
    mu_1, mu_2 = dm.ground_truth().mu_1, dm.ground_truth().mu_2
    # margins gamma_mu = y(mu) f(mu) by a direct forward pass of each member
    gammas = []
    for s in range(2):

        def f(v, s=s):
            return (torch.relu(w[s] @ v) @ a[s]).item() / 12

        gammas.append([f(mu_1), f(-mu_1), -f(mu_2), -f(-mu_2)])
    gammas = torch.tensor(gammas)
    assert last["phase/gamma_min"] == pytest.approx(gammas.min(1).values.mean().item(), rel=1e-5, abs=1e-7)
    assert last["phase/gamma_+mu_2"] == pytest.approx(gammas[:, 2].mean().item(), rel=1e-5, abs=1e-7)
    g = 2 / (1 + torch.exp(gammas))
    assert last["phase/g_max"] == pytest.approx(g.max(1).values.mean().item(), rel=1e-5)
    balance = (a.abs() / w.norm(dim=-1)).double()
    assert last["phase/balance_mean"] == pytest.approx(balance.mean().item(), rel=1e-5)
    assert last["phase/balance_q50"] == pytest.approx(torch.quantile(balance, 0.5, dim=1).mean().item(), rel=1e-5)
    x, y = dm.eval_set("test")
    err = [((y[s] * ((torch.relu(x[s] @ w[s].T) @ a[s]) / 12)) <= 0).double().mean() for s in range(2)]
    assert last["phase/test_error"] == pytest.approx(torch.stack(err).mean().item(), rel=1e-6)
    assert cb.history[0]["phase/test_loss"] == pytest.approx(2 * math.log(2), abs=0.01)


def test_phase_boundary_is_detected_on_a_learnable_run(fit):
    dm = BooleanXOR(dim=16, batch_size=512, test_size=2000)
    model = TwoLayerNet(16, **grouped(64, lr=0.3, init_scale=0.3, seed=0))
    cb = XORPhaseDiagnostics(points_per_decade=10)
    fit(model, dm, 120, callbacks=[cb])
    boundary = cb.boundary_steps[0]
    assert boundary is not None and 1 < boundary < 120
    by_step = {h["step"]: h for h in cb.history}
    assert by_step[0]["phase/coverage_min"] == 0.0
    assert by_step[boundary]["phase/coverage_min"] >= 0.1
    assert "phase/boundary_step" in by_step[boundary]
    assert sum("phase/boundary_step" in h for h in cb.history) == 1  # logged once
    assert f"boundary step (per member): {boundary}" in cb.summary()


def test_margin_step_ends_the_signal_heavy_phase_and_the_heavy_set_is_tracked_through_it(fit):
    dm = BooleanXOR(dim=16, batch_size=512, test_size=500, ensemble_size=2)
    model = TwoLayerNet(16, **grouped(64, lr=0.3, init_scale=0.3, seed=0), ensemble_size=2)
    cb = XORPhaseDiagnostics(points_per_decade=40, margin_target=1.0, pictures_per_decade=0)
    fit(model, dm, 200, callbacks=[cb])
    results = cb.member_results()
    assert set(results) == {
        "boundary_step", "margin_step", "final_gamma_min", "heavy_growth", "outside_mass_change",
        "off_signal_sq_at_boundary", "gamma_ratio_at_margin", "balance_at_margin", "growth_rate_ratio",
        "margin_rate_ratio", "linear_rate_ratio", "test_loss_at_boundary",
    }  # fmt: skip
    by_step = {h["step"]: h for h in cb.history}
    for s, (boundary, margin) in enumerate(zip(results["boundary_step"], results["margin_step"], strict=True)):
        assert boundary is not None and margin is not None and boundary < margin < 200
        assert f"phase_members/margin_step_{s}" in by_step[margin]
    # the last margins, computed directly from the trained members (the last step is a cadence step)
    points, labels = cluster_points(dm.ground_truth().mu_1, dm.ground_truth().mu_2)
    with torch.no_grad():
        gamma_min = (labels * model.scores(points)).min(dim=1).values  # (S,)
    assert results["final_gamma_min"] == pytest.approx(gamma_min.tolist(), rel=1e-5)
    assert min(results["final_gamma_min"]) > 1.0
    assert "end of the signal-heavy phase, gamma_min >= 1" in cb.summary()
    # Remark 4.3's evidence: each member's heavy set S is fixed at its boundary and tracked to its margin step.
    for s, track in enumerate(cb.heavy_tracks):
        boundary = cb.boundary_steps[s]
        assert track[0][0] == boundary and all(0.0 <= share <= 1.0 for _, _, share in track)
        assert sum(cb.heavy_sets[s]) > 0  # the neurons that were signal-heavy at the boundary
        window = [p for p in track if p[0] <= cb.margin_steps[s]]
        assert results["heavy_growth"][s] == growth_evidence([p[0] for p in window], [p[1] for p in window])
        assert results["outside_mass_change"][s] == pytest.approx(window[-1][2] - window[0][2])
    assert "phase/heavy_w_sig_mean" in by_step[max(cb.boundary_steps)]
    # Lemma 4.1's E ||w_perp + w_opp||^2 at each member's boundary, Lemma 4.4's balance at its margin step:
    # what the logged mean of the components and of |a| / ||w|| give there, member by member.
    for s in range(2):
        assert results["off_signal_sq_at_boundary"][s] > 0 and 1.0 <= results["gamma_ratio_at_margin"][s] < 100
        assert 0 < results["balance_at_margin"][s] < 10
    assert cb.boundary_stats[0]["off_signal_sq"] == results["off_signal_sq_at_boundary"][0]
    # The test loss at each member's boundary step: the logged mean's members, below 2 log 2 at f = 0.
    assert all(0 < loss < 2 * math.log(2) for loss in results["test_loss_at_boundary"])
    # Section 4.1.1's rate: the recorded eta tau |l'| is the rate 0.3 times tau times a mean |l'| in (0, 2).
    for s in range(2):
        steps = [t for t, _ in cb.rate_tracks[s]]
        assert steps[0] == cb.boundary_steps[s] and steps == [t for t, _, _ in cb.heavy_tracks[s]]
        assert all(0 < rate < 0.3 * TAU * 2 for _, rate in cb.rate_tracks[s])
        assert results["growth_rate_ratio"][s] is not None and results["growth_rate_ratio"][s] > 0
    assert "phase/outside_mass_frac" not in by_step[0]  # no heavy set before the boundary


def test_a_margin_out_of_reach_is_none(fit):
    dm = BooleanXOR(dim=16, batch_size=64, test_size=200)
    cb = XORPhaseDiagnostics(margin_target=1e6, pictures_per_decade=0)
    fit(TwoLayerNet(16, **grouped(16, lr=0.1, init_scale=0.3, seed=0)), dm, 5, callbacks=[cb])
    assert cb.member_results()["margin_step"] == [None]
    assert "not reached" in cb.summary()


def test_callback_refuses_a_data_model_without_xor_ground_truth(fit):
    from featlearn.datamodules import SyntheticDataModule

    class Gaussian(SyntheticDataModule):
        input_dim = 4

        def sample(self, n, generator, device):
            x = torch.randn(n, 4, generator=generator, device=device)
            return x, torch.where(x[:, 0] >= 0, 1.0, -1.0)

    with pytest.raises(ValueError, match="XORPhaseDiagnostics reads GroundTruth.mu_1 and mu_2"):
        fit(TwoLayerNet(4, **grouped(4, lr=0.1, seed=0)), Gaussian(batch_size=8), 2, callbacks=[XORPhaseDiagnostics()])


def test_bad_callback_arguments():
    with pytest.raises(ValueError, match="cadence"):
        XORPhaseDiagnostics(cadence=0)
    with pytest.raises(ValueError, match="boundary_fraction"):
        XORPhaseDiagnostics(boundary_fraction=0.5)
    with pytest.raises(ValueError, match="signal_heavy_ratio"):
        XORPhaseDiagnostics(signal_heavy_ratio=-1)
    with pytest.raises(ValueError, match="margin_target"):
        XORPhaseDiagnostics(margin_target=0)


def test_a_learner_without_neurons_gets_margins_but_no_neuron_metrics(fit):
    from featlearn.models import LinearizedTwoLayerNet

    model = LinearizedTwoLayerNet(10, **grouped(12, lr=0.3, seed=0))
    phases = XORPhaseDiagnostics(cadence=2)
    fit(model, BooleanXOR(dim=10, batch_size=64, test_size=200), 4, callbacks=[phases])
    last = phases.history[-1]
    assert "phase/gamma_min" in last and "phase/test_error" in last
    assert not any(k.startswith(("phase/w_sig", "phase/signal_heavy")) for k in last)
    assert phases.boundary_steps == [None]


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: XORPhaseDiagnostics(quantiles=("half",)), "XORPhaseDiagnostics.quantiles"),
        (lambda: XORPhaseDiagnostics(points_per_decade=True), "XORPhaseDiagnostics.points_per_decade"),
        (lambda: XORPhaseDiagnostics(cadence=0), "XORPhaseDiagnostics.cadence"),
    ],
)
def test_bad_diagnostic_settings_name_the_callback(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_the_neurons_are_drawn_at_log_spaced_steps_with_histograms(fit, tmp_path):
    pytest.importorskip("matplotlib")
    import pytorch_lightning as pl
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    dm = BooleanXOR(dim=16, batch_size=256, test_size=500)
    model = TwoLayerNet(16, **grouped(32, lr=0.3, init_scale=0.3, seed=0))
    cb = XORPhaseDiagnostics(points_per_decade=10, pictures_per_decade=2)
    logger = pl.loggers.TensorBoardLogger(tmp_path, name="xor", default_hp_metric=False)
    fit(model, dm, 100, callbacks=[cb], logger=logger)
    assert cb.pictured_steps == [0, 1, 3, 10, 32, 100]  # 2 per decade, on the diagnostics' own steps
    folder = tmp_path / "xor" / "version_0"
    assert sorted(p.name for p in folder.glob("phase_neurons_step*.png"))[0] == "phase_neurons_step000000.png"
    events = EventAccumulator(str(folder), size_guidance={"images": 0, "histograms": 0})
    events.Reload()
    assert events.Tags()["images"] == ["phase/neurons"] and len(events.Images("phase/neurons")) == 6
    assert set(events.Tags()["histograms"]) == {"phase/a", "phase/sig_over_norm"}
    assert len(events.Histograms("phase/a")) == len(cb.history)  # at every diagnostics step
    assert events.Histograms("phase/a")[0].histogram_value.num == 32


def test_pictures_can_be_turned_off_and_are_validated(fit):
    dm = BooleanXOR(dim=8, batch_size=64, test_size=100)
    cb = XORPhaseDiagnostics(pictures_per_decade=0)
    fit(TwoLayerNet(8, **grouped(8, lr=0.1, seed=0)), dm, 5, callbacks=[cb])
    assert cb.pictured_steps == []
    with pytest.raises(ValueError, match="pictures_per_decade"):
        XORPhaseDiagnostics(pictures_per_decade=-1)


def test_growth_evidence_tells_exponential_from_linear_growth():
    steps = list(range(10, 60, 5))
    assert growth_evidence(steps, [0.01 * math.exp(0.08 * t) for t in steps]) > 2  # exponential fits far better
    assert growth_evidence(steps, [0.5 + 0.03 * t for t in steps]) < -2  # linear fits far better
    assert growth_evidence([1, 2], [1.0, 2.0]) is None  # two points fit both forms exactly
    assert growth_evidence([1, 2, 3], [1.0, 0.0, 2.0]) is None  # no exponential through a zero


def test_heavy_sets_and_tracks_survive_a_checkpoint():
    cb = XORPhaseDiagnostics()
    cb.heavy_sets, cb.heavy_tracks = [[True, False]], [[(3, 0.5, 0.25)]]
    again = XORPhaseDiagnostics()
    again.load_state_dict(cb.state_dict())
    assert again.heavy_sets == [[True, False]] and again.heavy_tracks == [[(3, 0.5, 0.25)]]


def test_the_heavy_sets_growth_follows_section_4_2s_rate_when_both_layers_train_and_falls_below_it_frozen(fit):
    """Section 4.1.1: ||w_sig|| on S grows at the log-rate eta tau |l'(mu)|; Remark 4.3: linearly with a frozen."""
    ratios, margins, linear, tracks = {}, {}, {}, {}  # tracks: Lemma 4.4's (step, gamma_min, log-factor) per member
    for frozen in (False, True):
        dm = BooleanXOR(dim=16, batch_size=512, test_size=200, ensemble_size=2)
        kwargs = grouped(64, lr=0.36, init_scale=0.36, seed=0)
        if frozen:  # Remark 4.3's second layer: frozen at |a| = 1
            kwargs = {**kwargs, "train_second_layer": False, "init": {**kwargs["init"], "a_scale": 1.0}}
        cb = XORPhaseDiagnostics(points_per_decade=40, pictures_per_decade=0, evaluate_test=False)
        fit(TwoLayerNet(16, **kwargs, ensemble_size=2), dm, 200, callbacks=[cb])
        ratios[frozen] = cb.member_results()["growth_rate_ratio"]
        margins[frozen] = cb.member_results()["margin_rate_ratio"]
        linear[frozen] = cb.member_results()["linear_rate_ratio"]
        # evaluate_test off: the test loss is still read once, at each member's boundary step (the plateau)
        assert all(loss is not None for loss in cb.member_results()["test_loss_at_boundary"])
        tracks[frozen] = cb.margin_tracks
    # Measured: 0.97 and 0.97 trained, 0.58 and 0.62 frozen (d = 16, eta = theta = 0.36).
    assert all(abs(r - 1) < 0.1 for r in ratios[False]) and all(r < 0.8 for r in ratios[True]), ratios
    # Lemma 4.4: gamma_min grows by at least (1 + 2 eta tau (1 - o(1)) g_max) a step. Measured: 1.05 and 1.03
    # trained; frozen (outside the lemma), 0.38 and 0.37. Each track starts at the boundary, gamma_min > 0.
    assert all(0.9 < r < 1.2 for r in margins[False]) and all(r < 0.6 for r in margins[True]), margins
    # Remark 4.3: frozen at |a| = 1, ||w_sig|| on S grows linearly at tau |l'(mu)| a step: measured 1.011 and
    # 1.013 of that sum; trained, 1.35 and 1.18 (|a_w| ~ ||w_w|| grows with it: the feedback).
    assert all(abs(r - 1) < 0.05 for r in linear[True]) and all(r > 1.1 for r in linear[False]), linear
    for member in tracks[False]:
        assert all(0 < factor < math.log1p(2 * 0.36 * TAU * 2) for _, _, factor in member)
