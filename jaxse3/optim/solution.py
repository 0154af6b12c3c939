"""The result of a trajectory optimisation: :class:`Solution`, saved to and loaded from ``.npz``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from jaxse3.sim.trajectory import _npz, read_metadata, write_npz

__all__ = ["Solution"]

#: units and meaning of the saved fields
UNITS = {
    "values": "the decision variables: control knots (n_knots, n_inputs), in the inputs' units",
    "t": "s, the sample times (T + 1,)",
    "u": "the controls at the first T sample times (T, n_inputs): zero-order hold of the optimised inputs",
    "x": "the states (q, q̇) at the T + 1 sample times (T + 1, 2 n_dof)",
    "tip": "m (world), the tip at the sample times (T + 1, 3)",
    "cost_history": "the cost J at each iterate (iterations + 1,)",
    "gradient_history": (
        "the stationarity measure at each iterate (iterations + 1,): the projected gradient's ∞-norm (shooting), "
        "Σ‖Q_u‖² of the backward pass (DDP)"
    ),
    "iterations": "count",
    "converged": "bool",
}


@dataclass(frozen=True)
class Solution:
    """An optimised trajectory and how it was reached.

    Attributes:
        values: the best decision variables (control knots); the last finite iterate if the solver stopped early.
        t, u, x, tip: its motion sampled at T + 1 times: ``u`` (T, n_inputs), ``x = (q, q̇)`` (T + 1, 2 n_dof), so a
            result can be replayed in another simulator.
        cost_history, gradient_history: J and the projected gradient's ∞-norm at every iterate (the initial guess
            first).
        iterations: the number of updates made.
        converged: whether the stopping test passed (``message`` says why the solver stopped).
        message: the reason it stopped.
    """

    values: np.ndarray
    t: np.ndarray
    u: np.ndarray
    x: np.ndarray
    tip: np.ndarray
    cost_history: np.ndarray
    gradient_history: np.ndarray
    iterations: int
    converged: bool
    message: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def cost(self) -> float:
        """J at ``values``."""
        return float(self.cost_history[-1])

    def save(self, path: str | os.PathLike, metadata: dict[str, Any] | None = None) -> str:
        """Write the solution to ``path`` (``.npz`` appended if missing; plain numpy arrays, atomically) with the
        units, the message, ``info`` and ``metadata`` (JSON-serialisable). Returns the path written."""
        arrays = {f.name: np.asarray(getattr(self, f.name)) for f in fields(self) if f.name not in ("message", "info")}
        meta = {"units": UNITS, "message": self.message, "info": self.info, **(metadata or {})}
        return write_npz(path, arrays, meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Solution":
        """Read a file written by :meth:`save`."""
        with np.load(_npz(path)) as data:
            arrays = {k: np.asarray(v) for k, v in data.items() if k != "metadata"}
        meta = read_metadata(path)
        missing = {f.name for f in fields(cls)} - set(arrays) - {"message", "info"}
        if missing:
            raise ValueError(f"Solution.load: {path} lacks the fields {sorted(missing)}")
        arrays["iterations"], arrays["converged"] = int(arrays["iterations"]), bool(arrays["converged"])
        return cls(**arrays, message=meta.get("message", ""), info=meta.get("info", {}))
