"""Write torch_reference.json: PyTorch's outputs and gradients, in float64, for every case of op_cases.py.

Run with an environment that has torch and numpy (not needed by the tests):
    PYTHONPATH=. python tests/engine/make_torch_reference.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from op_cases import CASES, random_inputs, weights_for

OUT = Path(__file__).resolve().parent / "torch_reference.json"


def torch_values(case, arrays: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out = case.torch(torch, *leaves)
    (out * torch.tensor(weights_for(tuple(out.shape)))).sum().backward()
    return out.detach().numpy(), [leaf.grad.numpy() for leaf in leaves]


def main() -> None:
    cases = {}
    for case in CASES:
        arrays = random_inputs(case)
        out, grads = torch_values(case, arrays)
        cases[case.name] = {
            "inputs": [a.tolist() for a in arrays],
            "output": out.tolist(),
            "grads": [g.tolist() for g in grads],
        }
    OUT.write_text(json.dumps({"torch": torch.__version__, "dtype": "float64", "cases": cases}) + "\n")
    print(f"{len(cases)} cases from torch {torch.__version__} -> {OUT}")


if __name__ == "__main__":
    main()
