"""Write a device's memory history as a file PyTorch's memory_viz opens: drag it onto https://pytorch.org/memory_viz
(its Active Memory Timeline draws one band per buffer, coloured by category)."""

from __future__ import annotations

import pickle
from pathlib import Path

from .device import Device

# memory_viz's reader (pickle parsed in JavaScript) knows protocols up to 4; Python 3.14 writes 5 by default
PROTOCOL = 4


def dump_snapshot(device: Device, path: str | Path) -> None:
    """Pickle `device.memory_snapshot()` to `path` (as PyTorch's `torch.cuda.memory._dump_snapshot`)."""
    with open(path, "wb") as file:
        pickle.dump(device.memory_snapshot(), file, protocol=PROTOCOL)


def snapshot_bytes(device: Device) -> bytes:
    """The same file's bytes, for a download button."""
    return pickle.dumps(device.memory_snapshot(), protocol=PROTOCOL)
