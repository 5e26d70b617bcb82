"""Issue 41's limits at a school, with the shipped `Limits`, on SQLite and on a real PostgreSQL: a lecture hall of 300
behind one address joins while a client at that address sends 100 wrong codes; 1,000 joins into one room stop at its
seats with a sentence; a room flood from one client leaves a teacher elsewhere able to start a class; one class's
long polls leave places for others."""

from __future__ import annotations

import threading
import time

import pytest
from class_clock import Clock
from starlette.applications import Starlette
from starlette.testclient import TestClient

from classroom import routes as class_routes
from classroom.errors import TooManyAttempts
from classroom.rooms import Classroom, Limits
from classroom.routes import ClassRoutes
from tests.browser.class_probes import SCHOOL, room_flood, school_joins, seat_flood
from ui.class_replays import CourseQuestions


def test_300_students_behind_one_address_join_while_it_sends_100_wrong_codes(classroom: Classroom) -> None:
    figures = school_joins(classroom)
    assert (figures.joined, figures.wrong_counted, figures.refusals) == (300, 100, {})


def test_1000_joins_into_one_room_stop_at_its_seats_with_a_sentence(classroom: Classroom) -> None:
    figures = seat_flood(classroom)
    assert figures.seated == Limits().max_seats == 500
    assert figures.refusals == {"This class is full: it seats 500 students.": 500}


def test_a_room_flood_from_one_client_leaves_another_teacher_able_to_start(classroom: Classroom, clock: Clock) -> None:
    figures = room_flood(classroom)
    refusal = (
        "Your network started 20 classes this hour, the limit; continue one of them (your teacher link) or try again "
        "later."
    )
    assert (figures.started, figures.refusals, figures.other_teacher_started) == (20, {refusal: 40}, True)
    for k in range(Limits().rooms_per_session):  # one page's session, however many addresses it shows
        classroom.create_room("seed", 40, client=f"192.0.2.{k}", session="one page")
    with pytest.raises(TooManyAttempts, match="This page started 5 classes this hour"):
        classroom.create_room("seed", 40, client="192.0.2.99", session="one page")
    clock.now += 3601
    assert classroom.create_room("seed", 40, client=SCHOOL, session="flood 0").code  # an hour later


def test_one_class_holds_at_most_its_share_of_the_long_polls(
    classroom: Classroom, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(class_routes, "MAX_WAITING_PER_ROOM", 3)  # the shipped 600, scaled down
    routes = ClassRoutes(CourseQuestions(lambda: classroom), lambda: classroom, wait_s=2.0)
    crowded, other = classroom.create_room("seed", 40), classroom.create_room("seed", 40)
    seats = [classroom.join(crowded.code, f"10.0.0.{k}").token for k in range(4)]
    elsewhere = classroom.join(other.code, "10.0.1.1").token

    def follow(http: TestClient, code: str, seat: str, since: str = ""):
        headers = {"X-Class-Seat": seat}
        return http.get("/class/api/follow", params={"room": code, "since": since}, headers=headers)

    with TestClient(Starlette(routes=routes.routes(), lifespan=routes.lifespan)) as http:
        since = follow(http, crowded.code, seats[0]).json()["since"]
        held = [threading.Thread(target=follow, args=(http, crowded.code, seat, since)) for seat in seats[:3]]
        for thread in held:
            thread.start()
        deadline = time.monotonic() + 5
        while routes.watcher.waiting[crowded.code] < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        refused = follow(http, crowded.code, seats[3], since)
        assert refused.status_code == 429 and "as many pages following it as it may" in refused.json()["error"]
        assert follow(http, other.code, elsewhere).status_code == 200  # another class follows on
        for thread in held:
            thread.join()
