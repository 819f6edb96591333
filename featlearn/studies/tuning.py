"""Choosing each method's ``tune`` constants on the validation set: the full grid, or successive halving.

Every grid point is a trial (:mod:`featlearn.studies.trials`): one ensemble over the
seeds, reused by a rerun like any trial. The full grid trains each point to
``trainer.max_steps``; :mod:`featlearn.studies.halving` trains the best on from rung to
rung; a grid that sets only the learner's per-member schedules may train side by side as
one ensemble (:class:`~featlearn.contracts.PerMemberValues`).
"""

from __future__ import annotations

import copy
import csv
import json
import math
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from featlearn.contracts import PerMemberValues
from featlearn.runner.registry import config_class
from featlearn.studies.halving import rung_steps, survivors
from featlearn.studies.methods import Method, is_a, method_config, without_diagnostics
from featlearn.studies.trials import BuildRun, Launcher, Trial, csv_number, merge_configs, run_trials, summarize


@dataclass(frozen=True)
class CompareOptions:
    """How :func:`compare` runs its trials (the command line's options, as one value).

    Args:
        seeds: S, the seeds of every method (ensemble members s = 0..S-1).
        seed: The first seed (None: the experiment's ``seed_everything``).
        tune_seeds: Choose grid points on the first K seeds only (None: all S).
        halving: Search each grid by successive halving with this reduction factor
            (:mod:`featlearn.studies.halving`; None: every point to ``max_steps``).
        grid_members: Most ensemble members of one tuning fit (None: :func:`default_grid_members`).
        overwrite: Discard results in ``out`` whose config changed (else: refuse).
        halving_only: With ``halving``, halve only these methods' grids (None: every grid);
            the others train every point to ``max_steps``.
    """

    seeds: int = 5
    seed: int | None = None
    tune_seeds: int | None = None
    halving: int | None = None
    grid_members: int | None = None
    overwrite: bool = False
    halving_only: tuple[str, ...] | None = None

    def halves(self, method: str) -> bool:
        """Whether ``method``'s grid is searched by successive halving."""
        return bool(self.halving) and (self.halving_only is None or method in self.halving_only)

    def problem(self, flag: Callable[[str], str] = str) -> str | None:
        """The first option out of range, said with its name as ``flag`` writes it; None if all hold."""
        if self.seeds < 1:
            return f"{flag('seeds')} must be >= 1, got {self.seeds}."
        if self.seed is not None and self.seed < 0:
            return f"{flag('seed')} must be >= 0, got {self.seed}."
        if self.tune_seeds is not None and not 1 <= self.tune_seeds <= self.seeds:
            return f"{flag('tune_seeds')} must be between 1 and {flag('seeds')} ({self.seeds}), got {self.tune_seeds}."
        if self.halving is not None and self.halving < 2:
            return f"{flag('halving')} must be an integer >= 2 (a rung keeps the best 1/ETA), got {self.halving}."
        if self.halving_only is not None and not self.halving:
            return f"{flag('halving_only')} names the grids to halve: give {flag('halving')} ETA too."
        if self.grid_members is not None and self.grid_members < 1:
            return f"{flag('grid_members')} must be >= 1, got {self.grid_members}."
        return None

    def resolved(self, slurm_gpus: int = 0) -> CompareOptions:
        """These options with the defaults filled in (``tune_seeds``, ``grid_members``)."""
        tune_seeds = self.seeds if self.tune_seeds is None else self.tune_seeds
        members = default_grid_members(tune_seeds, slurm_gpus) if self.grid_members is None else self.grid_members
        return replace(self, tune_seeds=tune_seeds, grid_members=members)


def default_grid_members(seeds: int, slurm_gpus: int) -> int:
    """``--grid-members`` by default: 100 where trials get a GPU, else one grid point (``seeds`` members) per fit.

    On a GPU a grid side by side in one ensemble pays (the per-fit and per-step costs are
    shared; benchmarks/README.md). On a CPU
    the arithmetic is the same either way, a diverged member would keep computing to the
    end where its own fit stops at once, and memory grows with the members.
    """
    import torch

    return 100 if torch.cuda.is_available() or slurm_gpus > 0 else seeds


def tune_methods(
    methods: list[Method],
    experiment: dict,
    options: CompareOptions,
    out: Path,
    build: BuildRun,
    launcher: Launcher,
    log,
    changed: str,
) -> dict[str, dict]:
    """Choose each method's ``tune`` constants on the experiment's validation set.

    Every grid point is a trial (one ensemble over the seeds, in
    ``DIR/tuning/<method>/<k>/``, reused by a re-run like any trial); the point with
    the best mean validation accuracy wins, the first in the file's order on a tie. Writes
    ``DIR/tuning.csv`` (every point) and returns method -> ``{"values", "val_acc", "edge", "seeds"}``.

    With ``--tune-seeds K`` below ``--seeds``, every point trains on the first K seeds only (in
    ``DIR/tuning_K_seeds/``, with ``DIR/tuning_K_seeds.csv``), as tuning is usually done; only
    the chosen point then trains on every seed, as the method's own run.

    With ``--halving ETA`` the grid is searched by successive halving
    (:mod:`featlearn.studies.halving`, in ``DIR/tuning_halving_ETA/<method>/<point>/steps_<s>/``):
    every point trains its first rung's steps, the best 1/ETA on validation go on from their
    checkpoints, and only the points that reach ``trainer.max_steps`` are candidates.

    A tuning trial measures what tuning reads, its final accuracies: it runs without
    per-step diagnostics (:func:`without_diagnostics`) and without curves, which cost as
    much as the training itself for the NTK's grid. The chosen values' final run is then a
    fit of its own, with every curve; its accuracies equal its tuning trial's (diagnostics
    only read the learner).

    Raises:
        ValueError: The data model has no validation set (``data.init_args.val_size: 0``).
    """
    grids = {m.name: m.grid() for m in methods if m.tune}
    if not grids:
        return {}
    seeds = options.tune_seeds
    # Tuning on the first K of the seeds, or by halving, has folders of its own: beside the full grid, never mixed.
    full_folder = out / ("tuning" if seeds == options.seeds else f"tuning_{seeds}_seeds")
    halving_folder = full_folder.with_name(f"{full_folder.name}_halving_{options.halving}")
    run = lambda trials: run_trials(  # noqa: E731
        trials, build, launcher, overwrite=options.overwrite, changed=changed, log=log, divergence_ok=True
    )
    halved = {name: grid for name, grid in grids.items() if options.halves(name)}
    full = {name: grid for name, grid in grids.items() if name not in halved}
    scores = {}
    if full:
        points = sum(len(grid) for grid in full.values())
        chosen = [m for m in methods if m.name in full]
        scores.update(_grid_scores(chosen, full, experiment, options, out, full_folder, build, run, log, points))
    if halved:
        log(
            f"tuning {', '.join(halved)} by successive halving (eta = {options.halving}) on the validation set of "
            f"{seeds} seed(s): {sum(len(grid) for grid in halved.values())} grid point(s)"
        )
        chosen = [m for m in methods if m.name in halved]
        scores.update(_halving_scores(chosen, halved, experiment, options, out, halving_folder, build, run, log))
    tuned, rows = {}, []
    for method in methods:
        best = None
        for values in grids.get(method.name, []):
            metrics, steps, final = scores[method.name, _point_name(values)]
            if "diverged" in metrics:  # a rate too large for this experiment: not a candidate
                rows.append([method.name, values, None, None, steps, "diverged"])
                continue
            mean, std, _ = summarize(validation_accuracy(method.name, metrics))
            notes = [degenerate_note(metrics), "" if final else "dropped by successive halving"]
            rows.append([method.name, values, mean, std, steps, "; ".join(n for n in notes if n)])
            if final and (best is None or mean > best[1]):
                best = (values, mean)
        if grids.get(method.name) and best is None:
            raise ValueError(f"Every grid point of {method.name!r} diverged: give its tune grid smaller values.")
        if best is not None:
            edge = grid_edges(method.tune, best[0])
            tuned[method.name] = {
                "values": best[0],
                "val_acc": best[1],
                "edge": edge,
                "seeds": seeds,
                "halving": options.halving if method.name in halved else None,
            }
            log(f"{method.name}: chose {best[0]} (val acc {best[1]:.2f}%)")
            if edge:
                log(f"{method.name}: WARNING: {', '.join(edge)} chose the end of its grid; extend the grid past it.")
    for folder, names in ((full_folder, full), (halving_folder, halved)):  # a list beside each folder of points
        if not names:
            continue
        with open(folder.with_suffix(".csv"), "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["method", "values", "val_acc_mean", "val_acc_std", "steps", "chosen", "note"])
            for name, values, mean, std, steps, note in rows:
                if name in names:
                    chosen = int(tuned[name]["values"] == values)
                    writer.writerow([name, json.dumps(values), csv_number(mean), csv_number(std), steps, chosen, note])
    return tuned


def degenerate_note(metrics: dict) -> str:
    """A grid point's seeds whose runs degenerated, for its tuning.csv row ("" when none or unrecorded).

    A run that predicts one class, or whose loss grew by orders of magnitude
    (:class:`~featlearn.callbacks.DegenerateRuns`), is no fit of the rate. An output of exactly 0
    everywhere (every unit silent) is one such run: DegenerateRuns reads it as one class, while its
    accuracy is near 0% (an output of 0 matches neither label), a number that needs this note beside it.
    """
    flags = metrics.get("degenerate")
    if not isinstance(flags, list) or not any(flags):
        return ""
    return f"degenerate on {sum(bool(f) for f in flags)} of {len(flags)} seeds (DegenerateRuns)"


def validation_accuracy(method: str, metrics: dict) -> list[float]:
    """A tuning trial's per-seed validation accuracies, what every choice of a grid reads.

    Raises:
        ValueError: The trial measured none (the data model has no validation set).
    """
    if metrics.get("val_acc") is None:
        raise ValueError(
            f"Tuning {method!r} needs a validation set: set data.init_args.val_size > 0, or pass "
            f"--no-tune to use the methods file's values."
        )
    return metrics["val_acc"]


def _grid_scores(methods, grids, experiment, options, out, tuning, build, run, log, points) -> dict:
    """Every point of every grid trained to ``trainer.max_steps``: (method, point) -> (metrics, steps, True)."""
    seeds = options.tune_seeds
    trials, plan = [], {}  # plan: (method, point name) -> (trial label, the point's block of members or None)
    for method in methods:
        grid = grids.get(method.name, [])
        arguments = member_value_arguments(experiment, method) if grid else None
        per_fit = max(1, options.grid_members // seeds)  # points side by side in one ensemble
        if arguments is None or per_fit == 1:  # one trial per point
            for values in grid:
                config = method_config(experiment, method.with_values(values), seeds, options.seed, out)
                point = _point_name(values)  # a folder per value: a longer grid reuses the points it shares
                without_diagnostics(config)
                label = f"{method.name} tune {point}"
                trials.append(Trial(label, tuning / method.slug / point, config))
                plan[method.name, point] = (label, None)
            continue
        for first in range(0, len(grid), per_fit):
            chunk = grid[first : first + per_fit]
            config = method_config(experiment, method, seeds, options.seed, out)
            without_diagnostics(config)
            config["model"]["init_args"]["member_values"] = {
                argument: [values[key] for values in chunk] for argument, key in arguments.items()
            }
            name = f"points_{first}-{first + len(chunk) - 1}"
            label = f"{method.name} tune {name}"
            trials.append(Trial(label, tuning / method.slug / name, config))
            for g, values in enumerate(chunk):
                plan[method.name, _point_name(values)] = (label, g)
    log(
        f"tuning {', '.join(grids)} on the validation set of {seeds} seed(s): {points} grid point(s) in "
        f"{len(trials)} fit(s)"
    )
    done = run(trials)
    steps = {trial.label: (trial.config.get("trainer") or {}).get("max_steps") for trial in trials}  # to where it ran
    scores = {}
    for (name, point), (label, block) in plan.items():
        metrics = point_metrics(done[label]["metrics"], block, seeds)
        scores[name, point] = (metrics, steps[label], True)
    return scores


def _halving_scores(methods, grids, experiment, options, out, tuning, build, run, log) -> dict:
    """Successive halving of every grid, all methods' points of a rung in one batch of trials.

    Returns (method, point) -> (metrics at the last rung the point reached, that rung's
    steps, whether that rung was the last).
    """
    alive, rungs, configs = {}, {}, {}
    for method in methods:
        grid = grids.get(method.name, [])
        if not grid:
            continue
        configs[method.name] = {}
        for values in grid:
            config = method_config(experiment, method.with_values(values), options.tune_seeds, options.seed, out)
            without_diagnostics(config)
            configs[method.name][_point_name(values)] = config
        total = int((next(iter(configs[method.name].values())).get("trainer") or {}).get("max_steps") or 0)
        if total < 1:
            raise ValueError(f"Tuning {method.name!r} by successive halving needs trainer.max_steps >= 1.")
        rungs[method.name] = rung_steps(total, len(grid), options.halving)
        alive[method.name] = [_point_name(values) for values in grid]
    scores: dict = {}
    checkpoints: dict = {}  # (method, point) -> the checkpoint its next rung resumes
    made: set[Path] = set()  # every rung's checkpoint not removed yet
    for r in range(max(len(steps) for steps in rungs.values())):
        trials, plan = [], {}
        for name, steps in rungs.items():
            if r >= len(steps):
                continue
            last = r == len(steps) - 1
            for point in alive[name]:
                folder = tuning / Method(name).slug / point / f"steps_{steps[r]}"
                config = rung_config(configs[name][point], folder, steps[r], checkpoints.get((name, point)), last)
                label = f"{name} tune {point} to step {steps[r]}"
                trials.append(Trial(label, folder, config))
                plan[name, point] = label
                checkpoints[name, point] = folder / "checkpoints" / "last.ckpt"
                made.add(checkpoints[name, point])
        log(f"successive halving, rung {r + 1}: {len(trials)} fit(s)")
        done = run(trials)
        for name, steps in rungs.items():
            if r >= len(steps):
                continue
            last = r == len(steps) - 1
            rung, errors = [], []  # mean validation accuracy per point, and its standard error over the seeds
            for point in alive[name]:
                metrics = done[plan[name, point]]["metrics"]
                scores[name, point] = (metrics, steps[r], last)
                if "diverged" in metrics:
                    rung.append(None)
                    errors.append(None)
                else:
                    mean, std, seeds = summarize(validation_accuracy(name, metrics))
                    rung.append(mean)
                    errors.append(None if std is None else std / math.sqrt(seeds))
            alive[name] = [alive[name][i] for i in survivors(rung, options.halving, last, errors)]
        # Only the survivors' newest checkpoints are resumed from; the rest (a dropped point's,
        # a survivor's earlier rung) go, about 1 GB per item at d = 2000. A rerun that finds a
        # checkpoint gone trains that rung from step 0 instead (rung_config), to the same numbers.
        needed = {checkpoints[name, point] for name in alive for point in alive[name]}
        for path in set(made) - needed:
            shutil.rmtree(path.parent, ignore_errors=True)
            made.remove(path)
    return scores


def rung_config(config: dict, folder: Path, steps: int, resume: Path | None, last: bool) -> dict:
    """A halving rung's trial config: ``config`` trained to ``steps``, resumed from ``resume``.

    Every rung but the last saves ``folder/checkpoints/last.ckpt`` at its final step, which
    the next rung resumes with ``ckpt_path``: a resumed fit continues bit for bit as one
    uninterrupted fit would (``tests/featlearn/cli/test_resume_every_experiment.py``). The
    experiment's own checkpoint callbacks are replaced by that one (the last rung keeps none).
    Where ``resume`` is gone (a search cleans up what no survivor needs, and a rerun may
    promote otherwise), the rung trains from step 0: the same steps, so the same numbers.
    ``ckpt_path`` is not part of a trial's digest, so either way the result is reused.
    """
    from pytorch_lightning.callbacks import ModelCheckpoint

    from featlearn.callbacks import DegenerateRuns

    config = copy.deepcopy(config)
    trainer = config.setdefault("trainer", {})
    trainer["max_steps"] = steps
    trainer["default_root_dir"] = str(folder)  # a logger-less fit checkpoints under it
    listed = (trainer.pop("callbacks", None) or []) + (trainer.pop("callbacks+", None) or [])
    kept = [entry for entry in listed if not is_a(entry, ModelCheckpoint)]
    if not any(is_a(entry, DegenerateRuns) for entry in kept):
        kept.append({"class_path": "DegenerateRuns"})  # base.yaml's list is replaced below
    if last:
        trainer["enable_checkpointing"] = False
    else:
        checkpoint = {"save_last": True, "every_n_train_steps": steps, "save_top_k": 0}
        kept.insert(0, {"class_path": "StepCheckpoint", "init_args": checkpoint})
    trainer["callbacks"] = kept
    if resume is not None and resume.is_file():
        config["ckpt_path"] = str(resume)
    return config


def member_value_arguments(experiment: dict, method: Method) -> dict[str, str] | None:
    """How ``method``'s grid maps onto its learner's ``member_values``: argument -> tune key; None where it cannot.

    A grid trains as one ensemble (:class:`~featlearn.models.TwoLayerNet`'s ``member_values``)
    when every path of every tuned key is ``model.init_args.training.<argument>`` (the learner's
    ``MEMBER_VALUE_GROUP``) with an argument the learner class gives per grid point
    (:class:`~featlearn.contracts.PerMemberValues`); the paths a key joins by ``|`` all take its
    value. Otherwise (a data path, another learner) each point is its own trial.
    """
    config = merge_configs(experiment, method.overrides)
    learner = config_class((config.get("model") or {}).get("class_path"))
    if not isinstance(learner, PerMemberValues):
        return None
    group = ".".join(part for part in ("model.init_args", getattr(learner, "MEMBER_VALUE_GROUP", "")) if part)
    arguments = {}
    for key in method.tune:
        for path in key.split("|"):
            prefix, _, argument = path.rpartition(".")
            if prefix != group or argument not in learner.MEMBER_VALUE_ARGUMENTS:
                return None
            arguments[argument] = key
    return arguments


def point_metrics(metrics: dict, block: int | None, seeds: int) -> dict:
    """One grid point's metrics from its trial's: the whole trial's, or block ``block`` of a grid ensemble.

    A point of a grid ensemble owns members ``block * seeds .. (block + 1) * seeds - 1``; it
    diverged where one of them did.
    """
    if block is None:
        return metrics
    members = range(block * seeds, (block + 1) * seeds)
    diverged = {int(m): step for m, step in (metrics.get("diverged_members") or {}).items() if int(m) in members}
    if diverged:
        member, step = min(diverged.items(), key=lambda item: item[1])
        return {"diverged": f"member {member} (seed {member - block * seeds}) diverged at update step {step}"}
    return {
        key: value[block * seeds : (block + 1) * seeds] if isinstance(value, list) else value
        for key, value in metrics.items()
        if key != "diverged_members"
    }


def grid_edges(grid: dict[str, list], chosen: dict[str, object]) -> list[str]:
    """The tuned keys whose chosen value is the smallest or largest of three or more numbers.

    The best point at the end of a grid says the optimum may lie beyond it.
    """
    edges = []
    for key, values in grid.items():
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) == len(values) >= 3 and chosen[key] in (min(numbers), max(numbers)):
            edges.append(key)
    return edges


def _point_name(values: dict[str, object]) -> str:
    """A grid point's folder name: its values, e.g. ``0.001`` or ``10.0_0.5``."""
    return re.sub(r"[^A-Za-z0-9.+-]+", "_", "_".join(repr(v) for v in values.values())).strip("_")
