"""Fixed-step Munthe-Kaas integration of an absolute-coordinate system with diffrax, and its monitors (seed 004 §4–§5).

One call of :func:`simulate` runs ``diffrax.diffeqsolve`` with a Munthe-Kaas solver of :mod:`jaxse3.integrate.rkmk` in
its body form (``side="body"``: the scheme (37) of seed 004 with ``dexp⁻¹`` at ``−Ψ``) and returns the saved states
with the quantities the paper plots: the position violation of every joint and the total energy.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import diffrax
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from jaxse3.integrate.group_state import LieODETerm
from jaxse3.integrate.rkmk import RKMK, RKMK4
from jaxse3.rigid.absolute.system import MultibodySystem, State


class Trajectory(NamedTuple):
    """Saved states of a run and their monitors.

    Attributes:
        ts: ``(T,)`` save times [s].
        ys: the state pytree with a leading time axis.
        violations: ``(T, k)`` position violation ``‖g‖`` of every joint [m].
        energy: ``(T,)`` total energy [J].
    """

    ts: Float[Array, " T"]
    ys: State
    violations: Float[Array, "T k"]
    energy: Float[Array, " T"]


def simulate(
    system: MultibodySystem,
    y0: State,
    t1: float,
    dt: ArrayLike,
    solver: RKMK | None = None,
    n_save: int = 101,
    max_steps: int | None = None,
) -> Trajectory:
    """Integrate ``system`` from ``y0`` over ``[0, t1]`` with constant steps ``dt`` and save ``n_save`` states.

    Args:
        system: the multibody system.
        y0: initial state (consistent with the constraints; see :mod:`jaxse3.rigid.absolute.examples`).
        t1: final time [s] (static).
        dt: step size [s]; may be traced (one compilation serves several step sizes given ``max_steps``).
        solver: an RKMK solver with ``side="body"``; default ``RKMK4(coordinates="exp", side="body")``.
        n_save: number of equally spaced save times, ``0`` and ``t1`` included (static).
        max_steps: step budget (static); default ``ceil(t1/dt) + 1`` when ``dt`` is a Python number.

    Raises:
        ValueError: if the solver is not in body form, or ``max_steps`` is needed but missing.
    """
    solver = RKMK4(coordinates="exp", side="body") if solver is None else solver
    if getattr(solver, "side", None) != "body":
        raise ValueError("simulate: the solver must be an RKMK solver with side='body' (seed 004 eq. (37))")
    if max_steps is None:
        if not isinstance(dt, (int, float)):
            raise ValueError("simulate: pass max_steps when dt is an array")
        max_steps = math.ceil(t1 / dt - 1e-9) + 1
    ts = jnp.linspace(0.0, t1, n_save)
    sol = diffrax.diffeqsolve(
        LieODETerm(system.vector_field),
        solver,
        0.0,
        t1,
        dt,
        y0,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.ConstantStepSize(),
        max_steps=max_steps,
    )
    violations = jax.vmap(system.joint_violations)(sol.ys)
    energy = jax.vmap(system.energy)(sol.ys)
    return Trajectory(sol.ts, sol.ys, violations, energy)
