"""Peak memory and time of the MLP program (and a larger elementwise chain) with and without
balanced checkpointing, and under each memory policy, side by side in one run.

Run: python bench/memory.py
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import best_of

from autodiff import BackwardRecorder, Device
from autodiff.trace import BackwardFinished
from course.programs import CHECKPOINTING_PROGRAMS

CONFIGURATIONS = [
    ("Burn policy, no checkpointing", "lazy", "none"),
    ("Burn policy, balanced checkpointing", "lazy", "balanced"),
    ("PyTorch policy (eager)", "eager", "none"),
]


def measure(key: str, policy: str, checkpointing: str) -> tuple[int, int, float]:
    """(bytes held when backward starts, peak bytes during backward, seconds for forward+backward)."""

    def once() -> tuple[int, int]:
        ad = Device.numpy(seed=0).autodiff(memory_policy=policy, checkpointing=checkpointing)
        tensors = CHECKPOINTING_PROGRAMS[key].build(ad)
        before = ad.memory_usage().bytes_in_use
        recorder = BackwardRecorder()
        tensors["loss"].backward(recorder=recorder)
        finished = next(e for e in recorder.events if isinstance(e, BackwardFinished))
        return before, finished.peak_bytes

    before, peak = once()
    seconds = best_of(once, repeat=5, number=3)
    return before, peak, seconds


def main() -> None:
    print(f"# {time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}")
    for key in ("mlp", "chain"):
        print(f"{CHECKPOINTING_PROGRAMS[key].title}:")
        for label, policy, checkpointing in CONFIGURATIONS:
            before, peak, seconds = measure(key, policy, checkpointing)
            print(
                f"  {label:<38} held at backward {before / 1024:9.1f} KiB, peak {peak / 1024:9.1f} KiB, "
                f"forward+backward {seconds * 1e3:7.2f} ms"
            )


if __name__ == "__main__":
    main()
