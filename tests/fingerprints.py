"""Fingerprints of the shipped experiments' smoke runs: the numbers a refactor must not move.

Every smoke test of a shipped experiment or overlay (tests/featlearn/runner/test_lightning.py) ends with
:func:`check_fingerprint`: the run's test loss, test error and the sum of |theta| over the
learner's floating-point state must equal a recording in ``data/smoke_fingerprints.json``
(to 1e-5 relative: a changed summation order may move the last bits, a changed computation
moves far more).

**One recording per machine kind.** CI lands on machines whose CPUs take different BLAS and
vectorised kernels (seen: an AVX2-only AMD EPYC, and the machine the first recording came
from). Those differ in the last bits, and Shi's smoke runs amplify that to 0.4% of the test
loss (shi_parity: 1.99993 on one, 2.00769 on the other), so the file keeps a recording per
kind (:func:`machine_kind`: the CPU's vendor and torch's vector capability) and a run passes
when it matches one of them.
``PYTEST_XDIST_WORKER_COUNT=2 FEATLEARN_WRITE_FINGERPRINTS=1 pytest tests/featlearn/runner/test_lightning.py``
records this machine's kind anew, on purpose, when a change is meant to move the numbers (then
record the other kinds too, or drop their entries for the experiments that moved). Record
serially (the workers would race on the file) but with the worker count ``make test`` runs:
``tests/conftest.py`` gives each worker its share of the cores, and the ResNet teacher runs
move by 1e-4 between one thread and two (seen on an AVX512 EPYC).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch

FILE = Path(__file__).parent / "data" / "smoke_fingerprints.json"
TOLERANCE = 1e-5


def machine_kind() -> str:
    """The CPU's vendor and the vector capability torch dispatches to, e.g. ``AuthenticAMD AVX2``."""
    vendor = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        vendor = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                       if line.startswith("vendor_id")), vendor)  # fmt: skip
    return f"{vendor} {torch.backends.cpu.get_cpu_capability()}"


def fingerprint(cli) -> dict[str, float]:
    """test/loss, test/error and sum |theta| of a finished run built by the CLI."""
    metrics = cli.trainer.callback_metrics
    state = [t for t in cli.model.state_dict().values() if torch.is_tensor(t) and t.is_floating_point()]
    return {
        "test_loss": float(metrics["test/loss"]),
        "test_error": float(metrics["test/error"]),
        "abs_param_sum": float(sum(t.double().abs().sum() for t in state)),
    }


def _matches(found: dict[str, float], recorded: dict[str, float]) -> bool:
    return all(math.isclose(found[key], value, rel_tol=TOLERANCE, abs_tol=1e-12) for key, value in recorded.items())


def check_fingerprint(name: str, cli) -> None:
    """Compare the run's fingerprint with the recordings (or record this machine kind's when asked)."""
    found = fingerprint(cli)
    kinds = json.loads(FILE.read_text()) if FILE.exists() else {}
    if os.environ.get("FEATLEARN_WRITE_FINGERPRINTS") == "1":
        kinds.setdefault(machine_kind(), {})[name] = found
        FILE.write_text(json.dumps({k: dict(sorted(v.items())) for k, v in sorted(kinds.items())}, indent=1) + "\n")
        return
    recordings = {kind: entries[name] for kind, entries in kinds.items() if name in entries}
    assert recordings, f"no fingerprint recorded for {name}: record one with FEATLEARN_WRITE_FINGERPRINTS=1"
    assert any(_matches(found, recorded) for recorded in recordings.values()), (
        f"{name}: {found} matches no recording ({recordings}): the change moved the experiment's numbers"
    )
