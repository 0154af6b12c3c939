"""Single shooting with optax: the control knots of a :class:`~jaxse3.optim.Problem` optimised by gradients of the
simulation (:func:`jaxse3.sim.simulate`, reverse mode through its adjoint, the models' analytical rules inside).

* ``optimiser="lbfgs"`` (default): projected L-BFGS. The direction is optax's L-BFGS two-loop recursion
  (``optax.scale_by_lbfgs``; Nocedal & Wright, *Numerical Optimization*, Alg. 7.4) with the knots held at an active
  bound removed; the step is a backtracking (Armijo) search along the projected path ``clip(c + α d, l, u)``
  (Bertsekas, *Nonlinear Programming*, §2.3), so the bounds hold at every trial and the cost decreases at every step.
* ``optimiser="adam"`` or any ``optax.GradientTransformation``: projected first-order steps (the knots clipped to the
  bounds after each update).

Two programs are compiled per problem structure, the cost (the line search's trials) and the cost with its gradient;
the optimiser's own arithmetic on the knots is negligible. The solve stops, converged, when the projected gradient
``‖c − clip(c − ∇J, l, u)‖_∞`` is at most ``gtol``; it stops unconverged at ``max_iters``, when the line search
finds no decrease, at a non-finite cost or gradient (the last finite iterate is returned, with a message) and on
``KeyboardInterrupt`` (the last iterate is returned).
"""

from __future__ import annotations

import functools
import math
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import ArrayLike, Float

from jaxse3.optim.problem import Problem
from jaxse3.optim.solution import Solution

__all__ = ["solve_shooting", "OPTIMISERS"]

OPTIMISERS = ("lbfgs", "adam")


@functools.cache
def _optax(name: str, learning_rate: float | None) -> optax.GradientTransformation:
    """One transformation object per setting (its jitted update is found again by later solves)."""
    if name == "lbfgs":
        return optax.scale_by_lbfgs()
    return optax.adam(1e-2 if learning_rate is None else learning_rate)


@eqx.filter_jit
def _cost(problem: Problem, c):
    return problem.cost(c)


@eqx.filter_jit
def _cost_and_gradient(problem: Problem, c):
    """J(c), the motion, ∇J(c) and the projected gradient's ∞-norm."""

    def cost_and_trajectory(c):
        traj = problem.rollout(c)
        return problem.cost_of(traj), traj

    (J, traj), g = jax.value_and_grad(cost_and_trajectory, has_aux=True)(c)
    return J, traj, g, jnp.max(jnp.abs(c - problem.project(c - g)))


@functools.partial(jax.jit, static_argnums=0)
def _update(opt, g, state, c):
    return opt.update(g, state, c)


def _active(problem: Problem, c, g):
    """The knots at a bound whose gradient points out of the box."""
    return ((c <= problem.lower) & (g > 0)) | ((c >= problem.upper) & (g < 0))


def _projected_search(problem: Problem, c, J, g, d, armijo=1e-4, max_halvings=30):
    """The first α = 1, ½, ¼, … with J(clip(c + α d)) ≤ J + armijo ∇J·(clip(c + α d) − c) (up to the round-off of
    J, so that a search at the optimum does not fail on it); the point, or None."""
    alpha, roundoff = 1.0, 8 * np.finfo(float).eps * abs(J)
    for _ in range(max_halvings):
        trial = problem.project(c + alpha * d)
        J_trial = float(_cost(problem, trial))
        if math.isfinite(J_trial) and J_trial <= J + armijo * float(jnp.vdot(g, trial - c)) + roundoff:
            return trial
        alpha *= 0.5
    return None


def solve_shooting(
    problem: Problem,
    initial: Float[ArrayLike, "n_knots n_inputs"] | None = None,
    *,
    optimiser: str | optax.GradientTransformation = "lbfgs",
    learning_rate: float | None = None,
    max_iters: int = 100,
    gtol: float = 1e-6,
    progress: bool = False,
) -> Solution:
    """Minimise ``problem``'s cost over its control knots by single shooting (module docstring).

    Args:
        problem: the :class:`Problem`.
        initial: the initial knots (n_knots, n_inputs), projected onto the bounds; default: zero, projected.
        optimiser: ``"lbfgs"`` (projected L-BFGS with a backtracking search), ``"adam"`` or an
            ``optax.GradientTransformation`` (projected steps).
        learning_rate: Adam's step (default 1e−2); not used by L-BFGS.
        max_iters: the largest number of updates.
        gtol: the stopping test on the projected gradient's ∞-norm.
        progress: show a progress bar with the cost and the projected gradient.

    Returns:
        a :class:`Solution`: the best knots, their motion, the cost and gradient histories, ``converged`` and why it
        stopped.
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"solve_shooting: problem must be a jaxse3.optim.Problem, got {type(problem).__name__}")
    if isinstance(optimiser, str):
        if optimiser not in OPTIMISERS:
            raise ValueError(
                f"solve_shooting: optimiser must be one of {OPTIMISERS} or an optax transformation, got {optimiser!r}"
            )
        opt = _optax(optimiser, learning_rate)
    else:
        opt = optimiser
    if not (isinstance(max_iters, int) and max_iters >= 0):
        raise ValueError(f"solve_shooting: max_iters must be an int >= 0, got {max_iters!r}")
    if not (gtol >= 0 and math.isfinite(gtol)):
        raise ValueError(f"solve_shooting: gtol must be >= 0 and finite, got {gtol}")
    c0 = jnp.zeros(problem.control_shape) if initial is None else jnp.asarray(initial, dtype=float)
    if c0.shape != problem.control_shape:
        raise ValueError(f"solve_shooting: initial must have shape {problem.control_shape}, got {c0.shape}")
    if not np.all(np.isfinite(np.asarray(c0))):
        raise ValueError("solve_shooting: initial has non-finite entries")
    c = problem.project(c0)
    lbfgs = optimiser == "lbfgs"
    state = opt.init(c)
    costs, grads = [], []
    best, traj, message, converged = None, None, "", False
    bar = _progress_bar(progress, max_iters)
    start = time.perf_counter()
    first_s = math.nan
    try:
        for k in range(max_iters + 1):
            J, traj_k, g, pg = _cost_and_gradient(problem, c)
            J, pg = float(J), float(pg)
            if k == 0:
                first_s = time.perf_counter() - start
            if not (math.isfinite(J) and math.isfinite(pg)):
                message = f"stopped at iteration {k}: the cost or its gradient is not finite (J = {J}, ‖pg‖ = {pg})"
                break
            costs.append(J), grads.append(pg)
            best, traj = c, traj_k
            if bar is not None:
                bar.set_postfix(cost=f"{J:.6g}", pg=f"{pg:.2e}")
                bar.update(0 if k == 0 else 1)
            if pg <= gtol:
                converged, message = True, f"converged: projected gradient {pg:.3g} <= gtol = {gtol:g}"
                break
            if k == max_iters:
                message = f"reached max_iters = {max_iters} (projected gradient {pg:.3g} > gtol = {gtol:g})"
                break
            step, state = _update(opt, g, state, c)
            if lbfgs:
                active = _active(problem, c, g)
                d = jnp.where(active, 0.0, -step)
                free_g = jnp.where(active, 0.0, g)
                if float(jnp.vdot(d, free_g)) >= 0.0:  # not a descent direction: steepest descent on the free knots
                    d = -free_g
                c_next = _projected_search(problem, c, J, g, d)
                if c_next is None:
                    message = (
                        f"stopped at iteration {k}: the line search found no decrease (projected gradient {pg:.3g})"
                    )
                    break
            else:
                c_next = problem.project(optax.apply_updates(c, step))
            c = c_next
    except KeyboardInterrupt:
        message = f"interrupted after {len(costs)} evaluations"
    finally:
        if bar is not None:
            bar.close()
    if best is None:
        raise FloatingPointError(f"solve_shooting: {message or 'no evaluation completed'} at the initial guess")
    values = np.asarray(best)
    q, qd = np.asarray(traj.q), np.asarray(traj.qd)
    return Solution(
        values=values,
        t=np.asarray(traj.t),
        u=np.asarray(traj.u)[:-1],
        x=np.concatenate([q, qd], axis=1),
        tip=np.asarray(traj.tip),
        cost_history=np.asarray(costs),
        gradient_history=np.asarray(grads),
        iterations=len(costs) - 1,
        converged=converged,
        message=message,
        info={
            "method": "single shooting",
            "optimiser": optimiser if isinstance(optimiser, str) else "optax",
            "first_gradient_s": first_s,  # compilation included, on the first solve of a problem structure
            "wall_s": time.perf_counter() - start,
        },
    )


def _progress_bar(progress: bool, total: int):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="shooting", unit="it")
