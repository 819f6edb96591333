"""Fingerprints of the shipped experiments' smoke runs: the numbers a refactor must not move.

Every smoke test of a shipped experiment or overlay (tests/featlearn/cli/test_lightning.py) ends with
:func:`check_fingerprint`: the run's test loss, test error and the sum of |theta| over the
learner's floating-point state must equal those recorded in ``data/smoke_fingerprints.json``
(to 1e-5 relative: a changed summation order may move the last bits, a changed computation
moves far more). The suite pins one x86 code path (AVX2: ``tests/conftest.py``), so that the
recording holds on whichever machine CI lands.
``FEATLEARN_WRITE_FINGERPRINTS=1 pytest tests/featlearn/cli/test_lightning.py`` records them
anew, on purpose, when a change is meant to move the numbers.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch

FILE = Path(__file__).parent / "data" / "smoke_fingerprints.json"
TOLERANCE = 1e-5


def fingerprint(cli) -> dict[str, float]:
    """test/loss, test/error and sum |theta| of a finished run built by the CLI."""
    metrics = cli.trainer.callback_metrics
    state = [t for t in cli.model.state_dict().values() if torch.is_tensor(t) and t.is_floating_point()]
    return {
        "test_loss": float(metrics["test/loss"]),
        "test_error": float(metrics["test/error"]),
        "abs_param_sum": float(sum(t.double().abs().sum() for t in state)),
    }


def check_fingerprint(name: str, cli) -> None:
    """Compare the run's fingerprint with the recorded one (or record it when asked)."""
    found = fingerprint(cli)
    recorded = json.loads(FILE.read_text()) if FILE.exists() else {}
    if os.environ.get("FEATLEARN_WRITE_FINGERPRINTS") == "1":
        recorded[name] = found
        FILE.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")
        return
    assert name in recorded, f"no fingerprint recorded for {name}: record one with FEATLEARN_WRITE_FINGERPRINTS=1"
    for key, value in recorded[name].items():
        assert math.isclose(found[key], value, rel_tol=TOLERANCE, abs_tol=1e-12), (
            f"{name}: {key} is {found[key]!r}, recorded {value!r}: the change moved the experiment's numbers"
        )
