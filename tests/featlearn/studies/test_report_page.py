"""The report's notes: each long reason written once, the cells linking to it (featlearn/studies/report_page.py)."""

from __future__ import annotations

from featlearn.studies.judgement import SHORT_REASON
from featlearn.studies.report_page import Notes

#: A judgement file's reason, long enough to need a note.
CAUSE = " ".join(f"Sentence {i} of the cause says why the cell differs, with its evidence." for i in range(12))


def test_a_short_reason_is_shown_whole_and_gets_no_note():
    notes = Notes([CAUSE])
    assert notes.cite("a rate the paper leaves open.") == "a rate the paper leaves open."
    assert notes.number("a rate the paper leaves open.") is None and notes.lines() == []


def test_a_long_reason_gets_one_note_however_often_it_is_cited():
    notes = Notes()
    first, again = notes.cite(CAUSE), notes.cite("  " + CAUSE.replace(" ", "\n", 3))  # whitespace does not count
    assert first == again and first.endswith("([note 1](#note-1))") and len(first) < SHORT_REASON + 30
    assert notes.lines().count("### Note 1") == 1 and CAUSE in notes.lines()


def test_cells_whose_own_lead_differs_share_their_causes_note():
    # A train and a test cell: the rules' words carry each cell's numbers, the cause after them is one.
    train = f"featlearn's Network scores 97.1%, within 3 points of the trivial rate (95.1%). {CAUSE}"
    test = f"featlearn's Network scores 96.9%, within 3 points of the trivial rate (95.1%). {CAUSE}"
    notes = Notes([CAUSE])
    train_text, test_text = notes.cite(train), notes.cite(test)
    assert train_text.startswith("featlearn's Network scores 97.1%") and "([note 1]" in train_text
    assert test_text.startswith("featlearn's Network scores 96.9%") and "([note 1]" in test_text
    assert notes.numbers == {CAUSE: 1}  # the note is the cause alone: each lead stays in its table
    # Without the causes each reason is its own note, the duplication this avoids.
    plain = Notes()
    plain.cite(train), plain.cite(test)
    assert len(plain.numbers) == 2


def test_a_cause_inside_a_reason_but_not_ending_it_is_not_split():
    reason = f"{CAUSE} The rules add a sentence after it, so the cause is not the reason's end."
    notes = Notes([CAUSE])
    assert notes.split(reason) == ("", reason) and notes.number(reason) == 1
    assert list(notes.numbers) == [reason]
