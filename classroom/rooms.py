"""Rooms: a teacher's actions (by teacher key), a student's (by student token), and the sweep that deletes them."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, select, update

from classroom.errors import (
    InvalidInput,
    NotAllowed,
    QuestionNotFound,
    RoomLocked,
    RoomNotFound,
    RoomsFull,
    TooLong,
    TooManyAttempts,
    VoteClosed,
    WrongPhase,
)
from classroom.store import (
    Store,
    answers,
    attempts,
    hash_keys,
    question_details,
    questions,
    room_locks,
    room_programs,
    room_revisions,
    room_seeds,
    room_steps,
    room_teachers,
    rooms,
    students,
)
from classroom.views import (
    DISCUSS,
    OPEN_VOTE,
    REVEALED,
    VOTE1,
    VOTE2,
    AnswerRecord,
    Joined,
    MyAnswer,
    NewRoom,
    Question,
    QuestionTally,
    StudentView,
    TeacherView,
    VoteTally,
)
from classroom.words import OPEN_QUESTION_HOLDS

CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # no 0/O, 1/I: 32 signs, 5 bits each
CODE_LENGTH = 8  # 40 bits: guesses are rate-limited, so a room is not found by walking codes
LATE_GRACE_S = 1.0  # an answer sent as the countdown ends is still on its way: it counts
VOTE_SECONDS = (10.0, 600.0)  # the shortest and longest countdown a teacher may set
TEACHER_SEEN_EVERY_S = 60.0  # how stale a room's `room_teachers.seen_at` may get while its teacher follows it


@dataclass(frozen=True)
class Limits:
    max_rooms: int = 50  # rooms whose teacher was seen within `teacher_live_s`
    teacher_live_s: float = 600.0  # a teacher's open page long-polls every 20 s at most: ten minutes is gone
    max_seats: int = 500  # students in one room: a lecture hall, not a flood
    nickname_chars: int = 40
    answer_chars: int = 200
    # per client address; a school's classes share one address, hence the generous joins and wrong codes (each still
    # finds one of 50 rooms among 2**40 codes with a chance of 5e-11)
    joins_per_window: int = 600
    # per client address and room: a class of 40 behind its school's address joins in a minute, while one person
    # taking seats (one tab had 60 in 38 s) is held to that pace, until the teacher closes the room once all are in
    room_joins_per_window: int = 40
    guesses_per_window: int = 300
    window_s: float = 60.0
    # rooms started per client address (a school's teachers share one) and per teacher's session
    rooms_per_address: int = 20
    rooms_per_session: int = 5
    rooms_window_s: float = 3600.0
    room_lifetime_s: float = 12 * 3600.0
    program_chars: int = 20_000  # a Playground program a room follows (the Playground's own limit)


def secret_hash(secret: str) -> str:
    # the secrets are random, 128 bits: no slow hash needed; surrogatepass: any str from a URL hashes
    return hashlib.sha256(secret.encode(errors="surrogatepass")).hexdigest()


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_DASHES = str.maketrans("", "", "-‐‑‒–—")  # the hyphen, and the dashes a title or a chat may turn it into


def normalize_code(code: str) -> str:
    """A room code as typed or pasted ("abcd-efgh", " ABCD EFGH ", with a non-breaking hyphen) in its stored form."""
    return "".join(code.split()).translate(_DASHES).upper()


def _bounded(text: str | None, limit: int, what: str) -> str | None:
    """`text` stripped (None when empty), refused past `limit` characters or with control characters (PostgreSQL
    refuses NUL); never interpreted."""
    text = (text or "").strip()
    if len(text) > limit:
        raise TooLong(f"{what} has {len(text)} characters; at most {limit} are kept.")
    if any(unicodedata.category(char) in ("Cc", "Cs") for char in text):
        raise InvalidInput(f"{what} cannot hold control characters (tabs, line breaks, ...).")
    if any(char in _BIDI for char in text):  # they reorder what the teacher's screen and the CSV show around them
        raise InvalidInput(f"{what} cannot hold characters that change the direction of the text.")
    return text or None


class Classroom:
    """The class mode's operations over one store; `clock` (seconds since the epoch) is injectable for tests."""

    def __init__(self, store: Store, limits: Limits | None = None, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.limits = limits or Limits()
        self.clock = clock
        with store.read() as conn:
            self._client_key = bytes.fromhex(conn.execute(select(hash_keys.c.key)).scalar_one())

    # --- the teacher ---

    def create_room(
        self,
        replay: str,
        replay_events: int,
        program: str | None = None,
        client: str | None = None,
        session: str | None = None,
    ) -> NewRoom:
        """A new room following `replay` (a lesson program's key, or "playground" with the `program`'s source),
        started from `client` (its address) by the teacher's `session` (an id of the page's session): each is limited
        to a few rooms an hour (None: not counted, for the server's own callers)."""
        if _bounded(replay, 200, "A replay's name") is None or replay_events < 0:
            raise InvalidInput("A class needs a replay and its number of events.")
        if program is not None and not 0 < len(program) <= self.limits.program_chars:
            raise TooLong(f"A class's program has at most {self.limits.program_chars:,} characters.")
        now = self.clock()
        teacher_key = secrets.token_urlsafe(16)
        with self.store.transaction(lock="classroom.rooms") as conn:
            starters = [
                ("room", client, self.limits.rooms_per_address),
                ("session", session, self.limits.rooms_per_session),
            ]
            for kind, who, limit in starters:
                if (
                    who is not None
                    and self._recent(conn, kind, self.client_hash(who), now, self.limits.rooms_window_s) >= limit
                ):
                    raise TooManyAttempts(
                        f"{'Your network' if kind == 'room' else 'This page'} started {limit} classes this hour, "
                        "the limit; continue one of them (your teacher link) or try again later."
                    )
            followed = [
                rooms.c.created_at > self._born_after(now),
                room_teachers.c.seen_at > now - self.limits.teacher_live_s,
            ]
            live = conn.execute(
                select(func.count()).select_from(rooms.join(room_teachers)).where(*followed)
            ).scalar_one()
            if live >= self.limits.max_rooms:
                raise RoomsFull(
                    f"This server already runs {self.limits.max_rooms} classes, its limit; "
                    "try again in a few minutes (a class whose teacher left stops counting after ten minutes)."
                )
            for kind, who, _ in starters:
                if who is not None:
                    conn.execute(attempts.insert().values(kind=kind, client=self.client_hash(who), at=now))
            code = self._new_code(conn)
            conn.execute(
                rooms.insert().values(
                    code=code,
                    teacher_key_hash=secret_hash(teacher_key),
                    replay=replay,
                    replay_events=replay_events,
                    created_at=now,
                )
            )
            conn.execute(room_steps.insert().values(room=code, step=0, changed_at=now))
            conn.execute(room_teachers.insert().values(room=code, seen_at=now))
            conn.execute(room_revisions.insert().values(room=code, revision=0, tally=0))
            if program is not None:
                conn.execute(room_programs.insert().values(room=code, source=program))
            conn.execute(room_seeds.insert().values(room=code, seed=secrets.token_hex(16)))
        return NewRoom(code, teacher_key)

    def set_step(self, code: str, teacher_key: str, step: int) -> None:
        """Move the room to event `step`; refused past the asked event while a question waits for its reveal, since
        running the asked step would show every stage the answer."""
        with self.store.transaction() as conn:
            room = self._teacher_room(conn, code, teacher_key)
            if not 0 <= step <= room.replay_events:
                raise InvalidInput(f"Step {step} is not in this replay, which has steps 0 to {room.replay_events}.")
            newest = self._newest_question(conn, room.code)
            if newest is not None and newest.phase != REVEALED and step > newest.step:
                raise WrongPhase(OPEN_QUESTION_HOLDS)
            where = room_steps.c.room == room.code
            conn.execute(update(room_steps).where(where).values(step=step, changed_at=self.clock()))
            conn.execute(update(room_teachers).where(room_teachers.c.room == room.code).values(seen_at=self.clock()))
            _raise_revision(conn, room.code)

    def open_question(
        self,
        code: str,
        teacher_key: str,
        step: int,
        kind: str,
        key: str,
        seconds: float | None = None,
        transfer_of: int | None = None,
    ) -> Question:
        """Open vote 1 on a question at `step`: `kind` is the exercise's kind, `key` what it asks about; `seconds`
        its countdown (None: open until the teacher closes it); `transfer_of` the revealed question whose transfer
        it is (answered alone, once: it has no second vote)."""
        kind_, key_ = _bounded(kind, 40, "A question's kind"), _bounded(key, 200, "A question's key")
        if kind_ is None or key_ is None:
            raise InvalidInput("A question needs a kind and a key.")
        with self.store.transaction() as conn:
            room = self._teacher_room(conn, code, teacher_key)
            if not 0 <= step <= room.replay_events:
                raise InvalidInput(f"Step {step} is not in this replay, which has steps 0 to {room.replay_events}.")
            newest = self._newest_question(conn, room.code)
            if newest is not None and newest.phase != REVEALED:
                raise WrongPhase("Reveal the open question's answer before you ask another.")
            if transfer_of is not None and (newest is None or newest.id != transfer_of or newest.is_transfer):
                raise WrongPhase("A transfer question follows the question just revealed, once.")
            now = self.clock()
            values = {"room": room.code, "step": step, "kind": kind_, "key": key_, "phase": VOTE1}
            inserted = questions.insert().values(opened_at=now, **values).returning(questions.c.id)
            new_id = conn.execute(inserted).scalar_one()
            closes_at = self._closing(seconds, now)
            if closes_at is not None or transfer_of is not None:
                details = {"question": new_id, "closes_at": closes_at, "transfer_of": transfer_of}
                conn.execute(question_details.insert().values(**details))
            _raise_revision(conn, room.code)
        return Question(new_id, step, kind_, key_, VOTE1, closes_at, transfer_of, self.question_token(code, key_))

    def close_vote(self, code: str, teacher_key: str, question: int) -> None:
        """End vote 1: the room discusses; answers to vote 1 are final."""
        self._move(code, teacher_key, question, {VOTE1}, DISCUSS, "Vote 1 is not open on this question.")

    def open_second_vote(self, code: str, teacher_key: str, question: int, seconds: float | None = None) -> None:
        """Vote 2, after the discussion (a transfer question has none); `seconds` its countdown."""
        closes_at = self._closing(seconds, self.clock())
        self._move(
            code, teacher_key, question, {DISCUSS}, VOTE2, "Vote 2 opens after vote 1 is closed, once.", closes_at
        )

    def reveal(self, code: str, teacher_key: str, question: int) -> None:
        """Close whichever vote is open and show each student their result."""
        self._move(code, teacher_key, question, {VOTE1, DISCUSS, VOTE2}, REVEALED, "This question is already revealed.")

    def lock_room(self, code: str, teacher_key: str, locked: bool = True) -> None:
        """Close the room to new seats once everyone is in (`locked`), or reopen it: a join is then refused in a
        sentence, while every seat already taken keeps following and answering."""
        with self.store.transaction() as conn:
            room = self._teacher_room(conn, code, teacher_key)
            if locked:
                closed = {"room": room.code, "locked_at": self.clock()}
                self.store.upsert(conn, room_locks, closed, update=["locked_at"])
            else:
                conn.execute(delete(room_locks).where(room_locks.c.room == room.code))
            _raise_revision(conn, room.code, room_revisions.c.tally)  # every teacher device redraws its control

    def end_room(self, code: str, teacher_key: str) -> None:
        """End the class: its data is deleted now (export the report first), from the database's files too."""
        with self.store.transaction() as conn:
            self._delete_rooms(conn, [self._teacher_room(conn, code, teacher_key).code])
        self.store.forget_deleted()

    def teacher_view(self, code: str, teacher_key: str) -> TeacherView:
        with self.store.read() as conn:
            room = self._teacher_room(conn, code, teacher_key)
            count = select(func.count()).where(students.c.room == room.code)
            asked = conn.execute(_ASKED.where(questions.c.room == room.code).order_by(questions.c.id))
            tallies: dict[int, tuple[Question, dict[int, list[Any]]]]
            tallies = {row.id: (self._question(row), {1: [], 2: []}) for row in asked}
            given = select(answers).join(questions).where(questions.c.room == room.code)
            for answer in conn.execute(given):
                tallies[answer.question][1][answer.vote].append(answer)
            return TeacherView(
                code=room.code,
                replay=room.replay,
                replay_events=room.replay_events,
                step=self._step(conn, room.code),
                students=conn.execute(count).scalar_one(),
                locked=_locked(conn, room.code),
                expires_at=room.created_at + self.limits.room_lifetime_s,
                questions=tuple(
                    QuestionTally(question, {vote: _tally(rows) for vote, rows in votes.items()})
                    for question, votes in tallies.values()
                ),
            )

    def answer_records(self, code: str, teacher_key: str) -> list[AnswerRecord]:
        """Every answer in the room, its student numbered by joining order, for the report."""
        with self.store.read() as conn:
            room = self._teacher_room(conn, code, teacher_key)
            joined = conn.execute(select(students.c.id, students.c.nickname).where(students.c.room == room.code))
            people = {row.id: (number, row.nickname) for number, row in enumerate(sorted(joined), start=1)}
            given = (
                _ASKED.add_columns(answers)
                .join(answers, answers.c.question == questions.c.id)
                .where(questions.c.room == room.code)
                .order_by(questions.c.id, answers.c.vote, answers.c.student)
            )
            return [
                AnswerRecord(
                    question=self._question(row),
                    vote=row.vote,
                    student=people[row.student][0],
                    nickname=people[row.student][1],
                    answer=row.answer,
                    right=row.is_right,
                    mistake=row.mistake,
                )
                for row in conn.execute(given)
            ]

    # --- a student ---

    def join(self, code: str, client: str, nickname: str | None = None) -> Joined:
        """Join by room code from `client` (its address). Wrong codes are counted per client: past its limit a client
        is refused every code but those of rooms it already joined, so a flood of wrong codes from a school's shared
        address stops the flood, not the class its students are in."""
        nickname = _bounded(nickname, self.limits.nickname_chars, "A nickname")
        now, client_hash, token = self.clock(), self.client_hash(client), secrets.token_urlsafe(16)
        with self.store.transaction(lock=f"classroom.client.{client_hash}") as conn:
            room = self._room(conn, code, now)
            over = self._recent(conn, "guess", client_hash, now) >= self.limits.guesses_per_window
            if over and room is not None and not self._joined_from(conn, client_hash, room.code):
                room = None  # refused as a wrong code is: a client past its limit learns nothing of the code it sent
            if room is None:
                conn.execute(attempts.insert().values(kind="guess", client=client_hash, at=now))
            else:
                if _locked(conn, room.code):
                    raise RoomLocked(
                        "This class is closed to new students: your teacher closed it once everyone was in. "
                        "Ask your teacher to reopen it, then press Join again."
                    )
                if self._recent(conn, "join", client_hash, now) >= self.limits.joins_per_window:
                    raise TooManyAttempts("Too many joins from your network; wait a minute and try again.")
                if self._recent(conn, "join", client_hash, now, room=room.code) >= self.limits.room_joins_per_window:
                    raise TooManyAttempts(
                        f"{self.limits.room_joins_per_window} students joined this class from your network in the "
                        "last minute, the most it takes; wait a minute and press Join again."
                    )
                seated = conn.execute(select(func.count()).where(students.c.room == room.code)).scalar_one()
                if seated >= self.limits.max_seats:
                    raise RoomsFull(f"This class is full: it seats {self.limits.max_seats} students.")
                conn.execute(attempts.insert().values(kind="join", client=client_hash, at=now, room=room.code))
                values = {"room": room.code, "token_hash": secret_hash(token), "nickname": nickname, "joined_at": now}
                conn.execute(students.insert().values(**values))
                _raise_revision(conn, room.code, room_revisions.c.tally)
        if room is None and over:  # raised after the commit, so that the guess stays counted
            raise TooManyAttempts("Too many wrong room codes from your network; wait a minute and try again.")
        if room is None:
            raise RoomNotFound(
                "No class has this code: it has ended, or the code is mistyped. Check it on the projector."
            )
        return Joined(room.code, token)

    def answer(
        self,
        code: str,
        token: str,
        question: int,
        text: str,
        right: bool | None = None,
        mistake: str | None = None,
    ) -> int:
        """Answer the open vote (replacing this student's earlier answer to it); `right` and `mistake` are the
        caller's grading, stored as given. Returns the vote it went to (1 or 2)."""
        answer = _bounded(text, self.limits.answer_chars, "An answer")
        mistake = _bounded(mistake, 80, "A mistake group")
        if answer is None:
            raise InvalidInput("An answer cannot be empty.")
        with self.store.transaction() as conn:
            student = self._student(conn, code, token)
            # FOR SHARE (PostgreSQL): a teacher closing the vote waits for answers in flight, and they for it
            where = [questions.c.id == question, questions.c.room == student.room]
            asked = conn.execute(select(questions).where(*where).with_for_update(read=True)).first()
            if asked is None:
                raise QuestionNotFound("This question is not in your class.")
            if asked.phase not in OPEN_VOTE:
                raise VoteClosed("This vote is closed; your earlier answer, if any, is the one kept.")
            closes_at = conn.execute(
                select(question_details.c.closes_at).where(question_details.c.question == asked.id)
            ).scalar()
            if closes_at is not None and self.clock() > closes_at + LATE_GRACE_S:
                raise VoteClosed("Time is up for this vote: your answer came after it closed and was not counted.")
            values = {
                "question": asked.id,
                "student": student.id,
                "vote": OPEN_VOTE[asked.phase],
                "answer": answer,
                "is_right": right,
                "mistake": mistake,
                "answered_at": self.clock(),
            }
            self.store.upsert(conn, answers, values, update=["answer", "is_right", "mistake", "answered_at"])
            _raise_revision(conn, student.room, room_revisions.c.tally)
        return int(values["vote"])

    def student_view(self, code: str, token: str) -> StudentView:
        with self.store.read() as conn:
            student = self._student(conn, code, token)
            room = conn.execute(select(rooms).where(rooms.c.code == student.room)).one()
            newest = self._newest_question(conn, room.code)
            mine: tuple[MyAnswer, ...] = ()
            if newest is not None:
                revealed = newest.phase == REVEALED
                given = select(answers).where(answers.c.question == newest.id, answers.c.student == student.id)
                mine = tuple(
                    MyAnswer(
                        vote=row.vote,
                        answer=row.answer,
                        right=row.is_right if revealed else None,
                        mistake=row.mistake if revealed else None,
                    )
                    for row in conn.execute(given.order_by(answers.c.vote))
                )
            return StudentView(
                code=room.code,
                replay=room.replay,
                replay_events=room.replay_events,
                step=self._step(conn, room.code),
                question=newest,
                answers=mine,
            )

    def check_secret(self, code: str, secret: str, teacher: bool) -> None:
        """Refused (`RoomNotFound`, `NotAllowed`) unless `secret` is room `code`'s teacher key or one of its seats: what
        a long poll checks before it waits, cheaper than the view it answers with."""
        with self.store.read() as conn:
            if not teacher:
                self._student(conn, code, secret)
                return
            room = self._teacher_room(conn, code, secret)
            seen_at = conn.execute(select(room_teachers.c.seen_at).where(room_teachers.c.room == room.code)).scalar()
        now = self.clock()
        if seen_at is None or seen_at < now - TEACHER_SEEN_EVERY_S:  # a write a minute per teacher, not per poll
            with self.store.transaction() as conn:
                self.store.upsert(conn, room_teachers, {"room": room.code, "seen_at": now}, update=["seen_at"])

    # --- the server ---

    def sweep(self, now: float | None = None) -> int:
        """Delete every room past its lifetime, with all its rows, and attempts older than a lifetime; returns
        how many rooms went."""
        born_after = self._born_after(self.clock() if now is None else now)
        with self.store.transaction() as conn:
            old = list(conn.execute(select(rooms.c.code).where(rooms.c.created_at <= born_after)).scalars())
            self._delete_rooms(conn, old)
            forgotten = conn.execute(delete(attempts).where(attempts.c.at <= born_after)).rowcount
        if old or forgotten:
            self.store.forget_deleted()
        return len(old)

    def program(self, code: str) -> str | None:
        """The Playground program a live room follows (None for a lesson's room); the room code is all it takes,
        as for joining: the program is what every student's stage shows."""
        with self.store.read() as conn:
            room = self._room(conn, code, self.clock())
            if room is None:
                raise RoomNotFound("This class has ended or never existed.")
            found = conn.execute(select(room_programs.c.source).where(room_programs.c.room == room.code)).first()
            return None if found is None else str(found.source)

    def seed(self, code: str) -> int | None:
        """The seed live room `code` draws its program's numbers from (None: a room made before rooms had seeds, which
        keeps the lesson's numbers); the room code is all it takes, as for `program`."""
        with self.store.read() as conn:
            room = self._room(conn, code, self.clock())
            if room is None:
                raise RoomNotFound("This class has ended or never existed.")
            found = conn.execute(select(room_seeds.c.seed).where(room_seeds.c.room == room.code)).scalar()
            return None if found is None else int(found, 16)

    def question_token(self, code: str, key: str) -> str:
        """The id a browser gets for question `key` of room `code`: opaque (an HMAC with the store's random key), so
        that it names neither the node nor the program a transfer is about, and differs from room to room."""
        return hmac.new(self._client_key, f"{normalize_code(code)}:{key}".encode(), hashlib.sha256).hexdigest()[:16]

    def revisions(self, codes: list[str]) -> dict[str, tuple[int, int]]:
        """Each live room's (revision, tally); a room that ended or never existed is absent. What a push route
        polls: one query for every room a server's visitors follow."""
        if not codes:
            return {}
        born_after = self._born_after(self.clock())
        columns = select(room_revisions.c.room, room_revisions.c.revision, room_revisions.c.tally).join(rooms)
        where = [room_revisions.c.room.in_(codes), rooms.c.created_at > born_after]
        with self.store.read() as conn:
            return {row.room: (int(row.revision), int(row.tally)) for row in conn.execute(columns.where(*where))}

    def wrong_guesses(self, since: float = 0.0, client: str | None = None) -> int:
        """Wrong room codes tried since `since` (kept for a room's lifetime), by everyone or by one client."""
        where = [attempts.c.kind == "guess", attempts.c.at >= since]
        if client is not None:
            where.append(attempts.c.client == self.client_hash(client))
        with self.store.read() as conn:
            return int(conn.execute(select(func.count()).where(*where)).scalar_one())

    def client_hash(self, client: str) -> str:
        """What the attempts table keeps of a client's address (or a teacher's session id): an HMAC with the store's
        random key, so that the table alone does not give the addresses back."""
        return hmac.new(self._client_key, client.encode(errors="surrogatepass"), hashlib.sha256).hexdigest()

    # --- helpers ---

    def _born_after(self, now: float) -> float:
        return now - self.limits.room_lifetime_s

    def _new_code(self, conn: Connection) -> str:
        while True:
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            if conn.execute(select(rooms.c.code).where(rooms.c.code == code)).first() is None:
                return code

    def _room(self, conn: Connection, code: str, now: float) -> Any:
        code = normalize_code(code)
        if len(code) != CODE_LENGTH or not set(code) <= set(CODE_ALPHABET):
            return None  # no room has such a code: not worth a query
        where = [rooms.c.code == code, rooms.c.created_at > self._born_after(now)]
        return conn.execute(select(rooms).where(*where)).first()

    def _teacher_room(self, conn: Connection, code: str, teacher_key: str) -> Any:
        room = self._room(conn, code, self.clock())
        if room is None:
            raise RoomNotFound("This class has ended or never existed.")
        if not teacher_key or not hmac.compare_digest(secret_hash(teacher_key), room.teacher_key_hash):
            raise NotAllowed("Only the teacher's link can do this: it carries the class's teacher key.")
        return room

    def _student(self, conn: Connection, code: str, token: str) -> Any:
        if self._room(conn, code, self.clock()) is None:
            raise RoomNotFound("This class has ended or never existed.")
        where = [students.c.room == normalize_code(code), students.c.token_hash == secret_hash(token or "")]
        student = conn.execute(select(students).where(*where)).first()
        if student is None:
            raise NotAllowed("You are not in this class; join it again with its code.")
        return student

    def _recent(
        self,
        conn: Connection,
        kind: str,
        client_hash: str,
        now: float,
        window_s: float | None = None,
        room: str | None = None,
    ) -> int:
        """A client's attempts of `kind` in the last window (of `room` only, when given)."""
        since = now - (self.limits.window_s if window_s is None else window_s)
        where = [attempts.c.kind == kind, attempts.c.client == client_hash, attempts.c.at > since]
        if room is not None:
            where.append(attempts.c.room == room)
        return int(conn.execute(select(func.count()).where(*where)).scalar_one())

    def _joined_from(self, conn: Connection, client_hash: str, code: str) -> bool:
        where = [attempts.c.kind == "join", attempts.c.client == client_hash, attempts.c.room == code]
        return conn.execute(select(attempts.c.id).where(*where).limit(1)).first() is not None

    def _step(self, conn: Connection, code: str) -> int:
        return int(conn.execute(select(room_steps.c.step).where(room_steps.c.room == code)).scalar_one())

    def _closing(self, seconds: float | None, now: float) -> float | None:
        """When a vote opened `now` with a countdown of `seconds` closes (None: when the teacher closes it)."""
        if seconds is None:
            return None
        if not VOTE_SECONDS[0] <= seconds <= VOTE_SECONDS[1]:
            raise InvalidInput(f"A vote's time is {VOTE_SECONDS[0]:.0f} to {VOTE_SECONDS[1]:.0f} seconds.")
        return now + seconds

    def _newest_question(self, conn: Connection, code: str) -> Question | None:
        newest = conn.execute(_ASKED.where(questions.c.room == code).order_by(questions.c.id.desc()).limit(1)).first()
        return None if newest is None else self._question(newest)

    def _question(self, row: Any) -> Question:
        token = self.question_token(row.room, row.key)
        return Question(row.id, row.step, row.kind, row.key, row.phase, row.closes_at, row.transfer_of, token)

    def _move(
        self,
        code: str,
        teacher_key: str,
        question: int,
        before: set[str],
        after: str,
        refusal: str,
        closes_at: float | None = None,
    ) -> None:
        with self.store.transaction() as conn:
            room = self._teacher_room(conn, code, teacher_key)
            where = [questions.c.id == question, questions.c.room == room.code]
            found = conn.execute(_ASKED.where(*where)).first()
            if found is None:
                raise QuestionNotFound("This question is not in this class.")
            if found.phase not in before:
                raise WrongPhase(refusal)
            if after == VOTE2 and found.transfer_of is not None:
                raise WrongPhase("A transfer question is answered alone, once: it has no second vote.")
            conn.execute(update(questions).where(*where, questions.c.phase == found.phase).values(phase=after))
            if after == VOTE2:  # vote 2's own countdown, or none
                details = {"question": question, "closes_at": closes_at, "transfer_of": None}
                self.store.upsert(conn, question_details, details, update=["closes_at"])
            _raise_revision(conn, room.code)

    def _delete_rooms(self, conn: Connection, codes: list[str]) -> None:
        if not codes:
            return
        asked = select(questions.c.id).where(questions.c.room.in_(codes))
        conn.execute(delete(answers).where(answers.c.question.in_(asked)))
        conn.execute(delete(question_details).where(question_details.c.question.in_(asked)))
        for table in (
            questions,
            students,
            room_steps,
            room_revisions,
            room_programs,
            room_seeds,
            room_teachers,
            room_locks,
        ):
            conn.execute(delete(table).where(table.c.room.in_(codes)))
        conn.execute(delete(attempts).where(attempts.c.room.in_(codes)))
        conn.execute(delete(rooms).where(rooms.c.code.in_(codes)))


def _locked(conn: Connection, code: str) -> bool:
    return conn.execute(select(room_locks.c.room).where(room_locks.c.room == code)).first() is not None


def _raise_revision(conn: Connection, code: str, column: Any = room_revisions.c.revision) -> None:
    """Raise a room's `revision` (what students see) or its `tally` (answers and joins: the teacher's)."""
    where = room_revisions.c.room == code
    conn.execute(update(room_revisions).where(where).values({column: column + 1}))


# a question with its details (a countdown, the question it is the transfer of), when it has them
_ASKED = select(questions, question_details.c.closes_at, question_details.c.transfer_of).outerjoin(
    question_details, question_details.c.question == questions.c.id
)


def _tally(rows: list[Any]) -> VoteTally:
    return VoteTally(
        answered=len(rows),
        right=sum(1 for row in rows if row.is_right),
        answers=dict(Counter(row.answer for row in rows).most_common()),
        right_answers=frozenset(row.answer for row in rows if row.is_right),
        mistakes=dict(Counter(row.mistake for row in rows if row.mistake and not row.is_right).most_common()),
    )
