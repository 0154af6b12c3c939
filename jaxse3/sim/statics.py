"""Static equilibria: Newton's method on ``R(q) = τ(q, 0, u) + F(q, 0) − ID(q, 0, 0) = 0`` (seed 003 eqs. (5), (13)).

The Newton Jacobian ``J = ∂τ/∂q − ∂ID/∂q`` (eq. (13b)) is ``jax.jacfwd`` of the residual, i.e. the system's
``custom_jvp`` rules (analytic for a rod); ``jacobian="finite-difference"`` uses forward differences instead (the
paper's fsolve-without-Jacobian baseline). The Newton iteration uses the termination test of ``optimistix.Newton``
and its result codes; it is written out here because its first iterate is the continuation predictor and its last
Jacobian the stability test, so the compiled program evaluates one Jacobian per iteration and traces it once.

Large loads are reached by load continuation: the load factor λ scales every applied load — the inputs u and the
loads the system's parameters hold (``System.scale_loads``; for a rod system, :func:`~jaxse3.sim.system.rod_system`,
gravity and the point wrenches of its :class:`~jaxse3.rod.forces.Loads`; contact is a reaction and is not scaled) —
and the equilibria ``R(q; λ) = 0`` are followed from λ = 0 (where q0, the straight rod by default, is the equilibrium
of the unloaded system) to λ = 1. By
default the increments are chosen adaptively and every step is checked to stay on the branch it started from; the
fixed mode takes equal increments. Derivatives of the equilibrium (``jax.grad``/``jacfwd`` w.r.t. u or the system's
parameters) are those of the implicit function theorem at the full load, not of the iterations. Failure is never
silent: with ``throw=True`` the solve raises; with ``throw=False`` :class:`StaticsSolution` carries the result code, a
``converged`` flag and the final residual norm.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from jaxse3._compile import Compiled, announce_trace
from jaxse3.integrate.newton import NewtonResult, NewtonResults, default_tolerance, newton_iterations
from jaxse3.sim.system import System, finite_difference

__all__ = ["solve_statics", "StaticsSolution", "StaticsResults"]

#: adaptive continuation: a step is accepted when the Newton correction from the predictor is at most this fraction
#: of the predicted step (plus the Newton tolerance)
_BRANCH_TOLERANCE = 0.5
#: the stiffness's eigenvalues below this fraction of the largest one in magnitude count as zero
_ZERO_STIFFNESS = 1e-8
#: adaptive continuation: the smallest load increment tried before the continuation is declared stalled
_MIN_INCREMENT = 2.0**-20
#: adaptive continuation: the most accepted load steps (the length of ``load_fractions``) and attempted steps
_MAX_LOAD_STEPS = 64
_MAX_ATTEMPTS = 160


class StaticsResults(NewtonResults):
    """The result codes of :class:`~jaxse3.integrate.newton.NewtonResults` plus the failure of the adaptive load
    continuation."""

    load_continuation_stalled = (
        "The load continuation stalled: the load increment fell below 2^-20 (or the step budget ran out) before the "
        "full load was reached. Newton failed or jumped to another equilibrium branch at every smaller increment: "
        "the loading path may pass a limit point (snap-through), or the problem has no solution at the full load. "
        "The last equilibrium reached is returned; `load_fractions` lists the load factors taken."
    )


class StaticsSolution(eqx.Module):
    """Result of :func:`solve_statics`.

    Attributes:
        q: (n_dof,) equilibrium at the full load when ``converged``; else the adaptive continuation's last
            equilibrium, or the fixed continuation's last iterate.
        result: :class:`StaticsResults` code (0 = successful): the first failed load step of a fixed continuation, or
            why the adaptive continuation stopped.
        converged: True iff the full load was reached with every Newton solve converged.
        residual_norm: ‖R(q)‖∞ at the returned q and the full load.
        num_steps: total Newton iterations, rejected continuation steps included.
        tip: (3,) world position of the tip at q.
        load_fractions: the load factors λ of the accepted steps in order (the last one is 1 when ``converged``);
            adaptive: (64,), zero after the ``load_steps_taken`` steps; fixed: (load_steps,) = (1, 2, ...)/load_steps.
        load_steps_taken: number of accepted load steps.
        stable: True iff the symmetric part of the tangent stiffness ``−∂R/∂q`` at q (at the last Newton iterate,
            within the tolerance of q) is positive definite: its least eigenvalue above 10⁻⁸ of the largest in
            magnitude. With constraints, the stiffness reduced to the constraints' tangent space, ``−Zᵀ sym(∂r/∂q) Z``
            with Z an orthonormal basis of the null space of ∂e/∂q. For conservative loads (gravity, dead world
            wrenches) ``−∂R/∂q`` is the Hessian of the potential energy and this is the stability of the equilibrium;
            with follower wrenches or tendons it is sufficient for every eigenvalue of ``−∂R/∂q`` to have a positive
            real part (no divergence instability).
        morse_index: the number of negative eigenvalues of that (reduced) symmetric stiffness, below −10⁻⁸ of the
            largest: the number of independent directions in which the potential energy decreases. It names the
            kind of equilibrium found: 0 a (stable) minimum, 1 a saddle of the first kind (the equilibrium between
            two stable branches of a bistable structure, the top of a snap-through), and so on. A stable equilibrium
            has index 0; an index-0 equilibrium with a numerically zero eigenvalue is not ``stable``: a limit point.
        least_stiffness: the least eigenvalue of that (reduced) symmetric stiffness (N·m or N/m per unit of q):
            negative on an unstable branch, near zero close to a limit point or bifurcation; +inf when the
            constraints leave no freedom.
        multipliers: (n_constraints,) the constraints' multipliers λ at q (a closed chain: the closures' wrench
            components, then the prescribed joints' efforts); None without constraints.
        singular: with constraints, True iff Newton's matrix at q is numerically singular (its reciprocal condition
            number below 1e−12): a limit point, a bifurcation, or constraints that are not independent there; None
            without constraints.
    """

    q: jax.Array
    result: StaticsResults
    converged: jax.Array
    residual_norm: jax.Array
    num_steps: jax.Array
    tip: jax.Array
    load_fractions: jax.Array
    load_steps_taken: jax.Array
    stable: jax.Array
    morse_index: jax.Array
    least_stiffness: jax.Array
    multipliers: jax.Array | None
    singular: jax.Array | None

    @property
    def message(self) -> str:
        """Human-readable solver status (outside jit)."""
        return StaticsResults[self.result] or "successful"


def check_finite(who: str, name: str, x: jax.Array) -> None:
    """Raise a ValueError naming the argument if a concrete ``x`` has a NaN or Inf (a traced ``x`` is not checked)."""
    if not isinstance(x, jax.core.Tracer) and not bool(jnp.all(jnp.isfinite(x))):
        raise ValueError(f"{who}: '{name}' must be finite, got {x}")


def solve_statics(
    system: System,
    u: jax.Array | None = None,
    q0: jax.Array | None = None,
    *,
    jacobian: str = "analytic",
    rtol: float | None = None,
    atol: float | None = None,
    max_steps: int = 50,
    load_steps: int | None = None,
    start: tuple[System, jax.Array] | None = None,
    throw: bool = True,
) -> StaticsSolution:
    """Solve ``τ(q, 0, u) + F(q, 0) − ID(q, 0, 0) = 0`` for q by Newton with load continuation (seed 003 eq. (13)).

    The load factor λ scales u and, for a rod system, gravity and the applied point wrenches; ``R(q; λ) = 0`` is
    followed from ``(q0, λ = 0)`` to ``λ = 1``.

    ``start=(system0, u0)``: continue instead from a solved neighbour, q0 an equilibrium of ``system0`` (the same
    model, other numbers: loads, gravity, stiffness, geometry) under ``u0``. The continuation then follows the straight
    line between the two, the parameters ``(1 − λ) θ0 + λ θ`` and inputs ``(1 − λ) u0 + λ u``, nothing scaled to
    zero: a batch of loads around a common one (random wrenches on a robot under gravity, random joint angles)
    starts every member from the common equilibrium, solved once, and costs each member a few Newton iterations
    instead of the whole path from the unloaded state; and a multistable structure (the parallel robot) stays on the
    branch of the equilibrium it starts from while its load changes, where a continuation from the unloaded state may
    reach another. A closed chain's multipliers start from zero at q0 (the first Newton iterate solves for them).

    A system with constraints (a closed chain, :func:`~jaxse3.sim.linkage_system` with ``closures``) is solved for
    (q, λ) together (seed 003 eq. (52) at rest): ``R = [r(q, 0, 0, λ, u); e(q, u)] = 0`` with Newton's matrix
    ``[[∂r/∂q, ∂r/∂λ], [∂e/∂q, 0]]`` from the rules, starting from the multipliers λ = 0; the multipliers (the closures'
    wrench components, prescribed joints' efforts) are returned, the stability is that of the stiffness reduced to
    the constraints' tangent space, and ``singular`` flags a singular matrix. Prescribed joints' positions are inputs,
    so the continuation scales them with the load. ``q0`` must satisfy the constraints of the unloaded system.

    ``load_steps=None`` (default): adaptive continuation. The first step tries the full load, so a moderate load costs
    one Newton solve. A step from the equilibrium ``q_a`` at ``λ_a`` to ``λ_b = λ_a + Δλ`` runs Newton on
    ``R(·; λ_b)`` from ``q_a``; its first iterate ``q_p = q_a − J(q_a; λ_b)⁻¹ R(q_a; λ_b)`` is a first-order
    (tangent) predictor. The step is accepted iff every Newton step is shorter than the one before (q_a lies in the
    region of quadratic convergence), Newton converges, and the converged ``q_b`` stays near the prediction,
    ``‖q_b − q_p‖ ≤ ½ ‖q_p − q_a‖ + atol + rtol ‖q_b‖``. Along a smooth branch the correction is O(Δλ²) and the
    prediction O(Δλ), so small enough steps pass, while Newton runs that wander to another equilibrium branch fail:
    a single full-load solve of a cantilever under heavy self-weight (qL³/EI = 50) converges to an unstable
    equilibrium with the tip behind the base, one under a tip force PL²/EI = 10 does not converge; the adaptive
    continuation reaches the elastica in both, in 3 and 2 steps. An accepted step doubles Δλ (up to the rest of the
    load), a rejected one halves it; below Δλ = 2⁻²⁰, after 160 attempts or 64 accepted steps the continuation stops
    with ``StaticsResults.load_continuation_stalled`` and returns the last equilibrium: a load-controlled path cannot
    pass a limit point (snap-through), where ``J`` is singular.

    ``load_steps=n``: fixed continuation, n equal increments, each solved by Newton from the previous equilibrium with
    no branch check (with ``n = 1`` a large load can end on a far-away equilibrium: check ``stable``).

    Args:
        system: the model.
        u: (n_inputs,) constant inputs; default zeros (e.g. a rod without tendons). Must be finite.
        q0: equilibrium of the unloaded system and initial guess (default q = 0: the straight rod). Must be finite.
        jacobian: ``"analytic"`` or ``"finite-difference"`` (forward differences, ε = 1e−6).
        rtol, atol: Newton tolerances, the Cauchy termination of ``optimistix.Newton``: stop when
            ``|Δq_i| < atol + rtol |q_i|`` for every i and ``‖R‖∞ < atol``; default
            :func:`~jaxse3.integrate.newton.default_tolerance` of the solve's dtype (1e−10 in float64, 1.2e−5 in
            float32). The load steps before the full load stop at their square roots (one quadratically convergent
            iteration short): their equilibria only start the next step.
        max_steps: Newton iterations per load step.
        load_steps: None (adaptive continuation) or the number of equal load increments.
        start: None (from the unloaded system) or ``(system0, u0)``, the system (of ``system``'s structure) and inputs
            whose equilibrium q0 is (above).
        throw: raise on failure (naming the cause); if False, inspect ``converged``/``result``.

    Returns:
        a :class:`StaticsSolution`, with the load factors taken and whether the equilibrium is ``stable``.
    """
    if jacobian not in ("analytic", "finite-difference"):
        raise ValueError(f"solve_statics: jacobian must be 'analytic' or 'finite-difference', got {jacobian!r}")
    if load_steps is not None and not (isinstance(load_steps, int) and load_steps >= 1):
        raise ValueError(f"solve_statics: load_steps must be None (adaptive) or an int >= 1, got {load_steps!r}")
    u = jnp.zeros(system.n_inputs) if u is None else jnp.asarray(u, dtype=float)
    if u.shape != (system.n_inputs,):
        raise ValueError(f"solve_statics: u must have shape ({system.n_inputs},), got {u.shape}")
    check_finite("solve_statics", "u", u)
    n = system.n_dof
    q0 = jnp.zeros(n) if q0 is None else jnp.asarray(q0, dtype=float)
    if q0.shape != (n,):
        raise ValueError(f"solve_statics: q0 must have shape ({n},), got {q0.shape}")
    check_finite("solve_statics", "q0", q0)
    rtol, atol = (default_tolerance(q0.dtype) if x is None else x for x in (rtol, atol))
    if start is not None:
        start = _checked_start(system, start)
    if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((system, u, q0, rtol, atol))):
        announce_trace("solve_statics", f"{system.n_dof} DoF")
        return _solve(system, u, q0, jacobian, rtol, atol, max_steps, load_steps, throw, start)
    # called with concrete values: a program without host callbacks (it enters the persistent cache, its first
    # compile is announced), and the failure raised from here
    sol = _SOLVE(system, u, q0, jacobian, rtol, atol, max_steps, load_steps, False, start)
    if throw and not bool(sol.converged):
        raise RuntimeError(
            f"solve_statics: {sol.message} (residual {float(sol.residual_norm):.3g} after "
            f"{int(sol.num_steps)} Newton iterations). Pass throw=False to inspect the solution."
        )
    return sol


def _checked_start(system: System, start: Any) -> tuple[System, jax.Array]:
    """``start = (system0, u0)`` checked against ``system``: a System of the same structure and inputs (n_inputs,)."""
    if not (isinstance(start, tuple) and len(start) == 2 and isinstance(start[0], System)):
        raise ValueError(f"solve_statics: start must be a tuple (system0, u0), got {type(start).__name__}")
    system0, u0 = start
    u0 = jnp.asarray(u0, dtype=float)
    if jax.tree.structure(system0) != jax.tree.structure(system) or any(
        jnp.shape(a) != jnp.shape(b) for a, b in zip(jax.tree.leaves(system0), jax.tree.leaves(system))
    ):
        raise ValueError(
            "solve_statics: start's system must have the structure of system (the same model with other numbers: "
            "equal static fields and array shapes)"
        )
    if u0.shape != (system.n_inputs,):
        raise ValueError(f"solve_statics: start's inputs u0 must have shape ({system.n_inputs},), got {u0.shape}")
    check_finite("solve_statics", "start's u0", u0)
    return system0, u0


def _blend(a: Any, b: Any, lam: jax.Array) -> Any:
    """(1 − λ) a + λ b on the inexact array leaves, b's leaves elsewhere."""
    floating = lambda x: eqx.is_array(x) and jnp.issubdtype(x.dtype, jnp.inexact)
    return jax.tree.map(lambda x, y: x + lam * (y - x) if floating(y) else y, a, b)


def _residual(q: jax.Array, system: System, u: jax.Array, lam: jax.Array, residual, start=None) -> jax.Array:
    """R(q; λ) = τ(q, 0, λu) + F(q, 0) − ID(q, 0, 0) with the loads of the parameters scaled by λ (eq. (13a)), or
    with ``start = (system0, u0)`` the residual of the parameters and inputs blended from the start's to the system's;
    ``residual``: the system's residual at rest, ``(params, q, u) -> R``, or of (q, multipliers) stacked
    (:func:`_constrained_at_rest`)."""
    if start is not None:
        return residual(_blend(start[0].params, system.params, lam), q, _blend(start[1], u, lam))
    params = system.params if system.scale_loads is None else system.scale_loads(system.params, lam)
    return residual(params, q, lam * u)


def _constrained_at_rest(system: System):
    """``(params, x, u) -> [r(q, 0, 0, λ, u); e(q, u)]`` of x = (q, λ) (eq. (52) at rest), r by the system's path at
    rest when it has one."""
    n, constraint = system.n_dof, system.constraint
    residual = system.rest_multiplier_residual
    if residual is None:
        general = system.multiplier_residual

        def residual(params, q, lam, u):
            zero = jnp.zeros_like(q)
            return general(params, q, zero, zero, lam, u)

    def at_rest(params, x, u):
        q, lam = x[:n], x[n:]
        return jnp.concatenate([residual(params, q, lam, u), constraint(params, q, u)])

    return at_rest


def _reciprocal_condition(J: jax.Array) -> jax.Array:
    """1/(‖J‖₁ ‖J⁻¹‖₁) from an LU inverse (NaN or 0 when J is singular)."""
    return 1.0 / (jnp.linalg.norm(J, 1) * jnp.linalg.norm(jnp.linalg.inv(J), 1))


def _stiffness_spectrum(J: jax.Array, n: int, m: int) -> jax.Array:
    """Ascending eigenvalues of the symmetric stiffness H = −sym(∂r/∂q), reduced with constraints to the null space
    of E = ∂e/∂q (the constraints' tangent space): those of ZᵀHZ, Z an orthonormal basis of that null space from the
    complete QR factorisation of Eᵀ (its last n − m columns; E of full row rank). By Sylvester's law of inertia the
    number of negative ones is the Morse index of the equilibrium (for conservative loads)."""
    H = -0.5 * (J[:n, :n] + J[:n, :n].T)
    if m:
        Z = jnp.linalg.qr(J[n:, :n].T, mode="complete")[0][:, m:]
        H = Z.T @ H @ Z
    return jnp.linalg.eigvalsh(H)


def _newton(fn, q0: jax.Array, rtol: float, atol: float, max_steps: int, contractive: bool) -> NewtonResult:
    """Newton's method on ``fn(q) = 0`` from q0 with the Cauchy termination of ``optimistix.Newton``: stop when
    ``max_i |Δq_i| / (atol + rtol |q_i|) < 1`` and ``‖fn‖∞ < atol`` at the point the step was taken from (eq. (13b)).

    One Jacobian evaluation per iteration (``jax.jacfwd``: the system's derivative rules); the first iterate
    (``stats["first"]``) is the continuation predictor and the last Jacobian (``stats["matrix"]``) the stability
    test, so the compiled program traces the Jacobian once.
    """

    def value_twice(q):
        r = fn(q)
        return r, r

    jacobian_and_value = jax.jacfwd(value_twice, has_aux=True)

    def done(q_new, dq, R):
        return (jnp.max(jnp.abs(dq) / (atol + rtol * jnp.abs(q_new))) < 1) & (jnp.max(jnp.abs(R)) < atol)

    return newton_iterations(lambda q: jacobian_and_value(q)[::-1], q0, done, max_steps, contractive)


@eqx.filter_jit
def _solve(system, u, q0, jacobian, rtol, atol, max_steps, load_steps, throw, start=None) -> StaticsSolution:
    n, m = system.n_dof, system.n_constraints if system.constraint is not None else 0
    at_rest = system.at_rest() if m == 0 else _constrained_at_rest(system)
    residual = at_rest if jacobian == "analytic" else finite_difference(at_rest)
    q0 = jnp.concatenate([q0, jnp.zeros(m, q0.dtype)])  # with constraints, x = (q, λ) from λ = 0
    one = jnp.asarray(1.0, q0.dtype)
    # the continuation runs on constants: derivatives of the equilibrium (w.r.t. u and the system's parameters) come
    # from the implicit function theorem at the full load, dq = −(∂R/∂q)⁻¹ (∂R/∂θ) dθ, not through the iterations
    constants = jax.lax.stop_gradient((system, u, q0, start))

    def newton(q, lam):
        # an intermediate load step's equilibrium only starts the next step: to the square root of the tolerances
        # (one quadratic Newton step short of them); the full load to the tolerances
        loose = lam < 1
        return _newton(
            lambda q: _residual(q, constants[0], constants[1], lam, residual, constants[3]),
            q,
            jnp.where(loose, jnp.sqrt(rtol), rtol),
            jnp.where(loose, jnp.sqrt(atol), atol),
            max_steps,
            contractive=load_steps is None,
        )

    if load_steps is None:
        q, result, steps, fractions, taken, J = _adaptive(newton, constants[2], rtol, atol)
    else:
        q, result, steps, fractions, taken, J = _fixed(newton, constants[2], load_steps)
    q = jax.lax.custom_root(
        lambda q: _residual(q, system, u, one, residual),
        q,
        lambda _, q: q,
        lambda linear, rhs: jnp.linalg.solve(jax.jacfwd(linear)(rhs), rhs),
    )
    ok = result == StaticsResults.successful
    res_norm = jnp.max(jnp.abs(_residual(q, system, u, one, at_rest)))
    # no freedom left (the constraints fix q): an empty spectrum, trivially stable
    spectrum = jnp.concatenate([_stiffness_spectrum(J, n, m), jnp.full(1, jnp.inf, J.dtype)])
    # eigenvalues within 10⁻⁸ of the largest are numerically zero: neither stable nor counted as unstable directions
    zero = _ZERO_STIFFNESS * jnp.max(jnp.abs(spectrum[:-1]), initial=0.0)
    singular = ~(_reciprocal_condition(J) > 1e-12) if m else None
    if throw:
        q = result.error_if(q, ~ok)
    return StaticsSolution(
        q=q[:n],
        result=result,
        converged=ok,
        residual_norm=res_norm,
        num_steps=steps,
        tip=system.tip(q[:n]),
        load_fractions=fractions,
        load_steps_taken=taken,
        stable=spectrum[0] > zero,
        morse_index=jnp.sum(spectrum < -zero),
        least_stiffness=spectrum[0],
        multipliers=q[n:] if m else None,
        singular=singular,
    )


_SOLVE = Compiled(_solve, "solve_statics", lambda system, *rest: f"{system.n_dof} DoF", cacheable=True)


def _fixed(newton, q0, load_steps):
    """``load_steps`` equal increments, each from the previous equilibrium; the first failure is kept."""

    def load_step(carry, lam):
        q, result, steps, _ = carry
        sol = newton(q, lam)
        result = StaticsResults.where(result == StaticsResults.successful, StaticsResults.promote(sol.result), result)
        return (sol.value, result, steps + sol.num_steps, sol.stats["matrix"]), None

    n = q0.shape[0]
    fractions = jnp.arange(1, load_steps + 1, dtype=q0.dtype) / load_steps
    init = (q0, StaticsResults.successful, jnp.array(0), jnp.zeros((n, n), q0.dtype))
    (q, result, steps, J), _ = jax.lax.scan(load_step, init, fractions)
    return q, result, steps, fractions, jnp.array(load_steps), J


def _adaptive(newton, q0, rtol, atol):
    """Adaptive load continuation with a tangent predictor and a branch check (see :func:`solve_statics`)."""
    dtype, n = q0.dtype, q0.shape[0]

    def keep_going(carry):
        lam, dlam, _, _, _, taken, attempts, _ = carry
        return (lam < 1) & (dlam >= _MIN_INCREMENT) & (attempts < _MAX_ATTEMPTS) & (taken < _MAX_LOAD_STEPS)

    def attempt(carry):
        lam, dlam, q, steps, fractions, taken, attempts, J = carry
        lam_b = jnp.where(lam + dlam >= 1, jnp.asarray(1.0, dtype), lam + dlam)
        sol = newton(q, lam_b)  # its first iterate is the predictor q − J(q; λ_b)⁻¹ R(q; λ_b)
        first = sol.stats["first"]
        correction = jnp.linalg.norm(sol.value - first)
        tolerance = _BRANCH_TOLERANCE * jnp.linalg.norm(first - q) + atol + rtol * jnp.linalg.norm(sol.value)
        accept = sol.converged & (correction <= tolerance)
        return (
            jnp.where(accept, lam_b, lam),
            jnp.where(accept, jnp.minimum(2 * dlam, 1 - lam_b), 0.5 * dlam),
            jnp.where(accept, sol.value, q),
            steps + sol.num_steps,
            jnp.where(accept, fractions.at[taken].set(lam_b), fractions),
            taken + accept,
            attempts + 1,
            jnp.where(accept, sol.stats["matrix"], J),
        )

    init = (
        jnp.asarray(0.0, dtype),
        jnp.asarray(1.0, dtype),
        q0,
        jnp.array(0),
        jnp.zeros(_MAX_LOAD_STEPS, dtype),
        jnp.array(0),
        jnp.array(0),
        jnp.zeros((n, n), dtype),
    )
    lam, _, q, steps, fractions, taken, _, J = jax.lax.while_loop(keep_going, attempt, init)
    result = StaticsResults.where(lam >= 1, StaticsResults.successful, StaticsResults.load_continuation_stalled)
    return q, result, steps, fractions, taken, J
