"""What class mode says, written once (issue 53): the server's refusal, the teacher's page and both stages say these
words. The stages hold no copy: they get theirs through their class link (`ClassroomLink.said`, ui/class_view.py).
Plain text: `classroom` imports neither the engine nor the app."""

from __future__ import annotations

from classroom.views import DISCUSS, REVEALED, VOTE1, VOTE2

# a teacher's step past the asked event while its question waits for the reveal: the server refuses it (WrongPhase)
# and the teacher's stage says so before it even asks
OPEN_QUESTION_HOLDS = (
    "A question is open on this step: running it would show the room the answer. Reveal the answer first, then step on."
)

# the room's screen (the teacher's tally beside the graph, a projector's too): where the question is
ROOM_PHASES = {VOTE1: "Vote 1", DISCUSS: "Discussion after vote 1", VOTE2: "Vote 2", REVEALED: "Revealed"}

# a student's stage status (a live region), before "Following the teacher: …"; the question's box says the rest
STUDENT_PHASES = {
    VOTE1: "Your teacher asked a question: answer it in the question box.",
    DISCUSS: "Vote 1 is closed: discuss with your neighbours.",
    VOTE2: "Vote 2 is open: answer again in the question box.",
    REVEALED: "The answer is revealed in the question box.",
}

# the teacher's page, under the question's controls: what to do next in each phase before the reveal
TEACHER_PHASES = {
    VOTE1: "Vote 1 is open: the room answers on their own. Close it when most have answered, to discuss.",
    DISCUSS: "Vote 1 is closed. Let neighbours convince each other, then open vote 2.",
    VOTE2: "Vote 2 is open: the same question after the discussion.",
}
TRANSFER_OPEN = "The transfer question is open: each student answers alone, once. Reveal when most have answered."
