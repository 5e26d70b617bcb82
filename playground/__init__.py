"""The Playground: a small, safe, Python-like language over the engine's API, for programs typed in class."""

from .interpreter import SECONDS_ENV, Limits, PlaygroundError, RunResult, run_program, served_limits

__all__ = ["SECONDS_ENV", "Limits", "PlaygroundError", "RunResult", "run_program", "served_limits"]
