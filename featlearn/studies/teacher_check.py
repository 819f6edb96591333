"""``featlearn teacher-check``: Shi et al.'s check of Algorithm 1 (E.5.4, Figure 26)."""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from featlearn.contracts import Relabelable
from featlearn.studies.trials import BuildRun, cli_flag, default_build, merge_experiment
from featlearn.teacher import first_local_minimum


@dataclass
class TeacherSizeCheck:
    """What :func:`teacher_check` measured: each teacher size and where its students' U-curve has its minimum.

    Args:
        out: The folder of ``teacher_check.csv``, ``teacher_check.md`` and ``teacher_check.png``.
        rows: One per teacher size: ``teacher_size``, ``chosen`` (Algorithm 1's size, listed first),
            ``student_minimum``, ``curve`` (the students' rows), ``at_grid_end`` (the minimum is the
            sweep's last size) and ``at_grid_start`` (its moving average reaches the first size).
    """

    out: Path
    rows: list[dict]

    def student_minimum(self, teacher_size: int) -> int:
        """The student size at the minimum of the U-curve under the teacher FC(``teacher_size``)."""
        return next(row["student_minimum"] for row in self.rows if row["teacher_size"] == teacher_size)


def teacher_check(
    configs: Sequence[str | Path | Mapping],
    out: str | Path,
    *,
    teacher_sizes: str | Sequence[int | str] = "9,50,500",
    student_sizes: str | Sequence[int] | None = None,
    build: BuildRun | None = None,
    flag: Callable[[str], str] = str,
) -> TeacherSizeCheck:
    """Shi et al.'s check of Algorithm 1 (E.5.4, Figure 26): does the students' U-curve minimum follow the teacher?

    For each teacher size T in ``teacher_sizes`` (``chosen`` names the size Algorithm 1
    chooses on the config's data, as Figure 26(b)'s FC(9) is on MNIST), the teacher FC(T)
    (trained with R on U as in :meth:`TeacherSearch.teacher`, and cached) labels the
    injected inputs alone; students of every size in ``student_sizes`` (default: the
    config's ``teacher.init_args.sizes``) are trained on them as the sweep trains
    teachers, and the minimum of their test-loss curve is found by the same rule
    (:func:`first_local_minimum`). If the method works, the students' minimum moves with
    T: labels from a larger teacher are a more complex function. Writes
    ``out/config.yaml`` (the experiment as merged), ``out/teacher_check.csv`` (every
    student), ``out/teacher_check.md`` (each T and its students' minimum) and
    ``out/teacher_check.png`` (the curves, Figure 26 b-d).

    Args:
        configs: A teacher experiment: shipped config names, paths or mappings, merged in order.
        out: The output folder.
        teacher_sizes: Teacher sizes T (comma-separated text or a list); ``chosen``: Algorithm 1's.
        student_sizes: Student sizes, at least three (default: the config's teacher sizes).
        build: Builds one run (default: :func:`featlearn.runner.build_cli`).
        flag: How an error names an option (the command line passes its ``--flags``).

    Raises:
        ValueError: Bad sizes (named), or a config without a ``teacher:`` section and a TeacherMixture.
    """
    build = build or default_build()
    if not isinstance(teacher_sizes, str):
        teacher_sizes = ",".join(str(size) for size in teacher_sizes)
    if student_sizes is not None and not isinstance(student_sizes, str):
        student_sizes = ",".join(str(size) for size in student_sizes)

    def sizes(text: str, flag: str) -> list[int]:
        try:
            values = [int(v) for v in text.split(",") if v.strip()]
        except ValueError:
            values = []
        if not values or any(v < 1 for v in values):
            raise ValueError(f"{flag} must be positive integers separated by commas, got {text!r}.")
        return values

    tokens = [v.strip() for v in teacher_sizes.split(",")]
    wants_chosen, given = "chosen" in tokens, ",".join(t for t in tokens if t != "chosen")
    teacher_sizes = [] if wants_chosen and not given else sizes(given, flag("teacher_sizes"))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    experiment, _ = merge_experiment(configs)  # one file, the check's record, which the run is built from
    (out / "config.yaml").write_text(yaml.safe_dump(experiment, sort_keys=False))
    cli_args = ["--config", str(out / "config.yaml"), "--trainer.logger", "false"]
    argv_before, sys.argv = sys.argv, sys.argv[:1]  # the CLI warns when sys.argv holds other arguments
    try:
        cli = build(cli_args, run=False)
    finally:
        sys.argv = argv_before
    search, data = cli.config_init.get("teacher"), cli.datamodule
    if search is None or not isinstance(data, Relabelable):
        raise ValueError("featlearn teacher-check needs a config with a `teacher:` section and a TeacherMixture.")
    student_sizes = sizes(student_sizes, flag("student_sizes")) if student_sizes else list(search.sizes)
    if len(student_sizes) < 3:
        raise ValueError(f"{flag('student_sizes')} needs at least three sizes to find a minimum, got {student_sizes}.")
    teacher_data, key, classes = data.teacher_data(), data.teacher_data_key(), data.num_classes
    chosen = None
    if wants_chosen:  # Algorithm 1's teacher: the minimum of its sweep on L (cached), or the config's size
        chosen = search.size
        if chosen is None:
            sweep = search.sweep_sizes(teacher_data, data.labelled_data_key(), classes, search.sizes)
            chosen = sweep[first_local_minimum([row["test_loss"] for row in sweep], search.neighbours)[0]]["size"]
        teacher_sizes = [chosen] + [size for size in teacher_sizes if size != chosen]
    results = []
    for size in teacher_sizes:
        teacher = search.teacher(teacher_data, key, classes, size)
        data.relabel(lambda x, t=teacher: t(x).argmax(-1))
        train_x, train_y = data.labelled_part("train", "injected")
        test_x, test_y = data.labelled_part("test", "injected")
        students = {"train_x": train_x, "train_y": train_y, "test_x": test_x, "test_y": test_y, "unlabelled": None}
        student_key = {"labels": search.teacher_spec(key, size), "part": "injected"}
        curve = search.sweep_sizes(students, student_key, classes, student_sizes)
        index, smoothed = first_local_minimum([row["test_loss"] for row in curve], search.neighbours)
        for row, value in zip(curve, smoothed, strict=True):
            row["smoothed_log_loss"] = value
        results.append(
            {
                "teacher_size": size,
                "chosen": size == chosen,
                "student_minimum": curve[index]["size"],
                "curve": curve,
                "at_grid_end": index == len(curve) - 1,
                # The minimum's moving average reaches the sweep's first size: the curve's falling arm, if
                # any, is not seen, so where the U's bottom lies is not measured.
                "at_grid_start": index <= search.neighbours,
            }
        )
    _write_check(out, results, search.seeds)
    return TeacherSizeCheck(out, results)


def starts_above_width_one(row: dict) -> bool:
    """Whether a teacher check's students' minimum lies at a sweep start that could hide a smaller one.

    ``at_grid_start`` says the smoothed minimum's window reaches the sweep's first size; that is an
    edge only where the first size is above width 1, since no student is narrower than one unit.
    """
    sizes = [r["size"] for r in row.get("curve") or []]
    return bool(row.get("at_grid_start", False)) and (not sizes or min(sizes) > 1)


def parse_args(argv: list[str]):
    """The ``featlearn teacher-check`` options."""
    import argparse

    parser = argparse.ArgumentParser(
        allow_abbrev=False,  # --ou must not be taken for --out: a misspelt option is refused
        prog="featlearn teacher-check",
        description="Students of several sizes on the injected inputs labelled by teachers of several sizes "
        "(Shi et al. 2022, Figure 26): does the students' U-curve minimum follow the teacher's size?",
    )
    parser.add_argument("--config", action="append", required=True, help="A teacher experiment (repeatable).")
    parser.add_argument(
        "--teacher-sizes", default="9,50,500", help="Teacher sizes T, comma-separated; 'chosen': Algorithm 1's."
    )
    parser.add_argument("--student-sizes", default=None, help="Student sizes (default: the config's teacher sizes).")
    parser.add_argument("--out", required=True, help="Output folder.")
    return parser.parse_args(argv)


def _write_check(out: Path, results: list[dict], seeds: int) -> None:
    with open(out / "teacher_check.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "teacher_size",
                "student_size",
                "parameters",
                "mean_test_loss",
                "smoothed_log_loss",
                "chosen",
                "mean_test_acc",
            ]
        )
        for result in results:
            for row in result["curve"]:
                writer.writerow(
                    [
                        result["teacher_size"],
                        row["size"],
                        row["parameters"],
                        sum(row["test_loss"]) / len(row["test_loss"]),
                        row["smoothed_log_loss"],
                        int(row["size"] == result["student_minimum"]),
                        sum(row["test_acc"]) / len(row["test_acc"]),
                    ]
                )
    lines = [
        f"# Students on the injected inputs, labelled by teachers of each size ({seeds} seeds per student)",
        "",
        "| teacher m | students' minimum m | at the grid's edge |",
        "| ---: | ---: | --- |",
    ]

    def edge(r: dict) -> str:
        if r["at_grid_end"]:
            return "yes (the last size)"
        if starts_above_width_one(r):
            return "yes (smoothed over the first size)"
        return "no (from width 1: nothing lies below)" if r["at_grid_start"] else "no"

    lines += [
        f"| {r['teacher_size']}{' (Algorithm 1)' if r['chosen'] else ''} | {r['student_minimum']} | {edge(r)} |"
        for r in results
    ]
    (out / "teacher_check.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ModuleNotFoundError:
        return
    figure, axes = plt.subplots(figsize=(6, 4))
    for result in results:
        params = [row["parameters"] for row in result["curve"]]
        line = axes.plot(
            params,
            [math.exp(row["smoothed_log_loss"]) for row in result["curve"]],
            "-o",
            ms=3,
            label=f"teacher m = {result['teacher_size']}" + (" (Algorithm 1)" if result["chosen"] else ""),
        )[0]
        chosen = next(row for row in result["curve"] if row["size"] == result["student_minimum"])
        axes.plot([chosen["parameters"]], [math.exp(chosen["smoothed_log_loss"])], "*", ms=14, color=line.get_color())
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("parameters of the student")
    axes.set_ylabel("test loss on the injected inputs")
    axes.set_title("Students' U-curves by teacher size (Figure 26)")
    axes.legend()
    figure.tight_layout()
    figure.savefig(out / "teacher_check.png", dpi=100)
    plt.close(figure)


def teacher_check_command(argv: list[str], build: BuildRun) -> TeacherSizeCheck:
    """``featlearn teacher-check ...``: :func:`teacher_check`, then each teacher size's students' minimum."""
    args = parse_args(argv)
    check = teacher_check(
        args.config,
        args.out,
        teacher_sizes=args.teacher_sizes,
        student_sizes=args.student_sizes,
        build=build,
        flag=cli_flag,
    )
    for result in check.rows:
        print(f"teacher m = {result['teacher_size']}: students' minimum at m = {result['student_minimum']}")
    return check
