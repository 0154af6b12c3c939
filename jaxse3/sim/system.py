"""The mechanical system the simulation drivers act on, and the time-varying inputs that drive it.

A :class:`System` is the second-order model of seed 003 eq. (4), M(q) q̈ = τ(q, q̇, u) + F(q, q̇), given by

- its forward dynamics ``q̈ = FD(q, q̇, u)`` (eq. 7's FD; used by the diffrax ODE solvers), and
- its residual ``r(q, q̇, q̈, u) = τ(q, q̇, u) + F_ext − ID(q, q̇, q̈)`` (eq. 8; zero along a motion, used by Newmark-β,
  eq. 11, and by statics, eq. 13),

both written as plain functions of a parameter pytree (the rod model), so that a batch of systems of the same topology
is one pytree with leading axes and one compilation serves it (:mod:`jaxse3.sim.batch`). The functions' derivatives are
whatever ``jax.jvp`` finds: for a rod, the analytical ``custom_jvp`` rules of :mod:`jaxse3.rod`.
:func:`finite_difference`
swaps them for forward differences (seed 003 eq. (38), ε = 1e−6), the baseline of the paper's Table 3.

:func:`rod_system` wraps a :class:`jaxse3.rod.Rod` (with optional external loads, e.g. contact), :func:`rigid_system`
a :class:`jaxse3.rigid.Model` whose joints have one degree of freedom each (joint torques as inputs),
:func:`linkage_system` a :class:`jaxse3.linkage.Linkage` of rigid and soft links (joint efforts and tendon tensions as
inputs), optionally closed by loop closures (Baumgarte-stabilised; :func:`constraint_drift` measures the constraints'
drift along a simulated motion).

Inputs ``u(t)`` are any callable of time; :class:`SampledInput` interpolates sampled values (a pytree, so batches of
sampled inputs vmap), :func:`as_input` normalises ``None``/constants/callables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Real

from jaxse3 import linkage as linkages, rigid, rod as rods
from jaxse3._chunks import CPU_CHUNK
from jaxse3.lie.tangents import custom_rule, jvp_moving
from jaxse3.sim.trajectory import Trajectory

__all__ = [
    "System",
    "rod_system",
    "rigid_system",
    "linkage_system",
    "ClosedChain",
    "constraint_drift",
    "prescribed_inputs",
    "joint_control",
    "SampledInput",
    "as_input",
    "finite_difference",
]


class System(eqx.Module):
    """A second-order mechanical system ``M(q) q̈ = τ(q, q̇, u) + F(q, q̇)`` (seed 003 eq. (4)).

    Attributes:
        params: the model's parameters (a pytree of arrays, e.g. a rod); batched along leading axes for a batch.
        forward_dynamics: ``(params, q, q̇, u) -> q̈`` (seed 003 eq. (4) solved for q̈).
        residual: ``(params, q, q̇, q̈, u) -> τ + F − ID`` (seed 003 eqs. (8), (11), (13a)); zero along a motion.
        points: ``(params, q) -> (n_points, 3)`` world positions of the centreline points; the last one is the tip.
        n_dof: number of generalised coordinates.
        n_inputs: number of inputs (length of u).
        scale_loads: ``(params, λ) -> params`` with the applied loads the parameters hold (gravity, point wrenches)
            scaled by the load factor λ, for the load continuation of :func:`~jaxse3.sim.solve_statics` (which
            scales u itself); ``None``: the parameters hold no applied load.
        rest_residual: ``(params, q, u) -> τ(q, 0, u) + F(q, 0) − ID(q, 0, 0)`` (seed 003 eq. (13a)), the residual
            at rest by a path without velocity terms, for statics; ``None``: ``residual`` at zero velocity and
            acceleration.
        acceleration_hessians: ``(params, q, q̇, u) -> (q̈_qq, q̈_q̇q̇, q̈_qq̇, q̈_qu)``, the second derivatives of
            the forward dynamics, layouts ``[i, first, second]`` (``q̈_uu``, ``q̈_q̇u`` zero: q̈ affine in u at fixed
            state, as for joint torques), by an algorithm of their own (rigid trees: IDSVA SO through the chain
            rule), for second-order optimisers; ``None``: they come from autodiff of ``forward_dynamics``.
        constraint: ``(params, q, u) -> e`` (n_constraints,), holonomic constraints e(q, u(t)) = 0 (a closed chain's
            closure errors, seed 003 eq. (47c), and its prescribed joints' q_k − q_k(t)), or ``None``.
        multiplier_residual: ``(params, q, q̇, q̈, λ, u) -> τ + F − ID + (constraint forces of λ)``, the residual with
            the constraints' multipliers λ (n_constraints,) as independent variables (eq. (52a)), for the index-3
            Newmark-β (``solver="newmark-index3"``); ``None`` without constraints.
        rest_multiplier_residual: ``(params, q, λ, u) -> …``, ``multiplier_residual`` at rest by a path without
            velocity terms, for statics; ``None``: ``multiplier_residual`` at zero velocity and acceleration.
        n_constraints: number of rows of ``constraint`` (0 without).
        constraint_bias: ``(params, q, q̇, u, u̇, ü) -> ë − (∂e/∂q) q̈``, the second derivative of
            s ↦ e(q + s q̇, u(t + s)) at s = 0 given the inputs' rates (n_constraints,), in closed form (closed
            chains: :func:`jaxse3.linkage.closure_error_bias`), for the index-3 form's start; ``None``: nested JVPs
            of ``constraint``.
        energy: ``(params, q, q̇) -> Energy(kinetic, elastic, gravitational)`` (:class:`jaxse3.rod.Energy`, ``.total``),
            the mechanical energy (rods: :func:`jaxse3.rod.energy`; linkages: :func:`jaxse3.linkage.energy`), or
            ``None`` where the model has none.
        cpu_chunk: the members a CPU simulates or solves together in a batch when no ``chunk_size`` is given
            (:func:`~jaxse3.sim.simulate_batch`): 8 for rods and linkages with a soft link, whose per-point
            intermediates leave the caches under one ``vmap`` of many members (64 CDM rods: Kvaerno5 1.4×, Newmark-β
            1.3× faster in chunks of 8); ``None`` (the default, and rigid trees, which ``vmap`` best: a 7-DoF arm's
            Newmark batch of 64 is 1.4× slower in chunks of 8): one ``vmap``.
    """

    params: Any
    forward_dynamics: Callable = eqx.field(static=True)
    residual: Callable = eqx.field(static=True)
    points: Callable = eqx.field(static=True)
    n_dof: int = eqx.field(static=True)
    n_inputs: int = eqx.field(static=True)
    scale_loads: Callable | None = eqx.field(static=True, default=None)
    rest_residual: Callable | None = eqx.field(static=True, default=None)
    acceleration_hessians: Callable | None = eqx.field(static=True, default=None)
    constraint: Callable | None = eqx.field(static=True, default=None)
    multiplier_residual: Callable | None = eqx.field(static=True, default=None)
    rest_multiplier_residual: Callable | None = eqx.field(static=True, default=None)
    n_constraints: int = eqx.field(static=True, default=0)
    constraint_bias: Callable | None = eqx.field(static=True, default=None)
    energy: Callable | None = eqx.field(static=True, default=None)
    cpu_chunk: int | None = eqx.field(static=True, default=None)

    def acceleration(
        self, q: Float[Array, " n_dof"], qd: Float[Array, " n_dof"], u: Float[Array, " n_inputs"]
    ) -> Float[Array, " n_dof"]:
        """q̈ = FD(q, q̇, u)."""
        return self.forward_dynamics(self.params, q, qd, u)

    def dynamics_residual(
        self,
        q: Float[Array, " n_dof"],
        qd: Float[Array, " n_dof"],
        qdd: Float[Array, " n_dof"],
        u: Float[Array, " n_inputs"],
    ) -> Float[Array, " n_dof"]:
        """τ(q, q̇, u) + F − ID(q, q̇, q̈)."""
        return self.residual(self.params, q, qd, qdd, u)

    def statics_residual(self, q: Float[Array, " n_dof"], u: Float[Array, " n_inputs"]) -> Float[Array, " n_dof"]:
        """τ(q, 0, u) + F(q, 0) − ID(q, 0, 0) (seed 003 eq. (13a))."""
        return self.at_rest()(self.params, q, u)

    def at_rest(self) -> Callable:
        """``(params, q, u) -> τ(q, 0, u) + F(q, 0) − ID(q, 0, 0)``: ``rest_residual``, or ``residual`` at zero
        velocity and acceleration."""
        if self.rest_residual is not None:
            return self.rest_residual
        residual = self.residual

        def at_rest(params, q, u):
            z = jnp.zeros_like(q)
            return residual(params, q, z, z, u)

        return at_rest

    def tip(self, q: Float[Array, " n_dof"]) -> Float[Array, "3"]:
        """World position of the tip (the last point)."""
        return self.points(self.params, q)[-1]


def _rod_forward_dynamics(params, q, qd, u):
    rod, loads = params
    return rods.forward_dynamics(rod, q, qd, u, loads)


def _rod_residual(params, q, qd, qdd, u):
    rod, loads = params
    return rods.generalized_forces(rod, q, qd, u, loads) - rods.inverse_dynamics(rod, q, qd, qdd)


def _rod_rest_residual(params, q, u):
    rod, loads = params
    return rods.generalized_forces(rod, q, jnp.zeros_like(q), u, loads) - rods.inverse_dynamics_at_rest(rod, q)


def _rod_points(params, q):
    return rods.forward_kinematics(params[0], q)[:, :3, 3]


def _rod_energy(params, q, qd):
    return rods.energy(params[0], q, qd)


def _rod_scale_loads(params, lam):
    """Gravity and the point wrenches scaled by λ; contact is a reaction and is not scaled."""
    rod, loads = params
    rod = eqx.tree_at(lambda r: r.gravity, rod, lam * rod.gravity)
    if loads is not None:
        scale = lambda w: None if w is None else lam * w
        loads = rods.Loads(local=scale(loads.local), world=scale(loads.world), contact=loads.contact)
    return rod, loads


def rod_system(rod: rods.Rod, loads: rods.Loads | None = None) -> System:
    """The :class:`System` of a GVS rod: FD, τ − ID (with ``loads``: point wrenches, contact) and its points.

    The tendon tensions are the inputs (n_inputs = ``rod.n_tendons``); derivatives run the rod's analytical
    ``custom_jvp`` rules (seed 003 eqs. (7), (9), (13b), D63, (59)–(61)).
    """
    return System(
        (rod, loads),
        _rod_forward_dynamics,
        _rod_residual,
        _rod_points,
        rod.n_dof,
        rod.n_tendons,
        _rod_scale_loads,
        _rod_rest_residual,
        energy=_rod_energy,
        cpu_chunk=CPU_CHUNK,
    )


def _rigid_forward_dynamics(model, q, qd, u):
    return rigid.forward_dynamics(model, q, qd, u)


def _rigid_residual(model, q, qd, qdd, u):
    return u - rigid.rnea(model, q, qd, qdd)


def _rigid_points(model, q):
    return rigid.forward_kinematics(model, q)[:, :3, 3]


def _rigid_scale_loads(model, lam):
    return eqx.tree_at(lambda m: m.gravity, model, lam * model.gravity)


def _rigid_acceleration_hessians(model, q, qd, u):
    return rigid.forward_dynamics_second_order_derivatives(model, q, qd, u)


def rigid_system(model: rigid.Model) -> System:
    """The :class:`System` of a rigid tree: ``q̈ = FD(q, q̇, τ)``, residual ``τ − RNEA(q, q̇, q̈)``, the joint torques
    τ (nv,) as inputs, the bodies' origins as points (the last body's is the tip).

    Derivatives run the analytical rules of :mod:`jaxse3.rigid` (IDSVA, seed 002 eqs. (7)–(8); the chain rule of
    forward dynamics), as for a rod; the second derivatives of the accelerations for second-order optimisers are
    IDSVA SO's (``acceleration_hessians``). The drivers integrate q as a vector, so every joint must have one degree of
    freedom (revolute, prismatic, helical: ``model.nq == model.nv``); a spherical or free joint stores a quaternion
    and is rejected.
    """
    if not isinstance(model, rigid.Model):
        raise TypeError(f"rigid_system: model must be a jaxse3.rigid.Model, got {type(model).__name__}")
    if model.nq != model.nv:
        multi = sorted({t for t in model.joint_types if t in ("spherical", "free")})
        raise ValueError(
            f"rigid_system: every joint must have one degree of freedom (nq == nv), got nq = {model.nq}, "
            f"nv = {model.nv} (joint types {multi} store quaternions, which the drivers would integrate as vectors)"
        )
    return System(
        model,
        _rigid_forward_dynamics,
        _rigid_residual,
        _rigid_points,
        model.nv,
        model.nv,
        _rigid_scale_loads,
        acceleration_hessians=_rigid_acceleration_hessians,
    )


def _linkage_forward_dynamics(linkage, q, qd, u):
    return linkages.forward_dynamics(linkage, q, qd, u)


def _linkage_residual(linkage, q, qd, qdd, u):
    return linkages.generalized_forces(linkage, q, qd, u) - linkages.inverse_dynamics(linkage, q, qd, qdd)


def _linkage_rest_residual(linkage, q, u):
    """τ(q, 0, u) − ID(q, 0, 0): the index-3 residual at rest without closures, whose rule is the derivative pass at
    rest (poses, Jacobians and composite wrenches only)."""
    return linkages.index3_residual_at_rest(linkage, (), q, jnp.zeros(0, q.dtype), u)


def _linkage_points(linkage, q):
    return linkages.forward_kinematics(linkage, q)[:, :3, 3]


def _linkage_energy(linkage, q, qd):
    return linkages.energy(linkage, q, qd)


def _nested_linkage_energy(params, q, qd):  # a JointControl or a ClosedChain: its linkage's energy
    return linkages.energy(params.linkage, q, qd)


def _linkage_scale_loads(linkage, lam):
    return linkage.scaled(lam)


def _split(control):
    return np.asarray(control.unknown, int), np.asarray(control.known, int), len(control.known)


def _tracking(control, q, qd, inputs):
    """q̈_k(t) + 2(q̇_k(t) − q̇_k) + (q_k(t) − q_k): the prescribed joints' accelerations, with a critically damped
    pull (time constant 1 s) of the state's q_k back onto the prescription."""
    _, k, nk = _split(control)
    return inputs[2 * nk : 3 * nk] + 2.0 * (inputs[nk : 2 * nk] - qd[k]) + (inputs[:nk] - q[k])


def _controlled_forward_dynamics(control, q, qd, inputs):
    u, k, _ = _split(control)
    qdd_u = linkages.controlled_forward_dynamics(control, q[u], qd[u], inputs)
    return jnp.zeros_like(qdd_u, shape=q.shape).at[u].set(qdd_u).at[k].set(_tracking(control, q, qd, inputs))


def _controlled_residual(control, q, qd, qdd, inputs):
    u, k, _ = _split(control)
    r_u = linkages.controlled_residual(control, q[u], qd[u], qdd[u], inputs)
    r_k = _tracking(control, q, qd, inputs) - qdd[k]
    return jnp.zeros_like(r_u, shape=q.shape).at[u].set(r_u).at[k].set(r_k)


def _controlled_rest_residual(control, q, inputs):
    """:func:`_controlled_residual` at rest (q̇ = q̈ = 0, the prescribed rates and accelerations too): the controlled
    residual at rest (:func:`jaxse3.linkage.controlled_residual` with q̇_u = q̈_u = None, the derivative pass at rest on
    the unknown coordinates) on the unknown rows, q_k(t) − q_k on the prescribed ones."""
    u, k, nk = _split(control)
    r_u = linkages.controlled_residual(control, q[u], None, None, inputs)
    return jnp.zeros_like(r_u, shape=q.shape).at[u].set(r_u).at[k].set(inputs[:nk] - q[k])


def _controlled_points(control, q):
    return _linkage_points(control.linkage, q)


def _controlled_scale_loads(control, lam):
    return eqx.tree_at(lambda c: c.linkage, control, control.linkage.scaled(lam))


class ClosedChain(eqx.Module):
    """The parameters of a :func:`linkage_system` with loop closures: the linkage, its closures, the Baumgarte time
    constant T_B and, when joints are prescribed, their :class:`~jaxse3.linkage.JointControl` (``system.params`` of
    such a system)."""

    linkage: linkages.Linkage
    closures: tuple[linkages.Closure, ...]
    baumgarte_time: Float[Array, ""]
    control: linkages.JointControl | None = None


def _closed_forward_dynamics(chain, q, qd, u):
    return linkages.constrained_forward_dynamics(chain.linkage, chain.closures, q, qd, u, chain.baumgarte_time)[0]


def _closed_residual(chain, q, qd, qdd, u):
    return linkages.constrained_residual(chain.linkage, chain.closures, q, qd, qdd, u, chain.baumgarte_time)


def _closed_constraint(chain, q, u):
    """[e(q); q_k − q_k(t)]: the closures' errors, then the prescribed joints' (their positions the inputs' first)."""
    e = linkages.closure_error(chain.linkage, chain.closures, q)
    if chain.control is None:
        return e
    _, k, nk = _split(chain.control)
    return jnp.concatenate([e, q[k] - u[:nk]])


def _closed_constraint_bias(chain, q, qd, u, ud, udd):
    """d²/ds² of :func:`_closed_constraint` along (q + s q̇, u(t + s)): the closures' (closed form), then −q̈_k(t)."""
    b = linkages.closure_error_bias(chain.linkage, chain.closures, q, qd)
    if chain.control is None:
        return b
    _, _, nk = _split(chain.control)
    return jnp.concatenate([b, -udd[:nk]])


def _with_efforts(chain, lam, u, residual):
    """``residual(λ_c, u_linkage)`` of the closures' multipliers λ_c and the linkage's inputs, + λ_k on the prescribed
    joints' rows (their efforts; the linkage's inputs without them zero)."""
    control = chain.control
    if control is None:
        return residual(lam, u)
    _, k, nk = _split(control)
    n_c = lam.shape[0] - nk
    full = jnp.zeros(chain.linkage.n_inputs, lam.dtype).at[np.asarray(control.known_inputs, int)].set(u[3 * nk :])
    return residual(lam[:n_c], full).at[k].add(lam[n_c:])


def _closed_multiplier_residual(chain, q, qd, qdd, lam, u):
    """τ − ID + Aᵀλ_c (+ λ_k on the prescribed joints' rows: their efforts, the inputs without them zero)."""
    return _with_efforts(
        chain, lam, u, lambda lc, uc: linkages.index3_residual(chain.linkage, chain.closures, q, qd, qdd, lc, uc)
    )


def _closed_rest_multiplier_residual(chain, q, lam, u):
    """:func:`_closed_multiplier_residual` at rest (:func:`jaxse3.linkage.index3_residual_at_rest`)."""
    return _with_efforts(
        chain, lam, u, lambda lc, uc: linkages.index3_residual_at_rest(chain.linkage, chain.closures, q, lc, uc)
    )


def _prescribed_state(chain, q, qd, inputs):
    """(q, q̇) with the prescribed joints' entries read from the inputs, the linkage's inputs (the prescribed joints'
    efforts zero) and the prescribed accelerations q̈_k(t)."""
    control = chain.control
    _, k, nk = _split(control)
    n_u = chain.linkage.n_inputs
    u = jnp.zeros(n_u, inputs.dtype).at[np.asarray(control.known_inputs, int)].set(inputs[3 * nk :])
    return q.at[k].set(inputs[:nk]), qd.at[k].set(inputs[nk : 2 * nk]), u, inputs[2 * nk : 3 * nk]


def _prescribed_equations(chain, x, q, qd, inputs):
    """R(x) of the Baumgarte form with prescribed joints (seed 003 eqs. (43) and (48) combined), affine in
    x = (q̈, λ, λ_k): the index-3 residual τ − ID(q, q̇, q̈) + Aᵀλ + E_kᵀλ_k (λ_k the prescribed joints' efforts), the
    closures' stabilised rows A q̈ + Ȧq̇ + (2/T_B)Aq̇ + e/T_B², and E_k q̈ − q̈_k(t); q_k, q̇_k read from the inputs."""
    _, k, nk = _split(chain.control)
    q, qd, u, qdd_k = _prescribed_state(chain, q, qd, inputs)
    n, m = q.shape[0], x.shape[0] - q.shape[0] - nk
    qdd = x[:n]
    R = linkages.baumgarte_residual(chain.linkage, chain.closures, q, qd, qdd, x[n : n + m], u, chain.baumgarte_time)
    return jnp.concatenate([R.at[k].add(x[n + m :]), qdd[k] - qdd_k])


def _prescribed_solve(chain, q, qd, inputs):
    """(x, LU factors of ∂R/∂x): the solution x = −(∂R/∂x)⁻¹ R(0) of the affine equations, R(0) and
    ∂R/∂x = [[−M, Aᵀ, E_kᵀ], [A, 0, 0], [E_k, 0, 0]] from one forward pass (the residual's rule along x)."""
    n_x = q.shape[0] + sum(c.k for c in chain.closures) + len(chain.control.known)
    zero = jnp.zeros(n_x, q.dtype)

    def equations(x):
        R = _prescribed_equations(chain, x, q, qd, inputs)
        return R, R

    K, R0 = jax.jacfwd(equations, has_aux=True)(zero)
    lu = jax.scipy.linalg.lu_factor(K)
    return -jax.scipy.linalg.lu_solve(lu, R0), lu


def _prescribed_solution_plain(chain, q, qd, inputs):
    return _prescribed_solve(chain, q, qd, inputs)[0]


def _prescribed_solution_jvp(primals, tangents):
    """The implicit-function rule of the affine solve: dx = −(∂R/∂x)⁻¹ (∂R/∂(chain, q, q̇, u)·d) at the solution, R's
    derivatives in the state from the rule of :func:`jaxse3.linkage.baumgarte_residual` (one derivative pass)."""
    x, lu = _prescribed_solve(*primals)
    dR = jvp_moving(lambda *a: _prescribed_equations(a[0], x, *a[1:]), primals, tangents)
    return x, jnp.zeros_like(x) if dR is None else -jax.scipy.linalg.lu_solve(lu, dR)


_prescribed_solution = custom_rule("sim.prescribed_closed_chain", _prescribed_solution_plain, _prescribed_solution_jvp)


def _closed_controlled_forward_dynamics(chain, q, qd, inputs):
    """q̈ of the Baumgarte form with prescribed joints (:func:`_prescribed_equations`), the prescribed rows the
    state's tracking law (:func:`_tracking`), as for an open chain."""
    _, k, _ = _split(chain.control)
    qdd = _prescribed_solution(chain, q, qd, inputs)[: q.shape[0]]
    return qdd.at[k].set(_tracking(chain.control, q, qd, inputs))


def _closed_controlled_residual(chain, q, qd, qdd, inputs):
    """τ − ID(q, q̇, q̈') + Aᵀλ + E_kᵀλ_k with the multipliers of the Baumgarte solve and q̈' = q̈ with the prescribed
    q̈_k(t) (= −M_uu(q̈ − q̈_B)_u on the unknown rows), the prescribed rows the tracking law minus q̈: zero exactly along
    the Baumgarte motion (as :func:`jaxse3.linkage.constrained_residual`), ∂r/∂q̈ invertible."""
    _, k, nk = _split(chain.control)
    n = q.shape[0]
    x = _prescribed_solution(chain, q, qd, inputs)
    r = _prescribed_equations(chain, x.at[:n].set(qdd.at[k].set(inputs[2 * nk : 3 * nk])), q, qd, inputs)[:n]
    return r.at[k].set(_tracking(chain.control, q, qd, inputs) - qdd[k])


def _closed_points(chain, q):
    return _linkage_points(chain.linkage, q)


def _closed_scale_loads(chain, lam):
    return eqx.tree_at(lambda c: c.linkage, chain, chain.linkage.scaled(lam))


def _checked_closures(linkage, closures):
    if closures is None:
        return ()
    try:
        return linkages.check_closures(linkage, closures)
    except (TypeError, ValueError) as err:
        raise type(err)(f"linkage_system: 'closures': {err}") from None


def _checked_baumgarte_time(baumgarte_time):
    text = "linkage_system: 'baumgarte_time' must be a positive, finite scalar (the time constant T_B in s), got"
    if isinstance(baumgarte_time, jax.core.Tracer):
        if jnp.shape(baumgarte_time) != ():
            raise ValueError(f"{text} shape {jnp.shape(baumgarte_time)}")
        return jnp.asarray(baumgarte_time, dtype=float)
    try:
        T = np.asarray(baumgarte_time, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{text} {baumgarte_time!r}") from None
    if T.shape != () or not (np.isfinite(T) and T > 0):
        raise ValueError(f"{text} {baumgarte_time!r}")
    return jnp.asarray(T)


def linkage_system(
    linkage: linkages.Linkage,
    prescribed: Sequence[str] = (),
    closures: linkages.Closure | Sequence[linkages.Closure] = (),
    baumgarte_time: Float[ArrayLike, ""] = 0.01,
) -> System:
    """The :class:`System` of a linkage of rigid and soft links (:class:`jaxse3.linkage.Linkage`):
    ``q̈ = FD(q, q̇, u)``, residual ``τ(q, q̇, u) − ID(q, q̇, q̈)``, the actuated joints' efforts and the rods' tendon
    tensions as inputs (link order), all computational points as points (the last link's end is the tip).

    ``prescribed``: names of revolute, prismatic or helical links whose joints follow prescribed trajectories
    (joint-coordinate control, seed 003 §5.1; :class:`jaxse3.linkage.JointControl`). The inputs are then
    ``(q_k, q̇_k, q̈_k, u_known)`` — build them with :func:`prescribed_inputs` — and the state stays the whole q: the
    unknown coordinates follow eq. (43) (q̈_u = M_uu⁻¹(τ_u − ID_u), the dynamics reading q_k and q̇_k from the
    inputs, so the prescribed values overwrite the state at every call), the prescribed ones
    q̈_k(t) + 2(q̇_k(t) − q̇_k) + (q_k(t) − q_k): the prescription's acceleration with a critically damped pull (time
    constant 1 s) that keeps the state's q_k, which only the outputs read, on the prescription. The residual of
    Newmark-β and statics is eq. (45a) on the unknown rows and the same tracking law on the prescribed ones (statics:
    q_k(t) − q_k, every rate zero — the prescribed rates and accelerations in the inputs are not read — by the
    linkage's derivative pass at rest). Start from ``q0``, ``q̇0`` whose prescribed entries are q_k(0), q̇_k(0), and
    the state follows the prescription exactly; from elsewhere it converges to it. The efforts the prescribed joints
    exert follow from a solution with :func:`jaxse3.linkage.controlled_efforts`.

    Derivatives run the linkage's analytical rules (seed 003 eqs. (7), (9), (21), (27), (39)–(42), (44)). As for
    :func:`rigid_system`, every joint must have as many coordinates as velocities: spherical and free joints in unit
    quaternions are rejected; in exponential coordinates (``Link.rigid(..., coordinates="exponential")``, seed 003's
    joints) they simulate, a floating base included.

    ``closures``: loop closures (:class:`jaxse3.linkage.Closure`, checked against the linkage by
    :func:`jaxse3.linkage.check_closures`) that make a closed chain (seed 003 §5.2). Every driver then runs the
    Baumgarte-stabilised index-1 form of eqs. (46), (48), (49) with time constant T_B = ``baumgarte_time`` (s, a
    positive scalar; ``system.params`` is a :class:`ClosedChain`):

    * the forward dynamics is the q̈ of :func:`jaxse3.linkage.constrained_forward_dynamics`, so the diffrax solvers
      integrate the Baumgarte motion (kvaerno5/3 with their Jacobian through its rule, eqs. (50), (51); tsit5, dopri5);
    * the residual is :func:`jaxse3.linkage.constrained_residual`, τ(q, q̇, u) − ID(q, q̇, q̈) + A(q)ᵀλ(q, q̇, u) with
      the Baumgarte multipliers, = M(q)(q̈_B − q̈): zero along the same motion, so Newmark-β integrates it;
    * :func:`~jaxse3.sim.solve_statics` solves the index-3 form at rest for (q, λ) (eq. (52) with q̇ = q̈ = 0:
      τ − ID + Aᵀλ = 0 and e(q) = 0, below), returns the multipliers, and tests the stability of the stiffness
      reduced to the constraints' tangent space. At zero load every configuration on the constraint manifold of a
      mechanism without stiffness (the four-bar) is an equilibrium and Newton's matrix is singular there: start
      statics from a consistent configuration near the solution and take the load in one step (``load_steps=1``),
      or from a loaded equilibrium.

    Start the dynamics from a consistent state (e(q0) = 0, A(q0) q̇0 = 0); from elsewhere the errors decay with
    T_B. A smaller T_B holds the constraints tighter and makes the system stiffer (eigenvalues near −1/T_B): keep it
    well above the steps of an explicit solver. The closures' rows must be independent (A of full row rank; a planar
    mechanism needs ``"planar"`` closures). :func:`constraint_drift` adds ‖e(q)‖ and ‖A q̇‖ of a simulated motion to its
    :class:`~jaxse3.sim.trajectory.Trajectory` as monitors.

    The system also carries the index-3 form (eq. (52a)): ``constraint`` e(q) (:func:`jaxse3.linkage.closure_error`)
    and ``multiplier_residual`` τ − ID + Aᵀλ with λ as unknowns (:func:`jaxse3.linkage.index3_residual`), which
    ``simulate(..., solver="newmark-index3")`` integrates with the constraints held to Newton's tolerance at every
    step, without T_B (no drift in e); see :func:`~jaxse3.sim.simulate`. With ``prescribed`` joints as well (inputs
    as above, :func:`prescribed_inputs`), the index-3 form holds the prescriptions as constraints too
    (q_k − q_k(t) = 0, their multipliers the joints' efforts), and statics solves for them; the Baumgarte form is eqs.
    (43) and (48) combined: q_k, q̇_k read from the inputs, the prescribed accelerations q̈_k(t) imposed as further
    rows of the bordered system (their multipliers the efforts), the state's q_k tracking the prescription as for an
    open chain. Its derivatives come from an implicit-function rule on that affine solve (the analytical rule of
    :func:`jaxse3.linkage.baumgarte_residual`); the index-3 form remains the cheaper choice for such systems.
    """
    if not isinstance(linkage, linkages.Linkage):
        raise TypeError(f"linkage_system: linkage must be a jaxse3.linkage.Linkage, got {type(linkage).__name__}")
    if linkage.nq != linkage.nv:
        multi = sorted({link.joint for link in linkage.links if link.joint in ("spherical", "free")})
        raise ValueError(
            f"linkage_system: every joint must have as many coordinates as velocities (nq == nv), got nq = "
            f"{linkage.nq}, nv = {linkage.nv} (joint types {multi} store quaternions, which the drivers would "
            f"integrate as vectors; build them with coordinates='exponential' to simulate them)"
        )
    T = _checked_baumgarte_time(baumgarte_time)
    closures = _checked_closures(linkage, closures)
    control = linkages.JointControl(linkage, prescribed) if prescribed else None
    n_c, n_k = sum(c.k for c in closures), 0 if control is None else len(control.known)
    if closures and (n_c >= linkage.nv or n_c + n_k > linkage.nv):
        raise ValueError(
            f"linkage_system: 'closures' have {n_c} constraint rows for the linkage's {linkage.nv} coordinates"
            + (f" and {n_k} prescribed joint coordinates" if n_k else "")
            + ": they remove all mobility (a structure, not a mechanism) or some rows are dependent, which the "
            "solvers do not support; choose closure kinds that constrain only independent directions (e.g. "
            "'planar' for a loop in a plane) or add joints"
        )
    chunk = CPU_CHUNK if any(link.joint == "soft" for link in linkage.links) else None  # System.cpu_chunk
    if closures and prescribed:
        return System(
            ClosedChain(linkage, closures, T, control),
            _closed_controlled_forward_dynamics,
            _closed_controlled_residual,
            _closed_points,
            linkage.nv,
            control.n_inputs,
            _closed_scale_loads,
            constraint=_closed_constraint,
            constraint_bias=_closed_constraint_bias,
            multiplier_residual=_closed_multiplier_residual,
            rest_multiplier_residual=_closed_rest_multiplier_residual,
            n_constraints=sum(c.k for c in closures) + len(control.known),
            energy=_nested_linkage_energy,
            cpu_chunk=chunk,
        )
    if closures:
        return System(
            ClosedChain(linkage, closures, T),
            _closed_forward_dynamics,
            _closed_residual,
            _closed_points,
            linkage.nv,
            linkage.n_inputs,
            _closed_scale_loads,
            constraint=_closed_constraint,
            constraint_bias=_closed_constraint_bias,
            multiplier_residual=_closed_multiplier_residual,
            rest_multiplier_residual=_closed_rest_multiplier_residual,
            n_constraints=sum(c.k for c in closures),
            energy=_nested_linkage_energy,
            cpu_chunk=chunk,
        )
    if prescribed:
        return System(
            control,
            _controlled_forward_dynamics,
            _controlled_residual,
            _controlled_points,
            linkage.nv,
            control.n_inputs,
            _controlled_scale_loads,
            rest_residual=_controlled_rest_residual,
            energy=_nested_linkage_energy,
            cpu_chunk=chunk,
        )
    return System(
        linkage,
        _linkage_forward_dynamics,
        _linkage_residual,
        _linkage_points,
        linkage.nv,
        linkage.n_inputs,
        _linkage_scale_loads,
        rest_residual=_linkage_rest_residual,
        energy=_linkage_energy,
        cpu_chunk=chunk,
    )


def constraint_drift(system: System, trajectory: Trajectory) -> Trajectory:
    """``trajectory`` with the drift of its closed chain's constraints as two monitors (:attr:`Trajectory.monitors`):

    * ``"closure_error"``: ‖e(q(t))‖ (seed 003 eq. (47c)), the Euclidean norm of all closures' stacked rows;
    * ``"closure_velocity_error"``: ‖A(q(t)) q̇(t)‖ (eq. (47a)).

    Both are zero along an exact motion from a consistent state; the Baumgarte stabilisation of
    :func:`linkage_system` (``closures``) pulls them back to zero with the time constant T_B, so what remains is the
    solver's error. Units: rad and m (per s for the rates) mixed by the closures' constrained directions.

    ``system``: the :func:`linkage_system` with ``closures`` that ``trajectory`` was simulated with (one system; the
    trajectory may have leading batch axes, e.g. a :func:`~jaxse3.sim.simulate_batch` of one system from several
    initial states). Samples after a failure (NaN) give NaN. The monitors are saved with the trajectory
    (:meth:`Trajectory.save`).
    """
    chain = system.params
    if not isinstance(chain, ClosedChain):
        raise TypeError("constraint_drift: 'system' must be a linkage_system(..., closures=...) (a closed chain)")
    nv = chain.linkage.nv
    q, qd = jnp.asarray(trajectory.q), jnp.asarray(trajectory.qd)
    if q.shape[-1:] != (chain.linkage.nq,) or qd.shape[-1:] != (nv,) or q.shape[:-1] != qd.shape[:-1]:
        raise ValueError(
            f"constraint_drift: 'trajectory' must have q (..., {chain.linkage.nq}) and qd (..., {nv}) of this "
            f"system, got {q.shape} and {qd.shape}"
        )
    e_norm, v_norm = _drift(chain, q.reshape(-1, q.shape[-1]), qd.reshape(-1, nv))
    batch = q.shape[:-1]
    monitors = {
        **trajectory.monitors,
        "closure_error": e_norm.reshape(batch),
        "closure_velocity_error": v_norm.reshape(batch),
    }
    return eqx.tree_at(lambda t: t.monitors, trajectory, monitors)


@eqx.filter_jit
def _drift(chain: ClosedChain, q, qd):
    def one(q, qd):
        e = linkages.closure_error(chain.linkage, chain.closures, q)
        A = linkages.closure_jacobian(chain.linkage, chain.closures, q)
        return jnp.linalg.norm(e), jnp.linalg.norm(A @ qd)

    return jax.vmap(one)(q, qd)


class _Prescription(eqx.Module):
    positions: Callable
    inputs: Callable

    def __call__(self, t):
        t = jnp.asarray(t, dtype=float)
        velocity = lambda t: jax.jvp(self.positions, (t,), (jnp.ones_like(t),))
        (qk, qdk), (_, qddk) = jax.jvp(velocity, (t,), (jnp.ones_like(t),))
        return jnp.concatenate([qk, qdk, qddk, self.inputs(t)])


def joint_control(system: System) -> linkages.JointControl | None:
    """The :class:`~jaxse3.linkage.JointControl` of a :func:`linkage_system` with prescribed joints (open or closed
    chain), or None."""
    control = system.params.control if isinstance(system.params, ClosedChain) else system.params
    return control if isinstance(control, linkages.JointControl) else None


def prescribed_inputs(
    system: System,
    positions: Callable[[Real[ArrayLike, ""]], Float[Array, " n_k"]],
    inputs: Float[ArrayLike, " n_u"] | Callable[[Real[ArrayLike, ""]], Float[Array, " n_u"]] | None = None,
) -> Callable[[Real[ArrayLike, ""]], Float[Array, " n_inputs"]]:
    """The inputs ``t -> (q_k, q̇_k, q̈_k, u_known)`` of a :func:`linkage_system` with prescribed joints.

    ``positions``: ``t -> q_k(t)`` (n_k,), the prescribed joints' coordinates in link order, a JAX function of t
    (twice differentiable: its velocities and accelerations are its derivatives, by forward-mode autodiff);
    ``inputs``: the other inputs (the rods' tendon tensions, the efforts of actuated joints that are not prescribed),
    as for :func:`as_input`.
    """
    control = joint_control(system)
    if control is None:
        raise TypeError("prescribed_inputs: system must be a linkage_system(..., prescribed=...) (prescribed joints)")
    if not callable(positions):
        raise TypeError("prescribed_inputs: positions must be a function t -> q_k(t)")
    shape = jax.eval_shape(positions, 0.0).shape
    if shape != (len(control.known),):
        raise ValueError(f"prescribed_inputs: positions(t) must return shape ({len(control.known)},), got {shape}")
    return _Prescription(positions, as_input(inputs, len(control.known_inputs)))


class SampledInput(eqx.Module):
    """Inputs given by samples ``values[i] = u(ts[i])``, interpolated in time (held constant outside ``ts``).

    ``kind="cubic"`` (default) uses C¹ backward-Hermite cubics (smooth for adaptive step control); ``"linear"`` is
    piecewise linear. ``ts``: (n,) increasing; ``values``: (n, n_inputs).
    """

    interpolation: diffrax.AbstractGlobalInterpolation

    def __init__(self, ts: Float[ArrayLike, " n"], values: Float[ArrayLike, "n n_inputs"], kind: str = "cubic"):
        ts, values = jnp.asarray(ts, dtype=float), jnp.asarray(values, dtype=float)
        if ts.ndim != 1 or ts.shape[0] < 2:
            raise ValueError(f"SampledInput: ts must have shape (n,) with n >= 2, got {ts.shape}")
        if values.ndim != 2 or values.shape[0] != ts.shape[0]:
            raise ValueError(f"SampledInput: values must have shape ({ts.shape[0]}, n_inputs), got {values.shape}")
        if kind == "cubic":
            coeffs = diffrax.backward_hermite_coefficients(ts, values)
            self.interpolation = diffrax.CubicInterpolation(ts, coeffs)
        elif kind == "linear":
            self.interpolation = diffrax.LinearInterpolation(ts, values)
        else:
            raise ValueError(f"SampledInput: kind must be 'cubic' or 'linear', got {kind!r}")

    def __call__(self, t: Real[ArrayLike, ""]) -> Float[Array, " n_inputs"]:
        interp = self.interpolation
        return interp.evaluate(jnp.clip(t, interp.t0, interp.t1))


class _Constant(eqx.Module):
    value: jax.Array

    def __call__(self, t) -> jax.Array:
        return self.value


def as_input(
    u: Float[ArrayLike, " n_inputs"] | Callable[[Real[ArrayLike, ""]], Float[Array, " n_inputs"]] | None,
    n_inputs: int,
) -> Callable[[Real[ArrayLike, ""]], Float[Array, " n_inputs"]]:
    """Normalise an input specification to a callable ``t -> u(t)`` of shape (n_inputs,).

    ``None`` → zero inputs; an array of shape (n_inputs,) → constant; a callable (function of t, or a
    :class:`SampledInput`) → itself, checked once at ``t = 0``.
    """
    if u is None:
        return _Constant(jnp.zeros(n_inputs))
    if not callable(u):
        u = jnp.asarray(u, dtype=float)
        if u.shape != (n_inputs,):
            raise ValueError(f"inputs: a constant input must have shape ({n_inputs},), got {u.shape}")
        return _Constant(u)
    shape = jax.eval_shape(u, 0.0).shape
    if shape != (n_inputs,):
        raise ValueError(f"inputs: u(t) must return shape ({n_inputs},), got {shape}")
    return u


def finite_difference(fn: Callable, eps: float = 1e-6) -> Callable:
    """``fn`` with its derivatives replaced by forward differences of step ``eps`` (seed 003 eq. (38)).

    The JVP along a tangent ``v`` is ``(fn(x + ε v) − fn(x))/ε``; ``jax.jacfwd`` of the result therefore costs one extra
    evaluation of ``fn`` per column, exactly the paper's finite-difference Jacobian (its "method 1" baseline).
    """

    @jax.custom_jvp
    def wrapped(*args):
        return fn(*args)

    @wrapped.defjvp
    def _jvp(primals, tangents):
        y = fn(*primals)
        shifted = jax.tree.map(
            lambda x, v: x + eps * v if jnp.issubdtype(jnp.result_type(x), jnp.inexact) else x, primals, tangents
        )
        return y, jax.tree.map(lambda a, b: (a - b) / eps, fn(*shifted), y)

    return wrapped
