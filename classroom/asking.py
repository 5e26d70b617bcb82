"""What the class route needs to know of a question, without knowing the course: its words and answer form, its
grading, its worked answer. The app gives the route an implementation (`ui.class_replays.CourseQuestions`); the
route only passes the stored key of a room's question along."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict


class AskedJson(TypedDict):
    prompt: str
    form: Literal["numbers", "names"]  # a number box per entry (or one box), or a choice among the names
    size: int  # the number boxes; 0: one box for the whole list
    choices: list[str]  # the named tensors a "names" answer picks from
    code: str  # the program a transfer question is about ("": the stage's own)


class RevealJson(TypedDict):
    answer: str  # the right answer, as a student would type it
    worked: str  # the worked answer in numbers: the sum over paths, the local derivative


@dataclass(frozen=True)
class GradedAnswer:
    right: bool | None  # None: not an answer (not numbers): nothing is stored
    mistake: str | None  # a key of `Questions.mistakes`
    words: str


class Questions(Protocol):
    @property
    def mistakes(self) -> Mapping[str, str]:  # mistake key -> what it shows ("got the sign wrong")
        ...

    def asked(self, replay: str, code: str, key: str) -> AskedJson: ...

    def grade(self, replay: str, code: str, key: str, text: str) -> GradedAnswer: ...

    def revealed(self, replay: str, code: str, key: str) -> RevealJson: ...

    def events(self, replay: str, code: str, start: int, end: int) -> dict[str, Any]:
        """The replay's events `start` to `end`, whole (a student's stage holds them redacted until the room gets
        there: autodiff.stage.revealed_events)."""
        ...
