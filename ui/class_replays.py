"""The replays classes follow and their questions, once per server, for the Class page and for the class route.

No Streamlit here: the route (`classroom/routes.py`, mounted in app.py) shows a student the question, grades the
answer and reveals the worked answer without a page rerun, through `CourseQuestions`, the `classroom.asking.Questions`
the route is given. The right answer reaches a student only once the question is revealed.

A lesson's class replays its program on numbers of its own, drawn from the room's seed (`course/class_numbers.py`):
the lesson's page, its exports and other classes show other numbers. A Playground program keeps the teacher's.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autodiff import BackwardRecorder, GraphSnapshot
from autodiff.snapshot import ValueSummary
from autodiff.stage import StagePayload, replay_payload, revealed_events
from autodiff.trace import BackwardFinished, StepStarted, SweepFreed
from classroom.asking import AskedJson, GradedAnswer, RevealJson
from classroom.errors import InvalidInput, QuestionNotFound
from classroom.live import classroom
from classroom.rooms import Classroom
from course.class_numbers import class_numbers, class_run
from course.grading import MISTAKES, Question, grade, questions, right_answer
from course.programs import PROGRAMS, ProgramRun, record_program
from course.transfer import question_for_transfer_key
from playground import Limits as PlayLimits
from playground.results import BackwardRun
from playground.workers import shared_pool

PLAY_LIMITS = PlayLimits()
PLAYED_KEPT = 16
ROOMS_KEPT = 64  # lesson rooms' replays kept (a server runs at most 50 classes at once): each a few hundred KB
BOXES = 12  # a value with more entries than this is typed in one box, commas between the numbers


@dataclass(frozen=True)
class ClassReplay:
    """A recorded backward a class follows and its questions: plain data, built once per server."""

    key: str  # a lesson program's key, or "play:<sha256 of the program>"
    title: str
    before: GraphSnapshot
    recorder: BackwardRecorder
    names: dict[int, str]
    source: str
    lines: dict[int, tuple[int, int]]  # NodeId -> the lines of the statement that made it (the stage lights them)
    questions: dict[str, Question]
    payloads: dict[bool, StagePayload] = field(default_factory=dict, compare=False)  # by presenter mode

    @property
    def events(self) -> int:
        return len(self.recorder.events)

    def steps(self) -> list[int]:
        """The event each step starts at, as the stage counts steps (its scrubber's "step 3 of 7")."""
        events = self.recorder.events
        finish = (SweepFreed, BackwardFinished)
        return [
            k
            for k, e in enumerate(events)
            if k == 0 or isinstance(e, StepStarted) or (isinstance(e, finish) and not isinstance(events[k - 1], finish))
        ]

    def position(self, index: int) -> str:
        """Where event `index` is, in the stage's words: "step 3 of 7"; the first event is step 0."""
        starts = self.steps()
        step = sum(1 for start in starts if start <= index) if index else 0
        return f"step {step} of {len(starts)}"

    def payload(self, presenter: bool) -> StagePayload:
        if presenter not in self.payloads:  # the same for every visitor: built once per server and view
            self.payloads[presenter] = replay_payload(
                self.before, self.recorder, self.names, presenter, self.source, self.lines
            )
        return self.payloads[presenter]

    def node_size(self, node: int | None) -> int:
        by_id = {int(n.id): n for n in self.before.nodes}
        value = by_id[node].value if node in by_id else None
        if isinstance(value, ValueSummary):
            return int(np.prod(value.shape))
        return 0 if value is None else int(np.size(value))


def _recorded(key: str, title: str, run: BackwardRun, source: str, lines: dict[int, tuple[int, int]]) -> ClassReplay:
    # the questions, the worked answers and the report name each node as the stage does (`2·c` as written, not `c·2`)
    asked = {q.key: q for q in questions(run.before, run.recorder, run.names, source, lines)}
    return ClassReplay(key, title, run.before, run.recorder, run.names, source, lines, asked)


_LESSONS: dict[str, ClassReplay] = {}
_PLAYED: OrderedDict[str, ClassReplay] = OrderedDict()  # Playground programs' replays, by the program's hash
_ROOMS: OrderedDict[tuple[str, int], ClassReplay] = OrderedDict()  # lesson rooms' replays, by program and seed
_SEEDS: OrderedDict[str, int | None] = OrderedDict()  # each room's seed, by its code (read once from the store)
_LOCK = threading.Lock()


def lesson_replay(key: str) -> ClassReplay:
    """A lesson program's replay on the lesson's own numbers (what its page shows)."""
    with _LOCK:
        if key not in _LESSONS:
            _LESSONS[key] = _lesson_recorded(key, record_program(key), PROGRAMS[key].source)
        return _LESSONS[key]


def room_replay(key: str, seed: int | None) -> ClassReplay:
    """A lesson program's replay on the numbers of a class seeded `seed` (None: a room older than seeds, which keeps
    the lesson's numbers), kept for the last ROOMS_KEPT rooms."""
    if seed is None:
        return lesson_replay(key)
    with _LOCK:
        if (key, seed) in _ROOMS:
            _ROOMS.move_to_end((key, seed))
            return _ROOMS[key, seed]
    replay = _lesson_recorded(key, class_run(key, seed), class_numbers(key, seed).source)
    with _LOCK:
        _ROOMS[key, seed] = replay
        while len(_ROOMS) > ROOMS_KEPT:
            _ROOMS.popitem(last=False)
    return replay


def room_seed(code: str, rooms: Callable[[], Classroom] = classroom) -> int | None:
    """The seed room `code` draws its numbers from (None: no room yet, or one older than seeds), read once per room
    from `rooms` (the server's classroom)."""
    if not code:
        return None
    with _LOCK:
        if code in _SEEDS:
            return _SEEDS[code]
    seed = rooms().seed(code)
    with _LOCK:
        _SEEDS[code] = seed
        while len(_SEEDS) > ROOMS_KEPT * 4:
            _SEEDS.popitem(last=False)
    return seed


def _lesson_recorded(key: str, run: ProgramRun, source: str) -> ClassReplay:
    backward = BackwardRun(run.before, run.recorder, run.names)
    return _recorded(key, PROGRAMS[key].title, backward, source, run.lines)


def keep_played(source: str, backward: BackwardRun, lines: dict[int, tuple[int, int]]) -> ClassReplay:
    """A Playground program's replay, as the teacher just ran it, kept for every student of its classes. `lines`
    are the ones its run saw make each node (RunResult.lines), as the Playground's stage lights them: read from the
    text by variable name, a name assigned on several lines (`c += c + 1`) took its last one, and the class named
    `c + 1` as that line wrote `1 + c`."""
    replay = _recorded(play_key(source), "a Playground program", backward, source, lines)
    with _LOCK:
        _PLAYED[replay.key] = replay
        _PLAYED.move_to_end(replay.key)
        while len(_PLAYED) > PLAYED_KEPT:
            _PLAYED.popitem(last=False)
    return replay


def play_key(source: str) -> str:
    return "play:" + hashlib.sha256(source.encode()).hexdigest()[:24]


def played_replay(source: str, client: str) -> ClassReplay:
    """A Playground program's replay on this server: run once in the Playground's worker pool (never in the
    server), then kept for every student of every class that follows it."""
    key = play_key(source)
    with _LOCK:
        if key in _PLAYED:
            return _PLAYED[key]
    job = shared_pool().submit(key, source, PLAY_LIMITS, "numpy", client)
    if not job.wait(PLAY_LIMITS.seconds * 4 + 10) or job.result is None or job.result.backward is None:
        job.cancel()
        raise InvalidInput("This class's program did not replay on this server; ask your teacher to start it again.")
    return keep_played(source, job.result.backward, job.result.lines)


def class_replay(
    replay: str, code: str, client: str = "class route", rooms: Callable[[], Classroom] = classroom
) -> ClassReplay:
    """The replay room `code` of `rooms` follows: a lesson program (named in `replay`) on the room's numbers, or its
    stored Playground program."""
    if replay in PROGRAMS:
        return room_replay(replay, room_seed(code, rooms))
    source = rooms().program(code)
    if source is None:
        raise InvalidInput("This class follows a replay this server does not know; ask your teacher.")
    return played_replay(source, client)


def asked_question(replay: ClassReplay, key: str, seed: int | None) -> tuple[Question, ClassReplay, str]:
    """The question stored under `key` in a room seeded `seed` following `replay`, the replay it is about (a
    transfer's is another lesson's, on the room's numbers), and the code a student works it out from ("" when it is
    the stage's own program)."""
    if key in replay.questions:
        return replay.questions[key], replay, ""
    transfer = question_for_transfer_key(key, seed)
    if transfer is not None:
        program, question, source = transfer
        return question, room_replay(program, seed), source
    raise QuestionNotFound("This class's question is not one this server knows; ask your teacher.")


class CourseQuestions:
    """The class route's questions (`classroom.asking.Questions`): each stored key's words and form, its grading,
    and its worked answer, from the course's graphs."""

    mistakes = MISTAKES

    def __init__(self, rooms: Callable[[], Classroom] = classroom) -> None:
        self.rooms = rooms  # the route's classroom: where each room's seed and program are

    def _asked(self, replay: str, code: str, key: str) -> tuple[Question, ClassReplay, str]:
        followed = class_replay(replay, code, rooms=self.rooms)
        return asked_question(followed, key, room_seed(code, self.rooms))

    def asked(self, replay: str, code: str, key: str) -> AskedJson:
        q, followed, source = self._asked(replay, code, key)
        if q.kind == "remaining":
            names = sorted(followed.names.values())
            return {"prompt": q.prompt, "form": "names", "size": 0, "choices": names, "code": source}
        size = q.values.size if q.values is not None else followed.node_size(q.node)
        boxes = size if 0 < size <= BOXES else 0
        return {"prompt": q.prompt, "form": "numbers", "size": boxes, "choices": [], "code": source}

    def grade(self, replay: str, code: str, key: str, text: str) -> GradedAnswer:
        q, _, _ = self._asked(replay, code, key)
        graded = grade(q, text)
        return GradedAnswer(graded.right, graded.mistake, graded.words)

    def revealed(self, replay: str, code: str, key: str) -> RevealJson:
        q, _, _ = self._asked(replay, code, key)
        return {"answer": right_answer(q), "worked": q.worked}

    def events(self, replay: str, code: str, start: int, end: int) -> dict[str, Any]:
        return dict(revealed_events(class_replay(replay, code, rooms=self.rooms).payload(False), start, end))
