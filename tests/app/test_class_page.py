"""The Class page through AppTest: a teacher's session and students' sessions on one store (the session's temporary
SQLite file), each action through the page's own widgets; the answers checked in the store and against the grading's
finite-difference-checked values (tests/course/test_grading.py). A student's answers go where their stage sends
them, the class route (POST /class/api/answer), and what their stage draws comes from its follow: no page rerun."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest
from apptest import open_link, stage_data
from starlette.applications import Starlette
from starlette.testclient import TestClient

from classroom.live import classroom
from classroom.routes import ClassRoutes
from classroom.serve import PUBLIC_URL_ENV
from ui.class_replays import CourseQuestions, lesson_replay, room_seed
from ui.class_secret import SEAT, take
from ui.class_view import STAGE_WORDS

PAGE = "pages/teach/class_mode.py"


def texts(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [s.value for s in at.success] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


def stage_payload(at) -> dict:
    return stage_data(at)


def opened(room: str = "", role: str = "", secret: str = "", kept_for: str | None = None):
    """The page opened at its link (`?room=…`, or none), and what ui/class_secret.js reports: the teacher key in the
    link's fragment, or the seat the browser keeps (for `room`, or `kept_for`); with no `role`, nothing."""
    at = open_link(PAGE, **({"room": room} if room else {}))
    if role:
        take({"role": role, "room": kept_for or room, "secret": secret}, room, at.session_state)
        at.run()
    assert not at.exception, at.exception
    return at


def start_class(program: str = "seed"):
    teacher = opened()
    teacher.selectbox(key="class_program").set_value(program)
    teacher.button(key="class_start_send").click().run()
    assert not teacher.exception and not teacher.error
    code, key = teacher.session_state["class_teacher"]
    return teacher, code, key


def join(code: str, nickname: str = ""):
    student = opened(code)
    student.text_input(key="class_link_nickname").set_value(nickname)
    student.button(key="class_link_join").click().run()
    assert not student.exception and not student.error, [e.value for e in student.error]
    assert student.query_params["room"] == [code] or student.query_params["room"] == code
    assert "seat" not in student.query_params and student.session_state[SEAT][0] == code  # the seat: not in the address
    return student


@pytest.fixture(scope="module")
def route() -> Iterator[TestClient]:
    """The class route as app.py mounts it, on this server's classroom."""
    routes = ClassRoutes(CourseQuestions(), wait_s=1.0)
    with TestClient(Starlette(routes=routes.routes(), lifespan=routes.lifespan)) as http:
        yield http


def seat_of(student) -> tuple[str, str]:
    return student.session_state[SEAT]


def send(route: TestClient, student, text: str):
    """What a student's stage sends when they press "Send my answer"."""
    code, seat = seat_of(student)
    question = classroom().student_view(code, seat).question
    assert question is not None
    body = {"question": question.id, "answer": text}
    return route.post("/class/api/answer", params={"room": code}, json=body, headers={"X-Class-Seat": seat})


def follow(route: TestClient, student) -> dict:
    """What a student's stage is told of its room (and draws)."""
    code, seat = seat_of(student)
    return route.get("/class/api/follow", params={"room": code}, headers={"X-Class-Seat": seat}).json()


def x_gradient_key(code: str = "") -> tuple[str, np.ndarray]:
    """The seed program's question on x's gradient, and its answer by hand (d/dx sum(x·x + 3x) = 2x + 3) on room
    `code`'s own numbers (the lesson's, without a room)."""
    x = x_value(code)
    return f"grad:{X}", 2 * x + 3


X = 0  # the seed program's x: its first node


def x_value(code: str = "") -> np.ndarray:
    """x in room `code` (the numbers its stage shows; the lesson's without a room)."""
    replay = class_replay_of(code) if code else lesson_replay("seed")
    assert replay.names[X] == "x"
    return np.asarray(next(n.value for n in replay.before.nodes if int(n.id) == X), dtype=np.float64)


def typed(values: np.ndarray) -> str:
    """Numbers as a student types them: `5, 7`."""
    return ", ".join(f"{v:g}" for v in values)


def test_a_teacher_starts_a_class_with_a_code_a_join_link_and_a_qr_code(monkeypatch):
    monkeypatch.setenv(PUBLIC_URL_ENV, "http://192.0.2.2:8501")  # as `python -m classroom.serve` says
    teacher, code, key = start_class()
    shown = texts(teacher)
    assert f"{code[:4]}-{code[4:]}" in shown and f"class?room={code}" in shown
    assert any("data:image/svg+xml" in h.proto.body and "QR code" in h.proto.body for h in teacher.get("html"))
    link = stage_payload(teacher)["classroom"]
    assert link["role"] == "teacher" and link["secret"] == key and link["room"] == code
    assert classroom().teacher_view(code, key).students == 0


def test_students_join_by_link_follow_the_room_and_never_hold_the_teacher_key():
    teacher, code, key = start_class()
    student = join(code, "<b>Ann</b>")
    payload = stage_payload(student)
    link = payload["classroom"]
    assert link["role"] == "student" and link["room"] == code and link["secret"] != key
    assert link["said"] == stage_payload(teacher)["classroom"]["said"] == STAGE_WORDS  # the words they say: sent
    assert "class_teacher" not in student.session_state and key not in str(payload)
    assert not [b for b in student.button if b.key in ("class_reveal", "class_close", "class_end")]
    assert classroom().teacher_view(code, key).students == 1
    gradient = str(x_gradient_key(code)[1].tolist())  # the room's own: 2x + 3
    assert gradient in json.dumps(stage_payload(teacher))  # x's gradient, on the teacher's stage
    assert gradient not in json.dumps(stage_payload(student))  # not in the student's browser before the room
    classroom().set_step(code, key, 5)
    student.run()
    assert stage_payload(student)["index"] == 5  # a reload (or another replica) opens at the room's step


def test_a_question_is_asked_answered_graded_with_its_mistake_and_revealed(route):
    teacher, code, key = start_class()
    right_student, wrong_student = join(code), join(code)
    asked, right = x_gradient_key(code)
    teacher.selectbox(key="class_question").set_value(asked)
    teacher.button(key="class_ask_send").click().run()
    assert "What is x's gradient after the backward?" in texts(teacher)
    told = follow(route, right_student)["question"]
    assert (told["prompt"], told["form"], told["size"]) == ("What is x's gradient after the backward?", "numbers", 2)

    for student, answer in ((right_student, typed(right)), (wrong_student, typed(x_value(code)))):
        assert send(route, student, answer).json() == {"stored": answer, "vote": 1}
    refused = send(route, wrong_student, "not numbers")
    assert "not a list of numbers" in refused.json()["error"] and "not stored" in refused.json()["error"]

    vote = classroom().teacher_view(code, key).questions[-1].votes[1]
    assert (vote.answered, vote.right) == (2, 1)  # the earlier answer kept
    assert vote.mistakes == {"forward_value": 1}  # x's value given for its gradient

    teacher.run()
    teacher.button(key="class_reveal").click().run()
    mine, theirs = follow(route, right_student)["result"], follow(route, wrong_student)["result"]
    assert mine["right"] is True and theirs["right"] is False
    assert theirs["why"] == "used the forward value instead of the gradient"
    assert theirs["answer"] == str(right.tolist())  # the answer revealed, and it is 2x + 3
    terms = theirs["worked"].split(": ", 1)[1].rstrip(".").split(" = ")
    paths = [np.array(json.loads(term)) for term in terms[0].split(" + ")]
    assert len(paths) == 3 and sum(paths).tolist() == json.loads(terms[1]) == right.tolist()  # x·x twice, x·3
    assert theirs["worked"] in texts(teacher)  # the teacher's screen works it out too


def test_vote_two_follows_a_discussion_and_the_report_shows_the_gain(route):
    teacher, code, key = start_class()
    student = join(code)
    asked, right = x_gradient_key(code)
    teacher.selectbox(key="class_question").set_value(asked)
    teacher.button(key="class_ask_send").click().run()
    send(route, student, typed(2 * x_value(code)))  # x·x's two paths only, not 3x's
    teacher.button(key="class_close").click().run()
    assert follow(route, student)["question"]["phase"] == "discuss"
    teacher.button(key="class_vote2").click().run()
    assert follow(route, student)["question"]["vote"] == 2
    send(route, student, typed(right))
    view = classroom().teacher_view(code, key).questions[-1]
    assert view.votes[1].mistakes == {"one_path": 1} and view.votes[2].right == 1
    teacher.button(key="class_reveal").click().run()
    report = teacher.table[0].value
    assert list(report["Right in vote 1"]) == ["0 of 1"] and list(report["Right in vote 2"]) == ["1 of 1"]
    assert list(report["Gain, vote 1 to 2"]) == ["1.00"] and list(report["Right in the transfer"]) == ["not asked"]


def test_a_transfer_question_is_answered_once_and_reported_beside_its_votes(route):
    teacher, code, key = start_class()
    student = join(code)
    first = "sends:2:0"  # what the step of loss sends to its input: the seed's first step
    teacher.selectbox(key="class_question").set_value(first)
    teacher.button(key="class_ask_send").click().run()
    send(route, student, "0")  # wrong
    teacher.button(key="class_reveal").click().run()
    teacher.button(key="class_transfer").click().run()
    told = follow(route, student)["question"]
    assert told["transfer"] is True and told["code"] and told["prompt"].startswith("In this program")
    assert not [b for b in teacher.button if b.key in ("class_close", "class_vote2")]  # answered alone, once
    right = told_right_answer(code, key)
    assert send(route, student, right).json()["vote"] == 1
    teacher.button(key="class_reveal").click().run()
    report = teacher.table[0].value
    assert list(report["Right in vote 1"]) == ["0 of 1"] and list(report["Right in the transfer"]) == ["1 of 1"]
    assert list(report["Gain, vote 1 to transfer"]) == ["1.00"]
    assert "What does the step of" in list(report["Question"])[0]  # one row: the transfer is a column


def told_right_answer(code: str, key: str) -> str:
    from course.grading import right_answer
    from course.transfer import question_for_transfer_key

    transfer = classroom().teacher_view(code, key).questions[-1].question
    found = question_for_transfer_key(transfer.key, room_seed(code))  # on the room's numbers
    assert found is not None
    return right_answer(found[1])


def test_a_forged_teacher_link_is_refused_with_a_sentence_and_no_controls():
    _, code, _ = start_class()
    forged = opened(code, "teacher", "not-the-key")
    assert "Only the teacher's link can do this" in forged.error[0].value
    assert not [b for b in forged.button if b.key in ("class_reveal", "class_close", "class_end")]


def test_the_teacher_link_reopens_the_class_in_another_session():
    _, code, key = start_class()
    reopened = opened(code, "teacher", key)
    assert not reopened.error
    assert reopened.session_state["class_teacher"] == (code, key)
    assert reopened.selectbox(key="class_question")  # the teacher's controls


def orders(at) -> dict:
    """What the page tells the browser to keep or forget (ui/class_secret.js's data)."""
    return next(
        json.loads(e.proto.json)
        for e in at.main
        if e.type == "bidi_component" and e.proto.component_name == "class_secret"
    )


def test_a_reload_finds_the_seat_the_browser_keeps_and_another_class_link_asks_to_join():
    _, code, _ = start_class()
    student = join(code)
    _, seat = seat_of(student)
    assert orders(student) == {"keep": {"room": code, "seat": seat}, "forget": False, "ask": False}
    waiting = open_link(PAGE, room=code)  # a reload, before the browser has answered: the join form, no seat yet
    assert waiting.button(key="class_link_join") and orders(waiting)["ask"] and SEAT not in waiting.session_state
    reloaded = opened(code, "student", seat)  # the browser's answer: the seat it keeps
    assert reloaded.session_state[SEAT] == (code, seat) and not reloaded.error
    assert any(h.value.startswith("Class ") for h in reloaded.subheader) and stage_payload(reloaded)["classroom"]
    _, other, _ = start_class()
    elsewhere = opened(other, "student", seat, kept_for=code)  # not this class's seat: its join form
    assert SEAT not in elsewhere.session_state and elsewhere.button(key="class_link_join")


def test_a_wrong_code_and_a_forged_seat_are_refused_with_sentences():
    lost = opened()
    lost.text_input(key="class_code").set_value("ZZZZ-ZZZZ")
    lost.button(key="class_join_send").click().run()
    assert "No class has this code" in lost.error[0].value
    _, code, _ = start_class()
    forged = opened(code, "student", "forged-seat")
    assert "You are not in this class" in forged.error[0].value
    assert SEAT not in forged.session_state  # and the browser forgets it


def test_ending_the_class_deletes_it_and_its_students_are_told():
    teacher, code, key = start_class()
    student = join(code)
    teacher.selectbox(key="class_question").set_value(x_gradient_key()[0])
    teacher.button(key="class_ask_send").click().run()
    teacher.checkbox(key="class_end_sure").check().run()
    teacher.button(key="class_end").click().run()
    assert "class_teacher" not in teacher.session_state
    assert teacher.button(key="class_start_send")  # back to the start
    student.run()
    assert "This class has ended" in student.info[0].value and not student.error
    assert orders(student)["forget"] and orders(student)["keep"] is None  # the browser forgets the seat


def test_a_class_that_ended_under_its_teacher_says_so_with_its_code():
    """Ended from the teacher link in another tab (or at the end of its lifetime): the teacher's page says that this
    class ended, by its code, as after its own End button. It said "ended or never existed" as an error, the words of
    a mistyped code, and a late rerun of the page that had just ended its class said them too (a class end to end in
    CI)."""
    teacher, code, key = start_class()
    other_tab = opened(code, "teacher", key)
    other_tab.checkbox(key="class_end_sure").check().run()
    other_tab.button(key="class_end").click().run()
    teacher.run()
    assert not teacher.error and not teacher.exception
    assert f"This class has ended ({code[:4]}-{code[4:8]})" in teacher.info[0].value
    assert "class_teacher" not in teacher.session_state and teacher.button(key="class_start_send")


def test_a_playground_program_becomes_a_class_that_students_on_any_server_replay(route):
    from ui import class_replays

    program = "x = Tensor.from_floats([1.0, -2.0], ad).require_grad()\ny = (x * x).sum()\ny.backward()\n"
    play = open_link("pages/check_and_play/playground.py")
    play.session_state["playground_code"] = program
    play.button(key="playground_run").click().run()
    play.button(key="playground_teach").click().run()
    assert not play.exception and not play.error, [e.value for e in play.error]
    code, key = play.session_state["class_teacher"]
    assert classroom().program(code) == program

    class_replays._PLAYED.clear()  # a student on another replica: the program runs again there, from the store
    student = join(code)
    asked = [k for k in class_replays._PLAYED[class_replays.play_key(program)].questions if k.startswith("grad:")]
    teacher = opened(code, "teacher", key)
    teacher.selectbox(key="class_question").set_value(asked[0])
    teacher.button(key="class_ask_send").click().run()
    send(route, student, "2, -4")  # d/dx sum(x·x) = 2x, by hand
    assert classroom().teacher_view(code, key).questions[-1].votes[1].right == 1


def test_guessing_room_codes_is_stopped_with_a_sentence_and_a_second_answer_replaces_the_first(route, monkeypatch):
    from classroom.rooms import Limits

    classroom().sweep(now=10**12)  # every test here joins from the same address: start from no guesses
    monkeypatch.setattr(classroom(), "limits", Limits(guesses_per_window=20))  # the default is 300 a minute
    guesser = opened()
    sentences = []
    for k in range(21):
        guesser.text_input(key="class_code").set_value(f"ZZZZ-ZZ{'23456789ABCDEFGHJKLMNPQRSTUVWXYZ'[k]}Z")
        guesser.button(key="class_join_send").click().run()
        sentences.append(guesser.error[0].value)
    assert all("No class has this code" in s for s in sentences[:20])
    assert "Too many wrong room codes" in sentences[20]
    classroom().sweep(now=10**12)  # forget this test's guesses: every test here joins from the same address

    teacher, code, key = start_class()
    student = join(code)
    teacher.selectbox(key="class_question").set_value(x_gradient_key()[0])
    teacher.button(key="class_ask_send").click().run()
    asked, right = x_gradient_key(code)
    for answer in (typed(x_value(code)), typed(right)):
        send(route, student, answer)
    vote = classroom().teacher_view(code, key).questions[-1].votes[1]
    assert (vote.answered, vote.right, vote.answers) == (1, 1, {typed(right): 1})


def test_a_flood_of_joins_from_one_network_is_stopped_with_a_sentence(monkeypatch):
    from classroom.rooms import Limits

    classroom().sweep(now=10**12)  # every test here joins from the same address: start from no joins
    monkeypatch.setattr(classroom(), "limits", Limits(joins_per_window=3))  # the default is 600 a minute
    _, code, _ = start_class()
    for _ in range(3):
        join(code)
    flooder = opened(code)
    flooder.button(key="class_link_join").click().run()
    assert "Too many joins from your network" in flooder.error[0].value
    assert SEAT not in flooder.session_state


def test_markup_in_a_which_tensors_answer_is_refused_in_a_sentence_and_never_tallied(route):
    """Issue 54: a "which tensors" answer is read among the question's names only; anything else is not stored."""
    teacher, code, key = start_class()
    student = join(code)
    teacher.selectbox(key="class_question").set_value("remaining")
    teacher.button(key="class_ask_send").click().run()
    refused = send(route, student, "x <img src=x onerror=alert(1)>")
    assert refused.status_code == 400 and refused.json()["error"].startswith("Only this question's tensors are read")
    assert "onerror" not in refused.json()["error"]  # what was typed is not said back
    assert classroom().teacher_view(code, key).questions[-1].votes[1].answers == {}
    assert follow(route, student)["mine"] == []


def test_the_report_says_where_each_question_was_asked_as_the_stage_does():
    teacher, code, key = start_class()
    classroom().set_step(code, key, 10)
    teacher.run()
    teacher.selectbox(key="class_question").set_value(x_gradient_key()[0])
    teacher.button(key="class_ask_send").click().run()
    teacher.button(key="class_reveal").click().run()
    replay = class_replay_of(code)
    assert list(teacher.table[0].value["Asked at"]) == [replay.position(10)]
    assert replay.position(10).startswith("step ") and "event" not in replay.position(10)  # one counter


def class_replay_of(code: str):
    from ui.class_replays import class_replay

    return class_replay("seed", code)


def test_the_menu_never_offers_a_step_already_on_the_stage():
    teacher, code, key = start_class()
    classroom().set_step(code, key, 11)  # event by event, the teacher stopped at the StepStarted of x·3: its card shows
    teacher.run()
    offered = teacher.selectbox(key="class_question").options
    prompts = [o for o in offered if o.startswith("What does the step of")]
    assert prompts and not any("x·3 send" in o for o in prompts), prompts  # the next step's, not the one shown


def test_one_page_starts_at_most_five_classes_an_hour_and_is_told_so():
    classroom().sweep(now=10**12)  # every test here starts classes from the same address: start from none
    teacher = open_link(PAGE)
    for _ in range(5):
        teacher.button(key="class_start_send").click().run()
        assert not teacher.error and "class_teacher" in teacher.session_state
        del teacher.session_state["class_teacher"]  # back to the start, as after ending the class
        teacher.run()
    teacher.button(key="class_start_send").click().run()
    assert teacher.error[0].value.startswith("This page started 5 classes this hour, the limit")
    assert "class_teacher" not in teacher.session_state


def test_the_playground_is_told_in_a_sentence_when_no_class_may_start(monkeypatch):
    from classroom.rooms import Limits

    monkeypatch.setattr(classroom(), "limits", Limits(rooms_per_session=0))
    play = open_link("pages/check_and_play/playground.py")
    play.session_state["playground_code"] = "x = Tensor.from_floats([1.0], ad).require_grad()\nx.sum().backward()\n"
    play.button(key="playground_run").click().run()
    play.button(key="playground_teach").click().run()
    assert not play.exception and "class_teacher" not in play.session_state
    assert play.error[0].value.startswith("This page started 0 classes this hour, the limit")


def test_a_class_that_only_stepped_can_be_ended_from_the_start():
    teacher, code, key = start_class()
    student = join(code)
    assert "No question was asked yet" in texts(teacher)
    assert teacher.button(key="class_end").disabled  # one click never deletes a class
    teacher.checkbox(key="class_end_sure").check().run()
    teacher.button(key="class_end").click().run()
    assert "class_teacher" not in teacher.session_state and teacher.button(key="class_start_send")
    student.run()
    assert "This class has ended" in student.info[0].value


def test_the_stage_knows_the_phase_its_controls_are_for_and_the_room_sees_vote_1s_answers_only_when_asked(route):
    teacher, code, key = start_class()
    join(code)
    assert stage_payload(teacher)["classroom"]["phase"] == "none"
    teacher.selectbox(key="class_question").set_value(x_gradient_key()[0])
    teacher.button(key="class_ask_send").click().run()
    asked = classroom().teacher_view(code, key).questions[-1].question
    link = stage_payload(teacher)["classroom"]
    assert (link["phase"], link["histogram"]) == (f"{asked.id}:vote1", False)
    assert not [t for t in teacher.toggle if t.key == f"class_histogram_{asked.id}"]  # an open vote: no histogram
    teacher.button(key="class_close").click().run()
    shown = teacher.toggle(key=f"class_histogram_{asked.id}")
    assert shown.label == "Show the room vote 1's answers" and shown.value is False  # off until the teacher asks
    assert stage_payload(teacher)["classroom"]["phase"] == f"{asked.id}:discuss"
    shown.set_value(True).run()
    assert stage_payload(teacher)["classroom"]["histogram"] is True


def test_a_room_the_teacher_closed_refuses_a_late_student_in_a_sentence_until_reopened():
    """Issue 54, finding 4: clearing the browser's storage and pressing Join gave one tab 60 seats."""
    teacher, code, key = start_class()
    seated = join(code)
    teacher.button(key="class_lock").click().run()
    assert classroom().teacher_view(code, key).locked
    assert teacher.button(key="class_lock").label == "Reopen the room to new students"
    assert "The room is closed to new students" in texts(teacher)
    late = opened(code)
    late.button(key="class_link_join").click().run()
    assert late.error[0].value.startswith("This class is closed to new students: your teacher closed it once everyone")
    assert SEAT not in late.session_state and not late.exception
    assert seat_of(seated)[0] == code and classroom().student_view(*seat_of(seated)).code == code  # kept
    teacher.button(key="class_lock").click().run()
    assert not classroom().teacher_view(code, key).locked
    assert teacher.button(key="class_lock").label == "Close the room to new students"
    join(code)
    assert classroom().teacher_view(code, key).students == 2


def test_a_playground_class_names_each_node_as_its_stage_does_in_the_prompt_and_the_report(route):
    # `2 * (a * a)` is drawn `2·(a·a)`, as the program wrote it: its questions, worked answers and report said `a·a·2`
    program = "a = Tensor.from_floats([1.0, -2.0], ad).require_grad()\nloss = (2 * (a * a)).sum()\nloss.backward()\n"
    play = open_link("pages/check_and_play/playground.py")
    play.session_state["playground_code"] = program
    play.button(key="playground_run").click().run()
    play.button(key="playground_teach").click().run()
    assert not play.exception and not play.error, [e.value for e in play.error]
    code, key = play.session_state["class_teacher"]
    student, teacher = join(code), opened(code, "teacher", key)
    drawn = {node["id"]: node["name"] for node in stage_payload(teacher)["nodes"]}
    doubled = next(node for node, name in drawn.items() if name.startswith("2·"))  # the stage's own name for it
    prompt = f"What does the step of {drawn[doubled + 1]} send to {drawn[doubled]}?"  # the first step: loss's
    menu = teacher.selectbox(key="class_question")
    menu.select_index(menu.options.index(prompt))  # the teacher's menu names it so too
    teacher.button(key="class_ask_send").click().run()
    assert follow(route, student)["question"]["prompt"] == prompt
    teacher.button(key="class_reveal").click().run()
    worked = follow(route, student)["result"]["worked"]
    assert f"sum({drawn[doubled]})" in worked and "a·a·2" not in worked
    assert list(teacher.table[0].value["Question"]) == [prompt]


def test_a_playground_class_draws_the_program_as_the_playground_did_lines_and_names(route):
    # micrograd's README assigns c on three lines: read from the text by name, each c took the last (line 7, which
    # writes `1 + c`), so the class lit line 7 for `c = a + b` and drew line 6's `c + 1` as `1 + c`
    from playground.examples import EXAMPLES
    from ui import class_replays

    program = EXAMPLES["micrograd's README example"]
    play = open_link("pages/check_and_play/playground.py")
    play.session_state["playground_code"] = program
    play.button(key="playground_run").click().run()
    played = stage_payload(play)
    play.button(key="playground_teach").click().run()
    assert not play.exception and not play.error, [e.value for e in play.error]
    code, key = play.session_state["class_teacher"]
    taught = stage_payload(opened(code, "teacher", key))

    def drawn(payload: dict) -> tuple[dict, dict]:
        spans = {node: list(lines) for node, lines in payload["program"]["spans"].items()}  # as JSON: lists
        return {node["id"]: node["title"] for node in payload["nodes"]}, spans

    titles, spans = drawn(played)
    assert "c = c + (c + 1)" in titles.values() and spans[str(_first(titles, "c = a + b"))] == [4, 4]
    assert drawn(taught) == (titles, spans)
    class_replays._PLAYED.clear()  # another replica runs the program again, in its worker pool, from the store
    assert drawn(class_replays.class_replay("playground", code).payload(False)) == (titles, spans)


def _first(titles: dict, title: str) -> int:
    return next(node for node, said in titles.items() if said == title)
