"""Devices: an inner device that computes, and autodiff devices that wrap it with a server."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import ClassVar

from .backends.base import Backend
from .backends.numpy_backend import NumpyBackend
from .checkpointing import STRATEGIES
from .errors import BackendUnavailableError, NonFiniteError, UnsupportedOperationError
from .ids import NodeId
from .memory import MemoryUsage
from .memory_history import MemoryHistory
from .memory_management import POLICIES
from .observer import NO_OBSERVER
from .server import AutodiffServer
from .snapshot import WHOLE_VALUE, GraphNode, GraphSnapshot, Pictures, graph_of, snapshot


@dataclass(frozen=True)
class Distribution:
    """How `Tensor.random` draws values. `Distribution.Default` is uniform on [0, 1), as in Burn."""

    kind: str
    a: float
    b: float
    Default: ClassVar[Distribution]  # uniform on [0, 1), set below

    @staticmethod
    def uniform(low: float, high: float) -> Distribution:
        return Distribution("uniform", *_finite("uniform", low, high))

    @staticmethod
    def normal(mean: float, std: float) -> Distribution:
        return Distribution("normal", *_finite("normal", mean, std))


def _finite(kind: str, a: object, b: object) -> tuple[float, float]:
    """Both parameters as floats, or `NonFiniteError` saying what the distribution needs (a NaN or infinite bound
    draws NaN everywhere)."""
    values = []
    for value in (a, b):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise NonFiniteError(
                f"Distribution.{kind} needs two finite numbers, like Distribution.{kind}(0.0, 1.0); got {value!r}."
            )
        values.append(float(value))
    return values[0], values[1]


Distribution.Default = Distribution.uniform(0.0, 1.0)


class Device:
    """A compute device. `Device.numpy()` makes a new inner device with its own memory pool;
    `device.autodiff()` makes an autodiff device on top of it, with its own `AutodiffServer`
    and sharing the inner device's pool (so memory is measured the same way with or without
    autodiff)."""

    def __init__(self, backend: Backend, inner: Device | None = None, server: AutodiffServer | None = None) -> None:
        self.backend = backend
        self.inner: Device = inner if inner is not None else self
        self.server = server  # an autodiff device's (None for an inner device)

    @classmethod
    def numpy(cls, seed: int | None = 0) -> Device:
        return cls(NumpyBackend(seed))

    @classmethod
    def mlx(cls, seed: int | None = 0) -> Device:
        """An MLX device (Metal on Apple silicon, CPU elsewhere); every op is evaluated eagerly."""
        reason = mlx_unavailable_reason()
        if reason:
            raise BackendUnavailableError(reason)
        from .backends.mlx_backend import MlxBackend

        return cls(MlxBackend(seed))

    @classmethod
    def named(cls, backend: str, seed: int | None = 0) -> Device:
        """`Device.named("numpy")` or `Device.named("mlx")`."""
        if backend not in BACKENDS:
            raise UnsupportedOperationError(f"Unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}.")
        return cls.numpy(seed) if backend == "numpy" else cls.mlx(seed)

    def autodiff(
        self,
        memory_policy: str = "lazy",
        checkpointing: str = "none",
        keep_values: bool = False,
        whole_values: int = WHOLE_VALUE,
    ) -> Device:
        """An autodiff device on this one. `memory_policy="lazy"` is Burn's: a graph dropped without a
        backward keeps its memory until the next backward's sweep. `"eager"` is PyTorch's: a graph is
        freed as soon as no tensor references it, and `backward(retain_graph=True)` is allowed.
        `checkpointing="balanced"` is Burn's `BalancedCheckpointing`: elementwise ops keep a recipe
        instead of their outputs, which backward recomputes from the nearest kept ancestors.
        `keep_values=True` keeps each node's forward value (whole when small, else its shape and
        min/mean/max) so that `snapshot()` can show it, and records what made each node (its `group`: the loops
        and iterations, the user's functions on the call stack and the `autodiff.scope` blocks it was made in,
        see `autodiff.structure`): for pictures, at the price of a copy and a walk of the call stack per op.
        Without it neither is done. `whole_values` is how many numbers a value may have and still be kept whole
        (a live picture of a small network keeps its activations whole)."""
        if self.is_autodiff:
            raise UnsupportedOperationError("This device already has autodiff; call autodiff() on its inner device.")
        if memory_policy not in POLICIES:
            raise UnsupportedOperationError(
                f"Unknown memory policy {memory_policy!r}: use 'lazy' (Burn) or 'eager' (PyTorch)."
            )
        if checkpointing not in STRATEGIES:
            raise UnsupportedOperationError(
                f"Unknown checkpointing {checkpointing!r}: use 'none' (the default) or 'balanced'."
            )
        server = AutodiffServer(self.backend.pool, POLICIES[memory_policy](), STRATEGIES[checkpointing]())
        if keep_values:
            server.memory.observer = Pictures(whole_values)
        return Device(self.backend, inner=self, server=server)

    @property
    def is_autodiff(self) -> bool:
        return self.server is not None

    @property
    def name(self) -> str:
        if self.server is None:
            return self.backend.name
        notes = [n for n in (self.server.policy.name, self.server.strategy.name) if n not in ("lazy", "none")]
        return f"{self.backend.name}+autodiff" + (f" ({', '.join(notes)})" if notes else "")

    def memory_usage(self) -> MemoryUsage:
        return self.backend.pool.usage()

    def record_memory_history(self, enabled: bool = True, max_entries: int = 100_000) -> None:
        """Start recording every buffer this device allocates and releases, keeping the newest `max_entries`
        (as PyTorch's `torch.cuda.memory._record_memory_history`); a recording already running starts over.
        `enabled=False` stops and forgets it. The device and its autodiff devices share one recording."""
        pool = self.backend.pool
        pool.observer = MemoryHistory(max_entries, pool.bytes_in_use) if enabled else NO_OBSERVER

    @property
    def memory_history(self) -> MemoryHistory | None:
        """The recording (its entries, typed), or None when none runs."""
        observer = self.backend.pool.observer
        return observer if isinstance(observer, MemoryHistory) else None

    def memory_snapshot(self) -> dict[str, object]:
        """The recording as a plain dict in PyTorch memory_viz's snapshot format (`segments`, `device_traces`);
        `autodiff.memory_viz.dump_snapshot` writes it to a file memory_viz opens."""
        history = self.memory_history
        if history is None:
            raise UnsupportedOperationError(
                "No memory history is being recorded: call device.record_memory_history() first, then run the program."
            )
        return history.snapshot(self.backend.pool.bytes_in_use)

    def backend_memory(self) -> dict[str, int]:
        """The backend's own counters (MLX: active and peak bytes, process-wide); empty for numpy."""
        return self.backend.memory_counters()

    def snapshot(self) -> GraphSnapshot:
        return snapshot(self._server("a graph to snapshot"))

    def graph_of(self, root_id: NodeId) -> list[GraphNode]:
        """The nodes `root_id` was computed from, inputs first, enough to recompute them elsewhere (see
        `snapshot.graph_of`)."""
        return graph_of(self._server("a graph"), root_id)

    @property
    def nodes_created(self) -> int:
        """How many nodes this autodiff device's server has made (each op's output and each leaf one)."""
        return self._server("a graph").nodes_created

    def _server(self, what: str) -> AutodiffServer:
        if self.server is None:
            raise UnsupportedOperationError(f"Only an autodiff device has {what}: use device.autodiff().")
        return self.server

    def __repr__(self) -> str:
        return f"Device({self.name})"


BACKENDS = ("numpy", "mlx")


def mlx_unavailable_reason() -> str | None:
    """None when MLX can be used here, else a sentence saying why not."""
    try:
        import mlx.core  # noqa: F401
    except ImportError as error:
        return (
            f"MLX cannot be imported here ({error}). Install it with `pip install mlx` on Apple silicon "
            "or `pip install 'mlx[cpu]'` on Linux."
        )
    return None
