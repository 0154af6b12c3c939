"""Newton's method, once for the whole package: root finding, the chord iteration with a kept inverse, and the result.

* :func:`newton_iterations` — the Newton loop: at each iterate ``x`` evaluate the residual and an iteration matrix,
  ``(R, S) = fun(x)``, update ``x ← x − S⁻¹R``, and stop when the caller's termination test holds or a value is
  non-finite; optionally fail as soon as an update is not shorter than the one before (the iterate left the region
  of quadratic convergence). The time steppers (generalised-α, Newmark-β) and the statics of :mod:`jaxse3.sim` run it.
* :func:`newton` — that loop with the residual test ``‖R‖_∞ ≤ tol`` and a root made differentiable by the implicit
  function theorem (:func:`differentiable_root`), for solvers called inside a differentiated program.
* :func:`modified_newton` — a chord iteration whose matrix is kept inverted across calls (in the caller's solver state)
  and refreshed only when the residual contracts too slowly: for slowly varying Jacobians, e.g. Newmark-β on a
  mass-dominated structure, most steps then cost a few residuals.
* :class:`NewtonResult` — what every Newton solve in :mod:`jaxse3` returns (the minimiser of
  :mod:`jaxse3.sim.energy_statics` included), with the result codes :class:`NewtonResults`.

The iterations run in a ``lax.while_loop`` (stopping as soon as they have converged) on stop-gradient'ed inputs. The
root ``x*`` is then made differentiable by the implicit function theorem: a ``custom_jvp`` returns ``x*`` unchanged
and, only when a derivative is asked for, evaluates the exact iteration matrix ``S = ∂R/∂x`` at the root and returns
the tangent ``dx* = −S⁻¹ (∂R/∂p) dp``. The rule is linear in ``dp``, so reverse mode transposes it, although
``while_loop`` itself is not reverse-differentiable. A plain (undifferentiated) solve therefore costs no extra
residual or Jacobian after the loop. All solvers accept a block-diagonal system: ``x`` of shape ``(..., k)`` with
matrices ``(..., k, k)`` (independent blocks solved together, one convergence test over all of them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jax import lax
from jaxtyping import Array, Bool, Float

from jaxse3.lie.tangents import jvp_moving

__all__ = [
    "NewtonResults",
    "NewtonResult",
    "newton_iterations",
    "newton",
    "differentiable_root",
    "Inverse",
    "invert",
    "modified_newton",
    "newton_statistics",
    "default_tolerance",
    "round_off_floor",
    "STALL_FACTOR",
]


def round_off_floor(dtype: Any) -> float:
    """100 ε of ``dtype`` (2.2e−14 in float64, 1.2e−5 in float32): the least a residual or a constraint of order one
    can be asked to reach in it, the floor of the dtype-aware tolerances (:func:`default_tolerance`, the index-3
    solvers' constraint test and their consistent start)."""
    return 100 * float(jnp.finfo(dtype).eps)


def default_tolerance(dtype: Any = None) -> float:
    """The Newton tolerance a residual in force units can reach in ``dtype``: max(1e−10, 100 ε) — 1e−10 in float64,
    1.2e−5 in float32 (statics: the residual's round-off is ~1e−6 of its terms, so 1e−10 would never be met; Newmark's
    residual, scaled by βh², keeps 1e−10 in both: its float32 round-off floor lies there, see
    :data:`STALL_FACTOR`). ``dtype`` None: JAX's default floating dtype (float64 with ``jax_enable_x64``)."""
    return max(1e-10, round_off_floor(jnp.result_type(float) if dtype is None else jnp.dtype(dtype)))


class NewtonResults(optx.RESULTS):
    """The optimistix result codes (``successful``, ``nonlinear_max_steps_reached``, ``nonlinear_divergence``,
    ``singular``, ``nonfinite``, …) plus the failure of a minimiser's line search."""

    line_search_failed = "The line search failed to decrease the objective along the Newton direction."


class NewtonResult(eqx.Module):
    """The outcome of a Newton solve.

    Attributes:
        value: the root (or minimiser); for the differentiable solvers, differentiable w.r.t. their parameters.
        result: a :class:`NewtonResults` code (``NewtonResults.successful`` when converged).
        num_steps: the number of Newton updates (linear solves), int.
        stats: what a particular solver adds:

            * :func:`newton_iterations`: ``"first"``, the first iterate (a continuation predictor), and ``"matrix"``,
              the iteration matrix last evaluated (at the iterate before ``value``);
            * :func:`modified_newton`: ``"inverse"`` (the :class:`Inverse` in use at the end: pass them to the next
              call) and ``"refreshes"`` (matrix evaluations in this call);
            * the minimiser of :mod:`jaxse3.sim.energy_statics`: ``"residuals"``, ``"energies"`` and ``"step_sizes"``
              of every iterate.
    """

    value: jax.Array
    result: NewtonResults
    num_steps: jax.Array
    stats: dict[str, Any] = eqx.field(default_factory=dict)

    @property
    def converged(self) -> Bool[Array, ""]:
        """True iff the solve succeeded (a traced bool inside jit)."""
        return self.result == NewtonResults.successful


def _norm(R):
    return jnp.max(jnp.abs(R))


def _solve(S, R):
    """``S⁻¹ R`` for one matrix ``(k, k)`` or a stack of blocks ``(..., k, k)`` with ``R`` ``(..., k)``."""
    return jnp.linalg.solve(S, R[..., None])[..., 0]


def newton_iterations(
    fun: Callable[[Float[Array, "*b k"]], tuple[Float[Array, "*b k"], Float[Array, "*b k k"]]],
    x0: Float[Array, "*b k"],
    done: Callable[[Float[Array, "*b k"], Float[Array, "*b k"], Float[Array, "*b k"]], Bool[Array, ""]],
    max_steps: int,
    contractive: bool = False,
) -> NewtonResult:
    """Newton's method on ``R(x) = 0`` from ``x0``, without derivatives through the loop.

    Each step evaluates ``(R, S) = fun(x)`` at the current iterate, updates ``x ← x − S⁻¹R`` and stops when
    ``done(x_new, dx, R)`` holds (a scalar bool; e.g. ``‖R‖_∞ ≤ tol``, or the Cauchy test of ``optimistix.Newton``
    on ``dx``), when ``R`` or the update is non-finite (``nonfinite``, ``singular``), or after ``max_steps`` updates
    (``nonlinear_max_steps_reached``). ``contractive``: fail (``nonlinear_divergence``) as soon as an update is not
    shorter (``max|dx|``) than the one before and ``done`` does not hold — ``x0`` is then outside the region of
    quadratic convergence, where Newton may wander to another root.

    Returns a :class:`NewtonResult` whose ``value`` is the last iterate (the update from the last residual applied),
    with ``stats["first"]`` and ``stats["matrix"]``.
    """

    def not_done(carry):
        _, _, steps, stop, _, _, _ = carry
        return ~stop & (steps < max_steps)

    def step(carry):
        x, _, steps, _, first, _, last = carry
        R, S = fun(x)
        dx = _solve(S, R)
        x_new, size = x - dx, jnp.max(jnp.abs(dx))
        result = NewtonResults.where(
            jnp.all(jnp.isfinite(R)),
            NewtonResults.where(jnp.all(jnp.isfinite(dx)), NewtonResults.successful, NewtonResults.singular),
            NewtonResults.nonfinite,
        )
        converged = done(x_new, dx, R)
        if contractive:
            result = NewtonResults.where(converged | (size < last), result, NewtonResults.nonlinear_divergence)
        stop = converged | (result != NewtonResults.successful)
        return x_new, result, steps + 1, stop, jnp.where(steps == 0, x_new, first), S, size

    x0 = lax.stop_gradient(x0)
    S0 = jax.eval_shape(lambda: fun(x0)[1])
    inf = jnp.asarray(jnp.inf, x0.dtype)
    init = (x0, NewtonResults.successful, jnp.array(0), jnp.array(False), x0, jnp.zeros(S0.shape, S0.dtype), inf)
    x, result, steps, stop, first, S, _ = lax.while_loop(not_done, step, init)
    result = NewtonResults.where(stop, result, NewtonResults.nonlinear_max_steps_reached)
    return NewtonResult(x, result, steps, {"first": first, "matrix": S})


def differentiable_root(
    residual: Callable[[Float[Array, "*b k"], Any], Float[Array, "*b k"]],
    matrix: Callable[[Float[Array, "*b k"], Any], Float[Array, "*b k k"]],
    x: Float[Array, "*b k"],
    params: Any,
    linearised: Callable[[Float[Array, "*b k"], Any, Any], tuple[Float[Array, "*b k k"], Float[Array, "*b k"]]]
    | None = None,
) -> Float[Array, "*b k"]:
    """``x`` (a root of ``residual(·, params)``, computed without gradients), differentiable w.r.t. ``params`` by the
    implicit function theorem: ``dx = −matrix(x, params)⁻¹ ∂residual/∂params · dparams``.

    ``matrix`` (the exact ``∂residual/∂x``, blocks ``(..., k, k)`` for block systems) is evaluated only when a
    derivative is taken. ``params``: any pytree; its inexact arrays are what the result is differentiable w.r.t.
    ``residual`` and ``matrix`` must not close over traced values (pass them in ``params``): the derivative rule is
    traced apart from the caller (a closed-over tracer fails at lowering with "No constant handler").

    ``linearised(x, params, dparams) -> (∂R/∂x, ∂R/∂params · dparams)``, when given, replaces ``matrix`` and the JVP
    of ``residual`` (``dparams``: the tangents of ``params``' inexact arrays, None at its other leaves, symbolic zeros
    (:func:`~jaxse3.lie.tangents.is_zero`) where a parameter is not differentiated): for a
    residual whose partial derivatives in x also give its derivative in part of the parameters (a time step's
    residual in the previous state), one linearisation then serves both.
    """
    dyn, static = eqx.partition(params, eqx.is_inexact_array)

    @jax.custom_jvp
    def root(x, dyn):
        return x

    def root_jvp(primals, tangents):
        x, dyn = primals
        _, ddyn = tangents  # symbolic zeros where a parameter does not move: no JVP along it
        p = eqx.combine(dyn, static)
        if linearised is not None:
            S, dR = linearised(x, p, ddyn)
            return x, -_solve(S, dR)
        dR = jvp_moving(lambda d: residual(x, eqx.combine(d, static)), (dyn,), (ddyn,))
        return x, jnp.zeros_like(x) if dR is None else -_solve(matrix(x, p), dR)

    root.defjvp(root_jvp, symbolic_zeros=True)

    return root(lax.stop_gradient(x), dyn)


def _frozen(params):
    dyn, static = eqx.partition(params, eqx.is_inexact_array)
    return eqx.combine(lax.stop_gradient(dyn), static)


def newton(
    fun: Callable[[Float[Array, "*b k"], Any], tuple[Float[Array, "*b k"], Float[Array, "*b k k"]]],
    x0: Float[Array, "*b k"],
    params: Any,
    tol: float,
    max_iters: int,
    exact_matrix: Callable[[Float[Array, "*b k"], Any], Float[Array, "*b k k"]] | None = None,
    linearised: Callable | None = None,
) -> NewtonResult:
    """Solve ``R(x, params) = 0`` by Newton's method with a caller-supplied iteration matrix; the root is
    differentiable w.r.t. ``params`` (implicit function theorem).

    Args:
        fun: ``(x, params) -> (R, S)``: the residual ``(..., k)`` and the iteration matrix ``(..., k, k)`` used in the
            loop (one block, or independent blocks solved together).
        x0: initial guess ``(..., k)``.
        params: any pytree (arrays and callables); its inexact arrays are what the result is differentiable w.r.t.
        tol: convergence test ``‖R‖_∞ ≤ tol`` (over all blocks), checked before each update (so a guess that already
            satisfies it costs no update but the final one).
        max_iters: the largest number of updates before the test.
        exact_matrix: ``(x, params) -> ∂R/∂x``, needed only when ``fun``'s matrix is an approximation; it is evaluated
            at the root, and only when the result is differentiated.
        linearised: as in :func:`differentiable_root` (replaces ``exact_matrix`` and the JVP of the residual).

    Returns:
        a :class:`NewtonResult`. The update computed from the residual that passed the test is applied (it polishes
        a converged iterate to round-off) and not counted: ``num_steps`` is the number of updates the test asked for.
    """
    frozen = _frozen(params)
    sol = newton_iterations(lambda x: fun(x, frozen), x0, lambda x, dx, R: _norm(R) <= tol, max_iters + 1)
    matrix = exact_matrix if exact_matrix is not None else (lambda x, p: fun(x, p)[1])
    value = differentiable_root(lambda x, p: fun(x, p)[0], matrix, sol.value, params, linearised)
    return NewtonResult(value, sol.result, sol.num_steps - 1, sol.stats)


def _failure(R):
    """The result code of a solve that stopped with residual ``R`` above its tolerance."""
    return NewtonResults.where(
        jnp.all(jnp.isfinite(R)), NewtonResults.nonlinear_max_steps_reached, NewtonResults.nonfinite
    )


class Inverse(NamedTuple):
    """An iteration matrix kept between steps as its inverse (one ``(k, k)`` or blocks ``(..., k, k)``): each chord
    update is then one product, not an LU solve, which on CPU runs a LAPACK call per block
    (:mod:`jaxse3._batched_linalg`; a stack of 64 CDM blocks: 2.0 against 0.07 µs per block, 2026-12-05). It is
    formed only when the matrix is refreshed, and only steers the iteration, whose residual decides convergence."""

    matrix: jax.Array


def invert(S: Float[Array, "*b k k"]) -> Inverse:
    """The :class:`Inverse` of ``S`` (one matrix or a stack of blocks)."""
    return Inverse(jnp.linalg.inv(S))


def _apply(f: Inverse, R: Float[Array, "*b k"]) -> Float[Array, "*b k"]:
    return jnp.einsum("...ij,...j->...i", f.matrix, R)


#: a chord iteration that stalls within this factor of its tolerance right after refreshing its matrix (an exact
#: Newton update that did not contract) has reached its residual's round-off floor: :func:`modified_newton` accepts it
STALL_FACTOR = 10.0
#: the contraction below which an update of a plain chord iteration (``rate=None``) counts as a stall
_PLAIN_RATE = 0.5


def modified_newton(
    residual: Callable[[Float[Array, "*b k"], Any], Float[Array, "*b k"]],
    matrix: Callable[[Float[Array, "*b k"], Any], Float[Array, "*b k k"]],
    x0: Float[Array, "*b k"],
    params: Any,
    inverse: Inverse,
    tol: float,
    max_iters: int,
    rate: float | None = 0.3,
    linearised: Callable | None = None,
    refresh: bool | Bool[Array, ""] = False,
) -> NewtonResult:
    """Solve ``residual(x, params) = 0`` by a chord iteration with the given ``inverse`` of an earlier iteration
    matrix, re-evaluating and re-factoring ``matrix`` (the exact ``∂R/∂x``) at the current iterate whenever an update
    reduces ``‖R‖_∞`` by less than the factor ``rate`` (and the iterate has not converged); ``rate=None``: never
    (a plain chord iteration, with no evaluation of ``matrix`` in the loop).

    Converged: ``‖R‖_∞ ≤ tol``, or ``‖R‖_∞ ≤`` :data:`STALL_FACTOR` ``· tol`` after an update with freshly
    a refreshed inverse (any update of a plain chord iteration, ``rate=None``, whose inverse is the best it has) that
    reduced ``‖R‖_∞`` by less than ``rate`` (1/2 for ``rate=None``): an update with the best matrix at hand that does
    not contract has met the residual's round-off floor (in float32 a time stepper's scaled residual stalls near
    1e−10, the default tolerance, and the largest over a stack of members rarely falls below it; the initial
    acceleration of Newmark-β, a plain chord iteration on a residual linear in q̈, stalls there too).

    Args as :func:`newton` (``num_steps`` counts the updates before the test passed, as there; ``linearised`` as in
    :func:`differentiable_root`); ``inverse``: the :class:`Inverse` to start with (e.g. those this function returned
    for the previous time step); ``refresh`` (True, or a boolean scalar): ``inverse`` only stands in for the matrix
    (e.g. of a part of it), so ``matrix`` is evaluated at ``x0`` before the first update unless ``x0`` passes the
    test (ignored with ``rate=None``). Under a ``vmap`` with a batched convergence test, ``lax.cond`` evaluates both
    branches, i.e. the matrix at every update: solve a batch as one block system instead (``x`` ``(B, k)``, matrices
    ``(B, k, k)``), whose test is one scalar.
    """
    frozen = _frozen(params)

    # one residual in the program: each pass evaluates R at the current iterate, then updates it (or, once the test
    # passes or the updates run out, polishes it as in :func:`newton` and stops)
    def body(carry):
        x, R_before, f, k, m, fresh, _, _ = carry
        R = residual(x, frozen)
        norm = _norm(R)
        slow = (k > 0) & (norm > (_PLAIN_RATE if rate is None else rate) * _norm(R_before))
        if rate is not None:  # the stand-in inverse of ``refresh`` counts as a slow update (a chord iteration has none)
            slow = slow | ((k == 0) & refresh)
        slow = slow & (norm > tol)
        ok = (norm <= tol) | (fresh & slow & (norm <= STALL_FACTOR * tol))
        if rate is not None:  # else a chord iteration: the inverse is never refreshed (no matrix in the loop)
            slow = slow & ~ok
            f = lax.cond(slow, lambda: invert(matrix(x, frozen)), lambda: f)
            m, fresh = m + slow.astype(jnp.int32), slow
        stop = ok | (k >= max_iters)
        return x - _apply(f, R), R, f, k + jnp.where(stop, 0, 1), m, fresh, ok, stop

    x0 = lax.stop_gradient(x0)
    zero, no = jnp.asarray(0, jnp.int32), jnp.asarray(False)
    fresh = jnp.asarray(rate is None)  # a plain chord iteration's inverse is the best it has
    start = (x0, jnp.zeros_like(x0), lax.stop_gradient(inverse), zero, zero, fresh, no, no)
    x, R, f, k, m, _, ok, _ = lax.while_loop(lambda carry: ~carry[-1], body, start)
    result = NewtonResults.where(ok, NewtonResults.successful, _failure(R))
    value = differentiable_root(residual, matrix, x, params, linearised)
    return NewtonResult(value, result, k, {"inverse": f, "refreshes": m})


def unwrap_term(terms: Any, cls: type) -> Any:
    """The user's term of type ``cls`` inside diffrax's ``WrapTerm`` (which ``diffeqsolve`` adds for the time
    direction); both solvers here integrate forward in time only, which is checked."""
    while not isinstance(terms, cls):
        direction = getattr(terms, "direction", 1)
        if isinstance(direction, (int, float)) and direction != 1:
            raise ValueError(f"{cls.__name__}: only forward time integration (t1 > t0) is supported")
        terms = terms.term
    return terms


def newton_statistics(sol: diffrax.Solution) -> dict[str, Array]:
    """Newton iterations of a generalised-α or Newmark solve (``sol``) saved with ``SaveAt(..., solver_state=True)``.

    Returns ``{"total", "per_step" (mean), "max_per_step"}``, and for Newmark-β also ``"jacobians"`` (iteration
    matrices evaluated by the steps; with ``iteration="modified"`` also the initial one).
    """
    state = sol.solver_state
    if state is None:
        raise ValueError("newton_statistics: solve with diffrax.SaveAt(..., solver_state=True)")
    steps = sol.stats["num_accepted_steps"]
    return {
        "total": state.newton_iterations,
        "per_step": jnp.asarray(state.newton_iterations, float) / steps,
        "max_per_step": state.max_newton_iterations,
        **({"jacobians": state.jacobian_evaluations} if hasattr(state, "jacobian_evaluations") else {}),
    }
