"""The README's Python examples run as written."""

import re

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
    assert data.ground_truth()["direction"].shape == (8,)
