import json

import pytest
import pytorch_lightning as pl
import torch

from featlearn.datamodules import TeacherMixture
from featlearn.teacher import TeacherCache, TeacherSearch, first_local_minimum

# Tiny sweeps (three sizes, a few steps) often fall over the whole grid; the warning is tested by name below.
pytestmark = pytest.mark.filterwarnings("ignore:The teacher's test loss decreases")

FC_DIGITS = {"class_path": "QuadraticFC", "init_args": {"in_features": 64, "num_outputs": 10}}


def test_the_first_local_minimum_of_the_smoothed_curve_is_chosen():
    u_curve = [[4.0], [2.0], [1.0], [1.5], [3.0], [0.5]]  # a U, then double descent
    assert first_local_minimum(u_curve, neighbours=0)[0] == 2
    noisy = [[4.0, 4.2], [2.0, 2.1], [1.3, 1.1], [1.0, 1.05], [1.25, 1.0], [1.6, 1.9], [2.5, 2.4]]
    # The unsmoothed seed means wobble at index 4 ... the smoothed curve has one minimum.
    index, smoothed = first_local_minimum(noisy, neighbours=1)
    assert index == 3 and len(smoothed) == len(noisy)
    assert first_local_minimum([[3.0], [2.0], [1.0]], neighbours=0)[0] == 2  # monotone: the last size


def test_cache_entries_are_used_only_when_their_spec_matches(tmp_path):
    cache = TeacherCache(tmp_path / "cache")
    spec = {"data": {"source": "digits"}, "width": 3}
    cache.store("sweep", spec, "result.json", {"test_loss": [1.0]})
    assert cache.load("sweep", spec, "result.json") == {"test_loss": [1.0]}
    assert cache.load("sweep", {**spec, "width": 4}, "result.json") is None  # another key: not there
    folder = cache.folder("sweep", spec)
    (folder / "spec.json").write_text(json.dumps({"tampered": True}))
    with pytest.warns(UserWarning, match="unusable"):
        assert cache.load("sweep", spec, "result.json") is None
    cache.store("teacher", spec, "weights.pt", {"w": torch.ones(2)})
    (cache.folder("teacher", spec) / "weights.pt").write_bytes(b"not a tensor file")
    with pytest.warns(UserWarning, match="unusable"):
        assert cache.load("teacher", spec, "weights.pt") is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sizes": [1, 2]}, "at least three"),
        ({"sizes": [4, 2, 8]}, "increase"),
        ({"network": {"init_args": {}}}, "class_path"),
        ({"network": {"class_path": "QuadraticFC", "init_args": {"width": 3}}}, "must not set width"),
        (
            {"network": {"class_path": "QuadraticFC", "init_args": {"in_featurs": 64}}},
            "QuadraticFC takes no argument 'in_featurs'; did you mean 'in_features'",
        ),
        ({"network": {**FC_DIGITS, "num_output": 10}}, "got 'num_output' beside class_path.*'num_outputs'"),
        ({"lr": -1.0}, "teacher.init_args.lr"),
        ({"momentum": 1.0}, "momentum"),
        ({"seeds": 0}, "teacher.init_args.seeds"),
    ],
)
def test_bad_settings_are_refused_by_name_before_training(tmp_path, kwargs, match):
    options = {"network": FC_DIGITS, "sizes": [1, 2, 4], "cache_dir": str(tmp_path)}
    options.update(kwargs)
    with pytest.raises(ValueError, match=match):
        TeacherSearch(**options)


def test_a_cache_folder_that_cannot_be_written_is_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ValueError, match="teacher.init_args.cache_dir"):
        TeacherSearch(network=FC_DIGITS, sizes=[1, 2, 4], cache_dir=str(blocker / "cache"))


def test_a_set_size_needs_no_grid_while_a_sweep_needs_three_sizes(tmp_path):
    fixed = TeacherSearch(network=FC_DIGITS, sizes=[], size=9, cache_dir=str(tmp_path))
    assert fixed.size == 9 and fixed.sizes == []
    with pytest.raises(ValueError, match="teacher.init_args.sizes has 2 size.*set teacher.init_args.size"):
        TeacherSearch(network=FC_DIGITS, sizes=[1, 2], cache_dir=str(tmp_path))


def trained_widths(monkeypatch) -> list[int]:
    """The widths TeacherSearch trains from now on (it still trains them), in order."""
    widths = []
    original = TeacherSearch._train

    def counting(self, data_, classes, width, *args, **kwargs):
        widths.append(width)
        return original(self, data_, classes, width, *args, **kwargs)

    monkeypatch.setattr(TeacherSearch, "_train", counting)
    return widths


def search(tmp_path, **kwargs):
    options = dict(
        network=FC_DIGITS,
        sizes=[1, 2, 4],
        seeds=2,
        steps=20,
        batch_size=32,
        lr=0.01,
        cache_dir=str(tmp_path / "cache"),
        accelerator="cpu",
        updates_per_batch=4,
    )
    options.update(kwargs)
    return TeacherSearch(**options)


def test_the_search_labels_the_mixture_and_a_second_run_reuses_every_trained_teacher(tmp_path, monkeypatch):
    data = TeacherMixture(source="digits", train_size=300, test_size=100, alpha=0.5)
    first = search(tmp_path)
    teacher = first.run(data)
    assert first.chosen_size in (1, 2, 4) and len(first.sweep) == 3
    assert all(len(row["test_loss"]) == 2 and row["parameters"] > 0 for row in first.sweep)
    x, y = data.train_set()
    assert torch.equal(y[0], teacher(x[0]).argmax(-1))  # the teacher's labels
    trained = []
    monkeypatch.setattr(TeacherSearch, "_train", lambda self, *a, **k: trained.append(a) or pytest.fail("retrained"))
    again = TeacherMixture(source="digits", train_size=300, test_size=100, alpha=0.25)  # another alpha
    second = search(tmp_path)
    reused = second.run(again)
    assert not trained and second.chosen_size == first.chosen_size
    for a, b in zip(teacher.parameters(), reused.parameters(), strict=True):
        assert torch.equal(a, b)


def test_an_interrupted_sweep_resumes_from_the_sizes_already_trained(tmp_path, monkeypatch):
    data = TeacherMixture(source="digits", train_size=300, test_size=100)
    search(tmp_path).sweep_sizes(data.teacher_data(), data.labelled_data_key(), 10, [1, 2])
    widths = trained_widths(monkeypatch)
    search(tmp_path).run(data)
    assert widths == [4, 4]  # only the missing size of the sweep, then the chosen teacher (m = 4 here)


def test_the_sweep_curve_is_written_to_the_run_folder(tmp_path):
    pytest.importorskip("matplotlib")
    data = TeacherMixture(source="digits", train_size=300, test_size=100)
    logger = pl.loggers.TensorBoardLogger(tmp_path / "runs", name="t")
    trainer = pl.Trainer(logger=logger, accelerator="cpu", max_steps=1)
    found = search(tmp_path)
    found.run(data, trainer)
    folder = tmp_path / "runs" / "t" / "version_0"
    rows = (folder / "teacher_sweep.csv").read_text().splitlines()
    assert rows[0].startswith("size,parameters,mean_test_loss") and len(rows) == 4
    assert sum(int(r.split(",")[4]) for r in rows[1:]) == 1  # one chosen row
    assert (folder / "teacher_sweep.png").stat().st_size > 0
    summary = json.loads((folder / "teacher.json").read_text())
    assert summary["size"] == found.chosen_size and len(summary["injected_label_shares"]) == 10


def test_the_user_can_set_the_teachers_size_and_skip_the_sweep(tmp_path):
    data = TeacherMixture(source="digits", train_size=300, test_size=100)
    chosen = search(tmp_path, sizes=[], size=3)
    teacher = chosen.run(data)
    assert chosen.chosen_size == 3 and chosen.sweep == [] and teacher.width == 3 and data.is_labelled


def test_teacher_check_trains_students_on_the_injected_part_per_teacher_size(tmp_path, monkeypatch):
    from featlearn.cli import build_cli
    from featlearn.studies.teacher_check import teacher_check, teacher_check_command

    monkeypatch.setenv("FEATLEARN_CACHE", str(tmp_path / "cache"))
    config = tmp_path / "digits.yaml"
    config.write_text(
        "teacher:\n  class_path: TeacherSearch\n  init_args:\n"
        "    network: {class_path: featlearn.models.QuadraticFC, init_args: {in_features: 64, num_outputs: 10}}\n"
        "    sizes: [1, 2, 4]\n    seeds: 1\n    steps: 10\n    updates_per_batch: 5\n    accelerator: cpu\n"
        "data:\n  class_path: TeacherMixture\n  init_args: {source: digits, train_size: 200, test_size: 50}\n"
        "model:\n  class_path: MulticlassClassifier\n  init_args:\n"
        "    network: {class_path: QuadraticFC, init_args: {in_features: 64, width: 2, num_outputs: 10}}\n"
        "    num_classes: 10\n    lr: 0.01\n"
    )
    out = tmp_path / "check"
    results = teacher_check([config], out, teacher_sizes=[2, 5], student_sizes=[1, 2, 3], build=build_cli).rows
    assert [r["teacher_size"] for r in results] == [2, 5]
    assert all(r["student_minimum"] in (1, 2, 3) and len(r["curve"]) == 3 for r in results)
    # Three sizes, smoothed over one neighbour each side: every minimum's window reaches an end of the sweep.
    assert all(r["at_grid_start"] == (r["student_minimum"] <= 2) for r in results)
    assert all(r["at_grid_end"] == (r["student_minimum"] == 3) for r in results)
    rows = (out / "teacher_check.csv").read_text().splitlines()
    assert len(rows) == 1 + 6 and "| 2 |" in (out / "teacher_check.md").read_text()
    # "chosen": Algorithm 1's size, from the sweep over the config's sizes (1, 2, 4), listed first.
    cli = build_cli(["--config", str(config), "--trainer.logger", "false"], run=False)
    search, data = cli.config_init["teacher"], cli.datamodule
    sweep = search.sweep_sizes(data.teacher_data(), data.labelled_data_key(), data.num_classes, search.sizes)
    expected = sweep[first_local_minimum([row["test_loss"] for row in sweep], search.neighbours)[0]]["size"]
    argv = ["--config", str(config), "--teacher-sizes", f"{expected},chosen,5", "--student-sizes", "1,2,3"]
    chosen = teacher_check_command([*argv, "--out", str(out)], build_cli).rows  # the command line, the same check
    assert [(r["teacher_size"], r["chosen"]) for r in chosen] == [(expected, True), (5, False)]  # no duplicate
    assert "(Algorithm 1)" in (out / "teacher_check.md").read_text()
    with pytest.raises(ValueError, match="--teacher-sizes must be positive integers"):
        teacher_check_command(["--config", str(config), "--teacher-sizes", "x", "--out", str(out)], build_cli)
    with pytest.raises(ValueError, match="student_sizes needs at least three"):
        teacher_check([config], out, student_sizes=[1, 2])  # from Python: featlearn's own builder


def test_the_sweep_on_l_serves_every_injected_source(tmp_path, monkeypatch):
    search(tmp_path).run(TeacherMixture(source="digits", train_size=300, test_size=100))
    widths = trained_widths(monkeypatch)
    patches = TeacherMixture(source="digits", train_size=300, test_size=100, injected="natural_patches", patch_size=32)
    chosen = search(tmp_path)
    chosen.run(patches)
    assert widths == [chosen.chosen_size]  # no sweep point retrained; the teacher (R on other U) is new


def test_a_curve_that_falls_over_the_whole_grid_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(
        TeacherSearch,
        "sweep_sizes",
        lambda self, data, key, classes, sizes: [
            {"size": m, "parameters": 10 * m, "test_loss": [3.0 / m], "test_acc": [50.0]} for m in sizes
        ],
    )
    monkeypatch.setattr(TeacherSearch, "teacher", lambda self, data, key, classes, width: torch.nn.Linear(64, 10))
    data = TeacherMixture(source="digits", train_size=100, test_size=20)
    found = search(tmp_path)
    with pytest.warns(UserWarning, match="decreases over the whole grid"):
        found.run(data)
    assert found.chosen_size == 4
