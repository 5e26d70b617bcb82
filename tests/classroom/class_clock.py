"""Time that moves only when a test says so (the rooms' clock is injectable)."""


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
