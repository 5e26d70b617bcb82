"""The push route beside the app (`app.py` mounts these on Streamlit's `App`): the stage in a student's browser
long-polls its room's step and question, the teacher's stage long-polls the answers as they come and posts each step.

No Streamlit session is involved, so 60 students following a class cost no page reruns: a request waits (at most
`WAIT_S`) until the room changes, answered from one watcher per server. A student's stage draws the question, its
answer form, the countdown and, once revealed, their own result and the worked answer from what `follow` sends, and
posts the answer to `answer`, graded here (`classroom.asking.Questions`, given by the app): a class event reruns no
student's page. Each request carries the room's own secret
in a header (never in the URL, which proxies log): `X-Class-Seat` (a student's token) or `X-Class-Teacher` (the
teacher key). Every refusal is a sentence in `{"error": ...}`; a missing room and a wrong key get the same one. They
are not counted as wrong room codes (the joins' limit): a probe here learns nothing of which rooms exist, and a flood
of them from a school's address must not keep its students from joining.
"""

from __future__ import annotations

import json
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, TypedDict

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from classroom.asking import AskedJson, Questions
from classroom.errors import (
    ClassroomError,
    InvalidInput,
    NotAllowed,
    QuestionNotFound,
    RoomNotFound,
    TooManyAttempts,
    VoteClosed,
)
from classroom.live import Evicted, Revisions, RoomWatcher, classroom, sweep_forever
from classroom.rooms import Classroom, secret_hash  # the route counts by it: never a secret
from classroom.views import OPEN_VOTE, REVEALED, VOTE1, Question, QuestionTally, StudentView, VoteTally

WAIT_S = 20.0  # a long poll's longest wait; the browser asks again at once
MAX_WAITING = 1000  # visitors one server holds waiting at once; when all are taken, shared evenly by the rooms waiting
MAX_WAITING_PER_SECRET = 4  # long polls one seat (or teacher key) holds at once: a few tabs, never the server's places
MAX_WAITING_PER_ROOM = 600  # one room's (500 seats and their teacher): one class never holds every place
ANSWERS_PER_MINUTE = 20  # answers one seat may send a minute: changing one's mind, not a flood of writes
MAX_BODY = 512  # a step's request body
MAX_ANSWER_BODY = 2048  # an answer's: 200 characters, each escaped in JSON at most 6 bytes wide... and its id
TOP_ANSWERS = 6  # the histogram's bars: the most given answers

STATUS = {RoomNotFound: 404, NotAllowed: 404, TooManyAttempts: 429, InvalidInput: 400}
# a missing room and a wrong key get one answer: a probe learns nothing of which rooms exist
SERVER_FULL = "This server is following as many visitors as it can; your page tries again in a moment."
NO_SUCH_SECRET = "This class has ended, or this page's key is not one of its own; join again with the room code."


class GradedJson(TypedDict):
    right: int
    right_answers: list[str]  # the bars' texts graded right
    mistakes: list[tuple[str, int]]  # mistake group key (course.grading.MISTAKES), how many


class VoteJson(TypedDict):
    answered: int
    # the most given answers, most first (text, how many), once the vote is closed (or on the teacher's own screen):
    # an open vote's histogram sways the votes still to come
    answers: list[tuple[str, int]] | None
    others: int  # answers beyond the bars
    graded: GradedJson | None  # who is right: after the reveal, or on the teacher's own screen; never a projector's


class QuestionJson(TypedDict):
    id: int
    key: str  # opaque (Classroom.question_token): the stored key names the node, and a transfer its program
    kind: str
    step: int
    phase: str
    closes_in: float | None  # seconds left in the open vote's countdown (None: no countdown)
    transfer_of: int | None  # the question this one is the transfer of
    votes: dict[str, VoteJson]  # "1", "2"


class TeacherJson(TypedDict):
    since: str
    step: int
    students: int
    question: QuestionJson | None


class StudentQuestionJson(AskedJson):
    id: int
    key: str  # opaque, as the teacher's
    step: int
    phase: str
    vote: int | None  # the open vote (1 or 2), None while discussing or revealed
    closes_in: float | None
    transfer: bool


class MineJson(TypedDict):
    vote: int
    answer: str


class ResultJson(TypedDict):
    answer: str  # the right answer
    worked: str  # the worked answer in numbers
    yours: str | None  # this student's last answer (None: they did not answer)
    right: bool | None
    why: str  # the mistake their answer shows, in words ("" when none)


class StudentJson(TypedDict):
    since: str
    step: int
    question: StudentQuestionJson | None  # the stage draws its form, its countdown, the receipt
    mine: list[MineJson]  # this student's stored answers to it, by vote
    result: ResultJson | None  # once revealed: the answer, worked, and this student's own
    events: dict[str, Any] | None  # the replay's events the room reached since the stage's `have` (filled in whole)


class ReceiptJson(TypedDict):
    stored: str
    vote: int


def _vote(tally: VoteTally, histogram: bool, graded: bool) -> VoteJson:
    ranked = list(tally.answers.items())
    shown = ranked[:TOP_ANSWERS]
    right: GradedJson = {
        "right": tally.right,
        "right_answers": [text for text, _ in shown if text in tally.right_answers],
        "mistakes": list(tally.mistakes.items()),
    }
    return {
        "answered": tally.answered,
        "answers": shown if histogram else None,
        "others": sum(count for _, count in ranked[TOP_ANSWERS:]) if histogram else 0,
        "graded": right if graded else None,
    }


def _question(tally: QuestionTally, now: float, own_screen: bool = False) -> QuestionJson:
    """The newest question as the teacher's stage draws it. Before the reveal a projector's page gets how many
    answered, and a closed vote's histogram without a mark, never who is right; the teacher's `own_screen` (a page
    not in presenter mode, which folds it away) gets all of it."""
    q = tally.question
    revealed = q.phase == REVEALED
    closed = {1: q.phase != VOTE1, 2: revealed}  # vote 1 closes when the discussion (or the reveal) starts
    votes = {
        str(vote): _vote(t, own_screen or closed.get(vote, revealed), own_screen or revealed)
        for vote, t in tally.votes.items()
    }
    return {
        "id": q.id,
        "key": q.token,
        "kind": q.kind,
        "step": q.step,
        "phase": q.phase,
        "closes_in": _closes_in(q, now),
        "transfer_of": q.transfer_of,
        "votes": votes,
    }


def _closes_in(q: Question, now: float) -> float | None:
    if q.closes_at is None or q.phase not in OPEN_VOTE:
        return None
    return round(max(0.0, q.closes_at - now), 1)


def student_json(seen: StudentView, questions: Questions, now: float, have: int | None = None) -> StudentJson:
    """What a student's stage draws of its room: never the right answer before the reveal. `have`: how many of the
    replay's events the stage holds whole; those the room reached since come along."""
    q = seen.question
    body: StudentJson = {"since": "", "step": seen.step, "question": None, "mine": [], "result": None, "events": None}
    if have is not None and have <= seen.step:
        body["events"] = questions.events(seen.replay, seen.code, have, seen.step)
    if q is None:
        return body
    asked = questions.asked(seen.replay, seen.code, q.key)
    body["question"] = {
        **asked,
        "id": q.id,
        "key": q.token,
        "step": q.step,
        "phase": q.phase,
        "vote": OPEN_VOTE.get(q.phase),
        "closes_in": _closes_in(q, now),
        "transfer": q.is_transfer,
    }
    body["mine"] = [{"vote": a.vote, "answer": a.answer} for a in seen.answers]
    if q.phase == REVEALED:
        last = seen.answers[-1] if seen.answers else None
        body["result"] = {
            **questions.revealed(seen.replay, seen.code, q.key),
            "yours": None if last is None else last.answer,
            "right": None if last is None else last.right,
            "why": questions.mistakes.get(last.mistake or "", "") if last is not None else "",
        }
    return body


def _refused(error: ClassroomError) -> JSONResponse:
    status = next((code for kind, code in STATUS.items() if isinstance(error, kind)), 409)
    sentence = NO_SUCH_SECRET if isinstance(error, (RoomNotFound, NotAllowed)) else str(error)
    return JSONResponse({"error": sentence}, status_code=status, headers={"Cache-Control": "no-store"})


def _since(text: str | None, parts: int) -> tuple[int, ...] | None:
    """The revisions a visitor already has ("3" or "3.12"); None for a first request."""
    if not text or len(text) > 40:
        return None
    try:
        values = tuple(int(part) for part in text.split("."))
    except ValueError:
        return None
    return values if len(values) == parts else None


def _count(text: str | None) -> int | None:
    """A small whole number from a query (`have`), else None."""
    return int(text) if text and len(text) <= 6 and text.isascii() and text.isdigit() else None


def _credential(request: Request, header: str) -> tuple[str, str]:
    code = request.query_params.get("room", "")
    secret = request.headers.get(header, "")
    if not code or len(code) > 20 or len(secret) > 64:
        raise InvalidInput("This request names no class, or its key is too long.")
    return code, secret


class ClassRoutes:
    """The routes and the watcher they share (one per server process)."""

    def __init__(
        self, questions: Questions, rooms: Callable[[], Classroom] = classroom, wait_s: float = WAIT_S
    ) -> None:
        self.questions = questions  # the course's questions: their words, grading and worked answers
        self.rooms = rooms  # this server's classroom (tests give their own store)
        self.wait_s = wait_s
        self.watcher = RoomWatcher(lambda codes: rooms().revisions(codes))
        self.waiting: Counter[str] = Counter()  # long polls waiting, by the hash of their secret
        self.answered: dict[str, deque[float]] = {}  # when each seat (its secret's hash) answered, the last minute

    def routes(self) -> list[Route]:
        return [
            Route("/class/api/follow", self.follow, methods=["GET"]),
            Route("/class/api/watch", self.watch, methods=["GET"]),
            Route("/class/api/step", self.step, methods=["POST"]),
            Route("/class/api/answer", self.answer, methods=["POST"]),
        ]

    @asynccontextmanager
    async def lifespan(self, _app: object) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self.watcher.run)
            tasks.start_soon(sweep_forever, self.rooms)
            yield
            tasks.cancel_scope.cancel()

    async def _long_poll(
        self,
        request: Request,
        header: str,
        pick: Callable[[Revisions], tuple[int, ...]],
        view: Callable[[str, str], Awaitable[Any]],
    ) -> Response:
        try:
            code, secret = _credential(request, header)
            since = _since(request.query_params.get("since"), len(pick((0, 0))))
            # a seat's places are counted in memory before any query, and held from here on: a flood of follows on
            # one seat is refused without reaching the database, however many arrive at once
            holder = secret_hash(secret)
            if self.waiting[holder] >= MAX_WAITING_PER_SECRET:
                raise TooManyAttempts("This class is open in too many tabs here; close the others and reload this one.")
            self.waiting[holder] += 1
            try:
                waited = await self._checked_wait(request, header, code, secret, lambda now: pick(now) != since)
            finally:
                self.waiting[holder] -= 1
                if not self.waiting[holder]:
                    del self.waiting[holder]
            if isinstance(waited, Response):
                return waited
            if not waited:
                # the visitor left (nobody reads this), or its place went to another room: its page asks again
                return Response(status_code=204, headers={"Cache-Control": "no-store"})
            now = waited[0]
            if now is None:  # told only to a visitor whose key the room took
                return JSONResponse(
                    {"error": "This class has ended."}, status_code=404, headers={"Cache-Control": "no-store"}
                )
            if pick(now) == since:
                return Response(status_code=204, headers={"Cache-Control": "no-store"})
            body = await view(code, secret)
            body["since"] = ".".join(str(part) for part in pick(now))
            return JSONResponse(body, headers={"Cache-Control": "no-store"})
        except ClassroomError as error:
            return _refused(error)

    async def _checked_wait(
        self, request: Request, header: str, code: str, secret: str, moved: Callable[[Revisions], bool]
    ) -> list[Revisions | None] | Response:
        """The wait of a visitor whose secret the room takes, while places are left (else the refusal's answer)."""
        # refused before it may wait: a visitor without the room's secret holds nothing (one query, not the view)
        await anyio.to_thread.run_sync(self.rooms().check_secret, code, secret, header == "X-Class-Teacher")
        if self.watcher.waiting[code] >= MAX_WAITING_PER_ROOM:
            raise TooManyAttempts("This class has as many pages following it as it may; reload in a moment.")
        if self.watcher.visitors >= MAX_WAITING:
            # a full server shares its places evenly among the rooms waiting: a room below its share takes one back
            # from the room holding the most (above its share, then), whose visitor asks again; a room at its share
            # waits for a place
            rooms = len(self.watcher.waiting) + (code not in self.watcher.waiting)
            if self.watcher.waiting[code] >= MAX_WAITING // rooms:
                return JSONResponse({"error": SERVER_FULL}, status_code=503)
            self.watcher.evict(max(self.watcher.waiting, key=self.watcher.waiting.__getitem__))
        return await self._wait_while_connected(request, code, moved)

    async def _wait_while_connected(
        self, request: Request, code: str, moved: Callable[[Revisions], bool]
    ) -> list[Revisions | None]:
        """The watcher's wait (its answer in a list), or an empty list as soon as the visitor's connection closes (or
        its place goes to another room): a page that left frees its place at once, and a stopping server does not wait
        out its long polls."""
        waited: list[Revisions | None] = []
        async with anyio.create_task_group() as tasks:

            async def wait() -> None:
                with suppress(Evicted):  # its place went to another room: answered as a visitor that left, and the
                    waited.append(await self.watcher.wait(code, moved, self.wait_s))  # page asks again
                tasks.cancel_scope.cancel()

            tasks.start_soon(wait)
            while (await request.receive())["type"] != "http.disconnect":
                pass  # the request's (empty) body
            tasks.cancel_scope.cancel()
        return waited

    async def follow(self, request: Request) -> Response:
        """A student's stage: the room's step and question, when they change."""

        have = _count(request.query_params.get("have"))

        def seen(code: str, seat: str) -> StudentJson:
            room = self.rooms()
            return student_json(room.student_view(code, seat), self.questions, room.clock(), have)

        async def view(code: str, seat: str) -> StudentJson:
            return await anyio.to_thread.run_sync(seen, code, seat)

        return await self._long_poll(request, "X-Class-Seat", lambda r: r[:1], view)

    async def watch(self, request: Request) -> Response:
        """The teacher's stage: the step, the students and the newest question's answers, when they change;
        `graded=1` (the teacher's own screen) asks for who is right before the reveal too."""

        own_screen = request.query_params.get("graded") == "1"  # the teacher's own device, not a projector's

        def seen(code: str, key: str) -> TeacherJson:
            room = self.rooms()
            view = room.teacher_view(code, key)
            newest = _question(view.questions[-1], room.clock(), own_screen) if view.questions else None
            return {"since": "", "step": view.step, "students": view.students, "question": newest}

        async def view(code: str, key: str) -> TeacherJson:
            return await anyio.to_thread.run_sync(seen, code, key)

        return await self._long_poll(request, "X-Class-Teacher", lambda r: r, view)

    async def step(self, request: Request) -> Response:
        """The teacher's stage moved: `{"step": event index}` (the room's students follow)."""
        try:
            code, key = _credential(request, "X-Class-Teacher")
            body = await _bounded_body(request, MAX_BODY)
            step = body.get("step") if isinstance(body, dict) else None
            if not isinstance(step, int) or isinstance(step, bool):
                raise InvalidInput('A step is sent as {"step": a whole number}.')
            await anyio.to_thread.run_sync(self.rooms().set_step, code, key, step)
            self.watcher.nudge()  # the students on this server see the press at once
            return JSONResponse({"step": step}, headers={"Cache-Control": "no-store"})
        except ClassroomError as error:
            return _refused(error)

    async def answer(self, request: Request) -> Response:
        """A student's answer to the open vote, `{"question": id, "answer": text}`: graded here, stored with the
        mistake it shows, and the receipt sent back; an answer that is not one (not numbers) is not stored."""
        try:
            code, seat = _credential(request, "X-Class-Seat")
            body = await _bounded_body(request, MAX_ANSWER_BODY)
            question = body.get("question") if isinstance(body, dict) else None
            text = body.get("answer") if isinstance(body, dict) else None
            if not isinstance(question, int) or isinstance(question, bool) or not isinstance(text, str):
                raise InvalidInput('An answer is sent as {"question": its number, "answer": the text}.')
            self._count_answer(secret_hash(seat), time.monotonic())
            receipt = await anyio.to_thread.run_sync(self._answer, code, seat, question, text)
            self.watcher.nudge()  # the teacher, if on this server, sees the answer at once
            return JSONResponse(receipt, headers={"Cache-Control": "no-store"})
        except ClassroomError as error:
            return _refused(error)

    def _count_answer(self, seat: str, now: float) -> None:
        """Refused past ANSWERS_PER_MINUTE from one seat; the record of a seat that stopped answering is dropped."""
        for other in [s for s, times in self.answered.items() if times[-1] < now - 60]:
            del self.answered[other]
        times = self.answered.setdefault(seat, deque())
        while times and times[0] < now - 60:
            times.popleft()
        if len(times) >= ANSWERS_PER_MINUTE:
            raise TooManyAttempts("You sent many answers this minute; wait a moment, then send your answer again.")
        times.append(now)

    def _answer(self, code: str, seat: str, question: int, text: str) -> ReceiptJson:
        room = self.rooms()
        seen = room.student_view(code, seat)
        q = seen.question
        if q is None or q.id != question:
            raise QuestionNotFound("This question is no longer the one open in your class.")
        if q.phase not in OPEN_VOTE:
            raise VoteClosed("This vote is closed; your earlier answer, if any, is the one kept.")
        graded = self.questions.grade(seen.replay, seen.code, q.key, text)
        if graded.right is None:
            raise InvalidInput(f"{graded.words} Your answer was not stored.")
        vote = room.answer(code, seat, q.id, text, graded.right, graded.mistake)
        return {"stored": text.strip(), "vote": vote}


async def _bounded_body(request: Request, limit: int) -> Any:
    """The request's JSON, refused past `limit` bytes however it is sent (a length, or a stream without one)."""
    received = bytearray()
    try:
        async for chunk in request.stream():
            received += chunk
            if len(received) > limit:
                raise InvalidInput(f"This request is at most {limit} bytes.")
    except ClientDisconnect:  # a body cut short: nobody reads the answer, and it is no server error
        raise InvalidInput("This request's body did not arrive whole.") from None
    try:
        return json.loads(received or b"null")
    except ValueError:
        raise InvalidInput("This request is JSON.") from None
