"""Rooms: who may do what, the bounds, the votes, and the sweep that deletes a room's rows."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from class_clock import Clock
from sqlalchemy import func, select

from classroom.errors import (
    InvalidInput,
    NotAllowed,
    RoomLocked,
    RoomNotFound,
    RoomsFull,
    TooLong,
    TooManyAttempts,
    VoteClosed,
    WrongPhase,
)
from classroom.rooms import CODE_ALPHABET, CODE_LENGTH, Classroom
from classroom.store import attempts, hash_keys, metadata, schema_version
from classroom.views import MyAnswer


def test_a_room_code_has_no_look_alikes_and_forty_bits(classroom: Classroom) -> None:
    codes = {classroom.create_room("lesson:a", 3).code for _ in range(20)}
    assert len(codes) == 20
    assert all(len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET) for code in codes)
    assert not set("01OI") & set(CODE_ALPHABET)
    assert len(CODE_ALPHABET) ** CODE_LENGTH >= 2**40


@pytest.mark.parametrize("key", ["", "not-the-key", None])
def test_teacher_actions_refuse_a_missing_or_forged_key(classroom: Classroom, key: str | None) -> None:
    room = classroom.create_room("lesson:a", 3)
    other = classroom.create_room("lesson:b", 3)
    for forged in (key, other.teacher_key):  # another room's real key is forged here too
        with pytest.raises(NotAllowed, match="teacher key"):
            classroom.set_step(room.code, forged, 1)  # type: ignore[arg-type]
        with pytest.raises(NotAllowed):
            classroom.open_question(room.code, forged, 1, "grad", "x")  # type: ignore[arg-type]
        with pytest.raises(NotAllowed):
            classroom.teacher_view(room.code, forged)  # type: ignore[arg-type]
        with pytest.raises(NotAllowed):
            classroom.end_room(room.code, forged)  # type: ignore[arg-type]
    assert classroom.teacher_view(room.code, room.teacher_key).step == 0


def test_the_store_keeps_only_hashes_of_the_secrets(classroom: Classroom) -> None:
    room = classroom.create_room("lesson:a", 3)
    joined = classroom.join(room.code, "10.0.0.1", "Ada")
    with classroom.store.engine.connect() as conn:
        dump = repr([list(conn.execute(select(table))) for table in metadata.sorted_tables])
    assert room.teacher_key not in dump and joined.token not in dump and "10.0.0.1" not in dump


def test_a_student_token_is_needed_to_read_or_answer(classroom: Classroom) -> None:
    room = classroom.create_room("lesson:a", 3)
    question = classroom.open_question(room.code, room.teacher_key, 1, "grad", "x")
    for token in ("", "guessed-token"):
        with pytest.raises(NotAllowed, match="not in this class"):
            classroom.student_view(room.code, token)
        with pytest.raises(NotAllowed):
            classroom.answer(room.code, token, question.id, "1")


def test_wrong_codes_are_counted_and_then_refused_but_for_a_room_the_client_is_in(
    make_classroom: Callable[..., Classroom], clock: Clock
) -> None:
    classroom = make_classroom(guesses_per_window=3, window_s=60)
    room, other = classroom.create_room("lesson:a", 3), classroom.create_room("lesson:b", 3)
    classroom.join(room.code, "10.0.0.9")  # a first student behind the school's address
    for guess in ("AAAAAAAA", "BBBBBBBB", "CCCCCCCC"):
        with pytest.raises(RoomNotFound, match="No class has this code"):
            classroom.join(guess, "10.0.0.9")
    assert classroom.wrong_guesses(client="10.0.0.9") == 3
    assert classroom.wrong_guesses() == 3
    for walked in ("DDDDDDDD", other.code):  # walking stops here: a live room's code is refused as a wrong one is
        with pytest.raises(TooManyAttempts, match="wrong room codes"):
            classroom.join(walked, "10.0.0.9")
    assert classroom.wrong_guesses(client="10.0.0.9") == 5
    assert classroom.join(room.code, "10.0.0.9").code == room.code  # the class this network is in goes on joining
    assert classroom.join(other.code, "10.0.0.10").code == other.code  # another client is not held back
    clock.now += 61
    assert classroom.join(other.code.lower(), "10.0.0.9").code == other.code  # the window passed; codes as typed


def test_joins_are_rate_limited_per_client(make_classroom: Callable[..., Classroom], clock: Clock) -> None:
    classroom = make_classroom(joins_per_window=5, window_s=60)
    room = classroom.create_room("lesson:a", 3)
    for _ in range(5):
        classroom.join(room.code, "10.0.0.1")
    with pytest.raises(TooManyAttempts, match="Too many joins"):
        classroom.join(room.code, "10.0.0.1")
    classroom.join(room.code, "10.0.0.2")
    clock.now += 61
    classroom.join(room.code, "10.0.0.1")
    assert classroom.teacher_view(room.code, room.teacher_key).students == 7


def test_a_locked_room_refuses_a_new_seat_in_a_sentence_keeps_its_seats_and_reopens(classroom: Classroom) -> None:
    room, other = classroom.create_room("lesson:a", 3), classroom.create_room("lesson:b", 3)
    seated = classroom.join(room.code, "10.0.0.1")
    with pytest.raises(NotAllowed, match="teacher key"):
        classroom.lock_room(room.code, other.teacher_key)
    revision = classroom.revisions([room.code])[room.code]
    classroom.lock_room(room.code, room.teacher_key)
    assert classroom.teacher_view(room.code, room.teacher_key).locked
    assert classroom.revisions([room.code])[room.code][1] == revision[1] + 1  # every teacher device redraws
    for late in ("10.0.0.2", "10.0.0.1"):  # a new student, and a second seat for one already in
        with pytest.raises(RoomLocked, match="^This class is closed to new students: your teacher closed it once "):
            classroom.join(room.code, late)
    assert classroom.join(other.code, "10.0.0.2").code == other.code  # another room is open
    question = classroom.open_question(room.code, room.teacher_key, 1, "grad", "x")
    assert classroom.answer(room.code, seated.token, question.id, "1") == 1  # a seat taken keeps answering
    assert classroom.student_view(room.code, seated.token).step == 0
    classroom.lock_room(room.code, room.teacher_key, locked=False)
    assert not classroom.teacher_view(room.code, room.teacher_key).locked
    classroom.join(room.code, "10.0.0.2")
    assert classroom.teacher_view(room.code, room.teacher_key).students == 2


def test_joins_into_one_room_are_limited_per_client_and_room(make_classroom: Callable[..., Classroom]) -> None:
    classroom = make_classroom(room_joins_per_window=3, window_s=60)
    room, other = classroom.create_room("lesson:a", 3), classroom.create_room("lesson:b", 3)
    for _ in range(3):
        classroom.join(room.code, "10.0.0.1")
    with pytest.raises(TooManyAttempts, match="^3 students joined this class from your network in the last minute"):
        classroom.join(room.code, "10.0.0.1")
    classroom.join(other.code, "10.0.0.1")  # the school's next class
    classroom.join(room.code, "10.0.0.2")  # another network
    assert classroom.teacher_view(room.code, room.teacher_key).students == 4


def test_nicknames_and_answers_are_bounded_and_kept_as_typed(classroom: Classroom) -> None:
    room = classroom.create_room("lesson:a", 3)
    with pytest.raises(TooLong, match="A nickname has 41 characters; at most 40"):
        classroom.join(room.code, "10.0.0.1", "n" * 41)
    markup = '<b onclick="x()">Ada</b>'
    joined = classroom.join(room.code, "10.0.0.1", markup)
    question = classroom.open_question(room.code, room.teacher_key, 1, "grad", "x")
    with pytest.raises(TooLong, match="An answer has 201 characters; at most 200"):
        classroom.answer(room.code, joined.token, question.id, "1" * 201)
    with pytest.raises(InvalidInput, match="empty"):
        classroom.answer(room.code, joined.token, question.id, "   ")
    classroom.answer(room.code, joined.token, question.id, "<script>1</script>")
    (record,) = classroom.answer_records(room.code, room.teacher_key)
    assert (record.nickname, record.answer) == (markup, "<script>1</script>")


def test_a_second_answer_replaces_the_first_until_the_vote_closes(classroom: Classroom) -> None:
    room = classroom.create_room("lesson:a", 3)
    ada = classroom.join(room.code, "10.0.0.1", "Ada")
    question = classroom.open_question(room.code, room.teacher_key, 2, "grad", "x")
    classroom.answer(room.code, ada.token, question.id, "3", right=False, mistake="forward value")
    classroom.answer(room.code, ada.token, question.id, "2", right=True)
    assert classroom.student_view(room.code, ada.token).answers == (MyAnswer(1, "2", None, None),)
    classroom.close_vote(room.code, room.teacher_key, question.id)
    with pytest.raises(VoteClosed, match="This vote is closed"):
        classroom.answer(room.code, ada.token, question.id, "3")
    classroom.open_second_vote(room.code, room.teacher_key, question.id)
    classroom.answer(room.code, ada.token, question.id, "-2", right=False, mistake="sign")
    classroom.reveal(room.code, room.teacher_key, question.id)
    with pytest.raises(VoteClosed):
        classroom.answer(room.code, ada.token, question.id, "2")
    view = classroom.student_view(room.code, ada.token)
    assert view.answers == (MyAnswer(1, "2", True, None), MyAnswer(2, "-2", False, "sign"))  # results once revealed
    tally = classroom.teacher_view(room.code, room.teacher_key).questions[0].votes
    assert (tally[1].answered, tally[1].right, tally[1].answers) == (1, 1, {"2": 1})
    assert (tally[2].answered, tally[2].right, tally[2].mistakes) == (1, 0, {"sign": 1})


def test_phases_move_forward_only(classroom: Classroom) -> None:
    room = classroom.create_room("lesson:a", 3)
    question = classroom.open_question(room.code, room.teacher_key, 0, "grad", "x")
    with pytest.raises(WrongPhase, match="after vote 1 is closed"):
        classroom.open_second_vote(room.code, room.teacher_key, question.id)
    classroom.reveal(room.code, room.teacher_key, question.id)
    with pytest.raises(WrongPhase, match="already revealed"):
        classroom.reveal(room.code, room.teacher_key, question.id)
    with pytest.raises(InvalidInput, match="steps 0 to 3"):
        classroom.set_step(room.code, room.teacher_key, 4)


def test_a_countdown_refuses_late_answers_in_a_sentence(classroom: Classroom, clock: Clock) -> None:
    room = classroom.create_room("lesson:a", 3)
    ada = classroom.join(room.code, "10.0.0.1", "Ada")
    with pytest.raises(InvalidInput, match="10 to 600 seconds"):
        classroom.open_question(room.code, room.teacher_key, 0, "grad", "x", seconds=5)
    question = classroom.open_question(room.code, room.teacher_key, 0, "grad", "x", seconds=30)
    assert question.closes_at == clock.now + 30
    assert classroom.student_view(room.code, ada.token).question == question
    clock.now += 30.5  # sent as the countdown ended: still on its way, it counts
    classroom.answer(room.code, ada.token, question.id, "1")
    clock.now += 1
    with pytest.raises(VoteClosed, match="Time is up"):
        classroom.answer(room.code, ada.token, question.id, "2")
    assert classroom.student_view(room.code, ada.token).answers == (MyAnswer(1, "1", None, None),)
    classroom.close_vote(room.code, room.teacher_key, question.id)
    classroom.open_second_vote(room.code, room.teacher_key, question.id)  # vote 2 without a countdown
    clock.now += 1000
    classroom.answer(room.code, ada.token, question.id, "3")
    assert classroom.teacher_view(room.code, room.teacher_key).questions[0].question.closes_at is None


def test_the_asked_step_cannot_run_before_the_reveal(classroom: Classroom) -> None:
    room = classroom.create_room("lesson:a", 9)
    classroom.set_step(room.code, room.teacher_key, 4)
    question = classroom.open_question(room.code, room.teacher_key, 4, "sends", "sends:5:0")
    with pytest.raises(WrongPhase, match="Reveal the answer first"):
        classroom.set_step(room.code, room.teacher_key, 5)
    with pytest.raises(WrongPhase, match="Reveal the open question"):
        classroom.open_question(room.code, room.teacher_key, 4, "grad", "x")
    classroom.set_step(room.code, room.teacher_key, 3)  # back is harmless
    classroom.close_vote(room.code, room.teacher_key, question.id)
    with pytest.raises(WrongPhase):  # the discussion does not open the step either
        classroom.set_step(room.code, room.teacher_key, 9)
    classroom.reveal(room.code, room.teacher_key, question.id)
    classroom.set_step(room.code, room.teacher_key, 9)


def test_a_transfer_follows_its_revealed_question_once_with_one_vote(classroom: Classroom) -> None:
    room = classroom.create_room("lesson:a", 9)
    first = classroom.open_question(room.code, room.teacher_key, 9, "leaf_grad", "grad:0")
    with pytest.raises(WrongPhase, match="Reveal the open question"):
        classroom.open_question(room.code, room.teacher_key, 9, "leaf_grad", "t", transfer_of=first.id)
    classroom.reveal(room.code, room.teacher_key, first.id)
    transfer = classroom.open_question(room.code, room.teacher_key, 9, "leaf_grad", "t", transfer_of=first.id)
    assert transfer.is_transfer and not first.is_transfer
    classroom.close_vote(room.code, room.teacher_key, transfer.id)
    with pytest.raises(WrongPhase, match="answered alone, once"):
        classroom.open_second_vote(room.code, room.teacher_key, transfer.id)
    classroom.reveal(room.code, room.teacher_key, transfer.id)
    with pytest.raises(WrongPhase, match="follows the question just revealed"):  # not a transfer of a transfer
        classroom.open_question(room.code, room.teacher_key, 9, "leaf_grad", "u", transfer_of=transfer.id)
    with pytest.raises(WrongPhase, match="follows the question just revealed"):  # nor of an older question
        classroom.open_question(room.code, room.teacher_key, 9, "leaf_grad", "u", transfer_of=first.id)
    asked = [tally.question for tally in classroom.teacher_view(room.code, room.teacher_key).questions]
    assert [q.transfer_of for q in asked] == [None, first.id]


def test_a_student_sees_the_step_and_only_their_own_answers(classroom: Classroom) -> None:
    room = classroom.create_room("lesson:a", 9)
    ada, bob = (classroom.join(room.code, "10.0.0.1", name) for name in ("Ada", "Bob"))
    classroom.set_step(room.code, room.teacher_key, 7)
    question = classroom.open_question(room.code, room.teacher_key, 7, "grad", "w")
    classroom.answer(room.code, bob.token, question.id, "bob's answer")
    view = classroom.student_view(room.code, ada.token)
    assert (view.step, view.question, view.answers) == (7, question, ())
    with pytest.raises(NotAllowed):  # a token opens its own room only
        classroom.student_view(classroom.create_room("lesson:b", 1).code, ada.token)


def test_the_room_limit_counts_rooms_a_teacher_follows_and_says_so_in_a_sentence(
    make_classroom: Callable[..., Classroom], clock: Clock
) -> None:
    classroom = make_classroom(max_rooms=2)
    followed = classroom.create_room("lesson:a", 1)
    ended = classroom.create_room("lesson:b", 1)
    with pytest.raises(RoomsFull, match="already runs 2 classes, its limit; try again in a few minutes"):
        classroom.create_room("lesson:c", 1)
    classroom.end_room(ended.code, ended.teacher_key)
    left = classroom.create_room("lesson:c", 1)
    for _ in range(12):  # an hour: one teacher follows their room (their stage's long poll), the other left
        clock.now += 300
        classroom.check_secret(followed.code, followed.teacher_key, teacher=True)
    classroom.create_room("lesson:d", 1)  # the room its teacher left stopped counting after ten minutes
    with pytest.raises(RoomsFull):
        classroom.create_room("lesson:e", 1)
    classroom.set_step(left.code, left.teacher_key, 1)  # its teacher is back: it counts again, and still works
    clock.now += 12 * 3600  # rooms past their 12 hours do not count, swept or not
    classroom.create_room("lesson:f", 1)


def _rows_per_table(classroom: Classroom) -> dict[str, int]:
    with classroom.store.engine.connect() as conn:
        return {
            table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in metadata.sorted_tables
            if table not in (schema_version, hash_keys)  # the store's, not a class's
        }


def _class_with_answers(classroom: Classroom) -> tuple[str, str]:
    room = classroom.create_room("playground", 3, program="x = 1")  # a row in every table
    classroom.set_step(room.code, room.teacher_key, 2)
    ada = classroom.join(room.code, "10.0.0.1", "Ada")
    classroom.lock_room(room.code, room.teacher_key)
    question = classroom.open_question(room.code, room.teacher_key, 2, "grad", "x", seconds=60)
    classroom.answer(room.code, ada.token, question.id, "1", right=True)
    return room.code, room.teacher_key


def test_sweep_deletes_an_expired_rooms_rows_in_every_table(classroom: Classroom, clock: Clock) -> None:
    old_code, old_key = _class_with_answers(classroom)
    with pytest.raises(RoomNotFound):
        classroom.join("ZZZZZZZZ", "10.0.0.5")
    clock.now += 6 * 3600
    young_code, young_key = _class_with_answers(classroom)
    young_rows = _rows_per_table(classroom)
    assert all(young_rows.values()), young_rows  # every table holds a row of the old room
    assert classroom.sweep(clock.now + 6 * 3600 - 1) == 0
    assert classroom.sweep(clock.now + 6 * 3600) == 1
    clock.now += 6 * 3600
    with pytest.raises(RoomNotFound, match="ended or never existed"):
        classroom.teacher_view(old_code, old_key)
    assert _rows_per_table(classroom) == {
        name: (count - 1 if name != "attempts" else 1) for name, count in young_rows.items()
    }
    classroom.end_room(young_code, young_key)  # an ended room goes at once
    assert set(_rows_per_table(classroom).values()) == {0}


def test_an_expired_room_is_closed_before_the_sweep(classroom: Classroom, clock: Clock) -> None:
    code, key = _class_with_answers(classroom)
    clock.now += 12 * 3600
    with pytest.raises(RoomNotFound):
        classroom.set_step(code, key, 1)
    with pytest.raises(RoomNotFound):
        classroom.join(code, "10.0.0.3")
    with classroom.store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(attempts)).scalar_one() == 2  # the join, the guess


def test_control_characters_and_odd_codes_are_refused_with_a_sentence(classroom: Classroom) -> None:
    room = classroom.create_room("lesson:a", 3)
    with pytest.raises(InvalidInput, match="A nickname cannot hold control characters"):
        classroom.join(room.code, "10.0.0.1", "Ada\x00")
    joined = classroom.join(room.code, "10.0.0.1", "Ada")
    question = classroom.open_question(room.code, room.teacher_key, 1, "grad", "x")
    with pytest.raises(InvalidInput, match="An answer cannot hold control characters"):
        classroom.answer(room.code, joined.token, question.id, "1\x00")
    for odd in ("\x00", "x" * 500, "IIIIOOOO"):
        with pytest.raises(RoomNotFound):
            classroom.join(odd, "10.0.0.1")
    assert classroom.wrong_guesses() == 3


def test_a_playground_room_keeps_its_program_bounded_and_a_lesson_room_has_none(classroom):
    lesson = classroom.create_room("seed", 3)
    assert classroom.program(lesson.code) is None
    played = classroom.create_room("playground", 3, program="y = 2")
    assert classroom.program(played.code) == "y = 2"
    with pytest.raises(TooLong, match="at most 20,000 characters"):
        classroom.create_room("playground", 3, program="x" * 20_001)
    classroom.end_room(played.code, played.teacher_key)
    with pytest.raises(RoomNotFound):
        classroom.program(played.code)


def test_each_room_draws_from_a_seed_of_its_own_and_its_questions_reach_browsers_as_opaque_ids(
    classroom: Classroom,
) -> None:
    """Issue 54: a room's numbers are its own (the seed, made with the room and deleted with it), and a browser is told
    of a question by an id that names neither the node nor a transfer's program, nor is the same in another room."""
    first, second = classroom.create_room("seed", 40), classroom.create_room("seed", 40)
    seeds = classroom.seed(first.code), classroom.seed(second.code)
    assert None not in seeds and seeds[0] != seeds[1] and classroom.seed(first.code.lower()) == seeds[0]
    key = "transfer:shared:sends:19:0"
    tokens = classroom.question_token(first.code, key), classroom.question_token(second.code, key)
    assert tokens[0] != tokens[1] and not any(word in t for word in ("transfer", "shared", ":") for t in tokens)
    assert all(len(t) == 16 and set(t) <= set("0123456789abcdef") for t in tokens)
    asked = classroom.open_question(first.code, first.teacher_key, 0, "leaf_grad", "grad:0")
    newest = classroom.teacher_view(first.code, first.teacher_key).questions[-1].question
    assert asked.token == newest.token == classroom.question_token(first.code, "grad:0") != "grad:0"
    classroom.end_room(first.code, first.teacher_key)
    with pytest.raises(RoomNotFound):
        classroom.seed(first.code)
    assert classroom.seed(second.code) == seeds[1]
