"""The worker's second fence (`playground/fence.py`): while a program runs, the interpreter's audit hook refuses files,
sockets, processes, native code and new modules, even from code the guards would let through (as if a guard had a
hole); and the attacks of test_sandbox, sent through the worker pool, are refused there too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from playground import Limits
from playground.workers import WorkerPool

ROOT = Path(__file__).resolve().parents[2]

# Each runs as trusted Python inside `fence.armed()`: what a hole in the guards would let a program reach.
REACHES = {
    "open a file": "open('/etc/hostname').read()",
    "write a file": "open('/tmp/fenced-pwned.txt', 'w').write('x')",
    "list a directory": "__import__('os').listdir('/')",
    "run a command": "__import__('os').system('true')",
    "start a process": "__import__('subprocess').run(['true'])",
    "open a socket": "__import__('socket').socket()",
    "load a new module": "__import__('colorsys')",
    "compile text": "compile('1 + 1', 'x', 'eval')",
    "make a function from code": "type(lambda: 0)((lambda: 0).__code__, {})",
    "load native code": "__import__('ctypes').CDLL(None)",
    "read every object": "__import__('gc').get_objects()",
}
CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import os, socket, subprocess, ctypes, gc  # loaded before the fence, as a worker's imports are
from playground import fence
from playground.guards import Refused
fence.install()
reaches = json.loads(sys.argv[2])
outcome = {}
for name, code in reaches.items():
    with fence.armed("print(1)"):
        try:
            eval(compile(code, "<program 1>", "eval"))  # compiled before arming, as the sandbox compiles a program
            outcome[name] = "reached"
        except Refused as refusal:
            outcome[name] = str(refusal)
        except Exception as error:
            outcome[name] = "failed otherwise: " + repr(error)
with fence.armed("x = 1\\n"):
    compile("x = 1\\n", "<unknown>", "exec", 1024)  # the engine's recorders parse the program's own text
outcome["after the run"] = open("/etc/hostname").read() != ""
print(json.dumps(outcome))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the workers' fence is tested where they run")
def test_the_fence_refuses_what_a_hole_in_the_guards_would_reach():
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), json.dumps(REACHES)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr[-2000:]
    outcome = json.loads(out.stdout.strip().splitlines()[-1])
    for name in REACHES:
        assert "The Playground stopped the program" in outcome[name], (name, outcome[name])
    assert outcome["after the run"] is True  # unarmed, the worker itself reads and writes its pipes and files
    assert not Path("/tmp/fenced-pwned.txt").exists()


@pytest.fixture(scope="module")
def pool():
    pool = WorkerPool(size=1)
    yield pool
    pool.shutdown()


ATTACKS = {
    "import os": "`os` reaches the server's files",
    'open("/etc/passwd")': "`open` reads and writes files on the server",
    "x = ().__class__.__bases__[0].__subclasses__()": "is an invalid attribute name",
    'g = (i for i in [1])\nf = getattr(g, "gi_frame")': "`gi_frame` is not available",
    's = "{0.__class__}".format(1)': "`str.format` is not available",
    "t = Tensor.ones([1], ad)\nd = getattr(t, 'data')": "`data` is not available on a Tensor",
    "class A:\n    def __del__(self):\n        pass": 'may not define "__del__"',
    "while True:\n    pass": "ran longer than 1 seconds",
    "def f(x):\n    return f(x)\nf(1)": "Functions call each other more than about 200 deep",
}


@pytest.mark.parametrize("source", sorted(ATTACKS))
def test_attacks_through_the_pool_are_refused_in_the_same_words(pool, source):
    job = pool.submit("attacker", source, Limits(seconds=1.0))
    assert job.wait(60)
    assert job.result.error is not None and ATTACKS[source] in job.result.error.message, job.result.error
    after = pool.submit("attacker", "print('next')", Limits())
    assert after.wait(60) and after.result.output == ["next"]  # the worker answers the next run as before
