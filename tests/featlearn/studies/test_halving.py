"""Successive halving's arithmetic: the rungs' steps and who goes on."""

import pytest

from featlearn.studies.halving import rung_steps, survivors


@pytest.mark.parametrize(
    ("total", "points", "eta", "steps"),
    [
        (600, 1, 3, [600]),  # one point: the full run
        (600, 2, 3, [600]),  # fewer than eta points: nothing to halve
        (600, 3, 3, [200, 600]),
        (600, 9, 3, [67, 200, 600]),  # ceil(600 / 9) = 67
        (200, 10, 3, [23, 67, 200]),
        (9, 4, 2, [3, 5, 9]),
        (2, 27, 3, [1, 2]),  # rungs closer than one step collapse
    ],
)
def test_rung_steps_are_t_over_powers_of_eta_ending_at_t(total, points, eta, steps):
    assert rung_steps(total, points, eta) == steps


def test_a_nine_point_grid_at_eta_3_trains_a_quarter_of_the_full_grids_steps():
    steps = rung_steps(900, 9, 3)  # [100, 300, 900]
    alive, trained, previous = 9, 0, 0
    for step in steps:
        trained += alive * (step - previous)
        alive, previous = -(-alive // 3), step
    assert trained == 9 * 100 + 3 * 200 + 1 * 600 == 2100  # 2.33 T against the full grid's 9 T


@pytest.mark.parametrize(("total", "points", "eta"), [(600, 9, 1), (0, 9, 3), (600, 0, 3)])
def test_rung_steps_refuses_a_meaningless_search(total, points, eta):
    with pytest.raises(ValueError, match="successive halving needs eta >= 2"):
        rung_steps(total, points, eta)


def test_survivors_are_the_best_third_in_the_grids_order_and_never_a_diverged_point():
    assert survivors([70.0, 90.0, None, 80.0, 60.0], 3, last=False) == [1, 3]  # 4 alive: ceil(4/3) = 2
    assert survivors([None, None, 50.0], 3, last=False) == [2]
    assert survivors([80.0, 90.0], 3, last=True) == []  # the last rung: nobody goes on


def test_a_tie_at_the_cut_keeps_the_earlier_point_as_the_full_grid_would():
    assert survivors([50.0, 50.0, 50.0], 3, last=False) == [0]
    assert survivors([40.0, 50.0, 50.0, 50.0], 2, last=False) == [1, 2]


def test_a_point_within_a_standard_error_of_the_cut_goes_on():
    """E.1.1's NTK at T/3: 1e-3 first (82.70 +- 0.48), 1e-4 second (82.37 +- 0.40), 1e-5 far behind."""
    scores, errors = [82.70, 82.37, 76.02], [0.476, 0.399, 0.623]
    assert survivors(scores, 3, last=False) == [0]  # rank alone drops the rate that is best at T
    assert survivors(scores, 3, last=False, errors=errors) == [0, 1]  # 82.37 >= 82.70 - hypot(0.40, 0.48)
    assert survivors([82.70, 82.00, None], 3, last=False, errors=[0.476, 0.399, None]) == [0]  # 0.70 apart: out
