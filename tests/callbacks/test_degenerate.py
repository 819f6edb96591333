from types import SimpleNamespace

import pytest
import torch

from featlearn.callbacks import DegenerateRuns


class FakeLearner:
    """What DegenerateRuns reads of a learner: its public outputs and logged losses."""

    def __init__(self, members, losses):
        self.ensemble_size = members
        self.updates = SimpleNamespace(logged_member_losses=losses, diverged_members={})
        self.device = torch.device("cpu")

    def scores(self, x):
        """The test inputs carry the outputs to return: x (S, b, 1) -> (S, b), or (S, b, C) as they are."""
        return x[..., 0] if x.shape[-1] == 1 else x


def run(outputs, labels, losses=None, **kwargs):
    inputs = outputs.unsqueeze(-1) if outputs.dim() == 2 else outputs
    # What DegenerateRuns may ask of a data model: featlearn.contracts.EvaluationData.
    data = SimpleNamespace(
        eval_set=lambda split: (inputs, labels),
        eval_batch_size=7,
        ensemble_size=outputs.shape[0],
        train_set=None,
        set_size=None,
        ground_truth=None,
        epochs_at=None,
    )
    written = []
    logger = SimpleNamespace(
        experiment=SimpleNamespace(add_text=lambda tag, text, global_step: written.append((tag, text))),
        log_metrics=lambda metrics, step: written.append(metrics),
    )
    trainer = SimpleNamespace(is_global_zero=True, loggers=[logger], global_step=50)
    check = DegenerateRuns(**kwargs)
    check.connect_data(data)
    check.on_train_end(trainer, FakeLearner(outputs.shape[0], losses or {}))
    return check, written


def test_a_member_predicting_one_class_is_flagged_with_its_share():
    labels = torch.tensor([[1.0, -1.0] * 50, [1.0, -1.0] * 50])  # balanced, (2, 100)
    outputs = torch.stack([torch.ones(100), torch.linspace(-1, 1, 100)])  # member 0: always +1
    with pytest.warns(UserWarning, match="1 of 2 run"):
        check, written = run(outputs, labels)
    assert check.degenerate == [True, False]
    assert "predicts one class on 100.0% of the test set (its labels: 50.0%" in check.flags[0][0]
    assert written[0][0] == "degenerate/summary" and written[1] == {"degenerate/members": 1.0}


def test_a_one_sided_test_set_is_not_a_degenerate_run():
    labels = torch.ones(1, 100)
    check, written = run(torch.ones(1, 100), labels)
    assert check.degenerate == [False] and written == []


def test_multiclass_outputs_use_the_arg_max_class():
    labels = torch.arange(100).remainder(4).unsqueeze(0).long()
    logits = torch.zeros(1, 100, 4)
    logits[..., 2] = 1.0  # always class 2
    with pytest.warns(UserWarning):
        check, _ = run(logits, labels)
    assert check.degenerate == [True]


def test_a_loss_that_grew_by_orders_of_magnitude_is_flagged():
    labels = torch.tensor([[1.0, -1.0] * 10] * 2)
    outputs = torch.tensor([[1.0, -1.0] * 10] * 2)
    losses = {10: torch.tensor([1.0, 1.0]), 20: torch.tensor([50.0, 0.5]), 500: torch.tensor([1.2e4, 0.1])}
    with pytest.warns(UserWarning, match="grew from 1 \\(step 10\\) to 1.2e\\+04 \\(step 500\\)"):
        check, _ = run(outputs, labels, losses)
    assert check.degenerate == [True, False]
    check, _ = run(outputs, labels, {10: torch.tensor([1.0, 1.0]), 500: torch.tensor([99.0, 1.0])})
    assert check.degenerate == [False, False]  # below the default factor of 100


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"one_class_fraction": 0.5}, "one_class_fraction"), ({"loss_growth": 1}, "loss_growth")]
)
def test_bad_thresholds_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DegenerateRuns(**kwargs)
