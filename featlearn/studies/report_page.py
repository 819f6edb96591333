r"""The reproduction report as a page: Markdown tables of verdicts, the summary, and its HTML rendering.

:func:`write_report` writes ``report.md`` (the claims' verdict counts and the claims
matrix first: one line per claim of the paper, its place, the paper's number against
featlearn's and the verdict, linked to its evidence; then the cells' counts, the rules, a
one-line summary per item, a table of contents, a section per item: the paper beside
featlearn, the relations, the tuned constants, the figures; and last the notes, each long
reason written once), ``report.html`` (the same page rendered by markdown-it-py,
self-contained: figures embedded), ``results.csv`` and ``results.json`` (every cell, with
its per-seed values and its claim; the notes and claims in the JSON). :func:`summary_table`
is the claims matrix and the cells' counts per item that the papers' pages show. The cells
and verdicts themselves come from :mod:`featlearn.studies.judgement`.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import re
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import NamedTuple

from featlearn.studies.judgement import (
    MARKS,
    RELATION_PREFIX,
    SHORT_REASON,
    VERDICTS,
    Cell,
    Claim,
    claim_counts,
    short_reason,
    verdict_counts,
)
from featlearn.studies.plan import COLUMNS, Plan, RunSettings, judgement_rules
from featlearn.studies.report_items import ITEM_KINDS

#: A claim's verdict as the claims matrix shows it: a coloured mark, then the word.
CLAIM_MARKS = {
    "reproduced": "✅ reproduced",
    "differs": "❌ differs",
    "cannot decide": "🟡 cannot decide",
    "by construction": "🔷 holds by construction",
    "not run": "⬜ not run",
}


#: In the self-contained page, each claim mark's emoji becomes a coloured glyph: verdict -> (emoji, glyph).
PAGE_MARKS = {v: (text.split()[0], "–" if v == "not run" else MARKS[v]) for v, text in CLAIM_MARKS.items()}


class Notes:
    """The long reasons of a report, each written once at the end: a cell shows the first sentences and links there.

    A judgement file's reason (a cause) is often led by words the rules write for the one cell (a failed
    fit, a paper value below its trivial rate, with that cell's numbers). With the causes given, such a
    reason keeps its lead in the table and links to one note per cause, so train and test cells that
    share a cause share its note.

    Args:
        causes: The judgement file's reasons, as written there.
    """

    def __init__(self, causes: Iterable[str] = ()) -> None:
        self.numbers: dict[str, int] = {}
        # The longest first: a cause that ends another is matched only where the longer one is not.
        self.causes = sorted({" ".join(c.split()) for c in causes if c and c.strip()}, key=len, reverse=True)

    def split(self, reason: str) -> tuple[str, str]:
        """(the cell's own lead, the long cause it ends with), or ("", the whole reason) where none is a note's."""
        text = " ".join((reason or "").split())
        for cause in self.causes:
            if text != cause and text.endswith(" " + cause) and short_reason(cause) != cause:
                return text[: -len(cause)].strip(), cause
        return "", text

    def number(self, reason: str) -> int | None:
        """The note of a reason too long for a table (:func:`~featlearn.studies.judgement.short_reason`), or None."""
        text = " ".join((reason or "").split())
        if short_reason(text) == text:
            return None
        return self.numbers.setdefault(self.split(text)[1], len(self.numbers) + 1)

    def cite(self, reason: str) -> str:
        """The reason as a table shows it: whole when short, else its first sentences and a link to its note."""
        number = self.number(reason)
        if number is None:
            return " ".join((reason or "").split())
        lead, note = self.split(reason)
        if lead:  # the cell's own words, then as much of the cause as the table's length allows
            short = short_reason(note, max(SHORT_REASON - len(lead), SHORT_REASON // 4))
            return f"{lead} {short} ([note {number}](#note-{number}))"
        return f"{short_reason(note)} ([note {number}](#note-{number}))"

    def lines(self) -> list[str]:
        """The notes section: each long reason once, under a heading a cell links to."""
        if not self.numbers:
            return []
        lines = ["", "## Notes", "", "The reasons too long for a table, each written once; the cells link here."]
        for text, number in self.numbers.items():
            lines += ["", f"### Note {number}", "", text]
        return lines


def interval_text(interval: list[float] | None, decimals: int) -> str:
    """A fitted rate's 95% interval as " [low, high]" after its value; nothing where there is none."""
    return "" if not interval else f" [{interval[0]:.{decimals}f}, {interval[1]:.{decimals}f}]"


def table_text(text: str) -> str:
    """``text`` safe inside a Markdown table cell: a ``|`` (a norm, ||w||) would end the cell."""
    return text.replace("|", "\\|")


def relations_table(rows: list[Cell], notes: Notes | None = None, floors: dict | None = None) -> list[str]:
    """An item's relations as Markdown: the relation, the paper's words, featlearn's two sides and the verdict.

    ``floors`` (column -> the floor) shows the margin a bound between two methods' means must clear
    (:func:`~featlearn.studies.judgement.relation_margin`) beside the other side.
    """
    notes = notes or Notes()
    if not rows:
        return []
    lines = ["| Relation | The paper | featlearn | Verdict |", "|---|---|---|---|"]
    for row in rows:
        decimals = _decimals(row.metric) if row.metric else 2
        ours = (
            ""
            if row.mean is None
            else f"{row.mean:.{decimals}f}" + ("" if row.std is None else f" ± {row.std:.{decimals}f}")
        )
        other = row.reference or "the paper's bound"
        theirs = "" if row.paper is None else f"{row.paper:.{decimals}f}"
        theirs += interval_text(row.paper_interval, decimals)
        floor = (floors or {}).get(row.metric)
        margin = row.reference and row.relation in "<>" and not row.metric_statistic and not row.interval
        if floor and margin and row.paper is not None and row.metric in ("train", "test", "cos"):
            theirs += f" {'+' if row.relation == '>' else '-'} {floor:g} (the floor)"
        # What was tested, apart from the value: "0.71 < 0.20" would read as a fact where the test failed.
        side = "" if row.paper is None else f"; tested: {row.relation} {theirs} ({other})"
        if ours:
            ours += interval_text(row.interval, decimals)
        metric = row.metric + (f" ({row.metric_statistic})" if row.metric_statistic else "")
        measured = f"{row.left} {metric}: {ours}{side}".strip() if ours else ""
        if measured and row.seed_values:  # a spread: the seeds' values it is the spread of
            seeds = ", ".join(f"{v:.{decimals}f}" for v in row.seed_values)
            measured += f"; the seeds' {row.metric} values: {seeds}"
        verdict = verdict_text(row, notes)
        relation = row.method[len(RELATION_PREFIX) :]
        cells = (relation, row.source, measured, verdict)
        lines.append("| " + " | ".join(table_text(cell) for cell in cells) + " |")
    return ["", "The paper's statements checked as relations:", "", *lines]


def verdict_text(cell: Cell, notes: Notes) -> str:
    """A cell's verdict in words: its mark, what a ✓ rules out, or the category and the (cited) reason."""
    if cell.verdict == "reproduced":
        return "✓" + (f" (rules out {cell.rules_out})" if cell.rules_out else "")
    if cell.verdict == "not run":
        return f"not run: {notes.cite(cell.reason)}"
    return f"{MARKS[cell.verdict]} {cell.category}: {notes.cite(cell.reason)}"


def _format(value: float | None, decimals: int) -> str:
    return "NA" if value is None else f"{value:.{decimals}f}"


def _decimals(column: str) -> int:
    return next(d for c, _, _, d in COLUMNS if c == column)


def item_table(rows: list[Cell], ran: bool, notes: Notes | None = None) -> list[str]:
    """One item's cells as Markdown: a row per method, per metric "featlearn (paper P) mark"; then the reasons."""
    if not rows:
        return []
    notes = notes or Notes()
    metrics = [c for c, _, _, _ in COLUMNS if any(r.metric == c for r in rows)]
    labels = {c: label for c, _, label, _ in COLUMNS}
    lines = [
        "| Method | " + " | ".join(table_text(labels[m]) for m in metrics) + " |",
        "|---|" + "---:|" * len(metrics),
    ]
    reasons: dict[str, list[str]] = {}  # a verdict's text -> the cells it explains: one cause, written once
    for method in dict.fromkeys(r.method for r in rows):
        cells = []
        for metric in metrics:
            cell = next((r for r in rows if r.method == method and r.metric == metric), None)
            if cell is None:
                cells.append("")
                continue
            decimals = _decimals(metric)
            ours = _format(cell.mean, decimals) + ("" if cell.std is None else f" ± {cell.std:.{decimals}f}")
            ours += interval_text(cell.interval, decimals)
            if cell.unreached:
                ours = ("not reached" if cell.mean is None else ours) + f" ({cell.unreached} seed(s) not reached)"
            bound = {"<": "< ", ">": "> "}.get(cell.relation, "")
            value = _format(cell.paper, decimals)
            against = f"{bound}{cell.reference}'s {value}" if cell.reference else f"paper {bound}{value}"
            paper = "" if cell.paper is None else f" ({against})"
            cells.append(f"{ours}{paper} {MARKS[cell.verdict]}".strip())
            explained = cell.verdict in ("differs", "cannot decide", "by construction")
            if explained or (cell.verdict == "not run" and ran):
                reasons.setdefault(verdict_text(cell, notes), []).append(f"{method}, {metric}")
        lines.append(f"| {table_text(method)} | " + " | ".join(cells) + " |")
    legend = (
        "✓ reproduced, ✗ differs, ○ cannot decide (both at the trivial rate, a rival that passes the same test, or "
        "inconclusive), ≡ holds by construction (reasons below); no mark: the paper gives no number."
    )
    listed = [f"- {'; '.join(cells)}: {text}" for text, cells in reasons.items()]
    return [*lines, "", legend, *([""] + listed if listed else [])]


def constants_line(constants: dict) -> str:
    """Whether an item's open constants were calibrated on it or are a prediction, and which candidate they are."""
    chosen = f"the candidate *{constants['candidate']}*, chosen by the objective *{constants['objective']}*"
    where = f"item {constants['calibration']}"
    if constants["calibrated"]:
        return f"**Calibrated**: the paper's open constants were chosen on this table: {chosen} ({where})."
    return (
        f"**Predicted**: this table runs at {chosen} on another table ({where}); the paper's open constants are "
        "not refitted here."
    )


def fitted_here_caveat(plan: Plan) -> list[str]:
    """The first screen's line on the process choices items made on their own tables: those cells are the fit (≡)."""
    fitted = [item for item in plan.items if item.fitted_here]
    if not fitted:
        return []
    parts = "; ".join(
        f"{item.id} ({short_reason(' '.join(item.fitted_here['why'].split()), 200).rstrip('.')}: "
        + ", ".join(f"{method} {column}" for method, column in item.fitted_here["cells"])
        + ")"
        for item in fitted
    )
    return [
        f"**Choices made on a table's own runs** (their cells hold by construction, not predictions): {parts}."
    ]


def fitted_here_line(fitted: dict) -> str:
    """The process choice an item made on its own table, and the cells it was chosen to get (those are ≡)."""
    cells = ", ".join(f"{method} {column}" for method, column in fitted["cells"])
    return f"**Chosen on this table**: {fitted['why'].strip()} Its cells ({cells}) are the fit, not a prediction."


def write_report(
    out: Path, plan: Plan, args: RunSettings, outcomes: dict, cells: list[Cell], claims: list[Claim], wall: dict
) -> None:
    """Write ``report.md``, ``report.html``, ``results.csv`` and ``results.json``."""
    rules = judgement_rules(plan.paper)
    notes = Notes(entry.get("reason", "") for entry in rules.get("reasons", []))
    floors = {column: float(t["absolute"]) for column, t in rules.get("tolerances", {}).items()}
    headings = section_headings(plan)
    md = [f"# Reproduction report: {plan.title}", ""]
    md.append(
        f"Scale `{args.scale}` ({plan.scales[args.scale]['seeds']} seed(s); {plan.scales[args.scale]['about']}). "
        f"Regenerate: `{regenerate_command(plan.paper, args.scale, args.only)}`."
    )
    caveats = calibration_caveats(plan, outcomes) + fitted_here_caveat(plan)
    leads = calibration_leads(plan, outcomes)
    md += ["", headline(claims, args.only), ""]
    md += [line + "\n" for line in leads]
    md += claims_matrix(claims, headings, notes, floors=floors)
    counts, diagnostic = verdict_counts(cells), verdict_counts(cells, diagnostic=True)
    md += ["", "Cells (a number of a table, or a relation; diagnostic items' apart): " + count_text(counts)
           + (f"; diagnostic items: {count_text(diagnostic)}" if any(diagnostic.values()) else "") + "."]  # fmt: skip
    invocations = wall.get("invocations", [wall])
    md += [
        "",
        f"Time: {wall['training_seconds'] / 60:.1f} min of training (every trial, tuning included, a reused one at the "
        "time it took when it ran), "
        f"{sum(r['wall_seconds'] for r in invocations) / 60:.1f} min of wall time over {len(invocations)} "
        f"invocation(s), peak resident memory {max(r['peak_rss_gib'] for r in invocations):.2f} GiB, on "
        f"{wall['machine']} (each invocation in `results.json`).",
    ]
    if caveats:  # in full, below the claims matrix: the first screen holds their leads
        label = f"**{CONSTANTS_HEADING}**: "  # the section's heading says it
        md += ["", f"## {CONSTANTS_HEADING}", ""]
        md += [(line[len(label)].upper() + line[len(label) + 1 :] if line.startswith(label) else line) + "\n"
               for line in caveats]  # fmt: skip
    md += ["", *judgement_lines(plan, cells), "", *conclusions(plan, outcomes, cells)]
    figures: dict[str, list[Path]] = {}
    for item in plan.items:
        outcome = outcomes[item.id]
        md += ["", f"## {headings[item.id]}", ""]
        if item.notes:
            md += [item.notes.strip(), ""]
        if outcome["status"] != "run":
            md += [f"**Not run**: {outcome['why']}", ""]
        else:
            command = {
                "phases": "compare",
                "transitions": "compare",
                "teacher_check": "teacher-check",
                "calibration": "calibrate",
            }.get(
                item.kind, item.kind
            )
            seconds = outcome["training_seconds"]
            md.append(f"`featlearn {command}` in `items/{item.slug}/` ({seconds:.0f} s of training).")
            md.append("")
            if outcome.get("constants"):
                md += [constants_line(outcome["constants"]), ""]
            if item.fitted_here:
                md += [fitted_here_line(item.fitted_here), ""]
        rows = [c for c in cells if c.item == item.id and c.kind != "relation"]
        md += item_table(rows, outcome["status"] == "run", notes)
        md += relations_table([c for c in cells if c.item == item.id and c.kind == "relation"], notes, floors)
        if outcome["status"] == "run":
            md += ITEM_KINDS[item.kind].lines(outcome)
        tuned = outcome.get("tuned") or {}
        tune_seeds = plan.scales[args.scale].get("tune_seeds")
        on = f" of the first {tune_seeds} seeds" if tune_seeds and tune_seeds < plan.scales[args.scale]["seeds"] else ""
        scale = plan.scales[args.scale]
        edges = outcome.get("tuned_edges") or {}
        beyond = " (the end of its grid: the optimum may lie beyond)"
        for method, values in tuned.items():
            chosen = ", ".join(
                f"{key} = {value}" + (beyond if key in edges.get(method, {}) else "") for key, value in values.items()
            )
            halved = scale.get("halving") and method in (scale.get("halving_only") or [method])
            by = f" by successive halving (eta = {scale['halving']})" if halved else ""
            md += ["", f"{method} tuned on the validation set{on}{by}: {chosen}."]
        pictures = ITEM_KINDS[item.kind].pictures(item, outcome, out / "figures") if outcome["status"] == "run" else []
        figures[item.id] = pictures
        if pictures:  # one paragraph: side by side on GitHub, a grid in the HTML page
            md += ["", " ".join(f"![{picture.stem}](figures/{picture.name})" for picture in pictures)]
    md += notes.lines()
    drawn = {picture.resolve() for pictures in figures.values() for picture in pictures}
    for stale in (out / "figures").glob("*.png"):  # pictures of an earlier plan's runs, no longer shown
        if stale.resolve() not in drawn:
            stale.unlink()
    calibrations = [
        {
            "item": item.id,
            "chosen": outcomes[item.id].get("chosen"),
            "caveats": caveats,
            "leads": leads,
            "table": ITEM_KINDS[item.kind].lines(outcomes[item.id]),
        }
        for item in plan.items
        if item.kind == "calibration" and outcomes[item.id]["status"] == "run"
    ]
    write_results(out, plan, args, cells, claims, notes, wall, calibrations)
    (out / "report.md").write_text("\n".join(md) + "\n")
    (out / "report.html").write_text(markdown_to_html(md, out, plan.title))


def section_headings(plan: Plan) -> dict[str, str]:
    """Each item's section heading (``id: title``), whose anchor the claims matrix links to."""
    return {item.id: f"{item.id}: {item.title}" for item in plan.items}


def count_text(counts: dict[str, int]) -> str:
    """Verdict counts in words: "12 reproduced, 3 differs, ..."."""
    return ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)


def regenerate_command(paper: str, scale: str, only: list[str] | tuple[str, ...] | None = None) -> str:
    """The command that writes a report again (its items too, for a partial report)."""
    items = "".join(f' "{item}"' for item in only or ())
    return f"featlearn reproduce --paper {paper} --scale {scale}" + (f" --only{items}" if items else "") + " --out DIR"


def headline(claims: list[Claim], only: list[str] | tuple[str, ...] | None = None) -> str:
    """The report's first line of results: how many of the paper's claims have each verdict.

    A partial report (``only``: the items it ran) counts the claims those items test, and says so.
    """
    counts, diagnostic = claim_counts(claims), claim_counts(claims, diagnostic=True)
    total = sum(counts.values())
    whose = "The paper's" if not only else f"A partial report (only {'; '.join(only)}): the"
    if only and not total:  # its items are featlearn's own diagnostics: no claim of the paper's protocol to count
        text = f"**A partial report (only {'; '.join(only)}): it tests no claim of the paper's protocol.**"
        return text + (f" featlearn's diagnostic items: {count_text(diagnostic)}." if any(diagnostic.values()) else "")
    text = (
        f"**{whose} {total} claims: {counts['reproduced']} reproduced, {counts['differs']} differ, "
        f"{counts['cannot decide']} cannot be decided, {counts['by construction']} hold by construction, "
        f"{counts['not run']} not run.**"
    )
    if any(diagnostic.values()):
        text += f" featlearn's diagnostic items, apart: {count_text(diagnostic)}."
    return text


def scored(name: str, values: dict, errors: dict | None = None) -> str:
    """A calibration candidate's name with its J (± its standard error) where recorded."""
    if name not in values:
        return f"*{name}*"
    error = (errors or {}).get(name)
    spread = f" ± {error:.3f}" if error is not None and math.isfinite(error) else ""
    return f"*{name}* (J {values[name]:.3f}{spread})"


#: The report's section that holds the calibration's caveats in full (the first screen holds their leads).
CONSTANTS_HEADING = "The constants these verdicts rest on"


class CalibrationChoice(NamedTuple):
    """One objective's choice in a run calibration, as the first screen and its full section tell it."""

    calibration_id: str  # the calibration item
    outcome: dict  # its outcome
    objective: str
    chosen: str  # the chosen candidate
    tied: list[str]  # the other candidates J does not tell from it
    face: str | None  # the choice with degenerate seeds at face value
    users: list[str]  # the items that run at it


def calibration_choices(plan: Plan, outcomes: dict) -> Iterable[CalibrationChoice]:
    """Each objective the items take their constants from, with the run calibration's choice for it."""
    calibration = next((i for i in plan.items if i.kind == "calibration"), None)
    outcome = outcomes.get(calibration.id) if calibration else None
    if not outcome or outcome.get("status") != "run":
        return
    for objective in dict.fromkeys(i.constants for i in plan.items if i.constants):
        chosen = (outcome.get("chosen") or {}).get(objective)
        if chosen is None:
            continue
        tied = [name for name in (outcome.get("tied") or {}).get(objective) or [] if name != chosen]
        face = (outcome.get("at_face_value") or {}).get(objective)
        users = [item.id for item in plan.items if item.constants == objective and item.kind != "calibration"]
        yield CalibrationChoice(calibration.id, outcome, objective, chosen, tied, face, users)


def calibration_caveats(plan: Plan, outcomes: dict) -> list[str]:
    """One line per objective the items take their constants from: the choice, and what it was not told from.

    The verdicts of every item that runs at the chosen candidate rest on that choice. Where the
    objective does not tell the choice apart from other candidates (within two standard errors of
    J), or would choose another with degenerate seeds at face value, a reader must see it before
    the claims.
    """
    lines = []
    for calibration_id, outcome, objective, chosen, tied, face, users in calibration_choices(plan, outcomes):
        values = (outcome.get("values") or {}).get(objective) or {}
        errors = (outcome.get("errors") or {}).get(objective) or {}
        face_values = (outcome.get("face_values") or {}).get(objective) or {}
        runs_at = (
            f"the items that run at it: {', '.join(users)}" if users else "no item runs at it"
        )
        smallest = min([chosen, *tied], key=lambda name: values.get(name, math.inf))
        if smallest != chosen and chosen == (outcome.get("defaults") or {}).get(objective):
            text = (
                f"**{CONSTANTS_HEADING}**: the calibration (item {calibration_id}) kept its "
                f"default, {scored(chosen, values, errors)} (the candidates file's reading of the process the paper's "
                f"text gives; the paper states no values), by the objective *{objective}*: the smallest J, that of "
                f"{scored(smallest, values, errors)}, lies within two standard errors of the default's, and the "
                "default is left only where the table prefers another beyond that. The choice was made on this "
                f"table, so its cells are calibrated, not predicted; {runs_at}."
            )
            face_errors = (outcome.get("face_errors") or {}).get(objective) or {}
            if face == chosen and face_values.get(chosen, math.inf) < face_values.get(smallest, math.inf):
                text += (
                    f" With degenerate seeds taken at face value its J is the smallest: "
                    f"{scored(chosen, face_values, face_errors)}, against {scored(smallest, face_values, face_errors)}"
                    " (the rule scores each degenerate seed 1 on every accuracy target, which raises its J and "
                    "the J's spread)."
                )
            met = (outcome.get("met_all") or {}).get(objective) or {}
            rivals = list(dict.fromkeys([smallest, *tied]))
            if chosen in met and all(name in met for name in rivals):
                within, total = met[chosen]
                others = ", ".join(f"{met[name][0]} (*{name}*)" for name in rivals)
                text += (
                    f" It meets {within} of the table's {total} numbers within the paper's floors; the candidates "
                    f"J does not tell from it meet {others}."
                )
            targets = (outcome.get("met_targets") or {}).get(objective) or {}
            if chosen in targets and smallest in targets:  # what keeping the default decides, number by number
                gained = [t for t in targets[chosen] if t not in targets[smallest]]
                lost = [t for t in targets[smallest] if t not in targets[chosen]]
                text += (
                    f" Keeping it meets {', '.join(gained) or 'no number'} where *{smallest}* does not, and misses "
                    f"{', '.join(lost) or 'no number'} that *{smallest}* meets."
                )
            tied = [name for name in tied if name != smallest]
        else:
            text = (
                f"**{CONSTANTS_HEADING}**: the calibration (item {calibration_id}) chose "
                f"{scored(chosen, values, errors)} by the objective *{objective}*; {runs_at}."
            )
        if tied:
            others = ", ".join(scored(n, values, errors) for n in tied)
            text += f" The objective does not tell it apart from {others} (within two standard errors of J)."
        if face and face != chosen:
            text += (
                f" With degenerate seeds taken at face value it would choose {scored(face, face_values)}, against "
                f"{scored(chosen, face_values)}: the choice owes itself to the rule that scores a degenerate seed 1 "
                "on every accuracy target."
            )
        if tied or (face and face != chosen):
            text += (
                " The predicted tables' verdicts may differ at those candidates; the calibration's table shows "
                "what each gives on the table the constants were chosen on."
            )
        lines.append(text)
    return lines


#: How many item names the first screen's lead lists before it gives their count instead.
LEAD_NAMES = 3


def calibration_leads(plan: Plan, outcomes: dict) -> list[str]:
    """The first screen's short form of ``calibration_caveats`` and ``fitted_here_caveat``: one line, then a link.

    A referee must see, before the claims matrix, which constants the verdicts rest on and
    whether the calibration told them from the rest; the numbers that say how (J and its
    spread, what each candidate meets) are in the section ``CONSTANTS_HEADING``, which the
    line links to.
    """
    parts = []
    # The headline counts the paper's protocol; a choice only diagnostic items run at is counted, not spelt out
    # (a report of diagnostic items alone, as the calibration's partial one, spells out every choice).
    diagnostic = {item.id for item in plan.items if item.diagnostic}
    choices = list(calibration_choices(plan, outcomes))
    shown = [c for c in choices if any(user not in diagnostic for user in c.users)] or choices
    for calibration_id, outcome, objective, chosen, tied, face, users in shown:
        default = chosen == (outcome.get("defaults") or {}).get(objective)
        how = "kept its default" if default and tied else "chose"
        text = f"the calibration (item {calibration_id}) {how} *{chosen}* by the objective *{objective}*"
        met = (outcome.get("met_all") or {}).get(objective) or {}
        if chosen in met:  # how much of the table the constants held fixed elsewhere reproduce
            within, total = met[chosen]
            most = max(count for count, _ in met.values())
            text += f", meeting {within} of its {total} numbers within the floors"
            text += f" (no candidate meets more than {most})" if most < total else ""
        if tied:
            text += f"; its J does not tell it from {len(tied)} other candidate{'s' if len(tied) > 1 else ''}"
        if face and face != chosen:
            text += f"; with degenerate seeds at face value it would choose *{face}*"
        # Names while they fit on the first screen; past LEAD_NAMES a count (the section in full names them).
        if users:
            named = len(users) <= LEAD_NAMES
            text += f" (the items that run at it: {', '.join(users)})" if named else f" ({len(users)} items run at it)"
        parts.append(text)
    fitted = [item.id for item in plan.items if item.fitted_here]
    if fitted:
        made_here = "process choices made on a table's own runs, whose cells hold by construction"
        named = ", ".join(fitted) if len(fitted) <= LEAD_NAMES else f"{len(fitted)} items"
        parts.append(f"{made_here}: {named}")
    if len(shown) < len(choices):
        more = len(choices) - len(shown)
        parts.append(f"featlearn's diagnostic items rest on {more} more calibrated choice{'s' if more > 1 else ''}")
    if not parts:
        return []
    link = f"[What each choice decides, in full](#{anchor(CONSTANTS_HEADING)})"
    return [f"**{CONSTANTS_HEADING}**: {'; '.join(parts)}. {link}."]


def claims_matrix(
    claims: list[Claim], headings: dict[str, str], notes: Notes | None, link: str = "", floors: dict | None = None
) -> list[str]:
    """One line per claim: its words, its place, what is tested, featlearn's number, the verdict and its evidence.

    The numbers are those of the cell that decides the claim (the first whose verdict is the
    claim's), with how many other cells the claim has. The column "Tested" holds the paper's
    value or bound, or, for a relation between two of featlearn's measurements, the other
    side's featlearn value, named by its method: never a featlearn number under the paper's
    name. The evidence links to the item's section
    (``link`` before the anchor: the report's path where the matrix is shown elsewhere), and a
    long reason to its note (``notes``; None: the reason's first sentences alone). ``floors``
    (column -> the floor) shows the margin a bound between two methods must clear, as the
    relations table does: "> One Step's 0.998" alone would read as passed by 0.999.
    """
    lines = ["| Claim | Place | Tested | featlearn | Verdict |", "|---|---|---|---|---|"]
    for claim in sorted(claims, key=lambda c: c.diagnostic):
        verdict = claim.verdict
        first = claim.deciding_cells[0] if claim.cells else None
        deciding = next((c for c in claim.deciding_cells if c.verdict == verdict), first)
        if deciding is None:
            why = claim.not_measured or ""
            paper, ours = "", ""
            evidence = f"not measured: {notes.cite(why) if notes is not None else short_reason(' '.join(why.split()))}"
        else:
            paper, ours = matrix_numbers(deciding, floors)
            others = len(claim.cells) - 1
            ours += f" (+{others} cell{'s' if others > 1 else ''})" if others else ""
            section = f"{link}#{anchor(headings.get(deciding.item, deciding.item))}"
            evidence = f"[{deciding.item}]({section})"
            if verdict in ("differs", "cannot decide"):
                evidence += f": {deciding.category}"
            elif verdict == "by construction":  # its one-line why
                evidence += f": {short_reason(deciding.reason, 200)}"
        label = f"{claim.words}" + (" (diagnostic)" if claim.diagnostic else "")
        row = (label, claim.place, paper, ours, f"{CLAIM_MARKS[verdict]}; {evidence}")
        lines.append("| " + " | ".join(table_text(cell) for cell in row) + " |")
    return lines


def matrix_numbers(cell: Cell, floors: dict | None = None) -> tuple[str, str]:
    """A cell's two sides as the claims matrix shows them: the paper's (or the other side's) value, and featlearn's.

    A bound between two methods' means shows the floor it must clear (``floors``: column -> floor).
    """
    if cell.paper is None and cell.mean is None:
        return "", ""
    decimals = _decimals(cell.metric) if cell.metric in {c for c, _, _, _ in COLUMNS} else 2
    relation = cell.relation or "="
    if cell.kind == "relation":  # its words are the claim's line; the sides are left method vs the other
        side = f"{cell.reference}'s " if cell.reference else ""
        statistic = f" ({cell.metric_statistic})" if cell.metric_statistic else ""
        value = _format(cell.paper, decimals)
        paper = f"{cell.left} {cell.metric}{statistic} {relation} {side}{value}"
        floor = (floors or {}).get(cell.metric)
        between = cell.reference and relation in ("<", ">") and not cell.metric_statistic and not cell.interval
        if floor and between and cell.paper is not None and cell.metric in ("train", "test", "cos"):
            paper += f" {'+' if relation == '>' else '-'} {floor:g} (the floor)"
    else:
        paper = f"{cell.method} {cell.metric} {relation} {_format(cell.paper, decimals)}"
    paper += interval_text(cell.paper_interval, decimals)
    ours = _format(cell.mean, decimals) + interval_text(cell.interval, decimals)
    if cell.std and cell.n > 1:
        ours += f" ± {cell.std:.{decimals}f}"
    return paper, ours


def judgement_lines(plan: Plan, cells: list[Cell]) -> list[str]:
    """How cells and claims are judged (the rules of :mod:`featlearn.studies.judgement`), one bullet each."""
    md = ["How cells and claims are judged (`featlearn/studies/judgement.py`):", ""]
    floors = ", ".join(f"{column} {t['absolute']:g}" for column, t in judgement_rules(plan.paper)["tolerances"].items())
    md.append(
        "- a claim is one outcome statement of the paper; each cell belongs to the claim it tests "
        f"(`featlearn/papers/{plan.paper}.yaml`'s `claims`); a claim differs when one of its cells does, cannot be "
        "decided when one of them cannot, and is reproduced only when a cell is ✓ and the rest ✓ or ≡"
    )
    md.append(
        f"- reproduced when |featlearn mean - paper| <= the metric's floor ({floors}; accuracies in points); "
        "the ± beside a cell is the standard deviation over seeds, shown, never added to the window; every ✓ "
        "names the alternative it rules out"
    )
    md.append(
        '- an accuracy is judged against its set\'s trivial rate (the row "Trivial (majority class)"), a cosine '
        "against its value at step 0 (the random initialisation's): ○ when the paper's value lies within the floor "
        "of it and featlearn's lies there too or within the floor of the paper's, ✗ a failed fit when featlearn's "
        "lies there (or its runs degenerated) and the paper's does not, ○ where it lies within the floor of the "
        "paper's as well (the floor tells it from neither); a paper value below its own trivial rate is said in the "
        "reason; a ✓ cosine or test accuracy of a method whose training cell differs, or is ○ so, is ○, except "
        "the cosine of a method whose neurons are fixed before its classifier is fit (the judgement file's "
        "`features_frozen_before_fit`: One Step, Two Step), which the classifier's fit cannot change"
    )
    md.append(
        "- ≡ holds by construction: a value that follows from featlearn's own process or code (a spread at the "
        "ceiling, featlearn against itself under a symmetry its algorithm has, a value the paper does not state), "
        "listed with its why in the judgement file's `by_construction`, or a match on the table a calibration "
        "fitted the paper's open constants to (the objective's own cells) or that the setting makes that table's in "
        "law (a change the methods cannot see); a relation that holds with such a side holds by construction too; "
        "never counted as reproduced"
    )
    if any(c.relation in ("<", ">") or c.interval for c in cells):
        md.append(
            "- a bound holds at the edge of the seeds' spread (std_multiple x std), a fitted rate (its 95% bootstrap "
            "interval in brackets) when the paper's value lies inside the interval or the bound holds at its edge; "
            "two rates are equal when their intervals overlap; a bound whose estimate lies on the claimed side while "
            "the seeds' spread or the interval crosses it is ○ (neither side shown); where the judgement file's rival "
            "of the cell (another functional form) passes the same test, the cell is ○"
        )
    if any(c.kind == "relation" for c in cells):
        md.append(
            "- a relation (the table under an item) between two measurements, or a measurement and the paper's "
            "bound, is judged by the same floors and bounds (one method's accuracy or cosine above or below "
            "another's by more than the floor, since values within it are the same); ○ where its measurements "
            "cannot decide it (the spread "
            "of a method at its trivial rate, with degenerate seeds or whose mean is not the paper's; a spread whose "
            "95% interval, about 0.6 to 2.9 times the sample value at 5 seeds, holds the paper's bound; chance on "
            "the test set of a method that does not fit its training set; a relation to a failed fit; accuracies on "
            "sets whose trivial rates differ)"
        )
    return md


def write_results(
    out: Path,
    plan: Plan,
    args: RunSettings,
    cells: list[Cell],
    claims: list[Claim],
    notes: Notes,
    wall: dict,
    calibrations: list[dict] | None = None,
) -> None:
    """``results.csv`` (a row per cell: its claim, per-seed values, verdict, short reason, note) and ``results.json``.

    ``results.json`` also holds the claims, the notes, each item's section heading and the calibration
    items' tables (``calibrations``: item, chosen candidates, the table's lines), so that
    :func:`summary_table` draws the claims matrix, linked, and the calibration from it alone.
    """
    fields = [
        "claim", "item", "setting", "method", "metric", "relation", "paper", "mean", "std", "n", "interval", "values",
        "verdict", "rules_out", "category", "reason", "note",
    ]  # fmt: skip
    rows = []
    for cell in cells:
        note = notes.number(cell.reason or "")
        rows.append({**asdict(cell), "reason": short_reason(" ".join((cell.reason or "").split())), "note": note})
    with open(out / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for cell in rows:
            row = {k: ("" if cell.get(k) is None else cell.get(k)) for k in fields}
            row["values"] = " ".join(repr(v) for v in cell.get("values") or [])  # every seed's value
            row["interval"] = " ".join(repr(v) for v in cell.get("interval") or [])  # a fitted rate's 95% interval
            writer.writerow(row)
    summary = {
        "paper": plan.paper,
        "scale": args.scale,
        "only": list(args.only) if args.only else None,
        "command": regenerate_command(plan.paper, args.scale, args.only),
        "counts": claim_counts(claims),
        "diagnostic_counts": claim_counts(claims, diagnostic=True),
        "cell_counts": verdict_counts(cells),
        "diagnostic_cell_counts": verdict_counts(cells, diagnostic=True),
        **wall,
    }
    listed = [
        {"id": c.id, "place": c.place, "words": c.words, "verdict": c.verdict, "diagnostic": c.diagnostic,
         "not_measured": c.not_measured, "items": sorted({cell.item for cell in c.cells})}
        for c in claims
    ]  # fmt: skip
    sections = section_headings(plan)
    content = {
        "summary": summary,
        "claims": listed,
        "sections": sections,
        "notes": {n: t for t, n in notes.numbers.items()},
        "cells": rows,
        "calibrations": calibrations or [],
    }
    (out / "results.json").write_text(json.dumps(content, indent=1, default=str))


def anchor(heading: str) -> str:
    """A section heading's anchor as GitHub forms it: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def calibration_conclusion(outcome: dict) -> str:
    """A calibration item's line of the summary: each objective's choice, how much of its table it meets, its ties.

    A choice that misses part of the table, or that J does not tell from other candidates (within
    two standard errors), is said as such: the constants held fixed elsewhere carry both.
    """
    met, tied, face = outcome.get("met") or {}, outcome.get("tied") or {}, outcome.get("at_face_value") or {}
    sentences = []
    for objective, name in (outcome.get("chosen") or {}).items():
        sentence = f"*{objective}* chose *{name}*"
        if name is not None and name == (outcome.get("defaults") or {}).get(objective):
            sentence += ", its default (kept on a tie; the paper states no values)"
        if objective in met:
            within, total = met[objective]
            sentence += f", which meets {within} of its {total} numbers within the floors"
            if within < total:
                sentence += ": the table is not reproduced at the constants held fixed elsewhere"
        if tied.get(objective):
            names = [f"*{other}*" for other in tied[objective]]
            others = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            sentence += f"; J does not tell it from {others} (within two standard errors)"
        if face.get(objective) and face[objective] != name:
            sentence += (
                f"; with degenerate seeds taken at face value (the rule counts each as a miss) J would choose "
                f"*{face[objective]}*"
            )
        sentences.append(sentence + ".")
    return "the constants chosen here, held fixed elsewhere. " + " ".join(sentences)


def conclusions(plan: Plan, outcomes: dict, cells: list[Cell]) -> list[str]:
    """The report's opening: what reproduces, what differs (each with its category), what was not run, and contents.

    One line per item, built from its cells' verdicts, so the reader sees every conclusion
    before any table; the reasons in full stay with each item's table.
    """
    lines = ["## Summary", ""]
    for item in plan.items:
        judged = [c for c in cells if c.item == item.id and c.verdict]
        outcome = outcomes[item.id]
        label = f"{item.id}** (diagnostic, not counted above)" if item.diagnostic else f"{item.id}**"
        if outcome["status"] != "run":
            lines.append(f"- **{label}: not run: {outcome['why'].split('. ')[0].rstrip('.')}.")
            continue
        if item.kind == "calibration":
            lines.append(f"- **{label}: {calibration_conclusion(outcome)}")
            continue
        if not judged:
            lines.append(f"- **{label}: no number in the paper to judge against (its figures are below).")
            continue
        # A counted item's rows of featlearn's own (the judgement file's diagnostic_methods) are counted apart.
        own = [c for c in judged if item.diagnostic or not c.diagnostic]
        counts = {v: sum(1 for c in own if c.verdict == v) for v in VERDICTS}
        parts = [f"{counts[v]} {v}" for v in VERDICTS if counts[v]]
        apart = [c for c in judged if c.diagnostic and not item.diagnostic]
        if apart:
            extra = {v: sum(1 for c in apart if c.verdict == v) for v in VERDICTS}
            parts.append(
                "and featlearn's diagnostic rows, not counted: "
                + ", ".join(f"{extra[v]} {v}" for v in VERDICTS if extra[v])
            )
        flagged = [c for c in judged if c.verdict in ("differs", "cannot decide", "by construction")]
        differing = [
            f'the relation "{c.method[len(RELATION_PREFIX) :]}" ({c.category})'
            if c.kind == "relation"
            else f"{c.method} {c.metric} ({c.category})"
            for c in flagged
        ]
        lines.append(f"- **{label}: {', '.join(parts)}" + (f"; {'; '.join(differing)}" if differing else "") + ".")
    lines += ["", "Contents:", ""]
    lines += [f"- [{heading}](#{anchor(heading)})" for heading in section_headings(plan).values()]
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
    for verdict, (mark, glyph) in PAGE_MARKS.items():  # a coloured glyph every font has, where emoji fonts lack
        body = body.replace(mark, f'<span class="verdict {verdict.replace(" ", "-")}">{glyph}</span>')
    body = re.sub(
        r"<h([23])>(.*?)</h\1>",
        lambda m: f'<h{m.group(1)} id="{anchor(html.unescape(m.group(2)))}">{m.group(2)}</h{m.group(1)}>',
        body,
    )
    style = (
        "body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}"
        "img{max-width:100%}.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(30em,1fr));gap:1em}"
        ".verdict{font-weight:bold;padding:0 .2em}.reproduced{color:#1a7f37}.differs{color:#cf222e}"
        ".cannot-decide{color:#9a6700}.by-construction{color:#0969da}.not-run{color:#6e7781}"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{style}</style></head><body>\n" + body + "</body></html>\n"
    )


def summary_table(out: Path) -> str:
    """A papers' page's summary of a report folder, from its ``results.json``: the claims matrix, then cells per item.

    ``featlearn reproduce --summary DIR`` prints it; the papers' pages hold this text (a test
    compares them), so no number there is copied by hand. Its links lead to the report's
    sections from the folder above the reports' folder (``docs/``, where the pages live).
    """
    path = Path(out) / "results.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"--summary {str(out)!r} holds no results.json: give the --out folder of a finished featlearn reproduce."
        )
    content = json.loads(path.read_text())
    summary, cells = content["summary"], [Cell.from_dict(cell) for cell in content["cells"]]
    if "claims" not in content:  # a report written before claims: its cells, judged by the rules of its time
        return cell_counts_table(summary, cells, list(summary["counts"]), summary["counts"], earlier=True)
    claims = [Claim(c["id"], c["place"], c["words"], [], c["not_measured"], c["diagnostic"]) for c in content["claims"]]
    for claim in claims:
        claim.cells = [cell for cell in cells if cell.claim == claim.id]
    link = f"{Path(out).absolute().parent.name}/{Path(out).name}/report.md"
    only = summary.get("only")
    calibrations = content.get("calibrations") or []
    # Their leads on the first screen, linked to the report's section; a report written before leads: in full.
    leads = [line.replace("](#", f"]({link}#") for c in calibrations for line in c.get("leads", c.get("caveats")) or []]
    lines = [headline(claims, only), "", *[line + "\n" for line in leads]]
    try:  # the floors of its paper's judgement file, shown beside a bound between two methods
        tolerances = judgement_rules(summary["paper"]).get("tolerances", {})
    except FileNotFoundError:  # a paper featlearn does not ship: the values alone
        tolerances = {}
    floors = {column: float(t["absolute"]) for column, t in tolerances.items()}
    lines += [*claims_matrix(claims, content["sections"], None, link=link, floors=floors), "", ""]
    text = "\n".join(lines) + cell_counts_table(summary, cells, list(VERDICTS), summary["cell_counts"])
    for calibration in calibrations:  # the constants chosen once, and on what
        if "leads" in calibration:  # the first screen held their leads: here, in full
            text += "\n" + "\n\n".join(calibration.get("caveats") or []) + "\n"
        text += f"\nThe calibration ({calibration['item']}):\n" + "\n".join(calibration["table"]) + "\n"
    return text


def cell_counts_table(summary: dict, cells: list[Cell], verdicts: list[str], total: dict, earlier: bool = False) -> str:
    """The cells' verdict counts per item, as Markdown; ``earlier``: a report written before claims, said so first."""
    lines = []
    if earlier:
        lines += [
            f"This report predates claims (its results.json has none): its cells were judged by the rules of its "
            f"time. Regenerate it: `featlearn reproduce --paper {summary['paper']} --scale {summary['scale']} "
            "--out DIR`.",
            "",
        ]
    title = f"{summary['paper']}, scale `{summary['scale']}`" + ("" if earlier else ": cells")
    lines += [f"| {title} | " + " | ".join(verdicts) + " |", "|---|" + "---:|" * len(verdicts)]
    diagnostic_items = {c.item for c in cells if c.diagnostic}
    for item in dict.fromkeys(c.item for c in cells):
        counts = [sum(1 for c in cells if c.item == item and c.verdict == v) for v in verdicts]
        if any(counts):
            name = f"{item} (diagnostic)" if item in diagnostic_items else item
            lines.append(f"| {name} | " + " | ".join(str(n) for n in counts) + " |")
    totals = " | ".join(f"**{total.get(v, 0)}**" for v in verdicts)
    lines.append(f"| **all**{' (diagnostic items not counted)' if diagnostic_items else ''} | {totals} |")
    return "\n".join(lines) + "\n"
