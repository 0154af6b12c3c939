"""Newton iterations shared by the implicit fixed-step solvers (generalised-α, Newmark-β).

The iterations run in a ``lax.while_loop`` (stopping as soon as they have converged) on stop-gradient'ed inputs. The
root ``x*`` is then made differentiable by the implicit function theorem: a ``custom_jvp`` returns ``x*`` unchanged
and, only when a derivative is asked for, evaluates the exact iteration matrix ``S = ∂R/∂x`` at the root and returns
the tangent ``dx* = −S⁻¹ (∂R/∂p) dp``. The rule is linear in ``dp``, so reverse mode transposes it, although
``while_loop`` itself is not reverse-differentiable. A plain (undifferentiated) solve therefore costs no extra
residual or Jacobian after the loop.

:func:`newton` re-evaluates its matrix at every iterate. :func:`modified_newton` (a chord iteration whose matrix is
kept across calls, in the caller's solver state) evaluates the matrix only when the residual contracts too slowly:
for slowly varying Jacobians, e.g. Newmark-β on a mass-dominated structure, most steps then cost a few residuals.
Both accept a block-diagonal system: ``x`` of shape ``(..., k)`` with matrices ``(..., k, k)`` (independent blocks
solved together, one convergence test over all of them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jax import lax


class NewtonResult(NamedTuple):
    x: jax.Array  # the root, differentiable w.r.t. the parameters
    iterations: jax.Array  # number of linear solves (Newton updates) performed, int32
    converged: jax.Array  # bool: ‖R‖_∞ ≤ tol reached within max_iters (False also when R became non-finite)


def _norm(R):
    return jnp.max(jnp.abs(R))


def _solve(S, R):
    """``S⁻¹ R`` for one matrix ``(k, k)`` or a stack of blocks ``(..., k, k)`` with ``R`` ``(..., k)``."""
    return jnp.linalg.solve(S, R[..., None])[..., 0]


def differentiable_root(
    residual: Callable[[jax.Array, Any], jax.Array],
    matrix: Callable[[jax.Array, Any], jax.Array],
    x: jax.Array,
    params: Any,
) -> jax.Array:
    """``x`` (a root of ``residual(·, params)``, computed without gradients), differentiable w.r.t. ``params`` by the
    implicit function theorem: ``dx = −matrix(x, params)⁻¹ ∂residual/∂params · dparams``.

    ``matrix`` (the exact ``∂residual/∂x``, blocks ``(..., k, k)`` for block systems) is evaluated only when a
    derivative is taken. ``params``: any pytree; its inexact arrays are what the result is differentiable w.r.t.
    ``residual`` and ``matrix`` must not close over traced values (pass them in ``params``): the derivative rule is
    traced apart from the caller (a closed-over tracer fails at lowering with "No constant handler").
    """
    dyn, static = eqx.partition(params, eqx.is_inexact_array)

    @jax.custom_jvp
    def root(x, dyn):
        return x

    @root.defjvp
    def root_jvp(primals, tangents):
        x, dyn = primals
        _, ddyn = tangents
        p = eqx.combine(dyn, static)
        _, dR = jax.jvp(lambda d: residual(x, eqx.combine(d, static)), (dyn,), (ddyn,))
        return x, -_solve(matrix(x, p), dR)

    return root(lax.stop_gradient(x), dyn)


def _frozen(params):
    dyn, static = eqx.partition(params, eqx.is_inexact_array)
    return eqx.combine(lax.stop_gradient(dyn), static)


def newton(
    fun: Callable[[jax.Array, Any], tuple[jax.Array, jax.Array]],
    x0: jax.Array,
    params: Any,
    tol: float,
    max_iters: int,
    exact_matrix: Callable[[jax.Array, Any], jax.Array] | None = None,
) -> NewtonResult:
    """Solve ``R(x, params) = 0`` by Newton's method with a caller-supplied iteration matrix.

    Args:
        fun: ``(x, params) -> (R, S)``: the residual ``(..., k)`` and the iteration matrix ``(..., k, k)`` used in the
            loop (one block, or independent blocks solved together).
        x0: initial guess ``(..., k)``.
        params: any pytree (arrays and callables); its inexact arrays are what the result is differentiable w.r.t.
        tol: convergence test ``‖R‖_∞ ≤ tol`` (over all blocks), checked before each update (so a guess that already
            satisfies it costs no solve).
        max_iters: the largest number of updates.
        exact_matrix: ``(x, params) -> ∂R/∂x``, needed only when ``fun``'s matrix is an approximation; it is evaluated
            at the root, and only when the result is differentiated.
    """
    frozen = _frozen(params)

    def cond(carry):
        _, R, _, k = carry
        return (_norm(R) > tol) & (k < max_iters)  # NaN residual: comparison False, loop stops, not converged

    def body(carry):
        x, R, S, k = carry
        x = x - _solve(S, R)
        R, S = fun(x, frozen)
        return x, R, S, k + 1

    R0, S0 = fun(lax.stop_gradient(x0), frozen)
    x, R, S, k = lax.while_loop(cond, body, (lax.stop_gradient(x0), R0, S0, jnp.asarray(0, jnp.int32)))
    x = x - _solve(S, R)  # polish with the residual and matrix at hand: round-off level for a converged iterate
    matrix = exact_matrix if exact_matrix is not None else (lambda x, p: fun(x, p)[1])
    return NewtonResult(differentiable_root(lambda x, p: fun(x, p)[0], matrix, x, params), k, _norm(R) <= tol)


class Factors(NamedTuple):
    """LU factors of an iteration matrix (blocks ``(..., k, k)``, pivots ``(..., k)``), as kept between steps."""

    lu: jax.Array
    pivots: jax.Array


def factor(S: jax.Array) -> Factors:
    """The LU :class:`Factors` of ``S`` (one matrix or a stack of blocks)."""
    lu, pivots = jsl.lu_factor(S)
    return Factors(lu, pivots)


def _lu_solve(f: Factors, R):
    return jsl.lu_solve((f.lu, f.pivots), R[..., None])[..., 0]


class ModifiedNewtonResult(NamedTuple):
    x: jax.Array  # the root, differentiable w.r.t. the parameters
    iterations: jax.Array  # number of updates (linear solves), int32
    converged: jax.Array  # bool
    factors: Factors  # the factors in use at the end (pass them to the next call)
    refreshes: jax.Array  # number of matrix evaluations in this call, int32


def modified_newton(
    residual: Callable[[jax.Array, Any], jax.Array],
    matrix: Callable[[jax.Array, Any], jax.Array],
    x0: jax.Array,
    params: Any,
    factors: Factors,
    tol: float,
    max_iters: int,
    rate: float = 0.3,
) -> ModifiedNewtonResult:
    """Solve ``residual(x, params) = 0`` by a chord iteration with the given ``factors`` of an earlier iteration
    matrix, re-evaluating and re-factoring ``matrix`` (the exact ``∂R/∂x``) at the current iterate whenever an update
    reduces ``‖R‖_∞`` by less than the factor ``rate`` (and the iterate has not converged).

    Args as :func:`newton`; ``factors``: the :class:`Factors` to start with (e.g. those this function returned for the
    previous time step). Under a ``vmap`` with a batched convergence test, ``lax.cond`` evaluates both branches, i.e.
    the matrix at every update: solve a batch as one block system instead (``x`` ``(B, k)``, matrices
    ``(B, k, k)``), whose test is one scalar.
    """
    frozen = _frozen(params)

    def cond(carry):
        _, R, _, k, _ = carry
        return (_norm(R) > tol) & (k < max_iters)

    def body(carry):
        x, R, f, k, m = carry
        x = x - _lu_solve(f, R)
        R_new = residual(x, frozen)
        slow = (_norm(R_new) > rate * _norm(R)) & (_norm(R_new) > tol)
        f = lax.cond(slow, lambda: factor(matrix(x, frozen)), lambda: f)
        return x, R_new, f, k + 1, m + slow.astype(jnp.int32)

    x0 = lax.stop_gradient(x0)
    zero = jnp.asarray(0, jnp.int32)
    x, R, f, k, m = lax.while_loop(cond, body, (x0, residual(x0, frozen), lax.stop_gradient(factors), zero, zero))
    x = x - _lu_solve(f, R)  # polish, as in :func:`newton`
    return ModifiedNewtonResult(differentiable_root(residual, matrix, x, params), k, _norm(R) <= tol, f, m)


def unwrap_term(terms: Any, cls: type) -> Any:
    """The user's term of type ``cls`` inside diffrax's ``WrapTerm`` (which ``diffeqsolve`` adds for the time
    direction); both solvers here integrate forward in time only, which is checked."""
    while not isinstance(terms, cls):
        direction = getattr(terms, "direction", 1)
        if isinstance(direction, (int, float)) and direction != 1:
            raise ValueError(f"{cls.__name__}: only forward time integration (t1 > t0) is supported")
        terms = terms.term
    return terms


def newton_statistics(sol: diffrax.Solution) -> dict[str, jax.Array]:
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
