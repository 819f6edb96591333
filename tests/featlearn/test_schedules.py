import math

import pytest

from featlearn.schedules import Schedule, canonical_segments, hold_from, map_arguments, set_at_step, skip_steps


def test_constant():
    s = Schedule(0.5, "model.lr")
    assert s.is_constant and s(1) == 0.5 and s(10**6) == 0.5
    assert s.last_step is None


def test_piecewise_steps_one_two_then_rest():
    s = Schedule(
        [{"start": 1, "end": 1, "value": 1e-3}, {"start": 2, "end": 2, "value": 1.0}, {"start": 3, "value": 0.01}],
        "model.lr",
    )
    assert [s(t) for t in (1, 2, 3, 4, 1000)] == [1e-3, 1.0, 0.01, 0.01, 0.01]
    # Going back in steps (as a resumed or re-queried run does) still works.
    assert s(1) == 1e-3


@pytest.mark.parametrize(
    "decay,expected_mid",
    [("linear", 0.55), ("cosine", 0.55), ("exponential", math.sqrt(1.0 * 0.1))],
)
def test_decays_hit_both_ends_and_midpoint(decay, expected_mid):
    s = Schedule([{"start": 1, "end": 101, "value": 1.0, "end_value": 0.1, "decay": decay}], "x")
    assert s(1) == pytest.approx(1.0)
    assert s(101) == pytest.approx(0.1)
    assert s(51) == pytest.approx(expected_mid)


def test_linear_is_default_decay_when_end_value_given():
    s = Schedule([{"start": 1, "end": 3, "value": 3.0, "end_value": 1.0}], "x")
    assert [s(t) for t in (1, 2, 3)] == [3.0, 2.0, 1.0]


@pytest.mark.parametrize(
    "spec,match",
    [
        ([{"start": 2, "value": 1.0}], "gap before step 1"),
        ([{"start": 1, "end": 2, "value": 1.0}, {"start": 4, "value": 1.0}], "gap before step 3"),
        ([{"start": 1, "end": 3, "value": 1.0}, {"start": 3, "value": 1.0}], "overlap at step 3"),
        ([{"start": 1, "value": 1.0}, {"start": 5, "value": 1.0}], "only the last segment may be open"),
        ([{"start": 1, "value": -1.0}], "must be >= 0"),
        (-0.1, "must be >= 0"),
        ([{"start": 1, "end": 0, "value": 1.0}], "end must be an integer >= start"),
        ([{"start": 1, "value": 1.0, "lr": 2}], "unknown keys"),
        ([{"start": 1}], "no `value`"),
        ([], "empty"),
        ("fast", "must be a number or a list"),
        ([{"start": 1, "value": 1.0, "end_value": 0.5, "decay": "linear"}], "needs an `end`"),
        ([{"start": 1, "end": 5, "value": 1.0, "decay": "wiggly", "end_value": 1}], "decay must be one of"),
        (float("nan"), "finite"),
        (None, "missing"),
    ],
)
def test_bad_specs_name_the_parameter(spec, match):
    with pytest.raises(ValueError, match=match) as err:
        Schedule(spec, "model.lr")
    assert "model.lr" in str(err.value)


def test_integer_schedules_reject_fractions_and_decays():
    with pytest.raises(ValueError, match="integer"):
        Schedule(10.5, "data.batch_size", integer=True, positive=True)
    with pytest.raises(ValueError, match="> 0"):
        Schedule(0, "data.batch_size", integer=True, positive=True)
    with pytest.raises(ValueError, match="constant segments only"):
        Schedule([{"start": 1, "end": 5, "value": 10, "end_value": 2}], "data.batch_size", integer=True)
    s = Schedule([{"start": 1, "end": 2, "value": 50000}, {"start": 3, "value": 1000}], "data.batch_size", integer=True)
    assert s(2) == 50000 and s(3) == 1000 and isinstance(s(3), int)


def test_coverage_check():
    s = Schedule([{"start": 1, "end": 600, "value": 1.0}], "model.lr")
    s.check_covers(600)
    with pytest.raises(ValueError, match="covers steps 1..600 but trainer.max_steps is 1000"):
        s.check_covers(1000)
    with pytest.raises(ValueError, match="omit `end`"):
        s.check_covers(-1)
    Schedule(0.1, "model.lr").check_covers(-1)


@pytest.mark.parametrize(
    "spec, step, expected",
    [
        (0.0, 5, math.inf),
        (0.1, 5, 4),
        ([{"start": 1, "end": 2, "value": 1.0}, {"start": 3, "value": 0.0}], 3, math.inf),
        ([{"start": 1, "end": 2, "value": 1.0}, {"start": 3, "value": 0.0}], 2, 1),
        (
            [{"start": 1, "end": 4, "value": 0.0}, {"start": 5, "end": 9, "value": 0.0}, {"start": 10, "value": 1.0}],
            2,
            9,
        ),
        (
            [
                {"start": 1, "end": 4, "value": 0.0},
                {"start": 5, "value": 1.0, "end_value": 0.0, "end": 8, "decay": "linear"},
                {"start": 9, "value": 0.0},
            ],
            1,
            4,
        ),
        (
            [{"start": 1, "end": 4, "value": 1.0, "end_value": 0.0, "decay": "linear"}, {"start": 5, "value": 0.0}],
            4,
            math.inf,
        ),  # 0 at the end of a decaying segment, then 0 throughout
        ([{"start": 1, "end": 6, "value": 0.0}], 3, 6),
        (
            [
                {"start": 1, "end": 2, "value": 0.0},
                {"start": 3, "end": 5, "value": 0.0, "end_value": 1.0, "decay": "linear"},
                {"start": 6, "value": 1.0},
            ],
            1,
            3,
        ),  # a segment rising from 0
    ],
)
def test_zero_through_finds_the_end_of_the_run_of_zeros(spec, step, expected):
    assert Schedule(spec, "model.lr").zero_through(step) == expected


PROCESS = [{"start": 1, "end": 1, "value": 1e-3}, {"start": 2, "end": 2, "value": 1.0}, {"start": 3, "value": 1000.0}]


@pytest.mark.parametrize(
    "spec, steps, expected",
    [
        (PROCESS, [2], [{"start": 1, "end": 1, "value": 1e-3}, {"start": 2, "value": 1000.0}]),
        (3.0, [2], 3.0),  # a constant has no steps to lose
        (PROCESS, [], PROCESS),
        (  # null placeholders are kept for the CLI to fill; a segment loses its skipped steps
            [{"start": 1, "end": 2, "value": None}, {"start": 3, "value": 0.0}],
            [2],
            [{"start": 1, "end": 1, "value": None}, {"start": 2, "value": 0.0}],
        ),
        (
            [{"start": 1, "end": 5, "value": 1}, {"start": 6, "value": 0.0}],
            [1, 5],
            [{"start": 1, "end": 3, "value": 1}, {"start": 4, "value": 0.0}],
        ),
        ([{"value": 2.0, "end": 3}, {"value": 0.5}], [1, 2, 3], [{"start": 1, "value": 0.5}]),
    ],
)
def test_skip_steps_takes_steps_out_and_moves_the_rest_down(spec, steps, expected):
    skipped = skip_steps(spec, steps, "model.lr")
    assert skipped == expected
    if isinstance(spec, list) and None not in [s["value"] for s in spec]:
        original, short = Schedule(spec, "a"), Schedule(skipped, "b")
        kept = [t for t in range(1, 12) if t not in steps]
        assert [short(t) for t in range(1, len(kept) + 1)] == [original(t) for t in kept]


def test_skip_steps_refuses_to_cut_a_ramp_and_bad_steps():
    ramp = [{"start": 1, "end": 4, "value": 1.0, "end_value": 0.0, "decay": "linear"}, {"start": 5, "value": 0.0}]
    with pytest.raises(ValueError, match="inside the decaying segment"):
        skip_steps(ramp, [2], "model.lr")
    assert skip_steps(ramp, [5], "model.lr")[0] == ramp[0]
    with pytest.raises(ValueError, match=">= 1"):
        skip_steps(PROCESS, [0], "model.lr")


def test_hold_from_keeps_the_start_and_holds_a_value_after():
    held = hold_from(PROCESS, 3, 0.0, "model.lr_w")
    assert [Schedule(held, "x")(t) for t in (1, 2, 3, 50)] == [1e-3, 1.0, 0.0, 0.0]
    assert hold_from(PROCESS, 2, 0.0, "x") == [{"start": 1, "end": 1, "value": 1e-3}, {"start": 2, "value": 0.0}]
    assert hold_from(0.5, 3, 0.0, "x") == [{"start": 1, "end": 2, "value": 0.5}, {"start": 3, "value": 0.0}]
    assert hold_from(PROCESS, 1, 0.0, "x") == 0.0
    assert PROCESS[2] == {"start": 3, "value": 1000.0}  # the input is not edited
    ramp = [{"start": 1, "end": 4, "value": 1.0, "end_value": 0.0, "decay": "linear"}, {"start": 5, "value": 0.0}]
    with pytest.raises(ValueError, match="split it at step 3"):
        hold_from(ramp, 3, 0.0, "model.lr_w")
    with pytest.raises(ValueError, match="integer >= 1"):
        hold_from(PROCESS, 0, 0.0, "model.lr_w")


def test_set_at_step_changes_that_step_alone():
    for step, value in ((1, 15.0), (2, 7.0), (3, 2.0), (9, 2.0)):
        changed = set_at_step(PROCESS, step, value, "model.lr_w")
        for t in (1, 2, 3, 4, 9, 50):
            assert Schedule(changed, "x")(t) == (value if t == step else Schedule(PROCESS, "x")(t)), (step, t)
    # E.1.2's biases, frozen from step 2, keep that under a step-1 rate; a number becomes a schedule.
    frozen = [{"start": 1, "end": 1, "value": 1e-3}, {"start": 2, "value": 0.0}]
    assert canonical_segments(set_at_step(frozen, 1, 1e-3, "x")) == frozen
    assert set_at_step(0.5, 2, 0.0, "x") == [
        {"start": 1, "end": 1, "value": 0.5},
        {"start": 2, "end": 2, "value": 0.0},
        {"start": 3, "value": 0.5},
    ]
    assert PROCESS[0] == {"start": 1, "end": 1, "value": 1e-3}  # the input is not edited
    ramp = [{"start": 1, "end": 4, "value": 1.0, "end_value": 0.0, "decay": "linear"}, {"start": 5, "value": 0.0}]
    with pytest.raises(ValueError, match="cannot set step 2 inside the decaying segment"):
        set_at_step(ramp, 2, 0.0, "model.lr_w")
    assert Schedule(set_at_step(ramp, 5, 3.0, "x"), "x")(5) == 3.0
    with pytest.raises(ValueError, match="integer >= 1"):
        set_at_step(PROCESS, 0, 0.0, "model.lr_w")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (  # Two Step's lr_b: hold_from(3) cut the open segment of 0 that started at step 2
            [{"start": 1, "end": 1, "value": 1e-3}, {"start": 2, "value": 0.0}],
            [{"start": 1, "end": 1, "value": 1e-3}, {"start": 2, "end": 2, "value": 0.0}, {"start": 3, "value": 0.0}],
        ),
        (0.5, [{"start": 1, "end": 4, "value": 0.5}, {"start": 5, "value": 0.5}]),
        (
            [{"value": None, "end": 2}, {"value": 1.0}],
            [{"start": 1, "end": 2, "value": None}, {"start": 3, "value": 1.0}],
        ),
    ],
)
def test_canonical_segments_makes_one_schedule_written_two_ways_equal(first, second):
    assert canonical_segments(first) == canonical_segments(second)
    if None not in [s["value"] for s in second]:
        canonical = canonical_segments(second)
        assert [Schedule(canonical, "a")(t) for t in range(1, 9)] == [Schedule(second, "b")(t) for t in range(1, 9)]


def test_canonical_segments_keeps_what_differs():
    ramp = [{"start": 1, "end": 4, "value": 1.0, "end_value": 0.0, "decay": "linear"}, {"start": 5, "value": 0.0}]
    assert canonical_segments(ramp) == ramp  # a ramp ending where a constant 0 starts is not merged
    gap = [{"start": 1, "end": 2, "value": 1.0}, {"start": 3, "end": 3, "value": 0.0}, {"start": 4, "value": 1.0}]
    assert canonical_segments(gap) == gap
    assert canonical_segments(PROCESS) == PROCESS
    split = [{"start": 1, "end": 2, "value": 0.5}, {"start": 3, "value": 0.5}]
    assert canonical_segments(split) == 0.5
    assert split[0] == {"start": 1, "end": 2, "value": 0.5}  # the input is not edited


def test_map_arguments_enters_groups_but_hands_a_grid_and_a_nested_class_over_whole():
    network = {"class_path": "QuadraticFC", "init_args": {"width": 4}}
    args = {"loss": "hinge", "training": {"lr_w": 0.1}, "member_values": {"lr_a": [1.0, 2.0]}, "network": network}
    seen = []
    map_arguments(args, "model.init_args", lambda value, name: seen.append(name) or value)
    assert seen == [
        "model.init_args.loss",
        "model.init_args.training.lr_w",
        "model.init_args.member_values",
        "model.init_args.network",
    ]
