"""The push route beside the app (`app.py` mounts these on Streamlit's `App`): the stage in a student's browser
long-polls its room's step and question, the teacher's stage long-polls the answers as they come and posts each step.

No Streamlit session is involved, so 60 students following a class cost no page reruns: a request waits (at most
`WAIT_S`) until the room changes, answered from one watcher per server. Each request carries the room's own secret
in a header (never in the URL, which proxies log): `X-Class-Seat` (a student's token) or `X-Class-Teacher` (the
teacher key). Every refusal is a sentence in `{"error": ...}`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypedDict

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from classroom.errors import ClassroomError, InvalidInput, NotAllowed, RoomNotFound, TooManyAttempts
from classroom.live import Revisions, RoomWatcher, classroom, sweep_forever
from classroom.rooms import Classroom
from classroom.views import QuestionTally, VoteTally

WAIT_S = 20.0  # a long poll's longest wait; the browser asks again at once
MAX_WAITING = 1000  # visitors one server holds waiting at once
MAX_BODY = 512  # a step's request body
TOP_ANSWERS = 6  # the histogram's bars: the most given answers

STATUS = {RoomNotFound: 404, NotAllowed: 403, TooManyAttempts: 429, InvalidInput: 400}


class VoteJson(TypedDict):
    answered: int
    right: int
    answers: list[tuple[str, int, bool]]  # the most given answers, most first: (text, how many, graded right)
    others: int  # answers beyond the bars
    mistakes: list[tuple[str, int]]  # mistake group key (course.grading.MISTAKES), how many


class QuestionJson(TypedDict):
    id: int
    key: str
    kind: str
    step: int
    phase: str
    votes: dict[str, VoteJson]  # "1", "2"


class TeacherJson(TypedDict):
    since: str
    step: int
    students: int
    question: QuestionJson | None


class StudentJson(TypedDict):
    since: str
    step: int
    question: dict[str, Any] | None  # id, key, step, phase: the stage says its prompt, the page draws its form
    answered: int  # this student's answers to it


def _vote(tally: VoteTally) -> VoteJson:
    ranked = list(tally.answers.items())
    return {
        "answered": tally.answered,
        "right": tally.right,
        "answers": [(text, count, text in tally.right_answers) for text, count in ranked[:TOP_ANSWERS]],
        "others": sum(count for _, count in ranked[TOP_ANSWERS:]),
        "mistakes": list(tally.mistakes.items()),
    }


def _question(tally: QuestionTally) -> QuestionJson:
    q = tally.question
    votes = {str(vote): _vote(t) for vote, t in tally.votes.items()}
    return {"id": q.id, "key": q.key, "kind": q.kind, "step": q.step, "phase": q.phase, "votes": votes}


def _refused(error: ClassroomError) -> JSONResponse:
    status = next((code for kind, code in STATUS.items() if isinstance(error, kind)), 409)
    return JSONResponse({"error": str(error)}, status_code=status, headers={"Cache-Control": "no-store"})


def _since(text: str | None, parts: int) -> tuple[int, ...] | None:
    """The revisions a visitor already has ("3" or "3.12"); None for a first request."""
    if not text or len(text) > 40:
        return None
    try:
        values = tuple(int(part) for part in text.split("."))
    except ValueError:
        return None
    return values if len(values) == parts else None


def _credential(request: Request, header: str) -> tuple[str, str]:
    code = request.query_params.get("room", "")
    secret = request.headers.get(header, "")
    if not code or len(code) > 20 or len(secret) > 64:
        raise InvalidInput("This request names no class, or its key is too long.")
    return code, secret


class ClassRoutes:
    """The routes and the watcher they share (one per server process)."""

    def __init__(self, rooms: Callable[[], Classroom] = classroom, wait_s: float = WAIT_S) -> None:
        self.rooms = rooms  # this server's classroom (tests give their own store)
        self.wait_s = wait_s
        self.watcher = RoomWatcher(lambda codes: rooms().revisions(codes))

    def routes(self) -> list[Route]:
        return [
            Route("/class/api/follow", self.follow, methods=["GET"]),
            Route("/class/api/watch", self.watch, methods=["GET"]),
            Route("/class/api/step", self.step, methods=["POST"]),
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
            await view(code, secret)  # refused before it may wait: a visitor without the room's secret holds nothing
            if self.watcher.visitors >= MAX_WAITING:
                return JSONResponse(
                    {
                        "error": "This server is following as many visitors as it can; "
                        "your page tries again in a moment."
                    },
                    status_code=503,
                )
            since = _since(request.query_params.get("since"), len(pick((0, 0))))
            waited = await self._wait_while_connected(request, code, lambda current: pick(current) != since)
            if not waited:
                return Response(status_code=204)  # the visitor left: nobody reads this
            now = waited[0]
            if now is None:
                raise RoomNotFound("This class has ended.")
            if pick(now) == since:
                return Response(status_code=204, headers={"Cache-Control": "no-store"})
            body = await view(code, secret)
            body["since"] = ".".join(str(part) for part in pick(now))
            return JSONResponse(body, headers={"Cache-Control": "no-store"})
        except ClassroomError as error:
            return _refused(error)

    async def _wait_while_connected(
        self, request: Request, code: str, moved: Callable[[Revisions], bool]
    ) -> list[Revisions | None]:
        """The watcher's wait (its answer in a list), or an empty list as soon as the visitor's connection closes:
        a page that left frees its place at once, and a stopping server does not wait out its long polls."""
        waited: list[Revisions | None] = []
        async with anyio.create_task_group() as tasks:

            async def wait() -> None:
                waited.append(await self.watcher.wait(code, moved, self.wait_s))
                tasks.cancel_scope.cancel()

            tasks.start_soon(wait)
            while (await request.receive())["type"] != "http.disconnect":
                pass  # the request's (empty) body
            tasks.cancel_scope.cancel()
        return waited

    async def follow(self, request: Request) -> Response:
        """A student's stage: the room's step and question, when they change."""

        async def view(code: str, seat: str) -> StudentJson:
            seen = await anyio.to_thread.run_sync(self.rooms().student_view, code, seat)
            q = seen.question
            question = None if q is None else {"id": q.id, "key": q.key, "step": q.step, "phase": q.phase}
            return {"since": "", "step": seen.step, "question": question, "answered": len(seen.answers)}

        return await self._long_poll(request, "X-Class-Seat", lambda r: r[:1], view)

    async def watch(self, request: Request) -> Response:
        """The teacher's stage: the step, the students and the newest question's answers, when they change."""

        async def view(code: str, key: str) -> TeacherJson:
            seen = await anyio.to_thread.run_sync(self.rooms().teacher_view, code, key)
            newest = _question(seen.questions[-1]) if seen.questions else None
            return {"since": "", "step": seen.step, "students": seen.students, "question": newest}

        return await self._long_poll(request, "X-Class-Teacher", lambda r: r, view)

    async def step(self, request: Request) -> Response:
        """The teacher's stage moved: `{"step": event index}` (the room's students follow)."""
        try:
            code, key = _credential(request, "X-Class-Teacher")
            body = await _bounded_body(request)
            step = body.get("step") if isinstance(body, dict) else None
            if not isinstance(step, int) or isinstance(step, bool):
                raise InvalidInput('A step is sent as {"step": a whole number}.')
            await anyio.to_thread.run_sync(self.rooms().set_step, code, key, step)
            return JSONResponse({"step": step}, headers={"Cache-Control": "no-store"})
        except ClassroomError as error:
            return _refused(error)


async def _bounded_body(request: Request) -> Any:
    """The request's JSON, refused past MAX_BODY bytes however it is sent (a length, or a stream without one)."""
    received = bytearray()
    async for chunk in request.stream():
        received += chunk
        if len(received) > MAX_BODY:
            raise InvalidInput(f"A step's request is at most {MAX_BODY} bytes.")
    try:
        return json.loads(received or b"null")
    except ValueError:
        raise InvalidInput("A step's request is JSON.") from None
