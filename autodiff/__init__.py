"""A compact Python re-creation of the autodiff runtime of the Rust framework Burn.

from autodiff import Device, Tensor
ad = Device.numpy().autodiff()
x = Tensor.from_floats([1.0, 2.0], ad).require_grad()
grads = ((x * x) + x * 3.0).sum().backward()
x.grad(grads).tolist()  # [5.0, 7.0]
"""

from .device import Device, Distribution
from .errors import (
    AutodiffError,
    BackendUnavailableError,
    DeviceMismatchError,
    DTypeError,
    IndexOutOfBoundsError,
    MemoryBudgetError,
    NonFiniteError,
    NonLeafRequireGradError,
    ShapeMismatchError,
    TapeConsumedError,
    UnsupportedOperationError,
    UntrackedBackwardError,
)
from .grads import Gradients
from .graph import NodeId, Requirement
from .memory import MemoryBudget, MemoryUsage, memory_budget
from .server import AutodiffServer
from .snapshot import GraphSnapshot, NodeSnapshot, NodeStatus
from .structure import GroupFrame, GroupPath, scope
from .tensor import Tensor
from .trace import BackwardRecorder

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "AutodiffError",
    "AutodiffServer",
    "BackendUnavailableError",
    "BackwardRecorder",
    "DTypeError",
    "Device",
    "DeviceMismatchError",
    "Distribution",
    "Gradients",
    "IndexOutOfBoundsError",
    "GraphSnapshot",
    "GroupFrame",
    "GroupPath",
    "MemoryBudget",
    "MemoryBudgetError",
    "MemoryUsage",
    "NodeId",
    "NodeSnapshot",
    "NodeStatus",
    "NonFiniteError",
    "NonLeafRequireGradError",
    "Requirement",
    "ShapeMismatchError",
    "TapeConsumedError",
    "Tensor",
    "UnsupportedOperationError",
    "UntrackedBackwardError",
    "memory_budget",
    "scope",
]
