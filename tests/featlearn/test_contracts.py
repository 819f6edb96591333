"""featlearn.contracts and featlearn.wiring: the declared seams between data models, learners and observers."""

import ast

import pytest
import pytorch_lightning as pl
import torch

from featlearn.callbacks import FeatureAlignment, HeldOutAccuracy, XORPhaseDiagnostics
from featlearn.contracts import (
    ClassData,
    ClassPredictor,
    EvaluationData,
    GroundTruth,
    Learner,
    PartedData,
    ProbeData,
    Relabelable,
    missing_members,
    protocol_members,
    require,
)
from featlearn.datamodules import (
    BooleanXOR,
    GaussianMixture,
    HiddenRepresentation,
    ImageDataModule,
    LabelledTensors,
    SparseCoding,
    TeacherMixture,
)
from featlearn.models import (
    LinearizedTwoLayerNet,
    ModuleClassifier,
    MulticlassClassifier,
    QuadraticFC,
    SteppedFeatureProbe,
    TwoLayerNet,
)

from ..conftest import REPO, grouped  # noqa: TID252


# ---------------------------------------------------------------------------- GroundTruth
def test_ground_truth_refuses_half_a_pair_mixed_dimensions_and_miscounted_labels():
    with pytest.raises(ValueError, match="GroundTruth.mu_1 needs GroundTruth.mu_2"):
        GroundTruth(mu_1=torch.ones(4))
    with pytest.raises(ValueError, match="GroundTruth.relevant needs GroundTruth.dictionary"):
        GroundTruth(relevant=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="share the input dimension"):
        GroundTruth(feature=torch.ones(4), centres=torch.ones(2, 5), centre_labels=torch.ones(2))
    with pytest.raises(ValueError, match="one label per row of GroundTruth.class_means"):
        GroundTruth(class_means=torch.ones(2, 4), class_mean_labels=torch.ones(3))
    with pytest.raises(TypeError, match="GroundTruth.feature must be a tensor"):
        GroundTruth(feature=[1.0, 0.0])
    GroundTruth(dictionary=torch.eye(3))  # a dictionary alone is fine


def test_ground_truth_moves_floats_and_keeps_indices_integral():
    truth = GroundTruth(feature=torch.ones(3), dictionary=torch.eye(3), relevant=torch.tensor([0, 2]))
    moved = truth.to("cpu", torch.float64)
    assert moved.feature.dtype == torch.float64 and moved.relevant.dtype == torch.long
    assert moved.present() == ["feature", "dictionary", "relevant"]


def test_a_reader_names_the_fields_it_lacks_and_what_the_data_model_gives():
    truth = GroundTruth(feature=torch.ones(3))
    truth.require(("feature", "centres"), "FeatureAlignment", "Mine", any_of=True)
    with pytest.raises(
        ValueError,
        match=r"XORPhaseDiagnostics reads GroundTruth.mu_1 and mu_2.*Mine.ground_truth\(\) "
        r"sets feature\. Return a featlearn.contracts.GroundTruth with mu_1 and mu_2",
    ):
        truth.require(("mu_1", "mu_2"), "XORPhaseDiagnostics", "Mine")


SHIPPED_DATA = [
    lambda: BooleanXOR(dim=6),
    lambda: SparseCoding(d=12, D=6, k=3),
    lambda: HiddenRepresentation(d=16, D=8, k=7),
    lambda: GaussianMixture(d=8, k=2),
    lambda: ImageDataModule(source="digits", classes=[0, 1]),
    lambda: TeacherMixture(source="digits", train_size=100, test_size=50),
    lambda: LabelledTensors((torch.randn(4, 2), torch.arange(4) % 2), (torch.randn(4, 2), torch.arange(4) % 2)),
]


@pytest.mark.parametrize("make", SHIPPED_DATA, ids=lambda m: m.__code__.co_names[0])
def test_every_shipped_data_model_offers_the_evaluation_contract_and_a_typed_ground_truth(make):
    data = make()
    assert missing_members(data, EvaluationData) == [] and isinstance(data, EvaluationData)
    assert isinstance(data.ground_truth(), GroundTruth)


def test_the_capabilities_of_the_shipped_parts_are_what_their_readers_check():
    mixture = TeacherMixture(source="digits", train_size=100, test_size=50)
    assert isinstance(mixture, Relabelable) and isinstance(mixture, PartedData) and isinstance(mixture, ClassData)
    assert not isinstance(BooleanXOR(dim=4), Relabelable) and isinstance(BooleanXOR(dim=4), ProbeData)
    learners = [
        TwoLayerNet(4, **grouped(4, lr=0.1, seed=0)),
        LinearizedTwoLayerNet(4, **grouped(4, lr=0.1, seed=0)),
        SteppedFeatureProbe(4, **grouped(4, lr=0.1, seed=0)),
        ModuleClassifier(QuadraticFC(4, 2, 1), lr=0.1, seed=0),
        MulticlassClassifier(QuadraticFC(4, 2, 3), num_classes=3, lr=0.1, seed=0),
    ]
    assert all(isinstance(learner, Learner) for learner in learners)
    assert [isinstance(learner, ClassPredictor) for learner in learners] == [False] * 4 + [True]


def test_require_names_the_missing_members_the_class_and_the_protocol():
    with pytest.raises(
        TypeError,
        match=r"PartAccuracy needs a data model that is a featlearn.contracts.PartedData "
        r"\(part_sets, member_groups, num_classes\); BooleanXOR lacks part_sets, member_groups, "
        r"num_classes",
    ):
        require(BooleanXOR(dim=4), PartedData, "PartAccuracy")
    with pytest.raises(TypeError, match="HeldOutAccuracy needs a data model, and this run has none"):
        require(None, EvaluationData, "HeldOutAccuracy")
    assert protocol_members(ClassPredictor) == ["predict_classes"]


# ---------------------------------------------------------------------------- wiring
def test_a_plain_trainer_hands_the_data_model_to_the_learner_and_every_observer(tmp_path):
    data = BooleanXOR(dim=6, batch_size=16, test_size=64, val_size=0)
    model = TwoLayerNet(6, **grouped(8, lr=0.1, seed=0))
    observers = [XORPhaseDiagnostics(cadence=2), HeldOutAccuracy(cadence=2)]
    trainer = pl.Trainer(
        max_steps=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        callbacks=list(observers),
        default_root_dir=tmp_path,
        limit_val_batches=0,
    )
    trainer.fit(model, data)
    assert model.data_model is data and all(o.data_model is data for o in observers)
    assert observers[1].history[-1]["step"] == 2


def test_the_run_places_its_data_model_which_draws_on_the_cpu_from_step_zero_until_placed(tmp_path):
    from featlearn.contracts import PlacedData, Placement
    from featlearn.steps import StepPlan

    data = BooleanXOR(dim=6, batch_size=4, test_size=16, val_size=0)
    assert isinstance(data, PlacedData) and data.placement == Placement()  # CPU, one process, step 0
    by_hand = next(iter(data.train_dataloader()))  # a stream no run placed starts at step 1
    assert torch.equal(by_hand[0], data.train_batch(1)[0])
    counter = [5]
    data.place(Placement(max_steps=9, updates_done=lambda: counter[0]))
    stream = iter(data.train_dataloader())
    counter[0] = 7  # the counter is read when the stream starts (after a resume restored the step), not when placed
    assert torch.equal(next(stream)[0], data.train_batch(8)[0])

    model = TwoLayerNet(6, **grouped(8, lr=0.1, seed=0))
    trainer = pl.Trainer(
        max_steps=3, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        default_root_dir=tmp_path, limit_val_batches=0,
    )  # fmt: skip
    trainer.fit(model, data)
    placed = data.placement
    assert (placed.device, placed.rank, placed.world_size, placed.max_steps) == (torch.device("cpu"), 0, 1, 3)
    assert isinstance(placed.plan, StepPlan) and placed.updates_done() == 3  # the run's own counter


def test_a_run_without_a_data_model_tells_the_observer_that_needs_one(tmp_path):
    model = TwoLayerNet(6, **grouped(8, lr=0.1, seed=0))
    loader = torch.utils.data.DataLoader([(torch.ones(1, 4, 6), torch.ones(1, 4))], batch_size=None)
    trainer = pl.Trainer(
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        callbacks=[FeatureAlignment()],
        default_root_dir=tmp_path,
    )
    with pytest.raises(TypeError, match="FeatureAlignment needs a data model, and this run has none"):
        trainer.fit(model, train_dataloaders=loader)


def test_a_user_data_model_without_a_needed_field_is_refused_before_the_first_step(fit):
    from featlearn.datamodules import SyntheticDataModule

    class Plain(SyntheticDataModule):
        input_dim = 4

        def sample(self, n, generator, device):
            x = torch.randn(n, 4, generator=generator, device=device)
            return x, torch.where(x[:, 0] >= 0, 1.0, -1.0)

    with pytest.raises(
        ValueError,
        match=r"FeatureAlignment reads GroundTruth.feature or centres or class_means.*"
        r"Plain.ground_truth\(\) sets no field",
    ):
        fit(TwoLayerNet(4, **grouped(4, lr=0.1, seed=0)), Plain(batch_size=8), 2, callbacks=[FeatureAlignment()])


# ---------------------------------------------------------------------------- reach-ins
def reach_ins(folder):
    """Attribute-level reach-ins in a part's files: trainer.datamodule / .lightning_module, another object's _names.

    A data model reads no trainer at all: the run is handed to it (featlearn.contracts.Placement).
    """
    found = []
    for path in sorted((REPO / folder).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value
            on_trainer = (isinstance(owner, ast.Name) and owner.id == "trainer") or (
                isinstance(owner, ast.Attribute) and owner.attr == "trainer"
            )
            if node.attr in ("datamodule", "lightning_module") and on_trainer:
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
            if folder == "datamodules" and node.attr == "trainer":  # the run is handed to it (Placement)
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            if private and not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("folder", ["datamodules", "models", "callbacks"])
def test_no_data_model_learner_or_observer_reaches_into_the_trainer_or_anothers_private_names(folder):
    assert reach_ins(folder) == []


def test_the_reach_in_check_can_fail(tmp_path, monkeypatch):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.py").write_text("def f(trainer, model):\n    return trainer.datamodule, model._groups\n")
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    assert reach_ins("bad") == ["x.py:2 trainer.datamodule", "x.py:2 model._groups"]
    (tmp_path / "datamodules").mkdir()
    (tmp_path / "datamodules" / "d.py").write_text("def f(self):\n    return self.trainer.global_step\n")
    assert reach_ins("datamodules") == ["d.py:2 self.trainer"]
