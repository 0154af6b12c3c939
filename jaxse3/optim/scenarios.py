"""Ready-made trajectory optimisation problems.

**CDM reaching** (:func:`cdm_reach`): the seed 003 cable-driven manipulator (:func:`jaxse3.sim.scenarios.cdm_system`,
hanging along −z, tip at (0, 0, −0.5) m at rest) starts at rest and must bring its tip to a target point at
``t_final`` (default 2 s) and arrive slowly. The paper poses no control problem, so the costs and limits are our
documented choice:

    J = ∫₀ᵀ w_u ½‖u‖² dt + w_T ½‖tip(T) − target‖² + w_v ½‖q̇(T)‖²,     0 ≤ u ≤ u_max,

with w_u = 1e−4 N⁻² s⁻¹ (effort), w_T = 1e3 m⁻² (1 cm of error costs 0.05), w_v = 1e−2 (the strain rates at the end),
u_max = 20 N (the peak tension of the default CDM scenario), tensions piecewise linear in ``n_knots`` = 6 knots per
cable, Newmark-β at the paper's 2 ms (a fixed-step map, smooth in the knots).
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import ArrayLike, Float

from jaxse3.optim.costs import effort
from jaxse3.optim.problem import Problem
from jaxse3.sim.scenarios import cdm_system

__all__ = ["cdm_reach", "CDM_REACH_WEIGHTS"]

#: (effort, terminal tip error, terminal strain rates) weights of :func:`cdm_reach`
CDM_REACH_WEIGHTS = (1e-4, 1e3, 1e-2)


class _Effort:
    """w ½‖u‖² (a named class, so that equal problems share their compiled programs)."""

    def __init__(self, weight: float):
        self.weight = weight

    def __call__(self, t, q, qd, u):
        return self.weight * effort(u)

    def __eq__(self, other):
        return isinstance(other, _Effort) and other.weight == self.weight

    def __hash__(self):
        return hash((_Effort, self.weight))


class _Arrive:
    """w_T ½‖tip(q) − target‖² + w_v ½‖q̇‖² at the end."""

    def __init__(self, system, target: tuple[float, ...], w_tip: float, w_rate: float):
        self.system, self.target, self.w_tip, self.w_rate = system, target, w_tip, w_rate

    def __call__(self, q, qd):
        e = self.system.tip(q) - jnp.asarray(self.target)
        return 0.5 * self.w_tip * jnp.sum(e * e) + 0.5 * self.w_rate * jnp.sum(qd * qd)

    def _key(self):
        return (self.target, self.w_tip, self.w_rate)

    def __eq__(self, other):
        return isinstance(other, _Arrive) and other._key() == self._key()

    def __hash__(self):
        return hash((_Arrive, self._key()))


def cdm_reach(
    target: Float[ArrayLike, "3"] = (0.1, 0.05, -0.45),
    t_final: float = 2.0,
    n_knots: int = 6,
    max_tension: float = 20.0,
    dt: float = 2e-3,
) -> Problem:
    """The CDM reaching problem (module docstring): tip to ``target`` (m, world) at ``t_final`` from rest."""
    target = tuple(float(x) for x in jnp.asarray(target, dtype=float).reshape(-1))
    if len(target) != 3:
        raise ValueError(f"cdm_reach: target must be a point (3,), got {len(target)} values")
    system = cdm_system()
    w_u, w_T, w_v = CDM_REACH_WEIGHTS
    return Problem(
        system,
        t_final,
        running=_Effort(w_u),
        terminal=_Arrive(system, target, w_T, w_v),
        n_knots=n_knots,
        kind="linear",
        lower=0.0,
        upper=max_tension,
        n_save=max(round(t_final / 0.02), 1) + 1,
        simulation=dict(solver="newmark", dt=dt),
    )
