"""The judgement rules of a reproduction report: one test per rule (featlearn/studies/judgement.py)."""

from __future__ import annotations

import statistics

import pytest

from featlearn.studies.judgement import (
    BUILT_IN,
    FAILED_FIT,
    NEAR_BOTH,
    Cell,
    assign_claims,
    by_construction,
    claim_verdict,
    column_relation,
    guard_failed_fits,
    judge,
    mark_calibrated_fits,
    paper_below_trivial,
    rival_passes,
    short_reason,
    side_by_construction,
    spread_at_ceiling,
    undecided_cell,
    weaker_rival,
)
from featlearn.studies.report_page import claims_matrix

RULES = {
    "tolerances": {
        "train": {"absolute": 3.0, "std_multiple": 2.0},
        "test": {"absolute": 3.0, "std_multiple": 2.0},
        "cos": {"absolute": 0.05, "std_multiple": 2.0},
    },
    "reasons": [
        {"setting": "E.1.*", "method": "NTK", "metric": "test", "category": "a constant the paper leaves open",
         "reason": "rate"},
    ],
}  # fmt: skip


def test_a_cell_is_reproduced_within_the_floor_and_the_spread_never_widens_it():
    assert judge(100.0, [98.0, 98.0], "test", "E.1.1", "Network", RULES)["verdict"] == "reproduced"  # 2 <= 3
    assert judge(100.0, [96.0, 96.0], "test", "E.1.1", "Network", RULES)["verdict"] == "differs"  # 4 > 3
    spread = judge(100.0, [90.0, 100.0], "test", "E.1.1", "Network", RULES)  # mean 95, std 7.07: 5 > 3 all the same
    assert spread["verdict"] == "differs" and spread["allowed"] == 3.0 and spread["std"] == pytest.approx(7.0710678)
    assert judge(0.997, [0.95, 0.95], "cos", "E.1.1", "Network", RULES)["verdict"] == "reproduced"  # 0.047 <= 0.05
    assert judge(0.997, [0.94, 0.94], "cos", "E.1.1", "Network", RULES)["verdict"] == "differs"


def test_a_differing_cell_takes_the_first_matching_reason_or_says_none_is_recorded():
    known = judge(86.4, [80.0, 80.0], "test", "E.1.1 parity (T1)", "NTK", RULES)
    category = RULES["reasons"][0]["category"]
    assert (known["verdict"], known["category"], known["reason"]) == ("differs", category, "rate")
    other = judge(86.4, [80.0, 80.0], "test", "E.2.1 d=100 (T3)", "NTK", RULES)  # the pattern names E.1.*
    assert (other["category"], other["reason"]) == ("unexplained", "no reason recorded yet")


def test_no_paper_number_gives_no_verdict_and_no_measurement_gives_not_run():
    assert judge(None, [80.0], "test", "E.1.1", "NTK", RULES) is None
    assert judge(86.4, None, "test", "E.1.1", "NTK", RULES)["verdict"] == "not run"


def test_a_bound_must_hold_at_the_edge_of_the_seeds_spread():
    rules = {"tolerances": {"alpha": {"absolute": 0.5, "std_multiple": 2.0}}, "reasons": []}
    assert judge(2.0, [1.52], "alpha", "Theorem 3.1", "Network", rules, "<")["verdict"] == "reproduced"
    assert judge(2.0, [2.1], "alpha", "Theorem 3.1", "Network", rules, "<")["verdict"] == "differs"  # no slack
    assert judge(2.0, [2.0, 2.3], "alpha", "Theorem 3.1", "Network", rules, "<")["verdict"] == "differs"  # mean 2.15
    straddles = judge(2.0, [1.7, 2.1], "alpha", "Theorem 3.1", "Network", rules, "<")  # mean 1.9, + 2 std = 2.47
    assert straddles["verdict"] == "cannot decide"  # the mean holds the bound, its spread crosses it
    parts = {"tolerances": {"gap": {"absolute": 3.0, "std_multiple": 2.0}}, "reasons": []}
    assert judge(0.0, [20.0, 30.0], "gap", "E.5", "FC(50)", parts, ">")["verdict"] == "reproduced"  # 25 - 14 > 0
    assert judge(0.0, [1.0, 30.0], "gap", "E.5", "FC(50)", parts, ">")["verdict"] == "cannot decide"  # 15.5 - 41 < 0
    assert judge(0.0, [-1.0, -3.0], "gap", "E.5", "FC(50)", parts, ">")["verdict"] == "differs"  # below 0
    with pytest.raises(ValueError, match="relation must be"):
        judge(2.0, [2.42], "alpha", "Theorem 3.1", "NTK", rules, "~")


def test_chance_against_chance_cannot_decide_and_is_never_reproduced():
    # One Step at the class rate of a balanced test set, against the paper's 52.2.
    cell = judge(52.2, [50.2, 50.3], "test", "E.1.1", "One Step", RULES, trivial=50.2)
    assert cell["verdict"] == "cannot decide" and "trivial rate" in cell["reason"]
    # The same at ratio 0.9: RF at the 90% majority rate, the paper's RF too.
    assert judge(89.0, [89.9, 89.8], "train", "E.2.2", "RF", RULES, trivial=89.9)["verdict"] == "cannot decide"


def test_a_method_at_the_trivial_rate_where_the_paper_is_not_is_a_failed_fit():
    cell = judge(100.0, [50.3, 50.2], "train", "E.1.1", "Network w/o structure", RULES, trivial=50.1)
    assert (cell["verdict"], cell["category"]) == ("differs", FAILED_FIT)
    assert "50.1%" in cell["reason"] and "Network w/o structure" in cell["reason"]
    # The reason gives featlearn's own score, not the trivial rate in its place.
    off = judge(100.0, [96.0, 96.4], "train", "E.1.2", "Network w/o structure", RULES, trivial=95.1)
    assert (off["verdict"], off["category"]) == ("differs", FAILED_FIT)
    assert "scores 96.2%, within 3 points of the trivial rate (95.1%" in off["reason"]


def test_a_paper_value_at_the_other_classs_constant_is_a_constant_predictor_too():
    # E.1.2's One Step: the paper's 44.1 on a set whose majority is 58.4% lies within the floor of 41.6, the
    # constant prediction of the minority class. Ours at the majority's constant: two constants, nothing decided.
    readout = judge(44.1, [58.3, 58.5], "train", "E.1.2", "One Step (SGD readout)", RULES, trivial=58.4)
    assert (readout["verdict"], readout["category"]) == ("cannot decide", "both at the trivial rate")
    assert "the other class's constant rate (41.6%; the trivial rate 58.4%)" in readout["reason"]
    # Ours far from both constants differs, and the reason says where the paper's number sits.
    best = judge(44.1, [99.9, 100.0], "train", "E.1.2", "One Step", RULES, trivial=58.4)
    assert best["verdict"] == "differs" and "within 3 points of the other class's constant (41.6%)" in best["reason"]
    # On a balanced set the two constants are one: nothing changes.
    assert judge(100.0, [50.3], "train", "E.1.1", "N", RULES, trivial=50.1)["category"] == FAILED_FIT


def test_a_value_within_the_floor_of_both_the_paper_and_the_trivial_rate_cannot_decide():
    # E.1.2's Network w/o structure: 97.1 against the paper's 100 and a 95.1% trivial rate. The floor
    # tells it neither from the paper's fit nor from a constant predictor: no ✓, and no failed fit either.
    near = judge(100.0, [97.5, 96.7], "train", "E.1.2", "Network w/o structure", RULES, trivial=95.1)
    assert (near["verdict"], near["category"]) == ("cannot decide", NEAR_BOTH)
    assert "97.1% lies within 3 points of the paper's 100.0% and of the trivial rate (95.1%" in near["reason"]
    assert "a constant predictor's" in near["reason"]
    # Its cosine then says nothing of the paper's fitted network, as after a failed fit.
    train = Cell("E.1.2", "T2", "Network w/o structure", "train", paper=100.0, mean=97.1)
    train.judged(near)
    cos = Cell("E.1.2", "T2", "Network w/o structure", "cos", paper=0.965, mean=0.994, verdict="reproduced")
    guard_failed_fits([train, cos])
    assert (cos.verdict, cos.category) == ("cannot decide", "its own fit differs")
    assert "not shown to fit its training set" in cos.reason
    # Degenerate runs near both are still a failed fit.
    flagged = judge(100.0, [97.5, 96.7], "train", "E.1.2", "N", RULES, trivial=95.1, degenerate=True)
    assert flagged["category"] == FAILED_FIT
    # Every seed degenerated (one class predicted): a failed fit even off the measured trivial rate.
    flagged = judge(100.0, [60.0, 61.0], "train", "E.1.1", "Network", RULES, trivial=50.0, degenerate=True)
    assert (flagged["verdict"], flagged["category"]) == ("differs", FAILED_FIT)
    # A known reason for the cell is kept after the failed fit's own words.
    known = judge(86.4, [50.0, 50.0], "test", "E.1.1", "NTK", RULES, trivial=50.0)
    assert known["category"] == FAILED_FIT and known["reason"].endswith("rate")


def test_a_test_accuracy_at_chance_is_a_claim_when_the_method_fits_its_training_set():
    # The paper's network without structure memorises (train 100) and tests at chance (52.0).
    fits = judge(52.0, [50.5, 50.9], "test", "E.1.1", "Network w/o structure", RULES, trivial=50.2,
                 fits_training_set=True)  # fmt: skip
    assert fits["verdict"] == "reproduced"
    stuck = judge(52.0, [50.5, 50.9], "test", "E.1.1", "Network w/o structure", RULES, trivial=50.2,
                  fits_training_set=False)  # fmt: skip
    assert stuck["verdict"] == "cannot decide"
    # Runs that all degenerated fit nothing, whatever their training score: the same as on the train cell.
    failed = judge(50.0, [71.5, 71.6], "test", "E.2.1", "One Step (SGD readout)", RULES, trivial=50.3,
                   fits_training_set=True, degenerate=True)  # fmt: skip
    assert failed["verdict"] == "cannot decide" and "runs that degenerated" in failed["reason"]
    # The training accuracy itself at chance is never rescued by that exception.
    assert (
        judge(51.0, [50.5], "train", "E.1.1", "NTK", RULES, trivial=50.2, fits_training_set=True)["verdict"]
        == "cannot decide"
    )


def test_a_cell_clear_of_the_trivial_rate_is_judged_by_the_floor():
    assert judge(100.0, [99.0], "test", "E.1.1", "Network", RULES, trivial=50.0)["verdict"] == "reproduced"
    assert judge(84.0, [79.0], "test", "E.1.1", "NTK", RULES, trivial=50.0)["verdict"] == "differs"
    # A cosine well clear of its value at step 0 is judged by the floor alone.
    assert judge(0.997, [0.999], "cos", "E.1.1", "Network", RULES, trivial=0.127)["verdict"] == "reproduced"


def test_a_paper_value_near_chance_is_matched_by_nothing_but_chance():
    # E.2.2 ratio 0.8's NTK: the paper's 82.7 lies within the floor of the 80.2% trivial rate, and ours
    # (84.05, clear of it) within the floor of the paper's: matching a value near chance says nothing.
    cell = judge(82.7, [84.0, 84.1], "test", "E.2.2", "NTK", RULES, trivial=80.2)
    assert (cell["verdict"], cell["category"]) == ("cannot decide", "both at the trivial rate")
    assert "within the floor of the paper's" in cell["reason"]
    # Far above it, ours differs from a paper value at chance (no verdict hides it).
    assert judge(82.7, [99.0, 99.5], "test", "E.2.2", "NTK", RULES, trivial=80.2)["verdict"] == "differs"


def test_a_mean_within_the_floor_with_degenerate_seeds_is_a_failed_fit():
    # Two of five seeds predict one class: their mean may land on the paper's value, and is still no result.
    cell = judge(86.0, [80.4, 89.1, 89.3, 79.9, 89.0], "test", "E.1.1", "NTK", RULES, trivial=50.0,
                 degenerate_seeds=2)  # fmt: skip
    assert (cell["verdict"], cell["category"]) == ("differs", FAILED_FIT)
    assert "2 of featlearn's 5 seeds" in cell["reason"]
    assert judge(86.0, [86.0, 86.5], "test", "E.1.1", "NTK", RULES, trivial=50.0)["verdict"] == "reproduced"


def test_a_cosine_is_judged_against_its_value_at_initialisation():
    # A frozen random layer (RF) keeps its step-0 cosine; the paper's is near it too: nothing is learned on either side.
    both = judge(0.114, [0.127, 0.128], "cos", "E.1.1", "RF", RULES, trivial=0.127)
    assert both["verdict"] == "cannot decide" and "step 0 (0.127" in both["reason"]
    # Ours stays at the initialisation, the paper's lies above it: a difference, with the known reason's category.
    rules = {**RULES, "reasons": [{"setting": "*", "method": "RF", "metric": "cos",
                                   "category": "a contradiction in the paper", "reason": "frozen"}]}  # fmt: skip
    above = judge(0.354, [0.27, 0.28], "cos", "E.2.1", "RF", rules, trivial=0.28)
    assert (above["verdict"], above["category"]) == ("differs", "a contradiction in the paper")
    assert above["reason"].startswith("featlearn's RF stays within 0.05 of its value at step 0")
    assert above["reason"].endswith("frozen")
    # Runs that degenerated give no cosine to reproduce, whatever its value.
    failed = judge(0.218, [0.245, 0.25], "cos", "E.2.2", "Network w/o structure", RULES, trivial=0.127,
                   degenerate=True)  # fmt: skip
    assert (failed["verdict"], failed["category"]) == ("differs", FAILED_FIT)


def test_a_relation_per_column_may_name_a_method_to_compare_with():
    assert column_relation("<", "alpha") == ("<", None)
    assert column_relation("test: =; gamma: < Network", "gamma") == ("<", "Network")
    assert column_relation("test: =; gamma: < Network", "cos") == ("=", None)  # not named: "="
    with pytest.raises(ValueError, match="relation must be"):
        column_relation("gamma: ~ Network", "gamma")


def test_a_measurement_that_cannot_decide_the_claim_is_undecided_whatever_its_value():
    rules = {"tolerances": {"minimum": {"absolute": 1.0, "std_multiple": 2.0}}, "reasons": []}
    edge = judge(3.2, [0.0], "minimum", "E.5.4", "chosen teacher", rules, inconclusive="the minimum is at m = 1")
    assert (edge["verdict"], edge["category"]) == ("cannot decide", "inconclusive")
    assert judge(3.2, [0.0], "minimum", "E.5.4", "chosen teacher", rules)["verdict"] == "differs"


def test_a_fitted_rate_is_judged_by_its_interval_alone():
    rules = {"tolerances": {"alpha": {"absolute": 0.5, "std_multiple": 2.0}}, "reasons": []}
    # The NTK's 2.42 with [2.34, 2.51]: within the old floor of 0.5 of 2, outside its own interval.
    ntk = judge(2.0, [2.42], "alpha", "Theorem 3.1", "NTK", rules, "=", interval=(2.34, 2.51))
    assert ntk["verdict"] == "differs" and ntk["interval"] == (2.34, 2.51) and ntk["allowed"] is None
    assert judge(2.0, [2.1], "alpha", "T", "NTK", rules, "=", interval=(1.9, 2.3))["verdict"] == "reproduced"
    # A bound holds at the interval's edge: [1.32, 1.71] < 2, but not [1.6, 2.1] < 2, whatever the point fit.
    assert judge(2.0, [1.52], "alpha", "T", "Network", rules, "<", interval=(1.32, 1.71))["verdict"] == "reproduced"
    assert judge(-1.0, [-0.8], "alpha", "T", "x", rules, ">", interval=(-0.9, -0.7))["verdict"] == "reproduced"
    # An interval across the bound shows neither side (as seeds that straddle it): the estimate's side decides
    # only between "cannot decide" and "differs".
    across = judge(2.0, [1.8], "alpha", "T", "Network", rules, "<", interval=(1.6, 2.1))
    assert (across["verdict"], across["category"]) == ("cannot decide", "the intervals overlap")
    assert "[1.6, 2.1] reaches 2: neither the bound nor its opposite is shown" in across["reason"]
    assert judge(-1.0, [-0.8], "alpha", "T", "x", rules, ">", interval=(-1.1, -0.7))["verdict"] == "cannot decide"
    assert judge(2.0, [2.05], "alpha", "T", "Network", rules, "<", interval=(1.9, 2.3))["verdict"] == "differs"
    assert judge(2.0, [2.3], "alpha", "T", "Network", rules, "<", interval=(2.1, 2.5))["verdict"] == "differs"
    # Two fitted rates: equal when the intervals overlap, below when strictly below.
    both = {"interval": (1.55, 1.80), "paper_interval": (1.32, 1.71)}
    assert judge(1.52, [1.65], "alpha", "T", "x", rules, "=", **both)["verdict"] == "reproduced"
    overlap = judge(1.52, [1.65], "alpha", "T", "x", rules, ">", **both)
    assert overlap["verdict"] == "cannot decide"
    assert "reaches the other side's interval [1.32, 1.71]" in overlap["reason"]
    assert judge(1.52, [1.65], "alpha", "T", "x", rules, "<", **both)["verdict"] == "differs"  # the wrong side
    apart = {"interval": (1.32, 1.71), "paper_interval": (2.34, 2.51)}
    assert judge(2.42, [1.52], "alpha", "T", "x", rules, "=", **apart)["verdict"] == "differs"
    assert judge(2.42, [1.52], "alpha", "T", "x", rules, "<", **apart)["verdict"] == "reproduced"


def test_a_difference_its_measurements_cannot_decide_is_undecided():
    rules = {**RULES, "reasons": [{"setting": "*", "method": "FC(50)", "metric": "test", "reason": "within the spread",
                                   "category": "a claim its measurements cannot decide"}]}  # fmt: skip
    cell = judge(90.0, [80.0, 85.0], "test", "E.5", "FC(50)", rules)
    assert (cell["verdict"], cell["category"]) == ("cannot decide", "a claim its measurements cannot decide")


def test_a_cell_the_judgement_file_lists_holds_by_construction_whatever_its_value():
    made = {**RULES, "by_construction": [{"setting": "Remarks", "method": "Network (rotated*", "metric": "*",
                                          "why": "featlearn against itself under a rotation"}]}  # fmt: skip
    why = by_construction(made, "Remarks", "Network (rotated basis)", "boundary")
    assert why == "featlearn against itself under a rotation"
    cell = judge(35.5, [36.25], "test", "Remarks", "Network (rotated basis)", RULES, built_in=why)
    assert (cell["verdict"], cell["category"]) == ("by construction", BUILT_IN)
    assert judge(35.5, [80.0], "test", "Remarks", "x", RULES, built_in=why)["verdict"] == "by construction"
    assert by_construction(made, "Remarks", "Network", "boundary") is None


def test_a_spread_bounded_by_the_ceiling_holds_by_construction():
    # Five seeds within 0.1 of 100%: no spread of them can reach 0.5 (at most 0.1 x sqrt(6/20) = 0.055).
    assert "within 0.10 of the 100% ceiling" in spread_at_ceiling([100.0, 100.0, 99.9, 100.0, 100.0], 0.5)
    assert "within 0.00 of the 100% ceiling" in spread_at_ceiling([100.0] * 5, 0.5)  # 0 by arithmetic
    # Seeds 2 points apart could spread by up to 1.1: the bound is a measurement then.
    assert spread_at_ceiling([98.0, 100.0, 99.0, 99.5, 100.0], 0.5) is None
    assert spread_at_ceiling([95.0, 95.1, 95.05], 0.5) is None  # far from the ceiling: the spread says something
    # The largest spread is reached by seeds split between the two ends: check the bound against that case.
    split = [99.0, 99.0, 100.0, 100.0]
    assert statistics.stdev(split) == pytest.approx(0.5774, abs=1e-4)
    assert spread_at_ceiling(split, 0.58) is not None and spread_at_ceiling(split, 0.577) is None


def test_a_rival_that_passes_the_same_test_leaves_the_cell_undecided():
    rival = {"setting": "T", "method": "Network", "metric": "alpha", "form": "d^1.5", "value": 1.5}
    rules = {"tolerances": {"alpha": {"absolute": 0.5, "std_multiple": 2.0}}, "reasons": [], "rivals": [rival]}
    # alpha < 2 is passed by d^1.5 too: it cannot tell d polylog d from d^1.5.
    cell = judge(2.0, [1.52], "alpha", "T", "Network", rules, "<", interval=(1.32, 1.71))
    assert (cell["verdict"], cell["category"]) == ("cannot decide", "a rival passes the same test")
    assert "d^1.5 (alpha = 1.5) passes the same test" in cell["reason"]
    # A rival the test fails: the cell is reproduced, and names what it ruled out.
    far = {**rules, "rivals": [{**rival, "form": "the NTK's d^2", "value": [2.0, 2.5]}]}
    kept = judge(2.0, [1.52], "alpha", "T", "Network", far, "<", interval=(1.32, 1.71))
    assert kept["verdict"] == "reproduced" and kept["rules_out"] == "the NTK's d^2 (alpha = 2 or 2.5)"
    assert rival_passes(1.0, "=", 1.52, (0.79, 1.57), 0.5) and not rival_passes(1.0, "=", 1.52, (1.55, 1.8), 0.5)
    assert rival_passes(-0.5, ">", -1.0, None, 0.35) and not rival_passes(-1.5, ">", -1.0, None, 0.35)


def test_a_prediction_test_is_judged_against_rival_forms_measured_the_same_way():
    from featlearn.studies.judgement import claimed_form

    rules = {"tolerances": {"form_error": {"absolute": 0.0, "std_multiple": 2.0}}, "reasons": []}
    far = {"form": "L = 1", "value": -0.20, "interval": [-0.24, -0.16]}
    close = {"form": "L = log log d", "value": -0.02, "interval": [-0.05, 0.01]}

    def verdict(value, interval, rivals):
        return judge(0.0, [value], "form_error", "P", "T_1", rules, "=", interval=interval, measured_rivals=rivals)

    # The claimed form predicts and no rival does: reproduced, ruling out the closest rival.
    kept = verdict(0.01, (-0.02, 0.04), [far])
    assert kept["verdict"] == "reproduced" and kept["rules_out"].startswith("L = 1 (form_error = -0.200")
    # A rival whose own interval holds 0 passes the same test: cannot decide.
    tied = verdict(0.01, (-0.02, 0.04), [far, close])
    assert (tied["verdict"], tied["category"]) == ("cannot decide", "a rival passes the same test")
    assert "L = log log d passes the same test" in tied["reason"]
    # The claimed form misses while a rival predicts: differs, with the rival as the evidence.
    worse = verdict(0.12, (0.09, 0.15), [far, close])
    assert (worse["verdict"], worse["category"]) == ("differs", "a rival form predicts better")
    assert "L = log log d gives -0.020 [-0.050, +0.010]" in worse["reason"]
    # Every form misses and the claimed comes closest: no form is within the noise, so no verdict either way.
    alone = verdict(0.08, (0.06, 0.10), [far])
    assert (alone["verdict"], alone["category"]) == ("cannot decide", "no form within the test's noise")
    # The judgement file names the claimed form, and optionally the rivals it must be told from.
    forms = {name: {"error": e, "low": e - 0.03, "high": e + 0.03} for name, e in (("a", 0.0), ("b", 0.01), ("c", 0.3))}
    entry = {"setting": "P", "method": "T*", "metric": "form_error", "form": "a", "rivals": ["c"]}
    value, interval, rivals = claimed_form({"forms": [entry]}, "P", "T_1", "form_error", forms)
    assert value == [0.0] and interval == [-0.03, 0.03] and [r["form"] for r in rivals] == ["c"]
    assert claimed_form({"forms": [entry]}, "P", "other", "form_error", forms) == (None, None, None)
    with pytest.raises(ValueError, match="names \\['z'\\]"):
        claimed_form({"forms": [{**entry, "form": "z"}]}, "P", "T_1", "form_error", forms)


def test_every_reproduced_cell_names_what_it_rules_out():
    assert judge(100.0, [99.0], "test", "S", "N", RULES, trivial=50.2)["rules_out"] == "a constant predictor (50.2%)"
    cos = judge(0.997, [0.99], "cos", "S", "N", RULES, trivial=0.127)["rules_out"]
    assert cos == "a first layer that did not move (cos 0.127 at step 0)"
    bound = {"tolerances": {"gap": {"absolute": 3.0, "std_multiple": 2.0}}, "reasons": []}
    assert judge(0.0, [20.0, 22.0], "gap", "S", "N", bound, ">")["rules_out"] == "a value at or below 0"


def test_a_paper_value_below_its_own_trivial_rate_is_said_with_both_numbers():
    # E.1.2's One Step: the paper's 41.0 against a 58.5% majority rate.
    cell = judge(41.0, [99.9, 100.0], "test", "E.1.2", "One Step", RULES, trivial=58.5)
    assert cell["verdict"] == "differs"
    assert cell["reason"].startswith("The paper's own 41.0% lies below the trivial rate of this set (58.5%")
    assert paper_below_trivial(57.0, 58.5, 3.0, "test") is None  # within the floor: not flagged
    assert paper_below_trivial(0.56, 0.9, 0.05, "cos") is None  # a cosine has no majority class


def test_a_match_of_a_method_whose_training_fit_differs_is_never_reproduced():
    cells = [
        Cell("E.1.2", "T2", "Network w/o structure", "train", verdict="differs"),
        Cell("E.1.2", "T2", "Network w/o structure", "cos", verdict="reproduced", rules_out="an unmoved layer"),
        Cell("E.1.2", "T2", "Network", "cos", verdict="reproduced"),
    ]
    guard_failed_fits(cells)
    assert [c.verdict for c in cells] == ["differs", "cannot decide", "reproduced"]
    assert cells[1].category == "its own fit differs" and cells[1].rules_out is None
    # One Step's neurons are fixed after step 1, before its classifier is fit: a classifier that scores
    # otherwise than the paper's leaves its cosine's verdict alone (the judgement file lists such methods).
    step = [
        Cell("E.2.1", "T3", "One Step (kept initialisation)", "train", verdict="differs"),
        Cell("E.2.1", "T3", "One Step (kept initialisation)", "cos", verdict="reproduced"),
        Cell("E.2.1", "T3", "One Step (kept initialisation)", "test", verdict="reproduced"),
    ]
    guard_failed_fits(step, ["One Step*"])
    assert [c.verdict for c in step] == ["differs", "reproduced", "cannot decide"]
    # A relation is its measured method's: E.1.1's Network at 84.4% tests 0.7 points above the NTK, but it is not
    # the paper's fitted Network (100%), so "the Network tests above the NTK" is not shown of it.
    above = Cell("E.1.1", "T1", "relation: the Network tests above the NTK", "test", verdict="reproduced",
                 kind="relation", left="Network")  # fmt: skip
    fits = Cell("E.1.1", "T1", "relation: the NTK tests above RF", "test", verdict="reproduced", kind="relation",
                left="NTK")  # fmt: skip
    guard_failed_fits([Cell("E.1.1", "T1", "Network", "train", verdict="differs"), above, fits])
    assert (above.verdict, above.category, fits.verdict) == ("cannot decide", "its own fit differs", "reproduced")


def test_a_method_that_fits_better_than_the_papers_and_still_tests_below_holds_the_claim_a_fortiori():
    def fails(train_mean, statistic=""):
        train = Cell("E.1.1", "T1", "RF", "train", mean=train_mean, paper=74.7, verdict="differs")
        bound = Cell("E.1.1", "T1", "relation: RF fails", "test", relation="<", paper=97.0, mean=79.3,
                     verdict="reproduced", kind="relation", left="RF", metric_statistic=statistic)  # fmt: skip
        guard_failed_fits([train, bound])
        return bound.verdict

    assert fails(79.3) == "reproduced"  # a better fit than the paper's RF, and still below 97
    assert fails(70.0) == "cannot decide"  # a worse fit could be what put it below
    assert fails(79.3, "std over 5 seeds") == "cannot decide"  # a better fit says nothing of a spread


def test_a_claims_verdict_follows_from_its_cells():
    assert claim_verdict(["reproduced", "reproduced", "by construction"]) == "reproduced"
    assert claim_verdict(["reproduced", "cannot decide"]) == "cannot decide"
    assert claim_verdict(["cannot decide", "differs", "reproduced"]) == "differs"
    assert claim_verdict(["by construction", "by construction"]) == "by construction"  # never counted as reproduced
    assert claim_verdict(["not run", "reproduced"]) == "reproduced"
    assert claim_verdict(["not run"]) == claim_verdict([]) == "not run"


def test_each_judged_cell_belongs_to_one_claim_and_an_unnamed_row_becomes_its_own():
    cells = [
        Cell("E.1.1", "T1", "Network", "test", verdict="reproduced"),
        Cell("E.1.1", "T1", "Network", "cos", verdict="differs"),
        Cell("E.1.1", "T1", "NTK", "test", verdict="differs"),
        Cell("E.1.1", "T1", "Trivial (majority class)", "test"),  # no paper value, no verdict
    ]
    entries = [
        {"id": "learns", "place": "Table 1", "words": "it  learns", "cells": [{"item": "E.1.1", "method": "N*"}]},
        {"id": "never", "place": "Table 1", "words": "x", "cells": [{"method": "Network"}]},
    ]
    claims = assign_claims(entries, cells, {"E.1.1": "E.1.1 parity (T1)"})
    assert [(c.id, len(c.cells), c.verdict) for c in claims] == [("learns", 3, "differs"), ("never", 0, "not run")]
    assert claims[0].words == "it learns" and cells[0].claim == "learns" and cells[3].claim is None
    alone = assign_claims([], cells, {"E.1.1": "E.1.1 parity (T1)"})
    place = "E.1.1 parity (T1)"
    assert [(c.id, c.place) for c in alone] == [("E.1.1: Network", place), ("E.1.1: NTK", place)]


def test_a_claims_cells_follow_its_patterns_so_the_file_says_which_speaks_first():
    cells = [
        Cell("E.1.1", "T1", "One Step", "cos", verdict="by construction"),
        Cell("E.1.1", "T1", "Two Step", "cos", verdict="by construction"),
        Cell("E.1.1", "T1", "Two Step", "test", verdict="by construction"),
    ]
    for cell in cells:
        cell.update(paper=0.9, mean=0.95)
    subject_first = [{"method": "Two Step", "metric": "cos"}, {"method": "*"}]
    entries = [{"id": "aligned", "place": "Table 1", "words": "w", "cells": subject_first}]
    (claim,) = assign_claims(entries, cells, {})
    order = [(c.method, c.metric) for c in claim.cells]
    assert order == [("Two Step", "cos"), ("One Step", "cos"), ("Two Step", "test")]
    matrix = claims_matrix([claim], {}, None)
    assert "Two Step cos" in matrix[2] and "One Step" not in matrix[2]  # the deciding cell is the subject's


def test_the_claims_matrix_shows_the_floor_a_bound_between_two_methods_must_clear():
    """"Two Step cos > One Step's 0.998" beside 0.999 reads as passed; the floor it missed must be there too."""
    cell = Cell("E.1.1", "T1", "relation: Two Step's cosine is above One Step's", "cos", ">", "One Step")
    cell.update(kind="relation", left="Two Step", paper=0.998, mean=0.999, verdict="differs", category="c")
    entries = [{"id": "a", "place": "T1", "words": "w", "cells": [{"method": "relation: *"}]}]
    (claim,) = assign_claims(entries, [cell], {})
    row = claims_matrix([claim], {}, None, floors={"cos": 0.05})[2]
    assert "Two Step cos > One Step's 0.998 + 0.05 (the floor)" in row
    assert "(the floor)" not in claims_matrix([claim], {}, None)[2]  # no floors given: the values alone
    spread = Cell("E.1.1", "T1", "relation: the NTK's spread", "test", ">")
    spread.update(kind="relation", left="NTK", paper=0.5, mean=4.7, metric_statistic="std over 5 seeds", verdict="c")
    (claim,) = assign_claims(entries, [spread], {})
    assert "(the floor)" not in claims_matrix([claim], {}, None, floors={"test": 3.0})[2]  # a bound, not two means


def test_a_cell_takes_only_its_own_fields():
    cell = Cell("E.1.1", "T1", "Network", "test")
    cell.update(verdict="reproduced", mean=100.0)
    assert (cell.verdict, cell.mean, cell.kind) == ("reproduced", 100.0, "table")
    with pytest.raises(AttributeError, match="Cell has no field 'verdcit'"):
        cell.update(verdcit="differs")
    row = {"item": "E.1.1", "setting": "T1", "method": "N", "metric": "test", "note": 3, "verdict": "differs"}
    assert Cell.from_dict(row).verdict == "differs"  # a results.json row: its note is the report's, not the cell's


def test_a_long_reason_is_cut_at_a_sentence():
    long = "First sentence here. " + "Second one is much longer " * 30 + "."
    assert short_reason(long) == "First sentence here."
    assert short_reason("short.") == "short."
    assert len(short_reason("word " * 200)) <= 400
    # Not after an abbreviation: "(App." would dangle before the note's link.
    cited = "It is the best classifier (App. E.1: one). See eq. (4) and Fig. 2 there. " + "More words " * 40 + "."
    assert short_reason(cited) == "It is the best classifier (App. E.1: one). See eq. (4) and Fig. 2 there."
    # Cut after a colon, the cut says that what it announces follows.
    announced = "The step erases the weights: " + "Section 5.1 says so at length " * 20 + "."
    assert short_reason(announced) == "The step erases the weights …"


def test_a_relation_against_a_rival_weaker_than_the_papers_is_undecided():
    # Glasgow's NTK: the paper's Theta(d^2), featlearn's untuned 2.42 [2.34, 2.51]: "the network needs fewer samples"
    # may hold against it and not against the paper's NTK.
    why = weaker_rival("<", "NTK", 2.42, [2.34, 2.51], 2.0, 0.5)
    assert "featlearn's NTK (2.42 [2.34, 2.51]) is a weaker rival than the paper's (2)" in why
    assert weaker_rival("<", "NTK", 2.05, [1.9, 2.2], 2.0, 0.5) is None  # the paper's rate inside its interval
    # Accuracies: "Network above NTK", ours 80 against the paper's 86.4, beyond the 3-point floor: weaker.
    assert weaker_rival(">", "NTK", 80.0, None, 86.4, 3.0) is not None
    assert weaker_rival(">", "NTK", 84.0, None, 86.4, 3.0) is None  # within the floor
    assert weaker_rival(">", "NTK", 95.0, None, 86.4, 3.0) is None  # a stronger rival: the relation says more
    assert weaker_rival(">", "NTK", 80.0, None, None, 3.0) is None  # no paper value to weaken
    # The network's own interval [1.32, 1.71] lies below the paper's 2 as well: it beats the paper's NTK too.
    assert weaker_rival("<", "NTK", 2.42, [2.34, 2.51], 2.0, 0.5, ours=(1.32, 1.71)) is None
    assert weaker_rival("<", "NTK", 2.42, [2.34, 2.51], 2.0, 0.5, ours=(1.9, 2.2)) is not None


def test_a_bound_whose_seeds_straddle_it_cannot_decide():
    # Remark 4.3's trained growth: mean 0.22 > 0, but 2 x std = 1.62 crosses 0 (5 of 8 seeds positive).
    rules = {"tolerances": {"growth": {"absolute": 0.5, "std_multiple": 2.0}}, "reasons": []}
    seeds = [0.58, -0.25, 0.78, 1.12, -0.65, -1.16, 0.59, 0.78]
    cell = judge(0.0, seeds, "growth", "Remarks", "Network", rules, ">")
    assert (cell["verdict"], cell["category"]) == ("cannot decide", "the seeds straddle the bound")
    assert judge(0.0, [-0.5, -0.6], "growth", "Remarks", "Network", rules, ">")["verdict"] == "differs"  # wrong side
    assert judge(0.0, [0.5, 0.6], "growth", "Remarks", "Network", rules, ">")["verdict"] == "reproduced"


def test_a_cell_the_judgement_file_lists_as_undecidable_says_its_measurement_is_a_proxy():
    listed = {"setting": "Phases", "method": "Iter*", "metric": "*", "why": "an earlier event"}
    rules = {**RULES, "undecidable": [listed]}
    assert undecided_cell(rules, "Phases", "Iterations to learn", "exp_log", {}, None) == "an earlier event"
    assert undecided_cell(rules, "Phases", "Signal finding", "exp_log", {}, None) is None


def test_a_cosine_of_features_frozen_before_the_fit_is_judged_whatever_the_fit():
    short = {"train_acc": [81.7, 81.1]}  # the classifier on Two Step's features falls short of the paper's 100%
    assert "falls short of the paper's fit" in undecided_cell(RULES, "T5", "Two Step", "cos", short, 100.0)
    frozen = {**RULES, "features_frozen_before_fit": ["One Step*", "Two Step*"]}
    assert undecided_cell(frozen, "T5", "Two Step", "cos", short, 100.0) is None  # its neurons were fixed at step 2
    assert "falls short" in undecided_cell(frozen, "T5", "Network", "cos", short, 100.0)  # a network's own fit


def test_a_match_on_the_table_the_constants_were_fitted_on_holds_by_construction():
    constants = {"calibrated": True, "objective": "Table 1", "candidate": "kept", "targets": [["One Step", "cos"]]}
    fitted = Cell("E.1.1", "T1", "One Step", "cos", verdict="reproduced", rules_out="an unmoved layer")
    missed = Cell("E.1.1", "T1", "One Step", "cos", verdict="differs")  # even the fit misses: a finding
    other = Cell("E.1.1", "T1", "NTK", "test", verdict="reproduced")  # not a target: the fit did not aim at it
    predicted = Cell("E.2.1", "T3", "One Step", "cos", verdict="reproduced")  # held fixed there: a prediction
    outcomes = {"E.1.1": {"constants": constants}, "E.2.1": {"constants": {**constants, "calibrated": False}}}
    both = Cell("E.1.1", "T1", "relation: a", "cos", verdict="reproduced", kind="relation", left="One Step")
    bound = Cell("E.1.1", "T1", "relation: b", "cos", verdict="reproduced", kind="relation", left="NTK")
    # The fitted Network's test above the NTK's (not a target): it holds by the choice the fit made.
    above = Cell("E.1.1", "T1", "relation: c", "test", verdict="reproduced", kind="relation", left="One Step")
    above.reference = "NTK"
    constants["targets"].append(["Two Step", "cos"])
    both.reference = "Two Step"  # Two Step's cosine above One Step's: both fitted
    constants["targets"].append(["One Step", "test"])
    mark_calibrated_fits([fitted, missed, other, predicted, both, bound, above], outcomes)
    assert (both.verdict, bound.verdict, above.verdict) == ("by construction", "reproduced", "by construction")
    assert (fitted.verdict, fitted.rules_out) == ("by construction", None)
    assert "calibrated on this cell: the objective 'Table 1' chose" in fitted.reason
    assert [c.verdict for c in (missed, other, predicted)] == ["differs", "reproduced", "reproduced"]
    # A default the objective kept on a tie is no fit, but the table still chose it: ≡, said as what it is.
    kept = Cell("E.1.1", "T1", "One Step", "cos", verdict="reproduced")
    mark_calibrated_fits([kept], {"E.1.1": {"constants": {**constants, "default": True}}})
    assert kept.verdict == "by construction" and "kept its default (kept) on this table's numbers" in kept.reason


def test_a_match_of_a_cell_a_process_choice_was_made_on_its_own_table_to_get_holds_by_construction():
    fitted_here = {"why": "the biases stay fixed, chosen on this table.", "cells": [["Network", "test"]]}
    chosen = Cell("E.1.2", "T2", "Network", "test", verdict="reproduced", rules_out="a threshold")
    missed = Cell("E.1.2", "T2", "Network", "train", verdict="reproduced")  # not among the choice's cells
    elsewhere = Cell("E.2.1", "T3", "Network", "test", verdict="reproduced")  # another table: a prediction
    differs = Cell("E.1.2", "T2", "Network", "test", verdict="differs")  # the choice did not get it: a finding
    outcomes = {"E.1.2": {"constants": {"calibrated": False, "targets": []}}}
    mark_calibrated_fits([chosen, missed, elsewhere, differs], outcomes, {"E.1.2": fitted_here})
    assert (chosen.verdict, chosen.rules_out) == ("by construction", None)
    assert chosen.reason == (
        "fitted on this table: the biases stay fixed, chosen on this table. A match here is the fit, not a prediction."
    )
    assert [c.verdict for c in (missed, elsewhere, differs)] == ["reproduced", "reproduced", "differs"]


def test_a_relation_that_holds_with_a_side_that_holds_by_construction_names_that_side():
    """E.2.1's "Network tests above the NTK": the Network's accuracy at d = 100 is Table 1's fit again."""
    rules = {"by_construction": [
        {"setting": "E.2.1 d=* (T3)", "processes": ["erasing*"], "method": "Network", "metric": "t*", "why": "d-free."},
    ]}  # fmt: skip
    above = {"left": {"method": "Network", "metric": "test"}, "right": {"method": "NTK"}}
    assert side_by_construction(above, rules, "E.2.1 d=100 (T3)", "erasing (shipped)") == (
        "Network's side holds by construction: d-free."
    )
    below = {"left": {"method": "NTK", "metric": "test"}, "right": {"method": "Network"}}  # either side
    assert side_by_construction(below, rules, "E.2.1 d=100 (T3)", "erasing (shipped)").startswith("Network's side")
    assert side_by_construction(above, rules, "E.2.1 d=100 (T3)", "kept, eta1 = 18") is None  # another process
    assert side_by_construction(above, rules, "E.2.2 ratio 0.8 (T4)", "erasing (shipped)") is None  # another table
    baselines = {"left": {"method": "RF", "metric": "test"}, "right": {"method": "NTK"}}
    assert side_by_construction(baselines, rules, "E.2.1 d=100 (T3)", "erasing (shipped)") is None  # measured


def test_a_mean_at_the_trivial_rate_whose_seeds_scatter_is_not_a_failed_fit():
    """RF on weighted imbalanced data: four seeds at 80-85%, one at 69%, mean 80.4 at an 80% trivial rate."""
    scattered = judge(70.4, [80.0, 83.7, 69.0, 84.9, 84.3], "test", "E.2.2", "RF", RULES, trivial=80.2)
    assert scattered["verdict"] == "differs" and scattered["category"] != FAILED_FIT
    constant = judge(70.4, [80.1, 80.3, 79.9, 80.2, 80.4], "test", "E.2.2", "RF", RULES, trivial=80.2)
    assert constant["verdict"] == "differs" and constant["category"] == FAILED_FIT  # every seed at the rate
