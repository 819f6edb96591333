import pytest
import torch

from featlearn.callbacks import PartAccuracy
from featlearn.datamodules import TeacherMixture
from featlearn.models import MulticlassClassifier, QuadraticFC


def first_pixel_teacher(x):
    return (x.flatten(1)[:, 3] > 0).long() + 2 * (x.flatten(1)[:, 10] > 0).long()  # 4 classes of 10


def brute_force(model, x, y, members):
    """Mean over ``members`` of the fraction of inputs whose arg-max class is the label."""
    logits = model.scores(x)  # (S, n, C)
    return torch.stack([(logits[s].argmax(-1) == y[s]).double().mean() for s in members]).mean().item()


def test_the_part_accuracies_are_the_members_arg_max_accuracies_on_each_part(fit):
    data = TeacherMixture(
        source="digits", train_size=300, test_size=80, alpha=0.5, ensemble_size=3, reference_members=1, batch_size=32
    )
    data.relabel(first_pixel_teacher)
    model = MulticlassClassifier(QuadraticFC(64, 6, 10), num_classes=10, lr=0.01, ensemble_size=3, seed=0)
    callback = PartAccuracy(cadence=5)
    fit(model, data, 10, callbacks=[callback])
    assert [row["step"] for row in callback.history] == [0, 5, 10]
    last = callback.history[-1]
    parts = data.part_sets("test")
    mixture = data.eval_set("test")
    assert last["parts/original"] == pytest.approx(brute_force(model, *parts["original"], [0, 1]), abs=1e-6)
    assert last["parts/injected"] == pytest.approx(brute_force(model, *parts["injected"], [0, 1]), abs=1e-6)
    assert last["parts/mixture"] == pytest.approx(brute_force(model, *mixture, [0, 1]), abs=1e-6)
    assert last["parts/reference"] == pytest.approx(brute_force(model, *parts["original"], [2]), abs=1e-6)
    # per member, in percent, what a study reads (compare's part_* metrics); None for the reference member
    results = callback.member_results()
    for s in (0, 1):
        original = 100 * brute_force(model, *parts["original"], [s])
        injected = 100 * brute_force(model, *parts["injected"], [s])
        assert results["part_original"][s] == pytest.approx(original, abs=1e-4)
        assert results["part_injected"][s] == pytest.approx(injected, abs=1e-4)
        assert results["part_gap"][s] == pytest.approx(original - injected, abs=1e-4)
    assert results["part_original"][2] is None and results["part_gap"][2] is None


def test_without_reference_members_there_is_no_reference_curve(fit):
    data = TeacherMixture(source="digits", train_size=100, test_size=20, batch_size=16)
    data.relabel(first_pixel_teacher)
    callback = PartAccuracy(cadence=2)
    fit(MulticlassClassifier(QuadraticFC(64, 3, 10), num_classes=10, lr=0.01), data, 2, callbacks=[callback])
    assert "parts/reference" not in callback.history[-1] and "parts/injected" in callback.history[-1]


def test_the_callback_refuses_a_data_model_without_parts(fit):
    from featlearn.datamodules import LabelledTensors

    x, y = torch.randn(20, 4), torch.arange(20) % 2
    data = LabelledTensors((x, y), (x, y), num_classes=2, batch_size=4)
    with pytest.raises(
        TypeError,
        match="PartAccuracy needs a data model that is a featlearn.contracts.PartedData.*"
        "LabelledTensors lacks part_sets, member_groups.*TeacherMixture",
    ):
        fit(MulticlassClassifier(QuadraticFC(4, 2, 2), num_classes=2, lr=0.1), data, 1, callbacks=[PartAccuracy()])


def test_a_student_on_a_mixture_resumes_exactly_and_refuses_another_alpha(fit, tmp_path):
    from featlearn.callbacks import StepCheckpoint

    def make(alpha=0.5):
        data = TeacherMixture(
            source="digits",
            train_size=200,
            test_size=40,
            alpha=alpha,
            batch_size=16,
            ensemble_size=2,
            reference_members=1,
            seed=3,
        )
        data.relabel(first_pixel_teacher)
        model = MulticlassClassifier(
            QuadraticFC(64, 4, 10), num_classes=10, lr=0.01, momentum=0.9, ensemble_size=2, seed=1
        )
        return model, data

    full, data = make()
    fit(full, data, 6)
    first, data = make()
    fit(first, data, 3, enable_checkpointing=True, callbacks=[StepCheckpoint(dirpath=tmp_path, every_n_train_steps=3)])
    resumed, data = make()
    fit(resumed, data, 6, ckpt_path=str(tmp_path / "epoch=0-step=3.ckpt"))
    for a, b in zip(resumed.parameters(), full.parameters(), strict=True):
        assert torch.equal(a, b)
    other, data = make(alpha=0.25)
    with pytest.raises(ValueError, match="data.alpha"):
        fit(other, data, 6, ckpt_path=str(tmp_path / "epoch=0-step=3.ckpt"))
