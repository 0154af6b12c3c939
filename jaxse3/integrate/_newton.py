"""Newton iteration shared by the implicit fixed-step solvers (generalised-α, Newmark-β).

The iteration runs in a ``lax.while_loop`` (stops as soon as it has converged), on stop-gradient'ed inputs. It is
followed by one Newton correction evaluated with the live (differentiable) parameters and the exact iteration matrix
held constant: ``x* − S⁻¹ R(x*, p)``. At a converged root this adds nothing to the value, and its derivative is
``−S⁻¹ ∂R/∂p``, which is the implicit-function-theorem derivative ``dx*/dp`` when S = ∂R/∂x. So forward and reverse
mode differentiate the solve exactly (to the Newton tolerance) without differentiating the loop, and reverse mode
works although ``while_loop`` is not reverse-differentiable.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax


class NewtonResult(NamedTuple):
    x: jax.Array  # the root, differentiable w.r.t. the parameters
    iterations: jax.Array  # number of linear solves (Newton updates) performed, int32
    converged: jax.Array  # bool: ‖R‖_∞ ≤ tol reached within max_iters (False also when R became non-finite)


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
        fun: ``(x, params) -> (R, S)``: the residual ``(k,)`` and the iteration matrix ``(k, k)`` used in the loop.
        x0: initial guess ``(k,)``.
        params: any pytree (arrays and callables); its inexact arrays are what the result is differentiable w.r.t.
        tol: convergence test ``‖R‖_∞ ≤ tol``, checked before each update (so a guess that already satisfies it costs
            no solve).
        max_iters: the largest number of updates.
        exact_matrix: ``(x, params) -> ∂R/∂x``, needed only when ``fun``'s matrix is an approximation; it is evaluated
            once, at the root, for the differentiable correction step.
    """
    dyn, static = eqx.partition(params, eqx.is_inexact_array)
    frozen = eqx.combine(lax.stop_gradient(dyn), static)
    x0 = lax.stop_gradient(x0)

    def norm(R):
        return jnp.max(jnp.abs(R))

    def cond(carry):
        _, R, _, k = carry
        return (norm(R) > tol) & (k < max_iters)  # NaN residual: comparison False, loop stops, not converged

    def body(carry):
        x, R, S, k = carry
        x = x - jnp.linalg.solve(S, R)
        R, S = fun(x, frozen)
        return x, R, S, k + 1

    R0, S0 = fun(x0, frozen)
    x, R, S, k = lax.while_loop(cond, body, (x0, R0, S0, jnp.asarray(0, jnp.int32)))
    converged = norm(R) <= tol
    if exact_matrix is not None:
        S = exact_matrix(x, frozen)
    R_live, _ = fun(x, params)
    x = x - jnp.linalg.solve(lax.stop_gradient(S), R_live)
    return NewtonResult(x, k, converged)


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

    Returns ``{"total", "per_step" (mean), "max_per_step"}``.
    """
    state = sol.solver_state
    if state is None:
        raise ValueError("newton_statistics: solve with diffrax.SaveAt(..., solver_state=True)")
    steps = sol.stats["num_accepted_steps"]
    return {
        "total": state.newton_iterations,
        "per_step": jnp.asarray(state.newton_iterations, float) / steps,
        "max_per_step": state.max_newton_iterations,
    }
