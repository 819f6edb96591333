"""Trials: config merging, one trial's folder, its measurement, and running (or reusing) a list of them.

The runs here are fakes: ``build`` returns a run whose learner is a fixed linear
classifier sign(<w, x>) on a fixed set, so every number ``measure_run`` reports can be
recomputed by brute force; no Lightning fit is started.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import types
from pathlib import Path

import pytest
import torch
import yaml

from featlearn.callbacks import DegenerateRuns, DiagnosticCallback
from featlearn.contracts import GroundTruth, Learner
from featlearn.studies.trials import (
    Launcher,
    Trial,
    grouped_as_now,
    majority_rate,
    measure_run,
    merge_configs,
    run_trials,
    set_path,
)


# ---------------------------------------------------------------------- merge_configs
def test_a_subclass_keeps_the_earlier_arguments_and_a_base_class_over_a_subclass_drops_them():
    ntk = {"model": {"class_path": "LinearizedTwoLayerNet", "init_args": {"lr": 0.5, "network": {"width": 7}}}}
    back = merge_configs(ntk, {"model": {"class_path": "TwoLayerNet", "init_args": {"lr": 0.1}}})
    assert back == {"model": {"class_path": "TwoLayerNet", "init_args": {"lr": 0.1}}}  # not a subclass: replaced
    net = {"model": {"class_path": "featlearn.models.TwoLayerNet", "init_args": {"lr": 0.5, "network": {"width": 7}}}}
    sub = merge_configs(net, {"model": {"class_path": "LinearizedTwoLayerNet", "init_args": {"lr": 0.1}}})
    assert sub["model"] == {"class_path": "LinearizedTwoLayerNet", "init_args": {"lr": 0.1, "network": {"width": 7}}}


def test_a_class_spec_of_another_class_replaces_a_nested_spec_whole_and_keeps_its_siblings():
    csv = {
        "class_path": "pytorch_lightning.loggers.CSVLogger",
        "init_args": {"save_dir": "a", "flush_logs_every_n_steps": 5},
    }
    base = {"trainer": {"max_steps": 9, "logger": csv}}
    tensorboard = {"class_path": "pytorch_lightning.loggers.TensorBoardLogger", "init_args": {"save_dir": "b"}}
    merged = merge_configs(base, {"trainer": {"logger": tensorboard}})
    assert merged == {"trainer": {"max_steps": 9, "logger": tensorboard}}  # no flush_logs_every_n_steps left
    same = merge_configs(
        base, {"trainer": {"logger": {"class_path": csv["class_path"], "init_args": {"save_dir": "c"}}}}
    )
    assert same["trainer"]["logger"]["init_args"] == {"save_dir": "c", "flush_logs_every_n_steps": 5}
    assert base["trainer"]["logger"] is csv and csv["init_args"]["save_dir"] == "a"  # inputs untouched


def test_an_override_without_class_path_merges_into_a_class_spec():
    base = {"data": {"class_path": "BooleanXOR", "init_args": {"dim": 8, "batch_size": 4}}}
    assert merge_configs(base, {"data": {"init_args": {"dim": 16}}}) == {
        "data": {"class_path": "BooleanXOR", "init_args": {"dim": 16, "batch_size": 4}}
    }


# ---------------------------------------------------------------------- set_path
def test_set_path_sets_in_place_creating_missing_and_null_mappings():
    config = {"model": {"init_args": {"lr": 1.0, "init": None}}, "keep": 1}
    set_path(config, "model.init_args.init.scale", 0.5, "--scale")
    set_path(config, "data.init_args.dim", 8, "--dim")
    set_path(config, "model.init_args.lr", 0.25, "--lr")
    set_path(config, "top", [1, 2], "--top")
    assert config == {
        "model": {"init_args": {"lr": 0.25, "init": {"scale": 0.5}}},
        "keep": 1,
        "data": {"init_args": {"dim": 8}},
        "top": [1, 2],
    }


def test_set_path_through_a_value_names_the_setting_and_the_key_and_changes_nothing():
    config = {"model": {"init_args": {"lr": 0.1}}}
    with pytest.raises(ValueError, match=r"^methods\.A\.scale: 'lr' is not a mapping in the config \(0\.1\)"):
        set_path(config, "model.init_args.lr.start", 1, "methods.A.scale")
    assert config == {"model": {"init_args": {"lr": 0.1}}}


# ---------------------------------------------------------------------- Trial
CONFIG = {"trainer": {"max_steps": 3}, "model": {"class_path": "TwoLayerNet"}, "seed_everything": 1}


def test_the_digest_is_the_sha256_of_the_config_file_the_trial_writes(tmp_path):
    trial = Trial("A", tmp_path / "a", CONFIG)
    path = trial.prepare()
    assert path == tmp_path / "a" / "config.yaml"
    assert trial.digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert yaml.safe_load(path.read_text()) == CONFIG
    assert list(yaml.safe_load(path.read_text())) == ["trainer", "model", "seed_everything"]  # the keys' order
    assert Trial("B", tmp_path / "b", {**CONFIG, "seed_everything": 2}).digest != trial.digest


def test_prepare_clears_what_an_earlier_run_left_in_the_folder_and_the_stale_folders(tmp_path):
    events = tmp_path / "events" / "A"
    trial = Trial("A", tmp_path / "a", CONFIG, stale=(events,))
    (tmp_path / "a" / "checkpoints").mkdir(parents=True)
    (tmp_path / "a" / "checkpoints" / "last.ckpt").write_text("old")
    (tmp_path / "a" / "result.json").write_text("{}")
    events.mkdir(parents=True)
    (events / "events.out").write_text("old")
    trial.prepare()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["config.yaml"]
    assert not events.exists() and (tmp_path / "events").is_dir()  # only the trial's own folder goes


def test_finished_reuses_the_same_config_and_refuses_a_changed_one_unless_overwritten(tmp_path):
    trial = Trial("Net w=4", tmp_path / "a", CONFIG)
    assert trial.finished(overwrite=False, changed="x") is None  # nothing there
    trial.prepare()
    saved = trial.save({"test_acc": [50.0, 75.0]}, 1.5)
    assert json.loads(trial.result_path.read_text()) == saved
    assert saved == {"label": "Net w=4", "digest": trial.digest, "seconds": 1.5, "metrics": {"test_acc": [50.0, 75.0]}}
    assert trial.finished(overwrite=False, changed="x") == saved
    assert trial.finished(overwrite=True, changed="x") == saved  # the same config is reused even with overwrite
    changed = Trial("Net w=4", tmp_path / "a", {**CONFIG, "trainer": {"max_steps": 4}})
    with pytest.raises(ValueError) as error:
        changed.finished(overwrite=False, changed="--seeds changed")
    message = str(error.value)
    assert str(trial.result_path) in message and "'Net w=4'" in message and "(--seeds changed)" in message
    assert "--overwrite" in message and "new --out" in message
    assert changed.finished(overwrite=True, changed="x") is None
    assert trial.result_path.is_file()  # finished() only reads: the old result stays until the rerun's prepare


# ---------------------------------------------------------------------- majority_rate
@pytest.mark.parametrize("seed", range(3))
def test_majority_rate_is_the_commonest_class_share_by_counting(seed):
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 3, (4, 11), generator=generator)  # (S, n), class indices
    labels[0] = 2  # one class only: 100 %
    expected = []
    for row in labels.tolist():
        expected.append(100.0 * max(row.count(c) for c in set(row)) / len(row))
    assert majority_rate(labels) == pytest.approx(expected, abs=1e-12)
    assert majority_rate(labels.float() * 2 - 1) == pytest.approx(expected, abs=1e-12)  # any label values
    assert majority_rate(labels[:, :, None]) == pytest.approx(expected, abs=1e-12)  # trailing axes flattened
    assert majority_rate(torch.tensor([[1.0, -1.0, -1.0, 1.0]])) == [50.0]


# ---------------------------------------------------------------------- fake runs
class FakeModel:
    """A :class:`~featlearn.contracts.Learner`: sign(<w_s, x>) per member, fixed ``first_layer_features``."""

    def __init__(self, w, features, diverged=None):
        self.w, self.features = w, features  # (S, d), (S, p, d) or None
        self.ensemble_size = self.streams = w.shape[0]
        self.updates = types.SimpleNamespace(logged_member_losses={}, diverged_members=diverged or {})

    def to(self, device):
        return self

    def eval(self):
        return self

    def scores(self, x):
        return torch.einsum("snd,sd->sn", x, self.w)

    def output_weights(self):
        return None

    def evaluate_dataset(self, x, y, chunk):
        assert chunk == 7  # the data model's eval_batch_size
        predictions = torch.where(self.scores(x) >= 0, 1.0, -1.0)
        return torch.zeros(x.shape[0]), (predictions != y).double().mean(1)

    def first_layer_features(self):
        return self.features

    def scheduled_values(self, step):
        return {}


class FakeData:
    """Fixed sets for members S = 2, d = 3."""

    eval_batch_size = 7

    def __init__(self, online, feature, centres=None, val=True):
        generator = torch.Generator().manual_seed(0)
        self.sets = {
            split: (
                torch.randn(2, n, 3, generator=generator),
                torch.where(torch.rand(2, n, generator=generator) < p, 1.0, -1.0),
            )
            for split, n, p in (("train", 12, 0.3), ("val", 6 if val else 0, 0.5), ("test", 20, 0.8))
        }
        labels = None if centres is None else torch.ones(len(centres))
        self.online, self.truth = online, GroundTruth(feature=feature, centres=centres, centre_labels=labels)

    def eval_set(self, split):
        return self.sets[split]

    def train_set(self):
        return self.sets["train"]

    def set_size(self, split):
        if split == "train" and self.online:
            return None
        return self.sets[split][1].shape[-1]

    def ground_truth(self):
        return self.truth


class PhaseSteps(DiagnosticCallback):
    def compute(self, trainer, pl_module, step):
        return {}

    def member_results(self):
        return {"boundary_step": [3, None]}


def fake_run(model, data, steps=5, max_steps=5, callbacks=(), interrupted=False, should_stop=False):
    trainer = types.SimpleNamespace(
        interrupted=interrupted,
        should_stop=should_stop,
        max_steps=max_steps,
        global_step=steps,
        callbacks=list(callbacks),
        strategy=types.SimpleNamespace(root_device=torch.device("cpu")),
    )
    return types.SimpleNamespace(trainer=trainer, model=model, datamodule=data)


def write_config(folder):
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump({"trainer": {"max_steps": 5}}))
    return path


def cosine(a, b):
    return float(a.double() @ b.double() / (a.double().norm() * b.double().norm()))


def test_measure_run_reports_each_members_accuracies_majorities_and_alignment_by_brute_force(tmp_path):
    w = torch.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 1.0]])
    features = torch.tensor([[[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]], [[0.0, 0.0, -1.0], [0.3, -1.0, 0.2]]])
    feature = torch.tensor([1.0, 2.0, 0.0])
    centres = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    data = FakeData(online=False, feature=feature, centres=centres)
    degenerate = DegenerateRuns()
    degenerate.flags = [["one class"], []]
    model = FakeModel(w, features, diverged={1: 4})
    assert isinstance(model, Learner)  # what measure_run asks of a learner
    seen = []

    def build(argv):
        seen.append((list(argv), list(sys.argv)))
        return fake_run(model, data, callbacks=[degenerate, PhaseSteps()])

    argv = list(sys.argv)
    result = measure_run(write_config(tmp_path), build)
    assert sys.argv == argv
    assert len(seen) == 1 and seen[0][1] == argv[:1]  # the CLI sees no pytest arguments
    assert seen[0][0][:5] == ["fit", "--config", str(tmp_path / "config.yaml"), "--test_after_fit", "false"]

    def accuracy(split):
        x, y = data.sets[split]
        return [100.0 * float((torch.where(x[s] @ w[s] >= 0, 1.0, -1.0) == y[s]).double().mean()) for s in range(2)]

    def majority(split):
        y = data.sets[split][1]
        return [100.0 * max(int((y[s] > 0).sum()), int((y[s] < 0).sum())) / y.shape[1] for s in range(2)]

    for split in ("train", "val", "test"):
        assert result[f"{split}_acc"] == pytest.approx(accuracy(split), abs=1e-9)
    assert result["train_majority"] == pytest.approx(majority("train"))
    assert result["test_majority"] == pytest.approx(majority("test"))
    assert result["cos_similarity"] == pytest.approx([max(cosine(f, feature) for f in member) for member in features])
    covered = [sum(max(cosine(f, c) for f in member) >= 0.9 for c in centres) / 2 for member in features]
    assert covered == [0.5, 0.0] and result["centre_coverage"] == pytest.approx(covered)
    assert result["steps"] == 5 and result["degenerate"] == [True, False]
    assert result["diverged_members"] == {"1": 4} and result["boundary_step"] == [3, None]


def test_measure_run_online_without_features_or_val_set_reports_none(tmp_path):
    data = FakeData(online=True, feature=torch.ones(3), val=False)
    result = measure_run(write_config(tmp_path), lambda argv: fake_run(FakeModel(torch.ones(2, 3), None), data))
    assert result["train_acc"] is result["train_majority"] is result["val_acc"] is None
    assert result["cos_similarity"] is result["centre_coverage"] is result["degenerate"] is None
    assert "diverged_members" not in result and len(result["test_acc"]) == 2


def test_measure_run_refuses_a_run_that_stopped_early_or_was_interrupted(tmp_path):
    data = FakeData(online=True, feature=None)
    model = FakeModel(torch.ones(2, 3), None)
    path = write_config(tmp_path)
    with pytest.raises(
        RuntimeError, match=rf"stopped at step 3 of trainer\.max_steps = 5 \(config {re.escape(str(path))}\)"
    ):
        measure_run(path, lambda argv: fake_run(model, data, steps=3))
    with pytest.raises(KeyboardInterrupt):
        measure_run(path, lambda argv: fake_run(model, data, steps=3, interrupted=True))
    # A callback that ends the run on purpose (ParityProgress once every seed learned) makes it complete.
    assert measure_run(path, lambda argv: fake_run(model, data, steps=3, should_stop=True))["steps"] == 3


# ---------------------------------------------------------------------- run_trials
class Builds:
    """A fake ``build``: each trial's config says its score (``fake.w``) or that it diverges."""

    def __init__(self):
        self.configs = []

    def __call__(self, argv):
        config = yaml.safe_load(Path(argv[argv.index("--config") + 1]).read_text())
        self.configs.append(config["fake"])
        if config["fake"].get("diverge"):
            raise FloatingPointError(f"loss is nan at step 2 ({config['fake']['name']})")
        w = torch.tensor(config["fake"]["w"], dtype=torch.float32).expand(2, 3)
        return fake_run(FakeModel(w, None), FakeData(online=True, feature=None))


def trial(tmp_path, name, w=(1.0, 0.0, 0.0), diverge=False):
    return Trial(name, tmp_path / name, {"fake": {"name": name, "w": list(w), "diverge": diverge}})


def test_finished_trials_are_reused_and_only_the_others_run(tmp_path):
    build, logs, seen = Builds(), [], []
    first = [trial(tmp_path, "a"), trial(tmp_path, "b", w=(0.0, 1.0, 0.0))]
    results = run_trials(first, build, log=logs.append, on_result=lambda t, r: seen.append((t.label, r)))
    assert [c["name"] for c in build.configs] == ["a", "b"]
    assert seen == [("a", results["a"]), ("b", results["b"])]
    assert results["a"]["metrics"]["test_acc"] != results["b"]["metrics"]["test_acc"]  # each its own run
    for label in "ab":
        assert json.loads((tmp_path / label / "result.json").read_text()) == results[label]
    logs.clear()
    again = run_trials([trial(tmp_path, "c"), *first], build, log=logs.append)
    assert [c["name"] for c in build.configs] == ["a", "b", "c"]  # only the new trial ran
    assert list(again) == ["c", "a", "b"]  # in the order given
    assert again["a"] == results["a"] and again["b"] == results["b"]
    assert again["c"]["metrics"] == results["a"]["metrics"]  # the same config runs to the same numbers
    assert f"a: finished earlier, reusing {tmp_path / 'a' / 'result.json'}" in logs


def test_a_changed_trial_stops_the_command_before_any_trial_runs_unless_overwritten(tmp_path):
    build = Builds()
    run_trials([trial(tmp_path, "b")], build, log=lambda _: None)
    changed = trial(tmp_path, "b", w=(0.0, 0.0, 1.0))
    with pytest.raises(ValueError, match="--overwrite"):
        run_trials([trial(tmp_path, "a"), changed], build, changed="the grid changed", log=lambda _: None)
    assert len(build.configs) == 1 and not (tmp_path / "a").exists()  # "a" came first, yet nothing ran
    results = run_trials([changed], build, overwrite=True, log=lambda _: None)
    assert build.configs[-1]["w"] == [0.0, 0.0, 1.0]
    assert (
        json.loads((tmp_path / "b" / "result.json").read_text())["digest"] == changed.digest == results["b"]["digest"]
    )


def test_a_diverged_trial_stops_the_command_unless_divergence_is_a_result(tmp_path):
    build = Builds()
    with pytest.raises(FloatingPointError, match=r"loss is nan at step 2 \(bad\)"):
        run_trials([trial(tmp_path, "bad", diverge=True), trial(tmp_path, "ok")], build, log=lambda _: None)
    assert not (tmp_path / "bad" / "result.json").exists() and not (tmp_path / "ok").exists()
    results = run_trials(
        [trial(tmp_path, "bad", diverge=True), trial(tmp_path, "ok")], build, log=lambda _: None, divergence_ok=True
    )
    assert results["bad"]["metrics"] == {"diverged": "loss is nan at step 2 (bad)"}
    assert "test_acc" in results["ok"]["metrics"]
    calls = len(build.configs)
    again = run_trials([trial(tmp_path, "bad", diverge=True)], build, log=lambda _: None, divergence_ok=True)
    assert len(build.configs) == calls and again["bad"] == results["bad"]  # a diverged result is reused too
    with pytest.raises(FloatingPointError):  # a reused divergence does not stop the command; a new one does
        run_trials([trial(tmp_path, "bad2", diverge=True)], build, log=lambda _: None)


def test_an_interrupted_trial_leaves_no_result_and_restarts_next_time(tmp_path):
    calls = []

    def build(argv):
        calls.append(argv)
        return fake_run(FakeModel(torch.ones(2, 3), None), FakeData(True, None), interrupted=len(calls) == 1)

    with pytest.raises(KeyboardInterrupt):
        run_trials([trial(tmp_path, "a")], build, log=lambda _: None)
    assert not (tmp_path / "a" / "result.json").exists()
    assert "test_acc" in run_trials([trial(tmp_path, "a")], build, log=lambda _: None)["a"]["metrics"]
    assert len(calls) == 2


class FakeExecutor:
    """submitit's executor, running each job here at ``result()``."""

    def __init__(self, folder, cluster):
        self.folder, self.cluster, self.parameters = folder, cluster, {}

    def update_parameters(self, **parameters):
        self.parameters.update(parameters)

    def map_array(self, function, paths, builds):
        return [
            types.SimpleNamespace(job_id=f"77_{i}", result=lambda p=p, b=b: function(p, b))
            for i, (p, b) in enumerate(zip(paths, builds, strict=True))
        ]


@pytest.fixture
def fake_submitit(monkeypatch):
    made = []

    def auto_executor(folder, cluster):
        made.append(FakeExecutor(folder, cluster))
        return made[-1]

    monkeypatch.setitem(sys.modules, "submitit", types.SimpleNamespace(AutoExecutor=auto_executor))
    return made


def test_submitted_trials_are_saved_in_order_and_a_diverged_job_stops_the_command(tmp_path, fake_submitit):
    launcher, logs, build = Launcher(kind="submitit-local", folder=tmp_path / "jobs"), [], Builds()
    local = run_trials([trial(tmp_path / "here", "a")], Builds(), log=lambda _: None)["a"]
    results = run_trials([trial(tmp_path, "a"), trial(tmp_path, "b", w=(0, 1, 0))], build, launcher, log=logs.append)
    assert [c["name"] for c in build.configs] == ["a", "b"] and list(results) == ["a", "b"]
    assert results["a"]["metrics"] == local["metrics"]  # the job runs the local code path
    assert "submitted 2 trial(s) (submitit-local): job ids 77_0, 77_1" in logs
    assert fake_submitit[0].cluster == "local" and fake_submitit[0].folder == str(tmp_path / "jobs" / "%j")
    with pytest.raises(FloatingPointError, match="nan"):
        run_trials([trial(tmp_path, "c", diverge=True)], build, launcher, log=lambda _: None)
    assert not (tmp_path / "c" / "result.json").exists()


# ---------------------------------------------------------------------- Launcher
def parse(*argv):
    parser = argparse.ArgumentParser()
    Launcher.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(
    ("option", "value", "minimum"),
    [
        ("--slurm-time", "0", 1),
        ("--slurm-gpus", "-1", 0),
        ("--slurm-cpus", "0", 1),
        ("--slurm-mem-gb", "-4", 1),
        ("--array-parallelism", "0", 1),
    ],
)
def test_launcher_options_below_their_minimum_are_refused_by_name(tmp_path, option, value, minimum):
    with pytest.raises(ValueError, match=f"^{option} must be >= {minimum}, got {value}\\.$"):
        Launcher.from_args(parse(option, value), tmp_path)


def test_an_unknown_launcher_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit):
        parse("--launcher", "sge")
    assert "invalid choice: 'sge'" in capsys.readouterr().err


def test_slurm_options_reach_the_executor_and_local_jobs_get_no_slurm_settings(tmp_path, fake_submitit):
    options = {"--launcher": "slurm", "--slurm-partition": "gpu", "--slurm-account": "lab", "--slurm-time": "30"}
    options.update({"--slurm-gpus": "1", "--slurm-cpus": "4", "--slurm-mem-gb": "8", "--array-parallelism": "5"})
    args = parse(*(part for item in options.items() for part in item))
    launcher = Launcher.from_args(args, tmp_path)
    assert launcher == Launcher("slurm", tmp_path, "gpu", 30, 1, 4, 8, 5, "lab")
    assert launcher.executor().parameters == {
        "name": "featlearn-trial",
        "timeout_min": 30,
        "cpus_per_task": 4,
        "mem_gb": 8,
        "gpus_per_node": 1,
        "slurm_array_parallelism": 5,
        "slurm_partition": "gpu",
        "slurm_account": "lab",
    }
    local = Launcher.from_args(parse("--launcher", "submitit-local"), tmp_path).executor()
    assert local.cluster == "local"
    assert local.parameters == {"name": "featlearn-trial", "timeout_min": 60, "cpus_per_task": 2, "mem_gb": 16}


def test_a_trial_s_digest_leaves_out_where_it_writes_so_a_moved_study_keeps_its_results(tmp_path):
    config = {"trainer": {"max_steps": 3}, "model": {"class_path": "TwoLayerNet"}}
    here = Trial("a", tmp_path / "a", {**config, "ckpt_path": "/x/last.ckpt",
                                       "trainer": {**config["trainer"], "default_root_dir": "/x"}})  # fmt: skip
    there = Trial("a", tmp_path / "b", {**config, "ckpt_path": "/y/last.ckpt",
                                        "trainer": {**config["trainer"], "default_root_dir": "/y"}})  # fmt: skip
    assert here.digest == there.digest == Trial("a", tmp_path, config).digest
    assert Trial("a", tmp_path, {**config, "trainer": {"max_steps": 4}}).digest != here.digest
    assert Trial("a", tmp_path, config).digest == hashlib.sha256(Trial("a", tmp_path, config).text.encode()).hexdigest()
    # The TensorBoard logger's save_dir (an absolute path into the study's folder) says where, too.
    logger = {"class_path": "TensorBoardLogger", "init_args": {"save_dir": "/x/tensorboard", "name": "net"}}
    logged_here = Trial("a", tmp_path / "a", {**config, "trainer": {**config["trainer"], "logger": logger}})
    moved = {**logger, "init_args": {**logger["init_args"], "save_dir": "/y/tensorboard"}}
    logged_there = Trial("a", tmp_path / "b", {**config, "trainer": {**config["trainer"], "logger": [moved]}})
    assert logged_here.digest != here.digest  # the logger itself (its name) is part of what the run writes
    renamed = {**logger, "init_args": {**logger["init_args"], "name": "other"}}
    assert Trial("a", tmp_path, {**config, "trainer": {**config["trainer"], "logger": renamed}}).digest != (
        logged_here.digest
    )
    listed = Trial("a", tmp_path / "c", {**config, "trainer": {**config["trainer"], "logger": [logger]}})
    assert listed.digest == logged_there.digest  # a list of one logger: its save_dir left out all the same


def test_a_result_saved_under_the_digest_that_kept_the_logger_s_save_dir_is_reused_and_upgraded(tmp_path):
    logger = {"class_path": "TensorBoardLogger", "init_args": {"save_dir": str(tmp_path / "tb"), "name": "net"}}
    trial = Trial("a", tmp_path / "a", {**CONFIG, "trainer": {"max_steps": 3, "logger": logger}})
    assert trial.legacy_digest != trial.digest
    trial.prepare()
    old = {"label": "a", "digest": trial.legacy_digest, "seconds": 1.0, "metrics": {"test_acc": [90.0]}}
    trial.result_path.write_text(json.dumps(old))
    assert trial.finished(overwrite=False, changed="")["metrics"] == {"test_acc": [90.0]}
    assert json.loads(trial.result_path.read_text())["digest"] == trial.digest  # upgraded in place
    other = Trial("a", tmp_path / "a", {**CONFIG, "trainer": {"max_steps": 4, "logger": logger}})
    with pytest.raises(ValueError, match="holds a result for a different config"):
        other.finished(overwrite=False, changed="steps")


def test_a_result_saved_when_the_rates_sat_directly_under_init_args_is_reused_and_upgraded(tmp_path):
    network = {"width": 4}
    now = {"model": {"class_path": "TwoLayerNet", "init_args": {"network": network, "training": {"lr_w": 0.1}}}}
    trial = Trial("a", tmp_path / "a", {**now, "trainer": {"max_steps": 3, "default_root_dir": str(tmp_path)}})
    trial.prepare()
    before = {"model": {"class_path": "TwoLayerNet", "init_args": {"lr_w": 0.1, "network": network}}}
    trial.config_path.write_text(yaml.safe_dump({**before, "trainer": {"max_steps": 3}}))  # the earlier form
    old = {"label": "a", "digest": "0" * 64, "seconds": 1.0, "metrics": {"test_acc": [90.0]}}
    trial.result_path.write_text(json.dumps(old))
    assert trial.finished(overwrite=False, changed="")["metrics"] == {"test_acc": [90.0]}
    assert json.loads(trial.result_path.read_text())["digest"] == trial.digest  # upgraded in place
    assert yaml.safe_load(trial.config_path.read_text()) == trial.config  # and its config with it
    changed = {"model": {"class_path": "TwoLayerNet", "init_args": {"lr_w": 0.2, "network": network}}}
    trial.config_path.write_text(yaml.safe_dump({**changed, "trainer": {"max_steps": 3}}))
    trial.result_path.write_text(json.dumps(old))
    with pytest.raises(ValueError, match="holds a result for a different config"):
        trial.finished(overwrite=False, changed="rates")
    assert grouped_as_now({"model": {"class_path": "ModuleClassifier", "init_args": {"lr": 0.1}}}) == {
        "model": {"class_path": "ModuleClassifier", "init_args": {"lr": 0.1}}
    }  # a learner without the group keeps its arguments
