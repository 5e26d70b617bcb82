"""The push route's long polls (classroom/routes.py): answered when the room moves, and ended at once when the
visitor's connection closes (a page that left; a server that stops does not wait out its long polls)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from class_async import run_apart
from starlette.requests import Request
from starlette.responses import Response

from classroom.rooms import Classroom
from classroom.routes import WAIT_S, ClassRoutes
from classroom.views import NewRoom
from ui.class_replays import CourseQuestions


def _follow_request(code: str, seat: str, since: str, receive: Any) -> Request:
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/class/api/follow",
        "query_string": f"room={code}&since={since}".encode(),
        "headers": [(b"x-class-seat", seat.encode())],
    }
    return Request(scope, receive)


def _follow(
    class_routes: ClassRoutes, request: Request, meanwhile: Callable[[], Awaitable[None]] | None = None
) -> tuple[Response, float]:
    """The follow route's answer, served with the watcher running (and `meanwhile`); and how long it took."""

    async def main() -> tuple[Response, float]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(class_routes.watcher.run)
            if meanwhile is not None:
                tasks.start_soon(meanwhile)
            start = time.perf_counter()
            response = await class_routes.follow(request)
            tasks.cancel_scope.cancel()
        return response, time.perf_counter() - start

    return run_apart(main)


@pytest.fixture
def class_routes(classroom: Classroom) -> ClassRoutes:
    return ClassRoutes(CourseQuestions(lambda: classroom), lambda: classroom)


def _seated(classroom: Classroom) -> tuple[NewRoom, str]:
    """A new room and one student's seat in it."""
    room = classroom.create_room("seed", 24)
    return room, classroom.join(room.code, "127.0.0.1").token


def _body_then(after: Callable[[], Awaitable[dict[str, Any]]]) -> Callable[[], Awaitable[dict[str, Any]]]:
    """An ASGI `receive`: the request's empty body, then what `after` gives (what becomes of the connection)."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return await after()

    return receive


def test_a_long_poll_ends_as_soon_as_its_visitor_leaves(classroom: Classroom, class_routes: ClassRoutes) -> None:
    room, seat = _seated(classroom)

    async def tab_closes() -> dict[str, Any]:
        await anyio.sleep(0.3)
        return {"type": "http.disconnect"}

    response, took = _follow(class_routes, _follow_request(room.code, seat, "0", _body_then(tab_closes)))
    assert response.status_code == 204
    assert took < min(3.0, WAIT_S / 2)
    assert class_routes.watcher.visitors == 0


def test_a_connected_visitor_waits_for_the_teachers_step(classroom: Classroom, class_routes: ClassRoutes) -> None:
    room, seat = _seated(classroom)

    async def stays_open() -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError

    async def teacher_presses() -> None:
        await anyio.sleep(0.5)
        classroom.set_step(room.code, room.teacher_key, 3)

    request = _follow_request(room.code, seat, "0", _body_then(stays_open))
    response, took = _follow(class_routes, request, teacher_presses)
    assert response.status_code == 200
    assert b'"step":3' in response.body
    assert 0.5 <= took < WAIT_S / 2
