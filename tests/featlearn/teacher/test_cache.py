"""TeacherCache: entries keyed by their full spec, read back exactly, and never used when they do not match."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import pytest
import torch

import featlearn.teacher.cache as cache_module
from featlearn.teacher.cache import CACHE_VERSION, TeacherCache, default_cache_dir

SPEC = {"data": {"source": "digits", "classes": [0, 1]}, "width": 3, "seeds": [0, 1], "lr": 0.05}


@pytest.fixture
def cache(tmp_path):
    return TeacherCache(tmp_path / "cache")


def load_quietly(cache, kind, spec, payload):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a usable entry or a plain miss warns nothing
        return cache.load(kind, spec, payload)


def test_the_key_is_a_digest_of_the_spec_and_the_cache_version_whatever_the_key_order(cache):
    folder = cache.folder("teacher", SPEC)
    text = json.dumps({**SPEC, "cache_version": CACHE_VERSION}, sort_keys=True)
    assert folder == cache.root / "teacher" / hashlib.sha256(text.encode()).hexdigest()[:20]
    reordered = {"lr": 0.05, "seeds": [0, 1], "width": 3, "data": {"classes": [0, 1], "source": "digits"}}
    assert cache.folder("teacher", reordered) == folder
    assert cache.folder("sweep", SPEC).name == folder.name and cache.folder("sweep", SPEC) != folder  # kind: a folder
    for changed in ({**SPEC, "width": 4}, {**SPEC, "seeds": [1, 0]}, {**SPEC, "extra": None}, {**SPEC, "lr": "0.05"}):
        assert cache.folder("teacher", changed) != folder, changed


def test_a_new_cache_version_misses_every_old_entry(cache, monkeypatch):
    old = cache.store("sweep", SPEC, "result.json", {"loss": 1.0})
    monkeypatch.setattr(cache_module, "CACHE_VERSION", CACHE_VERSION + 1)
    assert cache.folder("sweep", SPEC) != old
    assert load_quietly(cache, "sweep", SPEC, "result.json") is None


def test_stored_entries_read_back_exactly(cache):
    generator = torch.Generator().manual_seed(0)
    state = {"w": torch.randn(4, 3, generator=generator, dtype=torch.float64), "a": torch.arange(5)}
    folder = cache.store("teacher", SPEC, "weights.pt", state)
    assert sorted(p.name for p in folder.iterdir()) == ["spec.json", "weights.pt"]
    assert json.loads((folder / "spec.json").read_text()) == {**SPEC, "cache_version": CACHE_VERSION}
    loaded = load_quietly(cache, "teacher", SPEC, "weights.pt")
    assert loaded.keys() == state.keys()
    for key in state:
        assert torch.equal(loaded[key], state[key]) and loaded[key].dtype == state[key].dtype
    result = {"test_loss": [[0.5, 0.25], [0.125, 1e-300]], "sizes": [1, 2]}
    cache.store("sweep", SPEC, "result.json", result)
    assert load_quietly(cache, "sweep", SPEC, "result.json") == result


def test_a_missing_entry_is_a_quiet_miss_and_nothing_is_left_of_the_staging_folder(cache):
    assert load_quietly(cache, "teacher", SPEC, "weights.pt") is None
    cache.store("sweep", SPEC, "result.json", {"x": 1})
    assert [p.name for p in (cache.root / "sweep").iterdir()] == [cache.folder("sweep", SPEC).name]  # no .tmp-*


def test_specs_with_values_json_does_not_know_are_stored_as_their_text_and_still_match(cache):
    spec = {"root": Path("/data/digits"), "sizes": (1, 2, 4), "dtype": torch.float32}
    cache.store("sweep", spec, "result.json", {"x": 1})
    assert load_quietly(cache, "sweep", spec, "result.json") == {"x": 1}
    stored = json.loads((cache.folder("sweep", spec) / "spec.json").read_text())
    assert stored == {
        "root": "/data/digits",
        "sizes": [1, 2, 4],
        "dtype": "torch.float32",
        "cache_version": CACHE_VERSION,
    }


@pytest.mark.parametrize(
    "damage",
    ["spec of another run", "spec missing", "spec not json", "payload missing", "payload corrupt", "json corrupt"],
)
def test_an_unusable_entry_is_reported_and_retrained_never_used(cache, damage):
    payload = "result.json" if damage == "json corrupt" else "weights.pt"
    kind = "sweep" if payload == "result.json" else "teacher"
    value = {"x": [1, 2]} if payload == "result.json" else {"w": torch.ones(2)}
    folder = cache.store(kind, SPEC, payload, value)
    if damage == "spec of another run":  # e.g. a digest collision, or an entry copied by hand
        (folder / "spec.json").write_text(json.dumps({**SPEC, "width": 99, "cache_version": CACHE_VERSION}))
    elif damage == "spec missing":
        (folder / "spec.json").unlink()
    elif damage == "spec not json":
        (folder / "spec.json").write_text("{")
    elif damage == "payload missing":
        (folder / payload).unlink()
    else:
        (folder / payload).write_bytes(b"\x00 truncated")
    with pytest.warns(UserWarning, match=rf"(?s)Teacher cache entry {folder} is unusable \(.+\): retraining it\."):
        assert cache.load(kind, SPEC, payload) is None
    cache.store(kind, SPEC, payload, value)  # the retrained entry replaces the damaged one
    again = load_quietly(cache, kind, SPEC, payload)
    assert again == value if payload == "result.json" else torch.equal(again["w"], value["w"])


class Payload:
    """An object a pickle would rebuild by importing code."""


def test_a_weights_file_that_would_run_code_is_refused(cache):
    folder = cache.store("teacher", SPEC, "weights.pt", {"w": torch.ones(1)})
    torch.save({"w": Payload()}, folder / "weights.pt")  # not plain tensors: weights_only refuses it
    with pytest.warns(UserWarning, match="unusable"):
        assert cache.load("teacher", SPEC, "weights.pt") is None


def test_the_cache_folder_is_created_and_must_be_writable(tmp_path, monkeypatch):
    TeacherCache(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir() and list((tmp_path / "a" / "b").iterdir()) == []  # probe file removed
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert TeacherCache(Path("~/c")).root == tmp_path / "home" / "c"
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match=r"^teacher\.init_args\.cache_dir '.*file/cache' cannot be written \(.*set"):
        TeacherCache(tmp_path / "file" / "cache")


def test_the_default_folder_follows_featlearn_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FEATLEARN_CACHE", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine" / "teachers"
    monkeypatch.delenv("FEATLEARN_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "featlearn" / "teachers"
