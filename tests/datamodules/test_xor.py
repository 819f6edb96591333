import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from featlearn.datamodules import BooleanXOR


@settings(max_examples=25, deadline=None)
@given(dim=st.integers(2, 12), data=st.data())
def test_label_rule_and_hypercube(dim, data):
    i, j = data.draw(st.lists(st.integers(0, dim - 1), min_size=2, max_size=2, unique=True))
    dm = BooleanXOR(dim=dim, pair=(i, j))
    x, y = dm.sample(64, torch.Generator().manual_seed(0), torch.device("cpu"))
    assert x.shape == (64, dim) and set(x.unique().tolist()) <= {-1.0, 1.0}
    torch.testing.assert_close(y, -x[:, i] * x[:, j])


def test_uniform_and_balanced():
    x, y = BooleanXOR(dim=6).sample(40000, torch.Generator().manual_seed(1), torch.device("cpu"))
    assert x.mean().abs() < 0.02 and y.mean().abs() < 0.03


def test_ground_truth_clusters_carry_the_labels():
    dm = BooleanXOR(dim=5, pair=(1, 3))
    mu = dm.ground_truth()
    assert mu.mu_1.tolist() == [0, 1, 0, -1, 0] and mu.mu_2.tolist() == [0, 1, 0, 1, 0]
    # y = -x_i x_j: +1 on +-mu_1, -1 on +-mu_2
    assert -mu.mu_1[1] * mu.mu_1[3] == 1 and -mu.mu_2[1] * mu.mu_2[3] == -1


def test_rotation_is_orthogonal_and_rotates_everything():
    dm = BooleanXOR(dim=6, rotate=True, rotation_seed=4)
    rot = dm.rotation
    torch.testing.assert_close(rot @ rot.T, torch.eye(6, dtype=torch.float64))
    plain = BooleanXOR(dim=6)
    gen = lambda: torch.Generator().manual_seed(9)  # noqa: E731
    x_rot, y_rot = dm.sample(50, gen(), torch.device("cpu"))
    x, y = plain.sample(50, gen(), torch.device("cpu"))
    torch.testing.assert_close(x_rot, x @ rot.T.float())
    assert torch.equal(y_rot, y)
    torch.testing.assert_close(dm.ground_truth().mu_1, (rot @ plain.ground_truth().mu_1.double()).float())


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(dim=1), "data.dim"),
        (dict(dim=4, pair=(0, 4)), "data.pair"),
        (dict(dim=4, pair=(2, 2)), "two different"),
        (dict(dim=4, pair=(0, 1, 2)), "data.pair"),
    ],
)
def test_bad_xor_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BooleanXOR(**kwargs)
