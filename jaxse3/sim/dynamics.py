"""Forward simulation of a :class:`~jaxse3.sim.system.System` with diffrax (seed 003 §3.1–3.2).

:func:`simulate` integrates ``x = (q, q̇)`` with

- ``"kvaerno5"`` (default) / ``"kvaerno3"``: adaptive implicit ESDIRK solvers (stiff; the paper's ode15s role). The
  Jacobian ``∂ẋ/∂x = [[0, I], [∂FD/∂q, ∂FD/∂q̇]]`` (seed 003 eq. (6b)) comes from ``jax.jacfwd`` of the forward
  dynamics, i.e. from its ``custom_jvp`` rules (eqs. (7), (9)) — analytic for a rod — once per step; the stage equations
  are solved by :class:`StepChord` (a chord iteration with that Jacobian and a Hairer–Wanner convergence test on the
  stage increments); ``jacobian="finite-difference"`` replaces the rules by forward differences (the paper's
  "method 1");
- ``"newmark"``: fixed-step Newmark-β, β = 1/4, γ = 1/2, on the residual τ − ID (eqs. (10)–(12), the paper's
  "method 3"), from :mod:`jaxse3.integrate`, with ``iteration="modified"``: the factored iteration matrix is kept
  across steps and re-evaluated only when the residual contracts by less than 0.3 per update (a rod's matrix is
  mass-dominated at millisecond steps, so most steps cost a few residuals and no Jacobian). A batch
  (:func:`~jaxse3.sim.batch.simulate_batch`) runs as one stack of independent systems on the shared time grid, so
  that this decision stays scalar (under a plain ``vmap`` it would evaluate the Jacobian at every update);
- ``"newmark-index3"``: Newmark-β on the index-3 form of a constrained system (a closed chain of
  :func:`~jaxse3.sim.linkage_system`; seed 003 eqs. (52a), (52b) with the chain factors of eq. (12)): the unknowns of
  each step are (q̈, λ), the constraints e(q) = 0 hold to ``newton_tol`` at every step (no drift, no Baumgarte time
  constant), :class:`~jaxse3.integrate.ConstrainedNewmark`. The start must be consistent (e(q0) = 0, ė = 0). Output
  times between steps are linear interpolations of the steps, on which e is O(h²) instead (sample on the steps);
- ``"generalized-alpha"`` / ``"generalized-alpha-index3"``: the same two with generalised-α's numerical damping
  (``Newmark.generalized_alpha``: Chung & Hulbert's parameters from the spectral radius at infinity ``rho_inf``, the
  equations at t_{n+1} as in Arnold & Brüls): second order, the unresolved high frequencies damped to ``rho_inf``
  per step — for closed chains the (−1)ⁿ oscillation that the trapezoidal rule leaves in the multipliers λ (the
  joint efforts and constraint forces), at the price of a slightly larger error in q;
- ``"tsit5"`` / ``"dopri5"``: adaptive explicit solvers, for comparison.

Inputs u(t) are a callable, a constant or a :class:`~jaxse3.sim.system.SampledInput`. ``progress=True`` shows a tqdm
progress bar (diffrax ``TqdmProgressMeter``). The result is a :class:`~jaxse3.sim.trajectory.Trajectory`.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx
from jaxtyping import Array, ArrayLike, Bool, Float, PyTree, Real

from jaxse3._compile import Compiled, announce_trace, compile_report
from jaxse3.integrate.newmark import ConstrainedNewmark, ConstrainedResidualTerm, Newmark, SecondOrderResidualTerm
from jaxse3.integrate.newton import round_off_floor
from jaxse3.sim.system import System, as_input, finite_difference
from jaxse3.sim.trajectory import Trajectory

__all__ = ["simulate", "constraint_forces", "SOLVERS", "FIXED_STEP", "INDEX3", "ADJOINTS", "StepChord"]

SOLVERS = (
    "kvaerno5",
    "kvaerno3",
    "newmark",
    "newmark-index3",
    "generalized-alpha",
    "generalized-alpha-index3",
    "tsit5",
    "dopri5",
)
#: the fixed-step solvers (their step is ``dt``; they integrate the residual)
FIXED_STEP = ("newmark", "newmark-index3", "generalized-alpha", "generalized-alpha-index3")
#: the solvers of the index-3 form (constrained systems only; λ among the unknowns)
INDEX3 = ("newmark-index3", "generalized-alpha-index3")
#: how derivatives of :func:`simulate` are taken (its ``adjoint`` argument; "Gradients" in its docstring)
ADJOINTS = ("checkpoint", "forward", "backsolve")
_ADAPTIVE = {
    "kvaerno5": diffrax.Kvaerno5,
    "kvaerno3": diffrax.Kvaerno3,
    "tsit5": diffrax.Tsit5,
    "dopri5": diffrax.Dopri5,
}


class _ChordState(eqx.Module):
    operator: lx.AbstractLinearOperator | None  # ∂(relation)/∂f = I − γ h ∂ẋ/∂x at the step's linearisation point
    linear_state: Any  # its LU factors; StepChord.second_order: (S⁻¹, γh ∂a/∂q, γh) of :func:`_schur_inverse`
    diffsize: jax.Array  # scaled size of the last stage-increment update
    diffsize_prev: jax.Array
    result: optx.RESULTS
    step: jax.Array


@eqx.filter_jit
def _stage_jacobian(vector_field: Callable, f: PyTree[Array], gamma_h: Array, t_i: Array, y_partial, vf_args):
    """∂/∂f of the stage relation ``f − vector_field(t_i, y_i + γh f, vf_args)`` of an ODETerm at f (see
    :attr:`StepChord.vector_field`): jitted, so that its trace serves every call with the same function and shapes."""

    def relation(f):
        y_i = jax.tree.map(lambda p, z: p + gamma_h * z, y_partial, f)
        return jax.tree.map(lambda a, b: a - b, f, vector_field(t_i, y_i, vf_args))

    return jax.jacfwd(relation)(f)


@eqx.filter_jit
def _acceleration_jacobians(vector_field: Callable, y: PyTree[Array], t: Array, vf_args) -> tuple[Array, Array]:
    """(∂a/∂q, ∂a/∂q̇) of the second part of ``vector_field(t, (q, q̇), vf_args) = (q̇, a)`` at ``y = (q, q̇)``: jitted
    as :func:`_stage_jacobian`."""
    return jax.jacfwd(lambda q, qd: vector_field(t, (q, qd), vf_args)[1], argnums=(0, 1))(*y)


def _schur_inverse(a_q: Array, a_qd: Array, gamma_h: Array) -> tuple[Array, Array, Array]:
    """(S⁻¹, γh a_q, γh) with S = I − γh a_q̇ − (γh)² a_q: the stage matrix [[I, −γh I], [−γh a_q, I − γh a_q̇]] of a
    second-order vector field reduced to its Schur complement, so that an update (x, z) = J⁻¹ (r₁, r₂) is
    z = S⁻¹ (r₂ + γh a_q r₁), x = r₁ + γh z: two products with n × n matrices instead of a 2n × 2n LU solve. The
    explicit inverse (formed once per step) only steers the chord iteration, whose residual decides convergence."""
    n = a_q.shape[-1]
    S = jnp.eye(n, dtype=a_q.dtype) - gamma_h * a_qd - gamma_h * gamma_h * a_q
    return jnp.linalg.inv(S), gamma_h * a_q, gamma_h


def tiny_update(dtype: Any) -> float:
    """The scaled stage update below which :class:`StepChord` counts its iteration as converged without a rate:
    1e−3 of the step controller's tolerance in float64, 0.1 in float32 (min(0.1, max(1e−3, 10⁶ ε)))."""
    return min(0.1, max(1e-3, 1e6 * float(jnp.finfo(dtype).eps)))


class StepChord(optx.AbstractRootFinder):
    """Chord iteration for the stages of diffrax's ESDIRK solvers (Kvaerno3/5), one Jacobian per step.

    diffrax linearises the stage relation ``f − ẋ(t_i, y_i + γ h f) = 0`` once per step (at the second stage) through
    ``init`` and passes that state to every stage (``options["init_state"]``, as for diffrax's ``VeryChord``). The
    iteration stops by the test of Hairer & Wanner (*Solving ODEs II*, §IV.8) on the **stage increment** γ h Δf scaled
    by the step controller's tolerances (atol + rtol |y_i|): converged when ``‖Δz‖ ρ/(1 − ρ) < kappa`` (ρ the observed
    contraction rate) or ``‖Δz‖ < tiny`` (an update far below the tolerance, where ρ is round-off); diverged when ρ > 2.
    ``tiny`` None (default): :func:`tiny_update` of the state's dtype — 1e−3 in float64, 0.1 in float32, where the
    stage's round-off, amplified by the solve, can stay above 1e−3 of the default tolerances (on an H200 the slowest
    of 1024 CDM rods then took 148 steps for 0.2 s instead of 48, the median 30, and one ``vmap`` runs at its pace;
    ``benchmarks/README.md``, "CDM rods on a GPU").
    A failure makes diffrax reject the step and shrink it. Measuring the update in f-space against atol instead
    (optimistix ``Chord``/``Newton``) is ~1/(γh) times stricter, and the plain rate test then fails on round-off near
    rest (diffrax ``VeryChord``: 50× more steps on the CDM). This relies on diffrax's stage-relation arguments
    ``(stage, γ, vf, prod, t_i, y_partial, args, h)``, which diffrax passes for custom root finders.

    The state built for the structure of diffrax's stage loop (γ = 0: identity Jacobian) costs no Jacobian (under a
    ``vmap`` that batches γ the ``cond`` evaluates both branches, i.e. one extra Jacobian per step, as diffrax does).

    ``vector_field``: the function ``(t, y, args)`` of the ``diffrax.ODETerm`` whose stages this solves, when known.
    The Jacobian is then taken of it through a jitted function, whose trace JAX keeps for every call: diffrax traces a
    step three times, each with two linearisations (the structure's state and the second stage's), and passes its own
    closure-converted copy of the vector field, a new one each time, so ``jax.jacfwd`` of that was traced six times per
    program (3.7 of the 4.8 s that tracing a CDM simulation took). None: the Jacobian of diffrax's stage relation.

    ``second_order``: ``vector_field`` is ``(t, (q, q̇), args) ↦ (q̇, a)`` (a second-order system, as :func:`simulate`'s):
    each step then takes only ∂a/∂(q, q̇) and solves the stage updates through the n × n Schur complement of the
    2n × 2n stage matrix (:func:`_schur_inverse`; ``linear_solver`` unused): for the CDM (n = 24) 0.3 µs per update
    and 6 µs per step against 2.7 and 10 µs by LU (2026-12-05).
    """

    rtol: float
    atol: float
    norm: Callable = optx.max_norm
    kappa: float = 0.1
    tiny: float | None = None
    linear_solver: lx.AbstractLinearSolver = lx.LU()
    vector_field: Callable | None = None
    second_order: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        if self.second_order and self.vector_field is None:
            raise ValueError("StepChord: second_order=True needs the vector_field (t, (q, q̇), args) -> (q̇, a)")

    def init(
        self,
        fn: Callable[[PyTree[Array], Any], tuple[PyTree[Array], Any]],
        y: PyTree[Array],
        args: PyTree[Any],
        options: dict[str, Any],
        f_struct: PyTree[jax.ShapeDtypeStruct],
        aux_struct: PyTree[jax.ShapeDtypeStruct],
        tags: frozenset[object],
    ) -> _ChordState:
        del f_struct, aux_struct
        if "init_state" in options:
            return options["init_state"]
        diagonal = args[1]
        if self.second_order:  # the stage matrix by its Schur complement (identity at the structure's γ = 0)
            _, _, _, _, t_i, y_partial, vf_args, h = args
            y_i = jax.tree.map(lambda p, z: p + diagonal * h * z, y_partial, y)
            q = y[0]
            zero = jnp.zeros((q.shape[-1],) * 2, q.dtype)
            a_q, a_qd = jax.lax.cond(
                diagonal == 0,
                lambda: (zero, zero),
                lambda: _acceleration_jacobians(self.vector_field, y_i, t_i, vf_args),
            )
            operator, linear_state = None, _schur_inverse(a_q, a_qd, jnp.asarray(diagonal * h, q.dtype))
        else:
            if self.vector_field is None:
                full = lambda: jax.jacfwd(lambda f: fn(f, args)[0])(y)
            else:  # diffrax's stage-relation arguments (stage, γ, vf, prod, t_i, y_i, args, h); prod(f, h) = h f
                _, _, _, _, t_i, y_partial, vf_args, h = args
                full = lambda: _stage_jacobian(self.vector_field, y, diagonal * h, t_i, y_partial, vf_args)
            jac = jax.lax.cond(diagonal == 0, lambda: jax.jacfwd(lambda f: f)(y), full)
            operator = lx.PyTreeLinearOperator(jax.lax.stop_gradient(jac), jax.eval_shape(lambda: y), tags)
            linear_state = self.linear_solver.init(operator, {})
        inf = jnp.array(jnp.inf, jnp.result_type(*jax.tree.leaves(y)))
        linear_state = jax.lax.stop_gradient(linear_state)
        return _ChordState(operator, linear_state, inf, inf, optx.RESULTS.successful, jnp.array(0))

    def step(
        self,
        fn: Callable[[PyTree[Array], Any], tuple[PyTree[Array], Any]],
        y: PyTree[Array],
        args: PyTree[Any],
        options: dict[str, Any],
        state: _ChordState,
        tags: frozenset[object],
    ) -> tuple[PyTree[Array], _ChordState, Any]:
        del options, tags
        fx, aux = fn(y, args)
        if self.second_order:
            S_inv, gamma_h_a_q, gamma_h = state.linear_state
            r1, r2 = fx
            z = S_inv @ (r2 + gamma_h_a_q @ r1)
            update, result = (r1 + gamma_h * z, z), optx.RESULTS.successful
        else:
            sol = lx.linear_solve(state.operator, fx, self.linear_solver, state=state.linear_state, throw=False)
            update, result = sol.value, optx.RESULTS.promote(sol.result)
        new_y = jax.tree.map(lambda a, b: a - b, y, update)
        _, diagonal, _, prod, _, y_partial, _, control = args
        dz = prod(update, control)
        yi = jax.tree.map(lambda p, z: p + diagonal * z, y_partial, prod(new_y, control))
        size = self.norm(jax.tree.map(lambda d, v: diagonal * d / (self.atol + self.rtol * jnp.abs(v)), dz, yi))
        new_state = _ChordState(
            state.operator,
            state.linear_state,
            jnp.asarray(size, state.diffsize.dtype),
            state.diffsize,
            result,
            state.step + 1,
        )
        return new_y, new_state, aux

    def terminate(
        self,
        fn: Callable[[PyTree[Array], Any], tuple[PyTree[Array], Any]],
        y: PyTree[Array],
        args: PyTree[Any],
        options: dict[str, Any],
        state: _ChordState,
        tags: frozenset[object],
    ) -> tuple[Bool[Array, ""], optx.RESULTS]:
        del fn, y, args, options, tags
        rate = state.diffsize / state.diffsize_prev
        factor = state.diffsize * rate / (1 - rate)
        tiny = tiny_update(state.diffsize.dtype) if self.tiny is None else self.tiny
        converged = ((state.step >= 1) & (state.diffsize < tiny)) | (
            (state.step >= 2) & (factor > 0) & (factor < self.kappa)
        )
        diverged = (state.step >= 2) & ~converged & (~jnp.isfinite(rate) | (rate > 2))
        failed = state.result != optx.RESULTS.successful
        result = optx.RESULTS.where(diverged, optx.RESULTS.nonlinear_divergence, optx.RESULTS.successful)
        return converged | diverged | failed, optx.RESULTS.where(failed, state.result, result)

    def postprocess(
        self,
        fn: Callable[[PyTree[Array], Any], tuple[PyTree[Array], Any]],
        y: PyTree[Array],
        aux: Any,
        args: PyTree[Any],
        options: dict[str, Any],
        state: _ChordState,
        tags: frozenset[object],
        result: optx.RESULTS,
    ) -> tuple[PyTree[Array], Any, dict[str, Any]]:
        return y, aux, {}


def _vector_field(t, x, args):
    """ẋ = [q̇; FD(q, q̇, u(t))] (seed 003 eq. (6a))."""
    system, inputs, fd = args
    q, qd = x
    return qd, fd(system.params, q, qd, inputs(t))


def _residual(t, q, qd, qdd, args):
    """τ − ID at time t (seed 003 eq. (11))."""
    system, inputs, residual = args
    return residual(system.params, q, qd, qdd, inputs(t))


def _residual_jacobians(t, q, qd, qdd, args):
    """(∂r/∂q, ∂r/∂q̇, ∂r/∂q̈) of :func:`_residual` (through the system's derivative rules)."""
    return jax.jacfwd(_residual, argnums=(1, 2, 3))(t, q, qd, qdd, args)


def _multiplier_residual(t, q, qd, qdd, lam, args):
    """τ − ID + (the constraint forces of λ) at time t (seed 003 eq. (52a))."""
    system, inputs, residual = args
    return residual(system.params, q, qd, qdd, lam, inputs(t))


def _constraint(t, q, args):
    """e(q, u(t)) (seed 003 eq. (47c); prescribed joints' q_k − q_k(t))."""
    system, inputs, _ = args
    return system.constraint(system.params, q, inputs(t))


def _constraint_bias(t, q, qd, args):
    """ë − (∂e/∂q) q̈ = d²/ds² e(q + s q̇, u(t + s)) at s = 0 in closed form (``System.constraint_bias``), with the
    inputs' rates u̇, ü by nested JVPs in t."""
    system, inputs, _ = args
    t = jnp.asarray(t, dtype=q.dtype)
    one = jnp.ones_like(t)
    (u, ud), (_, udd) = jax.jvp(lambda s: jax.jvp(inputs, (s,), (one,)), (t,), (one,))
    return system.constraint_bias(system.params, q, qd, u, ud, udd)


def _constrained_term(system, axes=None) -> ConstrainedResidualTerm:
    """The index-3 term of ``system`` (``axes``: of a stack, :func:`_stacked`), with the system's closed-form
    constraint bias where it has one."""
    bias = None if system.constraint_bias is None else _constraint_bias
    if axes is None:
        return ConstrainedResidualTerm(_multiplier_residual, _constraint, bias=bias)
    stack = lambda fn: None if fn is None else _stacked(fn, axes)
    return ConstrainedResidualTerm(
        stack(_multiplier_residual), stack(_constraint), stack(_index3_partials), stack(bias)
    )


def _index3_partials(t, q, qd, qdd, lam, args):
    """(∂r/∂q, ∂r/∂q̇, ∂r/∂q̈, ∂r/∂λ, ∂e/∂q) of :func:`_multiplier_residual` and :func:`_constraint`."""
    return (
        *jax.jacfwd(_multiplier_residual, argnums=(1, 2, 3, 4))(t, q, qd, qdd, lam, args),
        jax.jacfwd(_constraint, argnums=1)(t, q, args),
    )


def _stacked(fn: Callable, axes) -> Callable:
    """``fn(t, *states, args)`` over a stack of members: each state (q, q̇, q̈, λ, …) (B, ·), and the arrays of
    ``args = (system, inputs, residual)`` batched along axis 0 where ``axes = (system_axes, inputs_axes)`` say so."""

    def stacked(t, *states_and_args):
        *states, args = states_and_args
        system, inputs, residual = args
        one = lambda system, inputs, *states: fn(t, *states, (system, inputs, residual))
        return eqx.filter_vmap(one, in_axes=(*axes, *(0,) * len(states)))(system, inputs, *states)

    return stacked


def simulate(
    system: System,
    inputs: Float[ArrayLike, " n_inputs"] | Callable[[Real[ArrayLike, ""]], Float[Array, " n_inputs"]] | None = None,
    *,
    t_final: float,
    q0: Float[ArrayLike, " n_dof"] | None = None,
    qd0: Float[ArrayLike, " n_dof"] | None = None,
    solver: str = "kvaerno5",
    jacobian: str = "analytic",
    rtol: float = 1e-3,
    atol: float = 1e-6,
    dt0: float | None = None,
    dt: float = 2e-3,
    newton_tol: float = 1e-10,
    rho_inf: float = 0.9,
    n_save: int = 201,
    max_steps: int = 100_000,
    adjoint: str = "checkpoint",
    checkpoints: int | None = None,
    progress: bool = False,
    throw: bool = True,
) -> Trajectory:
    """Simulate ``system`` from ``(q0, q̇0)`` (default: rest at q = 0) over ``[0, t_final]``.

    Args:
        system: the model.
        inputs: u(t): ``None`` (zero), an array (constant), a callable of t or a ``SampledInput``.
        t_final: end time (s).
        solver: one of :data:`SOLVERS` (those of :data:`INDEX3`: systems with constraints only).
        jacobian: ``"analytic"`` (the system's derivative rules) or ``"finite-difference"`` (forward differences,
            ε = 1e−6, seed 003 eq. (38)); used by the implicit solvers only.
        rtol, atol: tolerances of the adaptive solvers (paper: MATLAB defaults 1e−3, 1e−6).
        dt0: initial step of the adaptive solvers (default: chosen by diffrax).
        dt: fixed step of Newmark-β and generalised-α (paper: 2 ms for the CDM).
        newton_tol: Newmark-β's Newton tolerance on ``βh² ‖τ − ID‖_∞`` (mass × length), and for
            the index-3 solvers on the constraints ``‖e‖_∞`` too; the default 1e−10 serves float64 and float32 alike
            (in float32 the scaled residual's round-off floor lies near it, and an exact Newton update that stalls
            within :data:`~jaxse3.integrate.newton.STALL_FACTOR` × ``newton_tol`` counts as converged: the CDM's tip
            over 1 s in float32 is within 2e−6 m of float64, against 2.7e−5 m at 1e−9); tighten it (1e−14) when
            Newmark results are compared with central differences (see "Gradients").
        rho_inf: generalised-α's spectral radius at infinite frequency, in [0, 1] (1: no damping, the steps of
            Newmark-β; 0: the unresolved modes removed in one step); the ``"generalized-alpha"`` solvers only.
        n_save: number of equally spaced output times, 0 and ``t_final`` included.
        max_steps: step limit over the whole run; reaching it is an error (``throw=True``) or a failed result.
        adjoint: how ``jax`` derivatives of the result are taken (one of :data:`ADJOINTS`; see "Gradients").
        checkpoints: for ``adjoint="checkpoint"``: the states stored per segment of the run (``None``: diffrax's
            choice from ``max_steps``); fewer checkpoints, less memory, more recomputation.
        progress: show a progress bar (drawn between the compiled segments of the run; it changes neither the
            compiled program nor the numbers).
        throw: raise if the solver fails; otherwise return the Trajectory with its ``result`` code, the samples
            before the failure and NaN after it.

    Returns:
        A :class:`Trajectory` at ``n_save`` times.

    The run is split into at most 20 segments of equal numbers of output intervals (one compiled program serves all
    of them; the adaptive step size carries over). Called with concrete values, the segments are driven from Python
    (progress, results kept up to a failure) and the compiled programs enter the persistent compilation cache; inside
    a caller's ``jit``, ``vmap`` or ``grad`` they run in a ``lax.scan``, with the same results.

    **Gradients.** ``jax.grad``, ``jax.jacrev``, ``jax.jvp`` and ``jax.jacfwd`` of any function of the result with
    respect to the inputs (e.g. the values of a :class:`~jaxse3.sim.system.SampledInput`), ``q0``, ``qd0`` and the
    model's parameters (``system.params``: stiffness, damping, density, geometry) differentiate the solver's discrete
    steps (discretise-then-optimise), with the models' analytical derivative rules inside (for a rod, the
    ``custom_jvp`` rules counted in :data:`jaxse3.rod.ROD_RULE_CALLS`). Choose ``adjoint`` by the direction:

    * ``"checkpoint"`` (default; reverse mode, ``jax.grad``/``jax.jacrev``): diffrax's
      ``RecursiveCheckpointAdjoint``. The backward pass replays the steps from ``checkpoints`` stored states per
      segment: memory grows with ``checkpoints``, recomputation shrinks. For a scalar loss of many parameters
      (control knots, the parameters of a rod) this is the one.
    * ``"forward"`` (forward mode, ``jax.jvp``/``jax.jacfwd``): diffrax's ``ForwardMode``; carries one tangent per
      input direction along the solve, no storage. Cheaper when there are fewer inputs than outputs (the sensitivity
      of a whole trajectory to one or a few parameters). Reverse mode fails with it.
    * ``"backsolve"`` (reverse mode, explicit solvers only): diffrax's ``BacksolveAdjoint``, the continuous adjoint
      ODE solved backwards with the state: constant memory, but the state is re-integrated backwards in time, which
      is unstable for a damped (dissipative) model such as a rod with material damping, and the gradient matches the
      discrete one only to the solver's tolerance. Use it only for long runs of lightly damped models whose
      checkpoints do not fit in memory.

    The adaptive solvers' gradients are exact for the steps they took, but those steps change with the parameters:
    at the default ``rtol = 1e−3`` the CDM tip's gradient is 2 % off the converged value (central differences at
    that tolerance are 33 % off). For gradients you can trust use ``rtol <= 1e−8`` (``atol`` accordingly), or
    ``"newmark"``, whose fixed-step map is smooth in the parameters: its steps' roots are differentiated by the
    implicit function theorem (the exact Newmark map, whatever ``newton_tol``), so comparisons with central
    differences of Newmark runs need ``newton_tol=1e-14`` for the differenced runs to be that map. ``simulate`` warns
    when it is differentiated with an adaptive solver at ``rtol > 1e−6``.
    """
    return _checked_simulate(
        "simulate",
        system,
        inputs,
        None,
        t_final=t_final,
        q0=q0,
        qd0=qd0,
        solver=solver,
        jacobian=jacobian,
        rtol=rtol,
        atol=atol,
        dt0=dt0,
        dt=dt,
        newton_tol=newton_tol,
        rho_inf=rho_inf,
        n_save=n_save,
        max_steps=max_steps,
        adjoint=adjoint,
        checkpoints=checkpoints,
        progress=progress,
        throw=throw,
    )


def constraint_forces(
    system: System,
    trajectory: Trajectory,
    inputs: Float[ArrayLike, " n_inputs"] | Callable[[Real[ArrayLike, ""]], Float[Array, " n_inputs"]] | None = None,
) -> Trajectory:
    """``trajectory`` with the multipliers λ(t) of its constrained system as the monitor ``"multipliers"`` (T, m):
    at every sample, (q̈, λ) solving ``r(q, q̇, q̈, λ, u(t)) = 0`` and ë = 0 (the constraints' second derivative along
    the motion; :meth:`~jaxse3.integrate.ConstrainedResidualTerm.solve_acceleration`) at the saved (q, q̇).

    For a closed chain (:func:`~jaxse3.sim.linkage_system` with ``closures``): the closures' rows first (Φ⊥λ, the
    wrench of each closure on its frame A's body in frame B's coordinates, :func:`jaxse3.linkage.index3_residual`),
    then, with ``prescribed`` joints, the efforts those joints exert (N·m or N). ``inputs``: the inputs the trajectory
    was simulated with (as :func:`simulate`; the prescriptions' accelerations enter ë). The multipliers are those of
    the saved states, exact for the continuous problem there; a fixed-step run's own λ differ by its O(h²) error.
    """
    if system.constraint is None or system.multiplier_residual is None:
        raise TypeError("constraint_forces: 'system' has no constraints (closed chains: linkage_system(..., closures))")
    q, qd, t = (jnp.asarray(x) for x in (trajectory.q, trajectory.qd, trajectory.t))
    if q.ndim != 2 or q.shape[1] != system.n_dof or qd.shape != q.shape:
        raise ValueError(
            f"constraint_forces: 'trajectory' must be one run of this system, q and qd (T, {system.n_dof}); got "
            f"{q.shape} and {qd.shape} (map over a batch's members)"
        )
    lam = _multipliers(system, as_input(inputs, system.n_inputs), t, q, qd)
    return eqx.tree_at(lambda tr: tr.monitors, trajectory, {**trajectory.monitors, "multipliers": lam})


@eqx.filter_jit
def _multipliers(system, inputs, t, q, qd):
    term = _constrained_term(system)
    args = (system, inputs, system.multiplier_residual)
    one = lambda t, q, qd: term.solve_acceleration(t, q, qd, args, 1e-12, 4).value[system.n_dof :]
    return jax.vmap(one)(t, q, qd)


#: the keyword arguments of :func:`simulate` with their defaults
DEFAULTS = {
    k: p.default
    for k, p in inspect.signature(simulate).parameters.items()
    if p.kind is p.KEYWORD_ONLY and p.default is not p.empty
}


def batch_axes(x: PyTree[Any], batched: bool) -> PyTree[int | None]:
    """vmap in_axes for a pytree: 0 on its array leaves if batched, else None."""
    return jax.tree.map(lambda _: 0 if batched else None, eqx.filter(x, eqx.is_array))


def simulate_stack(system: System, inputs: Any, batched: tuple[bool, bool], **kwargs: Any) -> Trajectory:
    """Newmark-β (or its index-3 form) over a stack of B systems on one time grid (``q0``, ``qd0`` (B, n)), the arrays
    of ``system`` / ``inputs`` batched along axis 0 where ``batched = (batch_system, batch_inputs)`` say so; the
    implementation of :func:`~jaxse3.sim.batch.simulate_batch` for Newmark. Keyword arguments as :func:`simulate`."""
    kw = {**DEFAULTS, **kwargs}
    if kw["solver"] not in FIXED_STEP:
        raise ValueError(f"simulate_stack: only for the solvers {FIXED_STEP}, got {kw['solver']!r}")
    return _checked_simulate("simulate_batch", system, inputs, batched, **kw)


def _checked_simulate(
    who,
    system,
    inputs,
    stack,
    *,
    t_final,
    q0,
    qd0,
    solver,
    jacobian,
    rtol,
    atol,
    dt0,
    dt,
    newton_tol,
    rho_inf,
    n_save,
    max_steps,
    adjoint,
    checkpoints,
    progress,
    throw,
) -> Trajectory:
    """:func:`simulate` after checking the arguments; for a Newmark stack, ``stack = (batch_system, batch_inputs)``
    and ``q0``, ``qd0`` are (B, n)."""
    if solver not in SOLVERS:
        raise ValueError(f"{who}: solver must be one of {SOLVERS}, got {solver!r}")
    if jacobian not in ("analytic", "finite-difference"):
        raise ValueError(f"{who}: jacobian must be 'analytic' or 'finite-difference', got {jacobian!r}")
    if adjoint not in ADJOINTS:
        raise ValueError(f"{who}: adjoint must be one of {ADJOINTS}, got {adjoint!r}")
    if adjoint == "backsolve" and solver not in ("tsit5", "dopri5"):
        raise ValueError(
            f"{who}: adjoint='backsolve' needs an explicit solver ('tsit5' or 'dopri5'), got solver={solver!r}; "
            "use adjoint='checkpoint' (reverse mode) or 'forward' (forward mode)"
        )
    if not (checkpoints is None or (isinstance(checkpoints, int) and checkpoints >= 1)):
        raise ValueError(f"{who}: checkpoints must be None or a positive int, got {checkpoints!r}")
    positive = (
        ("t_final", t_final),
        ("rtol", rtol),
        ("atol", atol),
        ("dt", dt),
        ("dt0", dt0),
        ("newton_tol", newton_tol),
    )
    for name, v in positive:
        if v is not None and _concrete(v) and not (jnp.ndim(v) == 0 and np.isfinite(v) and v > 0):
            raise ValueError(f"{who}: {name} must be positive and finite, got {v}")
    if not (_concrete(rho_inf) and jnp.ndim(rho_inf) == 0 and 0.0 <= float(rho_inf) <= 1.0):
        raise ValueError(f"{who}: rho_inf must be a number in [0, 1], got {rho_inf!r}")
    if not (isinstance(n_save, int) and n_save >= 2):
        raise ValueError(f"{who}: n_save must be an int >= 2, got {n_save!r}")
    if not (isinstance(max_steps, int) and max_steps >= 1):
        raise ValueError(f"{who}: max_steps must be a positive int, got {max_steps!r}")
    n = system.n_dof
    shape = (n,) if stack is None else (jnp.shape(q0)[0], n)
    f = jnp.result_type(float)
    q0 = jnp.asarray(np.zeros(shape, f)) if q0 is None else jnp.asarray(q0, dtype=f)  # numpy: no eager compile
    qd0 = jnp.asarray(np.zeros(shape, f)) if qd0 is None else jnp.asarray(qd0, dtype=f)
    differentiated = _differentiated((system, inputs, q0, qd0, t_final))
    if solver not in FIXED_STEP and _concrete(rtol) and rtol > 1e-6 and differentiated:
        warnings.warn(
            f"{who}: differentiating an adaptive solve at rtol={rtol:g}: the gradient follows the solver's "
            "steps and matches the true sensitivity only to about rtol (2 % for the CDM at 1e-3); use "
            "rtol <= 1e-8 or solver='newmark' for gradients you can trust",
            stacklevel=3,
        )
    for name, v in (("q0", q0), ("qd0", qd0)):
        if v.shape != shape:
            raise ValueError(f"{who}: {name} must have shape {shape}, got {v.shape}")
        if _concrete(v) and not np.all(np.isfinite(v)):
            raise ValueError(f"{who}: {name} has non-finite entries (NaN or inf)")
    if stack is not None and stack[1]:  # one input specification per member
        inputs = eqx.filter_vmap(lambda u: as_input(u, system.n_inputs))(inputs)
    else:
        inputs = as_input(inputs, system.n_inputs)
    axes = None if stack is None else (batch_axes(system, stack[0]), batch_axes(inputs, stack[1]))
    if solver in INDEX3:
        _check_constrained_start(who, solver, system, inputs, axes, q0, qd0)
    # numbers enter as arrays, so that one compilation serves every t_final, tolerance and step
    t_final, rtol, atol, dt = (jnp.asarray(v, dtype=float) for v in (t_final, rtol, atol, dt))
    dt0 = None if dt0 is None else jnp.asarray(dt0, dtype=float)
    cfg = _Config(solver, jacobian, max_steps, adjoint, checkpoints, float(newton_tol), float(rho_inf))
    return _run(system, inputs, axes, q0, qd0, t_final, rtol, atol, dt0, dt, n_save, cfg, progress, throw, who)


def _concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def consistent_start_tol(dtype: Any) -> float:
    """The largest ‖e(q0)‖_∞ and ‖ė(q0, q̇0)‖_∞ that the index-3 solvers (:data:`INDEX3`) accept as a consistent
    start: 1e−8 in float64, 100 ε where round-off is coarser (float32: 1.2e−5)."""
    return max(1e-8, round_off_floor(dtype))


def _check_constrained_start(who, solver, system, inputs, axes, q0, qd0):
    """An index-3 solver needs constraints, and (checked when the values are concrete) a start on them."""
    if system.constraint is None or system.multiplier_residual is None:
        raise ValueError(
            f"{who}: solver={solver!r} integrates a system with holonomic constraints (a closed chain: "
            f"sim.linkage_system(..., closures=...)); this system has none: use solver={solver[:-7]!r}"
        )
    if not all(_concrete(x) for x in jax.tree.leaves((system, inputs, q0, qd0))):
        return
    e, ed = (np.asarray(x) for x in _constraint_rates(system, inputs, axes, q0, qd0))
    worst = max(np.abs(e).max(initial=0.0), np.abs(ed).max(initial=0.0))
    tol = consistent_start_tol(e.dtype)
    if not worst <= tol:
        raise ValueError(
            f"{who}: solver={solver!r} needs a consistent start, on the constraints: got ‖e(q0)‖_∞ = "
            f"{np.abs(e).max(initial=0.0):.3g} and ‖ė(q0, qd0)‖_∞ = {np.abs(ed).max(initial=0.0):.3g} (allowed: "
            f"{tol:g}). Start from a configuration that closes every loop (e.g. a solution of "
            "sim.solve_statics) with qd0 in the null space of the closures' Jacobian (and prescribed joints at "
            "their prescription at t = 0), or integrate the Baumgarte form (solver='newmark' or 'kvaerno5'), which "
            "pulls an inconsistent start onto the constraints"
        )


@eqx.filter_jit
def _constraint_rates(system, inputs, axes, q0, qd0):
    """(e, ė = (∂e/∂q) q̇0 + ∂e/∂t) at t = 0 for one system or a stack."""

    def rates(system, inputs, q, qd):
        e = lambda q, t: system.constraint(system.params, q, inputs(t))
        t0 = jnp.zeros((), q.dtype)
        return jax.jvp(e, (q, t0), (qd, jnp.ones_like(t0)))

    if axes is None:
        return rates(system, inputs, q0, qd0)
    return eqx.filter_vmap(rates, in_axes=(*axes, 0, 0))(system, inputs, q0, qd0)


def _differentiated(tree) -> bool:
    """Whether a leaf is being differentiated (forward or reverse mode) at this level of tracing."""
    return any(type(x).__name__ in ("JVPTracer", "LinearizeTracer") for x in jax.tree.leaves(tree))


class _RememberStep(diffrax.AbstractAdaptiveStepSizeController):
    """A :class:`diffrax.PIDController` that also keeps the step it proposed last, so that the next segment of a
    segmented simulation starts with it (the segment's own last step is clipped to the segment's end)."""

    inner: diffrax.PIDController

    @property
    def rtol(self):
        return self.inner.rtol

    @property
    def atol(self):
        return self.inner.atol

    @property
    def norm(self):
        return self.inner.norm

    def wrap(self, direction):
        return _RememberStep(self.inner.wrap(direction))

    def init(self, terms, t0, t1, y0, dt0, args, func, error_order):
        tnext, state = self.inner.init(terms, t0, t1, y0, dt0, args, func, error_order)
        return tnext, (state, tnext - t0)

    def adapt_step_size(self, t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state):
        keep, tprev, tnext, jump, state, result = self.inner.adapt_step_size(
            t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state[0]
        )
        return keep, tprev, tnext, jump, (state, tnext - tprev), result

    def clip_to_end(self, *args):  # pragma: no cover - not used for ODEs
        return self.inner.clip_to_end(*args)


class _Config(eqx.Module):
    """The compile-time choices of one simulation."""

    solver: str = eqx.field(static=True)
    jacobian: str = eqx.field(static=True)
    max_steps: int = eqx.field(static=True)
    adjoint: str = eqx.field(static=True, default="checkpoint")
    checkpoints: int | None = eqx.field(static=True, default=None)
    newton_tol: float = eqx.field(static=True, default=1e-10)
    rho_inf: float = eqx.field(static=True, default=0.9)

    def newmark(self, cls: type[Newmark]) -> Newmark:
        """The fixed-step method of ``solver`` (``cls``: Newmark or ConstrainedNewmark)."""
        options = dict(tol=self.newton_tol, iteration="modified")
        if self.solver.startswith("generalized-alpha"):
            return cls.generalized_alpha(self.rho_inf, **options)
        return cls(beta=0.25, gamma=0.5, **options)

    def diffrax_adjoint(self) -> diffrax.AbstractAdjoint:
        if self.adjoint == "forward":
            return diffrax.ForwardMode()
        if self.adjoint == "backsolve":
            return diffrax.BacksolveAdjoint()
        return diffrax.RecursiveCheckpointAdjoint(self.checkpoints)


class _Carry(eqx.Module):
    """What one segment hands to the next: the state, the integrator's and step controller's states, the next step,
    the result code so far and the steps taken so far."""

    y: Any
    solver_state: Any
    controller_state: Any
    made_jump: jax.Array
    dt: jax.Array
    result: jax.Array  # int32 code of diffrax.RESULTS
    num_steps: jax.Array


def _setup(system, inputs, axes, cfg: _Config, rtol, atol):
    """(term, method, step controller, args) of one simulation."""
    fd_jac = finite_difference if cfg.jacobian == "finite-difference" else (lambda f: f)
    if cfg.solver in INDEX3:
        term = _constrained_term(system, axes)
        method = cfg.newmark(ConstrainedNewmark)
        return term, method, diffrax.ConstantStepSize(), (system, inputs, fd_jac(system.multiplier_residual))
    if cfg.solver in FIXED_STEP:
        if axes is None:
            term = SecondOrderResidualTerm(_residual)
        else:
            term = SecondOrderResidualTerm(_stacked(_residual, axes), _stacked(_residual_jacobians, axes))
        method = cfg.newmark(Newmark)
        return term, method, diffrax.ConstantStepSize(), (system, inputs, fd_jac(system.residual))
    method = _ADAPTIVE[cfg.solver]()
    if isinstance(method, diffrax.AbstractImplicitSolver):
        chord = diffrax.with_stepsize_controller_tols(StepChord)(vector_field=_vector_field, second_order=True)
        method = type(method)(root_finder=chord)
    controller = _RememberStep(diffrax.PIDController(rtol=rtol, atol=atol))
    return diffrax.ODETerm(_vector_field), method, controller, (system, inputs, fd_jac(system.forward_dynamics))


def _start(system, inputs, axes, q0, qd0, ts, rtol, atol, dt0, dt, cfg: _Config):
    """The carry at t = 0 (the integrator's and step controller's initial states, as ``diffeqsolve`` makes them),
    the points at q0 and the inputs at the output times."""
    term, method, controller, args = _setup(system, inputs, axes, cfg, rtol, atol)
    y0, t0, t_final = (q0, qd0), ts[0], ts[-1]
    controller = controller.wrap(1)
    first = dt if cfg.solver in FIXED_STEP else dt0
    tnext, cstate = controller.init(term, t0, t_final, y0, first, args, method.func, method.error_order(term))
    tnext = jnp.minimum(tnext, t_final)
    sstate = method.init(term, t0, tnext, y0, args)
    zero = jnp.asarray(0, jnp.int32)
    # every leaf an array (diffrax keeps some flags as Python bools until a step has run), so that the carry has one
    # signature before and after a segment
    carry = jax.tree.map(jnp.asarray, _Carry(y0, sstate, cstate, False, tnext - t0, zero, zero))
    if axes is None:
        u = jax.vmap(inputs)(ts)
    elif not jax.tree.leaves(axes[1]):  # the members share the inputs
        u = jax.vmap(inputs)(ts)
        u = jnp.broadcast_to(u, (q0.shape[0], *u.shape))
    else:
        u = eqx.filter_vmap(lambda inputs: jax.vmap(inputs)(ts), in_axes=(axes[1],), out_axes=0)(inputs)
    return carry, _points(system, axes, q0[None])[0], u


def _segment(system, inputs, axes, carry: _Carry, ts, rtol, atol, cfg: _Config):
    """Integrate from ``ts[0]`` to ``ts[-1]``, continuing ``carry``, and return the new carry and ``(q, q̇, points)``
    at ``ts[1:]`` (NaN after a failure). No host callback: the program can enter the persistent cache."""
    term, method, controller, args = _setup(system, inputs, axes, cfg, rtol, atol)
    saveat = diffrax.SaveAt(ts=ts[1:], solver_state=True, controller_state=True, made_jump=True)
    # the backsolve adjoint differentiates only the initial state and the args: each segment starts afresh (the
    # explicit solvers then evaluate the vector field once more) from the step size reached, taken as a constant
    fresh = cfg.adjoint == "backsolve"
    sol = diffrax.diffeqsolve(
        term,
        method,
        ts[0],
        ts[-1],
        jax.lax.stop_gradient(carry.dt) if fresh else carry.dt,
        carry.y,
        args=args,
        saveat=saveat,
        stepsize_controller=controller,
        max_steps=cfg.max_steps,
        adjoint=cfg.diffrax_adjoint(),
        throw=False,
        solver_state=None if fresh else carry.solver_state,
        controller_state=None if fresh else carry.controller_state,
        made_jump=carry.made_jump,
    )
    steps = carry.num_steps + sol.stats["num_steps"]
    code = jnp.where(steps > cfg.max_steps, diffrax.RESULTS.max_steps_reached._value, sol.result._value)
    failed_before = carry.result != 0
    result = jnp.where(failed_before, carry.result, code).astype(jnp.int32)
    # diffrax leaves the outputs a failed solve did not reach infinite; they become NaN (and all of a later segment)
    q, qd = jax.tree.map(lambda x: jnp.where(failed_before | ~jnp.isfinite(x), jnp.nan, x), sol.ys)
    dt = carry.dt if cfg.solver in FIXED_STEP else sol.controller_state[1]
    new = _Carry((q[-1], qd[-1]), sol.solver_state, sol.controller_state, sol.made_jump, dt, result, steps)
    new = jax.tree.map(jnp.asarray, new)
    new = jax.tree.map(lambda a, b: jnp.where(failed_before, a, b), carry, new)  # nothing changes after a failure
    return new, (q, qd, _points(system, axes, q))


def _points(system, axes, q):
    """World centreline points (T, [B,] n_points, 3) of a motion q (T, [B,] n)."""
    if axes is None:
        return jax.vmap(lambda q: system.points(system.params, q))(q)
    one = lambda system, q: jax.vmap(lambda q: system.points(system.params, q))(q)
    return eqx.filter_vmap(one, in_axes=(axes[0], 1), out_axes=1)(system, q)


def _describe(system, inputs, axes, *rest) -> str:
    cfg = rest[-1]
    stack = "" if axes is None else ", a stack of systems"
    return f"{cfg.solver}, {system.n_dof} DoF{stack}"


_START = Compiled(_start, "simulate: initial state", _describe, cacheable=True)
_SEGMENT = Compiled(_segment, "simulate", _describe, cacheable=True)


def segment_length(n_save: int, max_segments: int = 20) -> int:
    """Output intervals per segment: the smallest divisor of ``n_save − 1`` that gives at most ``max_segments``
    segments (so every segment has the same shape and one compiled program serves them all)."""
    n = n_save - 1
    return next(d for d in range(1, n + 1) if n % d == 0 and n // d <= max_segments)


def _run(
    system,
    inputs,
    axes,
    q0,
    qd0,
    t_final,
    rtol,
    atol,
    dt0,
    dt,
    n_save,
    cfg: _Config,
    progress: bool,
    throw: bool,
    who: str,
) -> Trajectory:
    """Integrate segment by segment. Called with concrete arrays, the segments are driven from Python (a progress
    bar between them; the compiled programs hold no host callback, so they enter JAX's persistent cache); inside a
    trace (``jit``/``vmap``/``grad`` of the caller) the same segments run in a ``lax.scan``."""
    leaves = jax.tree.leaves((system, inputs, q0, qd0, t_final, rtol, atol, dt0, dt))
    traced = any(isinstance(x, jax.core.Tracer) for x in leaves)
    m = segment_length(n_save)
    index = np.arange(0, n_save - 1, m)[:, None] + np.arange(m + 1)  # (segments, m + 1) windows of the output grid
    if traced:
        ts = jnp.linspace(0.0, t_final, n_save)
    else:  # numpy on the host: no small eager compilations before the first segment
        ts = jnp.asarray(np.linspace(0.0, float(t_final), n_save, dtype=t_final.dtype))
    windows = ts[index] if traced else jnp.asarray(np.asarray(ts)[index])
    with compile_report("simulate", _describe(system, inputs, axes, cfg)):
        carry, points0, u = _START(system, inputs, axes, q0, qd0, ts, rtol, atol, dt0, dt, cfg)
        if traced:
            announce_trace("simulate", _describe(system, inputs, axes, cfg))
            segment = lambda c, w: _segment(system, inputs, axes, c, w, rtol, atol, cfg)
            carry, outs = jax.lax.scan(segment, carry, windows)
            q, qd, points = (
                jnp.concatenate([a[None], b.reshape(-1, *b.shape[2:])]) for a, b in zip((q0, qd0, points0), outs)
            )
            return _assemble(axes, ts, q, qd, u, points, carry.num_steps, carry.result)
        u_host = np.asarray(u)
        bad = ~np.isfinite(u_host).reshape(u_host.shape[0], -1).all(axis=1)
        if axes is None and bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"{who}: inputs are non-finite at t = {float(ts[k]):g} s: u = {u_host[k]}")
        # compiled before the bar appears; every segment has the same signature, so one lookup serves them all
        run = _SEGMENT.compiled(system, inputs, axes, carry, windows[0], rtol, atol, cfg)
        outs = [[np.asarray(x)[None] for x in (q0, qd0, points0)]]
        bar = _progress_bar(progress, float(t_final))
        try:
            for w in windows:
                carry, out = run(system, inputs, axes, carry, w, rtol, atol, cfg)
                outs.append([np.asarray(x) for x in out])
                if bar is not None:
                    bar.update(float(w[-1] - w[0]))
                if int(carry.result) != 0:
                    break  # a run stopped early: the samples it did not reach stay NaN
        finally:
            if bar is not None:
                bar.close()
    q, qd, points = (np.concatenate(x) for x in zip(*outs))
    q, qd, points = (np.concatenate([x, np.full((n_save - len(x), *x.shape[1:]), np.nan)]) for x in (q, qd, points))
    if axes is None:  # assembled on the host (no eager compilation), then moved to the device
        host = Trajectory(
            t=np.asarray(ts),
            q=q,
            qd=qd,
            u=u_host,
            points=points,
            tip=points[:, -1],
            num_steps=np.asarray(carry.num_steps),
            result=np.asarray(carry.result),
        )
        traj = jax.tree.map(jnp.asarray, host)
    else:
        traj = _assemble(
            axes, ts, *(jnp.asarray(x) for x in (q, qd)), u, jnp.asarray(points), carry.num_steps, carry.result
        )
    if throw and int(carry.result) != 0:
        raise RuntimeError(_failure_message(who, traj, cfg))
    return traj


def _assemble(axes, ts, q, qd, u, points, num_steps, result) -> Trajectory:
    """The Trajectory; for a stack (members along axis 1 of q, q̇, points (T, B, ...); u (B, T, n_u)), a batch of
    them with the members in front."""
    if axes is None:
        return Trajectory(t=ts, q=q, qd=qd, u=u, points=points, tip=points[:, -1], num_steps=num_steps, result=result)
    q, qd, points = (jnp.moveaxis(x, 1, 0) for x in (q, qd, points))
    B = q.shape[0]
    return Trajectory(
        t=jnp.broadcast_to(ts, (B, *ts.shape)),
        q=q,
        qd=qd,
        u=u,
        points=points,
        tip=points[:, :, -1],
        num_steps=jnp.broadcast_to(num_steps, (B,)),
        result=jnp.broadcast_to(result, (B,)),
    )


def failure_summary(traj: Trajectory, solver: str) -> str:
    """The words for a failed run of :func:`simulate` (``throw=False``): "the ``solver`` solver failed after t = …:
    …", with the last sample time every member reached with a finite state and the solver's status."""
    t, q = np.asarray(traj.t), np.asarray(traj.q)
    if q.ndim == 3:  # a stack: (B, T, n)
        t, q = t[0], np.moveaxis(q, 0, 1)
    ok = np.isfinite(q).reshape(len(t), -1).all(axis=1)
    reached = float(t[ok][-1]) if ok.any() else 0.0
    return f"the {solver} solver failed after t = {reached:g} s: {traj.message}"


def _failure_message(who: str, traj: Trajectory, cfg: _Config) -> str:
    text = f"{who}: {failure_summary(traj, cfg.solver)}"
    if int(np.ravel(traj.result)[0]) == int(diffrax.RESULTS.max_steps_reached._value):
        text += (
            " The state or the inputs may have become non-finite (check `inputs` and the model), or the motion "
            "needs more steps: raise `max_steps` or loosen `rtol`/`atol`."
        )
    return text + " Pass throw=False to get the partial Trajectory (NaN after the failure, with its result code)."


def _progress_bar(progress: bool, total: float):
    if not progress:
        return None
    from tqdm.auto import tqdm

    bar_format = "{l_bar}{bar}| {n:.3g}/{total:.3g} s [{elapsed}<{remaining}]"
    return tqdm(total=total, unit="s", desc="simulate", bar_format=bar_format)
