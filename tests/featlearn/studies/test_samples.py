import csv
import json
import math
import subprocess
import sys

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import featlearn.studies.trials as trials_module
from featlearn.cli import build_cli
from featlearn.studies.exponents import fit_exponent
from featlearn.studies.samples import SampleSearch, load_study, samples, samples_command
from featlearn.studies.scaling import apply_scale, evaluate_expression
from featlearn.studies.trials import Launcher, Trial, measure_run, merge_configs, run_trials

from ...conftest import CONFIGS  # noqa: TID252

# Glasgow's XOR shrunk: width 2d, batch d log d, 60 % of the seeds to 0.2 test error.
TINY_STUDY = {
    "dims": [4, 8],
    "seeds": 2,
    "target_error": 0.2,
    "pass_fraction": 0.5,
    "resolution": 1.5,
    "base": {
        "trainer": {"callbacks": [], "callbacks+": [], "enable_checkpointing": False, "log_every_n_steps": 5},
        "data": {"init_args": {"test_size": 512, "val_size": 0}},
    },
    "scale": {
        "data.init_args.dim": "d",
        "data.init_args.batch_size": "ceil(d * log(d))",
        "model.init_args.network.width": "2 * d",
        "model.init_args.init.scale": "1 / log(d)",
    },
    "methods": {
        "Network": {"scale": {"model.init_args.training.lr": "1 / log(d)"}},
        "NTK": {"model": {"class_path": "LinearizedTwoLayerNet"}, "scale": {"model.init_args.training.lr": 3.0}},
    },
}


TINY_XOR = {"dim": 8, "batch_size": 32, "test_size": 256, "val_size": 0}


def write_study(folder, study=TINY_STUDY):
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def read_csv(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    """The tiny study end to end: (out folder, returned summary, argv)."""
    folder = tmp_path_factory.mktemp("samples")
    argv = ["--config", "glasgow_xor", "--study", str(write_study(folder)), "--out", str(folder / "out")]
    return folder / "out", samples_command(argv, build_cli), argv


# ---------------------------------------------------------------------- pure parts
def test_expressions_in_d():
    assert evaluate_expression("ceil(d * log(d))", 16) == math.ceil(16 * math.log(16))
    assert evaluate_expression("4 * d", 8) == 32
    assert evaluate_expression("max(2, d // 3) ** 2 - -1", 9) == 10
    assert evaluate_expression(0.5, 3) == 0.5
    for bad in ("__import__('os')", "d.real", "e ** 2", "log(d", "[d]", "1 / (d - 4)"):
        with pytest.raises(ValueError, match=r"scale\.x"):
            evaluate_expression(bad, 4, "scale.x")


def test_scaling_sets_nested_paths_and_keeps_the_rest():
    config = {"model": {"init_args": {"network": {"width": 3}, "loss": "logistic"}}}
    scaled = apply_scale(config, {"model.init_args.network.width": "4 * d", "data.init_args.dim": "d", "x.lr": 3.0}, 8)
    assert scaled["model"]["init_args"] == {"network": {"width": 32}, "loss": "logistic"}
    assert scaled["data"]["init_args"]["dim"] == 8 and isinstance(scaled["data"]["init_args"]["dim"], int)
    assert scaled["x"]["lr"] == 3.0 and isinstance(scaled["x"]["lr"], float)
    assert config["model"]["init_args"]["network"]["width"] == 3  # input untouched
    with pytest.raises(ValueError, match="'loss' is not a mapping"):
        apply_scale(config, {"model.init_args.loss.value": 1}, 8)


def run_search(threshold, k_min=1, k_max=4096, resolution=1.25):
    search = SampleSearch(unit=1, k_min=k_min, k_max=k_max, resolution=resolution)
    tried = []
    while (k := search.next_budget()) is not None:
        assert k not in tried, "a budget is never tried twice"
        tried.append(k)
        search.record(k, k >= threshold)
    return search, tried


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4096), st.sampled_from([1.1, 1.25, 2.0]))
def test_search_brackets_any_monotone_threshold(threshold, resolution):
    search, tried = run_search(threshold, resolution=resolution)
    assert search.k_pass == min(k for k in tried if k >= threshold)
    assert search.k_pass >= threshold
    if threshold == 1:
        assert search.status == "at_min" and search.k_fail is None
    else:
        assert search.status == "found" and search.k_fail < threshold
        assert search.k_pass / search.k_fail <= resolution or search.k_pass - search.k_fail == 1
    assert len(tried) <= 2 * math.log2(4096) + 2  # doubling, then bisection


def test_search_that_never_passes_stops_at_the_largest_budget():
    search, tried = run_search(10**9, k_max=1000)
    assert search.status == "not_found" and tried[-1] == 1000 and tried[:3] == [1, 2, 4]


def test_search_keeps_the_smallest_pass_when_results_are_not_monotone():
    search = SampleSearch(unit=10, k_min=1, k_max=64, resolution=1.25)
    for k, ok in ((1, False), (2, False), (4, True), (3, True)):
        search.record(k, ok)
    search.record(8, False)  # a larger budget failing contradicts monotonicity: the bracket keeps (2, 3]
    assert (search.k_fail, search.k_pass, search.next_budget()) == (2, 3, None)


def test_exponent_fit_recovers_a_power_law_and_its_bracket_interval():
    points = [(d, round(3 * d**1.5), round(3 * d**1.5 / 1.2)) for d in (8, 16, 32, 64, 128)]
    fit = fit_exponent(points)
    assert fit["alpha"] == pytest.approx(1.5, abs=0.01)
    assert fit["stderr"] < 0.01
    assert fit["ci_low"] < 1.5 < fit["ci_high"] and fit["ci_high"] - fit["ci_low"] < 0.3
    assert fit_exponent([(8, 100, 80), (8, 110, 90)]) is None  # one dimension: no slope


# ---------------------------------------------------------------------- bad input
def never_build(*args, **kwargs):
    raise AssertionError("no trial may run on bad input")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--dims", "0,8"], "--dims must be positive integers"),
        (["--dims", "8,x"], "comma-separated integers"),
        (["--dims", "8,8"], "twice"),
        (["--target-error", "0.5"], r"--target-error must lie in \(0, 0.5\)"),
        (["--target-error", "0"], r"--target-error must lie in \(0, 0.5\)"),
        (["--seeds", "1"], "--seeds must be an integer >= 2"),
        (["--pass-fraction", "0"], "--pass-fraction"),
        (["--resolution", "1"], "--resolution must be > 1"),
        (["--only", "Kernel"], r"--only names \['Kernel'\] are not in the study"),
        (["--budget", "finite", "--n-max", "10"], "at d = 8 has batch m = 17 > --n-max 10"),
        (["--epochs", "0", "--budget", "finite"], "--epochs must be > 0"),
        (["--slurm-time", "0"], "--slurm-time must be >= 1"),
    ],
)
def test_bad_input_is_refused_before_any_trial(tmp_path, args, match):
    argv = ["--config", "glasgow_xor", "--study", str(write_study(tmp_path)), "--out", str(tmp_path / "o"), *args]
    with pytest.raises(ValueError, match=match):
        samples_command(argv, never_build)
    assert not (tmp_path / "o" / "trials").exists()


def test_bad_study_files_are_refused(tmp_path):
    for study, match in (
        ({**TINY_STUDY, "dimz": [4]}, "unknown keys"),
        ({**TINY_STUDY, "methods": {}}, "non-empty mapping"),
        ({**TINY_STUDY, "methods": {"A": {"optimizer": 1}}}, "unknown keys"),
        ({**TINY_STUDY, "scale": {"model.init_args.training.lr": "exp(d)"}}, r"scale\.model\.init_args\.training\.lr"),
        ({**TINY_STUDY, "scale": {"data.init_args.batch_size": "d / 3"}}, "one positive integer"),
    ):
        path = write_study(tmp_path, study)
        with pytest.raises(ValueError, match=match):
            samples_command(
                ["--config", "glasgow_xor", "--study", str(path), "--out", str(tmp_path / "o")], never_build
            )


def test_console_script_reports_bad_input_without_a_traceback(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "featlearn", "samples", "--config", "glasgow_xor", "--out", str(tmp_path)]
        + ["--seeds", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "featlearn samples: error: --seeds must be" in done.stderr
    assert "Traceback" not in done.stderr


SHIPPED_STUDIES = {
    "glasgow_cpu": ["Network", "NTK"],
    "glasgow_gpu": ["Network", "NTK"],
    "glasgow_ranges": ["Network", "Network, p = d", "Network, eta = theta/4", "Network, m = d/(2 theta)"],
}


@pytest.mark.parametrize("name", SHIPPED_STUDIES)
def test_shipped_study_files_run(tmp_path, name):
    """Each shipped study, shrunk to d = 4 and a loose target: it runs its trials and writes its table."""
    argv = ["--config", "glasgow_xor", "--study", f"samples/{name}", "--out", str(tmp_path)]
    options = ["--dims", "4", "--seeds", "2", "--target-error", "0.3", "--resolution", "2", "--n-max", "8192"]
    summary = samples_command([*argv, *options], build_cli)  # the cap ends a search that diverges at every budget
    assert [row["method"] for row in summary.rows] == SHIPPED_STUDIES[name]
    # Below Theorem 3.1's minibatch (m < d/theta) SGD may diverge at every budget at d = 4: a search may end unfound.
    outside = {row["method"] for row in summary.rows if ", m = " in row["method"]}
    assert all(row["status"] in ("found", "at_min") or row["method"] in outside for row in summary.rows)
    assert (tmp_path / "samples.md").is_file()


def test_shipped_study_files_load_and_scale():
    assert {path.stem for path in (CONFIGS / "samples").glob("*.yaml")} == set(SHIPPED_STUDIES)  # each one run above
    for name, methods in SHIPPED_STUDIES.items():
        study = load_study(CONFIGS / "samples" / f"{name}.yaml")
        assert [m.name for m in study.methods] == methods
        assert {"dims", "seeds", "target_error"} <= set(study.options)


# ---------------------------------------------------------------------- end to end
def test_study_writes_its_table_plot_and_trials(study_run):
    out, summary, _ = study_run
    rows = read_csv(out / "samples.csv")
    assert [(r["method"], r["d"]) for r in rows] == [("Network", "4"), ("Network", "8"), ("NTK", "4"), ("NTK", "8")]
    trials = read_csv(out / "trials.csv")
    assert all(len(t["seed_errors"].split()) == 2 and t["split"] == "test" for t in trials)  # what the bootstrap draws
    assert set(summary.outcomes) == {"Network", "NTK"} and summary.pass_fraction == 0.5
    for row in rows:
        mine = [t for t in trials if t["method"] == row["method"] and t["d"] == row["d"]]
        assert row["status"] in ("found", "at_min")
        assert row["n_star"] == row["n_pass"]
        passing = [int(t["n"]) for t in mine if t["passed"] == "1"]
        assert int(row["n_pass"]) == min(passing)  # the smallest budget that passed
        if row["status"] == "found":
            n_fail, n_pass, m = int(row["n_fail"]), int(row["n_pass"]), int(row["batch_size"])
            assert n_fail < n_pass and (n_pass <= 1.5 * n_fail or n_pass - n_fail == m)  # resolution or one step
        assert all(int(t["n"]) % int(row["batch_size"]) == 0 for t in mine)  # online: whole steps of m
    md = (out / "samples.md").read_text()
    assert "| Network | 4 |" in md and "alpha" in md
    assert (out / "samples.png").stat().st_size > 5000
    events = EventAccumulator(str(next((out / "tensorboard" / "samples").glob("events.*")))).Reload()
    assert "samples/n_star" in events.Tags()["images"]
    assert set(summary.fits) == {"Network", "NTK"}


def test_any_trial_runs_alone_with_featlearn_fit(study_run):
    out, _, _ = study_run
    folder = sorted((out / "trials" / "ntk" / "d8").glob("n*"))[0]
    saved = json.loads((folder / "result.json").read_text())["metrics"]
    again = measure_run(folder / "config.yaml", build_cli)
    assert again["test_acc"] == pytest.approx(saved["test_acc"], abs=1e-9)
    config = yaml.safe_load((folder / "config.yaml").read_text())
    assert config["model"]["class_path"] == "LinearizedTwoLayerNet"
    assert config["data"]["init_args"]["dim"] == 8 and config["model"]["init_args"]["network"]["width"] == 16
    assert config["trainer"]["max_steps"] * config["data"]["init_args"]["batch_size"] == int(folder.name[1:])


def test_interrupted_study_resumes_from_finished_trials(study_run, tmp_path, monkeypatch, capsys):
    out, _, argv = study_run
    real_run = trials_module.measure_run
    calls = []

    def interrupted(path, build):
        calls.append(path)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real_run(path, build)

    monkeypatch.setattr(trials_module, "measure_run", interrupted)
    args = [*argv[:-1], str(tmp_path / "resumed")]
    with pytest.raises(KeyboardInterrupt):
        samples_command(args, build_cli)
    monkeypatch.setattr(trials_module, "measure_run", real_run)
    capsys.readouterr()
    samples_command(args, build_cli)
    log = capsys.readouterr().out
    assert log.count("finished earlier") == 4
    assert (tmp_path / "resumed" / "samples.csv").read_text() == (out / "samples.csv").read_text()


def test_rerun_trains_nothing_and_changed_settings_do_not_mix(study_run):
    out, _, argv = study_run
    samples_command(argv, never_build)  # every trial finished: nothing is built
    with pytest.raises(ValueError, match="--overwrite"):
        samples_command([*argv, "--seeds", "3"], never_build)


def test_finite_budget_trains_a_set_of_n_for_the_stated_epochs(tmp_path):
    study = {**TINY_STUDY, "dims": [4], "methods": {"Network": TINY_STUDY["methods"]["Network"]}}
    argv = ["--config", "glasgow_xor", "--study", str(write_study(tmp_path, study)), "--out", str(tmp_path / "o")]
    summary = samples_command([*argv, "--budget", "finite", "--epochs", "3"], build_cli)
    trials = read_csv(tmp_path / "o" / "trials.csv")
    m = math.ceil(4 * math.log(4))
    assert int(trials[0]["n"]) == m  # the smallest budget is one batch
    for trial in trials:
        assert int(trial["steps"]) == math.ceil(3 * int(trial["n"]) / m)
        assert trial["train_acc_mean"] != ""
    assert summary.rows[0]["budget"] == "finite"


# ---------------------------------------------------------------------- submitit
def test_submitit_local_executor_runs_the_same_trial(tmp_path):
    """The cluster path (one submitit job per trial) in local subprocesses gives the local result."""
    folder = tmp_path / "trial"
    experiment = yaml.safe_load((CONFIGS / "experiments" / "glasgow_xor.yaml").read_text())
    config = merge_configs(experiment, yaml.safe_load((CONFIGS / "debug" / "smoke.yaml").read_text()))
    config = merge_configs(config, {"trainer": {"logger": False, "callbacks+": []}, "data": {"init_args": TINY_XOR}})
    config["model"]["init_args"].update(ensemble_size=2, network={"width": 8})
    local = run_trials([Trial("smoke", tmp_path / "local", config)], build_cli)["smoke"]
    launcher = Launcher(kind="submitit-local", folder=tmp_path / "submitit", time_min=5)
    remote = run_trials([Trial("smoke", folder, config)], build_cli, launcher)["smoke"]  # pickled by name, run there
    assert remote["metrics"]["test_acc"] == pytest.approx(local["metrics"]["test_acc"], abs=1e-9)
    assert json.loads((folder / "result.json").read_text())["metrics"] == remote["metrics"]
    assert list((tmp_path / "submitit").rglob("*_log.out"))  # submitit's own job logs


def test_the_log_power_fit_recovers_k_of_d_log_k_d_and_effective_slopes_are_those_of_the_forms():
    from featlearn.studies.exponents import effective_slope, fit_log_power

    dims = [8, 16, 32, 64, 128]
    exact = [(d, round(7 * d * math.log(d) ** 2), None) for d in dims]  # n* = 7 d log^2 d, unbracketed
    fit = fit_log_power(exact)
    assert fit["k"] == pytest.approx(2.0, abs=0.01) and fit["points"] == 5
    assert fit["ci_low"] <= 2.0 <= fit["ci_high"] and fit["ci_high"] - fit["ci_low"] < 0.05
    bracketed = [(d, n, round(n / 1.25)) for d, n, _ in exact]  # n* anywhere in (n / 1.25, n]: a wider interval
    wide = fit_log_power(bracketed)
    assert wide["ci_high"] - wide["ci_low"] > fit["ci_high"] - fit["ci_low"]
    assert fit_log_power([(2, 10, None), (16, 100, None)]) is None  # log log 2 < 0: one usable d
    # d^2 log d looks steeper than d^2 to a power-law fit over small d: 2 + about 1 / log d.
    assert effective_slope(dims, lambda d: 2 * math.log(d)) == pytest.approx(2.0)
    steeper = effective_slope(dims, lambda d: 2 * math.log(d) + math.log(math.log(d)))
    assert 2.25 < steeper < 2.35


def test_a_diverged_trial_fails_its_budget_and_the_search_goes_on():
    from featlearn.studies.samples import Settings, passed

    settings = Settings(
        dims=[8],
        seeds=4,
        target_error=0.05,
        pass_fraction=0.75,
        resolution=1.25,
        budget="online",
        epochs=1,
        n_max=10**9,
    )
    assert passed({"diverged": "Training diverged: the loss became NaN at update step 7"}, settings) == (False, 0)
    assert passed({"test_acc": [99.0, 99.0, 99.0, 90.0]}, settings) == (True, 3)


def test_samples_called_from_python_is_the_command_s_study(study_run):
    """The study as a function: the same trials (all reused), a SampleComplexityResult with n*(d) per method."""
    out, summary, argv = study_run
    study = argv[argv.index("--study") + 1]
    result = samples(["glasgow_xor"], out, study=study, build=never_build)  # every trial finished: nothing is built
    assert result.rows == summary.rows and result.out == out
    assert result.fits.keys() == summary.fits.keys()
    row = result.rows[0]
    assert result.n_star(row["method"], row["d"]) == (None if row["n_star"] == "" else row["n_star"])
    with pytest.raises(ValueError, match=r"^seeds must be an integer >= 2"):  # named as in Python
        samples(["glasgow_xor"], out, study=study, seeds=1, build=never_build)


def test_a_tuned_method_chooses_its_constant_per_d_on_the_validation_set_then_searches_n_star_on_test(tmp_path):
    """The NTK's rate over a grid, per d: each value's validation n*, the best value's test n*, trials shared."""
    study = merge_configs(TINY_STUDY, {"dims": [4, 8]})
    study["methods"] = {
        "NTK": {
            "model": {"class_path": "LinearizedTwoLayerNet"},
            "data": {"init_args": {"val_size": 512}},
            "tune": {
                "model.init_args.training.lr": [0.01, 3.0]
            },  # a rate that cannot learn in the budget, one that can
        }
    }
    argv = ["--config", "glasgow_xor", "--study", str(write_study(tmp_path, study)), "--out", str(tmp_path / "o")]
    summary = samples_command([*argv, "--n-max", "4096"], build_cli)
    out = tmp_path / "o"
    tuning = read_csv(out / "tuning.csv")
    assert [(r["d"], r["value"], r["chosen"]) for r in tuning] == [
        ("4", "0.01", "0"),
        ("4", "3.0", "1"),
        ("8", "0.01", "0"),
        ("8", "3.0", "1"),
    ]
    for row in summary.rows:  # the chosen value's n*, on the test set; 3.0 is the grid's end: flagged
        assert row["tuned"] == "3.0" and row["edge"] == 1 and row["status"] in ("found", "at_min")
        best = next(int(r["val_n_star"]) for r in tuning if r["d"] == str(row["d"]) and r["chosen"] == "1")
        slow = next(r for r in tuning if r["d"] == str(row["d"]) and r["chosen"] == "0")
        # The slow rate tries no budget above the best value's: it needs no more to be "not better".
        assert slow["val_n_star"] == "" and slow["status"] == "not better (stopped at the best)"
        trials = read_csv(out / "trials.csv")
        tried = [
            int(t["n"]) for t in trials if t["method"] == f"NTK [lr = {slow['value']}]" and t["d"] == str(row["d"])
        ]
        assert tried and max(tried) <= 2 * best  # the best's first passing budget, at most twice its final n*
    trials = read_csv(out / "trials.csv")
    assert {t["split"] for t in trials if t["method"] == "NTK"} == {"test"}
    assert {t["split"] for t in trials if t["method"].startswith("NTK [lr = ")} == {"val"}
    # The test search runs in the chosen value's folder: a budget the grid tried is reused, not retrained.
    assert {p.name for p in (out / "trials").iterdir()} == {"ntk_lr_0_01", "ntk_lr_3_0"}
    for d in ("4", "8"):
        val = {t["n"] for t in trials if t["method"] == "NTK [lr = 3.0]" and t["d"] == d}
        test = {t["n"] for t in trials if t["method"] == "NTK" and t["d"] == d}
        assert val & test and len(list((out / "trials" / "ntk_lr_3_0" / f"d{d}").glob("n*/result.json"))) == len(
            val | test
        )
    md = (out / "samples.md").read_text()
    assert "Tuned per d on the validation set" in md and "| NTK | 4 | **3.0** |" in md
    assert "Chosen at an end of its grid" in md
    # Without a validation set the grid cannot be judged: one line says what to set.
    study["methods"]["NTK"]["data"]["init_args"]["val_size"] = 0
    argv[3] = str(write_study(tmp_path, study))
    with pytest.raises(ValueError, match="set data.init_args.val_size > 0"):
        samples_command([*argv[:5], str(tmp_path / "o2")], build_cli)
    study["methods"]["NTK"]["tune"] = {"model.init_args.training.lr": [3.0]}
    argv[3] = str(write_study(tmp_path, study))
    with pytest.raises(ValueError, match="tune must map one dotted config path to a list of at least two"):
        samples_command([*argv[:5], str(tmp_path / "o3")], never_build)


def test_the_exponents_bootstrap_resamples_the_seeds_within_each_d():
    """n* rests on a share of seeds: a d whose budgets pass by one seed's margin widens alpha's interval."""
    from featlearn.studies.exponents import reseeded_bracket

    tried = [(100, [True, False, False, False]), (200, [True, True, False, False]), (400, [True] * 4)]
    assert reseeded_bracket(tried, [0, 1, 2, 3], 0.5) == (100, 200)
    assert reseeded_bracket(tried, [0, 0, 0, 0], 0.5) == (100, 100)  # seed 0 passes everywhere: at the smallest
    assert reseeded_bracket(tried, [2, 3, 2, 3], 0.5) == (200, 400)
    assert reseeded_bracket([(100, [False, False])], [0, 1], 0.5) is None
    # Four d on n* = d^2, each bracketed at a ratio 2, with seeds that disagree at the bracket's ends.
    points, outcomes = [], {}
    for d in (8, 16, 32, 64):
        n = d * d
        points.append((d, n, n // 2))
        outcomes[d] = [(n // 4, [False] * 4), (n // 2, [True, False, False, False]), (n, [True, True, False, False]),
                       (2 * n, [True] * 4)]  # fmt: skip
    plain = fit_exponent(points)
    reseeded = fit_exponent(points, outcomes=outcomes, pass_fraction=0.5)
    assert plain["alpha"] == reseeded["alpha"] == pytest.approx(2.0)
    assert reseeded["ci_high"] - reseeded["ci_low"] > plain["ci_high"] - plain["ci_low"]
    # Seeds that all agree leave the interval as the points' bootstrap gives it.
    agree = {d: [(n // 2, [False] * 4), (n, [True] * 4)] for d, n, _ in points}
    assert fit_exponent(points, outcomes=agree)["ci_low"] == pytest.approx(plain["ci_low"], abs=0.05)


def test_each_sample_form_fitted_on_the_smaller_d_predicts_n_star_at_the_largest():
    from featlearn.studies.exponents import predict_largest

    # n* = 3 d log^2 d, each bracketed at 5% below: d log^k d predicts d = 256; d^2 overshoots it.
    points = [
        (d, round(3 * d * math.log(d) ** 2), round(0.95 * 3 * d * math.log(d) ** 2)) for d in (16, 32, 64, 128, 256)
    ]
    prediction = predict_largest(points)
    assert prediction["target"] == 256 and prediction["fitted_on"] == [16, 32, 64, 128]
    polylog = prediction["forms"]["d log^k d (k fitted)"]
    assert abs(polylog["error"]) < 0.01 and polylog["low"] < 0 < polylog["high"]
    square = prediction["forms"]["d^2 (constant fitted)"]
    assert square["error"] > 0.5 and square["low"] > 0 and square["predicted"] > prediction["measured"]
    assert predict_largest(points[:2]) is None
    # Seeds resampled within each d: seeds that disagree at the bracket widen the interval.
    outcomes = {d: [(nf, [False, False, True, False]), (n, [True, True, True, False])] for d, n, nf in points}
    reseeded = predict_largest(points, outcomes=outcomes, pass_fraction=0.5)["forms"]["d log^k d (k fitted)"]
    assert reseeded["high"] - reseeded["low"] >= polylog["high"] - polylog["low"]
