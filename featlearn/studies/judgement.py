r"""The rules that turn a measured cell into a verdict of a reproduction report.

A cell is one (setting, method, metric) with the paper's value :math:`v` and featlearn's
values over seeds :math:`x_1, \dots, x_S` (mean :math:`\bar x`, standard deviation
:math:`s`). Its verdict is one of :data:`VERDICTS`:

* **reproduced**: for a value the paper states (relation ``=``),
  :math:`|\bar x - v| \le \text{floor}`, the metric's stated floor (3 points for an
  accuracy, 0.05 for a cosine: ``featlearn/papers/<paper>.yaml``). The spread :math:`s`
  is shown beside the cell and never widens that window. For a bound the paper states
  (``<`` or ``>``: a theorem's rate, a claim that one curve ends above another), the
  bound must hold at the edge of the seeds' spread: :math:`\bar x + k s < v`
  (:math:`\bar x - k s > v`), :math:`k` the metric's ``std_multiple``. A fitted rate
  (an exponent over d or eta) comes with its 95% interval :math:`[l, h]`, and that
  interval alone is the window: :math:`l \le v \le h` for ``=``, :math:`h < v` for
  ``<``, :math:`l > v` for ``>``; two fitted rates compared with each other are equal when
  their intervals overlap, and one is below the other when its interval lies strictly
  below. A rate is one fit over every seed, so it has no spread
  of its own, and a fixed floor would let a rate far from the claim pass.
* **uninformative**: a measurement that cannot decide the claim (a U-curve's minimum at
  the edge of its sweep), or a cell whose paper value lies within the floor of the
  *trivial rate* :math:`t` while featlearn's mean lies there too or within the floor of the
  paper's: chance against chance, or against a value near chance, says nothing about the
  method. For an accuracy, :math:`t` is the accuracy of always predicting the commonest
  class of that set; for a cosine with the ground truth (``cos``), its value at step 0,
  the largest cosine of the random initialisation, which an unmoved (or frozen) first
  layer keeps. The exception is a test accuracy whose method fits its training set clear
  of the trivial rate: "fits, yet tests at chance" is a claim (a network without input
  structure), judged by the rule above.
* **differs**: otherwise, with a category and a reason. A method at the trivial rate
  where the paper's is not, or whose every run degenerated (one class predicted, or a loss
  that grew by orders of magnitude), is *a failed fit*, never a result; so is a mean within
  the floor that some seeds' degenerate runs are part of. The other reasons come from the
  paper's file of known differences, which must cite the paper and a measurement.
* **not run**: no value was measured.

Every rule is a function of the numbers alone, so each has a unit test
(``tests/featlearn/studies/test_judgement.py``).
"""

from __future__ import annotations

import fnmatch

from featlearn.studies.trials import summarize

#: What a verdict can be, in the order reports count them.
VERDICTS = ("reproduced", "differs", "uninformative", "not run")
#: What a paper's value is to featlearn's: equal within the floor, or a bound (above or below it).
RELATIONS = ("=", "<", ">")
#: Metric columns that are accuracies of a labelled set, so have a trivial rate: column -> that set.
TRIVIAL_SETS = {"train": "train", "test": "test"}
#: Metric columns whose trivial value is their value at initialisation (step 0): the largest cosine of
#: the random first layer with the ground truth, which a layer that does not move keeps.
TRIVIAL_AT_START = ("cos",)
#: The category of a method whose accuracy sits at the trivial rate where the paper's does not.
FAILED_FIT = "a failed fit"


def verdict_counts(cells: list[dict], diagnostic: bool = False) -> dict[str, int]:
    """How many cells have each verdict: the paper's protocol's cells, or (``diagnostic``) the diagnostic items'."""
    return {v: sum(1 for c in cells if c["verdict"] == v and bool(c.get("diagnostic")) == diagnostic) for v in VERDICTS}


def column_relation(relation: str, column: str) -> tuple[str, str | None]:
    """What a paper row's ``relation`` says of one column: (``=``, ``<`` or ``>``, a method to compare with, or None).

    ``relation`` is ``=``, ``<`` or ``>`` for every column of the row, or per column,
    ``"test: =; boundary: = Network"``: a column not named is ``=``; a relation followed by a
    method's name compares the column with that method's featlearn mean in the same item
    (a check of one run against another, as Remark 2.1's rotated run against the Network).
    """
    relation = (relation or "=").strip()
    if ":" in relation:
        parts = dict(part.split(":", 1) for part in relation.split(";") if part.strip())
        relation = next((v for k, v in parts.items() if k.strip() == column), "=").strip()
    op, reference = relation[:1], relation[1:].strip() or None
    if op not in RELATIONS:
        raise ValueError(
            f"A paper table's relation must be one of {RELATIONS} (then a method, optionally), got {relation!r}."
        )
    return op, reference


#: The reason category for a difference that featlearn's measurements cannot decide: judged ○, not ✗.
UNDECIDABLE = "a claim its measurements cannot decide"


def first_match(entries: list[dict] | None, setting: str, method: str, column: str) -> dict | None:
    """The first entry whose ``setting``, ``method`` and ``metric`` fnmatch patterns all match the cell."""
    for entry in entries or []:
        if all(
            fnmatch.fnmatchcase(value, str(entry[key]))
            for key, value in (("setting", setting), ("method", method), ("metric", column))
        ):
            return entry
    return None


def known_reason(rules: dict, setting: str, method: str, column: str) -> dict | None:
    """The first entry of the paper's known differences whose setting, method and metric patterns match."""
    return first_match(rules.get("reasons"), setting, method, column)


def judge(
    paper_value: float | None,
    values: list[float] | None,
    column: str,
    setting: str,
    method: str,
    rules: dict,
    relation: str = "=",
    trivial: float | None = None,
    fits_training_set: bool | None = None,
    degenerate: bool = False,
    degenerate_seeds: int = 0,
    inconclusive: str | None = None,
    interval: tuple[float, float] | None = None,
    paper_interval: tuple[float, float] | None = None,
) -> dict | None:
    """The verdict of one cell; None where the paper gives no value.

    Args:
        paper_value: The paper's value v (None: no number, no verdict).
        values: featlearn's per-seed values.
        column: The metric column (``train``, ``test``, ``cos``, ...), which names its floor.
        setting: The paper's setting (for the known reasons).
        method: The method's name (for the known reasons).
        rules: The paper's judgement file: ``tolerances`` (column -> ``absolute``, ``std_multiple``)
            and ``reasons``.
        relation: ``=``, ``<`` or ``>`` (see the module).
        trivial: The trivial rate t of this cell's set in percent (mean over seeds), for
            ``train`` and ``test``; None where unknown or not an accuracy.
        fits_training_set: For a ``test`` cell, whether the same method's training accuracy is
            clear of its trivial rate (more than the floor above it).
        inconclusive: Why the measurement cannot decide the claim (a U-curve's minimum at the edge
            of its sweep): the cell is uninformative, whatever its value.
        degenerate: Every seed's run degenerated (:class:`~featlearn.callbacks.DegenerateRuns`: it
            predicts one class, or its loss grew by orders of magnitude).
        degenerate_seeds: How many seeds' runs degenerated: a mean within the floor that some
            degenerate runs are part of is a failed fit, not a reproduction.
        interval: The measured value's 95% interval (a fitted rate's), which replaces the floor
            and the spread: the paper's value must lie inside it, or a bound hold at its edge.
        paper_interval: With ``interval``, the other side's interval where it is a fitted rate
            too (a claim between two rates): equal when the intervals overlap, a bound when
            one lies strictly below (above) the other, edge against edge.

    Returns:
        ``{"verdict", "paper", "mean", "std", "n", "gap", "allowed", "trivial", "category", "reason"}``.
    """
    if paper_value is None:
        return None
    mean, std, n = summarize(values)
    cell = {"paper": paper_value, "mean": mean, "std": std, "n": n, "trivial": trivial, "category": "", "reason": ""}
    if mean is None:
        return {**cell, "verdict": "not run", "reason": "featlearn measured no value for this cell"}
    if relation not in RELATIONS:
        raise ValueError(
            f"The paper table's relation must be one of {RELATIONS}, got {relation!r} ({setting}, {method})."
        )
    tolerance = rules["tolerances"][column]
    floor = float(tolerance["absolute"])
    gap = mean - paper_value
    if interval is not None:
        low, high = interval
        other_low, other_high = paper_interval if paper_interval is not None else (paper_value, paper_value)
        held = {"=": low <= other_high and other_low <= high, "<": high < other_low, ">": low > other_high}[relation]
        cell.update(gap=gap, allowed=None, interval=(low, high))
    elif relation == "=":
        allowed = floor  # the spread is shown beside the cell, never added to the window
        held = abs(gap) <= allowed
    else:  # a bound must hold at the edge of the seeds' spread
        allowed = float(tolerance.get("std_multiple", 0.0)) * (std or 0.0)
        held = mean + allowed < paper_value if relation == "<" else mean - allowed > paper_value
    if interval is None:
        cell.update(gap=gap, allowed=allowed)
    if inconclusive:
        return {**cell, "verdict": "uninformative", "category": "inconclusive", "reason": inconclusive + "."}
    known = known_reason(rules, setting, method, column)
    trivial_kind = column in TRIVIAL_SETS or column in TRIVIAL_AT_START
    if trivial_kind and relation == "=" and (trivial is not None or degenerate):
        ours_trivial = degenerate or abs(mean - trivial) <= floor
        paper_trivial = trivial is not None and abs(paper_value - trivial) <= floor
        if column in TRIVIAL_SETS:
            ours, theirs, unit = f"{mean:.1f}%", f"{paper_value:.1f}%", " points"
            rate = "" if trivial is None else f" ({trivial:.1f}% on this {TRIVIAL_SETS[column]} set)"
            name = "the trivial rate" + rate
            same = "a constant predictor scores the same"
        else:
            ours, theirs, unit = f"{mean:.3f}", f"{paper_value:.3f}", ""
            name = "its value at step 0" + ("" if trivial is None else f" ({trivial:.3f}, the random initialisation)")
            same = "a first layer that never moved reads the same"
        chance_claim = column == "test" and fits_training_set  # "fits, yet tests at chance" (w/o structure)
        if paper_trivial and (ours_trivial or held) and not chance_claim:
            where = "there too" if ours_trivial else "within the floor of the paper's"
            return {
                **cell,
                "verdict": "uninformative",
                "category": "both at the trivial rate",
                "reason": f"the paper's {theirs} lies within {floor:g}{unit} of {name}, and featlearn's {ours} "
                f"{where}: {same}, so the cell says nothing about the method.",
            }
        if ours_trivial and not paper_trivial:
            if column in TRIVIAL_SETS:
                what = "degenerated (DegenerateRuns)" if degenerate else f"scores {name}"
                reason = f"featlearn's {method} {what}: its fit failed, where the paper's {theirs} is not there."
                category = FAILED_FIT
            else:  # a cosine: the neurons did not move towards the ground truth (by design for a frozen layer)
                what = "degenerated (DegenerateRuns)" if degenerate else f"stays within {floor:g} of {name}"
                reason = f"featlearn's {method} {what}: its neurons did not align, where the paper's {theirs} is above."
                category = known["category"] if known is not None and not degenerate else FAILED_FIT
            reason += f" {known['reason']}" if known is not None else ""
            return {**cell, "verdict": "differs", "category": category, "reason": reason}
    if held and degenerate_seeds and trivial_kind:
        reason = (
            f"{degenerate_seeds} of featlearn's {n} seeds of {method} degenerated (DegenerateRuns: one class "
            "predicted, or a loss that grew by orders of magnitude): a mean within the floor that failed fits are "
            "part of is not a result."
        )
        return {**cell, "verdict": "differs", "category": FAILED_FIT, "reason": reason}
    if held:
        return {**cell, "verdict": "reproduced"}
    if known is not None:
        # A difference its measurements cannot decide (one within the seeds' spread) is no "differs".
        verdict = "uninformative" if known["category"] == UNDECIDABLE else "differs"
        return {**cell, "verdict": verdict, "category": known["category"], "reason": known["reason"]}
    return {**cell, "verdict": "differs", "category": "unexplained", "reason": "no reason recorded yet"}
