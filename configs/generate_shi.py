"""Write the Shi, Wei, Liang (2022) experiment configs of Appendix E.

The experiments share one training process (``configs/model/shi_process.yaml``) and
differ in a few data or width settings; writing them from one table keeps them in
step. Run ``python configs/generate_shi.py`` after changing the table or the
template; ``tests/test_configs_generated.py`` fails while the YAML files are stale.

sigma_a = sigma~^2 / (gamma k^2) (Section 3.1) depends on the data distribution, so
it is computed here from the data model (exactly: both are moments of the law) and
written into each config, with the numbers in a comment.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPERIMENTS = HERE / "experiments"

#: name -> (paper section, data init_args, width 2m, steps T, structure-free variant?,
#: process options for :func:`process_yaml`)
SPARSE_CODING = {
    "shi_parity": ("E.1.1", dict(d=500, D=100, k=5), 600, 600, True),
    "shi_interval": (
        "E.1.2",
        dict(
            d=500,
            D=100,
            k=30,
            patterns="bernoulli",
            p_in=0.6666666666666666,
            p_out=0.5,
            labeling="interval",
            interval=[20, 30],
        ),
        200,
        200,
        True,
        dict(keep_bias=True),
    ),
    "shi_parity_d100": ("E.2.1", dict(d=100, D=100, k=5), 600, 600, True),
    "shi_parity_d2000": ("E.2.1", dict(d=2000, D=100, k=5), 600, 600, True),
    "shi_parity_ratio08": ("E.2.2", dict(d=500, D=100, k=5, negative_ratio=0.8), 600, 600, True),
    "shi_parity_ratio09": ("E.2.2", dict(d=500, D=100, k=5, negative_ratio=0.9), 600, 600, True),
    "shi_parity_n25000": ("E.2.3", dict(d=500, D=100, k=5, train_size=25000), 600, 600, True),
    "shi_parity_n10000": ("E.2.3", dict(d=500, D=100, k=5, train_size=10000), 100, 600, True),
    # E.3.1: structure-free is undefined for a code table (SparseCoding refuses it).
    "shi_hidden_representation": (
        "E.3.1",
        dict(d=500, D=250, k=50, patterns="hidden_representation", codes_per_class=50, p_o=0.5),
        600,
        600,
        False,
    ),
}

#: Table 6 (E.3.2): name -> (d, k, sigma_r)
GAUSSIAN_MIXTURES = {"shi_gmm_1": (100, 4, 1.0), "shi_gmm_2": (25, 4, 0.7), "shi_gmm_3": (100, 5, 1.0)}


def _run_lines(name: str, steps: int, log_every: int, alignment_args: list[str] | None = None) -> list[str]:
    """Seed, trainer, logger and the FeatureAlignment callback of one experiment."""
    lines = [
        "seed_everything: 0",
        "trainer:",
        f"  max_steps: {steps}",
        f"  log_every_n_steps: {log_every}",
        "  logger:",
        "    class_path: pytorch_lightning.loggers.TensorBoardLogger",
        "    init_args:",
        "      save_dir: runs",
        f"      name: {name}",
        "  callbacks+:",
        "    - class_path: FeatureAlignment",
    ]
    if alignment_args:
        lines += ["      init_args:"] + [f"        {arg}" for arg in alignment_args]
    return lines


def _yaml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_yaml_value(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)


# Lemma 23's two steps, then a classifier on the fixed features (Section 5.1's last
# stage). The paper states no rates for its simulations: eta_1 = 1e-3 is our choice
# (Lemma 23's gamma^2 sigma~/(k m^3) is far below float32 resolution at m = 300),
# and eta_a = 1000 x 600/width for steps >= 3 because the features after step 2 are
# small (|w_i| ~ 0.1 at E.1.1); eta_w = 0 from step 3 holds the learned features.
# lambda_b follows lambda_w in step 2 (Lemma 23 names lambda_a, lambda_w only; Appendix
# line "lambda_b^(1) = 0" fixes step 1): the biases are forgotten like the weights,
# which made step 3+ converge in our runs; with lambda_b^(2) = 0 the old biases
# linger and training stalled at 76-85% on E.1.1.
#: Biases forgotten and relearned in step 2, like the weights (our default).
BIAS_RELEARNED = """\
  weight_decay_b:
    - {start: 1, end: 1, value: 0.0}
    - {start: 2, end: 2, value: 0.5}
    - {start: 3, value: 0.0}
"""
#: Biases kept from step 1 on (used where classes are unbalanced by the labeling:
#: there step 2's bias gradient a_i E[y 1(active)] is dominated by E[y] != 0 and drowns
#: the count signal in a constant, and the classifier stage then stalls at the
#: majority class; with the biases kept, E.1.2 reached 99.9%).
BIAS_KEPT = """\
  lr_b:                      # eta_b: eta_1 in step 1, then the biases are kept
    - {start: 1, end: 1, value: 0.001}
    - {start: 2, value: 0.0}
"""

PROCESS = """\
class_path: TwoLayerNet
init_args:
  width: {width}                 # 2m neurons (m in the paper)
  activation: truncated_relu
  bias: true
  output_scale: standard
  loss: hinge
  mean_field_gradient: false
  init: gaussian_symmetric
  sigma_w: {sigma_w!r}       # 1/k
  sigma_b: {sigma_b!r}    # 1/k^2
  sigma_a: {sigma_a!r}  # {sigma_a_note}
  noise_mode: sample
  noise_std:                 # sigma_xi = 1/k^(3/2) in steps 1-2 (Lemma 23), then 0
    - {{start: 1, end: 2, value: {noise!r}}}
    - {{start: 3, value: 0.0}}
  lr_w:                      # eta_w: eta_1, then eta_2 = 1, then frozen
    - {{start: 1, end: 1, value: 0.001}}
    - {{start: 2, end: 2, value: 1.0}}
    - {{start: 3, value: 0.0}}
  lr_a:                      # eta_a: eta_1, eta_2 = 1, then the classifier's rate
    - {{start: 1, end: 1, value: 0.001}}
    - {{start: 2, end: 2, value: 1.0}}
    - {{start: 3, value: {classifier_lr!r}}}
  weight_decay_w:            # lambda_w = 1/(2 eta): steps 1-2 forget the old weights
    - {{start: 1, end: 1, value: 500.0}}
    - {{start: 2, end: 2, value: 0.5}}
    - {{start: 3, value: 0.0}}
{bias_block}  weight_decay_a:            # lambda_a^(1) = 0, lambda_a^(2) = 1/(2 eta_2)
    - {{start: 1, end: 1, value: 0.0}}
    - {{start: 2, end: 2, value: 0.5}}
    - {{start: 3, value: 0.0}}
"""


def process_yaml(
    data: dict, width: int, structure: bool = True, classifier_lr: float | None = None, keep_bias: bool = False
) -> str:
    """The model block (class_path + init_args) of the paper's process for ``data``."""
    from featlearn.datamodules import SparseCoding

    probe = SparseCoding(**data)  # the structured distribution defines sigma_a
    k, sigma, gamma = probe.k, probe.sigma_tilde, probe.gamma
    if classifier_lr is None:
        # One step moves f = sum_i a_i h_i by about width * eta_a * E h^2: keep
        # width * eta_a at E.1.1's 600 * 1000 (E.2.3's m = 50 needed it: 69.6% at
        # eta_a = 300, 99.8% at 3000 and up).
        classifier_lr = 1000.0 * 600 / width
    of = "" if structure else " (of the structured data)"
    if gamma > 1e-3:
        sigma_a = sigma**2 / (gamma * k**2)
        note = f"sigma~^2/(gamma k^2): sigma~ = {sigma:.6g}, gamma = {gamma:.6g}{of}"
    else:
        # A code table with random codes has no per-pattern signal (gamma ~ 0), so
        # Section 3.1's sigma_a is undefined; we use E.1.1's gamma = 1/4 instead.
        sigma_a = sigma**2 / (0.25 * k**2)
        note = f"sigma~^2/(gamma k^2) with E.1.1's gamma = 1/4 (here gamma = {gamma:.3g}): sigma~ = {sigma:.6g}"
    return PROCESS.format(
        width=width,
        sigma_w=1 / k,
        sigma_b=1 / k**2,
        sigma_a=sigma_a,
        sigma_a_note=note,
        noise=k**-1.5,
        classifier_lr=classifier_lr,
        bias_block=BIAS_KEPT if keep_bias else BIAS_RELEARNED,
    )


def sparse_coding_config(
    name: str, section: str, data: dict, width: int, steps: int, structure: bool, options: dict | None = None
) -> str:
    """The YAML text of one sparse-coding experiment."""
    data = dict(data)
    train_size = data.pop("train_size", 50000)
    lines = [
        f"# Shi, Wei, Liang (2022), Appendix {section}"
        + ("" if structure else ", WITHOUT input structure (A1': patterns uniform, same labeling)")
        + ".",
        "# Generated by configs/generate_shi.py: edit the table there, not this file.",
        *_run_lines(name, steps, log_every=10),
        "data:",
        "  class_path: SparseCoding",
        "  init_args:",
    ]
    lines += [f"    {key}: {_yaml_value(value)}" for key, value in data.items()]
    if not structure:
        lines.append("    structure: false")
    lines += [
        f"    train_size: {train_size}",
        "    test_size: 10000",
        "    batch_size:                # approximate full gradient for steps 1-2 (E.1), then 1000",
        f"      - {{start: 1, end: 2, value: {train_size}}}",
        "      - {start: 3, value: 1000}",
        "model:",
    ]
    lines += ["  " + line for line in process_yaml(data, width, structure, **(options or {})).splitlines()]
    return "\n".join(lines) + "\n"


def gaussian_mixture_config(name: str, d: int, k: int, sigma_r: float) -> str:
    """The YAML text of one Table 6 Gaussian-mixture experiment ("typical practice")."""
    return (
        "\n".join(
            [
                f"# Shi, Wei, Liang (2022), Appendix E.3.2, Table 6: d = {d}, k = {k} ({2**k} clusters), "
                f"sigma_r = {sigma_r}.",
                "# Generated by configs/generate_shi.py: edit the table there, not this file.",
                "# The paper trains 'following typical practice' without stating how; our choice:",
                "# 800 ReLU neurons with biases, logistic loss, minibatch SGD (batch 100, lr 0.1) on",
                "# 10000 samples for 80 epochs (8000 steps), symmetric Gaussian initialisation.",
                *_run_lines(name, 8000, log_every=50, alignment_args=["mds_steps: [0, 500, -1]"]),
                "data:",
                "  class_path: GaussianMixture",
                "  init_args:",
                f"    d: {d}",
                f"    k: {k}",
                f"    sigma_r: {sigma_r}",
                "    train_size: 10000",
                "    test_size: 10000",
                "    batch_size: 100",
                "model:",
                "  class_path: TwoLayerNet",
                "  init_args:",
                "    width: 800",
                "    lr: 0.1",
                "    activation: relu",
                "    bias: true",
                "    output_scale: standard",
                "    mean_field_gradient: false",
                "    loss: logistic",
                "    init: gaussian_symmetric",
                f"    sigma_w: {1 / d**0.5!r}    # 1/sqrt(d)",
                "    sigma_b: 0.0",
                f"    sigma_a: {1 / 800**0.5!r}  # 1/sqrt(width)",
            ]
        )
        + "\n"
    )


def all_configs() -> dict[str, str]:
    """File name -> YAML text, for every generated experiment."""
    out = {}
    for name, (section, data, width, steps, has_free, *options) in SPARSE_CODING.items():
        options = options[0] if options else None
        out[f"{name}.yaml"] = sparse_coding_config(name, section, data, width, steps, True, options)
        if has_free:
            out[f"{name}_nostructure.yaml"] = sparse_coding_config(
                f"{name}_nostructure", section, data, width, steps, False, options
            )
    for name, (d, k, sigma_r) in GAUSSIAN_MIXTURES.items():
        out[f"{name}.yaml"] = gaussian_mixture_config(name, d, k, sigma_r)
    return out


def group_configs() -> dict[str, str]:
    """configs/<group>/<file> -> YAML text: the E.1.1 process and data as reusable groups."""
    header = "# Shi, Wei, Liang (2022): the training process of Section 3.1 / Lemma 23 for E.1.1 data.\n"
    header += "# Generated by configs/generate_shi.py: edit the template there, not this file.\n"
    data_header = "# Shi, Wei, Liang (2022): the parity data of Appendix E.1.1 (50000 samples).\n"
    data_header += "# Generated by configs/generate_shi.py: edit it there, not this file.\n"
    data = (
        data_header
        + "\n".join(
            [
                "class_path: SparseCoding",
                "init_args:",
                "  d: 500",
                "  D: 100",
                "  k: 5",
                "  train_size: 50000",
                "  test_size: 10000",
                "  batch_size:",
                "    - {start: 1, end: 2, value: 50000}",
                "    - {start: 3, value: 1000}",
            ]
        )
        + "\n"
    )
    return {
        "model/shi_process.yaml": header + process_yaml(dict(d=500, D=100, k=5), 600),
        "data/shi_parity.yaml": data,
    }


def main() -> int:
    """Write every config; print what changed."""
    targets = {f"experiments/{name}": text for name, text in all_configs().items()} | group_configs()
    for file_name, text in targets.items():
        path = HERE / file_name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
