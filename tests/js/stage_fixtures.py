"""The fixtures of the node tests (tests/js/*.test.mjs), written from real payloads: the seed, a folded loop program
(the Playground's per-sample loop, its 30 iterations folded), mlp3 and a program of tensors of more than 16 numbers
(wide), each as a class follows it (the payload travels packed, as `wire` sends it), with how Python counts its
steps and what a student's stage holds redacted and is then revealed. (The answer grammar's cases are read from
tests/fixtures/answer_grammar.json itself.)

    python tests/js/stage_fixtures.py FOLDER && STAGE_FIXTURES=FOLDER node --test tests/js/

(tests/js/test_node.py does both; .ci/run too.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script (.ci/run): the app's packages from the checkout, as pytest has them
    sys.path.insert(0, str(ROOT))

from autodiff.stage import redacted, revealed_events, wire  # noqa: E402
from autodiff.stage.still import kept_gradients, last_frame_picture  # noqa: E402
from course.programs import record_program  # noqa: E402
from playground import Limits  # noqa: E402
from playground.examples import EXAMPLES  # noqa: E402
from playground.sandbox import run_program  # noqa: E402
from ui.class_replays import ClassReplay, keep_played, lesson_replay  # noqa: E402

LOOP = "Per-sample loop (30 samples)"
LESSONS = ("seed", "mlp3")
# tensors of more than 16 numbers, which Python writes as their shape and range (`[5, 4] from -0.81234567 to 0.96`),
# one of them all one number (`[6, 4], all 0.0`), inside a part a folded view says short
WIDE = """w = Tensor.random([5, 4], Distribution.Default, ad).require_grad()
b = Tensor.zeros([6, 4], ad).require_grad()
x = Tensor.random([3, 5], Distribution.Default, ad)


def layer(x):
    return (x.matmul(w) * 0.5).tanh()


loss = (b * 3.0).sum() + (layer(x) * 2.0).sum()
grads = loss.backward()
"""


def replays() -> dict[str, ClassReplay]:
    """The programs the node tests replay, as a class follows each: two lessons and two Playground programs."""
    played = {}
    for name, source in (("loop", EXAMPLES[LOOP]), ("wide", WIDE)):
        result = run_program(source, Limits(seconds=60))  # the folding is tested, not a busy machine's clock
        if result.error is not None or result.backward is None:
            raise RuntimeError(f"the Playground's {name!r} program did not run: {result.error}")
        played[name] = keep_played(source, result.backward, result.lines)
    return {**{key: lesson_replay(key) for key in LESSONS}, **played}


def still(key: str, replay: ClassReplay) -> dict[str, dict[str, str]]:
    """Python's still of a lesson program's replay (a notebook replay's, `last_frame_picture`): NodeId -> the state
    and the gradient line it shows each node in. Its program is run again for the graph after the backward and the
    container's gradients, which the replay does not keep: a seeded run, the same events (checked)."""
    run = record_program(key)
    if [repr(e) for e in run.recorder.events] != [repr(e) for e in replay.recorder.events]:
        raise RuntimeError(f"{key} recorded other events when run again: its still would be another run's")
    picture = last_frame_picture(run.before, run.device.snapshot(), run.names, kept_gradients(run.grads), run.recorder)
    return {str(node.id): {"state": node.state, "grad": node.grad} for node in picture.nodes}


def fixture(name: str, replay: ClassReplay) -> dict[str, object]:
    """The payload as it travels, and Python's steps: the event each starts at and, for every event, where the
    class report says it is ("step 3 of 7", ClassReplay.position); for a lesson's program, its still (the loop runs
    in the Playground's sandbox, which keeps no gradients container to draw one from)."""
    return {
        "payload": wire(replay.payload(False)),
        "starts": replay.steps(),
        "positions": [replay.position(index) for index in range(replay.events)],
        "still": still(name, replay) if name in LESSONS else None,
        "reveals": reveals(replay),
    }


def reveals(replay: ClassReplay) -> dict[str, object]:
    """A class's student's stage as the room moves on: the payload redacted at a third of the events (as the page
    sends it, packed), and what the route reveals as the room reaches two thirds, then the end (`revealed_events`)."""
    whole, last = replay.payload(False), replay.events - 1
    upto, then = last // 3, 2 * last // 3
    return {
        "upto": upto,
        "redacted": wire(redacted(whole, upto)),
        "revealed": [revealed_events(whole, upto + 1, then), revealed_events(whole, then + 1, last)],
    }


def write_fixtures(folder: Path) -> list[Path]:
    """Each program's fixture as `<name>.json` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, replay in replays().items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(fixture(name, replay)))
        written.append(path)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/js/stage_fixtures.py FOLDER (the folder the node tests read as STAGE_FIXTURES)")
    for path in write_fixtures(Path(sys.argv[1])):
        print(f"wrote {path}")
