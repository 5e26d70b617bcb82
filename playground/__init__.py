"""The Playground: a small, safe, Python-like language over the engine's API, for programs typed in class."""

from .interpreter import Limits, PlaygroundError, RunResult, run_program

__all__ = ["Limits", "PlaygroundError", "RunResult", "run_program"]
