"""Per-step hyperparameter schedules: pure functions of the update step.

A schedule maps an update step ``t`` (the first update is step 1) to a value. It is
written in a config either as a number (constant for the whole run) or as a list
of contiguous segments::

    lr:
      - {start: 1, end: 1, value: 1.0e-3}          # step 1
      - {start: 2, end: 2, value: 1.0}             # step 2
      - {start: 3, value: 0.1, end_value: 0.01,    # steps 3..600, decaying
         end: 600, decay: exponential}

Each segment covers steps ``start..end`` inclusive (``end`` omitted: until the end of
training). Within a segment the value is constant, or moves from ``value`` at
``start`` to ``end_value`` at ``end`` by ``decay``:

* ``linear``: v(t) = v0 + (v1 - v0) u
* ``cosine``: v(t) = v1 + (v0 - v1) (1 + cos(pi u)) / 2
* ``exponential``: v(t) = v0 (v1 / v0)^u

with u = (t - start) / (end - start) in [0, 1]. Segments must start at step 1 and
follow each other without gaps or overlaps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: What a user may write for a scheduled hyperparameter: a number, or a list of
#: segment mappings with keys ``start``, ``end``, ``value``, ``end_value``, ``decay``.
ScheduleSpec = int | float | Sequence[Mapping[str, Any]]

DECAYS = ("constant", "linear", "cosine", "exponential")
_SEGMENT_KEYS = {"start", "end", "value", "end_value", "decay"}


@dataclass(frozen=True)
class Segment:
    """One piece of a schedule: steps ``start..end`` (inclusive; ``end=None`` is open)."""

    start: int
    end: int | None
    value: float
    end_value: float | None = None
    decay: str = "constant"

    def __call__(self, step: int) -> float:
        """The value at ``step`` (which must lie in the segment)."""
        if self.decay == "constant" or self.end == self.start:
            return self.value
        u = (step - self.start) / (self.end - self.start)
        v0, v1 = self.value, self.end_value
        if self.decay == "linear":
            return v0 + (v1 - v0) * u
        if self.decay == "cosine":
            return v1 + (v0 - v1) * 0.5 * (1.0 + math.cos(math.pi * u))
        return v0 * (v1 / v0) ** u  # exponential


class Schedule:
    """A validated piecewise schedule over update steps.

    Args:
        spec: A number (constant) or a list of segment mappings (see module docstring).
        name: The parameter's name as a user writes it (``model.training.lr``), used in errors.
        integer: Values must be integers (batch sizes); only constant segments allowed.
        positive: Values must be > 0 (otherwise >= 0).

    Raises:
        ValueError: If the spec is malformed, has gaps or overlaps, does not start at
            step 1, or holds a value out of range. The message names the parameter.
    """

    def __init__(self, spec: ScheduleSpec, name: str, *, integer: bool = False, positive: bool = False) -> None:
        self.name = name
        self.integer = integer
        self.positive = positive
        if spec is None:
            raise ValueError(f"{name} is missing: give a number or a list of segments.")
        if isinstance(spec, Schedule):
            spec = spec.spec
        self.spec = spec
        if isinstance(spec, bool):
            raise ValueError(f"{name} must be a number or a list of segments, got {spec!r}.")
        if isinstance(spec, (int, float)):
            self.segments = (Segment(1, None, self._check_value(spec, "value")),)
        elif isinstance(spec, Sequence) and not isinstance(spec, str):
            self.segments = self._parse_segments(spec)
        else:
            raise ValueError(
                f"{name} must be a number or a list of segments like "
                f"[{{start: 1, end: 1, value: 0.1}}, {{start: 2, value: 0.01}}], got {spec!r}."
            )
        self.is_constant = len(self.segments) == 1 and self.segments[0].decay == "constant"
        self._cursor = 0  # index of the segment that served the last call

    @property
    def is_zero(self) -> bool:
        """Whether the schedule is 0 at every step."""
        return all(seg.value == 0 and seg.end_value in (None, 0) for seg in self.segments)

    def zero_through(self, step: int) -> int | float:
        """The last step of the run of zeros that starts at ``step``.

        Returns ``step - 1`` when the value at ``step`` is not 0, ``math.inf`` when it
        stays 0 to the end of the schedule's last, open segment. A decaying segment is
        monotone, so it is 0 at most at one of its ends.
        """
        if self(step) != 0:
            return step - 1
        last = step
        for seg in self.segments:
            if seg.end is not None and seg.end < last:
                continue  # before the run
            if seg.value == 0 and seg.end_value in (None, 0):  # 0 throughout
                if seg.end is None:
                    return math.inf
                last = seg.end
            elif seg.start <= last:  # holds `last`, where it is 0: the run goes on only from its end
                if seg.end != last:
                    return last
            else:  # starts right after the run
                return seg.start if seg.value == 0 else last
        return last

    @property
    def last_step(self) -> int | None:
        """The last step the schedule covers, or None if its last segment is open-ended."""
        return self.segments[-1].end

    def check_covers(self, max_steps: int, max_steps_name: str = "trainer.max_steps") -> None:
        """Raise if training would run past the end of the schedule.

        Args:
            max_steps: The number of update steps training will run (-1: unbounded).
            max_steps_name: How the user sets ``max_steps``, for the message.

        Raises:
            ValueError: If the schedule ends before ``max_steps``.
        """
        last = self.last_step
        if last is None:
            return
        if max_steps is None or max_steps < 0 or max_steps > last:
            raise ValueError(
                f"{self.name} covers steps 1..{last} but {max_steps_name} is {max_steps}: "
                f"omit `end` in the last segment of {self.name} to keep its value until the end, "
                f"or set {max_steps_name} <= {last}."
            )

    def __call__(self, step: int) -> float:
        """The value at update step ``step`` (>= 1)."""
        segments = self.segments
        seg = segments[self._cursor]
        if step < seg.start or (seg.end is not None and step > seg.end):
            seg = self._find(step)
        value = seg(step)
        return int(value) if self.integer else value

    def _find(self, step: int) -> Segment:
        if step < 1:
            raise ValueError(f"{self.name}: steps start at 1, got step {step}.")
        for i, seg in enumerate(self.segments):
            if seg.end is None or step <= seg.end:
                self._cursor = i
                return seg
        raise ValueError(
            f"{self.name} ends at step {self.last_step} but step {step} was requested: "
            f"omit `end` in its last segment to continue it."
        )

    def __repr__(self) -> str:
        return f"Schedule({self.name}={self.spec!r})"

    def _check_value(self, value: Any, what: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{self.name}: {what} must be a number, got {value!r}.")
        if not math.isfinite(value):
            raise ValueError(f"{self.name}: {what} must be finite, got {value!r}.")
        if self.integer and float(value) != int(value):
            raise ValueError(f"{self.name}: {what} must be an integer, got {value!r}.")
        if self.positive and value <= 0:
            raise ValueError(f"{self.name}: {what} must be > 0, got {value!r}.")
        if value < 0:
            raise ValueError(f"{self.name}: {what} must be >= 0, got {value!r}.")
        return int(value) if self.integer else float(value)

    def _parse_segments(self, spec: Sequence[Mapping[str, Any]]) -> tuple[Segment, ...]:
        name = self.name
        if len(spec) == 0:
            raise ValueError(f"{name}: the list of segments is empty; give at least one.")
        segments = []
        expected_start = 1
        for k, raw in enumerate(spec):
            where = f"{name}[{k}]"
            if not isinstance(raw, Mapping):
                raise ValueError(f"{where} must be a mapping like {{start: 1, value: 0.1}}.")
            unknown = set(raw) - _SEGMENT_KEYS
            if unknown:
                raise ValueError(f"{where} has unknown keys {sorted(unknown)}; allowed: {sorted(_SEGMENT_KEYS)}.")
            if "value" not in raw:
                raise ValueError(f"{where} has no `value`.")
            start = raw.get("start", expected_start)
            end = raw.get("end")
            if isinstance(start, bool) or not isinstance(start, int):
                raise ValueError(f"{where}.start must be an integer step, got {start!r}.")
            if start != expected_start:
                gap_or_overlap = "a gap before" if start > expected_start else "an overlap at"
                raise ValueError(
                    f"{where} starts at step {start} but the previous segment ends at step "
                    f"{expected_start - 1} ({gap_or_overlap} step {min(start, expected_start)}): "
                    f"segments must be contiguous, the first starting at step 1; "
                    f"set start: {expected_start}."
                )
            if end is not None:
                if isinstance(end, bool) or not isinstance(end, int) or end < start:
                    raise ValueError(f"{where}.end must be an integer >= start ({start}), got {end!r}.")
            elif k != len(spec) - 1:
                raise ValueError(
                    f"{where} has no `end` but is followed by another segment: only the last segment may be open-ended."
                )
            decay = raw.get("decay", "constant" if raw.get("end_value") is None else "linear")
            if decay not in DECAYS:
                raise ValueError(f"{where}.decay must be one of {DECAYS}, got {decay!r}.")
            value = self._check_value(raw["value"], "value")
            end_value = raw.get("end_value")
            if decay != "constant":
                if self.integer:
                    raise ValueError(f"{where}: {name} takes constant segments only.")
                if end is None:
                    raise ValueError(f"{where}: a `{decay}` segment needs an `end` step.")
                if end_value is None:
                    raise ValueError(f"{where}: a `{decay}` segment needs an `end_value`.")
                end_value = self._check_value(end_value, "end_value")
                if decay == "exponential" and (value == 0 or end_value == 0):
                    raise ValueError(f"{where}: an exponential segment needs value and end_value > 0.")
            elif end_value is not None:
                raise ValueError(f"{where}: `end_value` needs a decay (linear/cosine/exponential).")
            segments.append(Segment(start, end, value, end_value, decay))
            if end is not None:
                expected_start = end + 1
        return tuple(segments)


def as_schedule(spec: ScheduleSpec | Schedule, name: str, *, integer: bool = False, positive: bool = False) -> Schedule:
    """Build a :class:`Schedule` from a spec (or pass one through)."""
    if isinstance(spec, Schedule):
        return spec
    return Schedule(spec, name, integer=integer, positive=positive)


class PointSchedules:
    """One hyperparameter with its own schedule at each of G grid points of an ensemble.

    An ensemble of S = G K members trains G grid points (value sets) on K seeds each:
    member m = g K + j takes point g's value. A call returns one float when every point
    has the same value at that step (so code that treats a shared value, such as a rate
    of 0 that leaves a group idle, keeps working), else the G values as a tuple.

    Args:
        points: The G schedules, in grid order.
        name: The parameter's name as a user writes it (``model.training.lr_a``), used in errors.
    """

    def __init__(self, points: Sequence[Schedule], name: str) -> None:
        if not points:
            raise ValueError(f"{name}: a per-point schedule needs at least one grid point.")
        self.points = tuple(points)
        self.name = name
        #: Every point's segments, for code that reads where segments start or what values they state.
        self.segments = tuple(seg for schedule in self.points for seg in schedule.segments)

    @property
    def is_zero(self) -> bool:
        """Whether every point's schedule is 0 at every step."""
        return all(schedule.is_zero for schedule in self.points)

    @property
    def size(self) -> int:
        """G, the number of grid points."""
        return len(self.points)

    def zero_through(self, step: int) -> int | float:
        """The last step through which every point's value stays 0 from ``step`` (see :meth:`Schedule.zero_through`)."""
        return min(schedule.zero_through(step) for schedule in self.points)

    def check_covers(self, max_steps: int, max_steps_name: str = "trainer.max_steps") -> None:
        """Raise if training would run past the end of any point's schedule."""
        for schedule in self.points:
            schedule.check_covers(max_steps, max_steps_name)

    def __call__(self, step: int) -> float | tuple[float, ...]:
        """The value at ``step``: one float when all points agree, else the G values."""
        values = tuple(schedule(step) for schedule in self.points)
        return values[0] if all(v == values[0] for v in values) else values

    def __repr__(self) -> str:
        return f"PointSchedules({self.name}: {[s.spec for s in self.points]!r})"


def point_values(value: float | tuple[float, ...], members: int) -> list[float]:
    """The value of each of ``members`` members from a (per-point) schedule's value at a step.

    One float applies to every member; G values apply to G equal, consecutive blocks of members.
    """
    if not isinstance(value, tuple):
        return [value] * members
    per_point = members // len(value)
    return [v for v in value for _ in range(per_point)]


def combine_points(schedules: Sequence[Schedule], name: str) -> Schedule | PointSchedules:
    """One :class:`Schedule` where every grid point's spec is the same, else :class:`PointSchedules`."""
    if all(schedule.spec == schedules[0].spec for schedule in schedules):
        return schedules[0]
    return PointSchedules(schedules, name)


# ---------------------------------------------------------------------- reshaping a process
def is_segment_list(spec: Any) -> bool:
    """Whether ``spec`` is written as a list of segments (not a number)."""
    return isinstance(spec, Sequence) and not isinstance(spec, str) and all(isinstance(s, Mapping) for s in spec)


def _spans(spec: Sequence[Mapping[str, Any]], name: str) -> list[tuple[int, int | None, dict]]:
    """(start, end, segment) of each segment, ``start`` filled in where the spec omits it."""
    spans, start = [], 1
    for k, raw in enumerate(spec):
        start = raw.get("start", start)
        end = raw.get("end")
        if isinstance(start, bool) or not isinstance(start, int) or (end is not None and not isinstance(end, int)):
            raise ValueError(f"{name}[{k}]: start and end must be integer steps, got {raw!r}.")
        spans.append((start, end, dict(raw)))
        if end is not None:
            start = end + 1
    return spans


def _ramps(raw: Mapping[str, Any]) -> bool:
    return raw.get("decay", "constant") != "constant" or raw.get("end_value") is not None


def skip_steps(spec: ScheduleSpec, steps: Sequence[int], name: str) -> ScheduleSpec:
    """The schedule with the update steps ``steps`` taken out; the steps after them move down.

    A process without its step 2 (Shi et al.'s One Step) is every schedule of the
    process with step 2 skipped: the old step 3's values become step 2's, and so on.
    Values are copied as written (``null`` placeholders included), so this works on a
    config before the CLI fills it in.

    Args:
        spec: A number (returned as is) or a list of segments.
        steps: The steps to take out (>= 1).
        name: The parameter's config name, for errors.

    Raises:
        ValueError: A skipped step lies inside a decaying segment (its ramp would change).
    """
    removed = sorted(set(steps))
    if any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in removed):
        raise ValueError(f"Steps to skip must be integers >= 1, got {list(steps)!r}.")
    if not is_segment_list(spec) or not removed:
        return spec

    def moved(step: int) -> int:  # where step lands once the removed steps before it are gone
        return step - sum(1 for s in removed if s < step)

    out = []
    for start, end, raw in _spans(spec, name):
        inside = [s for s in removed if s >= start and (end is None or s <= end)]
        if end is not None and len(inside) == end - start + 1:
            continue  # every step of the segment is skipped
        if inside and _ramps(raw):
            raise ValueError(
                f"{name}: cannot skip step(s) {inside} inside the decaying segment {raw!r}; "
                f"split it so that the skipped steps form segments of their own."
            )
        # A skipped start lands where the segment's first kept step does; a skipped end
        # one before where step end + 1 lands.
        raw["start"] = moved(start)
        if end is not None:
            raw["end"] = moved(end + 1) - 1
        out.append(raw)
    return out


def hold_from(spec: ScheduleSpec, step: int, value: float, name: str) -> ScheduleSpec:
    """The schedule as written up to ``step - 1``, then ``value`` from ``step`` to the end.

    Freezing a layer from step t is its rate and decay held at 0 from t on.

    Raises:
        ValueError: ``step`` < 1, or ``step`` falls inside a decaying segment.
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f"{name}: the step to hold from must be an integer >= 1, got {step!r}.")
    if step == 1:
        return value
    if not is_segment_list(spec):
        return [{"start": 1, "end": step - 1, "value": spec}, {"start": step, "value": value}]
    out = []
    for start, end, raw in _spans(spec, name):
        if start >= step:
            break
        if end is None or end >= step:
            if _ramps(raw):  # cutting a ramp would change its slope
                raise ValueError(
                    f"{name}: cannot end the decaying segment {raw!r} at step {step - 1}; split it at step {step}."
                )
            raw["end"] = step - 1
        raw["start"] = start
        out.append(raw)
    return [*out, {"start": step, "value": value}]


def set_at_step(spec: ScheduleSpec, step: int, value: float, name: str) -> ScheduleSpec:
    """The schedule as written, but ``value`` at update step ``step`` alone.

    A calibrated constant of one step (Shi et al.'s eta^(1)) replaces that step's value and
    leaves every other step as the experiment has it: E.1.2's biases frozen from step 2 stay
    frozen under E.1.1's step-1 rate.

    Raises:
        ValueError: ``step`` < 1, or ``step`` falls inside a decaying segment longer than it.
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f"{name}: the step to set must be an integer >= 1, got {step!r}.")
    if not is_segment_list(spec):
        spec = [{"start": 1, "value": spec}]
    out: list[dict] = []
    covered = False
    for start, end, raw in _spans(spec, name):
        if step < start or (end is not None and step > end):
            out.append({**raw, "start": start})
            continue
        covered = True
        if _ramps(raw) and not (start == step and end == step):
            raise ValueError(f"{name}: cannot set step {step} inside the decaying segment {raw!r}; split it first.")
        if start < step:
            out.append({**raw, "start": start, "end": step - 1})
        out.append({"start": step, "end": step, "value": value})
        if end is None or end > step:
            after = {**raw, "start": step + 1}
            if end is None:
                after.pop("end", None)
            out.append(after)
    if not covered:
        raise ValueError(f"{name}: no segment of {spec!r} holds step {step}; the schedule must cover it.")
    return out


def canonical_segments(spec: ScheduleSpec, name: str = "schedule") -> ScheduleSpec:
    """The same schedule written one way: adjacent constant segments of one value merged.

    ``hold_from`` and ``skip_steps`` cut segments where the process already holds the value
    (``[{start: 2, end: 2, value: 0}, {start: 3, value: 0}]`` is ``[{start: 2, value: 0}]``),
    so two configs can state one schedule in different words; their canonical forms are
    equal. A single constant segment over every step is that number. Ramps, and numbers,
    are returned as written.
    """
    if not is_segment_list(spec):
        return spec
    out: list[dict] = []
    for start, end, raw in _spans(spec, name):
        raw["start"] = start
        previous = out[-1] if out else None
        if (
            previous is not None
            and not _ramps(previous)
            and not _ramps(raw)
            and previous.get("end") == start - 1
            and {k: v for k, v in previous.items() if k not in ("start", "end")}
            == {k: v for k, v in raw.items() if k not in ("start", "end")}
        ):
            previous.pop("end")
            if end is not None:
                previous["end"] = end
            continue
        out.append(raw)
    if len(out) == 1 and out[0]["start"] == 1 and "end" not in out[0] and "value" in out[0] and not _ramps(out[0]):
        return out[0]["value"]
    return out


def map_arguments(arguments: dict, where: str, function: Callable[[Any, str], Any]) -> None:
    """Replace every argument of a config's ``init_args`` by ``function(value, name)``, in its groups too, in place.

    A group is a nested mapping of arguments (``TwoLayerNet``'s ``training``); a grid's
    values (``member_values``) and a nested class's arguments (a mapping with a
    ``class_path``) are values, handed over whole. ``name`` is the dotted setting
    (``model.init_args.training.lr_w``), for errors.
    """
    for key, value in arguments.items():
        name = f"{where}.{key}"
        if isinstance(value, Mapping) and key != "member_values" and "class_path" not in value:
            map_arguments(value, name, function)
        else:
            arguments[key] = function(value, name)
