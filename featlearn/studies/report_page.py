r"""The reproduction report as a page: Markdown tables of verdicts, the summary, and its HTML rendering.

:func:`write_report` writes ``report.md`` (the verdict counts, the summary of conclusions,
a table of contents, then a section per item: the paper beside featlearn, the claims, the
tuned constants, the figures), ``report.html`` (the same page rendered by markdown-it-py,
self-contained: figures embedded), ``results.csv`` and ``results.json`` (every cell, with
its per-seed values). :func:`summary_table` is the verdict counts per item that the docs
show. The cells and verdicts themselves come from :mod:`featlearn.studies.reproduce` and
:mod:`featlearn.studies.judgement`.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import re
from pathlib import Path

from featlearn.studies.judgement import VERDICTS, verdict_counts
from featlearn.studies.plan import COLUMNS, Plan, RunSettings, judgement_rules
from featlearn.studies.report_items import ITEM_KINDS

#: How a claim cell's method is named in results.csv: its words, so a reader of the CSV sees what was checked.
CLAIM_PREFIX = "claim: "


def interval_text(interval: list[float] | None, decimals: int) -> str:
    """A fitted rate's 95% interval as " [low, high]" after its value; nothing where there is none."""
    return "" if not interval else f" [{interval[0]:.{decimals}f}, {interval[1]:.{decimals}f}]"


def table_text(text: str) -> str:
    """``text`` safe inside a Markdown table cell: a ``|`` (a norm, ||w||) would end the cell."""
    return text.replace("|", "\\|")


def claims_table(rows: list[dict]) -> list[str]:
    """An item's claims as Markdown: the claim, the paper's words, featlearn's two sides and the verdict."""
    if not rows:
        return []
    lines = ["| Claim | The paper | featlearn | Verdict |", "|---|---|---|---|"]
    for row in rows:
        decimals = _decimals(row["metric"]) if row["metric"] else 2
        ours = (
            ""
            if row["mean"] is None
            else f"{row['mean']:.{decimals}f}" + ("" if row["std"] is None else f" ± {row['std']:.{decimals}f}")
        )
        other = row["reference"] or "the paper's bound"
        theirs = "" if row["paper"] is None else f"{row['paper']:.{decimals}f}"
        theirs += interval_text(row.get("paper_interval"), decimals)
        side = "" if row["paper"] is None else f" {row['relation']} {theirs} ({other})"
        if ours:
            ours += interval_text(row.get("interval"), decimals)
        metric = row["metric"] + (f" ({row['metric_statistic']})" if row.get("metric_statistic") else "")
        measured = f"{row.get('left', '')} {metric}: {ours}{side}".strip() if ours else ""
        if measured and row.get("seed_values"):  # a spread: the seeds' values it is the spread of
            seeds = ", ".join(f"{v:.{decimals}f}" for v in row["seed_values"])
            measured += f"; the seeds' {row['metric']} values: {seeds}"
        verdict = {
            "reproduced": "✓",
            "differs": f"✗ {row['category']}: {row['reason']}",
            "uninformative": f"○ {row['category']}: {row['reason']}",
            "not run": f"not run: {row['reason']}",
        }[row["verdict"]]
        claim = row["method"][len(CLAIM_PREFIX) :]
        cells = (claim, row["source"], measured, verdict)
        lines.append("| " + " | ".join(table_text(cell) for cell in cells) + " |")
    return ["", "Claims of the paper checked as relations:", "", *lines]


def _format(value: float | None, decimals: int) -> str:
    return "NA" if value is None else f"{value:.{decimals}f}"


def _decimals(column: str) -> int:
    return next(d for c, _, _, d in COLUMNS if c == column)


#: How a verdict shows in a table cell.
MARKS = {"reproduced": "✓", "differs": "✗", "uninformative": "○", "not run": "not run", "": ""}


def item_table(rows: list[dict], ran: bool) -> list[str]:
    """One item's cells as Markdown: a row per method, per metric "featlearn (paper P) mark"; then the reasons."""
    if not rows:
        return []
    metrics = [c for c, _, _, _ in COLUMNS if any(r["metric"] == c for r in rows)]
    labels = {c: label for c, _, label, _ in COLUMNS}
    lines = [
        "| Method | " + " | ".join(table_text(labels[m]) for m in metrics) + " |",
        "|---|" + "---:|" * len(metrics),
    ]
    notes = []
    for method in dict.fromkeys(r["method"] for r in rows):
        cells = []
        for metric in metrics:
            cell = next((r for r in rows if r["method"] == method and r["metric"] == metric), None)
            if cell is None:
                cells.append("")
                continue
            decimals = _decimals(metric)
            ours = _format(cell["mean"], decimals) + ("" if cell["std"] is None else f" ± {cell['std']:.{decimals}f}")
            ours += interval_text(cell.get("interval"), decimals)
            if cell.get("unreached"):
                ours = ("not reached" if cell["mean"] is None else ours) + f" ({cell['unreached']} seed(s) not reached)"
            bound = {"<": "< ", ">": "> "}.get(cell.get("relation"), "")
            value = _format(cell["paper"], decimals)
            against = f"{bound}{cell['reference']}'s {value}" if cell.get("reference") else f"paper {bound}{value}"
            paper = "" if cell["paper"] is None else f" ({against})"
            cells.append(f"{ours}{paper} {MARKS[cell['verdict']]}".strip())
            if cell["verdict"] in ("differs", "uninformative"):
                notes.append(f"- {method}, {metric}: {cell['verdict']}: {cell['category']}. {cell['reason']}")
            elif cell["verdict"] == "not run" and ran:
                notes.append(f"- {method}, {metric}: not run: {cell['reason']}")
        lines.append(f"| {table_text(method)} | " + " | ".join(cells) + " |")
    legend = (
        "✓ reproduced, ✗ differs, ○ uninformative: both at the trivial rate, or inconclusive (reasons below); "
        "no mark: the paper gives no number."
    )
    return [*lines, "", legend, *([""] + notes if notes else [])]


def write_report(out: Path, plan: Plan, args: RunSettings, outcomes: dict, cells: list[dict], wall: dict) -> None:
    """Write ``report.md``, ``report.html``, ``results.csv`` and ``results.json``."""
    counts, diagnostic = verdict_counts(cells), verdict_counts(cells, diagnostic=True)
    fields = [
        "item",
        "setting",
        "method",
        "metric",
        "relation",
        "paper",
        "mean",
        "std",
        "n",
        "interval",
        "values",
        "verdict",
        "category",
        "reason",
    ]
    with open(out / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for cell in cells:
            row = {k: ("" if cell.get(k) is None else cell.get(k)) for k in fields}
            row["values"] = " ".join(repr(v) for v in cell.get("values") or [])  # every seed's value
            row["interval"] = " ".join(repr(v) for v in cell.get("interval") or [])  # a fitted rate's 95% interval
            writer.writerow(row)
    summary = {"paper": plan.paper, "scale": args.scale, "counts": counts, "diagnostic_counts": diagnostic, **wall}
    (out / "results.json").write_text(json.dumps({"summary": summary, "cells": cells}, indent=1, default=str))

    md = [f"# Reproduction report: {plan.title}", ""]
    md.append(
        f"Scale `{args.scale}` ({plan.scales[args.scale]['seeds']} seed(s); {plan.scales[args.scale]['about']}). "
        f"Regenerate: `featlearn reproduce --paper {plan.paper} --scale {args.scale} --out DIR`."
    )
    md.append("")
    md.append(
        f"**Verdicts: {counts['reproduced']} reproduced, {counts['differs']} differ, {counts['uninformative']} "
        f"uninformative (at the trivial rate, or inconclusive), {counts['not run']} not run** (the cells with a number "
        "in the paper, and the paper's claims, at featlearn's protocol)."
        + (
            f" Diagnostic items, featlearn's own variants judged against the paper's cells for what they show and "
            f"not counted here: {diagnostic['reproduced']} reproduced, {diagnostic['differs']} differ, "
            f"{diagnostic['uninformative']} uninformative."
            if any(diagnostic.values())
            else ""
        )
    )
    md.append("")
    md.append(
        f"Time: {wall['training_seconds'] / 60:.1f} min, the sum of every trial's run (tuning included), as "
        f"each ran on {wall['machine']}. The invocations that filled this folder (a rerun reuses finished "
        f"trials): "
        + "; ".join(
            f"{run['wall_seconds'] / 60:.1f} min, peak resident memory {run['peak_rss_gib']:.2f} GiB"
            for run in wall.get("invocations", [wall])
        )
        + "."
    )
    md += ["", "How cells are judged (`featlearn/studies/judgement.py`):", ""]
    floors = ", ".join(f"{column} {t['absolute']:g}" for column, t in judgement_rules(plan.paper)["tolerances"].items())
    md.append(
        f"- reproduced when |featlearn mean - paper| <= the metric's floor ({floors}; accuracies in points); "
        "the ± beside a cell is the standard deviation over seeds, shown, never added to the window"
    )
    md.append(
        '- an accuracy is judged against its set\'s trivial rate (the row "Trivial (majority class)": always '
        "predicting the commonest class), a cosine against its value at step 0 (that row's cosine: the random "
        "initialisation's, which a frozen layer keeps): ○ uninformative when the paper's value lies within the "
        "floor of it and featlearn's lies there too or within the floor of the paper's (unless the method fits its "
        "training set and only its test accuracy sits there), ✗ a failed fit when featlearn's lies there (or every "
        "run degenerated) and the paper's does not, and never ✓ for a mean that some seeds' degenerate runs are "
        "part of; a cosine of a method that falls short of the paper's fit of its training set is ○ (its neurons "
        "are not the fitted network's), as is a cell the judgement file lists as given by construction"
    )
    if any(c.get("relation") in ("<", ">") for c in cells):
        md.append(
            "- a bound (paper `< v` or `> v`: a theorem's rate, a claim that one curve ends above another): "
            "reproduced when featlearn's mean plus (minus) std_multiple x its std is below (above) v"
        )
    if any(c.get("interval") for c in cells):
        md.append(
            "- a fitted rate (an exponent over d or eta, in brackets its 95% bootstrap interval) is one fit over every "
            "seed: reproduced when the paper's value lies inside the interval, or a bound holds at the interval's "
            "edge; two rates compared with each other are equal when their intervals overlap, and one is below the "
            "other when its interval lies strictly below; no floor widens it"
        )
    if any(c.get("kind") == "claim" for c in cells):
        md.append(
            "- a claim of the paper (the table under an item) is a relation between two measurements, or a "
            "measurement and the paper's bound, judged by the same floors and bounds; ○ inconclusive where its "
            "measurements cannot decide it: the spread of a method that sits at its trivial rate, has degenerate "
            "seeds or whose mean is not the paper's (the paper's spread is of its own fit), chance on the test set "
            "of a method that does not fit its training set either, a relation to a method that is itself a failed "
            "fit, or two accuracies on sets whose trivial rates differ; a claim about chance itself is judged "
            "against the Trivial row"
        )
    if any(c.get("metric_statistic") for c in cells):
        md.append(
            "- a spread (std over seeds) is the sample standard deviation of as many seeds as the paper ran, "
            "compared with the paper's bound as the paper's own was; with 5 seeds it bounds the method's true "
            "spread only loosely (a 95% interval of about 0.6 to 2.9 times the sample value), so a spread whose "
            "interval holds the paper's bound is ○, and only one whose interval lies wholly on one side is judged"
        )
    if any(c.get("reference") for c in cells):
        md.append(
            "- a cell beside a method's name in place of \"paper\" is judged against that method's featlearn "
            "mean in the same item (e.g. a rotated run against the Network)"
        )
    md.append(f"- the reasons for known differences: `featlearn/papers/{plan.paper}.yaml`")
    md += ["", *conclusions(plan, outcomes, cells)]
    figures: dict[str, list[Path]] = {}
    for item in plan.items:
        outcome = outcomes[item.id]
        md += ["", f"## {item.id}: {item.title}", ""]
        if item.notes:
            md += [item.notes.strip(), ""]
        if outcome["status"] != "run":
            md += [f"**Not run**: {outcome['why']}", ""]
        else:
            command = {"phases": "compare", "teacher_check": "teacher-check"}.get(item.kind, item.kind)
            seconds = outcome["training_seconds"]
            md.append(f"`featlearn {command}` in `items/{item.slug}/` ({seconds:.0f} s of training).")
            md.append("")
        rows = [c for c in cells if c["item"] == item.id and c.get("kind") != "claim"]
        md += item_table(rows, outcome["status"] == "run")
        md += claims_table([c for c in cells if c["item"] == item.id and c.get("kind") == "claim"])
        if outcome["status"] == "run":
            md += ITEM_KINDS[item.kind].lines(outcome)
        tuned = outcome.get("tuned") or {}
        tune_seeds = plan.scales[args.scale].get("tune_seeds")
        on = f" of the first {tune_seeds} seeds" if tune_seeds and tune_seeds < plan.scales[args.scale]["seeds"] else ""
        scale = plan.scales[args.scale]
        for method, values in tuned.items():
            chosen = ", ".join(f"{key} = {value}" for key, value in values.items())
            halved = scale.get("halving") and method in (scale.get("halving_only") or [method])
            by = f" by successive halving (eta = {scale['halving']})" if halved else ""
            md += ["", f"{method} tuned on the validation set{on}{by}: {chosen}."]
        pictures = ITEM_KINDS[item.kind].pictures(item, outcome, out / "figures") if outcome["status"] == "run" else []
        figures[item.id] = pictures
        if pictures:  # one paragraph: side by side on GitHub, a grid in the HTML page
            md += ["", " ".join(f"![{picture.stem}](figures/{picture.name})" for picture in pictures)]
    drawn = {picture.resolve() for pictures in figures.values() for picture in pictures}
    for stale in (out / "figures").glob("*.png"):  # pictures of an earlier plan's runs, no longer shown
        if stale.resolve() not in drawn:
            stale.unlink()
    (out / "report.md").write_text("\n".join(md) + "\n")
    (out / "report.html").write_text(markdown_to_html(md, out, plan.title))


def anchor(heading: str) -> str:
    """A section heading's anchor as GitHub forms it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def conclusions(plan: Plan, outcomes: dict, cells: list[dict]) -> list[str]:
    """The report's opening: what reproduces, what differs (each with its category), what was not run, and contents.

    One line per item, built from its cells' verdicts, so the reader sees every conclusion
    before any table; the reasons in full stay with each item's table.
    """
    lines = ["## Summary", ""]
    for item in plan.items:
        judged = [c for c in cells if c["item"] == item.id and c["verdict"]]
        outcome = outcomes[item.id]
        if outcome["status"] != "run":
            lines.append(f"- **{item.id}**: not run: {outcome['why'].split('. ')[0].rstrip('.')}.")
            continue
        if not judged:
            lines.append(f"- **{item.id}**: no number in the paper to judge against (its figures are below).")
            continue
        counts = {v: sum(1 for c in judged if c["verdict"] == v) for v in VERDICTS}
        parts = [f"{counts[v]} {v}" for v in VERDICTS if counts[v]]
        flagged = [c for c in judged if c["verdict"] in ("differs", "uninformative")]
        differing = [
            f'the claim "{c["method"][len(CLAIM_PREFIX) :]}" ({c["category"]})'
            if c.get("kind") == "claim"
            else f"{c['method']} {c['metric']} ({c['category']})"
            for c in flagged
        ]
        label = f"{item.id}** (diagnostic, not counted above)" if item.diagnostic else f"{item.id}**"
        lines.append(f"- **{label}: {', '.join(parts)}" + (f"; {'; '.join(differing)}" if differing else "") + ".")
    lines += ["", "Contents:", ""]
    lines += [f"- [{item.id}: {item.title}](#{anchor(f'{item.id}: {item.title}')})" for item in plan.items]
    return lines


def markdown_to_html(lines: list[str], out: Path, title: str) -> str:
    """The report's Markdown as one self-contained HTML page (markdown-it-py: CommonMark with tables).

    The figures are embedded as data URIs, a paragraph of figures becomes a grid, and every
    section heading gets the anchor :func:`anchor` gives it, so the contents' links work.
    """
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render("\n".join(lines))

    def embed(match: re.Match) -> str:  # a figure's file as a data URI: the page stands alone
        data = base64.b64encode((out / html.unescape(match.group(1))).read_bytes()).decode()
        return f'src="data:image/png;base64,{data}"'

    body = re.sub(r'src="(figures/[^"]+\.png)"', embed, body)
    body = body.replace("<p><img", '<p class="grid"><img')
    body = re.sub(r"<h2>(.*?)</h2>", lambda m: f'<h2 id="{anchor(html.unescape(m.group(1)))}">{m.group(1)}</h2>', body)
    style = (
        "body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}"
        "img{max-width:100%}.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(30em,1fr));gap:1em}"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{style}</style></head><body>\n" + body + "</body></html>\n"
    )


def summary_table(out: Path) -> str:
    """The README's summary of a report folder: verdict counts per item, from its ``results.json``.

    ``featlearn reproduce --summary DIR`` prints it; the README's block is this text (a test
    compares them), so no number there is copied by hand.
    """
    path = Path(out) / "results.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"--summary {str(out)!r} holds no results.json: give the --out folder of a finished featlearn reproduce."
        )
    content = json.loads(path.read_text())
    summary, cells = content["summary"], content["cells"]
    lines = [
        f"| {summary['paper']}, scale `{summary['scale']}` | " + " | ".join(VERDICTS) + " |",
        "|---|" + "---:|" * len(VERDICTS),
    ]
    diagnostic_items = {c["item"] for c in cells if c.get("diagnostic")}
    for item in dict.fromkeys(c["item"] for c in cells):
        counts = [sum(1 for c in cells if c["item"] == item and c["verdict"] == v) for v in VERDICTS]
        if any(counts):
            name = f"{item} (diagnostic)" if item in diagnostic_items else item
            lines.append(f"| {name} | " + " | ".join(str(n) for n in counts) + " |")
    total = summary["counts"]
    totals = " | ".join(f"**{total.get(v, 0)}**" for v in VERDICTS)
    lines.append(f"| **all**{' (diagnostic items not counted)' if diagnostic_items else ''} | {totals} |")
    return "\n".join(lines) + "\n"
