"""Differential dynamic programming on a discrete step map: full second-order DDP and Gauss–Newton iLQR.

The problem (a :class:`DiscreteProblem`): minimise over controls ``u_0 … u_{T−1}``

    J = Σ_k ℓ(x_k, u_k) + φ(x_T),      x_{k+1} = f(x_k, u_k),  x_0 given,

for a step map ``f`` (e.g. :func:`symplectic_euler` of a :class:`~jaxse3.sim.System`). Each iteration (Tassa, Erez &
Todorov, IROS 2012, §II; Mastalli et al., ICRA 2020, for the stopping test and schedules, which follow Crocoddyl's
defaults):

1. derivatives along the nominal trajectory, all knots at once (``vmap``): f_x, f_u and, for DDP, the second
   derivatives f_xx, f_ux, f_uu — for a rigid robot the exact ones of its ``custom_jvp`` rules (IDSVA second order
   through the forward-dynamics chain rule);
2. the backward pass (a ``lax.scan``) with the Q-function of eq. (5)
   ``Q_xx = ℓ_xx + f_xᵀ V'_xx f_x + V'_x · f_xx`` (and likewise Q_ux, Q_uu; iLQR drops the ``V'_x · f_··`` terms),
   ``Q_uu + μ I`` factored by Cholesky, gains ``k = −Q̃_uu⁻¹ Q_u``, ``K = −Q̃_uu⁻¹ Q_ux``; a failed factorisation
   raises μ (×10) and repeats the pass with the same derivatives;
3. the forward pass ``u = ū + α k + K (x − x̄)`` for α = 1, ½, …, 2⁻⁹, accepting the first step whose decrease is at
   least 0.1 of the model's ``−(α k·Q_u + ½ α² k·Q_uu k)``; μ (on Q_uu and V'_xx) falls (÷10, to ``mu_min``) after a
   full step and rises (×10) after a step of at most 0.01 or none (Crocoddyl's ``SolverDDP`` schedule).

It stops, converged, when ``Σ_k ‖Q_u,k‖² < th_stop`` (Crocoddyl's criterion, default 1e−9), and unconverged at
``max_iters`` or when μ exceeds its maximum. The whole solve is one ``lax.while_loop``: ``jax.jit`` compiles it once,
``jax.vmap`` solves many problems (targets, initial states) together.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from jaxse3.sim import System

__all__ = ["DiscreteProblem", "DDPSolution", "solve_ddp", "symplectic_euler", "STATUS"]

_ALPHAS = 2.0 ** -jnp.arange(10)
#: :attr:`DDPSolution.status` codes
STATUS = {
    0: "converged: the sum of |Q_u|^2 fell below th_stop",
    1: "reached max_iters without converging",
    2: (
        "the regularisation exceeded mu_max: Q_uu could not be made positive definite or no step decreased the cost "
        "(non-finite dynamics, costs or derivatives along the trajectory?); the last good iterate is returned"
    ),
}


def symplectic_euler(system: System, dt: float) -> Callable:
    """The step map ``(x, u) -> x'`` of ``system`` with x = (q, q̇) stacked: q̇' = q̇ + dt FD(q, q̇, u),
    q' = q + dt q̇' (semi-implicit Euler, the step of Crocoddyl's ``IntegratedActionModelEuler``)."""
    n = system.n_dof

    def step(x, u):
        q, qd = x[:n], x[n:]
        qd_next = qd + dt * system.acceleration(q, qd, u)
        return jnp.concatenate([q + dt * qd_next, qd_next])

    return step


class DiscreteProblem(eqx.Module):
    """``min Σ_k running(x_k, u_k) + terminal(x_T)`` subject to ``x_{k+1} = step(x_k, u_k)``, ``x_0 = x0``.

    Attributes:
        step: ``(x, u) -> x'`` (twice differentiable for DDP).
        running: ``(x, u) -> scalar``, the cost of one knot (include the time step ``dt`` in it).
        terminal: ``x -> scalar``.
        x0: the initial state (n_x,) (an array leaf: vmap over it).
        horizon: T, the number of controls.
        n_controls: the size of u.
    """

    step: Callable = eqx.field(static=True)
    running: Callable = eqx.field(static=True)
    terminal: Callable = eqx.field(static=True)
    x0: Float[Array, " n_x"]
    horizon: int = eqx.field(static=True)
    n_controls: int = eqx.field(static=True)

    def __init__(
        self,
        step: Callable[[Float[Array, " n_x"], Float[Array, " n_u"]], Float[Array, " n_x"]],
        running: Callable[[Float[Array, " n_x"], Float[Array, " n_u"]], Float[Array, ""]],
        terminal: Callable[[Float[Array, " n_x"]], Float[Array, ""]],
        x0: Float[ArrayLike, " n_x"],
        horizon: int,
        n_controls: int,
    ):
        self.step, self.running, self.terminal = step, running, terminal
        self.x0 = jnp.asarray(x0, dtype=float)
        if self.x0.ndim != 1:
            raise ValueError(f"DiscreteProblem: x0 must be a vector (n_x,), got shape {self.x0.shape}")
        if not (isinstance(horizon, int) and horizon >= 1):
            raise ValueError(f"DiscreteProblem: horizon must be a positive int, got {horizon!r}")
        if not (isinstance(n_controls, int) and n_controls >= 1):
            raise ValueError(f"DiscreteProblem: n_controls must be a positive int, got {n_controls!r}")
        self.horizon, self.n_controls = horizon, n_controls
        x, u = jax.ShapeDtypeStruct(self.x0.shape, float), jax.ShapeDtypeStruct((n_controls,), float)
        if jax.eval_shape(step, x, u).shape != self.x0.shape:
            raise ValueError(f"DiscreteProblem: step must map (x, u) to a state of shape {self.x0.shape}")
        for name, shape in (
            ("running", jax.eval_shape(running, x, u).shape),
            ("terminal", jax.eval_shape(terminal, x).shape),
        ):
            if shape != ():
                raise ValueError(f"DiscreteProblem: the {name} cost must return a scalar, got shape {shape}")

    def rollout(self, us: Float[Array, "T n_u"]) -> Float[Array, "T+1 n_x"]:
        """The states x_0 … x_T under the controls ``us``."""

        def one(x, u):
            x_next = self.step(x, u)
            return x_next, x_next

        _, xs = jax.lax.scan(one, self.x0, us)
        return jnp.concatenate([self.x0[None], xs])

    def cost(self, xs: Float[Array, "T+1 n_x"], us: Float[Array, "T n_u"]) -> Float[Array, ""]:
        """J of a trajectory."""
        return jnp.sum(jax.vmap(self.running)(xs[:-1], us)) + self.terminal(xs[-1])


class DDPSolution(eqx.Module):
    """The result of :func:`solve_ddp` (a pytree: batched under ``vmap``).

    Attributes:
        xs: (T + 1, n_x) states; us: (T, n_u) controls; cost: J.
        cost_history: (max_iters + 1,) J after each iteration (the initial guess first; NaN after the stop).
        iterations: the accepted and rejected iterations made; converged: the stopping test passed.
        status: why it stopped, a key of :data:`STATUS` (0 converged, 1 ``max_iters``, 2 μ above ``mu_max``).
        stop: the last ``Σ‖Q_u‖²``; regularisation: the last μ.
        K: (T, n_u, n_x) feedback gains of the last backward pass (a local controller around the solution).
    """

    xs: Float[Array, "T+1 n_x"]
    us: Float[Array, "T n_u"]
    cost: Float[Array, ""]
    cost_history: Float[Array, " iters"]
    iterations: Int[Array, ""]
    converged: Bool[Array, ""]
    status: Int[Array, ""]
    stop: Float[Array, ""]
    regularisation: Float[Array, ""]
    K: Float[Array, "T n_u n_x"]

    @property
    def message(self) -> str:
        """Why the solve stopped, in words (outside jit; for a batch, the first member that did not converge)."""
        codes = np.ravel(np.asarray(self.status))
        bad = codes[codes != 0]
        return STATUS[int(bad[0]) if bad.size else 0]


def _derivatives(problem: DiscreteProblem, xs, us, second_order: bool):
    """Per knot: f_x, f_u, ℓ_x, ℓ_u, ℓ_xx, ℓ_ux, ℓ_uu and (DDP) the second derivatives of f; terminal φ_x, φ_xx."""

    def knot(x, u):
        fx, fu = jax.jacfwd(problem.step, argnums=(0, 1))(x, u)
        lx, lu = jax.grad(problem.running, argnums=(0, 1))(x, u)
        (lxx, _), (lux, luu) = jax.hessian(problem.running, argnums=(0, 1))(x, u)
        out = (fx, fu, lx, lu, lxx, lux, luu)
        if second_order:
            (fxx, _), (fux, fuu) = jax.hessian(problem.step, argnums=(0, 1))(x, u)  # [output, a, b]
            out += (fxx, fux, fuu)
        return out

    per_knot = jax.vmap(knot)(xs[:-1], us)
    phi_x, phi_xx = jax.grad(problem.terminal)(xs[-1]), jax.hessian(problem.terminal)(xs[-1])
    return per_knot, phi_x, phi_xx


def _backward(derivs, phi_x, phi_xx, mu, second_order: bool):
    """Gains (k, K), the model's decrease terms (Σ k·Q_u, Σ k·Q_uu k), Σ‖Q_u‖² and whether every Q_uu + μI was
    positive definite. μ also regularises V'_xx (as Crocoddyl's ``xreg``)."""

    def back(carry, d):
        Vx, Vxx = carry
        Vxx = Vxx + mu * jnp.eye(Vxx.shape[0])
        fx, fu, lx, lu, lxx, lux, luu = d[:7]
        Qx, Qu = lx + fx.T @ Vx, lu + fu.T @ Vx
        Qxx, Qux, Quu = lxx + fx.T @ Vxx @ fx, lux + fu.T @ Vxx @ fx, luu + fu.T @ Vxx @ fu
        if second_order:
            fxx, fux, fuu = d[7:]
            Qxx, Qux, Quu = (
                Qxx + jnp.einsum("i,iab->ab", Vx, fxx),
                Qux + jnp.einsum("i,iab->ab", Vx, fux),
                Quu + jnp.einsum("i,iab->ab", Vx, fuu),
            )
        Quu = 0.5 * (Quu + Quu.T)
        L = jnp.linalg.cholesky(Quu + mu * jnp.eye(Quu.shape[0]))
        ok = jnp.all(jnp.isfinite(L))
        gains = -jsl.cho_solve((L, True), jnp.concatenate([Qu[:, None], Qux], axis=1))
        k, K = gains[:, 0], gains[:, 1:]
        Vx = Qx + K.T @ Quu @ k + K.T @ Qu + Qux.T @ k
        Vxx = Qxx + K.T @ Quu @ K + K.T @ Qux + Qux.T @ K
        Vxx = 0.5 * (Vxx + Vxx.T)
        return (Vx, Vxx), (k, K, k @ Qu, k @ Quu @ k, Qu @ Qu, ok)

    _, (k, K, d1, d2, qu2, ok) = jax.lax.scan(back, (phi_x, phi_xx), derivs, reverse=True)
    return k, K, jnp.sum(d1), jnp.sum(d2), jnp.sum(qu2), jnp.all(ok)


def _forward(problem: DiscreteProblem, xs, us, k, K, alpha):
    """The closed-loop rollout ``u = ū + α k + K (x − x̄)``; (states, controls, cost)."""

    def one(x, inputs):
        x_bar, u_bar, k_t, K_t = inputs
        u = u_bar + alpha * k_t + K_t @ (x - x_bar)
        x_next = problem.step(x, u)
        return x_next, (x_next, u)

    _, (x_next, new_us) = jax.lax.scan(one, problem.x0, (xs[:-1], us, k, K))
    new_xs = jnp.concatenate([problem.x0[None], x_next])
    return new_xs, new_us, problem.cost(new_xs, new_us)


class _State(eqx.Module):
    xs: jax.Array
    us: jax.Array
    cost: jax.Array
    mu: jax.Array
    stop: jax.Array
    it: jax.Array
    done: jax.Array
    converged: jax.Array
    history: jax.Array
    K: jax.Array


def solve_ddp(
    problem: DiscreteProblem,
    us0: Float[ArrayLike, "T n_u"] | None = None,
    *,
    method: str = "ddp",
    max_iters: int = 100,
    th_stop: float = 1e-9,
    mu_init: float = 1e-9,
    mu_min: float = 1e-9,
    mu_max: float = 1e9,
) -> DDPSolution:
    """Solve ``problem`` by DDP (``method="ddp"``, exact second derivatives of the step) or Gauss–Newton iLQR
    (``"ilqr"``), from the controls ``us0`` (default zero; the initial states are their rollout). Jit-able and
    vmap-able (module docstring).

    Args:
        max_iters: the largest number of iterations (each: one evaluation of the derivatives, the backward passes
            its regularisation needs, one line search).
        th_stop: the stopping test on ``Σ_k ‖Q_u,k‖²``.
        mu_init, mu_min, mu_max: the regularisation μ added to Q_uu and V'_xx: its start, the floor it falls to
            after full steps, and the ceiling at which the solve stops unconverged.
    """
    if method not in ("ddp", "ilqr"):
        raise ValueError(f"solve_ddp: method must be 'ddp' or 'ilqr', got {method!r}")
    if not isinstance(problem, DiscreteProblem):
        raise TypeError(f"solve_ddp: problem must be a DiscreteProblem, got {type(problem).__name__}")
    shape = (problem.horizon, problem.n_controls)
    us = jnp.zeros(shape) if us0 is None else jnp.asarray(us0, dtype=float)
    if us.shape != shape:
        raise ValueError(f"solve_ddp: us0 must have shape {shape}, got {us.shape}")
    second_order = method == "ddp"
    xs = problem.rollout(us)
    cost = problem.cost(xs, us)
    n_x = problem.x0.shape[0]
    history = jnp.full(max_iters + 1, jnp.nan).at[0].set(cost)
    state = _State(
        xs,
        us,
        cost,
        jnp.asarray(mu_init),
        jnp.asarray(jnp.inf),
        jnp.asarray(0),
        jnp.asarray(False),
        jnp.asarray(False),
        history,
        jnp.zeros((*shape, n_x)),
    )

    def iteration(s: _State) -> _State:
        derivs, phi_x, phi_xx = _derivatives(problem, s.xs, s.us, second_order)

        # the backward pass, with μ raised (×10) until every Q_uu + μI is positive definite (the derivatives kept)
        def backward(mu):
            return _backward(derivs, phi_x, phi_xx, mu, second_order)

        def not_definite(c):
            mu, out = c
            return ~out[-1] & (mu <= mu_max)

        def raise_mu(c):
            mu = c[0] * 10.0
            return mu, backward(mu)

        mu, (k, K, d1, d2, stop, ok) = jax.lax.while_loop(not_definite, raise_mu, (s.mu, backward(s.mu)))
        converged = ok & (stop < th_stop)

        def cond(c):
            i, accepted, _ = c
            return (i < _ALPHAS.size) & ~accepted

        def body(c):
            i, _, _ = c
            alpha = _ALPHAS[i]
            new_xs, new_us, new_cost = _forward(problem, s.xs, s.us, k, K, alpha)
            expected = -(alpha * d1 + 0.5 * alpha * alpha * d2)
            accepted = jnp.isfinite(new_cost) & (expected >= 0) & ((s.cost - new_cost) >= 0.1 * expected)
            return i + 1, accepted, (new_xs, new_us, new_cost)

        i, accepted, (new_xs, new_us, new_cost) = jax.lax.while_loop(
            cond, body, (jnp.asarray(0), jnp.asarray(False), (s.xs, s.us, s.cost))
        )
        take = ok & accepted & ~converged
        alpha = _ALPHAS[jnp.maximum(i - 1, 0)]
        # Crocoddyl's schedule: μ ÷ 10 after a full step, × 10 after a step ≤ 0.01 or none
        mu = jnp.where(take & (alpha > 0.5), jnp.maximum(mu / 10.0, mu_min), mu)
        mu = jnp.where(~converged & (~take | (alpha <= 0.01)), mu * 10.0, mu)
        xs_, us_, cost_ = jax.tree.map(
            lambda a, b: jnp.where(take, a, b), (new_xs, new_us, new_cost), (s.xs, s.us, s.cost)
        )
        it = s.it + 1
        done = converged | (mu > mu_max) | (it >= max_iters)
        return _State(
            xs_,
            us_,
            cost_,
            mu,
            jnp.where(ok, stop, s.stop),
            it,
            done,
            converged,
            s.history.at[it].set(cost_),
            jnp.where(ok, K, s.K),
        )

    s = jax.lax.while_loop(lambda s: ~s.done, iteration, state)
    status = jnp.where(s.converged, 0, jnp.where(s.mu > mu_max, 2, 1))
    return DDPSolution(s.xs, s.us, s.cost, s.history, s.it, s.converged, status, s.stop, s.mu, s.K)
