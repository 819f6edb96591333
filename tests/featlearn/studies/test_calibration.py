import csv
import json
import math
import statistics

import pytest
import yaml

from featlearn.cli import build_cli
from featlearn.config_files import resolve_config
from featlearn.schedules import Schedule
from featlearn.studies.calibration import (
    Calibration,
    Candidate,
    Target,
    calibrate,
    calibrate_command,
    choose,
    load_candidates,
    objective_error,
    objective_value,
    seed_errors,
    told_apart,
    within_floors,
)
from featlearn.studies.methods import StepValues, load_methods, method_config
from featlearn.studies.trials import merge_configs, merge_experiment

from .test_compare import TINY, write_config  # noqa: TID252

PAPER = {
    "Network": {"train": 100.0, "test": 100.0, "cos": 0.997},
    "One Step": {"train": 51.3, "test": 52.2, "cos": 0.848},
}


def test_the_objective_is_the_mean_error_over_seeds_and_targets_with_accuracies_in_fractions():
    results = {"Network": {"train_acc": [90.0, 100.0]}, "One Step": {"cos_similarity": [0.8, 0.9]}}
    targets = [Target("Network", "train_acc", "Network"), Target("One Step", "cos_similarity", "One Step")]
    # Seed 0: (|90 - 100| / 100 + |0.8 - 0.848|) / 2 = 0.074; seed 1: (0 + 0.052) / 2 = 0.026.
    assert seed_errors(results, targets, PAPER) == pytest.approx([0.074, 0.026])
    assert objective_value(results, targets, PAPER) == pytest.approx(0.05)
    assert objective_error(results, targets, PAPER) == pytest.approx(statistics.stdev([0.074, 0.026]) / 2**0.5)
    # featlearn's validation accuracy stands for the paper's test accuracy.
    val = objective_value({"One Step": {"val_acc": [62.2]}}, [Target("One Step", "val_acc", "One Step")], PAPER)
    assert val == pytest.approx(0.10)
    # Another method's paper value: a readout judged against the paper's One Step.
    readout = [Target("One Step (SGD readout)", "train_acc", "One Step")]
    assert objective_value({"One Step (SGD readout)": {"train_acc": [41.3]}}, readout, PAPER) == pytest.approx(0.10)


def test_a_constant_predictor_matches_no_accuracy_not_even_one_at_chance():
    """A degenerate seed (one class predicted) counts the whole scale on an accuracy, not its distance to 52%."""
    one_step = [Target("One Step", "val_acc", "One Step"), Target("One Step", "cos_similarity", "One Step")]
    flat = {"One Step": {"val_acc": [52.2, 52.2], "cos_similarity": [0.848, 0.848], "degenerate": [True, False]}}
    # Seed 0: accuracy error 1 (constant), cosine 0: 0.5; seed 1: 0.
    assert seed_errors(flat, one_step, PAPER) == pytest.approx([0.5, 0.0])


def test_a_chosen_candidate_says_how_many_numbers_it_meets_within_the_floors():
    targets = [Target("Network", "train_acc", "Network"), Target("One Step", "cos_similarity", "One Step")]
    floors = {"train": 3.0, "cos": 0.05}
    near = {"Network": {"train_acc": [98.0, 99.0]}, "One Step": {"cos_similarity": [0.95, 0.96]}}
    assert within_floors(near, targets, PAPER, floors) == 1  # 98.5 is within 3 of 100; 0.955 is 0.107 from 0.848
    constant = {"Network": {"train_acc": [99.0, 99.0], "degenerate": [True, False]}, "One Step": {}}
    assert within_floors(constant, targets, PAPER, floors) == 0  # a constant predictor meets no accuracy


def test_a_candidate_missing_a_target_is_never_chosen():
    targets = [Target("Network", "train_acc", "Network")]
    assert math.isinf(objective_value({"Network": {"train_acc": [None]}}, targets, PAPER))
    assert math.isinf(objective_value({}, targets, PAPER))
    assert choose({"a": math.inf, "b": 0.3}) == "b"
    assert choose({"a": math.inf}) is None


def test_candidates_within_two_standard_errors_of_the_chosen_are_named_as_not_told_apart(tmp_path):
    calibration = Calibration(tmp_path)
    calibration.values["o"] = {"a": 0.10, "b": 0.12, "c": 0.30, "d": math.inf}
    calibration.errors["o"] = {"a": 0.01, "b": 0.005, "c": 0.01, "d": math.inf}
    calibration.chosen["o"] = "a"
    assert calibration.tied("o") == ["b"]  # 0.02 <= 2 sqrt(0.01^2 + 0.005^2) = 0.022; c is 0.2 away
    assert calibration.tied("o", ["a", "c"]) == []


def test_choose_keeps_the_first_on_a_tie_and_only_looks_among_its_candidates():
    values = {"a": 0.2, "b": 0.1, "c": 0.1, "d": 0.0}
    assert choose(values) == "d"
    assert choose(values, ["a", "b", "c"]) == "b"
    assert choose(values, ["a"]) == "a"
    assert choose(values, []) is None  # an objective left with none of its candidates chooses nothing


def test_a_default_stands_unless_the_table_prefers_another_beyond_two_standard_errors():
    """The default (the file's reading of the paper's process) is left only where J tells the argmin from it."""
    values = {"paper's": 0.154, "kept": 0.126, "far": 0.01}
    errors = {"paper's": 0.033, "kept": 0.001, "far": 0.001}
    # 0.028 <= 2 sqrt(0.033^2 + 0.001^2) = 0.066: not told apart, so the default stands
    assert not told_apart("kept", "paper's", values, errors)
    assert choose(values, ["paper's", "kept"], "paper's", errors) == "paper's"
    assert choose(values, ["paper's", "kept"]) == "kept"  # no default: the plain argmin
    # 0.144 > 0.066: the table prefers "far", which is chosen over the default
    assert choose(values, None, "paper's", errors) == "far"
    assert choose({"paper's": math.inf, "kept": 0.1}, None, "paper's", {"paper's": math.inf, "kept": 0.0}) == "kept"


def test_one_seed_has_no_standard_error_and_tells_no_candidate_from_the_default():
    """With one seed the spread of J is unknown, not 0: the argmin does not overrule the default on it."""
    targets = [Target("Network", "train_acc", "Network")]
    assert math.isnan(objective_error({"Network": {"train_acc": [90.0]}}, targets, PAPER))
    values = {"paper's": 0.2, "kept": 0.1}
    errors = {"paper's": math.nan, "kept": math.nan}
    assert not told_apart("kept", "paper's", values, errors)
    assert choose(values, None, "paper's", errors) == "paper's"
    assert choose(values) == "kept"  # no default: the plain argmin, as before
    calibration = Calibration(out=None, values={"o": values}, errors={"o": errors}, chosen={"o": "paper's"})
    assert calibration.tied("o") == ["kept"]


def test_the_shipped_candidates_file_loads_with_every_target_in_the_papers_table():
    spec = load_candidates("calibration/shi_table1")
    names = [c.name for c in spec.candidates]
    assert names[0] == "erasing (shipped)" and spec.candidates[0].overlay == {}
    objectives = {o.name: o for o in spec.objectives}
    assert set(objectives) == {"Table 1", "One Step cosine"}
    table_1 = objectives["Table 1"]
    # Each paper cell once, by the best classifier; the process's SGD readout is shown, not scored.
    assert len({(t.paper_method, t.metric) for t in table_1.targets}) == len(table_1.targets) == 12
    assert all("readout" not in t.method for t in table_1.targets) and spec.shown
    # It chooses between processes that differ in steps 1-2 only: from step 3 the first layer's rate is tuned per
    # table (compare/shi's lr_w@3 grid, which the calibration's Network tunes too); a candidate with late rates or
    # a grid of its own is shown, not chosen.
    methods = {m.name: m for m in load_methods(resolve_config(spec.methods))}
    shi = {m.name: m for m in load_methods(resolve_config("compare/shi"))}
    assert (
        methods["Network"].tune == shi["Network"].tune and methods["Network w/o structure"].tune == shi["Network"].tune
    )
    for candidate in spec.candidates:
        training = candidate.overlay.get("model", {}).get("init_args", {}).get("training", {})
        late = {name: schedule[-1]["value"] for name, schedule in training.items() if name in ("lr_w", "lr_a")}
        plain = late.get("lr_w", 1e-4) == 1e-4 and late.get("lr_a", 1000) == 1000 and not candidate.tune
        assert (candidate.name in table_1.among) == (plain and candidate.tuned), candidate.name
    assert [c.name for c in spec.candidates if not c.tuned] == ["eq. (278) one eta"]
    assert [c.name for c in spec.candidates if c.tune] == ["erasing, tuned pair", "kept, eta1 = 15, tuned pair"]
    assert table_1.default == "erasing (shipped)"  # the analysis's constants (Section 5.1), unless Table 1 prefers
    cosine = objectives["One Step cosine"]
    assert [t.label for t in cosine.targets] == ["One Step: cos_similarity"]
    assert cosine.among and all(name.startswith("kept") for name in cosine.among)
    # Every kept candidate keeps the initialisation: lambda_w^(1) = 0.
    for candidate in spec.candidates:
        if candidate.name.startswith("kept"):
            decay = merge_experiment(["shi_parity", *candidate.layers])[0]["model"]["init_args"]["training"]
            assert Schedule(decay["weight_decay_w"], "x")(1) == 0.0, candidate.name


def test_a_kept_candidate_changes_step_1_alone_and_keeps_each_experiments_other_steps():
    """E.1.2's biases stay frozen from step 2, E.2.3 n = 10000's second layer keeps its 6000."""
    spec = load_candidates("calibration/shi_table1")
    kept = next(c for c in spec.candidates if c.name == "kept, eta1 = 15")
    assert kept.overlay == {} and set(kept.at_steps) == {1}

    def training(*configs):
        return merge_experiment([*configs, *kept.layers])[0]["model"]["init_args"]["training"]

    def at(schedule, step):
        return Schedule(schedule, "x")(step)

    e11, e12, n10000 = training("shi_parity"), training("shi_interval"), training("shi_parity", "shi/n10000")
    plain = merge_experiment(["shi_interval"])[0]["model"]["init_args"]["training"]
    for process in (e11, e12, n10000):
        assert at(process["lr_w"], 1) == 15.0 and at(process["weight_decay_w"], 1) == 0.0
        assert at(process["lr_b"], 1) == 1e-3
    # E.1.1's lr_b followed lr_w: it does from step 2 on, as the experiment has it.
    assert [at(e11["lr_b"], s) for s in (2, 3, 600)] == [1.0, 1e-4, 1e-4]
    assert [at(e12["lr_b"], s) for s in (2, 3, 200)] == [0.0, 0.0, 0.0] == [at(plain["lr_b"], s) for s in (2, 3, 200)]
    assert at(n10000["lr_a"], 3) == 6000.0 and at(e12["weight_decay_w"], 2) == at(plain["weight_decay_w"], 2)
    with pytest.raises(ValueError, match=r"at_steps 1: model.init_args.training.nothing: the experiment sets no"):
        StepValues({1: {"model.init_args.training.nothing": 1.0}}).apply_to(merge_experiment(["shi_parity"])[0])


@pytest.mark.parametrize(
    "at_steps", [{0: {"a.b": 1.0}}, {1: {"a.b": "x"}}, {1: [1.0]}, [1.0], {True: {"a.b": 1.0}}]
)
def test_bad_step_values_are_refused_with_the_candidate_named(tmp_path, at_steps):
    spec = {
        "methods": "compare/shi_network",
        "paper": "shi2022",
        "setting": "E.1.1 parity (T1)",
        "objectives": {"o": {"targets": [{"method": "Network", "metric": "train_acc"}]}},
        "candidates": {"a": {"about": "x", "overlay": {}, "at_steps": at_steps}},
    }
    path = tmp_path / "candidates.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(ValueError, match=r"candidate 'a': 'at_steps' maps update steps \(integers >= 1\)"):
        load_candidates(path)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"objectives": None}, "'objectives' is missing"),
        ({"candidates": {"a": {"about": "x"}}}, "candidate 'a' needs 'about' and an 'overlay' mapping"),
        (
            {"objectives": {"o": {"targets": [{"method": "Network", "metric": "loss"}]}}},
            "metric 'loss' is not one of",
        ),
        (
            {
                "objectives": {"o": {"targets": [{"method": "Network", "metric": "cos_similarity"}]}},
                "setting": "nowhere",
            },
            "the paper's table has no 'cos' for 'Network' in 'nowhere'",
        ),
        ({"objectives": {"o": {"targets": []}}}, "objective 'o' has no targets"),
        (
            {"candidates": {"a": {"about": "x", "overlay": {}, "tune": {"NTK": {"model.init_args.training.lr": [1]}}}}},
            r"candidate 'a': 'tune' names \['NTK'\], not methods of compare/shi_network",
        ),
        (
            {"candidates": {"a": {"about": "x", "overlay": {}, "tuned": False, "tune": {"Network": {"x": [1]}}}}},
            "candidate 'a': 'tuned' is true or false, and false takes no 'tune'",
        ),
        (
            {"objectives": {"o": {"targets": [{"method": "Network", "metric": "train_acc"}], "among": ["zz"]}}},
            "'among' names no candidate",
        ),
        (
            {"objectives": {"o": {"targets": [{"method": "Network", "metric": "train_acc"}], "default": "zz"}}},
            "objective 'o': 'default' 'zz' is not a candidate it chooses between",
        ),
        ({"diagnostics": [{"method": "Network", "metric": "count_acc_*"}]}, "needs 'method', 'metric' and 'label'"),
        (
            {"diagnostics": [{"method": "NTK", "metric": "m", "label": "x"}]},
            "diagnostics names 'NTK', not a method of compare/shi_network",
        ),
    ],
)
def test_bad_candidates_files_are_refused_with_the_entry_named(tmp_path, change, match):
    spec = {
        "methods": "compare/shi_network",
        "paper": "shi2022",
        "setting": "E.1.1 parity (T1)",
        "objectives": {"o": {"targets": [{"method": "Network", "metric": "train_acc"}]}},
        "candidates": {"a": {"about": "x", "overlay": {}}},
    }
    spec.update(change)
    path = tmp_path / "candidates.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(ValueError, match=match):
        load_candidates(path)


def test_calibrate_tunes_the_methods_grids_as_items_do_and_chooses_by_the_objective(tmp_path, capsys):
    """Candidates (a rate that learns, one that cannot move, one with its own grid) on a tiny experiment."""
    counted = [{"class_path": "FeatureAlignment", "init_args": {"mds_steps": []}}, {"class_path": "CountAccuracy"}]
    config = write_config(
        tmp_path,
        merge_configs(TINY, {"data": {"init_args": {"val_size": 200}}, "trainer": {"callbacks+": counted}}),
    )
    methods = tmp_path / "methods.yaml"
    # A grid the items tune on each table's validation set: every candidate tunes it too, unless it says not.
    decay = "model.init_args.training.weight_decay_w"
    methods.write_text(yaml.safe_dump({"methods": {"Network": {"tune": {decay: [0.0, 0.001]}}}}))
    candidates = tmp_path / "candidates.yaml"
    candidates.write_text(
        yaml.safe_dump(
            {
                "methods": str(methods),
                "paper": "shi2022",
                "setting": "E.1.1 parity (T1)",
                "objectives": {
                    "accuracy": {"about": "train accuracy.", "targets": [{"method": "Network", "metric": "train_acc"}]},
                    "frozen only": {
                        "about": "among the frozen one.",
                        "targets": [{"method": "Network", "metric": "train_acc"}],
                        "among": ["frozen"],
                    },
                    "by default": {
                        "about": "the frozen process stands unless J tells the argmin from it.",
                        "targets": [{"method": "Network", "metric": "train_acc"}],
                        "default": "frozen",
                    },
                },
                "diagnostics": [{"method": "Network", "metric": "count_acc_*", "label": "accuracy by count"}],
                "candidates": {
                    "frozen": {
                        "about": "no step moves",
                        "overlay": {"model": {"init_args": {"training": {"lr": 0.0}}}},
                        "tuned": False,
                    },
                    "moving": {"about": "rate 0.5", "overlay": {"model": {"init_args": {"training": {"lr": 0.5}}}}},
                    "moving, own grid": {
                        "about": "rate 0.5, its own decay grid",
                        "overlay": {"model": {"init_args": {"training": {"lr": 0.5}}}},
                        "tune": {"Network": {decay: [0.01]}},
                    },
                },
            }
        )
    )
    out = tmp_path / "out"
    args = ["--config", str(config), "--candidates", str(candidates), "--out", str(out), "--seeds", "2"]
    calibration = calibrate_command(args, build_cli)
    for name, rate in (("frozen", 0.0), ("moving", 0.5), ("moving, own grid", 0.5)):  # the candidate's constants
        run = yaml.safe_load(
            (out / "candidates" / Candidate(name, "", {}).slug / "methods" / "network" / "config.yaml").read_text()
        )
        assert run["model"]["init_args"]["training"]["lr"] == rate
    assert calibration.tuned["frozen"] == {}  # untuned: its overlay is the whole process
    assert calibration.tuned["moving"]["Network"][decay] in (0.0, 0.001)  # the methods file's grid, tuned
    assert calibration.tuned["moving, own grid"] == {"Network": {decay: 0.01}}  # its own grid replaces it
    values = calibration.values["accuracy"]
    assert calibration.chosen["accuracy"] == min(values, key=values.get)
    assert calibration.chosen["frozen only"] == "frozen"
    # The default reaches the choice through calibrate: it stands unless J tells the argmin from it.
    scored, errors = calibration.values["by default"], calibration.errors["by default"]
    argmin = min(scored, key=scored.get)
    assert calibration.chosen["by default"] == (argmin if told_apart(argmin, "frozen", scored, errors) else "frozen")
    summary = json.loads((out / "calibration.json").read_text())
    assert summary["objectives"]["by default"]["default"] == "frozen"
    assert summary["objectives"]["by default"]["chosen"] == calibration.chosen["by default"]
    assert summary["objectives"]["by default"]["argmin"] == argmin
    assert summary["objectives"]["frozen only"]["among"] == ["frozen"]
    assert summary["candidates"]["moving"]["overlay"] == {"model": {"init_args": {"training": {"lr": 0.5}}}}
    rows = list(csv.DictReader(open(out / "calibration.csv")))
    assert {(r["candidate"], r["method"], r["metric"], r["paper"]) for r in rows} == {
        ("frozen", "Network", "train_acc", "100.0"),
        ("moving", "Network", "train_acc", "100.0"),
        ("moving, own grid", "Network", "train_acc", "100.0"),
    }
    table = (out / "calibration.md").read_text()
    assert "| Network: train_acc | 100 |" in table and "(chosen)**" in table
    # The diagnostic row: each candidate's mean accuracy at counts 0..3 (k = 3), from CountAccuracy's results.
    row = next(line for line in table.splitlines() if "accuracy by count (featlearn's diagnostic)" in line)
    frozen = calibration.results["frozen"]["Network"]
    expected = " · ".join(f"{statistics.fmean(frozen[f'count_acc_{s}']):.3g}" for s in range(4))
    assert row.split(" | ")[2] == expected, row
    assert "| J: accuracy, degenerate seeds at face value | |" in table
    assert (
        "| tuned on the validation set | | nothing (untuned: its overlay sets the rates) | Network: weight_decay_w = "
        in table
    )
    assert summary["candidates"]["moving, own grid"]["tuned"] == {"Network": {decay: 0.01}}
    assert f"accuracy: {calibration.chosen['accuracy']}" in capsys.readouterr().out
    # A rerun reuses every trial; `only` narrows the candidates and the objectives' choices with them.
    again = calibrate([str(config)], candidates, out, seeds=2, only=["moving"], build=build_cli)
    assert list(again.results) == ["moving"] and again.chosen["frozen only"] is None
    # One seed: J has no standard error to show, and the table says so rather than "± 0.000".
    calibrate([str(config)], candidates, tmp_path / "one", seeds=1, only=["moving"], build=build_cli)
    assert "(one seed: no error)" in (tmp_path / "one" / "calibration.md").read_text()
    with pytest.raises(ValueError, match=r"only names \['nope'\]"):
        calibrate([str(config)], candidates, out, seeds=2, only=["nope"], build=build_cli)


def test_a_tuned_schedule_tail_keeps_the_experiments_early_steps(tmp_path):
    """``path@t`` in a grid: the value from step t on, the experiment's (or a calibration's) steps before it."""
    methods = tmp_path / "methods.yaml"
    methods.write_text(yaml.safe_dump({"methods": {"Network": {"tune": {"model.init_args.training.lr_w@3": [1e-3]}}}}))
    (method,) = load_methods(methods)
    experiment = {
        "model": {
            "init_args": {"training": {"lr_w": [{"start": 1, "end": 1, "value": 18.0}, {"start": 2, "value": 1.0}]}}
        }
    }
    config = method_config(experiment, method.with_values({"model.init_args.training.lr_w@3": 1e-3}), 1, None, tmp_path)
    assert config["model"]["init_args"]["training"]["lr_w"] == [
        {"start": 1, "end": 1, "value": 18.0},
        {"start": 2, "end": 2, "value": 1.0},
        {"start": 3, "value": 1e-3},
    ]
    # Unset, lr_w follows lr (TwoLayerNet's first_layer_arguments): lr's steps are kept before step 3.
    both = {"model": {"class_path": "TwoLayerNet", "init_args": {"training": {"lr": 0.2}}}}
    config = method_config(both, method.with_values({"model.init_args.training.lr_w@3": 1e-3}), 1, None, tmp_path)
    assert config["model"]["init_args"]["training"]["lr_w"] == [
        {"start": 1, "end": 2, "value": 0.2},
        {"start": 3, "value": 1e-3},
    ]
    with pytest.raises(ValueError, match="sets no model.init_args.training.lr_w whose steps before 3"):
        method_config({}, method.with_values({"model.init_args.training.lr_w@3": 1e-3}), 1, None, tmp_path)
    methods.write_text(yaml.safe_dump({"methods": {"N": {"tune": {"model.init_args.training.lr_w@x": [1e-3]}}}}))
    with pytest.raises(ValueError, match="'@' must be followed by a step >= 1"):
        load_methods(methods)
    # from_step: the same tail, fixed in the methods file (a rate a method sets, not one it tunes).
    methods.write_text(yaml.safe_dump({"methods": {"N": {"from_step": {"model.init_args.training.lr_w@3": 0.01}}}}))
    (fixed,) = load_methods(methods)
    assert fixed.tune == {} and method_config(experiment, fixed, 1, None, tmp_path)["model"]["init_args"]["training"][
        "lr_w"
    ] == [{"start": 1, "end": 1, "value": 18.0}, {"start": 2, "end": 2, "value": 1.0}, {"start": 3, "value": 0.01}]
    for bad in ({"model.init_args.training.lr_w": 0.01}, {"model.init_args.training.lr_w@0": 0.01}, {"x@3": [1]}):
        methods.write_text(yaml.safe_dump({"methods": {"N": {"from_step": bad}}}))
        with pytest.raises(
            ValueError, match=r"Method 'N': from_step maps dotted.path@t \(a step t >= 1\) to one value"
        ):
            load_methods(methods)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--seeds", "0"], "--seeds must be >= 1, got 0"),
        (["--candidates", "nope"], "--candidates 'nope' is neither a file nor a shipped candidates file"),
    ],
)
def test_bad_calibrate_options_exit_2_with_one_line_naming_the_option(tmp_path, args, match, capsys):
    from featlearn.cli.main import main

    base = {"--config": "shi_parity", "--candidates": "calibration/shi_table1", "--out": str(tmp_path / "o")}
    argv = ["calibrate", *[x for key, value in base.items() if key not in args for x in (key, value)], *args]
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing written


def test_the_memorisation_items_kept_rows_carry_the_random_first_layer_into_step_3(tmp_path):
    """Every candidate's step 2 erases w and b (1 - 2 eta lambda = 0); the kept rows keep them through step 2."""
    chosen = next(c for c in load_candidates("calibration/shi_table1").candidates if c.name == "kept, eta1 = 15")
    experiment = merge_experiment(["shi_parity", *chosen.layers])[0]  # the item under Table 1's constants
    methods = {m.name: m for m in load_methods(resolve_config("compare/shi_memorisation"))}

    def shrink(config, group, step):  # eq. (4)'s factor on a group's parameters at a step: 1 - 2 eta lambda
        training = config["model"]["init_args"]["training"]
        rate = training.get(f"lr_{group}", training["lr_w"])  # lr_b follows lr_w where the experiment sets none
        return 1.0 - 2.0 * Schedule(rate, "x")(step) * Schedule(training[f"weight_decay_{group}"], "x")(step)

    for name, method in methods.items():
        config = method_config(experiment, method, 2, 0, tmp_path)
        kept, biases_kept = "kept initialisation" in name, "kept initialisation" in name or "lambda_b = 0" in name
        assert shrink(config, "w", 1) == 1.0 and shrink(config, "b", 1) == 1.0, name  # step 1 keeps them
        assert (shrink(config, "w", 2), shrink(config, "b", 2)) == (float(kept), float(biases_kept)), name
