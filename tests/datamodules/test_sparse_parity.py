"""Barak et al.'s (2022) k-sparse parity: its label, its k = 2 case (Glasgow's XOR) and its rotation."""

import pytest
import torch

from featlearn.callbacks.xor_phase import cluster_points
from featlearn.datamodules import BooleanXOR, SparseParity


def draw(dm, n=256, seed=3):
    return dm.sample(n, torch.Generator().manual_seed(seed), torch.device("cpu"))


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_the_label_is_the_signed_product_of_the_hidden_bits(k):
    support = tuple(range(7 - k, 7))  # the last k bits
    for sign in (1, -1):
        x, y = draw(SparseParity(dim=7, k=k, support=support, sign=sign))
        assert x.shape == (256, 7) and set(x.unique().tolist()) == {-1.0, 1.0}
        torch.testing.assert_close(y, sign * x[:, list(support)].prod(dim=1))


def test_the_default_support_is_the_first_k_bits_and_the_labels_are_balanced():
    dm = SparseParity(dim=10, k=3)
    assert dm.support == (0, 1, 2) and dm.sign == 1 and dm.input_dim == 10
    _, y = draw(dm, n=40000)
    assert y.mean().abs() < 0.03


def test_k_2_is_glasgows_xor_with_the_same_inputs_and_labels_equal_up_to_the_sign():
    xor = BooleanXOR(dim=12, pair=(3, 8), seed=5)
    for sign in (1, -1):
        parity = SparseParity(dim=12, k=2, support=(3, 8), sign=sign, seed=5)
        x_xor, y_xor = draw(xor)
        x, y = draw(parity)
        assert torch.equal(x, x_xor) and torch.equal(y, -sign * y_xor)  # sign = -1: identical
        # Its XOR clusters: mu_1 carries label +1 under either sign, so XORPhaseDiagnostics reads it as XOR's.
        truth = parity.ground_truth()
        points, labels = cluster_points(truth.mu_1, truth.mu_2)
        torch.testing.assert_close(parity.label(points), labels)
    same = SparseParity(dim=12, k=2, support=(3, 8), sign=-1).ground_truth()
    assert torch.equal(same.mu_1, xor.ground_truth().mu_1) and torch.equal(same.mu_2, xor.ground_truth().mu_2)
    # The same for the rotated hypercube: the same rotation and rotated clusters.
    rotated = dict(rotate=True, rotation_seed=2, seed=5)
    x_xor, y_xor = draw(BooleanXOR(dim=12, pair=(3, 8), **rotated))
    x, y = draw(SparseParity(dim=12, k=2, support=(3, 8), sign=-1, **rotated))
    assert torch.equal(x, x_xor) and torch.equal(y, y_xor)


def test_its_ground_truth_is_the_supports_directions_turned_with_the_basis():
    dm = SparseParity(dim=6, k=3, support=(0, 2, 5))
    truth = dm.ground_truth()
    assert truth.support.shape == (3, 6) and truth.mu_1 is None
    assert truth.support.nonzero().tolist() == [[0, 0], [1, 2], [2, 5]]
    turned = SparseParity(dim=6, k=3, support=(0, 2, 5), rotate=True, rotation_seed=1)
    rot = turned.rotation
    torch.testing.assert_close(turned.ground_truth().support, (truth.support.double() @ rot.T).float())
    # A rotated point's label is the parity of R^T x: the product of its k projections on the support.
    x, y = draw(turned)
    projections = x.double() @ turned.ground_truth().support.double().T  # (n, k): R e_i . x = x'_i
    torch.testing.assert_close(projections.prod(dim=1).float(), y, atol=1e-4, rtol=0)
    assert not torch.equal(x[:, [0, 2, 5]].prod(dim=1).sign(), y)  # no longer a product of input coordinates


def test_a_finite_training_set_is_drawn_once_and_online_sampling_has_none():
    dm = SparseParity(dim=8, k=3, train_size=64, test_size=32, batch_size=16, ensemble_size=2)
    dm.setup("fit")
    x, y = dm.train_set()  # (S, n, d), (S, n)
    assert x.shape == (2, 64, 8) and torch.equal(y, x[..., :3].prod(dim=-1))
    assert dm.train_set()[0] is x  # drawn once
    online = SparseParity(dim=8, k=3, test_size=32)
    online.setup("fit")
    with pytest.raises(RuntimeError, match="online sampling"):
        online.train_set()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(k=0), "data.k"),
        (dict(dim=2, k=3), "data.dim .*3 bits or more"),
        (dict(dim=5, k=2, support=(0, 5)), "data.support"),
        (dict(dim=5, k=2, support=(1, 1)), "2 different"),
        (dict(dim=5, k=3, support=(0, 1)), "data.support"),
        (dict(dim=5, k=2, sign=0), "data.sign"),
        (dict(dim=5, k=2, label_noise=0.6), "data.label_noise"),
    ],
)
def test_bad_sparse_parity_arguments_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SparseParity(**kwargs)


def test_label_noise_flips_that_share_of_labels_and_at_one_half_the_labels_carry_nothing():
    clean = SparseParity(dim=12, k=3, batch_size=4000, seed=5)
    noisy = SparseParity(dim=12, k=3, batch_size=4000, seed=5, label_noise=0.2)
    noise = SparseParity(dim=12, k=3, batch_size=4000, seed=5, label_noise=0.5)
    (x0, y0), (x1, y1), (x2, y2) = clean.train_batch(1), noisy.train_batch(1), noise.train_batch(1)
    assert torch.equal(x0, x1) and torch.equal(x0, x2)  # the flips are drawn after the inputs
    flipped = (y0 != y1).double().mean().item()
    assert 0.17 < flipped < 0.23  # 4000 draws: the standard error of 0.2 is 0.006
    # At 0.5 the label agrees with the parity half the time: no signal left to learn.
    assert abs((y0 == y2).double().mean().item() - 0.5) < 0.03
    assert torch.equal(clean.ground_truth().support, noise.ground_truth().support)
