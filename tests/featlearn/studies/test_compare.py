import csv
import importlib
import json
import statistics
import subprocess
import sys

import pytest
import torch
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import featlearn.studies.trials as trials_module
from featlearn.callbacks.alignment import feature_alignment
from featlearn.cli import build_cli
from featlearn.cli.main import main
from featlearn.studies.compare import compare, compare_command
from featlearn.studies.methods import Method, load_methods
from featlearn.studies.trials import merge_configs, summarize

from ...conftest import CONFIGS  # noqa: TID252

methods_module = importlib.import_module("featlearn.studies.methods")
tuning_module = importlib.import_module("featlearn.studies.tuning")

PAPER_METHODS = ["Network", "NTK", "RF", "One Step", "Two Step", "Network w/o structure"]
# One Step and Two Step under the process's own classifier stage beside the converged probe, then the
# figures' NTK and RF without input structure (not in the paper's tables).
READOUTS = ["One Step (SGD readout)", "Two Step (SGD readout)"]
METHODS = [*PAPER_METHODS[:5], *READOUTS, PAPER_METHODS[5], "NTK w/o structure", "RF w/o structure"]
# E.1.1's process shrunk to a 4-step run of a 12-neuron network on d = 16.
TINY = {
    "seed_everything": 0,
    "trainer": {
        "max_steps": 4,
        "log_every_n_steps": 1,
        "callbacks+": [{"class_path": "FeatureAlignment", "init_args": {"mds_steps": []}}],
    },
    "data": {
        "class_path": "SparseCoding",
        "init_args": {"d": 16, "D": 8, "k": 3, "train_size": 300, "test_size": 200, "val_size": 0, "batch_size": 100},
    },
    "model": {
        "class_path": "TwoLayerNet",
        "init_args": {
            "network": {"width": 12, "activation": "truncated_relu", "bias": True, "output_scale": "standard"},
            "init": {"scheme": "gaussian_symmetric", "sigma_w": 0.3, "sigma_b": 0.1, "sigma_a": 1.0},
            "training": {"lr": 0.2},
            "mean_field_gradient": False,
            "loss": "hinge",
        },
    },
}


def write_config(folder, config=TINY):
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def read_csv(path):
    with open(path) as handle:
        return list(csv.reader(handle))


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    """One tiny two-seed comparison of all six default methods: (out folder, results, config path)."""
    folder = tmp_path_factory.mktemp("compare")
    config = write_config(folder)
    out = folder / "out"
    results = compare_command(["--config", str(config), "--seeds", "2", "--out", str(out), "--no-tune"], build_cli)
    return out, results, config


def test_merge_configs_merges_mappings_and_replaces_the_rest():
    base = {"model": {"class_path": "A", "init_args": {"lr": [{"start": 1, "value": 1}], "width": 4}}, "x": 1}
    override = {"model": {"class_path": "B", "init_args": {"lr": 0.1}}}
    assert merge_configs(base, override) == {"model": {"class_path": "B", "init_args": {"lr": 0.1, "width": 4}}, "x": 1}
    assert base["model"]["class_path"] == "A"  # inputs untouched


def test_summarize_is_mean_and_sample_std():
    assert summarize([1.0, 2.0, 4.0]) == pytest.approx((7 / 3, statistics.stdev([1.0, 2.0, 4.0]), 3))
    assert summarize([5.0]) == (5.0, None, 1)
    assert summarize(None) == (None, None, 0)


def test_default_methods_are_table_1s_then_the_baselines_without_structure():
    assert [m.name for m in load_methods(CONFIGS / "compare" / "shi.yaml")] == METHODS


@pytest.mark.parametrize(
    "content, only, match",
    [
        ("methods: {A: {optimizer: 1}}", None, "unknown keys"),
        ("methods: {A: 3}", None, "mapping of overrides"),
        ("methods: {}", None, "non-empty"),
        ("methods: {A: {without_structure: 1}}", None, "true or false"),
        ("methods: {'A b': {}, 'a-B': {}}", None, "differ"),
        ("methods: {A: {}}", ["B"], "not in"),
        (
            "methods: {A: {tune: {model.init_args.training.lr: []}}}",
            None,
            "tune must map dotted config paths to non-empty",
        ),
        (
            "methods: {A: {tune: {model.init_args.training.lr: 0.1}}}",
            None,
            "tune must map dotted config paths to non-empty",
        ),
        ("methods: {A: {skip_steps: 2}}", None, "skip_steps must be a list of steps >= 1"),
        ("methods: {A: {skip_steps: [0]}}", None, "skip_steps must be a list of steps >= 1"),
        ("methods: {A: {freeze_first_layer_from: 0}}", None, "freeze_first_layer_from must be a step >= 1"),
    ],
)
def test_bad_methods_files_are_refused(tmp_path, content, only, match):
    path = tmp_path / "methods.yaml"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        load_methods(path, only)


def test_table_csv_and_md_in_the_papers_layout(comparison):
    out, results, _ = comparison
    rows = read_csv(out / "table.csv")
    assert rows[0] == ["method", "metric", "mean", "std", "n_seeds"]
    assert [(r[0], r[1]) for r in rows[1:]] == [
        (m, k) for m in METHODS for k in ("train_acc", "test_acc", "cos_similarity", "degenerate")
    ]
    for method, metric, mean, std, n in rows[1:]:
        if metric == "degenerate":  # the count of seeds DegenerateRuns flagged
            flags = json.loads((out / "methods" / _slug(method) / "result.json").read_text())["metrics"][metric]
            assert len(flags) == int(n) == 2 and float(mean) == sum(flags) and std == ""
            continue
        per_seed = json.loads((out / "methods" / _slug(method) / "result.json").read_text())["metrics"][metric]
        assert per_seed == results[method][metric]
        if per_seed is None:  # the NTKs have no learned first layer
            assert method.startswith("NTK") and (metric, mean, std, n) == ("cos_similarity", "", "", "0")
            continue
        assert len(per_seed) == int(n) == 2
        assert float(mean) == pytest.approx(statistics.mean(per_seed))
        assert float(std) == pytest.approx(statistics.stdev(per_seed))
        assert all(0 <= v <= 100 for v in per_seed) if "acc" in metric else all(-1 <= v <= 1 for v in per_seed)
    table = (out / "table.md").read_text().splitlines()
    assert table[2] == "| Model | " + " | ".join(METHODS) + " |"
    labels = ["| Train Acc (%)", "| Test Acc (%)", "| Cos Similarity", "| Degenerate runs"]
    assert [line.split(" | ")[0] for line in table[4:]] == labels
    assert all(cell.endswith("/2") for cell in table[7].strip(" |").split(" | ")[1:])
    assert table[6].split(" | ")[2] == "NA"


def _slug(name):
    return Method(name).slug


def test_each_method_config_runs_alone_and_logs_one_test_accuracy_chart(comparison):
    out, _, _ = comparison
    for method in METHODS:
        config = yaml.safe_load((out / "methods" / _slug(method) / "config.yaml").read_text())
        assert config["model"]["init_args"]["ensemble_size"] == 2
        callbacks = [c["class_path"] for c in config["trainer"]["callbacks+"]]
        assert callbacks == ["FeatureAlignment", "HeldOutAccuracy"]  # nothing leaks between methods
        events = EventAccumulator(str(out / "tensorboard" / _slug(method)))
        events.Reload()
        steps = [e.step for e in events.Scalars("heldout/test_acc")]
        assert steps[0] == 0 and steps[-1] == config["trainer"]["max_steps"]
    for name, steps in (("one_step", 1), ("two_step", 2)):  # the best classifier on the step-k features
        probe = yaml.safe_load((out / "methods" / name / "config.yaml").read_text())
        assert probe["trainer"]["max_steps"] == steps and probe["model"]["class_path"] == "SteppedFeatureProbe"
    wo = yaml.safe_load((out / "methods" / "network_w_o_structure" / "config.yaml").read_text())
    assert wo["data"]["init_args"]["structure"] is False


def _fit_first_layer(config_path, *args):
    """Train the config alone (no logger) and return its first layer (S, p, d)."""
    cli = build_cli(["--config", str(config_path), "--trainer.logger", "false", *args], run=False)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return cli.model.two_layer.w.detach().clone()


def test_one_and_two_step_keep_the_first_layer_of_the_processs_first_steps(comparison, tmp_path):
    """One Step (Two Step) = the process's first 1 (2) updates, the first layer frozen there."""
    out, results, _ = comparison
    for name, steps in (("one_step", "1"), ("two_step", "2")):
        probe = _fit_first_layer(out / "methods" / name / "config.yaml")
        after = _fit_first_layer(out / "methods" / "network" / "config.yaml", "--trainer.max_steps", steps)
        assert torch.equal(probe, after)
        # The process's own classifier stage trains a on those features to T: the first layer stays put.
        readout = _fit_first_layer(out / "methods" / f"{name}_sgd_readout" / "config.yaml")
        assert torch.equal(readout, after)
    assert results["One Step (SGD readout)"] != results["One Step"]  # two classifiers on one set of features
    initial = _fit_first_layer(out / "methods" / "network" / "config.yaml", "--trainer.max_steps", "0")
    assert not torch.equal(_fit_first_layer(out / "methods" / "one_step" / "config.yaml"), initial)
    assert results["Two Step"] != results["Network"]  # two runs, not one


def test_reshaping_holds_the_first_layer_arguments_the_learner_declares():
    method = Method("Frozen", freeze_first_layer_from=2)
    with pytest.raises(methods_module.MethodNotApplicable, match="TwoLayerNet declares no first-layer arguments.*sets"):
        methods_module.reshape_process(
            {"model": {"class_path": "TwoLayerNet", "init_args": {"training": {"lr_a": 0.1}}}}, method
        )
    with pytest.raises(methods_module.MethodNotApplicable, match="ModuleClassifier declares no first-layer"):
        methods_module.reshape_process({"model": {"class_path": "ModuleClassifier", "init_args": {"lr": 0.1}}}, method)
    config = {
        "model": {"class_path": "featlearn.models.TwoLayerNet", "init_args": {"training": {"lr": 0.1, "lr_a": 0.5}}},
        "trainer": {"max_steps": 10},
    }
    methods_module.reshape_process(config, Method("One", skip_steps=(2,), freeze_first_layer_from=2))
    held = [{"start": 1, "end": 1, "value": 0.1}, {"start": 2, "value": 0.0}]
    training = config["model"]["init_args"]["training"]
    assert training["lr_w"] == held  # lr_w followed lr: set from it, then held
    assert "lr_b" not in training  # lr_b follows the held lr_w
    assert training["lr_a"] == 0.5 and config["trainer"]["max_steps"] == 9


def test_methods_start_from_the_same_weights(comparison):
    out, results, _ = comparison
    built = {
        m: build_cli(
            ["--config", str(out / "methods" / _slug(m) / "config.yaml"), "--trainer.logger", "false"], run=False
        )
        for m in METHODS
    }
    w0 = built["Network"].model.two_layer.w
    for method in METHODS[1:]:
        torch.testing.assert_close(built[method].model.two_layer.w, w0)
    # RF never moves the first layer: its cosine is the initial weights', seed by seed.
    truth = built["Network"].datamodule.ground_truth().feature.double()
    initial = [float(feature_alignment(w.double(), truth, 1, 0.0)["max_cos"]) for w in w0.detach()]
    assert results["RF"]["cos_similarity"] == pytest.approx(initial, abs=1e-6)
    assert results["Network"]["cos_similarity"] != pytest.approx(initial, abs=1e-3)


def test_same_seeds_same_table(comparison, tmp_path):
    out, _, config = comparison
    compare_command(["--config", str(config), "--seeds", "2", "--out", str(tmp_path / "again"), "--no-tune"], build_cli)
    assert (tmp_path / "again" / "table.csv").read_text() == (out / "table.csv").read_text()
    assert (tmp_path / "again" / "table.md").read_text() == (out / "table.md").read_text()


def test_interrupted_comparison_keeps_finished_methods_and_resumes(comparison, tmp_path, monkeypatch, capsys):
    out, _, config = comparison
    calls = []
    real_run = trials_module.measure_run

    def interrupted_run(path, build):
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_run(path, build)

    monkeypatch.setattr(trials_module, "measure_run", interrupted_run)
    args = ["--config", str(config), "--seeds", "2", "--out", str(tmp_path / "resumed"), "--no-tune"]
    with pytest.raises(KeyboardInterrupt):
        compare_command(args, build_cli)
    finished = sorted(p.parent.name for p in (tmp_path / "resumed" / "methods").glob("*/result.json"))
    assert finished == ["network", "ntk"]
    monkeypatch.setattr(trials_module, "measure_run", real_run)
    capsys.readouterr()
    compare_command(args, build_cli)
    log = capsys.readouterr().out
    assert "Network: finished earlier" in log and "NTK: finished earlier" in log and "RF: finished" not in log
    assert (tmp_path / "resumed" / "table.csv").read_text() == (out / "table.csv").read_text()


def test_changed_config_is_not_mixed_with_old_results(comparison, tmp_path):
    _, _, config = comparison
    args = ["--config", str(config), "--seeds", "2", "--out", str(tmp_path / "o"), "--only", "Network", "--no-tune"]
    compare_command(args, build_cli)
    with pytest.raises(ValueError, match="--overwrite"):
        compare_command([*args[:3], "3", *args[4:]], build_cli)  # --seeds 3
    compare_command([*args[:3], "3", *args[4:], "--overwrite"], build_cli)
    assert read_csv(tmp_path / "o" / "table.csv")[1][4] == "3"


def test_without_structure_needs_a_data_model_that_has_it(tmp_path, capsys):
    config = write_config(tmp_path, merge_configs(TINY, {"data": {"class_path": "BooleanXOR", "init_args": None}}))
    content = yaml.safe_load(config.read_text())
    content["data"] = {"class_path": "BooleanXOR", "init_args": {"dim": 8, "batch_size": 16, "test_size": 64}}
    content["trainer"].pop("callbacks+")
    config.write_text(yaml.safe_dump(content))
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "--config", str(config), "--out", str(tmp_path / "o"), "--only", "Network w/o structure"])
    assert exit_info.value.code == 2
    assert "no variant without input structure" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, match",
    [
        (["--seeds", "0"], "--seeds must be >= 1"),
        (["--seed", "-1"], "--seed must be >= 0"),
        (["--grid-members", "0"], "--grid-members must be >= 1"),
        (["--tune-seeds", "0"], "--tune-seeds must be between 1 and --seeds (5), got 0"),
        (["--seeds", "2", "--tune-seeds", "3"], "--tune-seeds must be between 1 and --seeds (2), got 3"),
        (["--halving", "1"], "--halving must be an integer >= 2"),
        (["--halving-only", "NTK"], "--halving-only names the grids to halve: give --halving ETA too"),
    ],
)
def test_bad_compare_options_are_refused(args, match, capsys):
    with pytest.raises(SystemExit):
        compare_command(["--config", "x.yaml", "--out", "o", *args], build_cli)
    assert match in capsys.readouterr().err


def test_console_script_runs_compare():
    out = subprocess.run(
        [sys.executable, "-m", "featlearn", "compare", "--help"], capture_output=True, text=True, check=True
    )
    assert "--seeds" in out.stdout and "--methods" in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "featlearn", "compare", "--config", "missing.yaml", "--out", "x", "--seeds", "0"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--seeds must be >= 1" in bad.stderr


def test_merge_configs_keeps_lists_nulls_and_interpolation_strings_as_written():
    base = {"trainer": {"callbacks": [{"class_path": "A"}], "max_steps": 10}, "note": "${not.resolved}"}
    override = {"trainer": {"callbacks": [{"class_path": "B"}], "max_steps": None}}
    merged = merge_configs(base, override)
    assert merged == {"trainer": {"callbacks": [{"class_path": "B"}], "max_steps": None}, "note": "${not.resolved}"}
    assert base["trainer"]["max_steps"] == 10  # the inputs are not changed


def test_inapplicable_methods_are_skipped_up_front_and_named(tmp_path, capsys):
    content = {
        **TINY,
        "trainer": {"max_steps": 2, "log_every_n_steps": 1},
        "data": {"class_path": "BooleanXOR", "init_args": {"dim": 8, "batch_size": 16, "test_size": 64}},
    }
    config = write_config(tmp_path, content)
    methods = tmp_path / "methods.yaml"
    entries = {"Network": {}, "Network w/o structure": {"without_structure": True}}
    methods.write_text(yaml.safe_dump({"methods": entries}))
    out = tmp_path / "o"
    args = ["--config", str(config), "--methods", str(methods), "--seeds", "2", "--out", str(out)]
    results = compare_command(args, build_cli)
    log = capsys.readouterr().out
    assert list(results) == ["Network"]
    skip = log.index("skipping 'Network w/o structure': BooleanXOR has no variant without input structure")
    assert skip < log.index("featlearn fit --config")  # said before any training
    assert "Skipped Network w/o structure: BooleanXOR has no variant" in (out / "table.md").read_text()


def test_gaussian_mixture_table_reports_the_centres_found(tmp_path):
    """No single feature to align with: the alignment row is the fraction of cluster centres covered."""
    content = merge_configs(TINY, {"trainer": {"max_steps": 3, "callbacks+": []}})
    content["data"] = {
        "class_path": "GaussianMixture",
        "init_args": {"d": 12, "k": 2, "train_size": 200, "test_size": 100, "batch_size": 50},
    }
    config = write_config(tmp_path, content)
    out = tmp_path / "o"
    results = compare_command(
        ["--config", str(config), "--seeds", "2", "--out", str(out), "--only", "Network", "NTK"], build_cli
    )
    table = (out / "table.md").read_text().splitlines()
    row = next(line for line in table if line.startswith("| Centres found"))
    cells = row.strip(" |").split(" | ")[1:]
    assert cells[1] == "NA"  # the NTK has no learned neurons
    coverage = results["Network"]["centre_coverage"]
    assert len(coverage) == 2 and all(0 <= c <= 1 for c in coverage)
    assert float(cells[0].split(" ± ")[0]) == pytest.approx(statistics.mean(coverage), abs=1e-3)
    assert not any(line.startswith("| Cos Similarity") for line in table)
    assert ["Network", "centre_coverage"] == read_csv(out / "table.csv")[3][:2]


def test_methods_are_tuned_on_the_validation_set_and_the_choice_is_reported(tmp_path, capsys):
    config = write_config(tmp_path, merge_configs(TINY, {"data": {"init_args": {"val_size": 300}}}))
    methods = tmp_path / "methods.yaml"
    grid = {"model.init_args.training.lr_w|model.init_args.training.lr_b|model.init_args.training.lr_a": [1.0e-6, 0.5]}
    methods.write_text(
        yaml.safe_dump({"methods": {"NTK": {"model": {"class_path": "LinearizedTwoLayerNet"}, "tune": grid}}})
    )
    out = tmp_path / "o"
    args = ["--config", str(config), "--methods", str(methods), "--seeds", "2", "--out", str(out)]
    args += ["--grid-members", "4"]
    compare_command(args, build_cli)
    rows = list(csv.DictReader(open(out / "tuning.csv")))
    assert [json.loads(r["values"]) for r in rows] == [{next(iter(grid)): v} for v in grid[next(iter(grid))]]
    means = [float(r["val_acc_mean"]) for r in rows]
    chosen = means.index(max(means))  # the best mean validation accuracy, the first on a tie
    assert [int(r["chosen"]) for r in rows] == [int(i == chosen) for i in range(len(rows))]
    value = grid[next(iter(grid))][chosen]
    final = yaml.safe_load((out / "methods" / "ntk" / "config.yaml").read_text())["model"]["init_args"]
    rates = final["training"]
    assert rates["lr_w"] == rates["lr_b"] == rates["lr_a"] == value  # one key moves the three rates
    assert [r[1] for r in read_csv(out / "table.csv") if r[0] == "NTK"][-1] == f"tuned:{next(iter(grid))}"
    assert f"tuned on the validation set: {next(iter(grid))} = {value!r}" in (out / "table.md").read_text()
    capsys.readouterr()
    compare_command(args, build_cli)  # cached: a re-run tunes nothing again
    assert capsys.readouterr().out.count("finished earlier") == 2  # the grid's one fit and the method
    compare_command([*args[:-3], str(tmp_path / "fixed"), "--no-tune"], build_cli)
    assert not (tmp_path / "fixed" / "tuning").exists()


def test_a_grid_tuned_as_one_ensemble_gives_each_point_the_accuracies_of_its_own_fit(tmp_path):
    """Grid points side by side in one ensemble (member_values) against one fit per point: the same numbers."""
    config = write_config(tmp_path, merge_configs(TINY, {"data": {"init_args": {"val_size": 300}}}))
    methods = tmp_path / "methods.yaml"
    grid = {"model.init_args.training.lr_a": [0.1, 1.0, 3.0e38]}  # the last point diverges
    methods.write_text(
        yaml.safe_dump({"methods": {"RF": {"model": {"init_args": {"train_first_layer": False}}, "tune": grid}}})
    )
    tables = {}
    for members in (6, 2):  # three points of 2 seeds in one fit; one point per fit
        out = tmp_path / f"m{members}"
        compare_command(["--config", str(config), "--methods", str(methods), "--seeds", "2", "--out", str(out),
                 "--grid-members", str(members)], build_cli)  # fmt: skip
        tables[members] = list(csv.DictReader(open(out / "tuning.csv")))
        fits = sorted(p.name for p in (out / "tuning" / "rf").iterdir())
        assert fits == (["points_0-2"] if members == 6 else ["0.1", "1.0", "3e+38"])  # a point's own fit: its value
    assert tables[6] == tables[2]
    assert [r["note"] for r in tables[6]] == ["", "", "diverged"]


def test_tuning_on_the_first_seeds_runs_only_the_chosen_point_on_all_of_them(tmp_path):
    """--tune-seeds K: every grid point on seeds 0..K-1 (their own folders), the chosen one on every seed."""
    config = write_config(tmp_path, merge_configs(TINY, {"data": {"init_args": {"val_size": 300}}}))
    methods = tmp_path / "methods.yaml"
    grid = {"model.init_args.training.lr_a": [1.0e-6, 0.5]}
    methods.write_text(
        yaml.safe_dump({"methods": {"RF": {"model": {"init_args": {"train_first_layer": False}}, "tune": grid}}})
    )
    out = tmp_path / "o"
    args = ["--config", str(config), "--methods", str(methods), "--seeds", "3", "--out", str(out)]
    results = compare_command([*args, "--tune-seeds", "2"], build_cli)
    points = sorted((out / "tuning_2_seeds" / "rf").iterdir())
    assert [p.name for p in points] == ["0.5", "1e-06"] and not (out / "tuning").exists()
    for point in points:  # each point trained on the first 2 seeds only
        assert yaml.safe_load((point / "config.yaml").read_text())["model"]["init_args"]["ensemble_size"] == 2
    final = yaml.safe_load((out / "methods" / "rf" / "config.yaml").read_text())["model"]["init_args"]
    assert final["ensemble_size"] == 3 and len(results["RF"]["test_acc"]) == 3
    rows = list(csv.DictReader(open(out / "tuning_2_seeds.csv")))
    chosen = grid["model.init_args.training.lr_a"][[int(r["chosen"]) for r in rows].index(1)]
    assert final["training"]["lr_a"] == chosen
    # The chosen point's first two seeds are the tuning fit's runs: member s is seed + s at any ensemble size.
    tuned_fit = json.loads((out / "tuning_2_seeds" / "rf" / repr(chosen) / "result.json").read_text())["metrics"]
    assert results["RF"]["val_acc"][:2] == pytest.approx(tuned_fit["val_acc"], abs=1e-9)
    assert "tuned on the validation set of its first 2 seeds" in (out / "table.md").read_text()
    with pytest.raises(SystemExit):
        compare_command([*args, "--tune-seeds", "4"], build_cli)  # more than --seeds


def test_tuning_needs_a_validation_set(tmp_path):
    config = write_config(tmp_path)  # TINY: val_size 0
    with pytest.raises(ValueError, match="Tuning 'NTK' needs a validation set: set data.init_args.val_size > 0"):
        compare_command(
            ["--config", str(config), "--seeds", "2", "--out", str(tmp_path / "o"), "--only", "NTK"], build_cli
        )


def test_a_diverging_grid_point_is_dropped_not_fatal(tmp_path, monkeypatch):
    config = write_config(tmp_path, merge_configs(TINY, {"data": {"init_args": {"val_size": 200}}}))
    methods = tmp_path / "methods.yaml"
    grid = {"model.init_args.training.lr_a": [1000.0, 0.1]}
    methods.write_text(
        yaml.safe_dump({"methods": {"RF": {"model": {"init_args": {"train_first_layer": False}}, "tune": grid}}})
    )
    real_run = trials_module.measure_run

    def diverging(path, build):  # the larger rate "diverges", as training would raise it
        if yaml.safe_load(path.read_text())["model"]["init_args"]["training"]["lr_a"] == 1000.0:
            raise FloatingPointError("Training diverged: the loss became NaN or infinite at update step 2")
        return real_run(path, build)

    monkeypatch.setattr(trials_module, "measure_run", diverging)
    out = tmp_path / "o"
    one_per_fit = ["--grid-members", "2"]
    compare_command(
        ["--config", str(config), "--methods", str(methods), "--seeds", "2", "--out", str(out), *one_per_fit], build_cli
    )
    rows = list(csv.DictReader(open(out / "tuning.csv")))
    assert [(r["note"], r["chosen"]) for r in rows] == [("diverged", "0"), ("", "1")]
    assert sorted(p.name for p in (out / "tuning" / "rf").iterdir()) == ["0.1", "1000.0"]  # a fit per value
    assert "diverged" in json.loads((out / "tuning" / "rf" / "1000.0" / "result.json").read_text())["metrics"]
    grid["model.init_args.training.lr_a"] = [1000.0]
    methods.write_text(
        yaml.safe_dump({"methods": {"RF": {"model": {"init_args": {"train_first_layer": False}}, "tune": grid}}})
    )
    with pytest.raises(ValueError, match="Every grid point of 'RF' diverged"):
        compare_command(
            ["--config", str(config), "--methods", str(methods), "--seeds", "2", "--out", str(out), *one_per_fit],
            build_cli,
        )


def test_a_choice_at_the_end_of_a_grid_is_flagged():
    grid = {"model.init_args.training.lr": [1e-5, 1e-4, 1e-3], "model.init_args.loss": ["hinge", "logistic", "x"]}
    assert tuning_module.grid_edges(grid, {"model.init_args.training.lr": 1e-5, "model.init_args.loss": "x"}) == [
        "model.init_args.training.lr"
    ]
    assert tuning_module.grid_edges(grid, {"model.init_args.training.lr": 1e-4, "model.init_args.loss": "hinge"}) == []
    assert tuning_module.grid_edges({"a": [1.0, 2.0]}, {"a": 2.0}) == []  # two points have no inside


def test_merge_configs_lets_a_class_spec_replace_a_plain_mapping_as_lightning_cli_does():
    base = {"model": {"class_path": "TwoLayerNet", "init_args": {"network": {"width": 50, "bias": True}, "lr": 0.1}}}
    spec = {"class_path": "QuadraticFC", "init_args": {"width": 9}}
    same = merge_configs(base, {"model": {"class_path": "TwoLayerNet", "init_args": {"network": spec}}})
    assert same["model"]["init_args"] == {"network": spec, "lr": 0.1}  # the spec replaced the fields, lr stays
    merged = merge_configs(base, {"model": {"class_path": "ModuleClassifier", "init_args": {"network": spec}}})
    assert merged["model"]["init_args"] == {"network": spec}  # another learner: TwoLayerNet's arguments go
    # another class replaces the learner whole; a subclass keeps its arguments (the NTK over the network)
    merged = merge_configs(merged, {"model": {"class_path": "TwoLayerNet", "init_args": {"lr_a": 1.0}}})
    assert merged["model"] == {"class_path": "TwoLayerNet", "init_args": {"lr_a": 1.0}}
    ntk = merge_configs(merged, {"model": {"class_path": "featlearn.models.LinearizedTwoLayerNet"}})
    assert ntk["model"]["init_args"] == {"lr_a": 1.0}
    # classes this process cannot import merge key by key, as before
    assert merge_configs({"a": {"class_path": "A", "init_args": {"x": 1}}}, {"a": {"class_path": "B"}}) == {
        "a": {"class_path": "B", "init_args": {"x": 1}}
    }


def test_a_network_of_any_kind_gets_its_ntk_column_from_the_lazy_methods_file(tmp_path):
    """FC(m) on MNIST 0/1 (model/fc) against its own linearisation (compare/lazy), through the shipped names."""
    args = ["--config", "shi_real_mnist01", "--config", "model/fc", "--config", "debug/smoke"]
    results = compare_command([*args, "--methods", "compare/lazy", "--seeds", "2", "--out", str(tmp_path)], build_cli)
    assert list(results) == ["Network", "NTK"]
    assert all(len(results[m]["test_acc"]) == 2 for m in results)
    assert results["NTK"]["cos_similarity"] is None  # no learned neurons to align
    ntk = yaml.safe_load((tmp_path / "methods" / "ntk" / "config.yaml").read_text())["model"]
    assert ntk["class_path"] == "ModuleClassifier" and ntk["init_args"]["linearize"] is True
    assert "init" not in ntk["init_args"]  # the two-layer learner's arguments did not leak into FC's


def test_tuning_trials_skip_the_diagnostics_and_the_chosen_point_s_final_run_equals_its_trial(tmp_path, capsys):
    config = write_config(tmp_path, merge_configs(TINY, {"data": {"init_args": {"val_size": 300}}}))
    methods = tmp_path / "methods.yaml"
    rf = {"model": {"init_args": {"train_first_layer": False}}, "tune": {"model.init_args.training.lr_a": [0.1, 1.0]}}
    # Network's constant rate written as two segments (as hold_from cuts a held schedule): the same run
    again = {
        "model": {"init_args": {"training": {"lr": [{"start": 1, "end": 2, "value": 0.2}, {"start": 3, "value": 0.2}]}}}
    }
    methods.write_text(yaml.safe_dump({"methods": {"Network": {}, "RF": rf, "Again": again}}, sort_keys=False))
    out = tmp_path / "o"
    args = ["--config", str(config), "--methods", str(methods), "--seeds", "2", "--out", str(out)]
    args += ["--grid-members", "2"]
    results = compare_command(args, build_cli)
    log = capsys.readouterr().out
    chosen = next(r for r in csv.DictReader(open(out / "tuning.csv")) if r["chosen"] == "1")
    value = chosen["values"].split(": ")[1].rstrip("}")
    point_folder = out / "tuning" / "rf" / value
    point = json.loads((point_folder / "result.json").read_text())
    trial_config = yaml.safe_load((point_folder / "config.yaml").read_text())["trainer"]
    assert trial_config["logger"] is False
    assert not any("HeldOutAccuracy" in c["class_path"] for c in trial_config.get("callbacks+") or [])
    final = yaml.safe_load((out / "methods" / "rf" / "config.yaml").read_text())["trainer"]
    assert any("HeldOutAccuracy" in c["class_path"] for c in final["callbacks+"])
    # the final run, with its diagnostics, trains exactly what the lean trial trained
    assert results["RF"] == point["metrics"]
    assert "Again: the same run as 'Network'" in log  # the configs differ in their loggers and wording only
    assert results["Again"] == results["Network"]
    times = {r["method"]: float(r["seconds"]) for r in csv.DictReader(open(out / "run_times.csv"))}
    assert times["Again"] == 0.0 and times["Network"] > 0 and times["RF"] > 0
    for name in ("rf", "again"):  # their curves are there, for TensorBoard and the report
        events = EventAccumulator(str(out / "tensorboard" / name))
        events.Reload()
        assert "heldout/test_acc" in events.Tags()["scalars"]
    capsys.readouterr()
    assert compare_command(args, build_cli) == results  # a re-run reuses every result
    assert "featlearn fit" not in capsys.readouterr().out


def test_a_methods_file_may_start_from_another_and_edit_or_add_methods(tmp_path):
    base = tmp_path / "base.yaml"
    rf = {
        "model": {"init_args": {"train_first_layer": False, "training": {"lr_a": 10.0}}},
        "tune": {"model.init_args.training.lr_a": [1.0]},
    }
    base.write_text(yaml.safe_dump({"methods": {"Network": {}, "RF": rf}}, sort_keys=False))
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump({"base": str(base), "methods": {
        "RF": {"tune": {"model.init_args.training.lr_a": [100.0]}}, "Extra": {"trainer": {"max_steps": 1}},
    }}, sort_keys=False))  # fmt: skip
    methods = load_methods(edited)
    assert [m.name for m in methods] == ["Network", "RF", "Extra"]  # the base's order, then the new ones
    rf = methods[1]
    assert rf.tune == {"model.init_args.training.lr_a": [100.0]}  # a grid is replaced, not merged
    assert rf.overrides == {"model": {"init_args": {"train_first_layer": False, "training": {"lr_a": 10.0}}}}


def test_successive_halving_resumes_survivors_to_the_full_grids_numbers(tmp_path, monkeypatch):
    """--halving ETA: every point starts, the best go on from their checkpoints; a survivor's last rung equals
    its full-grid fit bit for bit, a dropped point is never chosen, and nothing is written outside --out."""
    monkeypatch.chdir(tmp_path)
    config = write_config(
        tmp_path, merge_configs(TINY, {"trainer": {"max_steps": 9}, "data": {"init_args": {"val_size": 300}}})
    )
    methods = tmp_path / "methods.yaml"
    grid = {"model.init_args.training.lr_a": [1.0e-6, 0.5, 3.0e38, 0.1]}  # the third point diverges
    methods.write_text(
        yaml.safe_dump({"methods": {"RF": {"model": {"init_args": {"train_first_layer": False}}, "tune": grid}}})
    )
    args = ["--config", str(config), "--methods", str(methods), "--seeds", "2"]
    compare_command([*args, "--out", str(tmp_path / "full")], build_cli)
    halved = tmp_path / "halved"
    results = compare_command([*args, "--out", str(halved), "--halving", "2"], build_cli)
    rows = {r["values"]: r for r in csv.DictReader(open(halved / "tuning_halving_2.csv"))}
    full = {r["values"]: r for r in csv.DictReader(open(tmp_path / "full" / "tuning.csv"))}
    key = next(iter(grid))
    steps = {value: int(rows[json.dumps({key: value})]["steps"]) for value in grid[key]}
    assert steps[3.0e38] == 3 and rows[json.dumps({key: 3.0e38})]["note"] == "diverged"  # out at the first rung
    assert set(steps.values()) <= {3, 5, 9}  # the rungs: 9 / 2^2, 9 / 2, 9
    finalists = [value for value, step in steps.items() if step == 9]
    for value in finalists:  # a survivor's last rung is its full-grid fit, resumed bit for bit
        assert rows[json.dumps({key: value})]["val_acc_mean"] == full[json.dumps({key: value})]["val_acc_mean"]
    chosen = max(finalists, key=lambda v: (float(rows[json.dumps({key: v})]["val_acc_mean"]), -grid[key].index(v)))
    assert [int(r["chosen"]) for r in rows.values()] == [int(v == chosen) for v in grid[key]]
    for row in rows.values():  # a point that stopped early is never a candidate
        assert row["note"] in ("", "diverged", "dropped by successive halving")
        assert (row["note"] == "") == (int(row["steps"]) == 9)
    final = yaml.safe_load((halved / "methods" / "rf" / "config.yaml").read_text())["model"]["init_args"]
    assert final["training"]["lr_a"] == chosen
    point = halved / "tuning_halving_2" / "rf" / repr(chosen)
    assert sorted(p.name for p in point.iterdir()) == ["steps_3", "steps_5", "steps_9"]
    # Resumed from its rung at step 5; once the search ends no checkpoint is kept (the last rung saves none).
    resumed = yaml.safe_load((point / "steps_9" / "config.yaml").read_text())
    assert resumed["ckpt_path"] == str(point / "steps_5" / "checkpoints" / "last.ckpt")
    assert not list((halved / "tuning_halving_2").rglob("*.ckpt"))
    chosen_full = json.loads((tmp_path / "full" / "tuning" / "rf" / repr(chosen) / "result.json").read_text())
    assert results["RF"]["val_acc"] == chosen_full["metrics"]["val_acc"]
    assert f"by successive halving (eta = 2): {key} = {chosen!r}" in (halved / "table.md").read_text()
    assert not (tmp_path / "checkpoints").exists()  # logger-less tuning fits checkpoint in folders of their own
    # A rerun whose last rung is gone resumes nothing (the checkpoints are gone too): it trains that rung
    # from step 0 to the same numbers, and the finished rungs are reused.
    last_rung = json.loads((point / "steps_9" / "result.json").read_text())
    (point / "steps_9" / "result.json").unlink()
    compare_command([*args, "--out", str(halved), "--halving", "2"], build_cli)
    again = json.loads((point / "steps_9" / "result.json").read_text())
    assert again["metrics"]["val_acc"] == last_rung["metrics"]["val_acc"] and again["digest"] == last_rung["digest"]
    assert "ckpt_path" not in yaml.safe_load((point / "steps_9" / "config.yaml").read_text())


def test_compare_called_from_python_takes_mappings_and_returns_a_comparison(tmp_path):
    """The study as a function: an experiment given as a mapping, typed options, a Comparison back."""
    comparison = compare(
        [TINY, {"trainer": {"max_steps": 3}}],  # later mappings override, as --config files do
        tmp_path / "o",
        build=build_cli,
        only=["Network", "RF"],
        options=tuning_module.CompareOptions(seeds=2),
        tune=False,
    )
    assert list(comparison) == ["Network", "RF"] and comparison.out == tmp_path / "o"
    assert len(comparison["Network"]["test_acc"]) == 2 and comparison["RF"]["steps"] == 3
    mean, std, seeds = comparison.summary("RF", "test_acc")
    row = next(r for r in read_csv(tmp_path / "o" / "table.csv") if r[:2] == ["RF", "test_acc"])
    assert seeds == 2 and float(row[2]) == pytest.approx(mean, abs=1e-4)
    assert set(comparison.seconds) == {"Network", "RF"} and comparison.tuned == {} and comparison.skipped == {}
    with pytest.raises(ValueError, match=r"tune_seeds must be between 1 and seeds \(2\), got 3"):
        compare([TINY], tmp_path / "p", build=build_cli, options=tuning_module.CompareOptions(seeds=2, tune_seeds=3))


def test_halving_only_halves_the_named_grids_and_trains_the_others_to_the_end(tmp_path):
    config = write_config(
        tmp_path, merge_configs(TINY, {"trainer": {"max_steps": 6}, "data": {"init_args": {"val_size": 300}}})
    )
    rf = {
        "model": {"init_args": {"train_first_layer": False}},
        "tune": {"model.init_args.training.lr_a": [0.1, 0.5, 1.0]},
    }
    methods = tmp_path / "methods.yaml"
    methods.write_text(yaml.safe_dump({"methods": {"RF": rf, "RF again": rf}}))
    options = tuning_module.CompareOptions(seeds=2, halving=3, halving_only=("RF",))
    comparison = compare([config], tmp_path / "o", methods=methods, options=options, build=build_cli)
    halved = list(csv.DictReader(open(tmp_path / "o" / "tuning_halving_3.csv")))
    full = list(csv.DictReader(open(tmp_path / "o" / "tuning.csv")))
    assert {r["method"] for r in halved} == {"RF"} and {r["method"] for r in full} == {"RF again"}
    assert {r["steps"] for r in full} == {"6"}  # every point of a grid not named trains to max_steps
    assert comparison.tuned["RF"]["halving"] == 3 and comparison.tuned["RF again"]["halving"] is None
    assert tuning_module.CompareOptions(halving_only=("RF",)).problem() == (
        "halving_only names the grids to halve: give halving ETA too."
    )


def test_halving_only_refuses_a_name_the_methods_file_lacks(tmp_path):
    options = tuning_module.CompareOptions(seeds=2, halving=3, halving_only=("NTK w/o structur",))
    with pytest.raises(ValueError, match=r"halving_only names \['NTK w/o structur'\], which are not methods of"):
        compare([TINY], tmp_path / "o", options=options, build=build_cli)


def test_a_rate_chosen_at_its_grids_end_is_recorded_for_the_report(tmp_path):
    from featlearn.studies.compare import write_tables
    from featlearn.studies.report_items import _tuned_values

    results = {"Network": {"test_acc": [90.0, 91.0]}, "RF": {"test_acc": [70.0, 71.0]}}
    tuned = {
        "Network": {"values": {"lr_w@3": 1e-4}, "val_acc": 90.5, "edge": ["lr_w@3"]},
        "RF": {"values": {"lr_a": 1.0}, "val_acc": 70.5, "edge": []},
    }
    write_tables(tmp_path, results, "tiny", 2, tuned=tuned)
    assert _tuned_values(tmp_path) == {"Network": {"lr_w@3": "0.0001"}, "RF": {"lr_a": "1.0"}}
    assert _tuned_values(tmp_path, "grid end:") == {"Network": {"lr_w@3": "0.0001"}}  # RF's is inside its grid
    assert "(lr_w@3: the end of its grid; the optimum may lie beyond.)" in (tmp_path / "table.md").read_text()


def test_a_tuning_row_whose_seeds_degenerated_says_so_beside_its_accuracy():
    from featlearn.studies.tuning import degenerate_note

    # A first layer whose units all fell silent outputs 0 everywhere: about 0% accuracy, every seed flagged.
    assert degenerate_note({"val_acc": [0.0, 0.1], "degenerate": [True, True]}) == (
        "degenerate on 2 of 2 seeds (DegenerateRuns)"
    )
    assert degenerate_note({"val_acc": [99.0, 50.2, 98.0], "degenerate": [False, True, False]}).startswith(
        "degenerate on 1 of 3 seeds"
    )
    assert degenerate_note({"val_acc": [99.0], "degenerate": [False]}) == ""
    assert degenerate_note({"val_acc": [99.0]}) == ""  # a trial without the callback records none
