"""After the class: per question, who answered and who was right on vote 1, vote 2 and its transfer question (an
equivalent question answered alone after the discussion, peer instruction's measure of learning), the normalized gains,
a CSV."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from classroom.rooms import Classroom
from classroom.views import Question


@dataclass(frozen=True)
class QuestionReport:
    question: Question
    answered_1: int
    right_1: int
    answered_2: int
    right_2: int
    transfer: Question | None = None  # its transfer question, when the teacher asked it
    answered_t: int = 0
    right_t: int = 0

    @property
    def pre(self) -> float | None:
        return self.right_1 / self.answered_1 if self.answered_1 else None

    @property
    def post(self) -> float | None:
        return self.right_2 / self.answered_2 if self.answered_2 else None

    @property
    def gain(self) -> float | None:
        return normalized_gain(self.pre, self.post)

    @property
    def after(self) -> float | None:
        return self.right_t / self.answered_t if self.answered_t else None

    @property
    def transfer_gain(self) -> float | None:
        """From vote 1 to the transfer question: what the room learned, not what it repeated."""
        return normalized_gain(self.pre, self.after)


def normalized_gain(pre: float | None, post: float | None) -> float | None:
    """Hake's normalized gain, (post - pre) / (1 - pre): the share of the room's possible progress it made."""
    if pre is None or post is None or pre == 1:
        return None
    return (post - pre) / (1 - pre)


def question_reports(classroom: Classroom, code: str, teacher_key: str) -> list[QuestionReport]:
    """One report per question the teacher asked, its transfer question's answers beside it (not a row of its own)."""
    view = classroom.teacher_view(code, teacher_key)
    transfers = {t.question.transfer_of: t for t in view.questions if t.question.transfer_of is not None}
    reports = []
    for tally in view.questions:
        if tally.question.is_transfer:
            continue
        transfer = transfers.get(tally.question.id)
        reports.append(
            QuestionReport(
                question=tally.question,
                answered_1=tally.votes[1].answered,
                right_1=tally.votes[1].right,
                answered_2=tally.votes[2].answered,
                right_2=tally.votes[2].right,
                transfer=None if transfer is None else transfer.question,
                answered_t=0 if transfer is None else transfer.votes[1].answered,
                right_t=0 if transfer is None else transfer.votes[1].right,
            )
        )
    return reports


def answers_csv(classroom: Classroom, code: str, teacher_key: str, nicknames: bool = False) -> str:
    """One row per answer; students are numbers, their nicknames a column only when asked for."""
    out = io.StringIO()
    writer = csv.writer(out)
    # `event`: where the question was asked, counted from 1 as the stage counts events; `transfer_of`: the question
    # whose transfer this one is (its answers are the transfer column of the report)
    header = ["question", "event", "kind", "key", "vote", "transfer_of", "student", "answer", "right", "mistake"]
    writer.writerow([*header, "nickname"] if nicknames else header)
    for record in classroom.answer_records(code, teacher_key):
        question = record.question
        right = "" if record.right is None else str(record.right).lower()
        transfer_of = "" if question.transfer_of is None else question.transfer_of
        row = [question.id, question.step + 1, question.kind, question.key, record.vote, transfer_of, record.student]
        row += [_inert(record.answer), right, record.mistake or ""]
        writer.writerow([*row, _inert(record.nickname or "")] if nicknames else row)
    return out.getvalue()


def _inert(typed: str) -> str:
    """What a student typed, kept from being run as a formula by a spreadsheet (OWASP's CSV injection advice): each
    piece that starts like a formula, the whole or what follows a separator (many locales' spreadsheets split on ";",
    whatever the quotes say), starts with a quote instead. Numbers stay numbers: "5, -7" is an answer."""
    pieces = _SEPARATORS.split(typed)  # text, separator, text, ...
    return "".join("'" + piece if k % 2 == 0 and _formula(piece) else piece for k, piece in enumerate(pieces))


_SEPARATORS = re.compile(r"([,;|\t])")


def _formula(piece: str) -> bool:
    try:
        float(piece)
        return False
    except ValueError:
        return piece.lstrip(" ")[:1] in ("=", "+", "-", "@")
