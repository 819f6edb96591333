import pytest
import torch

from featlearn.datamodules import BooleanXOR, SyntheticDataModule


class Shifted(SyntheticDataModule):
    """A user's data model: x ~ N(0, I_d), y = sign(x_0)."""

    def __init__(self, dim: int = 3, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim

    @property
    def input_dim(self):
        return self.dim

    def sample(self, n, generator, device):
        x = torch.randn(n, self.dim, generator=generator, device=device)
        return x, torch.where(x[:, 0] >= 0, 1.0, -1.0)


def test_online_batches_are_pure_functions_of_step():
    dm = Shifted(batch_size=5, seed=2)
    x1, y1 = dm.train_batch(7)
    x2, _ = dm.train_batch(8)
    x1_again, y1_again = dm.train_batch(7)
    assert x1.shape == (1, 5, 3) and y1.shape == (1, 5)
    assert torch.equal(x1, x1_again) and torch.equal(y1, y1_again) and not torch.equal(x1, x2)
    assert not torch.equal(x1, Shifted(batch_size=5, seed=3).train_batch(7)[0])


def test_batch_size_schedule():
    dm = Shifted(batch_size=[{"start": 1, "end": 2, "value": 50}, {"start": 3, "value": 4}])
    assert dm.train_batch(2)[0].shape[1] == 50 and dm.train_batch(3)[0].shape[1] == 4


def test_finite_mode_reuses_the_training_set():
    dm = Shifted(batch_size=4, train_size=10, seed=1)
    x_all, _ = dm.train_set()
    for step in (1, 2, 3):
        x, _ = dm.train_batch(step)
        rows = {tuple(r.tolist()) for r in x_all[0]}
        assert all(tuple(r.tolist()) in rows for r in x[0])
        assert len({tuple(r.tolist()) for r in x[0]}) == 4  # distinct samples
    full = Shifted(batch_size=100, train_size=10).train_batch(1)[0]  # batch >= n: the whole set
    assert full.shape == (1, 10, 3)


def test_val_and_test_sets_are_distinct_and_fixed():
    dm = Shifted(val_size=20, test_size=30, eval_batch_size=7)
    xv, _ = dm.eval_set("val")
    xt, _ = dm.eval_set("test")
    assert xv.shape == (1, 20, 3) and xt.shape == (1, 30, 3)
    assert not torch.equal(xv[:, :20], xt[:, :20])
    chunks = list(dm.test_dataloader())
    assert [c[0].shape[1] for c in chunks] == [7, 7, 7, 7, 2]
    assert torch.equal(torch.cat([c[0] for c in chunks], 1), xt)


def test_sample_contract_is_checked():
    class Broken(Shifted):
        def sample(self, n, generator, device):
            return torch.zeros(n, 2), torch.zeros(n)

    with pytest.raises(ValueError, match=r"must return x of shape \(4, 3\)"):
        Broken(batch_size=4).train_batch(1)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(batch_size=0), "data.batch_size"),
        (dict(batch_size=2.5), "data.batch_size"),
        (dict(train_size=0), "data.train_size"),
        (dict(test_size=-1), "data.test_size"),
        (dict(seed=-3), "data.seed"),
    ],
)
def test_bad_base_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Shifted(**kwargs)


def test_resuming_with_another_data_seed_or_distribution_is_refused():
    dm = BooleanXOR(dim=4, seed=1, pair=(0, 2))
    state = dm.state_dict()["identity"]
    with pytest.raises(ValueError, match="data.init_args.seed: 0"):
        dm.load_state_dict({"identity": {**state, "seed": 0}})
    with pytest.raises(ValueError, match="data.rotation_seed=5 there, 0 here.*data.init_args.rotation_seed: 5"):
        dm.load_state_dict({"identity": {**state, "rotation_seed": 5}})
    dm.load_state_dict({"identity": state})
    dm.load_state_dict({"seed": 1, "dim": 4})  # a checkpoint of the earlier format (keys at top level)
    with pytest.raises(ValueError, match="data.init_args.dim: 5"):
        dm.load_state_dict({"seed": 1, "dim": 5})


class Scaled(SyntheticDataModule):
    """x ~ N(0, s^2 I_3), y = sign(x_0): a user's subclass that declares nothing about resuming."""

    input_dim = 3

    def __init__(self, scale: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.s = scale  # stored under another name than the argument's

    def sample(self, n, generator, device):
        x = self.s * torch.randn(n, 3, generator=generator, device=device)
        return x, torch.where(x[:, 0] >= 0, 1.0, -1.0)


def test_a_subclass_gets_its_own_arguments_checked_at_resume_without_declaring_them():
    saved = Scaled(scale=2.0, train_size=8).state_dict()
    with pytest.raises(ValueError, match=r"data.scale=2.0 there, 3.0 here.*data.init_args.scale: 2.0"):
        Scaled(scale=3.0, train_size=8).load_state_dict(saved)
    with pytest.raises(ValueError, match="data.init_args.train_size: 8"):
        Scaled(scale=2.0, train_size=9).load_state_dict(saved)
    # What changes no sample drawn before the resume may change.
    Scaled(scale=2.0, train_size=8, batch_size=7, val_size=3, ensemble_size=2, eval_batch_size=5).load_state_dict(saved)
    # Defaults count as given: the same data model however it was spelled.
    assert Scaled().identity() == Scaled(scale=1.0, seed=0, train_size=None).identity()
    assert Scaled(2.0).identity()["scale"] == 2.0 and "batch_size" not in Scaled().identity()


def test_a_data_model_built_from_tensors_is_identified_by_their_contents():
    from featlearn.datamodules import LabelledTensors

    x, y = torch.randn(6, 2), torch.arange(6) % 2
    one = LabelledTensors((x, y), (x, y), num_classes=2).identity()
    assert one == LabelledTensors((x.clone(), y.clone()), (x, y), num_classes=2).identity()
    assert one != LabelledTensors((x + 1, y), (x, y), num_classes=2).identity()


def test_finite_batches_say_which_training_rows_they_hold():
    dm = Shifted(
        batch_size=[{"start": 1, "end": 1, "value": 50}, {"start": 2, "value": 4}], train_size=10, ensemble_size=3
    )
    x_all, y_all = dm.train_set()  # (3, 10, 3), (3, 10)
    x, y = batch = dm.train_batch(2)
    rows = batch.rows
    assert rows.inputs is x_all and rows.index.shape == (3, 4)
    for s in range(3):
        assert torch.equal(x[s], x_all[s, rows.index[s]]) and torch.equal(y[s], y_all[s, rows.index[s]])
    full = dm.train_batch(1)  # batch >= n: the whole set, in order
    assert full.rows.inputs is x_all and full.rows.index is None and full[0] is x_all
    assert Shifted(batch_size=4).train_batch(1).rows is None  # online batches are fresh draws
