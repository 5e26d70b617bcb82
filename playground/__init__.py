"""The Playground: the Python students write, run in a sandbox (RestrictedPython's guards, in a worker process), on
the engine's API."""

from .results import SECONDS_ENV, Limits, PlaygroundError, RunResult, served_limits
from .sandbox import run_program

__all__ = ["SECONDS_ENV", "Limits", "PlaygroundError", "RunResult", "run_program", "served_limits"]
