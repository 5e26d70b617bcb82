"""What the store's readers get back: plain frozen records, a student's and a teacher's view of one room."""

from __future__ import annotations

from dataclasses import dataclass

VOTE1, DISCUSS, VOTE2, REVEALED = "vote1", "discuss", "vote2", "revealed"  # a question's phases, in order
OPEN_VOTE = {VOTE1: 1, VOTE2: 2}  # the vote an answer goes to in each phase that takes answers


@dataclass(frozen=True)
class NewRoom:
    code: str
    teacher_key: str  # shown once to the teacher's session; the store keeps only its hash


@dataclass(frozen=True)
class Joined:
    code: str
    token: str  # the student's own secret; the store keeps only its hash


@dataclass(frozen=True)
class Question:
    id: int
    step: int
    kind: str
    key: str
    phase: str
    closes_at: float | None = None  # the vote's time limit (seconds since the epoch), None: until the teacher closes
    transfer_of: int | None = None  # the revealed question this one is the transfer of
    token: str = ""  # what a browser gets instead of `key` (Classroom.question_token): names no node or program

    @property
    def is_transfer(self) -> bool:
        return self.transfer_of is not None


@dataclass(frozen=True)
class MyAnswer:
    vote: int
    answer: str
    right: bool | None  # None until the question is revealed
    mistake: str | None


@dataclass(frozen=True)
class StudentView:
    code: str
    replay: str
    replay_events: int
    step: int
    question: Question | None  # the room's newest question
    answers: tuple[MyAnswer, ...]  # this student's, to that question


@dataclass(frozen=True)
class VoteTally:
    answered: int
    right: int
    answers: dict[str, int]  # each answer's text and how many gave it (the histogram), most given first
    right_answers: frozenset[str]  # the texts among them graded right
    mistakes: dict[str, int]  # each mistake group and how many wrong answers show it


@dataclass(frozen=True)
class QuestionTally:
    question: Question
    votes: dict[int, VoteTally]  # 1 and 2


@dataclass(frozen=True)
class TeacherView:
    code: str
    replay: str
    replay_events: int
    step: int
    students: int
    expires_at: float
    questions: tuple[QuestionTally, ...]
    locked: bool = False  # closed to new seats (Classroom.lock_room)


@dataclass(frozen=True)
class AnswerRecord:
    question: Question
    vote: int
    student: int  # 1, 2, ... in the order the room's students joined: no name
    nickname: str | None
    answer: str
    right: bool | None
    mistake: str | None
