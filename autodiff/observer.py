"""The one interface through which anything watches the runtime: a class of hooks that do nothing.

An observer that watches nothing is this class itself (`NO_OBSERVER`). The runtime's hot paths (every buffer
made and freed, every op registered, every step run) ask first whether anything watches, by identity or a flag
(`MemoryPool.watched`): a check costs less than a call that does nothing. Three kinds watch, each overriding the
hooks it needs:
- a backward's recorder (`trace.BackwardRecorder`), passed to `backward(recorder=...)`: the tape, each
  step, each gradient registered and consumed, what each step freed, the sweep;
- a device's memory history (`memory_history.MemoryHistory`), set on its memory pool: every allocation
  and release, and what each buffer is (a leaf, an op's output, what a step saved, a gradient);
- a device's pictures (`snapshot.Pictures`, with `keep_values=True`): each node's value and what made it.

This module is the lowest layer of the engine, so it names the engine's objects (buffers, steps, pools)
without importing their types: each hook's parameters say what they are, and each observer types them.
"""

from __future__ import annotations

from typing import Any

from .ids import NodeId


class Observer:
    # -- the memory pool ------------------------------------------------------------------------------
    def allocated(self, owner: Any, nbytes: int) -> None:
        """A buffer (`owner`) of `nbytes` was allocated."""

    def released(self, owner: Any, nbytes: int) -> None:
        """A buffer's last reference went: its bytes are back."""

    # -- the server: what each buffer is ----------------------------------------------------------------
    def leaf(self, buffer: Any, node_id: NodeId, op: str) -> None:
        """A leaf's buffer (from data, random, zeros, detach) and its node."""

    def parameter(self, node_id: NodeId) -> None:
        """require_grad() made a leaf a parameter."""

    def registered(self, buffer: Any, step: Any, checkpoints: Any) -> None:
        """An op's output buffer and its `Step` (what it saved); `checkpoints` maps node ids to kept buffers."""

    def gradient(self, buffer: Any, node_id: NodeId) -> None:
        """A buffer became the gradient entry of a node."""

    # -- memory management: the nodes it remembers --------------------------------------------------------
    def tracked(self, node_id: NodeId, buffer: Any) -> None:
        """A node (leaf or op output) is remembered, with its forward value `buffer`."""

    def forgotten(self, node_id: NodeId) -> None:
        """A node's record is forgotten: nothing is left to show of it."""

    # -- one backward ----------------------------------------------------------------------------------
    def tape_built(self, root: NodeId, tape: Any) -> None:
        """The tape: the steps to run, bucketed by order (`tape[order]`)."""

    def step_started(self, step: Any) -> None:
        """A step starts: it consumes its node's gradient and sends one to each tracked parent."""

    def recomputed(self, node_id: NodeId, op: str) -> None:
        """Balanced checkpointing recomputed a node's output."""

    def gradient_registered(self, node_id: NodeId, source: NodeId | None, grad: Any, total: Any) -> None:
        """`grad` was added to a node's entry, which is now `total`; `source` is the step that sent it."""

    def gradient_consumed(self, node_id: NodeId, kept: bool) -> None:
        """A step consumed its node's gradient: removed, or `kept` for a `Grad` leaf."""

    def saved_state_freed(self, step: Any, bytes_before: int, pool: Any) -> None:
        """A step ran and what it saved was freed; `bytes_before` is what the pool held before."""

    def swept(self, node_ids: tuple[NodeId, ...], bytes_released: int) -> None:
        """The cleanup after a backward freed these pending steps without running them."""

    def backward_finished(self, pool: Any, gradient_ids: tuple[NodeId, ...]) -> None:
        """A backward ended with these gradient entries."""


NO_OBSERVER = Observer()
