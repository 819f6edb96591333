"""ParityProgress: the hidden progress of a network on a sparse parity, and its transition step."""

import pytest
import torch

from featlearn.callbacks import ParityProgress
from featlearn.datamodules import BooleanXOR, SparseParity
from featlearn.models import TwoLayerNet

from ..conftest import grouped  # noqa: TID252


def test_the_weights_move_to_the_support_and_the_error_falls_once_and_stays(fit):
    # Measured: transition steps 35 and 38, support share gains at chance 1.07 and 1.10 (0.076 at step 0).
    dm = SparseParity(dim=24, k=2, batch_size=256, test_size=500, ensemble_size=2)
    model = TwoLayerNet(24, **grouped(128, lr=0.1, init_scale=0.2, seed=0), ensemble_size=2)
    start = model.first_layer_features().detach().clone()
    cb = ParityProgress(points_per_decade=40)
    fit(model, dm, 200, callbacks=[cb])  # XOR with this learner: the error falls over ~20 steps, not at once
    by_step = {h["step"]: h for h in cb.history}
    # At step 0 the weights have not moved and the share on the support is the isotropic k/d, about 2/24.
    assert by_step[0]["parity/w_change_l1"] == 0 and 0.03 < by_step[0]["parity/support_share"] < 0.2
    delta = model.first_layer_features().detach() - start  # the last step is a cadence step
    assert by_step[200]["parity/w_change_l1"] == pytest.approx(float(delta.abs().sum(dim=(1, 2)).mean()), rel=1e-5)
    assert by_step[200]["parity/support_share"] > 0.5 and by_step[200]["parity/test_error"] < 0.05
    results = cb.member_results()
    for s, step in enumerate(results["transition_step"]):
        assert step is not None and 0 < step < 200
        assert all(error <= 0.05 for t, error, _ in cb.tracks[s] if t >= step)
        earlier = [error for t, error, _ in cb.tracks[s] if t < step]
        assert earlier[-1] > 0.05  # the step before it was above the threshold
    # Hidden progress: while the error was still at chance, the share on the support had already grown.
    assert all(gain is not None and gain > 1.03 for gain in results["support_share_gain"]), results
    assert "transition step (per member)" in cb.summary()


def test_the_transition_is_the_first_step_from_which_the_error_stays_low():
    cb = ParityProgress(error_threshold=0.05, chance_error=0.45)
    cb.tracks = [
        [(0, 0.5, 0.1), (10, 0.48, 0.2), (20, 0.04, 0.6), (30, 0.2, 0.6), (40, 0.01, 0.9), (50, 0.0, 0.9)],
        [(0, 0.5, 0.1), (10, 0.3, 0.3), (20, 0.3, 0.3)],
    ]
    results = cb.member_results()
    # Member 0 dips at step 20 and rises again: its transition is 40, from which it stays low.
    assert results["transition_step"] == [40, None]
    # The share at the last step at chance (0.48 >= 0.45, step 10) over step 0's: 2; member 1 never at chance again.
    assert results["support_share_gain"] == [pytest.approx(2.0), None]
    assert results["plateau_end_step"] == [10, None]


def test_a_run_stops_once_every_member_has_settled_and_not_before(fit):
    def run(stop_after):
        dm = SparseParity(dim=24, k=2, batch_size=256, test_size=500, ensemble_size=2)
        model = TwoLayerNet(24, **grouped(128, lr=0.1, init_scale=0.2, seed=0), ensemble_size=2)
        cb = ParityProgress(points_per_decade=40, stop_after_settled=stop_after)
        trainer = fit(model, dm, 400, callbacks=[cb])
        return trainer, cb

    full_trainer, full = run(0)
    stopped_trainer, stopped = run(3)
    assert full_trainer.global_step == 400
    # Transitions near step 35 (see above): three settled cadence points later, well before 400.
    assert max(full.member_results()["transition_step"]) < stopped_trainer.global_step < 400
    assert stopped.member_results()["transition_step"] == full.member_results()["transition_step"]
    last = [track[-3:] for track in stopped.tracks]
    assert all(error <= 0.05 for track in last for _, error, _ in track)
    # It stopped at the first such point: one cadence step earlier, some member had not settled for 3.
    assert not all(all(error <= 0.05 for _, error, _ in track[-4:-1]) for track in stopped.tracks)
    with pytest.raises(ValueError, match="ParityProgress.stop_after_settled"):
        ParityProgress(stop_after_settled=-1)


def test_it_asks_for_a_support_and_a_test_set(fit):
    model = TwoLayerNet(8, **grouped(8, lr=0.1, seed=0))
    with pytest.raises(ValueError, match="GroundTruth.support"):
        fit(model, BooleanXOR(dim=8, batch_size=16, test_size=32), 2, callbacks=[ParityProgress()])
    with pytest.raises(ValueError, match="test_size"):
        fit(model, SparseParity(dim=8, k=3, batch_size=16, test_size=0), 2, callbacks=[ParityProgress()])
    with pytest.raises(ValueError, match="ParityProgress.chance_error"):
        ParityProgress(error_threshold=0.2, chance_error=0.1)


def test_its_state_survives_a_checkpoint():
    cb = ParityProgress()
    cb.initial_weights, cb.tracks = torch.ones(1, 2, 3), [[(0, 0.5, 0.1)]]
    again = ParityProgress()
    again.load_state_dict(cb.state_dict())
    assert torch.equal(again.initial_weights, cb.initial_weights) and again.tracks == cb.tracks


def test_the_fourier_gap_prefers_the_support_where_the_labels_are_its_parity_and_not_on_noise(fit):
    def gaps(noise):
        dm = SparseParity(dim=16, k=2, batch_size=64, test_size=256, ensemble_size=2, label_noise=noise)
        model = TwoLayerNet(16, **grouped(64, lr=0.1, init_scale=0.3, seed=0), ensemble_size=2)
        cb = ParityProgress(points_per_decade=5, gradient_samples=20000)
        fit(model, dm, 10, callbacks=[cb])
        return cb, cb.member_results()

    parity, results = gaps(0.0)
    _, noise = gaps(0.5)
    # At step 0 the gradient along S is the order-1 Fourier coefficient, off S order 3: a gap well above 1.
    # Measured: about 2.5-3 for the parity, 1.0-1.1 on noise (20000 samples set the floor off S).
    assert all(g > 1.8 for g in results["gradient_gap_start"]), results
    assert all(0.7 < g < 1.4 for g in noise["gradient_gap_start"]), noise
    assert "parity/gradient_gap" in parity.history[0]
    assert len(results["gradient_gap_at_plateau"]) == 2


def test_the_fourier_gap_reads_learners_that_give_their_neurons_gradient():
    from featlearn.contracts import GradientLearner
    from featlearn.models import ModuleClassifier, QuadraticFC

    assert isinstance(TwoLayerNet(8, **grouped(8, lr=0.1, seed=0)), GradientLearner)
    assert not isinstance(ModuleClassifier(QuadraticFC(8, 4, 1), lr=0.1), GradientLearner)  # the guard refuses it
    with pytest.raises(ValueError, match="ParityProgress.gradient_samples"):
        ParityProgress(gradient_samples=-1)
