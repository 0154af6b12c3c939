"""Static equilibria: Newton's method on ``R(q) = τ(q, 0, u) + F(q, 0) − ID(q, 0, 0) = 0`` (seed 003 eqs. (5), (13)).

The Newton Jacobian ``J = ∂τ/∂q − ∂ID/∂q`` (eq. (13b)) is ``jax.jacfwd`` of the residual, i.e. the system's
``custom_jvp`` rules (analytic for a rod); ``jacobian="finite-difference"`` uses forward differences instead (the
paper's fsolve-without-Jacobian baseline). Large loads are applied in ``load_steps`` equal increments (load
continuation), each solved by optimistix Newton from the previous equilibrium. Failure is never silent: with
``throw=True`` optimistix raises; with ``throw=False`` :class:`StaticsSolution` carries the result code, a
``converged`` flag and the final residual norm.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx

from jaxse3.sim.system import System, finite_difference

__all__ = ["solve_statics", "StaticsSolution"]


class StaticsSolution(eqx.Module):
    """Result of :func:`solve_statics`.

    Attributes:
        q: (n_dof,) equilibrium.
        result: optimistix result code of the last load step (``optimistix.RESULTS``; 0 = successful).
        converged: True iff every load step succeeded.
        residual_norm: ‖R(q)‖∞ at the returned q.
        num_steps: total Newton iterations over all load steps.
        tip: (3,) world position of the tip at q.
    """

    q: jax.Array
    result: optx.RESULTS
    converged: jax.Array
    residual_norm: jax.Array
    num_steps: jax.Array
    tip: jax.Array

    @property
    def message(self) -> str:
        """Human-readable solver status (outside jit)."""
        return optx.RESULTS[self.result] or "successful"


def solve_statics(
    system: System,
    u: jax.Array,
    q0: jax.Array | None = None,
    *,
    jacobian: str = "analytic",
    rtol: float = 1e-10,
    atol: float = 1e-10,
    max_steps: int = 50,
    load_steps: int = 1,
    throw: bool = True,
) -> StaticsSolution:
    """Solve ``τ(q, 0, u) + F(q, 0) − ID(q, 0, 0) = 0`` for q by Newton (seed 003 eq. (13)).

    Args:
        system: the model.
        u: (n_inputs,) constant inputs.
        q0: initial guess (default q = 0: the straight rod).
        jacobian: ``"analytic"`` or ``"finite-difference"`` (forward differences, ε = 1e−6).
        rtol, atol: optimistix Newton tolerances (on the step in q).
        max_steps: Newton iterations per load step.
        load_steps: apply u in this many equal increments (load continuation for large loads).
        throw: raise on failure (optimistix error naming the cause); if False, inspect ``converged``/``result``.
    """
    if jacobian not in ("analytic", "finite-difference"):
        raise ValueError(f"solve_statics: jacobian must be 'analytic' or 'finite-difference', got {jacobian!r}")
    if load_steps < 1:
        raise ValueError(f"solve_statics: load_steps must be >= 1, got {load_steps}")
    u = jnp.asarray(u, dtype=float)
    if u.shape != (system.n_inputs,):
        raise ValueError(f"solve_statics: u must have shape ({system.n_inputs},), got {u.shape}")
    n = system.n_dof
    q0 = jnp.zeros(n) if q0 is None else jnp.asarray(q0, dtype=float)
    if q0.shape != (n,):
        raise ValueError(f"solve_statics: q0 must have shape ({n},), got {q0.shape}")
    return _solve(system, u, q0, jacobian, rtol, atol, max_steps, load_steps, throw)


def _residual(q, args):
    system, u, residual = args
    z = jnp.zeros_like(q)
    return residual(system.params, q, z, z, u)


@eqx.filter_jit
def _solve(system, u, q0, jacobian, rtol, atol, max_steps, load_steps, throw) -> StaticsSolution:
    residual = system.residual if jacobian == "analytic" else finite_difference(system.residual)
    solver = optx.Newton(rtol=rtol, atol=atol)

    def load_step(carry, fraction):
        q, result, steps = carry
        sol = optx.root_find(_residual, solver, q, (system, fraction * u, residual), max_steps=max_steps,
                             throw=False)  # fmt: skip
        result = optx.RESULTS.where(result == optx.RESULTS.successful, sol.result, result)  # keep the first failure
        return (sol.value, result, steps + sol.stats["num_steps"]), None

    fractions = jnp.arange(1, load_steps + 1) / load_steps
    init = (q0, optx.RESULTS.successful, jnp.array(0))
    (q, result, steps), _ = jax.lax.scan(load_step, init, fractions)
    ok = result == optx.RESULTS.successful
    res_norm = jnp.max(jnp.abs(_residual(q, (system, u, system.residual))))
    if throw:
        q = result.error_if(q, ~ok)
    return StaticsSolution(q=q, result=result, converged=ok, residual_norm=res_norm, num_steps=steps,
                           tip=system.tip(q))  # fmt: skip
