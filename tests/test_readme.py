"""The README's Python examples run as written."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from .conftest import REPO, grouped


def python_blocks():
    return re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)


def test_python_api_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(python_blocks()[0], namespace)  # noqa: S102
    assert namespace["phases"].boundary_steps[0] is not None
    assert namespace["w"].shape == (1, 128, 32)


def test_data_model_example_is_a_working_subclass(tmp_path, fit):
    namespace = {}
    exec(python_blocks()[1], namespace)  # noqa: S102
    from featlearn.models import TwoLayerNet

    data = namespace["Majority"](dim=8, batch_size=64)
    model = TwoLayerNet(data.input_dim, **grouped(16, lr=0.5, seed=0))
    fit(model, data, 5)
    assert data.ground_truth().feature.shape == (8,)


def bash_blocks():
    return re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)


def test_data_model_example_runs_through_the_console_script_from_its_folder(tmp_path):
    """The README's recipe as a new user types it: my_data.py in a folder, `featlearn fit` run there."""
    (tmp_path / "my_data.py").write_text(python_blocks()[1])
    command = next(block for block in bash_blocks() if "my_data.Majority" in block)
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[0] == "featlearn"
    script = Path(sys.executable).parent / "featlearn"  # the installed console script, not python -m
    small = ["--trainer.max_steps", "4", "--model.init_args.network.width", "16", "--data.init_args.val_size", "0"]
    small += ["--trainer.logger.init_args.save_dir", str(tmp_path / "runs"), "--trainer.enable_progress_bar", "false"]
    env = {**os.environ, "PYTHONPATH": ""}  # nothing but the console script's own path finds my_data
    done = subprocess.run([str(script), *argv[1:], *small], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    pictures = sorted(p.name for p in (tmp_path / "runs").rglob("mds_step*.png"))
    assert pictures == ["mds_step0.png", "mds_step1.png", "mds_step2.png", "mds_step4.png"]
    # base.yaml's checkpointing stays (`callbacks+`): the run can be resumed.
    assert [p.parent.parent.name for p in (tmp_path / "runs").rglob("checkpoints/last.ckpt")] == ["version_0"]


def test_the_readme_reproduction_tables_are_the_committed_reports():
    """Each README verdict table is ``featlearn reproduce --summary`` of its committed report, not a hand copy."""
    from featlearn.studies.reproduce import summary_table

    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"<!-- reproduce:([\w.-]+) -->\n(.*?)<!-- /reproduce -->", text, flags=re.S)
    assert {name for name, _ in blocks} >= {"shi2022-cpu", "glasgow2023-cpu"}
    for name, block in blocks:
        report = REPO / "docs" / "reproduction" / name
        assert block == summary_table(report), name
        counts = json.loads((report / "results.json").read_text())["summary"]["counts"]
        said = [counts.get(verdict, 0) for verdict in ("reproduced", "differs", "uninformative", "not run")]
        assert " | ".join(f"**{n}**" for n in said) in block


def test_the_readme_copies_no_appendix_e_table_by_hand():
    """Paper-beside-featlearn tables live in the committed report only."""
    text = (REPO / "README.md").read_text()
    assert not re.search(r"^\| E\.\d.*\(Table \d\)", text, flags=re.M)
    assert "paper train / test / cos" not in text
