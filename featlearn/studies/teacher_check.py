"""``featlearn teacher-check``: Shi et al.'s check of Algorithm 1 (E.5.4, Figure 26)."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

from featlearn.contracts import Relabelable
from featlearn.teacher import first_local_minimum


def check_teacher_sizes(argv: list[str], build) -> list[dict]:
    """``featlearn teacher-check``: Shi et al.'s check of Algorithm 1 (E.5.4, Figure 26).

    For each teacher size T in ``--teacher-sizes`` (default 9, 50, 500; ``chosen`` names
    the size Algorithm 1 chooses on the config's data, as Figure 26(b)'s FC(9) is on MNIST), the teacher FC(T)
    (trained with R on U as in :meth:`TeacherSearch.teacher`, and cached) labels the
    injected inputs alone; students of every size in ``--student-sizes`` (default: the
    config's ``teacher.init_args.sizes``) are trained on them as the sweep trains
    teachers, and the minimum of their test-loss curve is found by the same rule
    (:func:`first_local_minimum`). If the method works, the students' minimum moves with
    T: labels from a larger teacher are a more complex function. Writes
    ``OUT/teacher_check.csv`` (every student), ``OUT/teacher_check.md`` (each T and its
    students' minimum) and ``OUT/teacher_check.png`` (the curves, Figure 26 b-d).

    Args:
        argv: ``--config FILE`` (repeatable), ``--teacher-sizes``, ``--student-sizes``, ``--out DIR``.
        build: :func:`featlearn.cli.build_cli`.

    Returns:
        One row per teacher size: ``teacher_size``, ``chosen`` (Algorithm 1's size, listed first),
        ``student_minimum``, ``curve`` (the rows), ``at_grid_end``.
    """
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
    args = parser.parse_args(argv)

    def sizes(text: str, flag: str) -> list[int]:
        try:
            values = [int(v) for v in text.split(",") if v.strip()]
        except ValueError:
            values = []
        if not values or any(v < 1 for v in values):
            raise ValueError(f"{flag} must be positive integers separated by commas, got {text!r}.")
        return values

    tokens = [v.strip() for v in args.teacher_sizes.split(",")]
    wants_chosen, given = "chosen" in tokens, ",".join(t for t in tokens if t != "chosen")
    teacher_sizes = [] if wants_chosen and not given else sizes(given, "--teacher-sizes")
    cli_args = [a for path in args.config for a in ("--config", path)] + ["--trainer.logger", "false"]
    argv_before, sys.argv = sys.argv, sys.argv[:1]  # the CLI warns when sys.argv holds other arguments
    try:
        cli = build(cli_args, run=False)
    finally:
        sys.argv = argv_before
    search, data = cli.config_init.get("teacher"), cli.datamodule
    if search is None or not isinstance(data, Relabelable):
        raise ValueError("featlearn teacher-check needs a config with a `teacher:` section and a TeacherMixture.")
    student_sizes = sizes(args.student_sizes, "--student-sizes") if args.student_sizes else list(search.sizes)
    if len(student_sizes) < 3:
        raise ValueError(f"--student-sizes needs at least three sizes to find a minimum, got {student_sizes}.")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
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
            }
        )
    _write_check(out, results, search.seeds)
    return results


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
        "| teacher m | students' minimum m | at the grid's end |",
        "| ---: | ---: | --- |",
    ]
    lines += [
        f"| {r['teacher_size']}{' (Algorithm 1)' if r['chosen'] else ''} | {r['student_minimum']} "
        f"| {'yes' if r['at_grid_end'] else 'no'} |"
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


def teacher_check(argv: list[str], build) -> None:
    """``featlearn teacher-check ...``: :func:`check_teacher_sizes`, then each teacher size's students' minimum."""
    results = check_teacher_sizes(argv, build)
    for result in results:
        print(f"teacher m = {result['teacher_size']}: students' minimum at m = {result['student_minimum']}")
