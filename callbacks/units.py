r"""Which hidden units fire: the share of a two-layer network's units that are alive on a set."""

from __future__ import annotations

import pytorch_lightning as pl
import torch

from featlearn.callbacks.base import DiagnosticCallback
from featlearn.contracts import EvaluationData, HiddenLearner, Learner, require
from featlearn.validation import check_choice


class HiddenUnits(DiagnosticCallback):
    r"""How many hidden units fire on a set, and how large the first layer is, under ``units/``.

    A network memorises a training set through units that fire on some of its inputs and
    not on others. Where the first layer is small beside its biases (Shi et al.'s process
    erases the weights at step 2 and relearns them from one gradient), most units may never
    fire: the network is then no random-feature model at all, and its training accuracy
    says so. At each cadence step, on the data model's ``split`` set (the training set by
    default), per member s with activations :math:`h_{ij} = \sigma(w_j \cdot x_i + b_j)`:

    * ``units/active_share``: the share (%) of units with :math:`h_{ij} \ne 0` for some input i;
    * ``units/firing_rate``: the share (%) of (input, unit) pairs with :math:`h_{ij} \ne 0`;
    * ``units/silent_inputs``: the share (%) of inputs on which no unit fires, where the output
      is exactly 0 (which :math:`y f > 0` counts as an error);
    * ``units/w_norm``: the mean :math:`\lVert w_j \rVert_2` over units.

    Each is the mean over members; :meth:`member_results` gives each member's value at the
    last cadence step as ``units_active_share``, ``units_firing_rate``, ``units_silent_inputs``
    and ``units_w_norm``. A pass reads the whole set once (in ``data.eval_batch_size``
    chunks): on a large training set, a sparse cadence keeps it cheap.

    Args:
        split: ``"train"``, ``"val"`` or ``"test"``.
        cadence: ``"log"`` or every N steps (the last step is always included).
        points_per_decade: Density of the log-spaced cadence (2: steps 0, 1, 3, 10, 32, 100, ...).
    """

    data_requirement = EvaluationData
    result_tags = ("units/active_share", "units/silent_inputs")
    state_attributes = ("history", "member_values")
    distinguishing_settings = ("cadence", "split")

    def __init__(self, split: str = "train", cadence: str | int = "log", points_per_decade: int = 2) -> None:
        super().__init__(cadence=cadence, points_per_decade=points_per_decade)
        self.split = check_choice("HiddenUnits.split", split, ("train", "val", "test"))
        #: Each member's values at the last cadence step: name -> [S].
        self.member_values: dict[str, list[float]] = {}

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: D102
        super().on_fit_start(trainer, pl_module)
        require(pl_module, Learner, "HiddenUnits", role="learner")
        if not isinstance(pl_module, HiddenLearner) or pl_module.first_layer_features() is None:
            raise ValueError(
                f"HiddenUnits reads a hidden layer's activations and neurons, which {type(pl_module).__name__} does "
                "not give (no hidden_units(), or first_layer_features() is None): remove HiddenUnits from this run's "
                "callbacks."
            )
        if not self.data_model.set_size(self.split):
            raise ValueError(
                f"HiddenUnits(split={self.split!r}) needs data.{self.split}_size > 0, got an empty or online set."
            )

    def member_results(self) -> dict[str, list]:
        """Per member at the last cadence step: ``units_active_share``, ``units_firing_rate``, ... (see above)."""
        return {f"units_{name}": values for name, values in self.member_values.items()}

    def compute(self, trainer: pl.Trainer, pl_module: pl.LightningModule, step: int) -> dict[str, float]:  # noqa: D102
        data = self.data_model
        x, _ = data.train_set() if self.split == "train" else data.eval_set(self.split)  # (K, n, d)
        n, chunk = x.shape[1], data.eval_batch_size
        fired, pairs, silent = None, 0.0, 0.0  # fired: (S, p) bool, some input fired the unit
        for i in range(0, n, chunk):
            h = pl_module.hidden_units(x[:, i : i + chunk].to(pl_module.device))  # (S, B, p)
            alive = (h != 0) & ~h.isnan()  # a diverged member's NaN units fire on nothing
            fired = alive.any(dim=1) if fired is None else fired | alive.any(dim=1)
            pairs = pairs + alive.sum(dim=(1, 2)).to("cpu", torch.float64)  # (S,)
            silent = silent + (~alive.any(dim=2)).sum(dim=1).to("cpu", torch.float64)  # (S,)
        width = fired.shape[1]
        w = pl_module.first_layer_features()  # (S, p, d)
        values = {
            "active_share": 100.0 * fired.to("cpu", torch.float64).mean(dim=1),
            "firing_rate": 100.0 * pairs / (n * width),
            "silent_inputs": 100.0 * silent / n,
            "w_norm": w.to("cpu", torch.float64).norm(dim=2).mean(dim=1),
        }  # name -> (S,)
        self.member_values = {name: [float(v) for v in value] for name, value in values.items()}
        return {f"units/{name}": float(value.mean()) for name, value in values.items()}
