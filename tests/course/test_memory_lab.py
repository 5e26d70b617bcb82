"""The Memory growth lab keeps time: one forward pass per tick, a late tick catching up (bounded)."""

from __future__ import annotations

from course.labs import MemoryLab


def test_catch_up_runs_the_passes_due_on_the_clock():
    lab = MemoryLab(16, 10, autodiff=True)
    lab.catch_up(elapsed=0.05, tick=0.3)
    assert lab.done == 1  # a tick always runs one pass, even early (AppTest's runs, a fast machine)
    lab.catch_up(elapsed=0.95, tick=0.3)
    assert lab.done == 3  # late: the passes due by now (3 ticks), not one
    lab.catch_up(elapsed=3.0, tick=0.3)
    assert lab.done == 7  # far behind: at most four at once, so one tick's work stays bounded
    lab.catch_up(elapsed=30.0, tick=0.3)
    lab.catch_up(elapsed=31.0, tick=0.3)
    lab.catch_up(elapsed=32.0, tick=0.3)
    assert lab.done == 10 and lab.finished  # never past the passes asked for
    assert [p.iteration for p in lab.history] == list(range(11))  # every pass is drawn, none skipped
