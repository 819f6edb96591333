"""The command's allocator setting: on request, freed tensor memory is reused; the user's own settings win."""

import os
import subprocess
import sys

import pytest

from featlearn.cli.host_memory import glibc, keep_freed_memory
from featlearn.cli.main import main


def _huge_pages_always() -> bool:
    """Transparent huge pages on every mapping: a fresh 100 MB block then faults ~50 times, not ~24 000."""
    try:
        return "[always]" in open("/sys/kernel/mm/transparent_hugepage/enabled").read()
    except OSError:
        return False


GLIBC = glibc() is not None

#: Allocates and frees a 100 MB tensor eight times; prints whether the setting took and the
#: minor page faults of the last six (each a first touch of pages the kernel zeroes). The
#: heap settles in the first two; now and then one later block still comes fresh (measured:
#: 0 or one block's 24 000 faults in six, against about 146 000 with glibc's defaults).
FAULTS = """
import resource, torch
from featlearn.cli.host_memory import keep_freed_memory
kept = keep_freed_memory()
for _ in range(2):
    x = torch.ones(25_000_000); del x
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(6):
    x = torch.ones(25_000_000); del x
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(choice: str) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k not in ("LD_PRELOAD",)}
    env["FEATLEARN_MALLOC"] = choice
    out = subprocess.run([sys.executable, "-c", FAULTS], env=env, capture_output=True, text=True, check=True)
    kept, faults = out.stdout.split()
    return kept, int(faults)


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
@pytest.mark.skipif(_huge_pages_always(), reason="transparent huge pages: too few faults to count")
def test_kept_memory_is_reused_without_new_page_faults():
    kept, with_keep = _faults("keep")
    system, with_system = _faults("system")
    assert (kept, system) == ("True", "False")
    assert with_system > 6 * 20_000  # six fresh 100 MB mappings: about 24 000 pages each
    assert with_keep < with_system / 3  # at most one of the six blocks mapped afresh


def test_glibc_s_defaults_stay_unless_asked_and_the_user_s_own_settings_win():
    assert keep_freed_memory({}) is False
    assert keep_freed_memory({"FEATLEARN_MALLOC": "system"}) is False
    keep = {"FEATLEARN_MALLOC": "keep"}
    assert keep_freed_memory({**keep, "MALLOC_MMAP_MAX_": "65536"}) is False
    assert keep_freed_memory({**keep, "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}) is False
    assert keep_freed_memory({**keep, "LD_PRELOAD": "libjemalloc.so.2"}) is False


def test_a_bad_choice_is_named(monkeypatch, capsys):
    with pytest.raises(ValueError, match="FEATLEARN_MALLOC='yes': use 'system'"):
        keep_freed_memory({"FEATLEARN_MALLOC": "yes"})
    monkeypatch.setenv("FEATLEARN_MALLOC", "yes")
    monkeypatch.setattr(sys, "argv", ["featlearn", "configs"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    assert "FEATLEARN_MALLOC='yes'" in capsys.readouterr().err
