import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from featlearn.cli import build_cli

from ...conftest import CONFIGS  # noqa: TID252
from ...datamodules.image_files import trust_written_files, write_cifar10, write_mnist, write_svhn  # noqa: TID252
from ...fingerprints import check_fingerprint  # noqa: TID252

EXPERIMENTS = sorted((CONFIGS / "experiments").glob("*.yaml"))
OVERLAYS = sorted((CONFIGS / "experiments" / "shi").glob("*.yaml")) + sorted(
    (CONFIGS / "experiments" / "barak").glob("*.yaml")
)


def overlay_base(overlay):
    """The experiment an overlay is written for: Table 6's rows shi_gmm, Barak's barak_parity, the rest shi_parity."""
    if overlay.parent.name == "barak":
        return "barak_parity"
    return "shi_gmm" if overlay.stem.startswith("gmm") else "shi_parity"


SMOKE = str(CONFIGS / "debug" / "smoke.yaml")
GLASGOW = str(CONFIGS / "experiments" / "glasgow_xor.yaml")
# The Glasgow experiment shrunk to a 3-step run on a tiny network.
TINY_GLASGOW = (
    *("--config", GLASGOW, "--config", SMOKE),
    *("--data.init_args.dim", "8", "--data.init_args.batch_size", "16", "--model.init_args.network.width", "4"),
)


def run_cli(tmp_path, *args):
    """featlearn fit ... in-process, logging under tmp_path."""
    return build_cli(
        [
            "fit",
            *args,
            "--trainer.default_root_dir",
            str(tmp_path),
            "--trainer.logger.init_args.save_dir",
            str(tmp_path / "runs"),
        ]
    )


def test_console_script_help():
    out = subprocess.run(
        [sys.executable, "-m", "featlearn", "fit", "--help"], capture_output=True, text=True, check=True
    )
    assert "--data CONFIG | CLASS_PATH_OR_NAME" in out.stdout.replace("  ", " ") or "--data" in out.stdout
    assert "--test_after_fit" in out.stdout


#: Experiments on files no package ships: they run here on tiny files in the real format.
PLACED_FILES = {"shi_real_cifar_resnet": write_cifar10, "shi_teacher_cifar10_gaussian": write_cifar10}
SMOKE_TEACHER = str(CONFIGS / "debug" / "smoke_teacher.yaml")


@pytest.mark.parametrize("experiment", EXPERIMENTS, ids=lambda p: p.stem)
def test_every_experiment_config_runs(tmp_path, monkeypatch, experiment):
    placed = []
    if experiment.stem in PLACED_FILES:
        PLACED_FILES[experiment.stem](tmp_path / "data")
        trust_written_files(monkeypatch, tmp_path / "data")
        placed = ["--data.init_args.root", str(tmp_path / "data")]
    if "teacher:" in experiment.read_text():  # a 3-size sweep of 3-step teachers, cached in tmp_path
        placed += ["--config", SMOKE_TEACHER]
        monkeypatch.setenv("FEATLEARN_CACHE", str(tmp_path / "cache"))
    cli = run_cli(tmp_path, "--config", str(experiment), "--config", SMOKE, *placed)
    assert cli.trainer.global_step == 3
    assert "test/loss" in cli.trainer.callback_metrics and "test/error" in cli.trainer.callback_metrics
    check_fingerprint(experiment.stem, cli)


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda p: p.stem)
def test_every_overlay_runs_on_its_experiment_by_shipped_name(tmp_path, overlay):
    name = f"{overlay.parent.name}/{overlay.stem}"
    cli = run_cli(tmp_path, "--config", overlay_base(overlay), "--config", name, "--config", "debug/smoke")
    assert cli.trainer.global_step == 3 and "test/error" in cli.trainer.callback_metrics
    check_fingerprint(f"{overlay_base(overlay)}+{name}", cli)
    written = yaml.safe_load(overlay.read_text())
    for key, value in written.get("data", {}).get("init_args", {}).items():
        assert getattr(cli.datamodule, key) == value  # the overlay's values reached the data model


@pytest.mark.parametrize("lazy", ["false", "true"])
def test_the_fc_model_overlay_and_its_lazy_version_run_on_mnist01(tmp_path, lazy):
    args = ("--config", "shi_real_mnist01", "--config", "model/fc", "--config", "debug/smoke")
    cli = run_cli(tmp_path, *args, "--model.init_args.linearize", lazy)
    assert type(cli.model).__name__ == "ModuleClassifier" and cli.model.linearize == (lazy == "true")
    assert cli.trainer.global_step == 3 and "test/error" in cli.trainer.callback_metrics


def shi_constants(data):
    """Shi et al.'s process constants recomputed here from the paper's formulas (Section 3.1, Lemma 23)."""
    k, sigma, gamma = data.k, data.sigma_tilde, data.gamma
    return {"sigma_w": 1 / k, "sigma_b": 1 / k**2, "sigma_xi": k**-1.5, "sigma_a": sigma**2 / (gamma * k**2)}


@pytest.mark.parametrize("k", [5, 7])
def test_shi_constants_follow_the_data_model(k):
    """--data.init_args.k 7 trains with k = 7's constants, not E.1.1's."""
    cli = build_cli(["--config", "shi_parity", "--data.init_args.k", str(k), "--trainer.logger", "false"], run=False)
    expected = shi_constants(cli.datamodule)
    init = cli.model.hparams["init"]
    for name in ("sigma_w", "sigma_b", "sigma_a"):
        assert init[name] == pytest.approx(expected[name], rel=1e-12)
    assert cli.model.noise_std(1) == cli.model.noise_std(2) == pytest.approx(expected["sigma_xi"], rel=1e-12)
    assert cli.model.noise_std(3) == 0.0
    if k == 5:  # E.1.1: sigma~ = 5 and gamma = 1/4 exactly, so sigma_a = 25 / (0.25 * 25) = 4
        assert init["sigma_a"] == pytest.approx(4.0, rel=1e-12)


SHI_RUNS = [
    ("shi_parity",),
    ("shi_interval",),
    ("shi_hidden_representation",),
    *[("shi_parity", f"shi/{o.stem}") for o in OVERLAYS if o.parent.name == "shi" and not o.stem.startswith("gmm")],
    ("shi_interval", "shi/nostructure"),
]


@pytest.mark.parametrize("configs", SHI_RUNS, ids="+".join)
def test_every_shi_run_states_the_papers_constants(configs):
    """Every constant the configs derive or state follows its formula, for every experiment and overlay."""
    args = [a for c in configs for a in ("--config", c)]
    cli = build_cli([*args, "--trainer.logger", "false"], run=False)
    model = cli.model
    # Without structure the process keeps the structured data's constants.
    structured_args = [a for c in configs if c != "shi/nostructure" for a in ("--config", c)]
    structured = build_cli([*structured_args, "--trainer.logger", "false"], run=False).datamodule
    assert getattr(structured, "structure", True)
    expected = shi_constants(structured)
    if expected["sigma_a"] <= 0 or structured.gamma <= 1e-3:  # random codes: E.1.1's gamma = 1/4 stands in
        expected["sigma_a"] = structured.sigma_tilde**2 / (0.25 * structured.k**2)
    init = model.hparams["init"]
    for name in ("sigma_w", "sigma_b", "sigma_a"):
        assert init[name] == pytest.approx(expected[name], rel=1e-12), name
    assert model.noise_std(1) == pytest.approx(expected["sigma_xi"], rel=1e-12)
    # The classifier stage's rate: 1000 x 600 / width (see shi_parity.yaml).
    assert model.scheduled_values(3)["lr_a"] == pytest.approx(1000.0 * 600 / model.width)


@pytest.mark.parametrize("overlay", [None, "shi/gmm_2", "shi/gmm_3"])
def test_gaussian_mixture_runs_state_their_initialisation(overlay):
    """Table 6 rows: sigma_w = 1/sqrt(d), sigma_a = 1/sqrt(width) (our stated choice)."""
    args = ["--config", "shi_gmm"] + (["--config", overlay] if overlay else [])
    cli = build_cli([*args, "--trainer.logger", "false"], run=False)
    init = cli.model.hparams["init"]
    assert init["sigma_w"] == pytest.approx(cli.datamodule.d**-0.5, rel=1e-12)
    assert init["sigma_a"] == pytest.approx(cli.model.width**-0.5, rel=1e-12)


def test_a_stated_constant_wins_over_the_derived_one():
    cli = build_cli(
        ["--config", "shi_parity", "--data.init_args.k", "7", "--model.init_args.init.sigma_w", "0.5"], run=False
    )
    assert cli.model.hparams["init"]["sigma_w"] == 0.5 and cli.model.hparams["init"]["sigma_b"] == pytest.approx(1 / 49)


def test_null_constant_without_a_provider_is_refused(tmp_path):
    overlay = tmp_path / "gaussian.yaml"
    overlay.write_text(
        "model:\n  init_args:\n    init: {scheme: gaussian_symmetric, sigma_w: null, sigma_b: 0.1, sigma_a: 0.1}\n"
    )
    with pytest.raises(ValueError, match="model.init_args.init.sigma_w is null.*BooleanXOR states no sigma_w"):
        build_cli(["--config", GLASGOW, "--config", str(overlay)], run=False)


def test_a_noise_segment_without_a_value_is_refused_not_derived():
    with pytest.raises(ValueError, match=r"model.training.noise_std\[0\] has no `value`"):
        build_cli(
            [
                "--config",
                "shi_parity",
                "--model.init_args.training.noise_std",
                "[{start: 1, end: 2}, {start: 3, value: 0}]",
            ],
            run=False,
        )


def test_an_ensemble_needs_a_data_model_that_takes_the_ensemble_size(tmp_path, monkeypatch):
    (tmp_path / "plain_data.py").write_text(
        "import torch\nfrom featlearn.datamodules import SyntheticDataModule\n\n"
        "class Plain(SyntheticDataModule):  # hides the base's arguments: no **kwargs\n"
        "    def __init__(self, dim: int = 4):\n        super().__init__(batch_size=8)\n        self.dim = dim\n\n"
        "    @property\n    def input_dim(self):\n        return self.dim\n\n"
        "    def sample(self, n, generator, device):\n"
        "        return torch.zeros(n, self.dim, device=device), torch.ones(n, device=device)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="plain_data.Plain takes no ensemble_size"):
        build_cli(
            ["--config", GLASGOW, "--data", "plain_data.Plain", "--model.init_args.ensemble_size", "2"], run=False
        )


def test_the_ensemble_size_is_stated_once_for_model_and_data(tmp_path):
    cli = run_cli(tmp_path, *TINY_GLASGOW, "--model.init_args.ensemble_size", "3")
    assert cli.datamodule.ensemble_size == cli.model.ensemble_size == 3
    saved = yaml.safe_load(next((tmp_path / "runs").glob("*/version_0/config.yaml")).read_text())
    assert saved["data"]["init_args"]["ensemble_size"] == 3


def test_unknown_shipped_name_lists_the_experiments(tmp_path):
    with pytest.raises(FileNotFoundError, match="glasgow_xor.*shi_parity"):
        build_cli(["fit", "--config", "no_such_experiment"])


def test_glasgow_config_builds_glasgows_model(tmp_path):
    cli = build_cli(["--config", str(CONFIGS / "experiments" / "glasgow_xor.yaml")], run=False)
    model, data = cli.model, cli.datamodule
    assert type(model).__name__ == "TwoLayerNet" and type(data).__name__ == "BooleanXOR"
    assert model.net.input_dim == data.input_dim == 512  # linked, stated once
    assert model.first_layer_features().norm(dim=-1).mean().item() == pytest.approx(0.16, rel=1e-5)
    assert data.batch_size(1) >= data.input_dim / 0.16  # m >= d / theta
    assert model.net.width >= 1 / 0.16 and model.scheduled_values(1)["lr_w"] == 0.16


def test_versioned_logs_config_and_metrics(tmp_path):
    for _ in range(2):
        run_cli(tmp_path, *TINY_GLASGOW)
    versions = sorted(p.name for p in (tmp_path / "runs").glob("*/version_*"))
    assert versions == ["version_0", "version_1"]
    run_dir = next((tmp_path / "runs").glob("*/version_1"))
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["seed_everything"] == 0 and saved["data"]["init_args"]["dim"] == 8
    assert saved["data"]["init_args"]["batch_size"] == 16 and isinstance(saved["data"]["init_args"]["batch_size"], int)
    # The linked input_dim is derived at instantiation; the model's hparams record it.
    assert yaml.safe_load((run_dir / "hparams.yaml").read_text())["input_dim"] == 8
    assert list(run_dir.glob("events.out.tfevents.*"))
    # TensorBoard opens on what matters: no placeholder hp_metric, no "epoch" of a step-based run.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir))
    events.Reload()
    scalars = events.Tags()["scalars"]
    assert "hp_metric" not in scalars and "epoch" not in scalars
    assert events.Scalars("test/error")[-1].step == 3  # the test set, at the final update step


def test_a_resume_continues_in_the_run_folder_of_its_checkpoint(tmp_path):
    """--ckpt_path last and an explicit checkpoint of this experiment both go on in version_0."""
    steps = (
        "--trainer.enable_checkpointing",
        "true",
        "--trainer.callbacks",
        "[{class_path: StepCheckpoint, init_args: {save_last: true, every_n_train_steps: 2}}]",
    )
    run_cli(tmp_path, *TINY_GLASGOW, *steps, "--trainer.max_steps", "2")
    last = tmp_path / "runs" / "glasgow_xor" / "version_0" / "checkpoints" / "last.ckpt"
    cli = run_cli(tmp_path, *TINY_GLASGOW, *steps, "--trainer.max_steps", "4", "--ckpt_path", str(last))
    assert cli.trainer.global_step == 4
    # The run finished its 4 steps: `last` does not extend it silently; its checkpoint's path does.
    with pytest.raises(ValueError, match="finished all its 4 update steps.*To extend it to 6 steps"):
        run_cli(tmp_path, *TINY_GLASGOW, *steps, "--trainer.max_steps", "6", "--ckpt_path", "last")
    cli = run_cli(tmp_path, *TINY_GLASGOW, *steps, "--trainer.max_steps", "6", "--ckpt_path", str(last))
    assert cli.trainer.global_step == 6
    assert sorted(p.name for p in (tmp_path / "runs" / "glasgow_xor").glob("version_*")) == ["version_0"]


def test_the_progress_bar_counts_update_steps_of_max_steps(tmp_path, capsys):
    steps = (
        "--trainer.enable_checkpointing",
        "true",
        "--trainer.callbacks",
        "[{class_path: StepCheckpoint, init_args: {save_last: true}}]",
    )
    bar = ("--trainer.enable_progress_bar", "true")
    run_cli(tmp_path, *TINY_GLASGOW, *steps, *bar, "--trainer.max_steps", "4")
    first = capsys.readouterr().out  # Lightning's tqdm bars write to stdout
    assert "update steps" in first and "4/4" in first and "v_num" not in first and "/-2" not in first
    last = tmp_path / "runs" / "glasgow_xor" / "version_0" / "checkpoints" / "last.ckpt"
    run_cli(tmp_path, *TINY_GLASGOW, *steps, *bar, "--trainer.max_steps", "6", "--ckpt_path", str(last))
    resumed = capsys.readouterr().out
    assert "4/6" in resumed and "6/6" in resumed and "/4 " not in resumed
    # From a checkpoint in the middle of Lightning's epoch (every interrupted run's), which skips its epoch start.
    keep = "[{class_path: StepCheckpoint, init_args: {every_n_train_steps: 2, save_top_k: -1, save_last: true}}]"
    run_cli(
        tmp_path / "b",
        *TINY_GLASGOW,
        "--trainer.enable_checkpointing",
        "true",
        "--trainer.callbacks",
        keep,
        "--trainer.max_steps",
        "4",
    )
    middle = next((tmp_path / "b" / "runs").rglob("*step=2.ckpt"))
    capsys.readouterr()
    run_cli(tmp_path / "b", *TINY_GLASGOW, *bar, "--trainer.max_steps", "6", "--ckpt_path", str(middle))
    assert "update steps" in (out := capsys.readouterr().out) and "2/6" in out and "6/6" in out and "Epoch" not in out


@pytest.mark.parametrize(
    ("study", "hint"), [(None, "resume it from update step 2"), ("compare", "the same featlearn compare")]
)
def test_ctrl_c_says_how_to_go_on_in_a_fit_and_in_a_study(tmp_path, capsys, study, hint):
    ctrl_c = "[{class_path: tests.featlearn.cli.test_resume_every_experiment.CtrlCAfterStep, init_args: {step: 2}}]"
    args = [
        *TINY_GLASGOW,
        "--trainer.max_steps",
        "4",
        "--trainer.callbacks",
        ctrl_c,
        "--trainer.enable_checkpointing",
        "true",
    ]
    args += ["--trainer.logger.init_args.save_dir", str(tmp_path / "runs")]
    try:
        with pytest.raises(SystemExit) as stopped:
            build_cli(["fit", *args], study=study)
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # Lightning ignores SIGINT after its stop
    assert stopped.value.code == 1  # Lightning's; the featlearn command turns it into 130
    out = capsys.readouterr().out
    assert "featlearn fit: interrupted at update step 2." in out and hint in out
    assert ("--ckpt_path last" in out) == (study is None)


def test_same_config_same_weights(tmp_path):
    args = TINY_GLASGOW
    a = run_cli(tmp_path / "a", *args).model.first_layer_features()
    b = run_cli(tmp_path / "b", *args).model.first_layer_features()
    c = run_cli(tmp_path / "c", *args, "--seed_everything", "1").model.first_layer_features()
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_print_config_shows_resolved_classes(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_cli(["fit", "--config", GLASGOW, "--print_config"])
    assert exit_info.value.code in (0, None)
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["data"]["class_path"] == "featlearn.datamodules.BooleanXOR"
    assert printed["model"]["class_path"] == "featlearn.models.TwoLayerNet"
    assert printed["data"]["init_args"]["test_size"] == 16384  # base-class arguments are visible


def test_user_data_model_outside_the_package_by_class_path(tmp_path, monkeypatch):
    (tmp_path / "my_data.py").write_text(
        textwrap.dedent('''
        import torch
        from featlearn.datamodules import SyntheticDataModule

        class Majority(SyntheticDataModule):
            """x uniform on {-1,1}^d, y = sign(x_1 + x_2 + x_3)."""

            def __init__(self, dim: int = 5, **kwargs):
                super().__init__(**kwargs)
                self.dim = dim

            @property
            def input_dim(self):
                return self.dim

            def sample(self, n, generator, device):
                x = torch.randint(0, 2, (n, self.dim), generator=generator, device=device).float() * 2 - 1
                return x, torch.sign(x[:, :3].sum(1))
    ''')
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    cli = run_cli(
        tmp_path,
        "--config",
        SMOKE,
        "--data",
        "my_data.Majority",
        "--data.init_args.dim",
        "6",
        "--data.init_args.batch_size",
        "32",
        "--model",
        "TwoLayerNet",
        "--model.init_args.network.width",
        "8",
        "--model.init_args.training.lr",
        "0.5",
    )
    assert type(cli.datamodule).__name__ == "Majority" and cli.model.net.input_dim == 6


@pytest.mark.parametrize(
    "override,match",
    [
        (["--data.init_args.dim", "1"], "data.dim"),
        (["--data.init_args.pair", "[0, 600]"], "data.pair"),
        (["--model.init_args.network.width", "0"], "model.network.width"),
        (["--model.init_args.training.lr", "-0.5"], "model.training.lr"),
        (["--model.init_args.network.activation", "tanh"], "model.network.activation"),
        (["--model.init_args.ensemble_size", "2", "--data.init_args.ensemble_size", "3"], "ensemble size"),
        (["--data.init_args.updates_per_batch", "0"], "data.updates_per_batch"),
        (
            ["--model.init_args.training.lr", "[{start: 1, end: 2, value: 0.1}, {start: 4, value: 0.1}]"],
            "gap before step 3",
        ),
    ],
)
def test_bad_configs_fail_before_training_naming_the_parameter(tmp_path, override, match):
    with pytest.raises((ValueError, SystemExit)) as err:
        run_cli(tmp_path, "--config", GLASGOW, "--config", SMOKE, *override)
    text = str(err.value)
    if isinstance(err.value, SystemExit):
        pytest.fail(f"expected a ValueError naming {match!r}, the parser exited instead")
    assert match in text
    assert not list(tmp_path.glob("runs/*/version_*/checkpoints/*"))


def test_logger_free_run_leaves_the_working_directory_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text("mine: true\n")
    build_cli(["fit", *TINY_GLASGOW, "--trainer.logger", "false", "--trainer.default_root_dir", str(tmp_path)])
    assert (tmp_path / "config.yaml").read_text() == "mine: true\n"


REAL_OVERLAYS = sorted((CONFIGS / "experiments" / "shi_real").glob("*.yaml"))


@pytest.mark.parametrize("overlay", REAL_OVERLAYS, ids=lambda p: p.stem)
def test_every_real_data_overlay_runs_on_files_in_the_real_format(tmp_path, monkeypatch, overlay):
    """shi_real_mnist01 + shi_real/<source> on tiny files written as the real datasets are laid out."""
    root = tmp_path / "data"
    if overlay.stem == "mnist":
        write_mnist(root / "MNIST" / "raw")
    elif overlay.stem == "fashion_mnist":  # Debian's layout: the gzipped IDX files in one folder
        write_mnist(root, compress=True)
        monkeypatch.setenv("FEATLEARN_CACHE", str(tmp_path / "cache"))
    elif overlay.stem == "cifar10":
        write_cifar10(root)
    else:
        write_svhn(root)
    trust_written_files(monkeypatch, root)
    cli = run_cli(
        tmp_path,
        "--config",
        "shi_real_mnist01",
        "--config",
        f"shi_real/{overlay.stem}",
        "--config",
        "debug/smoke",
        "--data.init_args.root",
        str(root),
    )
    assert cli.trainer.global_step == 3 and "test/error" in cli.trainer.callback_metrics
    check_fingerprint(f"shi_real_mnist01+shi_real/{overlay.stem}", cli)
    assert cli.datamodule.source == overlay.stem and cli.model.two_layer.input_dim == cli.datamodule.input_dim


TEACHER_OVERLAYS = sorted((CONFIGS / "experiments" / "shi_teacher").glob("*.yaml"))
RESNET_TEACHER_OVERLAYS = {"svhn", "image_folder"}


def write_image_folder(root, n=4):
    from PIL import Image

    rng = np.random.default_rng(0)
    for cls in ("n01", "n02"):
        (root / cls).mkdir(parents=True)
        for i in range(n):
            Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(root / cls / f"{i}.JPEG")


@pytest.mark.parametrize("overlay", TEACHER_OVERLAYS, ids=lambda p: p.stem)
def test_every_teacher_overlay_runs_on_files_in_the_real_format(tmp_path, monkeypatch, overlay):
    """Each shi_teacher/ overlay on its experiment, with tiny placed files where it reads any."""
    monkeypatch.setenv("FEATLEARN_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "data"
    resnet = overlay.stem in RESNET_TEACHER_OVERLAYS
    extra = []
    if resnet:
        (write_svhn if overlay.stem == "svhn" else write_cifar10)(root)
        extra = ["--data.init_args.root", str(root)]
        if overlay.stem == "image_folder":
            write_image_folder(tmp_path / "folder")
            extra += ["--data.init_args.injected_root", str(tmp_path / "folder")]
    elif overlay.stem == "mnist":
        write_mnist(root / "MNIST" / "raw", n_train=60, n_test=20)
        extra = ["--data.init_args.root", str(root)]
    elif overlay.stem == "fashion_mnist":  # Debian's layout, shrunk to what the tiny files hold
        write_mnist(root, compress=True, n_train=60, n_test=20)
        extra = [*("--data.init_args.root", str(root)), *("--data.init_args.train_size", "40")]
        extra += ["--data.init_args.test_size", "20"]
    trust_written_files(monkeypatch, root)
    base = "shi_teacher_cifar10_gaussian" if resnet else "shi_teacher_mnist5k_gaussian"
    cli = run_cli(
        tmp_path,
        *("--config", base, "--config", f"shi_teacher/{overlay.stem}"),
        *("--config", "debug/smoke", "--config", "debug/smoke_teacher", *extra),
    )
    assert cli.trainer.global_step == 3 and "test/error" in cli.trainer.callback_metrics
    assert cli.datamodule.is_labelled
    check_fingerprint(f"{base}+shi_teacher/{overlay.stem}", cli)
    written = yaml.safe_load(overlay.read_text())
    for key, value in written.get("data", {}).get("init_args", {}).items():
        if key not in ("root", "injected_root", "train_size", "test_size"):
            assert getattr(cli.datamodule, key) == value  # the overlay's values reached the data model


def test_the_teacher_experiment_logs_the_parts_on_one_chart_and_reuses_its_teacher(tmp_path, monkeypatch):
    """The offline teacher experiment with its callbacks: part curves, the sweep picture, a cached re-run."""
    monkeypatch.setenv("FEATLEARN_CACHE", str(tmp_path / "cache"))
    args = ("--config", "shi_teacher_mnist5k_gaussian", "--config", "debug/smoke_teacher", "--trainer.max_steps", "3")
    cli = run_cli(tmp_path, *args)
    parts = next(c for c in cli.trainer.callbacks if type(c).__name__ == "PartAccuracy")
    last = parts.history[-1]
    assert last["step"] == 3 and {"parts/original", "parts/injected", "parts/mixture", "parts/reference"} <= set(last)
    for tag in ("parts/original", "parts/injected", "parts/reference"):
        assert 0 <= last[tag] <= 100
    folder = Path(cli.trainer.log_dir)
    assert (folder / "teacher_sweep.csv").exists() and (folder / "teacher.json").exists()
    first_teacher = json.loads((folder / "teacher.json").read_text())
    # The second run (another alpha) finds every teacher in the cache.
    monkeypatch.setattr("featlearn.teacher.search.TeacherSearch._train", lambda *a, **k: pytest.fail("retrained"))
    again = run_cli(tmp_path, *args, "--data.init_args.alpha", "0.25")
    assert json.loads((Path(again.trainer.log_dir) / "teacher.json").read_text())["size"] == first_teacher["size"]
    assert again.datamodule.part_sizes("train") == (3000, 1000)


def test_a_teacher_mixture_without_a_teacher_and_a_teacher_without_a_mixture_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("FEATLEARN_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="no `teacher:` section"):
        run_cli(tmp_path, "--config", "shi_teacher_mnist5k_gaussian", "--config", "debug/smoke", "--teacher", "null")
    with pytest.raises(ValueError, match="labels a TeacherMixture"):
        run_cli(
            tmp_path,
            *TINY_GLASGOW,
            "--teacher",
            "TeacherSearch",
            "--teacher.init_args.network",
            '{"class_path": "featlearn.models.QuadraticFC"}',
        )


def test_class_weights_take_the_data_models_class_prior(tmp_path):
    cli = build_cli(
        [
            "--config",
            "shi_parity",
            "--config",
            "shi/ratio08",
            "--config",
            "debug/smoke",
            "--data.init_args.d",
            "20",
            "--data.init_args.D",
            "10",
            "--data.init_args.train_size",
            "200",
            "--data.init_args.test_size",
            "100",
            "--data.init_args.batch_size",
            "50",
            "--trainer.logger",
            "false",
        ],
        run=False,
    )
    assert cli.model.positive_rate == pytest.approx(0.2)
    assert cli.model.class_weighting(1) == 1.0 and cli.model.class_weighting(3) == 0.0
