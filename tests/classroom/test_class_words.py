"""Class mode's words are written once (issue 53): in classroom/words.py, which the server's refusal, the teacher's
page and, through their class link, both stages say. The stage's bundle holds no copy of any of them (what they look
like on screen is pinned in Chromium: tests/browser/test_class_projector.py, tests/browser/class_end_to_end.py)."""

from __future__ import annotations

import re

import pytest

from autodiff.stage.bundle import HOSTS, bundle
from classroom.views import DISCUSS, REVEALED, VOTE1, VOTE2
from classroom.words import (
    OPEN_QUESTION_HOLDS,
    ROOM_PHASES,
    STUDENT_PHASES,
    TEACHER_PHASES,
    TRANSFER_OPEN,
)

EVERY_SENTENCE = [OPEN_QUESTION_HOLDS, TRANSFER_OPEN, *ROOM_PHASES.values(), *STUDENT_PHASES.values()]
EVERY_SENTENCE += TEACHER_PHASES.values()
WHOLE = 20  # a sentence this long is found anywhere in the bundle; a shorter one ("Vote 1") only as a whole literal


@pytest.mark.parametrize("host", HOSTS)
def test_the_stage_holds_no_copy_of_class_modes_words(host):
    code = bundle(host)
    for said in EVERY_SENTENCE:
        if len(said) >= WHOLE:
            assert said.rstrip(".") not in code, said
        else:
            assert not re.search(f"([\"'`]){re.escape(said)}\\1", code), said


def test_every_phase_has_its_words():
    # a phase the stage finds no words for would read "undefined" on the projector
    assert set(ROOM_PHASES) == set(STUDENT_PHASES) == {VOTE1, DISCUSS, VOTE2, REVEALED}
    assert set(TEACHER_PHASES) == {VOTE1, DISCUSS, VOTE2}  # revealed: the page shows the answer instead
    assert all(ROOM_PHASES.values()) and all(STUDENT_PHASES.values()) and all(TEACHER_PHASES.values())
