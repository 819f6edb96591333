"""The Python examples of the README and the docs pages run as written; their verdict tables are the reports'."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, grouped

DOCS = REPO / "docs"
#: The pages written by hand: README.md and docs/ but for the generated reports in docs/reproduction/.
PAGES = [REPO / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "reproduction" not in p.relative_to(DOCS).parts)]


def python_blocks(page: Path = REPO / "README.md"):
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)


def bash_blocks(page: Path):
    return re.findall(r"```bash\n(.*?)```", page.read_text(), flags=re.S)


def test_python_api_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(python_blocks()[0], namespace)  # noqa: S102
    assert namespace["phases"].boundary_steps[0] is not None
    assert namespace["w"].shape == (1, 128, 32)


def test_the_docs_show_the_readme_python_example_unchanged():
    assert python_blocks()[0] in python_blocks(DOCS / "getting-started.md")
    assert python_blocks()[1] in python_blocks(DOCS / "studies.md")  # the study called from Python


@pytest.mark.slow
def test_the_readme_study_example_runs_and_its_table_is_the_files(tmp_path, monkeypatch):
    """The README's compare from Python (about a minute on 2 cores): a Comparison that is the table it wrote."""
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(python_blocks()[1], namespace)  # noqa: S102
    table = namespace["table"]
    assert list(table) == ["Network", "RF"] and len(table["RF"]["train_acc"]) == 2
    mean, _, seeds = table.summary("Network", "test_acc")
    rows = (tmp_path / "runs" / "parity_short" / "table.csv").read_text().splitlines()
    written = next(row.split(",") for row in rows if row.startswith("Network,test_acc,"))
    assert seeds == 2 and float(written[2]) == pytest.approx(mean, abs=1e-4)


def data_model_example():
    """docs/extending.md's data model (``my_data.py``)."""
    return next(block for block in python_blocks(DOCS / "extending.md") if block.startswith("# my_data.py"))


def observer_example():
    """docs/extending.md's observer (``my_observer.py``)."""
    return next(block for block in python_blocks(DOCS / "extending.md") if block.startswith("# my_observer.py"))


def test_data_model_example_is_a_working_subclass(tmp_path, fit):
    namespace = {}
    exec(data_model_example(), namespace)  # noqa: S102
    from featlearn.models import TwoLayerNet

    data = namespace["Majority"](dim=8, batch_size=64)
    model = TwoLayerNet(data.input_dim, **grouped(16, lr=0.5, seed=0))
    fit(model, data, 5)
    assert data.ground_truth().feature.shape == (8,)


def test_data_model_example_runs_through_the_console_script_from_its_folder(tmp_path):
    """docs/extending.md's recipe as a new user types it: my_data.py in a folder, `featlearn fit` run there."""
    (tmp_path / "my_data.py").write_text(data_model_example())
    command = next(block for block in bash_blocks(DOCS / "extending.md") if "my_data.Majority" in block)
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


def test_observer_example_logs_what_it_computes(fit):
    namespace = {}
    exec(observer_example(), namespace)  # noqa: S102
    from featlearn.datamodules import BooleanXOR
    from featlearn.models import TwoLayerNet

    observer = namespace["NeuronNorms"]()
    data = BooleanXOR(dim=8, batch_size=64)
    model = TwoLayerNet(data.input_dim, **grouped(16, lr=0.2, seed=0))
    fit(model, data, 4, callbacks=[observer])
    assert [entry["step"] for entry in observer.history] == [0, 1, 2, 3, 4]
    norms = model.first_layer_features().norm(dim=-1)  # (S, p)
    assert observer.results()["norms/mean_w"] == pytest.approx(norms.mean().item(), rel=1e-5)
    assert observer.results()["norms/max_w"] == pytest.approx(norms.max().item(), rel=1e-5)


def reproduce_blocks(page: Path) -> list[tuple[str, str]]:
    return re.findall(r"<!-- reproduce:([\w.-]+) -->\n(.*?)<!-- /reproduce -->", page.read_text(), flags=re.S)


def test_the_readme_reproduction_tables_are_the_committed_reports():
    """Each verdict table of a page is ``featlearn reproduce --summary`` of its committed report, not a hand copy.

    The tables live on the papers' pages (docs/shi2022.md, docs/glasgow2023.md), one each; the README keeps none.
    """
    from featlearn.studies.report_page import summary_table

    found = {page.relative_to(REPO).as_posix(): reproduce_blocks(page) for page in PAGES}
    blocks = [block for page_blocks in found.values() for block in page_blocks]
    names = [name for name, _ in blocks]
    assert sorted(names) == sorted(set(names)) and set(names) >= {"shi2022-cpu", "glasgow2023-cpu", "barak2022-cpu"}
    assert found["README.md"] == []
    for name, block in blocks:
        report = REPO / "docs" / "reproduction" / name
        assert block == summary_table(report), name
        content = json.loads((report / "results.json").read_text())
        counts = content["summary"]["counts"]
        if "claims" in content:  # the claims' counts head the block, the cells' close it
            only = content["summary"].get("only")  # a partial report names its items
            whose = f"A partial report (only {'; '.join(only)}): the" if only else "The paper's"
            if only and not sum(counts.values()):  # featlearn's diagnostics alone
                assert "it tests no claim of the paper's protocol.**" in block
            else:
                assert f"**{whose} {sum(counts.values())} claims: {counts['reproduced']} reproduced," in block
            counts = content["summary"]["cell_counts"]
        assert " | ".join(f"**{n}**" for n in counts.values()) in block


def test_the_readme_copies_no_appendix_e_table_by_hand():
    """Paper-beside-featlearn tables live in the committed report only, neither in the README nor in a docs page."""
    for page in PAGES:
        text = page.read_text()
        assert not re.search(r"^\| E\.\d.*\(Table \d\)", text, flags=re.M), page
        assert "paper train / test / cos" not in text, page
