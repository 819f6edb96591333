"""The report items' measurements read from a compare folder's TensorBoard events."""

import json
import shutil

import pytest
from torch.utils.tensorboard import SummaryWriter

from featlearn.studies.report_items import (
    CURVES_FILE,
    logged_curves,
    loss_curves,
    record_curves,
    steps_to_accuracy,
    with_worst_count,
)


def write_curve(folder, method, tag, points):
    writer = SummaryWriter(str(folder / "tensorboard" / method))
    for step, value in points:
        writer.add_scalar(tag, value, step)
    writer.close()


def test_steps_to_accuracy_is_the_first_step_every_seed_reaches(tmp_path):
    # The mean reaches 90% at step 3, the slowest seed (the minimum) only at step 10.
    write_curve(tmp_path, "network", "heldout/test_acc", [(0, 0.5), (1, 0.6), (3, 0.95), (10, 0.99)])
    write_curve(tmp_path, "network", "heldout/test_acc_min", [(0, 0.5), (1, 0.55), (3, 0.85), (10, 0.97)])
    # One member: its own curve; a step-0 value at 90% does not count (the symmetric start is no learning).
    write_curve(tmp_path, "ntk", "heldout/test_acc", [(0, 0.95), (1, 0.5), (30, 0.9), (100, 0.95)])
    write_curve(tmp_path, "rf", "heldout/test_acc", [(0, 0.5), (100, 0.76)])  # never reaches it
    steps = steps_to_accuracy(tmp_path, ["Network", "NTK", "RF", "Two Step"], 90.0)
    assert steps == {"Network": 10, "NTK": 30, "RF": None}  # Two Step logged nothing: left out


def test_the_loss_figure_draws_each_methods_training_loss_and_nothing_where_none_is_logged(tmp_path):
    write_curve(tmp_path, "network_w_o_structure", "train/loss", [(1, 2.8), (3, 1.0), (600, 1.0)])
    write_curve(tmp_path, "network", "train/loss", [(1, 2.8), (3, 0.6), (600, 0.01)])
    target = tmp_path / "figures" / "loss.png"
    drawn = loss_curves(tmp_path, ["Network", "Network w/o structure"], target, "training loss")
    assert drawn == target and target.stat().st_size > 1000  # a drawn PNG, not an empty file
    nothing = loss_curves(tmp_path, ["RF"], tmp_path / "figures" / "none.png", "training loss")
    assert nothing is None and not (tmp_path / "figures" / "none.png").exists()


def test_the_batch_share_of_alpha_splits_n_star_into_the_batch_and_the_steps():
    import math

    from featlearn.studies.exponents import fit_exponent
    from featlearn.studies.report_items import batch_share_lines

    rows = []
    for d in (8, 16, 32, 64, 128):
        m = math.ceil(d * math.log(d))
        steps = 4 * d  # n* = 4 d m: the steps' exponent 1, the batch's about 1.3
        rows.append({"method": "Network", "d": d, "batch_size": m, "n_star": steps * m, "n_pass": steps * m,
                     "n_fail": (steps - 1) * m, "status": "found"})  # fmt: skip
    lines = batch_share_lines(rows)
    (row,) = [line for line in lines if line.startswith("| Network |")]
    batch, steps = (float(cell) for cell in row.split("|")[2:4])
    alpha = fit_exponent([(r["d"], r["n_pass"], r["n_fail"]) for r in rows])["alpha"]
    assert steps == pytest.approx(1.0, abs=0.02) and batch == pytest.approx(alpha - steps, abs=0.02)
    assert batch_share_lines(rows[:1]) == []  # one d: nothing to split


def test_the_worst_count_is_each_members_lowest_accuracy_over_the_counts_it_holds():
    nan = float("nan")
    metrics = {"test_acc": [84.4, 99.0], "count_acc_0": [100.0, 100.0], "count_acc_1": [0.0, 97.0]}
    metrics["count_acc_2"] = [nan, 99.5]
    assert with_worst_count(metrics)["count_acc_min"] == [0.0, 97.0]  # a count a member's test set lacks is left out
    assert "count_acc_min" not in with_worst_count({"test_acc": [84.4]})  # no CountAccuracy: no column


def test_the_curves_a_report_reads_are_recorded_and_read_back_where_the_events_are_gone(tmp_path):
    """A committed report keeps its runs' curves, not their events, and regenerates the same figures."""
    write_curve(tmp_path, "network", "heldout/test_acc", [(0, 0.5), (3, 0.95), (10, 0.99)])
    write_curve(tmp_path, "ntk", "train/loss", [(1, 2.0)])  # logs another tag only
    read = logged_curves(tmp_path, ["Network", "NTK", "RF"], "heldout/test_acc")
    assert read == {"Network": ([0, 3, 10], [0.5, pytest.approx(0.95), pytest.approx(0.99)])}
    record = json.loads((tmp_path / CURVES_FILE).read_text())
    assert set(record) == {"network/heldout/test_acc", "ntk/heldout/test_acc"}
    assert record["ntk/heldout/test_acc"] is None  # read, not logged: said once, not looked for again
    shutil.rmtree(tmp_path / "tensorboard")  # a fresh clone: no events
    assert logged_curves(tmp_path, ["Network", "NTK", "RF"], "heldout/test_acc") == read  # the very same floats
    assert steps_to_accuracy(tmp_path, ["Network", "NTK"], 90.0) == {"Network": 3}
    assert logged_curves(tmp_path, ["Network"], "train/loss") == {}  # never read while the events were there


def test_an_items_curves_are_recorded_as_soon_as_it_has_run(tmp_path):
    """A report killed before it drew its figures still leaves each finished item's curves with its results."""
    write_curve(tmp_path, "network", "heldout/test_acc", [(0, 0.5), (600, 1.0)])
    write_curve(tmp_path, "network", "counts/acc_0", [(600, 1.0)])  # featlearn's own reading: not drawn
    record_curves(tmp_path, ["Network", "NTK"])  # NTK's run wrote no events
    record = json.loads((tmp_path / CURVES_FILE).read_text())
    assert record["network/heldout/test_acc"] == [[0, 600], [0.5, 1.0]]
    assert record["network/train/loss"] is None and not any(key.startswith("ntk/") for key in record)
    assert "network/counts/acc_0" not in record
    shutil.rmtree(tmp_path / "tensorboard")
    assert logged_curves(tmp_path, ["Network"], "heldout/test_acc") == {"Network": ([0, 600], [0.5, 1.0])}
