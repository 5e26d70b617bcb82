"""The stage's DOM-free modules (autodiff/stage/js/model/) run by `node --test` over tests/js/*.test.mjs, without a
browser: on fixtures written here from real payloads (the seed, a folded loop program, mlp3, a program of wide
tensors) and on the answer grammar's cases (tests/fixtures/answer_grammar.json), which course/grading.py's parser is
tested on too."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from stage_fixtures import write_fixtures

HERE = Path(__file__).resolve().parent
NODE = shutil.which("node")


def test_the_stage_model_passes_its_node_tests(tmp_path):
    assert NODE, "node is not installed: install Debian's nodejs (.ci/run does)"
    written = write_fixtures(tmp_path)
    assert sorted(p.name for p in written) == ["loop.json", "mlp3.json", "seed.json", "wide.json"]
    tests = sorted(HERE.glob("*.test.mjs"))
    assert {t.name for t in tests} >= {
        "steps.test.mjs",
        "answers.test.mjs",
        "numbers.test.mjs",
        "parts.test.mjs",
        "dot.test.mjs",
    }
    run = subprocess.run(
        [NODE, "--test", *map(str, tests)],
        capture_output=True,
        text=True,
        env={**os.environ, "STAGE_FIXTURES": str(tmp_path)},
        timeout=240,
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    counts = dict(line[2:].split(" ", 1) for line in report.splitlines() if line.startswith(("# pass", "# fail")))
    assert counts["fail"] == "0" and int(counts["pass"]) >= 10, report
