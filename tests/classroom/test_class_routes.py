"""The push route beside the app, through HTTP (Starlette's test client, the routes' own lifespan and watcher), on
SQLite and on a real PostgreSQL: who may follow or step a room, what each is told, and when."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
from class_async import run_apart
from starlette.applications import Starlette
from starlette.testclient import TestClient

from classroom.errors import RoomNotFound
from classroom.rooms import Classroom, Limits
from classroom.routes import ANSWERS_PER_MINUTE, MAX_BODY, MAX_WAITING_PER_SECRET, NO_SUCH_SECRET, ClassRoutes
from ui.class_replays import CourseQuestions, room_replay


@pytest.fixture
def client(classroom: Classroom) -> Iterator[TestClient]:
    routes = ClassRoutes(CourseQuestions(lambda: classroom), lambda: classroom, wait_s=1.0)
    with TestClient(Starlette(routes=routes.routes(), lifespan=routes.lifespan)) as http:
        yield http


def follow(client: TestClient, code: str, seat: str, since: str = ""):
    return client.get("/class/api/follow", params={"room": code, "since": since}, headers={"X-Class-Seat": seat})


def watch(client: TestClient, code: str, key: str, since: str = "", **params: str):
    query = {"room": code, "since": since, **params}
    return client.get("/class/api/watch", params=query, headers={"X-Class-Teacher": key})


def step(client: TestClient, code: str, key: str, body: object):
    return client.post("/class/api/step", params={"room": code}, json=body, headers={"X-Class-Teacher": key})


def test_a_student_is_told_the_step_at_once_then_each_change_and_nothing_in_between(client, classroom):
    room = classroom.create_room("seed", 40)
    seat = classroom.join(room.code, "10.0.0.1").token
    first = follow(client, room.code, seat)
    assert first.status_code == 200 and first.json()["step"] == 0 and first.json()["question"] is None
    since = first.json()["since"]

    threading.Timer(0.3, lambda: classroom.set_step(room.code, room.teacher_key, 7)).start()
    began = time.monotonic()
    moved = follow(client, room.code, seat, since)
    assert moved.json()["step"] == 7 and 0.25 < time.monotonic() - began < 1.0

    # another student's join and answers are the teacher's business: this student's poll is not woken by them
    threading.Timer(0.2, lambda: classroom.join(room.code, "10.0.0.2")).start()
    quiet = follow(client, room.code, seat, moved.json()["since"])
    assert quiet.status_code == 204


def test_the_teacher_steps_the_room_and_sees_joins_and_answers_as_they_come(client, classroom):
    room = classroom.create_room("seed", 40)
    assert step(client, room.code, room.teacher_key, {"step": 3}).json() == {"step": 3}
    seen = watch(client, room.code, room.teacher_key).json()
    assert (seen["step"], seen["students"], seen["question"]) == (3, 0, None)
    seat = classroom.join(room.code, "10.0.0.1").token
    asked = classroom.open_question(room.code, room.teacher_key, 3, "leaf_grad", "grad:0")
    classroom.answer(room.code, seat, asked.id, "1, 2", right=False, mistake="forward_value")
    told = watch(client, room.code, room.teacher_key, seen["since"]).json()
    vote = told["question"]["votes"]["1"]
    assert told["students"] == 1 and told["question"]["phase"] == "vote1"
    assert vote["answered"] == 1 and vote["answers"] is None and vote["graded"] is None  # a projector: a count only
    own = watch(client, room.code, room.teacher_key, "", graded="1").json()["question"]["votes"]["1"]
    assert own["answers"] == [["1, 2", 1]]  # the teacher's own screen: the histogram and who is right
    assert own["graded"] == {"right": 0, "right_answers": [], "mistakes": [["forward_value", 1]]}


def test_a_projector_is_told_who_is_right_only_after_the_reveal(client, classroom):
    """Vote 1's answers reach the projector's page once vote 1 closes, without a mark; who is right (the count, the
    right texts, the mistakes) once the answer is revealed, for both votes."""
    room = classroom.create_room("seed", 40)
    seats = [classroom.join(room.code, f"10.0.0.{k}").token for k in (1, 2)]
    asked = classroom.open_question(room.code, room.teacher_key, 0, "leaf_grad", "grad:0")
    given = [("5, 7", True, None), ("1, 2", False, "forward_value")]
    for seat, (text, right, mistake) in zip(seats, given, strict=True):
        classroom.answer(room.code, seat, asked.id, text, right=right, mistake=mistake)

    def votes() -> dict:
        return watch(client, room.code, room.teacher_key).json()["question"]["votes"]

    def marks(body: dict) -> list[str]:
        text = json.dumps(body)
        return [word for word in ("right_answers", "forward_value", "true", "false") if word in text]

    assert votes()["1"] == {"answered": 2, "answers": None, "others": 0, "graded": None}
    classroom.close_vote(room.code, room.teacher_key, asked.id)
    discussed = votes()
    assert sorted(discussed["1"]["answers"]) == [["1, 2", 1], ["5, 7", 1]] and discussed["1"]["graded"] is None
    classroom.open_second_vote(room.code, room.teacher_key, asked.id, None)
    classroom.answer(room.code, seats[1], asked.id, "5, 7", right=True, mistake=None)
    second = votes()
    assert second["2"] == {"answered": 1, "answers": None, "others": 0, "graded": None}
    assert marks(discussed) == marks(second) == []
    classroom.reveal(room.code, room.teacher_key, asked.id)
    revealed = votes()
    assert revealed["1"]["graded"] == {"right": 1, "right_answers": ["5, 7"], "mistakes": [["forward_value", 1]]}
    assert revealed["2"]["graded"] == {"right": 1, "right_answers": ["5, 7"], "mistakes": []}
    assert revealed["2"]["answers"] == [["5, 7", 1]]


def test_a_student_sees_no_answer_of_anyone_and_no_tally(client, classroom):
    room = classroom.create_room("seed", 40)
    seats = [classroom.join(room.code, f"10.0.0.{k}").token for k in (1, 2)]
    asked = classroom.open_question(room.code, room.teacher_key, 0, "leaf_grad", "grad:0")
    classroom.answer(room.code, seats[0], asked.id, "secret answer", right=False)
    told = follow(client, room.code, seats[1]).json()
    assert "secret answer" not in str(told) and "votes" not in str(told)
    assert (told["question"]["id"], told["question"]["phase"], told["question"]["vote"]) == (asked.id, "vote1", 1)
    assert told["mine"] == [] and told["result"] is None


def answer(client: TestClient, code: str, seat: str, body: object):
    return client.post("/class/api/answer", params={"room": code}, json=body, headers={"X-Class-Seat": seat})


def test_an_answer_is_graded_on_the_server_stored_with_its_mistake_and_receipted(client, classroom):
    room = classroom.create_room("seed", 40)
    seat = classroom.join(room.code, "10.0.0.1").token
    asked = classroom.open_question(room.code, room.teacher_key, 0, "leaf_grad", "grad:0")  # x's gradient
    told = follow(client, room.code, seat).json()["question"]
    assert told["prompt"] == "What is x's gradient after the backward?"
    assert (told["form"], told["size"], told["code"], told["closes_in"]) == ("numbers", 2, "", None)
    right = room_replay("seed", classroom.seed(room.code)).questions["grad:0"].values.tolist()  # the room's numbers
    assert str(right) not in str(told) and "grad:0" not in str(told)  # the form holds no answer, the key is opaque
    not_numbers = answer(client, room.code, seat, {"question": asked.id, "answer": "five, seven"})
    assert not_numbers.status_code == 400 and "was not stored" in not_numbers.json()["error"]
    assert classroom.student_view(room.code, seat).answers == ()
    sign = ", ".join(f"{-v:g}" for v in right)
    stored = answer(client, room.code, seat, {"question": asked.id, "answer": sign})
    assert stored.json() == {"stored": sign, "vote": 1}
    assert follow(client, room.code, seat).json()["mine"] == [{"vote": 1, "answer": sign}]
    tally = classroom.teacher_view(room.code, room.teacher_key).questions[0].votes[1]
    assert (tally.right, tally.mistakes) == (0, {"sign": 1})  # graded by the server, not by the page
    classroom.reveal(room.code, room.teacher_key, asked.id)
    late = answer(client, room.code, seat, {"question": asked.id, "answer": "5, 7"})
    assert late.status_code == 409 and late.json()["error"].endswith(".")
    result = follow(client, room.code, seat).json()["result"]
    assert result["yours"] == sign and result["right"] is False and result["why"] == "got the sign wrong"
    assert [float(v) for v in result["answer"].strip("[]").split(",")] == right != [5.0, 7.0]  # not the lesson's


@pytest.mark.parametrize(
    "body",
    [
        {"question": "1", "answer": "1"},
        {"question": 1},
        {"question": True, "answer": "1"},
        ["1"],
        {"question": 1, "answer": "1", "pad": "x" * 2048},
    ],
)
def test_an_answer_that_is_not_one_is_refused_in_a_sentence(client, classroom, body):
    room = classroom.create_room("seed", 40)
    seat = classroom.join(room.code, "10.0.0.1").token
    classroom.open_question(room.code, room.teacher_key, 0, "leaf_grad", "grad:0")
    refused = answer(client, room.code, seat, body)
    assert refused.status_code == 400 and refused.json()["error"].endswith(".")
    forged = answer(client, room.code, "forged", {"question": 1, "answer": "1"})
    assert forged.status_code == 404 and classroom.student_view(room.code, seat).answers == ()


@pytest.mark.parametrize("header", [{}, {"X-Class-Teacher": "forged"}, {"X-Class-Seat": "forged"}])
def test_a_missing_or_forged_key_is_refused_with_a_sentence(client, classroom, header):
    room = classroom.create_room("seed", 40)
    for response in (
        client.post("/class/api/step", params={"room": room.code}, json={"step": 1}, headers=header),
        client.get("/class/api/watch", params={"room": room.code}, headers=header),
        client.get("/class/api/follow", params={"room": room.code}, headers=header),
    ):
        assert response.status_code in (400, 404), response.text
        assert response.json()["error"].endswith(".")
    assert classroom.teacher_view(room.code, room.teacher_key).step == 0


def test_a_missing_room_and_a_wrong_key_answer_alike_and_are_no_join_guesses_and_an_ended_room_says_so(
    client, classroom
):
    room = classroom.create_room("seed", 40)
    seat = classroom.join(room.code, "10.0.0.1").token
    probes = [
        follow(client, "ZZZZZZZZ", "whatever"),
        follow(client, room.code, "whatever"),
        watch(client, "ZZZZZZZZ", "whatever"),
        watch(client, room.code, "whatever"),
        step(client, "ZZZZZZZZ", "whatever", {"step": 1}),
        step(client, room.code, "whatever", {"step": 1}),
        answer(client, "ZZZZZZZZ", "whatever", {"question": 1, "answer": "1"}),
        answer(client, room.code, "whatever", {"question": 1, "answer": "1"}),
    ]
    assert len({(probe.status_code, probe.text) for probe in probes}) == 1  # byte for byte the same
    assert (probes[0].status_code, probes[0].json()) == (404, {"error": NO_SUCH_SECRET})
    # issue 54, finding 6: 300 follows to a made-up code had locked their address out of joining real classes
    assert classroom.wrong_guesses(client="testclient") == 0  # Starlette's test client's address
    for _ in range(Limits().guesses_per_window):
        assert follow(client, "ZZZZZZZZ", "whatever").status_code == 404
    assert classroom.join(room.code, "testclient").code == room.code
    since = follow(client, room.code, seat).json()["since"]
    threading.Timer(0.2, lambda: classroom.end_room(room.code, room.teacher_key)).start()
    ended = follow(client, room.code, seat, since)
    assert ended.status_code == 404 and "ended" in ended.json()["error"]


@pytest.mark.parametrize(
    "body", [{"step": "3"}, {"step": True}, {"step": 99}, {"step": -1}, [3], {"step": 1, "pad": "x" * MAX_BODY}]
)
def test_a_step_that_is_not_a_step_of_this_replay_is_refused(client, classroom, body):
    room = classroom.create_room("seed", 40)
    refused = step(client, room.code, room.teacher_key, body)
    assert refused.status_code == 400 and refused.json()["error"].endswith(".")
    assert classroom.teacher_view(room.code, room.teacher_key).step == 0


def test_oversized_credentials_and_room_codes_are_refused_before_any_query(client, classroom):
    room = classroom.create_room("seed", 40)
    assert follow(client, room.code, "s" * 65).status_code == 400
    assert follow(client, "A" * 21, "seat").status_code == 400


def test_the_server_sweeps_rooms_past_their_lifetime_by_itself(classroom, clock):
    import anyio

    from classroom.live import sweep_forever

    room = classroom.create_room("seed", 40)
    clock.now += 12 * 3600 + 1

    async def sweep_a_moment() -> None:
        with anyio.move_on_after(0.5):
            await sweep_forever(lambda: classroom, period_s=0.05)

    run_apart(sweep_a_moment)
    with pytest.raises(RoomNotFound):
        classroom.teacher_view(room.code, room.teacher_key)


@pytest.mark.parametrize(
    ("argv", "env", "url"),
    [
        (["--database", "postgresql://u@h/db"], None, "postgresql://u@h/db"),
        (["--database=sqlite:////tmp/c.db"], "postgresql://ignored", "sqlite:////tmp/c.db"),
        ([], "postgresql://from-env", "postgresql://from-env"),
        ([], None, None),
    ],
)
def test_the_store_is_named_by_database_then_the_environment_then_data(monkeypatch, argv, env, url):
    from classroom.live import DATABASE_ENV, database_url

    monkeypatch.delenv(DATABASE_ENV, raising=False)
    if env:
        monkeypatch.setenv(DATABASE_ENV, env)
    assert database_url(argv) == url


def test_odd_counts_and_characters_get_a_sentence_never_a_crash(client, classroom):
    room = classroom.create_room("seed", 40)
    seat = classroom.join(room.code, "10.0.0.1").token
    for have in ("²", "-1", "1.5", "9" * 7, "abc"):  # "²" is a digit to str.isdigit, not to int()
        told = client.get("/class/api/follow", params={"room": room.code, "have": have}, headers={"X-Class-Seat": seat})
        assert told.status_code == 200 and told.json()["events"] is None, have
    asked = classroom.open_question(room.code, room.teacher_key, 0, "remaining", "remaining")
    for typed in ("x \ud800", "x\u202e", "x\u2066y"):  # a lone surrogate; direction overrides and isolates
        body = json.dumps({"question": asked.id, "answer": typed}, ensure_ascii=True)
        refused = client.post(
            "/class/api/answer",
            params={"room": room.code},
            content=body,
            headers={"X-Class-Seat": seat, "Content-Type": "application/json"},
        )
        assert refused.status_code == 400 and refused.json()["error"].endswith("."), typed
    assert classroom.student_view(room.code, seat).answers == ()


def test_one_seat_holds_a_few_long_polls_and_sends_a_few_answers_a_minute(classroom):
    routes = ClassRoutes(CourseQuestions(lambda: classroom), lambda: classroom, wait_s=3.0)
    room = classroom.create_room("seed", 40)
    seat, other = (classroom.join(room.code, f"10.0.0.{k}").token for k in (1, 2))
    with TestClient(Starlette(routes=routes.routes(), lifespan=routes.lifespan)) as http:
        since = follow(http, room.code, seat).json()["since"]
        held = [
            threading.Thread(target=follow, args=(http, room.code, seat, since)) for _ in range(MAX_WAITING_PER_SECRET)
        ]
        for thread in held:
            thread.start()
        deadline = time.monotonic() + 5
        while sum(routes.waiting.values()) < MAX_WAITING_PER_SECRET and time.monotonic() < deadline:
            time.sleep(0.02)
        refused = follow(http, room.code, seat, since)
        assert refused.status_code == 429 and "too many tabs" in refused.json()["error"]
        assert follow(http, room.code, other).status_code == 200  # another student is not shut out
        asked = classroom.open_question(room.code, room.teacher_key, 0, "leaf_grad", "grad:0")
        for thread in held:
            thread.join()
        answers = [answer(http, room.code, seat, {"question": asked.id, "answer": "1, 2"}) for _ in range(21)]
        assert [a.status_code for a in answers] == [200] * ANSWERS_PER_MINUTE + [429]
        assert answer(http, room.code, other, {"question": asked.id, "answer": "5, 7"}).status_code == 200


def test_the_client_counted_is_the_one_nginx_saw_and_nobody_elses_claim(monkeypatch: pytest.MonkeyPatch):
    from streamlit.runtime.context import ContextProxy

    from classroom.clients import TRUSTED_PROXIES_ENV, client_address
    from ui import state

    assert client_address("127.0.0.1", "10.9.8.7, 192.0.2.5") == "192.0.2.5"  # deploy/'s nginx adds the last
    assert client_address("192.0.2.9", "10.9.8.7") == "192.0.2.9"  # a browser's own header is not believed
    assert client_address("", "") == "unknown"

    # issue 54, finding 6: the page side, as Streamlit tells it a visitor behind nginx (its loopback peer hidden)
    peer: list[str | None] = [None]
    monkeypatch.setattr(ContextProxy, "ip_address", property(lambda _: peer[0]))
    monkeypatch.setattr(ContextProxy, "headers", property(lambda _: {"X-Forwarded-For": "10.9.8.7, 192.0.2.5"}))
    assert state.client_address() == "192.0.2.5"  # was "unknown" for every visitor: one address for a whole school
    peer[0] = "192.0.2.9"
    assert state.client_address() == "192.0.2.9"
    monkeypatch.setenv(TRUSTED_PROXIES_ENV, "10.0.0.5, 10.0.0.6")  # a proxy elsewhere: the only one believed
    peer[0] = "10.0.0.6"
    assert state.client_address() == client_address("10.0.0.6", "10.9.8.7, 192.0.2.5") == "192.0.2.5"
    peer[0] = None
    assert state.client_address() == client_address("127.0.0.1", "10.9.8.7, 192.0.2.5") == "127.0.0.1"


def test_a_which_tensors_answer_outside_the_questions_names_is_refused_and_never_tallied(client, classroom):
    room = classroom.create_room("seed", 40)
    seat = classroom.join(room.code, "10.0.0.1").token
    asked = classroom.open_question(room.code, room.teacher_key, 0, "remaining", "remaining")
    choices = follow(client, room.code, seat).json()["question"]["choices"]
    refused = answer(client, room.code, seat, {"question": asked.id, "answer": "x, <img src=x onerror=alert(1)>"})
    assert refused.status_code == 400
    assert refused.json()["error"].endswith(
        f"tensors are read: {', '.join(choices)}, or none. Your answer was not stored."
    )
    assert classroom.student_view(room.code, seat).answers == ()
    own = watch(client, room.code, room.teacher_key, graded="1").json()["question"]["votes"]["1"]
    assert own["answered"] == 0 and own["answers"] == [] and "onerror" not in json.dumps(own)
    assert answer(client, room.code, seat, {"question": asked.id, "answer": "x"}).json() == {"stored": "x", "vote": 1}
