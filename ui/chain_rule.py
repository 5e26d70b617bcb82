# TEMPORARY local placeholder until branch `card` lands (not committed)
from typing import Any, TypedDict


class StepCard(TypedDict):
    node: int


class GradientSum(TypedDict):
    node: int


def step_cards(before: Any, recorder: Any, names: Any) -> dict[int, StepCard]:
    return {}


def gradient_sums(before: Any, recorder: Any, names: Any) -> dict[int, GradientSum]:
    return {}
