"""The step plan: where a batch of several updates must end."""

import pytest

from featlearn.steps import StepPlan


def test_one_update_per_batch_is_always_one():
    plan = StepPlan(1, 100, (lambda s: True,))
    assert [plan.chunk_length(s) for s in (1, 5, 99)] == [1, 1, 1]


def test_chunks_end_at_every_observed_step_and_at_max_steps():
    due = {3, 10}
    plan = StepPlan(4, 12, (lambda s: s in due, lambda s: s % 7 == 0))
    step, chunks = 1, []
    while step <= 12:
        size = plan.chunk_length(step)
        chunks.append(list(range(step, step + size)))
        step += size
    # every observed step (3, 7, 10) and max_steps (12) closes a chunk; no chunk exceeds K = 4
    assert chunks == [[1, 2, 3], [4, 5, 6, 7], [8, 9, 10], [11, 12]]


@pytest.mark.parametrize("max_steps", [None, 5])
def test_without_observers_chunks_have_k_updates_up_to_max_steps(max_steps):
    plan = StepPlan(3, max_steps)
    assert plan.chunk_length(1) == 3
    assert plan.chunk_length(4) == (2 if max_steps == 5 else 3)
