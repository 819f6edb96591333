import numpy as np
import pytest
import torch
from PIL import Image

from featlearn.datamodules import LabelledTensors, TeacherMixture
from featlearn.datamodules.sources import to_image_shape
from featlearn.datamodules.teacher_mixture import INJECTED, ORIGINAL


def by_sum(x):
    """A deterministic 'teacher': the class is the first pixel value's bucket (0..9)."""
    return (x.flatten(1)[:, 0].abs() * 7).long().clamp(0, 9)


def digits_mixture(**kwargs):
    options = dict(source="digits", alpha=0.25, train_size=400, test_size=100)
    options.update(kwargs)
    return TeacherMixture(**options)


def test_the_mixture_takes_alpha_of_its_inputs_from_the_injected_source():
    data = digits_mixture()
    data.relabel(by_sum)
    x, y = data.train_set()
    assert x.shape == (1, 400, 64) and y.shape == (1, 400) and y.dtype == torch.long
    assert data.part_sizes("train") == (300, 100) and data.part_sizes("test") == (75, 25)
    origins = data.origins("train")
    assert (origins[:300] == ORIGINAL).all() and (origins[300:] == INJECTED).all()
    teacher = data.teacher_data()
    assert torch.equal(x[0, :300], teacher["train_x"][:300])  # L's rows first ...
    assert torch.equal(x[0, 300:], teacher["unlabelled"][:100])  # ... then the first of U's pool
    assert torch.equal(y[0], by_sum(x[0]))  # every label is the teacher's


def test_the_teachers_data_does_not_depend_on_alpha_or_the_reference_members():
    a, b = digits_mixture(alpha=0.1), digits_mixture(alpha=0.9, reference_members=1, ensemble_size=2)
    assert a.teacher_data_key() == b.teacher_data_key()
    for key, value in a.teacher_data().items():
        assert torch.equal(value, b.teacher_data()[key])
    assert digits_mixture(split_seed=1).teacher_data_key() != a.teacher_data_key()


def test_reference_members_train_on_the_original_part_alone():
    data = digits_mixture(alpha=0.5, ensemble_size=3, reference_members=1)
    data.relabel(by_sum)
    x, y = data.train_set()
    assert data.member_groups() == {"mixture": [0, 1], "reference": [2]}
    assert torch.equal(x[0], x[1]) and torch.equal(x[2], data.teacher_data()["train_x"])
    assert not torch.equal(x[0], x[2])
    parts = data.part_sets("test")
    assert parts["original"][0].shape == (3, 100, 64) and parts["injected"][0].shape == (3, 100, 64)


def test_isotropic_gaussians_have_the_pixel_mean_and_average_variance_of_the_data():
    data = digits_mixture(standardize="none", train_size=1000)
    teacher = data.teacher_data()
    real, fake = teacher["train_x"].double(), teacher["unlabelled"].double()
    assert torch.allclose(fake.mean(0), real.mean(0), atol=4 * real.std(0).max().item() / 1000**0.5)
    assert fake.var(0).mean().item() == pytest.approx(real.var(0).mean().item(), rel=0.1)
    centred = fake - fake.mean(0)
    cov = centred.T @ centred / (fake.shape[0] - 1)
    off_diagonal = cov - torch.diag(torch.diag(cov))
    assert off_diagonal.abs().max() < 0.3 * torch.diag(cov).mean()  # no structure across pixels


def test_matched_gaussians_have_the_datas_covariance():
    data = digits_mixture(standardize="none", train_size=1000, gaussian_covariance="matched")
    teacher = data.teacher_data()
    real, fake = teacher["train_x"].double(), teacher["unlabelled"].double()

    def cov(x):
        c = x - x.mean(0)
        return c.T @ c / (x.shape[0] - 1)

    assert (cov(fake) - cov(real)).norm() < 0.2 * cov(real).norm()


def test_injected_natural_patches_and_image_folders_take_the_datas_shape(tmp_path):
    patches = digits_mixture(injected="natural_patches", patch_size=32, standardize="none")
    u, real = patches.teacher_data()["unlabelled"], patches.teacher_data()["train_x"]
    assert u.shape == (400, 64) and u.std() > 0.01
    # normalised to the digits' pixel statistics (the training pool's mean and spread)
    assert u.mean().item() == pytest.approx(real.mean().item(), abs=0.02)
    assert u.std().item() == pytest.approx(real.std().item(), rel=0.05)
    rng = np.random.default_rng(0)
    for cls in ("a", "b"):
        (tmp_path / "folder" / cls).mkdir(parents=True)
        for i in range(3):
            pixels = rng.integers(0, 256, (20 + i, 17, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(tmp_path / "folder" / cls / f"{i}.png")
    folder = digits_mixture(injected="image_folder", injected_root=str(tmp_path / "folder"), flatten=False)
    assert folder.teacher_data()["unlabelled"].shape == (400, 1, 8, 8)
    with pytest.raises(FileNotFoundError, match="injected_root"):
        digits_mixture(injected="image_folder", injected_root=str(tmp_path / "nowhere")).teacher_data()


def test_channels_that_do_not_convert_are_refused_by_name():
    with pytest.raises(ValueError, match="2 channels"):
        to_image_shape(torch.zeros(2, 2, 5, 5, dtype=torch.uint8), (3, 8, 8), "data.injected_root 'x'")
    grey = to_image_shape(torch.full((1, 3, 4, 4), 255, dtype=torch.uint8), (1, 8, 8), "rgb")
    assert grey.shape == (1, 1, 8, 8) and torch.allclose(grey, torch.ones_like(grey))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 1.5}, "data.alpha"),
        ({"alpha": -0.1}, "data.alpha"),
        ({"injected": "noise"}, "data.injected"),
        ({"injected": "image_folder"}, "data.injected_root"),
        ({"reference_members": 1}, "data.reference_members"),
        ({"gaussian_covariance": "full"}, "data.gaussian_covariance"),
        ({"patch_size": 0}, "data.patch_size"),
        ({"source": "mnist"}, "data.root"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        digits_mixture(**kwargs)


def test_sizes_beyond_the_data_and_a_missing_teacher_are_refused():
    with pytest.raises(ValueError, match="data.train_size"):
        digits_mixture(train_size=10**6).teacher_data()
    with pytest.raises(ValueError, match="patch_size"):
        digits_mixture(injected="natural_patches", patch_size=5000).teacher_data()
    with pytest.raises(RuntimeError, match="teacher"):
        digits_mixture().train_set()


def test_labelled_tensors_carry_unlabelled_inputs_drawn_per_step_and_member():
    x, y = torch.randn(50, 3), torch.arange(50) % 3
    u = torch.randn(40, 3)
    data = LabelledTensors((x, y), (x, y), unlabelled=u, unlabelled_batch_size=8, batch_size=5, ensemble_size=2)
    batch = data.train_batch(1)
    assert batch.unlabelled.shape == (2, 8, 3)
    assert torch.equal(batch.unlabelled, data.train_batch(1).unlabelled)  # a pure function of the step
    assert not torch.equal(batch.unlabelled[0], batch.unlabelled[1])
    rows = {tuple(r.tolist()) for r in batch.unlabelled[0]}
    assert rows <= {tuple(r.tolist()) for r in u} and len(rows) == 8  # distinct rows of the pool
    assert LabelledTensors((x, y), (x, y), batch_size=5).train_batch(1).unlabelled is None


def test_the_labelled_datas_key_ignores_the_injected_source():
    gaussian, patches = digits_mixture(), digits_mixture(injected="natural_patches")
    assert gaussian.labelled_data_key() == patches.labelled_data_key()
    assert gaussian.teacher_data_key() != patches.teacher_data_key()
    assert torch.equal(gaussian.teacher_data()["train_x"], patches.teacher_data()["train_x"])
