"""Shooting with optax: the control knots of a :class:`~jaxse3.optim.Problem` optimised by gradients of the
simulation (:func:`jaxse3.sim.simulate`, the models' analytical rules inside; "Gradients" below);
single shooting, or multiple shooting (``segments``: :class:`~jaxse3.optim.segments.MultipleShooting`, the
segments' start states as variables and their defects as equality constraints).

* ``optimiser="lbfgs"`` (default): projected L-BFGS. The direction is optax's L-BFGS two-loop recursion
  (``optax.scale_by_lbfgs``; Nocedal & Wright, *Numerical Optimization*, Alg. 7.4) with the knots held at an active
  bound removed; the step is a backtracking (Armijo) search along the projected path ``clip(c + α d, l, u)``
  (Bertsekas, *Nonlinear Programming*, §2.3), so the bounds hold at every trial and the cost decreases at every step;
  near a minimum, where the cost's change is below what its evaluation resolves (a simulation's tolerances), a trial
  is judged by its slope instead (Hager & Zhang's approximate Wolfe condition, :data:`COST_NOISE`).
* ``optimiser="adam"`` or any ``optax.GradientTransformation``: projected first-order steps (the knots clipped to the
  bounds after each update).

Constraints (``Problem.terminal_constraint = 0``, ``Problem.path_constraint ≤ 0``) are handled by an augmented
Lagrangian (Nocedal & Wright, §17.3–17.4; Powell–Hestenes–Rockafellar for the inequalities): the inner solver
minimises ``L = J + λ·h + ρ/2 ‖h‖² + 1/(2ρ) Σ (max(0, μ + ρ g)² − μ²)`` over the knots; then ``λ ← λ + ρ h``,
``μ ← max(0, μ + ρ g)``, and ρ grows ×10 when the violation ``max(|h|, g⁺)`` is above ``ctol`` and did not fall
below a quarter of the previous one. The inner solves are inexact, with tolerances that tend to ``gtol`` (the ω_k
of Nocedal & Wright's Alg. 17.4): the first round stops at a projected gradient of 10⁻² times its first one, each
later round at a tenth of the previous round's tolerance, and the round after the violation reaches ``ctol`` at
``gtol``. (Solving every round to ``gtol`` spent ~100 updates per round on multipliers that were about to change: a
two-segment multiple-shooting solve stopped unconverged at 400 updates; it now converges in about 200.) It converges
when an inner solve converged to ``gtol`` and the violation is at most ``ctol``. A round whose line search finds no
decrease at its first step still updates the multipliers, which may open a descent; the solve stops after two such
rounds in a row (the same two-segment solve, at a CPU's rounding that left one round without a step at a violation
of 1.8e−7: converged in 190 updates and 8 rounds, defect 1.7e−8).

**Gradients.** Up to :data:`FORWARD_MAX` decision variables (knots, and with segments the segments' start states),
the gradient is taken in forward mode: ``jax.jacfwd`` through ``simulate(..., adjoint="forward")``, one tangent per
variable carried along each step (for Newmark-β, a solve with the step's Jacobian at its root per tangent). Beyond,
it is one reverse pass through ``simulate``'s checkpointed adjoint, whose backward pass replays every step before
differentiating it. Forward mode compiles a smaller program and, up to about a hundred variables, runs faster (the
CDM's tip after 1 s of Newmark steps, 2026-12-03, ``benchmarks/optim.py``: 20 knots 31 s of compile and 453 ms per
gradient against 59 s and 688 ms; 50 knots 46 s and 697 ms against 65 s and 918 ms; 100 knots 38 s and 475 ms
against 76 s and 553 ms); an ``adjoint`` among the problem's ``simulation`` options chooses instead (``"forward"``,
or a reverse one). :func:`gradient_mode` tells which, and ``Solution.info["gradient"]`` records it.

One program is compiled per problem structure, the cost with its gradient: the line search evaluates its trials with
it, and the accepted trial's gradient is the next iteration's (a rejected trial costs a gradient, an accepted one no
second rollout); the optimiser's own arithmetic on the knots is negligible. The solve stops, converged, when the
projected gradient ``‖c − clip(c − ∇J, l, u)‖_∞`` is at most ``gtol``; it stops unconverged at ``max_iters``, when
the line search finds no decrease, at a non-finite cost or gradient (the last finite iterate is returned, with a
message) and on ``KeyboardInterrupt`` (the last iterate is returned).
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
from jaxse3.optim.segments import MultipleShooting
from jaxse3.optim.solution import Solution

__all__ = ["solve_shooting", "OPTIMISERS", "FORWARD_MAX", "gradient_mode"]

OPTIMISERS = ("lbfgs", "adam")
_FIRST_TOLERANCE = 1e-2  # the first augmented-Lagrangian round's tolerance, relative to its first projected gradient
#: the most decision variables whose gradient is taken in forward mode (module docstring, "Gradients")
FORWARD_MAX = 64
_MAX_ROUNDS = 30  # augmented-Lagrangian rounds (ρ grows ×10 on slow progress: 30 rounds is far past any useful ρ)


@functools.cache
def _optax(name: str, learning_rate: float | None) -> optax.GradientTransformation:
    """One transformation object per setting (its jitted update is found again by later solves)."""
    if name == "lbfgs":
        return optax.scale_by_lbfgs()
    return optax.adam(1e-2 if learning_rate is None else learning_rate)


def _merit_of(problem: Problem, traj, multipliers):
    """(the augmented Lagrangian L, J, the violation, h, g) of a motion; without constraints L = J."""
    J = problem.cost_of(traj)
    h, g = problem.constraints_of(traj)
    lam, mu, rho = multipliers
    L = J + lam @ h + 0.5 * rho * h @ h + jnp.sum(jnp.maximum(0.0, mu + rho * g) ** 2 - mu**2) / (2.0 * rho)
    violation = jnp.maximum(jnp.max(jnp.abs(h), initial=0.0), jnp.max(g, initial=0.0))
    return L, (J, violation, h, g)


def gradient_mode(problem: Problem | MultipleShooting) -> str:
    """How :func:`solve_shooting` differentiates ``problem``'s simulation (module docstring, "Gradients"):
    ``"forward"`` or ``"reverse"``."""
    single = problem.problem if isinstance(problem, MultipleShooting) else problem
    adjoint = dict(single.simulation).get("adjoint")
    if adjoint is not None:
        return "forward" if adjoint == "forward" else "reverse"
    return "forward" if math.prod(problem.control_shape) <= FORWARD_MAX else "reverse"


@eqx.filter_jit
def _cost_and_gradient(problem: Problem, c, multipliers):
    """L(c) with (J, violation, h, g), the motion, ∇L(c) and the projected gradient's ∞-norm."""
    forward = gradient_mode(problem) == "forward"

    def merit_and_trajectory(c):
        traj = problem.rollout(c, adjoint="forward") if forward else problem.rollout(c)
        L, aux = _merit_of(problem, traj, multipliers)
        return L, (L, aux, traj)

    if forward:
        grad, (L, aux, traj) = jax.jacfwd(merit_and_trajectory, has_aux=True)(c)
    else:
        (_, (L, aux, traj)), grad = jax.value_and_grad(merit_and_trajectory, has_aux=True)(c)
    return L, aux, traj, grad, jnp.max(jnp.abs(c - problem.project(c - grad)))


@functools.partial(jax.jit, static_argnums=0)
def _update(opt, g, state, c):
    return opt.update(g, state, c)


def _active(problem: Problem, c, g):
    """The knots at a bound whose gradient points out of the box."""
    return ((c <= problem.lower) & (g > 0)) | ((c >= problem.upper) & (g < 0))


#: the relative change of the cost within which :func:`_projected_search` judges a trial by its slope instead
#: (Hager & Zhang's ε of the approximate Wolfe conditions)
COST_NOISE = 1e-6


def _projected_search(problem: Problem, c, J, g, d, multipliers, armijo=1e-4, max_halvings=30):
    """The first α = 1, ½, ¼, … whose trial x = clip(c + α d) decreases the cost enough: J(x) ≤ J + armijo ∇J·s
    (s = x − c; up to 8 ε |J|), or, where J(x) ≤ J + COST_NOISE |J| — a change the cost's evaluation cannot resolve
    near a minimum (a simulation's tolerances, not only the float's) — the same decrease by the slope:
    ∇J(x)·s ≤ (2 armijo − 1) ∇J·s (the approximate Wolfe condition of Hager & Zhang, *SIAM J. Optim.* 16 (2005),
    exact for a quadratic). The point and its :func:`_cost_and_gradient`, or None.

    Each trial is evaluated with its gradient, which the accepted one hands to the next iteration: one program per
    problem instead of a second one for the cost alone, and no second rollout of an accepted point (the first trial
    is accepted in most iterations); a rejected trial costs a gradient instead of a cost."""
    alpha, roundoff = 1.0, 8 * np.finfo(float).eps * abs(J)
    for _ in range(max_halvings):
        trial = problem.project(c + alpha * d)
        evaluation = _cost_and_gradient(problem, trial, multipliers)
        J_trial, slope = float(evaluation[0]), float(jnp.vdot(g, trial - c))
        enough = J_trial <= J + armijo * slope + roundoff
        if not enough and J_trial <= J + COST_NOISE * abs(J):  # a change within the cost's noise: the slope tells
            slope_trial = float(jnp.vdot(evaluation[3], trial - c))
            enough = math.isfinite(slope_trial) and slope_trial <= (2 * armijo - 1) * slope
        if enough and math.isfinite(J_trial):
            return trial, evaluation
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
    ctol: float = 1e-6,
    penalty: float = 10.0,
    segments: int = 1,
    progress: bool = False,
) -> Solution:
    """Minimise ``problem``'s cost over its control knots by single shooting, or by multiple shooting with
    ``segments`` > 1 (module docstring).

    Args:
        problem: the :class:`Problem`.
        initial: the initial knots (n_knots, n_inputs), projected onto the bounds; default: zero, projected.
        optimiser: ``"lbfgs"`` (projected L-BFGS with a backtracking search), ``"adam"`` or an
            ``optax.GradientTransformation`` (projected steps).
        learning_rate: Adam's step (default 1e−2); not used by L-BFGS.
        max_iters: the largest number of updates (all augmented-Lagrangian rounds together).
        gtol: the stopping test on the projected gradient's ∞-norm (of the augmented Lagrangian with constraints).
        ctol: with constraints, the largest violation ``max(|h|, g⁺)`` accepted as feasible.
        penalty: with constraints, the initial ρ of the augmented Lagrangian.
        segments: 1 (single shooting) or the number S of equal segments of multiple shooting
            (:class:`~jaxse3.optim.segments.MultipleShooting`): the start states of segments 2 … S become decision
            variables (initialised on the single-shooting motion of ``initial``), and the defects between segments
            equality constraints of the augmented Lagrangian, converged when at most ``ctol`` (in the units of q and
            q̇). ``problem.n_save − 1`` must divide into S segments.
        progress: show a progress bar with the cost and the projected gradient.

    Returns:
        a :class:`Solution`: the best knots, their motion, the cost and gradient histories (and with constraints the
        violation history, ``info["multipliers"]``; with segments ``info["segment_states"]`` and the largest
        ``info["defect"]``), ``converged`` and why it stopped.
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
    for name, value in (("gtol", gtol), ("ctol", ctol)):
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"solve_shooting: {name} must be >= 0 and finite, got {value}")
    if not (penalty > 0 and math.isfinite(penalty)):
        raise ValueError(f"solve_shooting: penalty must be positive and finite, got {penalty}")
    if not (isinstance(segments, int) and segments >= 1):
        raise ValueError(f"solve_shooting: segments must be a positive int, got {segments!r}")
    c0 = jnp.zeros(problem.control_shape) if initial is None else jnp.asarray(initial, dtype=float)
    if c0.shape != problem.control_shape:
        raise ValueError(f"solve_shooting: initial must have shape {problem.control_shape}, got {c0.shape}")
    if not np.all(np.isfinite(np.asarray(c0))):
        raise ValueError("solve_shooting: initial has non-finite entries")
    c = problem.project(c0)
    target = problem
    if segments != 1:
        target = MultipleShooting(problem, segments)
        c = target.initial(c)
    run = _Run(target, opt, optimiser == "lbfgs", _progress_bar(progress, max_iters))
    shapes = jax.eval_shape(lambda: target.constraints_of(target.rollout(c)))
    lam, mu, rho = jnp.zeros(shapes[0].shape), jnp.zeros(shapes[1].shape), jnp.asarray(float(penalty))
    try:
        if not target.constrained:
            run.minimise(c, (lam, mu, rho), max_iters, gtol)
        else:
            previous, tol, relative, stalled_before = math.inf, gtol, _FIRST_TOLERANCE, False
            while True:
                before = run.updates
                inner_converged = run.minimise(c, (lam, mu, rho), max_iters - run.updates, tol, relative)
                c = run.best
                violation = run.violations[-1]
                if not run.finite:
                    break
                if inner_converged and violation <= ctol and run.tolerance <= gtol:
                    run.converged = True
                    run.message = (
                        f"converged: projected gradient <= gtol = {gtol:g}, constraint violation {violation:.3g} "
                        f"<= ctol = {ctol:g}"
                    )
                    break
                # no step possible: the noise floor, unless new multipliers (which need no step) open a descent, so
                # only a second round in a row without a step stops
                stalled = run.updates == before and not inner_converged
                if run.updates >= max_iters or run.rounds >= _MAX_ROUNDS or (stalled and stalled_before):
                    run.converged = False
                    run.message = (
                        f"stopped after {run.updates} updates and {run.rounds + 1} rounds of the augmented Lagrangian "
                        f"(constraint violation {violation:.3g}, ctol = {ctol:g}; {run.message})"
                    )
                    break
                h, g = run.constraints
                lam, mu = lam + rho * h, jnp.maximum(0.0, mu + rho * g)
                if violation > max(ctol, 0.25 * previous):
                    rho = rho * 10.0
                previous, stalled_before = violation, stalled
                # the next round's tolerance: tighter by 10, and the final one once feasible
                tol, relative = (gtol if violation <= ctol else max(gtol, 0.1 * run.tolerance)), 0.0
                run.rounds += 1
    except KeyboardInterrupt:
        run.message = f"interrupted after {len(run.costs)} evaluations"
    finally:
        if run.bar is not None:
            run.bar.close()
    if run.best is None:
        raise FloatingPointError(f"solve_shooting: {run.message or 'no evaluation completed'} at the initial guess")
    traj, values = run.traj, run.best
    info = {}
    if segments != 1:
        info = {"segments": segments, "defect": float(jnp.max(jnp.abs(target.defects(traj))))}
        values, starts = target.split(values)
        info["segment_states"] = np.asarray(starts).tolist()
        traj = target.stitch(traj)
    q, qd = np.asarray(traj.q), np.asarray(traj.qd)
    info |= {
        "method": "single shooting" if segments == 1 else "multiple shooting",
        "optimiser": optimiser if isinstance(optimiser, str) else "optax",
        "gradient": gradient_mode(target),
        "first_gradient_s": run.first_s,  # compilation included, on the first solve of a problem structure
        "wall_s": time.perf_counter() - run.start,
    }
    if target.constrained:
        h_problem = problem.terminal_constraint(traj.q[-1], traj.qd[-1]).shape[0]
        info |= {
            "violation_history": list(map(float, run.violations)),
            "multipliers": {"terminal": np.asarray(lam[:h_problem]).tolist(), "path": np.asarray(mu).tolist()},
            "penalty": float(rho),
            "rounds": run.rounds + 1,
        }
    return Solution(
        values=np.asarray(values),
        t=np.asarray(traj.t),
        u=np.asarray(traj.u)[:-1],
        x=np.concatenate([q, qd], axis=1),
        tip=np.asarray(traj.tip),
        cost_history=np.asarray(run.costs),
        gradient_history=np.asarray(run.grads),
        iterations=run.updates,
        converged=run.converged,
        message=run.message,
        info=info,
    )


class _Run:
    """The state of one solve: the best iterate, histories and the reason it stopped (shared by the rounds of the
    augmented Lagrangian)."""

    def __init__(self, problem, opt, lbfgs, bar):
        self.problem, self.opt, self.lbfgs, self.bar = problem, opt, lbfgs, bar
        self.best, self.traj, self.constraints = None, None, None
        self.costs, self.grads, self.violations = [], [], []
        self.updates, self.rounds, self.converged, self.finite, self.message = 0, 0, False, True, ""
        self.tolerance = math.nan  # the projected-gradient tolerance of the last inner solve
        self.start, self.first_s = time.perf_counter(), math.nan

    def minimise(self, c, multipliers, budget: int, gtol: float, relative: float = 0.0) -> bool:
        """Projected optimisation of the merit from ``c`` for at most ``budget`` updates, to a projected gradient of
        at most ``max(gtol, relative × the first one)`` (kept in ``self.tolerance``); True when converged."""
        problem, opt = self.problem, self.opt
        state = opt.init(c)
        evaluation = _cost_and_gradient(problem, c, multipliers)
        for k in range(budget + 1):
            L, (J, violation, h, g_path), traj, g, pg = evaluation
            L, J, pg = float(L), float(J), float(pg)
            if k == 0:
                gtol = self.tolerance = max(gtol, relative * pg)
            if math.isnan(self.first_s):
                self.first_s = time.perf_counter() - self.start
            if not (math.isfinite(L) and math.isfinite(pg)):
                self.finite = False
                self.message = f"stopped after {self.updates} updates: the cost or its gradient is not finite"
                return False
            if k > 0 or not self.costs:  # a new round starts where the last one ended: not a new iterate
                self.costs.append(J), self.grads.append(pg), self.violations.append(float(violation))
            self.best, self.traj, self.constraints = c, traj, (h, g_path)
            if self.bar is not None:
                self.bar.set_postfix(cost=f"{J:.6g}", pg=f"{pg:.2e}")
                self.bar.update(0 if k == 0 else 1)
            if pg <= gtol:
                self.converged, self.message = True, f"converged: projected gradient {pg:.3g} <= gtol = {gtol:g}"
                return True
            if k == budget:
                self.converged = False
                self.message = f"reached max_iters = {self.updates} (projected gradient {pg:.3g} > gtol = {gtol:g})"
                return False
            step, state = _update(opt, g, state, c)
            if self.lbfgs:
                active = _active(problem, c, g)
                d = jnp.where(active, 0.0, -step)
                free_g = jnp.where(active, 0.0, g)
                if float(jnp.vdot(d, free_g)) >= 0.0:  # not a descent direction: steepest descent on the free knots
                    d = -free_g
                accepted = _projected_search(problem, c, L, g, d, multipliers)
                if accepted is None:
                    self.converged = False
                    self.message = (
                        f"stopped after {self.updates} updates: the line search found no decrease (projected "
                        f"gradient {pg:.3g})"
                    )
                    return False
                c, evaluation = accepted
            else:
                c = problem.project(optax.apply_updates(c, step))
                evaluation = _cost_and_gradient(problem, c, multipliers)
            self.updates += 1
        return False


def _progress_bar(progress: bool, total: int):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="shooting", unit="it")
