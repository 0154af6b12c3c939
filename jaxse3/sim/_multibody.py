"""Fixed-step Munthe-Kaas runs of an absolute-coordinate multibody system (seed 004 §4–§5), as a :class:`Trajectory`.

:func:`simulate_multibody` runs ``diffrax.diffeqsolve`` with a Munthe-Kaas solver of :mod:`jaxse3.integrate.rkmk` in
its body form (``side="body"``: the scheme (37) of seed 004 with ``dexp⁻¹`` at ``−Ψ``) on the Lie-group state of a
:class:`~jaxse3.rigid.absolute.MultibodySystem` and returns the saved samples as the package's one trajectory type,
with the quantities the paper plots (the position violation of every joint and the total energy) as its monitors.
The model (:mod:`jaxse3.rigid.absolute`) only provides the vector field and the monitors; the run is driven here.
"""

from __future__ import annotations

import math

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike

from jaxse3.integrate.group_state import LieODETerm
from jaxse3.integrate.rkmk import RKMK, RKMK4
from jaxse3.rigid.absolute.system import MultibodySystem, State
from jaxse3.sim.trajectory import Trajectory

__all__ = ["simulate_multibody"]

_WHO = "simulate_multibody"


def _number(x) -> bool:
    """True for a Python (or numpy scalar) real number; False for arrays, traced or not."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def simulate_multibody(
    system: MultibodySystem,
    y0: State,
    t_final: ArrayLike,
    dt: ArrayLike,
    solver: RKMK | None = None,
    n_save: int = 101,
    max_steps: int | None = None,
    *,
    throw: bool = True,
) -> Trajectory:
    """Integrate ``system`` from ``y0`` over ``[0, t_final]`` with constant steps ``dt`` and save ``n_save`` samples.

    Jit-able, vmap-able and differentiable (reverse mode through ``diffeqsolve``'s default adjoint).

    Args:
        system: the multibody system (:class:`jaxse3.rigid.absolute.MultibodySystem`).
        y0: initial state pytree (consistent with the constraints; see :mod:`jaxse3.rigid.absolute.examples` and
            :meth:`MultibodySystem.state <jaxse3.rigid.absolute.MultibodySystem.state>`).
        t_final: final time [s]; a number, or an array when ``max_steps`` is given.
        dt: step size [s]; may be an array, also traced (one compilation serves several step sizes), given
            ``max_steps``.
        solver: an RKMK solver (:mod:`jaxse3.integrate.rkmk`) with ``side="body"``; default
            ``RKMK4(coordinates="exp", side="body")``.
        n_save: number of equally spaced samples, ``0`` and ``t_final`` included (static, at least 2).
        max_steps: step budget (static); default ``ceil(t_final/dt) + 1`` when both are numbers.
        throw: raise if the solver fails (diffrax's error); otherwise return the trajectory with its ``result``
            code and NaN in the samples the solver did not reach.

    Returns:
        A :class:`~jaxse3.sim.Trajectory` with, for ``n = n_save`` samples of ``b`` bodies and ``k`` joints:
        ``q`` ``(n, b, 4, 4)`` the body poses ``[[R, r], [0, 1]]`` (:meth:`MultibodySystem.poses`), ``qd``
        ``(n, b, 6)`` the body velocities ``(ω, v)`` in each body's own convention (the left-trivialised velocity of
        its group: the body twist in SE(3), ``(ω, ṙ)`` in SO(3)×R³), ``u`` ``(n, 0)``, ``points`` ``(n, b, 3)`` the
        centres of mass, ``tip`` the last body's, and ``monitors`` ``{"energy": (n,) [J], "joint_violations": (n, k)
        ‖g‖ per joint [m]}``. ``system.state_from_poses(traj.q[i], traj.qd[i])`` rebuilds sample ``i``'s state
        pytree bit for bit.

    Raises:
        ValueError: naming the argument: ``system`` not a MultibodySystem, ``y0`` not of its state layout, ``solver``
            not an RKMK solver in body form, ``t_final``/``dt`` not positive, ``n_save`` below 2, ``max_steps`` missing
            (``dt`` or ``t_final`` an array) or too small.
    """
    if not isinstance(system, MultibodySystem):
        raise ValueError(
            f"{_WHO}: argument 'system' must be a jaxse3.rigid.absolute.MultibodySystem, got {type(system).__name__}"
        )
    try:
        system.check_state(y0)
    except ValueError as e:
        raise ValueError(f"{_WHO}: argument 'y0': {e}") from None
    solver = RKMK4(coordinates="exp", side="body") if solver is None else solver
    if not isinstance(solver, RKMK) or solver.side != "body":
        got = type(solver).__name__ + (f" with side={solver.side!r}" if isinstance(solver, RKMK) else "")
        raise ValueError(
            f"{_WHO}: argument 'solver' must be an RKMK solver with side='body' (seed 004 eq. (37)), got {got}"
        )
    for name, v in (("t_final", t_final), ("dt", dt)):
        if _number(v) and not (math.isfinite(v) and v > 0):
            raise ValueError(f"{_WHO}: argument '{name}' must be a positive finite number, got {v!r}")
    if not isinstance(n_save, (int, np.integer)) or isinstance(n_save, bool) or n_save < 2:
        raise ValueError(f"{_WHO}: argument 'n_save' must be an integer >= 2 (0 and t_final are saved), got {n_save!r}")
    needed = math.ceil(t_final / dt - 1e-9) + 1 if _number(t_final) and _number(dt) else None
    if max_steps is None:
        if needed is None:
            raise ValueError(f"{_WHO}: pass max_steps when dt or t_final is an array")
        max_steps = needed
    elif not isinstance(max_steps, (int, np.integer)) or isinstance(max_steps, bool) or max_steps < 1:
        raise ValueError(f"{_WHO}: argument 'max_steps' must be a positive integer, got {max_steps!r}")
    elif needed is not None and max_steps < needed - 1:
        raise ValueError(f"{_WHO}: argument 'max_steps' = {max_steps} is below the {needed - 1} steps of t_final/dt")

    ts = jnp.linspace(0.0, t_final, n_save)
    sol = diffrax.diffeqsolve(
        LieODETerm(system.vector_field),
        solver,
        0.0,
        t_final,
        dt,
        y0,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.ConstantStepSize(),
        max_steps=max_steps,
        throw=throw,
    )
    ys = sol.ys
    q = jax.vmap(system.poses)(ys)
    qd = jax.vmap(lambda y: system.unpack(y)[2])(ys)
    monitors = {"energy": jax.vmap(system.energy)(ys), "joint_violations": jax.vmap(system.joint_violations)(ys)}
    if not throw:  # diffrax fills the samples after a failure with inf; a Trajectory has NaN there
        reached = jnp.isfinite(sol.ts)
        nan = lambda x: jnp.where(reached.reshape(-1, *(1,) * (x.ndim - 1)), x, jnp.nan)
        q, qd, monitors = nan(q), nan(qd), jax.tree.map(nan, monitors)
    points = q[:, :, :3, 3]
    return Trajectory(
        t=ts,
        q=q,
        qd=qd,
        u=jnp.zeros((n_save, 0), q.dtype),
        points=points,
        tip=points[:, -1],
        num_steps=sol.stats["num_steps"],
        result=jnp.asarray(sol.result._value, jnp.int32),
        monitors=monitors,
    )
