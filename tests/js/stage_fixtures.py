"""The fixtures of the node tests (tests/js/*.test.mjs), written from real payloads: the seed, a folded loop program
(the Playground's per-sample loop, its 30 iterations folded) and mlp3, each as a class follows it (the payload
travels packed, as `wire` sends it), with how Python counts its steps. (The answer grammar's cases are read from
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

from autodiff.stage import wire  # noqa: E402
from playground import Limits  # noqa: E402
from playground.examples import EXAMPLES  # noqa: E402
from playground.sandbox import run_program  # noqa: E402
from ui.class_replays import ClassReplay, keep_played, lesson_replay  # noqa: E402

LOOP = "Per-sample loop (30 samples)"


def replays() -> dict[str, ClassReplay]:
    """The programs the node tests replay, as a class follows each: two lessons and a Playground program."""
    result = run_program(EXAMPLES[LOOP], Limits(seconds=60))  # the folding is tested, not a busy machine's clock
    if result.error is not None or result.backward is None:
        raise RuntimeError(f"the Playground's {LOOP!r} did not run: {result.error}")
    return {
        "seed": lesson_replay("seed"),
        "loop": keep_played(EXAMPLES[LOOP], result.backward),
        "mlp3": lesson_replay("mlp3"),
    }


def fixture(replay: ClassReplay) -> dict[str, object]:
    """The payload as it travels, and Python's steps: the event each starts at and, for every event, where the
    class report says it is ("step 3 of 7", ClassReplay.position)."""
    return {
        "payload": wire(replay.payload(False)),
        "starts": replay.steps(),
        "positions": [replay.position(index) for index in range(replay.events)],
    }


def write_fixtures(folder: Path) -> list[Path]:
    """Each program's fixture as `<name>.json` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, replay in replays().items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(fixture(replay)))
        written.append(path)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/js/stage_fixtures.py FOLDER (the folder the node tests read as STAGE_FIXTURES)")
    for path in write_fixtures(Path(sys.argv[1])):
        print(f"wrote {path}")
