"""Explicit Butcher tableaux for the Munthe-Kaas Runge–Kutta solvers (:mod:`jaxse3.integrate.rkmk`).

A tableau ``(A, b, c)`` with ``A`` strictly lower triangular, optionally with embedded weights ``b_error`` (a
lower-order
solution used only for the error estimate). Coefficients are Python floats (static), so zero coefficients cost nothing.

References: Hairer, Nørsett & Wanner, *Solving ODEs I* (Euler, Heun, classical RK4, Dormand–Prince 5(4), Table II.5.2);
Bogacki & Shampine (1989), Appl. Math. Lett. 2:321 (the 3(2) pair).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

__all__ = ["ButcherTableau", "EULER", "HEUN", "RK4", "BOSH3", "DOPRI5"]


@dataclasses.dataclass(frozen=True)
class ButcherTableau:
    """An explicit Runge–Kutta tableau (hashable; used as a static field of the solvers).

    Args:
        a: ``s × s`` strictly lower-triangular matrix (rows of length s, or row ``i`` of length ``i``).
        b: the ``s`` weights of the propagated solution; they sum to 1.
        c: the ``s`` nodes, ``c_i = Σ_j a_ij`` (so ``c_1 = 0``).
        order: classical order of the propagated solution.
        b_error: optional embedded weights ``b̂`` (sum 1); the error estimate is ``h Σ (b_i − b̂_i) K_i``.
        name: label used in reprs and benchmark tables.

    Raises:
        ValueError: at construction, naming the offending argument, if the tableau is not explicit or not consistent.
    """

    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    c: tuple[float, ...]
    order: int
    b_error: tuple[float, ...] | None = None
    name: str = "custom"

    def __init__(
        self,
        a: Sequence[Sequence[float]],
        b: Sequence[float],
        c: Sequence[float],
        order: int,
        b_error: Sequence[float] | None = None,
        name: str = "custom",
    ):
        s = len(b)
        rows = [tuple(float(x) for x in row) for row in a]
        if len(rows) != s:
            raise ValueError(f"ButcherTableau: argument 'a' must have {s} rows (len(b)), got {len(rows)}")
        lower = []
        for i, row in enumerate(rows):
            if len(row) not in (i, s):
                raise ValueError(f"ButcherTableau: row {i} of 'a' must have length {i} or {s}, got {len(row)}")
            if any(x != 0.0 for x in row[i:]):
                raise ValueError(
                    f"ButcherTableau: argument 'a' must be strictly lower triangular (explicit); row {i} is {row}"
                )
            lower.append(row[:i])
        if len(c) != s:
            raise ValueError(f"ButcherTableau: argument 'c' must have length {s}, got {len(c)}")
        for i, (ci, row) in enumerate(zip(c, lower)):
            if abs(float(ci) - sum(row)) > 1e-12:
                raise ValueError(
                    f"ButcherTableau: argument 'c' must satisfy c_i = Σ_j a_ij; c[{i}] = {ci}, Σ = {sum(row)}"
                )
        if abs(sum(b) - 1.0) > 1e-12:
            raise ValueError(f"ButcherTableau: argument 'b' must sum to 1, got {sum(b)}")
        if b_error is not None:
            if len(b_error) != s:
                raise ValueError(f"ButcherTableau: argument 'b_error' must have length {s}, got {len(b_error)}")
            if abs(sum(b_error) - 1.0) > 1e-12:
                raise ValueError(f"ButcherTableau: argument 'b_error' must sum to 1, got {sum(b_error)}")
            b_error = tuple(float(x) for x in b_error)
        if int(order) < 1:
            raise ValueError(f"ButcherTableau: argument 'order' must be a positive integer, got {order}")
        object.__setattr__(self, "a", tuple(lower))
        object.__setattr__(self, "b", tuple(float(x) for x in b))
        object.__setattr__(self, "c", tuple(float(x) for x in c))
        object.__setattr__(self, "order", int(order))
        object.__setattr__(self, "b_error", b_error)
        object.__setattr__(self, "name", str(name))

    @property
    def stages(self) -> int:
        return len(self.b)

    @property
    def fsal(self) -> bool:
        """First-same-as-last: the last stage is evaluated at the new solution (its row of ``a`` equals ``b``)."""
        return self.stages > 1 and self.c[-1] == 1.0 and self.a[-1] == self.b[:-1] and self.b[-1] == 0.0


EULER = ButcherTableau(a=[[]], b=[1.0], c=[0.0], order=1, name="euler")
HEUN = ButcherTableau(a=[[], [1.0]], b=[0.5, 0.5], c=[0.0, 1.0], order=2, name="heun")
RK4 = ButcherTableau(
    a=[[], [0.5], [0.0, 0.5], [0.0, 0.0, 1.0]],
    b=[1 / 6, 1 / 3, 1 / 3, 1 / 6],
    c=[0.0, 0.5, 0.5, 1.0],
    order=4,
    name="rk4",
)
BOSH3 = ButcherTableau(
    a=[[], [1 / 2], [0.0, 3 / 4], [2 / 9, 1 / 3, 4 / 9]],
    b=[2 / 9, 1 / 3, 4 / 9, 0.0],
    c=[0.0, 1 / 2, 3 / 4, 1.0],
    order=3,
    b_error=[7 / 24, 1 / 4, 1 / 3, 1 / 8],
    name="bosh3",
)
DOPRI5 = ButcherTableau(
    a=[
        [],
        [1 / 5],
        [3 / 40, 9 / 40],
        [44 / 45, -56 / 15, 32 / 9],
        [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
        [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
        [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
    ],
    b=[35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0],
    c=[0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0],
    order=5,
    b_error=[5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40],
    name="dopri5",
)
