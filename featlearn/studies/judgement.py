r"""The rules that turn a measured cell into a verdict, and cells into the paper's claims' verdicts.

A cell is one (setting, method, metric) with the paper's value :math:`v` and featlearn's
values over seeds :math:`x_1, \dots, x_S` (mean :math:`\bar x`, standard deviation
:math:`s`). Its verdict is one of :data:`VERDICTS`:

* **reproduced** (✓): for a value the paper states (relation ``=``),
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
  below (where they overlap with the estimate on the claimed side, as where the seeds'
  spread straddles a bound, the cell cannot decide). A ✓ could have failed: it names the alternative it rules out
  (:func:`rules_out`), and where the judgement file's *rival* of the cell (another
  functional form, a constant offset) would pass the same test (:func:`rival_passes`),
  the cell is "cannot decide" instead.
* **cannot decide** (○): a measurement that cannot decide the claim (a U-curve's minimum at
  the edge of its sweep; a rival that passes the same test; a cosine or test accuracy of a
  method whose own fit of its training set differs, :func:`guard_failed_fits`), or a cell
  whose paper value lies within the floor of the *trivial rate* :math:`t` while featlearn's
  mean lies there too or within the floor of the paper's: chance against chance, or against
  a value near chance, says nothing about the method. For an accuracy, :math:`t` is the
  accuracy of always predicting the commonest class of that set; for a cosine with the
  ground truth (``cos``), its value at step 0, the largest cosine of the random
  initialisation, which an unmoved (or frozen) first layer keeps. The exception is a test
  accuracy whose method fits its training set clear of the trivial rate: "fits, yet tests at
  chance" is a claim (a network without input structure), judged by the rule above.
* **by construction** (≡): a value that follows from featlearn's own process or code,
  whatever the paper claims (:func:`by_construction`): a spread of 0 at the ceiling
  (:func:`spread_at_ceiling`), featlearn compared with itself under a symmetry its algorithm
  has, a value its process fixes, or a value the paper does not state. The judgement file's
  ``by_construction`` entries list each such cell with its one-line why. Shown, never
  counted as reproduced.
* **differs** (✗): otherwise, with a category and a reason. A method at the trivial rate
  where the paper's is not, or whose every run degenerated (one class predicted, or a loss
  that grew by orders of magnitude), is *a failed fit*, never a result; so is a mean within
  the floor that some seeds' degenerate runs are part of. The other reasons come from the
  paper's file of known differences, which must cite the paper and a measurement. A paper
  value below its own trivial rate is said in the reason (:func:`paper_below_trivial`).
* **not run**: no value was measured.

A **claim** (:class:`Claim`) is one outcome statement of the paper with its place; the
judgement file's ``claims`` assign each cell to the claim it tests (a cell no entry names
becomes its table row's claim), and the claim's verdict follows from its cells'
(:func:`claim_verdict`). The report's headline counts claims.

Every rule is a function of the numbers alone, so each has a unit test
(``tests/featlearn/studies/test_judgement.py``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from featlearn.studies.plan import COLUMNS, TRIVIAL_ROW, Plan
from featlearn.studies.trials import summarize

#: What a verdict can be, in the order reports count them.
VERDICTS = ("reproduced", "differs", "cannot decide", "by construction", "not run")
#: How a verdict shows in a table cell.
MARKS = {"reproduced": "✓", "differs": "✗", "cannot decide": "○", "by construction": "≡", "not run": "not run", "": ""}
#: What a paper's value is to featlearn's: equal within the floor, or a bound (above or below it).
RELATIONS = ("=", "<", ">")
#: Metric columns that are accuracies of a labelled set, so have a trivial rate: column -> that set.
TRIVIAL_SETS = {"train": "train", "test": "test"}
#: Metric columns whose trivial value is their value at initialisation (step 0): the largest cosine of
#: the random first layer with the ground truth, which a layer that does not move keeps.
TRIVIAL_AT_START = ("cos",)
#: How a relation cell's method is named in results.csv: its words, so a reader of the CSV sees what was checked.
RELATION_PREFIX = "relation: "
#: The category of a method whose accuracy sits at the trivial rate where the paper's does not.
FAILED_FIT = "a failed fit"
#: The accuracy every accuracy column is bounded by (percent): a spread near it is bounded by it.
CEILING = 100.0
#: How long a reason may be in a table: a longer one is cut at a sentence and given in full once, in the notes.
SHORT_REASON = 400


@dataclass
class Cell:
    """One judged number of a report: a table's cell (an item's method and metric) or a relation between two.

    Args:
        item: The plan item's id.
        setting: The paper's setting (table) the item reproduces.
        method: The method's name; a relation's words after :data:`RELATION_PREFIX`.
        metric: The metric column (``train``, ``test``, ``cos``, ``alpha``, ...).
        relation: ``=``, ``<`` or ``>``: what featlearn's value should be to the other side (``<``: below
            the paper's bound or the reference method's mean).
        reference: The method whose featlearn mean is the other side, where it is not the paper's number.
        paper: The paper's value, or the other side's mean (None: the paper gives no number, no verdict).
        paper_interval: The other side's 95% interval, where it is a fitted rate.
        mean: featlearn's mean over seeds.
        std: featlearn's standard deviation over seeds.
        n: How many seeds measured it.
        values: featlearn's value per seed, in seed order.
        interval: A fitted rate's 95% interval.
        unreached: How many seeds never reached the event it measures.
        trivial: The trivial rate it was judged against (an accuracy's majority class, a cosine's step-0 value).
        verdict: One of :data:`VERDICTS`, or "" where the paper gives no number.
        category: Why it is not reproduced, in a few words.
        reason: Why, in full (the report cuts it at a sentence and writes the rest in a note).
        rules_out: What a ✓ ruled out: the alternative that would have made it ✗.
        kind: ``table`` or ``relation``.
        source: A relation's place and words in the paper.
        left: A relation's measured method.
        metric_statistic: What a relation measures of the metric (``std over 5 seeds``), if not its mean.
        seed_values: A spread's per-seed values (its evidence).
        diagnostic: Whether its item is one of featlearn's diagnostic items.
        claim: The id of the claim it tests (:func:`assign_claims`).
    """

    item: str
    setting: str
    method: str
    metric: str
    relation: str = "="
    reference: str | None = None
    paper: float | None = None
    paper_interval: list[float] | None = None
    mean: float | None = None
    std: float | None = None
    n: int = 0
    values: list[float] | None = None
    interval: list[float] | None = None
    unreached: int = 0
    trivial: float | None = None
    verdict: str = ""
    category: str = ""
    reason: str = ""
    rules_out: str | None = None
    kind: str = "table"
    source: str = ""
    left: str = ""
    metric_statistic: str = ""
    seed_values: list[float] | None = None
    diagnostic: bool = False
    claim: str | None = None

    def update(self, **fields) -> None:
        """Set several fields at once (an unknown name is an error, not a new key)."""
        for name, value in fields.items():
            if name not in CELL_FIELDS:
                raise AttributeError(f"Cell has no field {name!r}")
            setattr(self, name, value)

    def judged(self, judgement: dict) -> None:
        """Take :func:`judge`'s verdict, category, reason, what a ✓ rules out and the trivial rate it used."""
        self.update(**{k: judgement.get(k) for k in ("verdict", "category", "reason", "rules_out", "trivial")})

    @classmethod
    def from_dict(cls, data: dict) -> Cell:
        """A cell from a ``results.json`` row (fields it does not hold, such as the note, left out)."""
        return cls(**{k: v for k, v in data.items() if k in CELL_FIELDS})


#: The names of a cell's fields.
CELL_FIELDS = frozenset(Cell.__dataclass_fields__)


def verdict_counts(cells: list[Cell], diagnostic: bool = False) -> dict[str, int]:
    """How many cells have each verdict: the paper's protocol's cells, or (``diagnostic``) the diagnostic items'."""
    return {v: sum(1 for c in cells if c.verdict == v and c.diagnostic == diagnostic) for v in VERDICTS}


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
#: The category of a cell the judgement file lists as ``undecidable``: its measurement is not the paper's quantity.
PROXY = "not the paper's quantity"
#: The category of a cell within the floor of both the paper's value and its trivial rate: no fit is shown.
NEAR_BOTH = "within the floor of the paper's and of the trivial rate"
#: The category of a bound whose mean holds it while the seeds' spread crosses it.
STRADDLES = "the seeds straddle the bound"
#: The same for a fitted rate: its estimate on the claimed side, its 95% interval reaching the other side.
STRADDLES_INTERVALS = "the intervals overlap"
#: The category of a relation against featlearn's run of a method that falls short of the paper's run of it.
WEAKER_RIVAL = "a weaker rival than the paper's"
#: The category of a relation whose test a rival the judgement file names (``rival_passes``) would pass too.
RIVAL_PASSES = "a rival passes the same test"
#: The category of a cell whose value follows from featlearn's own process or code.
BUILT_IN = "holds by construction"


def first_match(entries: list[dict] | None, setting: str, method: str, column: str) -> dict | None:
    """The first entry whose ``setting``, ``method`` and ``metric`` fnmatch patterns all match the cell."""
    for entry in entries or []:
        if all(
            fnmatchcase(value, str(entry[key]))
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
    inconclusive_category: str = "inconclusive",
    interval: tuple[float, float] | None = None,
    paper_interval: tuple[float, float] | None = None,
    built_in: str | None = None,
    measured_rivals: list[dict] | None = None,
    margin: float = 0.0,
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
        inconclusive_category: The category of an ``inconclusive`` cell (a weaker rival, ...).
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
        built_in: Why the cell's value follows from featlearn's own process (:func:`by_construction`):
            its verdict is "by construction", whatever the value.
        measured_rivals: Other forms measured by the same test as the claimed one (a prediction test's
            rival forms, :func:`measured_rival_verdict`): ``[{"form", "value", "interval"}]``.
        margin: How far past ``paper_value`` a bound must hold (``<``: below v - margin; ``>``: above
            v + margin): the floor, where v is another method's mean on the same scale, since two
            accuracies within the floor of each other are the same accuracy (:func:`relation_margin`).

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
        held = mean + allowed < paper_value - margin if relation == "<" else mean - allowed > paper_value + margin
    if interval is None:
        cell.update(gap=gap, allowed=allowed)
    if built_in:
        return {**cell, "verdict": "by construction", "category": BUILT_IN, "reason": built_in.rstrip(".") + "."}
    if inconclusive:
        return {**cell, "verdict": "cannot decide", "category": inconclusive_category, "reason": inconclusive + "."}
    known = known_reason(rules, setting, method, column)
    below = paper_below_trivial(paper_value, trivial, floor, column)
    if below:  # said wherever the cell is not reproduced: a reader must not take the paper's value at face
        known = {"category": (known or {}).get("category", "unexplained"),
                 "reason": below + (" " + known["reason"] if known else "")}  # fmt: skip
    trivial_kind = column in TRIVIAL_SETS or column in TRIVIAL_AT_START
    if trivial_kind and relation == "=" and (trivial is not None or degenerate):
        ours_trivial = degenerate or abs(mean - trivial) <= floor
        paper_trivial = trivial is not None and abs(paper_value - trivial) <= floor
        # An accuracy has two constant predictors: the majority class's rate t and the other class's 100 - t.
        minority = column in TRIVIAL_SETS and trivial is not None and abs(trivial - 50.0) > floor
        paper_minority = minority and not paper_trivial and at_other_class(paper_value, trivial, floor)
        paper_trivial = paper_trivial or paper_minority
        if column in TRIVIAL_SETS:
            ours, theirs, unit = f"{mean:.1f}%", f"{paper_value:.1f}%", " points"
            rate = "" if trivial is None else f" ({trivial:.1f}% on this {TRIVIAL_SETS[column]} set)"
            name = "the trivial rate" + rate
            same = "a constant predictor scores the same"
            trivial_rival = "a constant predictor's"
        else:
            ours, theirs, unit = f"{mean:.3f}", f"{paper_value:.3f}", ""
            name = "its value at step 0" + ("" if trivial is None else f" ({trivial:.3f}, the random initialisation)")
            same = "a first layer that never moved reads the same"
            trivial_rival = "a first layer that never moved"
        # "fits, yet tests at chance" (w/o structure); runs that all degenerated fit nothing, whatever their score.
        chance_claim = column == "test" and fits_training_set and not degenerate
        if paper_trivial and (ours_trivial or held) and not chance_claim:
            where = "there too" if ours_trivial else "within the floor of the paper's"
            if degenerate and abs(mean - trivial if trivial is not None else 0.0) > floor:
                where = "comes from runs that degenerated (DegenerateRuns), a failed fit"
                same = "a failed fit says nothing of the method either"
            theirs_at = name
            if paper_minority:  # the paper's at the other class's constant, ours at a constant (or near the paper's)
                theirs_at = f"the other class's constant rate ({100.0 - trivial:.1f}%; the trivial rate {trivial:.1f}%)"
                where = "at a constant predictor's too" if ours_trivial else "within the floor of the paper's"
            return {
                **cell,
                "verdict": "cannot decide",
                "category": "both at the trivial rate",
                "reason": f"the paper's {theirs} lies within {floor:g}{unit} of {theirs_at}, and featlearn's {ours} "
                f"{where}: {same}, so the cell says nothing about the method.",
            }
        if ours_trivial and not paper_trivial and held and not degenerate:
            # Within the floor of both (E.1.2's 97.1 against 100 and a 95.1% trivial rate): the floor can tell
            # featlearn's value neither from the paper's nor from a constant predictor's (a first layer unmoved).
            reason = (
                f"featlearn's {ours} lies within {floor:g}{unit} of the paper's {theirs} and of {name}: the floor "
                f"cannot tell a match of the paper's from {trivial_rival}."
            )
            reason += f" {known['reason']}" if known is not None else ""
            return {**cell, "verdict": "cannot decide", "category": NEAR_BOTH, "reason": reason}
        # A failed fit is a constant predictor: a mean near the trivial rate whose seeds scatter well past it
        # (one below, four above: RF on weighted imbalanced data) is a fit that differs, not one that failed.
        seeds = [v for v in values or [] if v is not None]
        scattered = not degenerate and trivial is not None and any(abs(v - trivial) > 2 * floor for v in seeds)
        if ours_trivial and not paper_trivial and not scattered:
            if column in TRIVIAL_SETS:
                near = f"scores {ours}, within {floor:g}{unit} of {name}"
                what = "degenerated (DegenerateRuns)" if degenerate else near
                reason = f"featlearn's {method} {what}: its fit failed, where the paper's {theirs} is not there."
                category = FAILED_FIT
            else:  # a cosine: the neurons did not move towards the ground truth (by design for a frozen layer)
                what = "degenerated (DegenerateRuns)" if degenerate else f"stays within {floor:g} of {name}"
                reason = f"featlearn's {method} {what}: its neurons did not align, where the paper's {theirs} is above."
                category = known["category"] if known is not None and not degenerate else FAILED_FIT
            reason += f" {known['reason']}" if known is not None else ""
            # A frozen layer's cosine whose paper value its measurements cannot tell from a random draw: ○.
            verdict = "cannot decide" if category == UNDECIDABLE else "differs"
            return {**cell, "verdict": verdict, "category": category, "reason": reason}
    if held and degenerate_seeds and trivial_kind:
        reason = (
            f"{degenerate_seeds} of featlearn's {n} seeds of {method} degenerated (DegenerateRuns: one class "
            "predicted, or a loss that grew by orders of magnitude): a mean within the floor that failed fits are "
            "part of is not a result."
        )
        return {**cell, "verdict": "differs", "category": FAILED_FIT, "reason": reason}
    if measured_rivals and (held or known is None):
        return {**cell, **measured_rival_verdict(held, column, paper_value, gap, cell.get("interval"), measured_rivals)}
    if held:
        rival = first_match(rules.get("rivals"), setting, method, column)
        window = (low, high) if interval is not None else None
        passing = [v for v in rival_values(rival) if rival_passes(v, relation, paper_value, window, floor)]
        if passing:
            return {
                **cell,
                "verdict": "cannot decide",
                "category": RIVAL_PASSES,
                "reason": f"{rival['form']} ({column} = {passing[0]:g}) passes the same test, so the test cannot tell "
                "the paper's claim from it.",
            }
        # Against another fitted rate, the bound is that rate's interval edge: what the test compared with.
        edge = paper_value - margin if relation == "<" else paper_value + margin
        if interval is not None and paper_interval is not None and relation in ("<", ">"):
            edge = paper_interval[0] if relation == "<" else paper_interval[1]
        return {**cell, "verdict": "reproduced", "rules_out": rules_out(column, relation, edge, trivial, rival)}
    # Past the bound (by the margin, where there is one): within the margin of the other side is the same value,
    # so a mean there is not on the claimed side, and the relation differs.
    bound = paper_value - margin if relation == "<" else paper_value + margin
    on_claimed_side = relation in ("<", ">") and (mean < bound if relation == "<" else mean > bound)
    if on_claimed_side and interval is None:
        # The mean is on the claimed side, only the seeds' spread crosses the bound: no evidence either way.
        return {
            **cell,
            "verdict": "cannot decide",
            "category": STRADDLES,
            "reason": (
                f"featlearn's mean {mean:.3g} lies on the paper's side of {paper_value:g}, but its seeds' spread "
                f"({allowed:.3g}, std_multiple x std) crosses it: neither the bound nor its opposite is shown."
                if not margin
                else f"featlearn's mean {mean:.3g} lies past {paper_value:g} by more than the floor ({margin:g}), but "
                f"its seeds' spread ({allowed:.3g}, std_multiple x std) reaches back within it: neither the claim "
                "nor its opposite is shown."
            )
            + (f" {known['reason']}" if known is not None else ""),
        }
    if on_claimed_side and interval[0] <= other_high and other_low <= interval[1]:
        # The same for a fitted rate: its estimate on the claimed side, its interval reaching the other side's.
        return {
            **cell,
            "verdict": "cannot decide",
            "category": STRADDLES_INTERVALS,
            "reason": f"featlearn's {mean:.3g} lies on the claimed side of {paper_value:g}, but its 95% interval "
            f"[{interval[0]:.3g}, {interval[1]:.3g}] reaches {shown_interval(other_low, other_high)}: neither the "
            "bound nor its opposite is shown." + (f" {known['reason']}" if known is not None else ""),
        }
    if known is not None:
        # A difference its measurements cannot decide (one within the seeds' spread) is no "differs".
        verdict = "cannot decide" if known["category"] == UNDECIDABLE else "differs"
        return {**cell, "verdict": verdict, "category": known["category"], "reason": known["reason"]}
    return {**cell, "verdict": "differs", "category": "unexplained", "reason": "no reason recorded yet"}


def relation_margin(claim: dict, rules: dict, interval: list | tuple | None) -> float:
    """How far past the other side a relation's bound must hold: the floor between two methods' means.

    "The Network tests above the NTK" by less than the floor is no claim shown: two accuracies (or
    cosines) within the floor of each other are the same number by the rule every table cell is
    judged by, and a network at the 84.4% of a threshold on the count s would "beat" an NTK at
    83.8% otherwise. A bound against a stated number (``value``), a spread (``statistic``) or a
    fitted rate (its interval) keeps no margin: the number is the paper's, the test its own.
    """
    left = claim.get("left") or {}
    if "right" not in claim or claim.get("relation") not in ("<", ">") or left.get("statistic") or interval:
        return 0.0
    metric = left.get("metric", "")
    tolerance = (rules.get("tolerances") or {}).get(metric)
    if (metric not in TRIVIAL_SETS and metric not in TRIVIAL_AT_START) or not tolerance:
        return 0.0
    return float(tolerance["absolute"])


def shown_interval(low: float, high: float) -> str:
    """The other side of a comparison in words: a value, or a fitted rate's 95% interval."""
    return f"{low:.3g}" if low == high else f"the other side's interval [{low:.3g}, {high:.3g}]"


def measured_rival_verdict(
    held: bool, column: str, paper_value: float, gap: float, interval: tuple | None, rivals: list[dict]
) -> dict:
    """The verdict of a claimed form against rival forms measured by the same test (a prediction test).

    A rival *passes the same test* where its own interval holds the paper's value, or where it
    comes at least as close as the claimed form. The claimed form holding while a rival passes
    is "cannot decide"; holding alone, reproduced, ruling out the closest rival. Failing while a
    rival passes is "differs", with the rival as the evidence; failing where every rival fails
    and the claimed form comes closest, "cannot decide": no candidate form is within the test's
    noise, and the paper's is the best of them (a Theta allows lower-order terms none models).

    Args:
        held: Whether the claimed form passed.
        column: The metric column (its name is said in the reasons).
        paper_value: The value the test asks for (0: a prediction error).
        gap: The claimed form's value minus ``paper_value``.
        interval: The claimed form's 95% interval.
        rivals: ``[{"form", "value", "interval"}]``, each rival's value and 95% interval.
    """

    def shown(value: float, bounds) -> str:
        return f"{value:+.3f}" + ("" if bounds is None else f" [{bounds[0]:+.3f}, {bounds[1]:+.3f}]")

    def passes(rival: dict) -> bool:
        bounds = rival.get("interval")
        inside = bounds is not None and bounds[0] <= paper_value <= bounds[1]
        return inside or abs(rival["value"] - paper_value) <= abs(gap)

    closest = min(rivals, key=lambda r: abs(r["value"] - paper_value))
    passing = [r for r in rivals if passes(r)]
    ours = f"the claimed form's {column} is {shown(paper_value + gap, interval)}"
    if held and passing:
        first = passing[0]
        return {
            "verdict": "cannot decide",
            "category": "a rival passes the same test",
            "reason": f"{ours}, and {first['form']} passes the same test ({column} = "
            f"{shown(first['value'], first.get('interval'))}), so the test cannot tell the paper's form from it.",
        }
    if held:
        return {
            "verdict": "reproduced",
            "rules_out": f"{closest['form']} ({column} = {shown(closest['value'], closest.get('interval'))}), the "
            "closest rival form",
        }
    if passing:
        best = min(passing, key=lambda r: abs(r["value"] - paper_value))
        return {
            "verdict": "differs",
            "category": "a rival form predicts better",
            "reason": f"{ours}, outside the test, where {best['form']} gives "
            f"{shown(best['value'], best.get('interval'))}: the measurements favour the rival form.",
        }
    return {
        "verdict": "cannot decide",
        "category": "no form within the test's noise",
        "reason": f"{ours}, outside the test, and every rival form named for it misses by more (the closest, "
        f"{closest['form']}: {shown(closest['value'], closest.get('interval'))}): the paper's form comes closest of "
        "these, yet none predicts within the seeds' noise, so the test does not decide the form at these d.",
    }


def rival_passes(
    rival: float, relation: str, paper_value: float, interval: tuple[float, float] | None, floor: float
) -> bool:
    """Whether a rival's value would pass the same test as the paper's claim, so the test cannot separate them.

    A bound (``<``, ``>``) is passed by any rival on the same side of the paper's value; an
    equality by a rival inside the measured interval (a fitted rate) or within the floor of
    the paper's value. Example: "alpha < 2" is passed by a plain power law d^1.5 as well as by
    d polylog d, so it cannot decide between them.
    """
    if relation == "<":
        return rival < paper_value
    if relation == ">":
        return rival > paper_value
    if interval is not None:
        return interval[0] <= rival <= interval[1]
    return abs(rival - paper_value) <= floor


def rival_values(rival: dict | None) -> list[float]:
    """A judgement file rival's value, or values (a list: a rival on either side), as floats."""
    if rival is None:
        return []
    value = rival["value"]
    return [float(v) for v in (value if isinstance(value, list) else [value])]


def rules_out(column: str, relation: str, paper_value: float, trivial: float | None, rival: dict | None) -> str:
    """The alternative a ✓ rules out, in words: what would have made the cell ✗."""
    if rival is not None:
        return f"{rival['form']} ({column} = {' or '.join(f'{v:g}' for v in rival_values(rival))})"
    if column in TRIVIAL_SETS and trivial is not None:
        return f"a constant predictor ({trivial:.1f}%)"
    if column in TRIVIAL_AT_START and trivial is not None:
        return f"a first layer that did not move (cos {trivial:.3f} at step 0)"
    if relation == "<":
        return f"a value at or above {paper_value:g}"
    if relation == ">":
        return f"a value at or below {paper_value:g}"
    return f"a value outside the floor of {paper_value:g}"


def at_other_class(value: float, trivial: float, floor: float) -> bool:
    """Whether an accuracy lies within the floor of the other constant predictor's, 100 - t (t: the majority's rate)."""
    return abs(value - (100.0 - trivial)) <= floor


def paper_below_trivial(paper_value: float | None, trivial: float | None, floor: float, column: str) -> str | None:
    """A flag for a paper accuracy more than the floor below its own set's trivial rate, or None.

    Such a value can be genuine (a classifier trained on the hinge loss without an output
    bias can score below the majority rate on an unbalanced set), but a reader must see that
    the paper's own number is below what a constant predictor scores.
    """
    if column not in TRIVIAL_SETS or paper_value is None or trivial is None or paper_value >= trivial - floor:
        return None
    if at_other_class(paper_value, trivial, floor):
        return (
            f"The paper's own {paper_value:.1f}% lies below the trivial rate of this set ({trivial:.1f}%, a constant "
            f"predictor) and within {floor:g} points of the other class's constant ({100.0 - trivial:.1f}%): the "
            "paper's classifier may predict the minority class throughout."
        )
    return (
        f"The paper's own {paper_value:.1f}% lies below the trivial rate of this set ({trivial:.1f}%, a constant "
        "predictor): possible for a classifier without an output bias, else a contradiction in the paper."
    )


def spread_at_ceiling(values: list[float] | None, bound: float, ceiling: float = CEILING) -> str | None:
    r"""Why a bound on the spread over seeds holds by construction (every seed near the ceiling), or None.

    :math:`n` values in :math:`[c - r, c]` have a sample standard deviation of at most
    :math:`r \sqrt{\lfloor n/2 \rfloor \lceil n/2 \rceil / (n (n - 1))}`; where that is below
    the paper's bound, the bound follows from the accuracies (already judged in their own cells)
    and says nothing more.
    """
    if not values or len(values) < 2:
        return None
    n, width = len(values), ceiling - min(values)
    largest = width * math.sqrt((n // 2) * ((n + 1) // 2) / (n * (n - 1)))
    if largest >= bound:
        return None
    return (
        f"every seed lies within {width:.2f} of the {ceiling:g}% ceiling, so the spread of {n} seeds is at most "
        f"{largest:.2f}, below the bound {bound:g} whatever the method: the bound follows from the accuracies, "
        "judged in their own cells"
    )


#: The name an item's process goes by, for a ``by_construction`` entry's ``processes``, where the item
#: runs its configs as shipped (no calibrated constants).
OWN_PROCESS = "(the experiment's own)"


def for_process(entries: list[dict] | None, process: str | None) -> list[dict]:
    """The judgement file's entries that hold under an item's process.

    An entry with ``processes`` (fnmatch patterns) holds only where the item's process matches one:
    the calibrated candidate it runs at (``process``), or :data:`OWN_PROCESS` for an item that runs
    its configs as shipped; an entry without holds under every process.
    """
    return [
        entry
        for entry in entries or []
        if "processes" not in entry or any(fnmatchcase(process or OWN_PROCESS, p) for p in entry["processes"])
    ]


def item_rules(rules: dict, process: str | None) -> dict:
    """The judgement file as it applies to an item run at ``process``: its reasons and rivals by their ``processes``.

    A reason written from one process's measurements (the Network's threshold on the count s under
    the kept initialisation, say) explains nothing of a run under another; a rival that one process
    produces (the erasing step 1's aligned neurons) is another's only where it runs.
    """
    return {
        **rules,
        "reasons": for_process(rules.get("reasons"), process),
        "rivals": for_process(rules.get("rivals"), process),
    }


def by_construction(rules: dict, setting: str, method: str, column: str, process: str | None = None) -> str | None:
    """The judgement file's one-line why for a cell whose value follows from featlearn's own process, or None.

    Only the entries that hold under the item's ``process`` (:func:`for_process`): a cosine that one
    process fixes by construction is a measurement under another.
    """
    entry = first_match(for_process(rules.get("by_construction"), process), setting, method, column)
    return None if entry is None else str(entry["why"]).strip()


def side_by_construction(claim: dict, rules: dict, setting: str, process: str | None) -> str | None:
    """Why a relation that holds follows from a side's value that holds by construction (:func:`by_construction`).

    One measurement, one verdict: where the judgement file lists a side's cell (method and
    metric, in this item's setting and process) as following from featlearn's own process or
    from the calibrated table, a relation that holds with it holds for that reason too; one that
    fails stays failed.
    """
    metric = claim["left"]["metric"]
    sides = [(claim["left"]["method"], metric)]
    if "right" in claim:
        sides.append((claim["right"]["method"], claim["right"].get("metric", metric)))
    for method, column in sides:
        why = by_construction(rules, setting, method, column, process)
        if why is not None:
            return f"{method}'s side holds by construction: {why.rstrip('.')}."
    return None


def method_in(method: str, patterns: list[str] | None) -> bool:
    """Whether ``method`` matches one of a judgement file's method patterns (``features_frozen_before_fit``, ...)."""
    return any(fnmatchcase(method, p) for p in patterns or [])


def guard_failed_fits(cells: list[Cell], frozen_before_fit: list[str] | None = None) -> None:
    """A ✓ cosine or test accuracy of a method whose own training fit differs (or is not shown) becomes ○ (in place).

    The neurons (or the test accuracy) of a network that did not fit its training set as the
    paper's did are not those of the paper's fitted network, so a match says nothing of it.
    A method in ``frozen_before_fit`` (fnmatch patterns: the judgement file's list, e.g. One Step,
    whose neurons are fixed after step 1, before its classifier is fit) keeps its cosine's verdict:
    its classifier's fit cannot make its neurons another network's. A relation's cell is its
    measured (left) method's: "the Network tests above the NTK" holds of the paper's fitted
    Network only where featlearn's fits its training set as the paper's does. One direction is
    exempt: a method that fits its training set better than the paper's and still tests below the
    other side ("RF fails", "One Step tests below Two Step") holds the claim a fortiori, since a
    worse fit cannot have put it there.
    """
    differing = [c for c in cells if c.metric == "train" and c.verdict == "differs"]
    # A training fit the floor cannot tell from a constant predictor's is no fit shown either.
    unshown = {(c.item, c.method) for c in cells if c.metric == "train" and c.category == NEAR_BOTH}
    failed = {(c.item, c.method) for c in differing} | unshown
    fits_better = {(c.item, c.method) for c in differing if None not in (c.mean, c.paper) and c.mean > c.paper}
    for cell in cells:
        method = cell.left if cell.kind == "relation" else cell.method
        if cell.metric == "cos" and method_in(method, frozen_before_fit):
            continue
        below = cell.kind == "relation" and cell.relation == "<" and not cell.metric_statistic  # left below
        if below and cell.metric == "test" and (cell.item, method) in fits_better:
            continue
        if cell.verdict == "reproduced" and cell.metric in ("cos", "test") and (cell.item, method) in failed:
            cell.update(
                verdict="cannot decide",
                category="its own fit differs",
                reason=f"featlearn's {method} differs from the paper's on its training set (the train cell), "
                f"so a match of its {cell.metric} is not the paper's fitted network's."
                if (cell.item, method) not in unshown
                else f"featlearn's {method} is not shown to fit its training set as the paper's does (the train "
                f"cell: within the floor of the trivial rate), so a match of its {cell.metric} is not the paper's "
                "fitted network's.",
                rules_out=None,
            )


def mark_calibrated_fits(
    cells: list[Cell], outcomes: dict[str, dict], fitted_here: dict[str, dict] | None = None
) -> None:
    """A ✓ of a cell the constants or a process choice were chosen to fit holds by construction (in place).

    On the table a calibration chose the paper's open constants on (the item's ``constants``
    say ``calibrated``), the objective's cells (``targets``: method and column) were fitted: a
    match there is the fit, not a prediction, and could not have failed the way a predicted
    table's can. The same holds for the cells an item's ``fitted_here`` names: a choice of
    featlearn's process made on that table to get them. A ✗ there stays ✗ (even the fit misses
    the paper's number). A relation with a fitted cell on either side follows from the fit too.

    Args:
        cells: The judged cells.
        outcomes: Item id -> its outcome (``constants`` where the item takes the calibration's).
        fitted_here: Item id -> its plan entry's ``fitted_here`` (items without one left out).
    """
    for cell in cells:
        outcome = outcomes.get(cell.item) or {}
        constants = outcome.get("constants") or {}
        calibrated = {tuple(t) for t in constants.get("targets") or []} if constants.get("calibrated") else set()
        here = (fitted_here or {}).get(cell.item) or {}
        chosen_here = {tuple(t) for t in here.get("cells") or []}
        if cell.kind == "relation":
            sides = [(cell.left, cell.metric)] + ([(cell.reference, cell.metric)] if cell.reference else [])
        else:
            sides = [(cell.method, cell.metric)]
        # A relation with one fitted side follows from the choice too: under a tied candidate that side, and
        # with it the relation, could have gone the other way (the Network's 100% against the NTK's 84%).
        if cell.verdict != "reproduced" or not any(side in calibrated | chosen_here for side in sides):
            continue
        on_calibrated = any(side in calibrated for side in sides)
        if on_calibrated and constants.get("default"):
            reason = (
                f"{FIT_REASONS[0]}: the objective {constants.get('objective')!r} kept its default "
                f"({constants.get('candidate')}) on this table's numbers, this one among them, where it would have "
                "left it for a candidate that fit them better beyond two standard errors, so a match here is the "
                "table the choice was made on, not a prediction."
            )
        elif on_calibrated:
            reason = (
                f"{FIT_REASONS[0]}: the objective {constants.get('objective')!r} chose the paper's "
                f"open constants ({constants.get('candidate')}) to fit this table's numbers, this one among them, "
                "so a match here is the fit, not a prediction."
            )
        else:
            reason = f"{FIT_REASONS[1]}: {here['why'].strip()} A match here is the fit, not a prediction."
        cell.update(verdict="by construction", category=BUILT_IN, reason=reason, rules_out=None)


#: How mark_calibrated_fits opens the reason of a cell a fit was made on (the calibration's, or fitted_here's).
FIT_REASONS = ("calibrated on this cell", "fitted on this table")


def is_fit(cell: Cell) -> bool:
    """Whether ``cell`` is a fit (mark_calibrated_fits): the same numbers on a table it predicts are another cell."""
    return cell.verdict == "by construction" and (cell.reason or "").startswith(FIT_REASONS)


def verdict_key(cell: Cell) -> tuple:
    """What makes two cells one measurement: (method, metric, featlearn's values, paper value, trivial rate)."""
    values = tuple(round(v, 9) for v in cell.values or [])
    return cell.method, cell.metric, values, cell.paper, cell.trivial


#: Where a reason may be cut: after ".", ";" or ":" and before a capital or "(", but not after an abbreviation
#: ("App. E.1", "eq. (4)", "Fig. 2", "e.g. A"), which would leave "(App." dangling before the note's link.
SENTENCE_END = re.compile(
    r"(?<!\bApp\.)(?<!\b[Ee]q\.)(?<!\b[Ee]qs\.)(?<!\bFig\.)(?<!\bSec\.)(?<!e\.g\.)(?<!i\.e\.)(?<!\bcf\.)(?<!\bvs\.)"
    r"(?<=[.;:])\s+(?=[A-Z(])"
)


def short_reason(text: str, limit: int = SHORT_REASON) -> str:
    """A reason cut to its first sentences within ``limit`` characters (the whole text when short enough)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    sentences = re.split(SENTENCE_END, text)
    short = ""
    for sentence in sentences:
        if len(short) + len(sentence) + 1 > limit - 2:
            break
        short = f"{short} {sentence}".strip()
    if short.endswith(":"):  # a cut before what the colon announces: say that more follows
        short = short[:-1] + " …"
    return short or text[: limit - 1].rsplit(" ", 1)[0] + " …"


# ---------------------------------------------------------------------- claims
@dataclass
class Claim:
    """One outcome statement of the paper, with its place, and the cells that test it.

    Args:
        id: A short unique name (an anchor of the report).
        place: Where the paper says it (section, table, figure).
        words: The statement, quoted where the paper has words.
        cells: The report's cells that test it (``claim`` set on each).
        not_measured: Why no cell measures it, where none does.
        diagnostic: Whether its cells are featlearn's diagnostic items (not counted in the headline).
    """

    id: str
    place: str
    words: str
    cells: list[Cell] = field(default_factory=list)
    not_measured: str | None = None
    diagnostic: bool = False

    @property
    def verdict(self) -> str:
        """The claim's verdict from its cells' (:func:`claim_verdict`)."""
        if self.not_measured and not self.cells:
            return "not run"
        return claim_verdict([c.verdict for c in self.deciding_cells])

    @property
    def deciding_cells(self) -> list[Cell]:
        """The cells its verdict follows from: the paper's protocol's where it has any (diagnostic ones show only)."""
        protocol = [c for c in self.cells if not c.diagnostic]
        return protocol or self.cells


def claim_verdict(verdicts: list[str]) -> str:
    """A claim's verdict from its cells': a ✗ cell makes it differ, a ○ undecided, ≡ cells never reproduce it.

    ``not run`` when no cell was judged; ``by construction`` when every judged cell holds by
    construction; ``reproduced`` when every judged cell is ✓ or ≡ and at least one is ✓.
    """
    judged = [v for v in verdicts if v and v != "not run"]
    if not judged:
        return "not run"
    for verdict in ("differs", "cannot decide"):
        if verdict in judged:
            return verdict
    return "reproduced" if "reproduced" in judged else "by construction"


def assign_claims(entries: list[dict] | None, cells: list[Cell], settings: dict[str, str]) -> list[Claim]:
    """The paper's claims with their cells: each judged cell goes to the first entry whose patterns match it.

    Args:
        entries: The judgement file's ``claims``: ``id``, ``place``, ``words``, ``cells`` (a list of
            fnmatch patterns on ``item``, ``method``, ``metric``; a key left out matches anything),
            optionally ``not_measured``.
        cells: The report's cells; each judged one gets ``claim`` (the id) set.
        settings: Item id -> the paper's setting (the place of a table row's own claim).

    Returns:
        The claims in the file's order, then one per table row (item and method) that no entry
        names: "the paper's numbers for <method>", placed at the row's setting. A claim's cells
        are in the order of its patterns (the report's order within one pattern), so the file
        says which cell speaks first for it: the claims matrix shows the first whose verdict is
        the claim's.
    """
    claims = {e["id"]: Claim(e["id"], e["place"], " ".join(str(e["words"]).split()), [], e.get("not_measured"))
              for e in entries or []}  # fmt: skip
    rank: dict[int, int] = {}  # id(cell) -> the index of the first of its claim's patterns that names it
    for cell in cells:
        if not cell.verdict:
            continue
        entry = next((e for e in entries or [] if any(cell_matches(cell, p) for p in e.get("cells") or [])), None)
        if entry is None:
            key = f"{cell.item}: {cell.method}"
            words = f"the paper's numbers for {cell.method}"
            claims.setdefault(key, Claim(key, settings.get(cell.item) or cell.item, words))
        else:
            key = entry["id"]
            rank[id(cell)] = next(i for i, p in enumerate(entry["cells"]) if cell_matches(cell, p))
        cell.claim = key
        claims[key].cells.append(cell)
    for claim in claims.values():
        claim.cells.sort(key=lambda c: rank.get(id(c), 0))  # stable: the report's order within a pattern
        claim.diagnostic = bool(claim.cells) and all(c.diagnostic for c in claim.cells)
    return list(claims.values())


def cell_matches(cell: Cell, pattern: dict) -> bool:
    """Whether a claim's pattern (fnmatch on ``item``, ``method``, ``metric``; a key left out: any) names ``cell``."""
    return all(fnmatchcase(str(getattr(cell, key)), str(pattern.get(key, "*"))) for key in ("item", "method", "metric"))


def claim_counts(claims: list[Claim], diagnostic: bool = False) -> dict[str, int]:
    """How many claims have each verdict: the paper's protocol's, or (``diagnostic``) the diagnostic items'."""
    return {v: sum(1 for c in claims if c.verdict == v and c.diagnostic == diagnostic) for v in VERDICTS}


# ---------------------------------------------------------------------- evidence from the runs
def undecided_cell(
    rules: dict, setting: str, method: str, column: str, values: dict, paper_train: float | None
) -> str | None:
    """Why a cell cannot be decided whatever its value, or None.

    Two cases: the judgement file's ``undecidable`` entries (setting, method and metric
    patterns, as the reasons', with a one-line ``why``: a measurement that is not the paper's
    quantity, as a proxy event), and a cosine of a method that falls short of the paper's fit
    of its training set (more than the train floor below the paper's training accuracy): the
    neurons of a network that did not fit are not the paper's fitted network's, and their
    largest cosine with the ground truth is that of directions with no signal. A method in the
    file's ``features_frozen_before_fit`` (One Step, Two Step) is exempt: its classifier is fit
    on neurons fixed before it, so a fit that falls short does not make them another network's.
    (A value the method gives by construction is :func:`by_construction`'s, a verdict of its own.)
    """
    listed = first_match(rules.get("undecidable"), setting, method, column)
    if listed is not None:
        return " ".join(str(listed["why"]).split()).rstrip(".")
    frozen = method_in(method, rules.get("features_frozen_before_fit"))  # the fit cannot change its neurons
    if column in TRIVIAL_AT_START and paper_train is not None and not frozen:
        train, _, _ = summarize(reached(values.get("train_acc")))
        floor = float(rules["tolerances"]["train"]["absolute"])
        if train is not None and train < paper_train - floor:
            return (
                f"featlearn's {method} falls short of the paper's fit of its training set ({train:.1f}% against "
                f"{paper_train:.1f}%), so its neurons are not those of the paper's fitted network, and their largest "
                "cosine with the ground truth says nothing of what that network learned"
            )
    return None


def weaker_rival(
    relation: str,
    method: str,
    mean: float | None,
    interval: list[float] | None,
    paper_value: float | None,
    floor: float,
    ours: tuple[float, float] | None = None,
) -> str | None:
    """Why a relation against featlearn's run of a method is undecided: that run is a weaker rival than the paper's.

    "Ours beats it" says nothing of the paper's method when featlearn's rival falls short of
    the paper's value of it (more than the floor, or its whole interval, on the losing side:
    below for ``>``, above for ``<``, as an exponent of samples): the relation may hold against
    an untuned or weakened baseline and not against the paper's. None where the paper gives no
    value of the rival, where ours is as strong, or where the relation holds against the paper's
    value too (``ours``: the left side's edges, ``(low, high)``, its interval or mean -+ its spread).
    """
    if paper_value is None or mean is None or relation not in ("<", ">"):
        return None
    low, high = interval if interval is not None else (mean - floor, mean + floor)  # beyond the floor either way
    weaker = high < paper_value if relation == ">" else low > paper_value
    if not weaker:
        return None
    if ours is not None and (ours[1] < paper_value if relation == "<" else ours[0] > paper_value):
        return None  # it beats the paper's own rival as well
    shown = f"{mean:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval is not None else "")
    return (
        f"featlearn's {method} ({shown}) is a weaker rival than the paper's ({paper_value:g}), and the relation does "
        "not hold against the paper's value: it may hold against ours only"
    )


def relation_undecided(
    claim: dict,
    results: dict[str, dict],
    rules: dict,
    paper_value: float | None = None,
    right_results: dict[str, dict] | None = None,
) -> str | None:
    """Why a claim between accuracies cannot be decided by its measurements, or None.

    Seven cases:

    * a bound on the spread over seeds (``statistic: std``) of a method within the floor of
      its trivial rate: it does not fit the task, so its spread says nothing of its stability;
    * a bound on the spread of a method some of whose seeds degenerated (a constant predictor's
      accuracy in the spread measures the failures, not the method's stability);
    * a bound on the spread of a method whose mean is not the paper's (``paper_value``, the
      paper's value of that method and metric, more than the floor away): the paper's spread
      is of its own fit, and a spread of another fit cannot confirm or refute it;
    * an upper bound on a method's accuracy ("X fails": below a fixed value) that featlearn's
      run of X meets while it sits within the floor of its trivial rate, some of its seeds
      degenerated, or it falls more than the floor below the paper's own X (``paper_value``),
      the trivial rate itself below the bound: a constant predictor, or a weaker fit, passes
      the same bound, so the ✓ would say featlearn's run failed, not that the method does;
    * "tests at chance" (the right side a Trivial row) of a method that does not fit its own
      training set either: chance on the test set then says nothing about generalisation;
    * a comparison with a method that is a failed fit (degenerate seeds, or at its trivial rate);
    * two methods compared on sets whose trivial rates differ by more than the floor (a task
      with and without its input structure): equal accuracies may be two constant predictors.

    ``right_results``: the results of the item the right side is measured in, where that is
    another item (default: ``results``).
    """
    left, right = claim["left"], claim.get("right")
    if left["metric"] not in TRIVIAL_SETS:
        return None
    values = results.get(left["method"]) or {}
    floor = float(rules["tolerances"][left["metric"]]["absolute"])
    if left.get("statistic") == "std":
        mean, spread, seeds, trivial, failed = fit_summary(values, left["metric"])
        if mean is not None and trivial is not None and abs(mean - trivial) <= floor:
            return (
                f"{left['method']} sits within the floor of its trivial rate ({mean:.1f}% against {trivial:.1f}%): "
                "it does not fit the task, so its spread over the seeds says nothing of the method's stability"
            )
        if failed:
            return (
                f"{failed} of featlearn's {len(values['degenerate'])} seeds of {left['method']} degenerated "
                "(DegenerateRuns: one class predicted, or a loss that grew by orders of magnitude): a spread that "
                "failed fits are part of says nothing of the method's stability"
            )
        if mean is not None and paper_value is not None and abs(mean - paper_value) > floor:
            return (
                f"featlearn's {left['method']} ({mean:.1f}%) is not the paper's ({paper_value:.1f}%, this item's "
                f"table): the paper's spread is of its own fit, and the spread of another fit can neither confirm "
                f"nor refute it"
            )
        bound = claim.get("value")
        if bound is not None and spread is not None:
            low, high = std_interval(spread, seeds)
            if low <= float(bound) <= high:
                return (
                    f"{seeds} seeds bound a standard deviation only loosely: the sample's {spread:.2f} puts the true "
                    f"one between {low:.2f} and {high:.2f} (95%), which holds the paper's {float(bound):g}"
                )
        return None
    if right is None:
        mean, _, _, trivial, failed = fit_summary(values, left["metric"])
        bound = claim.get("value")
        # Only a bound that holds and that a constant predictor (the trivial rate) would pass as well.
        if claim["relation"] != "<" or None in (mean, trivial, bound) or not trivial < float(bound) or mean >= bound:
            return None
        if failed:
            why = f"{failed} of featlearn's {len(values['degenerate'])} seeds of {left['method']} degenerated"
        elif abs(mean - trivial) <= floor:
            why = (
                f"featlearn's {left['method']} sits within the floor of its trivial rate "
                f"({mean:.1f}% against {trivial:.1f}%)"
            )
        elif paper_value is not None and mean < paper_value - floor:
            return (
                f"featlearn's {left['method']} ({mean:.1f}%) falls more than the floor below the paper's "
                f"({paper_value:.1f}%, this item's table): a weaker fit than the paper's passes the bound by its "
                "weakness, so it cannot tell the method failing from featlearn's run of it failing"
            )
        else:
            return None
        return (
            f"{why}: a constant predictor passes the same bound, so it cannot tell the method failing from a failed fit"
        )
    if right["method"].startswith(TRIVIAL_ROW):
        evidence = trivial_evidence(values, left["metric"], rules)
        if evidence.get("fits_training_set") is False:
            train, _, _ = summarize(reached(values.get("train_acc")))
            trivial, _, _ = summarize(values.get("train_majority"))
            return (
                f"{left['method']} does not fit its training set either ({train:.1f}% against a trivial rate of "
                f"{trivial:.1f}%), so chance on the test set says nothing about generalisation"
            )
        return None
    theirs_values = (results if right_results is None else right_results).get(right["method"]) or {}
    their_column = right.get("metric", left["metric"])
    their_mean, _, _, their_trivial, their_failed = fit_summary(theirs_values, their_column)
    at_chance = their_mean is not None and their_trivial is not None and abs(their_mean - their_trivial) <= floor
    if their_column in TRIVIAL_SETS and (their_failed or at_chance):
        why = (
            f"{their_failed} of its {len(theirs_values['degenerate'])} seeds degenerated"
            if their_failed
            else f"it sits within the floor of its trivial rate ({their_mean:.1f}% against {their_trivial:.1f}%)"
        )
        return (
            f"the other side, {right['method']}, is a failed fit ({why}), so the relation compares "
            f"{left['method']} with a constant predictor, not with the method"
        )
    mine, _, _ = summarize((results.get(left["method"]) or {}).get(f"{TRIVIAL_SETS[left['metric']]}_majority"))
    theirs, _, _ = summarize(theirs_values.get(f"{TRIVIAL_SETS[left['metric']]}_majority"))
    if mine is not None and theirs is not None and abs(mine - theirs) > floor:
        return (
            f"the two sides are accuracies on sets whose trivial rates differ ({mine:.1f}% against {theirs:.1f}%), "
            "so equal accuracies may be two constant predictors and unequal ones say nothing of the method"
        )
    return None


def fit_summary(values: dict, column: str) -> tuple[float | None, float | None, int, float | None, int]:
    """A method's fit of one accuracy column: (mean, std, seeds, trivial rate of its set, degenerate seeds)."""
    metric = next(m for c, m, _, _ in COLUMNS if c == column)
    mean, std, seeds = summarize(reached(values.get(metric)))
    trivial, _, _ = summarize(values.get(f"{TRIVIAL_SETS[column]}_majority"))
    return mean, std, seeds, trivial, sum(bool(flag) for flag in values.get("degenerate") or [])


def std_interval(std: float, n: int, level: float = 0.95) -> tuple[float, float]:
    r"""The ``level`` confidence interval of a normal law's standard deviation from a sample's ``std`` of ``n``.

    .. math:: \big[s \sqrt{(n-1)/\chi^2_{1-\alpha/2,\,n-1}},\; s \sqrt{(n-1)/\chi^2_{\alpha/2,\,n-1}}\big]

    (for 5 seeds, 0.60 s to 2.87 s at 95%).
    """
    from scipy.stats import chi2

    tail = (1.0 - level) / 2.0
    return std * math.sqrt((n - 1) / chi2.ppf(1.0 - tail, n - 1)), std * math.sqrt((n - 1) / chi2.ppf(tail, n - 1))


def trivial_evidence(values: dict, column: str, rules: dict, paper_train: float | None = None) -> dict:
    """What :func:`~featlearn.studies.judgement.judge` needs of a method's runs to apply the trivial-rate rule.

    ``trivial``: the mean majority-class rate of the cell's set, or for a cosine
    (:data:`~featlearn.studies.judgement.TRIVIAL_AT_START`) its mean value at step 0;
    ``fits_training_set``: whether the method fits its training set as the paper's does: its
    training accuracy more than the train floor above its own trivial rate and, where the paper
    gives the method's training accuracy (``paper_train``), not more than the floor below it (a
    network that reaches 55% where the paper's memorises at 100% has not fit, so its test at
    chance is no "fits, yet tests at chance"); ``degenerate``: whether every seed's run degenerated
    (:class:`~featlearn.callbacks.DegenerateRuns`), and ``degenerate_seeds`` how many did.
    """
    flags = values.get("degenerate") or []
    degenerate = {"degenerate": bool(flags) and all(flags), "degenerate_seeds": sum(bool(f) for f in flags)}
    if column in TRIVIAL_AT_START:  # the value at step 0 (ComparisonTable: from the runs' logged curves)
        start, _, _ = summarize(values.get(f"{column}_start"))
        return {"trivial": start, **degenerate}
    if column not in TRIVIAL_SETS:
        return {}
    trivial, _, _ = summarize(values.get(f"{TRIVIAL_SETS[column]}_majority"))
    train, _, _ = summarize(reached(values.get("train_acc")))
    train_trivial, _, _ = summarize(values.get("train_majority"))
    tolerances = rules["tolerances"]
    floor = float(tolerances.get("train", tolerances[column])["absolute"])  # a paper may judge test accuracy only
    fits = None if train is None or train_trivial is None else train - train_trivial > floor
    if fits and paper_train is not None:
        fits = train >= paper_train - floor
    return {"trivial": trivial, "fits_training_set": fits, **degenerate}


def reached(values: list | None) -> list[float] | None:
    """The seeds' values without those a run did not reach (None: a phase that never ended)."""
    return None if values is None else [v for v in values if v is not None]


# ---------------------------------------------------------------------- the cells of a report
def trivial_rates(results: dict[str, dict]) -> dict[str, dict[str, list[float]]]:
    """The item's trivial-rate rows: the train and test sets' majority-class rates (percent per seed).

    :data:`TRIVIAL_ROW` from the first method whose runs measured them on the data with its
    input structure (every such method trains on the same sets), and the same row "w/o
    structure" from the first method on the variant without it, whose labels can be far more
    one-sided; none where no run measured them. Its cosine is that method's at step 0 (the
    random initialisation's, which every method of the item shares).
    """
    rows: dict[str, dict[str, list[float]]] = {}
    for method, values in results.items():
        row = f"{TRIVIAL_ROW}, w/o structure" if "w/o structure" in method else TRIVIAL_ROW
        if row not in rows and values.get("test_majority"):
            rows[row] = {"train_acc": values.get("train_majority"), "test_acc": values["test_majority"]}
            if values.get("cos_start"):  # the cosine's trivial value: the random initialisation's
                rows[row]["cos_similarity"] = values["cos_start"]
    return dict(sorted(rows.items(), key=lambda item: item[0] != TRIVIAL_ROW))


def claimed_form(
    rules: dict, setting: str, method: str, column: str, forms: dict[str, dict]
) -> tuple[list[float] | None, list[float] | None, list[dict] | None]:
    """A prediction test's cell: the claimed form's value and interval, and the other forms as its rivals.

    The judgement file's ``forms`` name, per (setting, method, metric), the form the paper
    claims among those the item measured (``forms``: form -> ``{"error", "low", "high"}``).
    A method the file names no form for has no value in this column. The entry's ``rivals``
    (optional) names the forms the test must tell the claimed one from, where another measured
    form contains it (d^alpha, alpha fitted, contains d^2 and passes wherever it does); default:
    every other measured form.

    Returns:
        ``([value], [low, high], [{"form", "value", "interval"}])``, or ``(None, None, None)``.

    Raises:
        ValueError: The file names a form the item did not measure.
    """
    entry = first_match(rules.get("forms"), setting, method, column)
    if entry is None:
        return None, None, None
    named = [entry["form"], *(entry.get("rivals") or [])]
    unknown = [name for name in named if name not in forms]
    if unknown:
        raise ValueError(
            f"The judgement file's forms entry for {setting}, {method}, {column} names {unknown}; "
            f"the item measured {sorted(forms)}: name those."
        )
    claimed = forms[entry["form"]]
    rivals = [
        {"form": name, "value": value["error"], "interval": [value["low"], value["high"]]}
        for name, value in forms.items()
        if name != entry["form"] and (not entry.get("rivals") or name in entry["rivals"])
    ]
    return [claimed["error"]], [claimed["low"], claimed["high"]], rivals


def collect_cells(plan: Plan, outcomes: dict[str, dict], numbers: dict, rules: dict) -> list[Cell]:
    """Every cell of the report: one row per item, method and metric featlearn or the paper has.

    A compare item gets a row :data:`TRIVIAL_ROW` with its sets' majority-class rates, and every
    accuracy cell is judged against its own method's trivial rate (:func:`~featlearn.studies.judgement.judge`).
    """
    cells = []
    for item in plan.items:
        outcome = outcomes[item.id]
        process = (outcome.get("constants") or {}).get("candidate")  # None: the item's configs as shipped
        rules_here = item_rules(rules, process)
        paper_methods = [m for (setting, m) in numbers if setting == item.setting]
        results = dict(outcome.get("results") or {})
        if item.kind == "compare":
            results.update(trivial_rates(results))
        methods = list(results) or paper_methods
        for method in dict.fromkeys(methods + paper_methods):
            values = results.get(method, {})
            row = numbers.get((item.setting, method), {})
            for column, metric, _, _ in COLUMNS:
                relation, reference = column_relation(row.get("relation", "="), column)
                paper_value = row.get(column)
                if reference is not None:  # judged against another method's mean in this item
                    paper_value, _, _ = summarize(reached((results.get(reference) or {}).get(metric)))
                raw = values.get(metric)
                interval = values.get(f"{metric}_interval")  # a fitted rate's 95% interval: its window
                forms = values.get(f"{metric}_forms")  # a prediction test's candidate forms: form -> value
                rivals = None
                if forms:
                    raw, interval, rivals = claimed_form(rules, item.setting or "", method, column, forms)
                measured = reached(raw)
                if paper_value is None and not measured and not raw:
                    continue
                cell = Cell(item.id, item.setting or "", method, column, relation, reference)
                cell.unreached = len(raw or []) - len(measured or [])
                if outcome["status"] != "run":
                    judged = None if paper_value is None else {"verdict": "not run", "reason": outcome["why"]}
                    cell.update(paper=paper_value, reason=outcome["why"], verdict=judged["verdict"] if judged else "")
                elif method not in results:
                    cell.update(paper=paper_value, verdict="not run", reason="not among this scale's methods")
                else:
                    edges = [m for m in (method, reference) if all((results.get(m) or {}).get("at_grid_edge") or [0])]
                    judged = judge(
                        paper_value,
                        measured,
                        column,
                        item.setting or "",
                        method,
                        rules_here,
                        relation,
                        **trivial_evidence(values, column, rules, row.get("train")),
                        inconclusive=(
                            f"the students' minimum of {', '.join(edges)} lies at the edge of the swept sizes (at "
                            "the last size, or smoothed over a first size above width 1), so the sweep does not place "
                            "the U-curve's bottom"
                            if edges
                            else undecided_cell(rules, item.setting or "", method, column, values, row.get("train"))
                        ),
                        interval=None if interval is None else tuple(interval),
                        built_in=by_construction(rules, item.setting or "", method, column, process),
                        measured_rivals=rivals,
                        inconclusive_category=(
                            PROXY
                            if not edges and first_match(rules.get("undecidable"), item.setting or "", method, column)
                            else "inconclusive"
                        ),
                    )
                    mean, std, n = summarize(measured)
                    cell.update(paper=paper_value, mean=mean, std=std, n=n, values=measured)  # per seed, in order
                    if interval is not None:
                        cell.interval = list(interval)
                    if judged is not None:
                        cell.judged(judged)
                cells.append(cell)
    return cells


def collect_relations(plan: Plan, outcomes: dict[str, dict], rules: dict, numbers: dict | None = None) -> list[Cell]:
    """The paper's statements that are relations between measurements: one judged cell each.

    Each entry of the judgement file's ``relations`` names its item, the relation in a few words,
    the paper's words and place (``source``), the measured side (``left``: a method and a
    metric column of that item), a relation (``=``, ``<``, ``>``) and the other side: a
    number (``value``) or another method's mean (``right``, its metric defaulting to the
    left's; ``right: {item}`` measures it in another item of the plan, and the claim is not
    run where that item was not). ``left: {statistic: std}`` measures the spread of the
    metric over the seeds instead of its mean (the paper's "standard deviations smaller than
    0.5%"): one number, so a bound on it holds or not, with no spread of its own.
    ``not_measured`` says why featlearn has no measurement for it yet; ``undecidable`` why its
    measurement, though made, is not the paper's quantity (the cell is ○ whatever its value);
    ``rival_passes`` names a rival the test does not rule out (○ likewise, "a rival passes the
    same test"), with the relation that does compare the two. A claim is judged by
    :func:`~featlearn.studies.judgement.judge`, after
    :func:`~featlearn.studies.judgement.relation_undecided` has set aside
    the claims its measurements cannot decide; the cells' trivial-rate rule itself does not
    apply, since a claim may be about chance ("all three methods drop to chance").
    ``numbers`` (:func:`~featlearn.studies.plan.paper_numbers`) gives the paper's own values,
    against which a spread's method must be reproduced for its spread to speak of the paper's.
    """
    cells = []
    for claim in rules.get("relations") or []:
        item = next((i for i in plan.items if i.id == claim["item"]), None)
        if item is None:  # an item --only left out (a test holds every claim to the shipped plan's items)
            continue
        outcome = outcomes.get(item.id, {"status": "not run", "why": "not among the items run"})
        results = dict(outcome.get("results") or {})
        results.update(trivial_rates(results))
        cell = Cell(item.id, item.setting or "", RELATION_PREFIX + claim["claim"], "", claim.get("relation", ""))
        cell.update(source=claim["source"], kind="relation")
        if claim.get("not_measured"):  # said, with why, before anything is looked up
            # "not run" is for an item that did not run; in one that ran, an unmeasured relation is undecided.
            ran = outcome["status"] == "run"
            cell.update(metric=claim.get("left", {}).get("metric", ""), verdict="cannot decide" if ran else "not run")
            cell.update(category="not measured" if ran else "", reason=" ".join(claim["not_measured"].split()))
            if not ran:
                cell.reason = f"{outcome['why']} (and not measured at any scale: {cell.reason})"
            cells.append(cell)
            continue
        left = claim["left"]
        metric = next(m for c, m, _, _ in COLUMNS if c == left["metric"])
        cell.metric = left["metric"]
        interval = (results.get(left["method"]) or {}).get(f"{metric}_interval")
        other = outcome  # the item the right side is measured in: this one, or right.item
        if "right" in claim:
            right = claim["right"]
            right_metric = next(m for c, m, _, _ in COLUMNS if c == right.get("metric", left["metric"]))
            cell.reference = right["method"] + ("" if right_metric == metric else f" ({right['metric']})")
            right_results = results
            if right.get("item", item.id) != item.id:  # a claim across two items (e.g. two mixtures' parts)
                cell.reference += f", {right['item']}"
                other = outcomes.get(right["item"], {"status": "not run", "why": "not among the items run"})
                other = {**other, "why": f"{right['item']}: {other.get('why', '')}"}
                right_results = dict(other.get("results") or {})
            paper, _, _ = summarize(reached((right_results.get(right["method"]) or {}).get(right_metric)))
            right_interval = (right_results.get(right["method"]) or {}).get(f"{right_metric}_interval")
            if interval is not None and right_interval is not None:  # two fitted rates: interval against interval
                cell.paper_interval = list(right_interval)
            right_setting = next((i.setting for i in plan.items if i.id == right.get("item", item.id)), None)
            right_column = right.get("metric", left["metric"])
            their_row = (numbers or {}).get((right_setting, right["method"]), {})
            stated = column_relation(their_row.get("relation", "="), right_column) == ("=", None)
            their_paper = their_row.get(right_column) if stated else None  # a value, not a bound, of the rival
            rival = (claim["relation"], right["method"], paper, right_interval, their_paper)
            rival_floor = float(rules["tolerances"][right_column]["absolute"])
        else:
            paper, rival = float(claim["value"]), None
        values = reached((results.get(left["method"]) or {}).get(metric))
        if left.get("statistic") == "std":  # the spread over seeds, one measured number
            _, spread, seeds = summarize(values)
            cell.metric_statistic = f"std over {seeds} seeds"
            cell.seed_values = values  # the evidence behind the spread, shown beside it
            values = None if spread is None else [spread]
        elif left.get("statistic") is not None:
            raise ValueError(f"A claim's left.statistic must be 'std' or absent, got {left['statistic']!r}: {claim}.")
        mean, std, n = summarize(values)
        cell.update(paper=paper, mean=mean, std=std, n=n, left=left["method"], values=values)
        if outcome["status"] != "run":
            cell.update(verdict="not run", reason=outcome["why"])
        elif other["status"] != "run":
            cell.update(verdict="not run", reason=other["why"])
        elif paper is None or mean is None:
            cell.update(verdict="not run", reason="a side of the claim was not measured at this scale")
        else:
            paper_row = (numbers or {}).get((item.setting, left["method"]), {})
            spread = float(rules["tolerances"][left["metric"]].get("std_multiple", 0.0)) * (std or 0.0)
            edges = tuple(interval) if interval is not None else (mean - spread, mean + spread)
            weaker = None if rival is None else weaker_rival(*rival, rival_floor, ours=edges)
            # The judgement file's own "cannot decide" for a relation whose measurement is not the paper's quantity.
            listed = " ".join(str(claim["undecidable"]).split()).rstrip(".") if claim.get("undecidable") else None
            # One whose test a named rival passes as well: a ✓ it would earn rules nothing out (○); a ✗ stays ✗.
            passes = " ".join(str(claim["rival_passes"]).split()).rstrip(".") if claim.get("rival_passes") else None
            undecided = (
                weaker
                or listed
                or relation_undecided(
                    claim, results, rules, paper_row.get(left["metric"]), right_results if "right" in claim else None
                )
            )
            # A spread at the ceiling holds by construction, unless the measurement cannot speak to the claim at
            # all (another fit than the paper's, say): one measurement, one verdict, as on every other table.
            built_in = claim.get("by_construction") or (
                spread_at_ceiling(cell.seed_values, paper)
                if left.get("statistic") == "std"
                and left["metric"] in TRIVIAL_SETS
                and claim["relation"] == "<"
                and not undecided
                else None
            )
            judged = judge(
                paper, values, left["metric"], item.setting or "", cell.method,
                item_rules(rules, (outcome.get("constants") or {}).get("candidate")), claim["relation"],
                inconclusive=undecided, interval=None if interval is None else tuple(interval),
                inconclusive_category=WEAKER_RIVAL if weaker else (PROXY if listed else "inconclusive"),
                paper_interval=tuple(cell.paper_interval) if cell.paper_interval else None,
                built_in=built_in, margin=relation_margin(claim, rules, interval),
            )  # fmt: skip
            if passes and judged["verdict"] == "reproduced":
                judged = {**judged, "verdict": "cannot decide", "category": RIVAL_PASSES, "reason": passes + "."}
                judged.pop("rules_out", None)
            process = (outcome.get("constants") or {}).get("candidate")
            side = side_by_construction(claim, rules, item.setting or "", process)
            if side and judged["verdict"] == "reproduced":  # it holds because a side holds by construction
                judged = {**judged, "verdict": "by construction", "category": BUILT_IN, "reason": side}
                judged.pop("rules_out", None)
            if interval is not None:
                cell.interval = list(interval)
            cell.judged({**judged, "trivial": None})
        cells.append(cell)
    return cells


def judge_report(plan: Plan, outcomes: dict[str, dict], numbers: dict, rules: dict) -> tuple[list[Cell], list[Claim]]:
    """Every cell of the report judged, and the paper's claims with their cells (the report's headline).

    The table cells and the relations, each judged alone; then a ✓ cosine or test accuracy of
    a method whose own training fit differs is set to ○ (:func:`~featlearn.studies.judgement.guard_failed_fits`),
    a ✓ of a cell the calibration (or the item's ``fitted_here`` choice) fitted to ≡
    (:func:`~featlearn.studies.judgement.mark_calibrated_fits`),
    and each judged cell is assigned to the claim it tests
    (:func:`~featlearn.studies.judgement.assign_claims`).
    """
    cells = collect_cells(plan, outcomes, numbers, rules) + collect_relations(plan, outcomes, rules, numbers)
    diagnostics = {item.id for item in plan.items if item.diagnostic}
    # Methods that are featlearn's own readings of a paper row, not the paper's method definition (the
    # judgement file's diagnostic_methods): judged and shown, never counted in the paper's claims.
    for cell in cells:
        cell.diagnostic = cell.item in diagnostics or method_in(cell.method, rules.get("diagnostic_methods"))
    guard_failed_fits(cells, rules.get("features_frozen_before_fit"))
    mark_calibrated_fits(cells, outcomes, {item.id: item.fitted_here for item in plan.items if item.fitted_here})
    claims = assign_claims(rules.get("claims"), cells, {item.id: item.setting or item.id for item in plan.items})
    return cells, claims
