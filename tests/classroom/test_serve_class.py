"""Issue 41's class-mode findings against `python -m classroom.serve` with its shipped caps, a real process on its own
SQLite store (the test writes the room into the same file, as another replica would): 1,100 follows on one seat, as
the red team sent them without nginx, leave another student following and the Class page opening (the goal: 1.5 s); a
half-sent or malformed step leaves at most one line in the server's log; 20 answers trickling their bodies are closed
at the body deadline while health answers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from classroom.rooms import Classroom
from classroom.routes import MAX_WAITING_PER_SECRET
from classroom.serve import BODY_TIMEOUT_S
from classroom.store import open_store
from tests.browser.class_probes import ClassServer, class_server, follow_flood, malformed_steps, trickled_bodies
from tests.browser.harness import FIRST_RENDER_GOAL_S, HEALTH_GOAL_S


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassServer]:
    with class_server(tmp_path_factory.mktemp("serve-class")) as running:
        yield running


def test_1100_follows_on_one_seat_leave_another_student_following_and_the_page_opening(served):
    store = open_store(served.database)
    try:
        classroom = Classroom(store)
        room = classroom.create_room("seed", 40)
        seat, other = (classroom.join(room.code, f"10.0.0.{k}").token for k in (1, 2))
        figures = follow_flood(served.port, room.code, seat, other)
    finally:
        store.close()
    assert figures.statuses == {"waiting": MAX_WAITING_PER_SECRET, "429": 1_100 - MAX_WAITING_PER_SECRET}, figures
    assert figures.other_status == 200, figures  # before: 503, the server's places all taken
    # the goal is the 1.5 s (bench/bounds.py prints the figure); on a shared machine the test allows 5 times it
    assert figures.page_s < 5 * FIRST_RENDER_GOAL_S and figures.other_s < 5 * FIRST_RENDER_GOAL_S, figures


def test_a_half_sent_or_malformed_step_leaves_at_most_one_line_in_the_log(served):
    """A half-sent `POST /class/api/step` with a bad key wrote a 3.8 KB traceback to the server's log."""
    figures = malformed_steps(served.port, served.log)
    assert figures.tracebacks == 0 and figures.log_lines <= 1, figures


def test_20_answers_trickling_their_bodies_are_closed_at_the_deadline_while_health_answers(served):
    """Issue 54, finding 5: 2,000 answers sending a byte every 12 s held every connection of their address for 50 s
    (the page, the follow route and health answered 503), and no credentials are needed to send them."""
    figures = trickled_bodies(served.port)
    # closed at the deadline (not before: a slow phone's answer has that long), give or take a trickle's period
    assert all(BODY_TIMEOUT_S - 0.5 <= s <= BODY_TIMEOUT_S + 3 for s in figures.closed_s), figures
    assert figures.answers == {"408": 20}, figures  # told why, in a sentence, then closed
    assert len(figures.health_s) >= 2 * BODY_TIMEOUT_S and max(figures.health_s) < 5 * HEALTH_GOAL_S, figures
