"""Differential dynamic programming on a discrete step map: full second-order DDP and Gauss–Newton iLQR, with
control bounds (Box-DDP) and infeasible initial states (FDDP).

The problem (a :class:`DiscreteProblem`): minimise over controls ``u_0 … u_{T−1}``

    J = Σ_k ℓ(x_k, u_k) + φ(x_T),      x_{k+1} = f(x_k, u_k),  x_0 given,

for a step map ``f`` (e.g. :func:`symplectic_euler` of a :class:`~jaxse3.sim.System`). Each iteration (Tassa, Erez &
Todorov, IROS 2012, §II; Mastalli et al., ICRA 2020, for the stopping test and schedules, which follow Crocoddyl's
defaults):

1. derivatives along the nominal trajectory, all knots at once (``vmap``): f_x, f_u and, for DDP with a step that
   has them, the full second derivatives f_xx, f_ux, f_uu — for a rigid robot under :func:`symplectic_euler` the
   exact ones of IDSVA SO through the forward-dynamics chain rule (``System.acceleration_hessians``);
2. the backward pass (a ``lax.scan``) with the Q-function of eq. (5)
   ``Q_xx = ℓ_xx + f_xᵀ V'_xx f_x + V'_x · f_xx`` (and likewise Q_ux, Q_uu; iLQR drops the ``V'_x · f_··`` terms),
   the ``V'_x · f_··`` terms contracting those tensors or, for other steps, evaluated knot by knot as the Hessian of
   the scalar ``V'_x · f`` (the step's ``weighted_hessians``: :func:`implicit_euler`'s costs one forward-over-reverse
   pass of the forward dynamics per variable; else ``jax.hessian`` through the models' first-order rules),
   regularised by ``V'_xx + μI`` (eq. (10); optionally also ``Q_uu + μI``), Q_uu factored by Cholesky, gains
   ``k = −Q_uu⁻¹ Q_u``, ``K = −Q_uu⁻¹ Q_ux`` — with bounds on u, k from a box QP solved by projected Newton and K
   restricted to the free controls (Tassa, Mansard & Todorov, ICRA 2014); a failed factorisation raises μ (×10)
   and repeats the pass with the same derivatives;
3. the forward pass ``u = ū + α k + K (x − x̄)`` (clamped to the bounds) for α = 1, ½, …, 2⁻⁹, accepting the first
   step whose decrease is at least 0.1 of the model's ``−(α k·Q_u + ½ α² k·Q_uu k)``; μ falls (÷10, to
   ``mu_min``) after a full step and rises (×10) after a step of at most 0.01 or none (Crocoddyl's ``SolverDDP``
   schedule).

Given initial states that are no rollout (``xs0``), the iterations are feasibility-driven (Mastalli et al. 2020,
FDDP): the defects enter the backward pass, each step closes the fraction α of them, and the expected decrease has
their terms. It stops, converged, when the trajectory is feasible and ``Σ_k ‖Q_u,k‖² < th_stop`` (Crocoddyl's
criterion, default 1e−9; with bounds, over the components not held at a bound), and unconverged at ``max_iters`` or
when μ exceeds its maximum. The whole solve is one ``lax.while_loop``: ``jax.jit`` compiles it once,
``jax.vmap`` solves many problems (targets, initial states) together.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from jaxse3.integrate.newton import NewtonResults, newton
from jaxse3.optim.solution import Solution
from jaxse3.sim import System

__all__ = [
    "DiscreteProblem",
    "DDPSolution",
    "solve_ddp",
    "symplectic_euler",
    "implicit_euler",
    "STATUS",
    "REGULARISATIONS",
]

_ALPHAS = 2.0 ** -jnp.arange(10)
#: where μ enters the backward pass: ``"state"`` (V'_xx + μI) or ``"control"`` (also Q_uu + μI, as Crocoddyl)
REGULARISATIONS = ("state", "control")
#: :attr:`DDPSolution.status` codes
STATUS = {
    0: "converged: the sum of |Q_u|^2 fell below th_stop",
    1: "reached max_iters without converging",
    2: (
        "the regularisation exceeded mu_max: Q_uu could not be made positive definite or no step decreased the cost "
        "(non-finite dynamics, costs or derivatives along the trajectory?); the last good iterate is returned"
    ),
}


class _Euler:
    """The step maps of :func:`symplectic_euler` and :func:`implicit_euler` (callables; hashed by identity, as
    functions): ``f(x, u) = (q + dt v', v')`` with ``v' = v + dt a(y)``, ``a`` the forward dynamics at ``y = (q, v,
    u)`` (symplectic) or at the step's end ``y = (q + dt v', v', u)`` (implicit, solved by Newton)."""

    implicit = False

    def __init__(self, system: System, dt: float):
        self.system, self.dt = system, dt

    def __call__(self, x, u):
        n, dt = self.system.n_dof, self.dt
        q, qd = x[:n], x[n:]
        qd_next = qd + dt * self.system.acceleration(q, qd, u)
        return jnp.concatenate([q + dt * qd_next, qd_next])

    def weighted_hessians(self, x, u, w, x_next, fx, fu):
        """The second derivatives ``(H_xx, H_ux, H_uu)`` of ``w · f(x, u)``, given the step's value ``x_next`` and
        first derivatives there. ``w · f = w_q · q + m · v'`` with ``m = dt w_q + w_v``, and ``v' − v = dt a(y)``
        makes ``∇²(m · v') = dt Yᵀ ∇²_y(ν · a) Y`` with ``Y = ∂y/∂(x, u)`` and ``ν = (∂v'/∂v)ᵀ m`` (the implicit
        function theorem twice; symplectic: ``Y = I``, ``ν = m``; implicit: ``y = (f, u)``, so
        ``Y = [[f_x, f_u], [0, I]]``, and ``∂v'/∂v = (I − dt² a_q − dt a_v)⁻¹``). ``∇²_y(ν · a)`` contracts the
        system's ``acceleration_hessians`` where it has them, else is ``jax.hessian`` of ``ν · a`` (one
        forward-over-reverse pass per argument, through the models' first-order rules)."""
        n, dt = self.system.n_dof, self.dt
        m = dt * w[:n] + w[n:]
        if self.implicit:
            y = jnp.concatenate([x_next, u])
            Y = jnp.block([[fx, fu], [jnp.zeros((u.shape[0], x.shape[0])), jnp.eye(u.shape[0])]])
            nu = fx[n:, n:].T @ m
        else:
            y, Y, nu = jnp.concatenate([x, u]), None, m
        A = dt * self._weighted_acceleration_hessian(y, nu)
        H = A if Y is None else Y.T @ A @ Y
        return H[: 2 * n, : 2 * n], H[2 * n :, : 2 * n], H[2 * n :, 2 * n :]

    def _weighted_acceleration_hessian(self, y, nu):
        """``∇²_y (ν · a(y))`` at y = (q, v, u)."""
        system, n = self.system, self.system.n_dof
        q, qd, u = y[:n], y[n : 2 * n], y[2 * n :]
        if system.acceleration_hessians is None:
            return jax.hessian(lambda y: nu @ system.acceleration(y[:n], y[n : 2 * n], y[2 * n :]))(y)
        a_qq, a_vv, a_qv, a_qu = (
            jnp.einsum("i,iab->ab", nu, h) for h in system.acceleration_hessians(system.params, q, qd, u)
        )
        m = u.shape[0]
        zeros = lambda r, c: jnp.zeros((r, c), y.dtype)
        return jnp.block([[a_qq, a_qv, a_qu], [a_qv.T, a_vv, zeros(n, m)], [a_qu.T, zeros(m, n), zeros(m, m)]])


class _SymplecticEulerTensors(_Euler):
    """Symplectic Euler of a system with ``acceleration_hessians``: the full second-derivative tensors, evaluated at
    all knots at once before the backward pass."""

    def second_derivatives(self, x, u):
        """``(f_xx, f_ux, f_uu)``, layouts ``[output, a, b]``, from the system's ``acceleration_hessians``:
        ``f = (q + dt q̇ + dt² q̈, q̇ + dt q̈)`` is affine in q̈, so ``f_·· = (dt², dt) ⊗ q̈_··``."""
        system, n, dt = self.system, self.system.n_dof, self.dt
        a_qq, a_vv, a_qv, a_qu = system.acceleration_hessians(system.params, x[:n], x[n:], u)
        a_xx = jnp.concatenate(
            [jnp.concatenate([a_qq, a_qv], axis=2), jnp.concatenate([jnp.swapaxes(a_qv, 1, 2), a_vv], axis=2)],
            axis=1,
        )
        a_ux = jnp.concatenate([jnp.swapaxes(a_qu, 1, 2), jnp.zeros_like(a_qu)], axis=2)
        a_uu = jnp.zeros((n, system.n_inputs, system.n_inputs), a_qu.dtype)
        return tuple(jnp.concatenate([dt * dt * h, dt * h]) for h in (a_xx, a_ux, a_uu))


class _ImplicitEuler(_Euler):
    implicit = True

    def __init__(self, system: System, dt: float, tol: float, max_iters: int):
        super().__init__(system, dt)
        self.tol, self.max_iters = tol, max_iters

    @staticmethod
    def _newton_system(v_next, p):
        """``R = v' − v − dt a(q + dt v', v', u)`` and ``∂R/∂v' = I − dt² a_q − dt a_v``."""
        step, params, q, qd, u = p
        fd, dt = step.system.forward_dynamics, step.dt
        a = lambda q_, v_: fd(params, q_, v_, u)
        q_next = q + dt * v_next
        a_q, a_v = jax.jacfwd(a, argnums=(0, 1))(q_next, v_next)
        R = v_next - qd - dt * a(q_next, v_next)
        return R, jnp.eye(q.shape[0]) - dt * dt * a_q - dt * a_v

    def first_derivatives(self, x, u, x_next):
        """``(f_x, f_u)`` given the step's value ``x_next = f(x, u)``, by the implicit function theorem at that root
        (no Newton solve): ``R = v' − v − dt a(q + dt v', v', u) = 0`` gives ``∂v'/∂(q, v, u) = S⁻¹ [dt a_q, I,
        dt a_u]`` with ``S = ∂R/∂v' = I − dt² a_q − dt a_v`` at ``(q', v', u)``, and ``q' = q + dt v'``."""
        n, dt = self.system.n_dof, self.dt
        fd, params = self.system.forward_dynamics, self.system.params
        q_next, v_next = x_next[:n], x_next[n:]
        a_q, a_v, a_u = jax.jacfwd(lambda q_, v_, u_: fd(params, q_, v_, u_), argnums=(0, 1, 2))(q_next, v_next, u)
        eye = jnp.eye(n, dtype=x.dtype)
        S = eye - dt * dt * a_q - dt * a_v
        V = jnp.linalg.solve(S, jnp.concatenate([dt * a_q, eye, dt * a_u], axis=1))  # ∂v'/∂(q, v, u)
        V_x, V_u = V[:, : 2 * n], V[:, 2 * n :]
        fx = jnp.concatenate([jnp.eye(2 * n, dtype=x.dtype)[:n] + dt * V_x, V_x])
        return fx, jnp.concatenate([dt * V_u, V_u])

    def __call__(self, x, u):
        n, dt = self.system.n_dof, self.dt
        q, qd = x[:n], x[n:]
        # from the current velocity (the symplectic step's guess overshoots on stiff systems: dt a ≫ the velocity)
        sol = newton(self._newton_system, qd, (self, self.system.params, q, qd, u), self.tol, self.max_iters)
        # a step whose Newton iteration fails is NaN: a solver's line search then rejects it
        qd_next = jnp.where(sol.result == NewtonResults.successful, sol.value, jnp.nan)
        return jnp.concatenate([q + dt * qd_next, qd_next])


def symplectic_euler(system: System, dt: float) -> Callable:
    """The step map ``(x, u) -> x'`` of ``system`` with x = (q, q̇) stacked: q̇' = q̇ + dt FD(q, q̇, u),
    q' = q + dt q̇' (semi-implicit Euler, the step of Crocoddyl's ``IntegratedActionModelEuler``); explicit, so
    stable only for steps below the system's fastest period (rigid arms; stiff rods need :func:`implicit_euler`).

    For :func:`solve_ddp` it carries its second derivatives: the full tensors from the system's
    ``acceleration_hessians`` where it has them (rigid trees: IDSVA SO, ten times faster than ``jax.hessian``
    through the first-order rules on a 7-DoF arm), evaluated at all knots at once; otherwise the Hessian of
    ``V'_x · f`` in the backward pass (``weighted_hessians``)."""
    return (_Euler if system.acceleration_hessians is None else _SymplecticEulerTensors)(system, dt)


def implicit_euler(system: System, dt: float, tol: float = 1e-10, max_iters: int = 20) -> Callable:
    """The implicit (backward) Euler step map ``(x, u) -> x'`` of ``system``, x = (q, q̇):
    ``q̇' = q̇ + dt FD(q', q̇', u)``, ``q' = q + dt q̇'``, solved for q̇' by Newton (``‖R‖_∞ ≤ tol``, at most
    ``max_iters`` updates, from q̇' = q̇) with the Jacobians of the forward dynamics (a rod's analytical
    rules). L-stable: the step for stiff systems such as soft rods at steps far above their fastest period (it damps
    the modes it does not resolve).

    Its derivatives follow from the implicit function theorem (:func:`jaxse3.integrate.newton.newton`; the loop is
    not differentiated); :func:`solve_ddp` takes them at the trajectory's known roots (``first_derivatives``), without
    solving the steps again. For :func:`solve_ddp` the Hessian of ``V'_x · f`` in the backward pass costs one
    forward-over-reverse pass of ``ν · FD`` per state and control (``weighted_hessians``). A step whose Newton
    iteration fails is NaN (a solver's line search then rejects it)."""
    if not (isinstance(max_iters, int) and max_iters >= 1):
        raise ValueError(f"implicit_euler: max_iters must be a positive int, got {max_iters!r}")
    if not tol > 0:
        raise ValueError(f"implicit_euler: tol must be positive, got {tol!r}")
    return _ImplicitEuler(system, dt, tol, max_iters)


class DiscreteProblem(eqx.Module):
    """``min Σ_k running(x_k, u_k) + terminal(x_T)`` subject to ``x_{k+1} = step(x_k, u_k)``, ``x_0 = x0``.

    Attributes:
        step: ``(x, u) -> x'`` (twice differentiable for DDP): :func:`symplectic_euler`, :func:`implicit_euler` or
            any function; a step may supply its first derivatives at a known value by a method
            ``first_derivatives(x, u, x_next) -> (f_x, f_u)``, and its second derivatives by a method
            ``second_derivatives(x, u) -> (f_xx, f_ux, f_uu)`` (full tensors, layouts ``[output, a, b]``) or
            ``weighted_hessians(x, u, w, x_next, f_x, f_u) -> (H_xx, H_ux, H_uu)`` (of the scalar ``w · f``, given
            f's value and first derivatives).
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
        step_history: the step length α taken by each iteration (0: none accepted; the first entry NaN);
        regularisation_history: μ after each iteration (the first entry ``mu_init``); stop_history: Σ‖Q_u‖² of
        each iteration's backward pass (the first entry NaN). Together Crocoddyl's per-iteration log.
        iterations: the accepted and rejected iterations made; converged: the stopping test passed.
        status: why it stopped, a key of :data:`STATUS` (0 converged, 1 ``max_iters``, 2 μ above ``mu_max``).
        stop: the last ``Σ‖Q_u‖²``; regularisation: the last μ.
        K: (T, n_u, n_x) feedback gains of the last backward pass (a local controller around the solution).
        defect: the largest ``|f(x_k, u_k) − x_{k+1}|`` left (zero once a full step closed the gaps of ``xs0``).
    """

    xs: Float[Array, "T+1 n_x"]
    us: Float[Array, "T n_u"]
    cost: Float[Array, ""]
    cost_history: Float[Array, " iters"]
    step_history: Float[Array, " iters"]
    regularisation_history: Float[Array, " iters"]
    stop_history: Float[Array, " iters"]
    iterations: Int[Array, ""]
    converged: Bool[Array, ""]
    status: Int[Array, ""]
    stop: Float[Array, ""]
    regularisation: Float[Array, ""]
    K: Float[Array, "T n_u n_x"]
    defect: Float[Array, ""]

    @property
    def message(self) -> str:
        """Why the solve stopped, in words (outside jit; for a batch, the first member that did not converge)."""
        codes = np.ravel(np.asarray(self.status))
        bad = codes[codes != 0]
        return STATUS[int(bad[0]) if bad.size else 0]

    def log(self) -> str:
        """The iterations as a table (iteration, cost, Σ‖Q_u‖², μ, step α), as Crocoddyl's verbose callback prints
        them (outside jit, one solve)."""
        n = int(self.iterations) + 1
        rows = ["iter      cost          stop      reg    step"]
        for k in range(n):
            c, a, mu, stop = (
                float(np.asarray(h)[k])
                for h in (self.cost_history, self.step_history, self.regularisation_history, self.stop_history)
            )
            rows.append(f"{k:4d}  {c:12.6g}  {stop:10.3e}  {mu:7.1e}  {a:6.4f}")
        return "\n".join(rows)

    def to_solution(self, dt: float, tip: Float[ArrayLike, "T+1 3"], info: dict[str, Any] | None = None) -> Solution:
        """This solve as a :class:`~jaxse3.optim.Solution` (save/load as ``.npz``, :func:`~jaxse3.viz.plot_solution`):
        the controls are the decision variables and ``u`` (zero-order hold over steps of ``dt``), ``x`` the states,
        ``tip`` (T + 1, 3) the points to draw (e.g. an end effector's positions), the gradient history Σ‖Q_u‖²."""
        n = int(self.iterations) + 1
        us = np.asarray(self.us)
        return Solution(
            values=us,
            t=dt * np.arange(us.shape[0] + 1),
            u=us,
            x=np.asarray(self.xs),
            tip=np.asarray(tip),
            cost_history=np.asarray(self.cost_history)[:n],
            gradient_history=np.asarray(self.stop_history)[:n],
            iterations=int(self.iterations),
            converged=bool(self.converged),
            message=self.message,
            info=dict(info or {}),
        )


def _weighted_hessians(step, x, u, w, x_next, fx, fu):
    """``(H_xx, H_ux, H_uu)`` of ``w · step(x, u)`` by ``jax.hessian``: a step map's default ``weighted_hessians``."""
    del x_next, fx, fu
    (hxx, _), (hux, huu) = jax.hessian(lambda x, u: w @ step(x, u), argnums=(0, 1))(x, u)
    return hxx, hux, huu


def _second_order(problem: DiscreteProblem, method: str):
    """How DDP gets the step's second derivatives: ``"tensors"`` (the step's ``second_derivatives``, all knots at
    once before the backward pass), a function ``(x, u, w, x_next, f_x, f_u) -> (H_xx, H_ux, H_uu)`` of ``w · f``
    called in the backward pass with w = V'_x (the step's ``weighted_hessians``, else ``jax.hessian``), or None
    (iLQR)."""
    if method != "ddp":
        return None
    if hasattr(problem.step, "second_derivatives"):
        return "tensors"
    return getattr(problem.step, "weighted_hessians", functools.partial(_weighted_hessians, problem.step))


def _derivatives(problem: DiscreteProblem, xs, us, gaps, second):
    """Per knot: f_x, f_u, ℓ_x, ℓ_u, ℓ_xx, ℓ_ux, ℓ_uu and (``second == "tensors"``) f_xx, f_ux, f_uu; terminal φ_x,
    φ_xx. f_x and f_u from the step's ``first_derivatives`` at its value ``f(x̄, ū) = x̄' + gap`` where it has them
    (an implicit step then solves nothing again), else by ``jax.jacfwd``."""
    first = getattr(problem.step, "first_derivatives", None)

    def knot(x, u, x_next):
        if first is None:
            fx, fu = jax.jacfwd(problem.step, argnums=(0, 1))(x, u)
        else:
            fx, fu = first(x, u, x_next)
        (lxx, _), (lux, luu), (lx, lu) = _hessian_and_gradient(problem.running, x, u)
        out = (fx, fu, lx, lu, lxx, lux, luu)
        if second == "tensors":
            out += problem.step.second_derivatives(x, u)
        return out

    per_knot = jax.vmap(knot)(xs[:-1], us, xs[1:] + gaps[1:])
    phi_xx, phi_x = _hessian_and_gradient(problem.terminal, xs[-1])
    return per_knot, phi_x, phi_xx


def _hessian_and_gradient(f, *args):
    """``(∂²f/∂args², ∂f/∂args)`` of a scalar ``f``, the Hessian's blocks as ``jax.hessian`` nests them, from one
    forward-over-reverse pass (the gradient is the pass's own value, not a second reverse pass)."""
    argnums = tuple(range(len(args)))
    grad = jax.grad(f, argnums=argnums)
    hess, g = jax.jacfwd(lambda *a: (grad(*a),) * 2, argnums=argnums, has_aux=True)(*args)
    if len(args) == 1:
        return hess[0][0], g[0]
    return (*hess, g)


_BOX_QP_ITERS = 20


def _box_qp(H, g, lower, upper, x0):
    """``min ½ xᵀHx + gᵀx`` over ``lower ≤ x ≤ upper`` by projected Newton (Tassa, Mansard & Todorov, ICRA 2014,
    Algorithm 3; Crocoddyl's ``BoxQP``), warm-started at ``x0``, H positive definite.

    Returns ``(x, free, L)``: the minimiser, the mask of the components not held at a bound by a gradient pushing
    outwards, and the Cholesky factor of H restricted to the free components (identity rows and columns elsewhere).
    """
    n = g.shape[0]

    def value(x):
        return 0.5 * x @ H @ x + g @ x

    def split(x):
        grad = g + H @ x
        clamped = ((x <= lower) & (grad > 0)) | ((x >= upper) & (grad < 0))
        free = ~clamped
        both = free[:, None] & free[None, :]
        L = jnp.linalg.cholesky(jnp.where(both, H, jnp.eye(n)))
        return grad, free, L

    def cond(c):
        i, _, done = c
        return (i < _BOX_QP_ITERS) & ~done

    def body(c):
        i, x, _ = c
        grad, free, L = split(x)
        step = jnp.where(free, -jsl.cho_solve((L, True), jnp.where(free, grad, 0.0)), 0.0)
        f0 = value(x)

        def search(a):  # projected Armijo backtracking on the step
            j, alpha, x_new, ok = a
            trial = jnp.clip(x + alpha * step, lower, upper)
            ok = value(trial) <= f0 + 0.1 * grad @ (trial - x)
            return j + 1, alpha * 0.5, jnp.where(ok, trial, x_new), ok

        _, _, x_new, ok = jax.lax.while_loop(
            lambda a: (a[0] < 30) & ~a[3], search, (0, jnp.asarray(1.0, H.dtype), x, jnp.asarray(False))
        )
        converged = jnp.sum(jnp.where(free, grad, 0.0) ** 2) < 1e-20 * (1.0 + g @ g)
        return i + 1, x_new, converged | ~ok | jnp.all(x_new == x)

    _, x, _ = jax.lax.while_loop(cond, body, (0, jnp.clip(x0, lower, upper), jnp.asarray(False)))
    _, free, L = split(x)
    return x, free, L


def _backward(derivs, phi_x, phi_xx, xs, us, gaps, mu, second, regularisation: str, box=None):
    """Gains (k, K), the model's decrease terms (Σ k·Q_u, Σ k·Q_uu k), the stopping measure Σ‖Q_u‖² (without the
    components held at a bound), whether every regularised Q_uu was positive definite, and the value function's
    gradients and Hessians at every knot (T + 1, for the expected decrease with gaps).

    ``gaps`` (T + 1, n_x): the defects ``x̄_0 → x0`` and ``f(x̄_k, ū_k) − x̄_{k+1}``; the value function is expanded
    at the predicted next state, ``V'_x + V'_xx f̄_{k+1}`` (Mastalli et al. 2020, eq. (7)).

    μ regularises the value function's Hessian, ``V'_xx + μI`` (Tassa et al. 2012, eq. (10); Crocoddyl's ``xreg``):
    the model of the problem with the proximal term ``μ/2 Σ_k ‖x_k − x̄_k‖²`` added, so the step is damped in
    proportion to how much each control moves the state. ``regularisation="control"`` adds ``μI`` to Q_uu as well
    (Crocoddyl's ``ureg``). ``box``: ``(lower − ū, upper − ū, k_previous)`` per knot, the bounds on the step."""

    def back(carry, d):
        Vx, Vxx = carry
        fx, fu, lx, lu, lxx, lux, luu, x, u, x_next, gap = d[:11]
        Vxx = Vxx + mu * jnp.eye(fx.shape[0])
        Vx = Vx + Vxx @ gap
        Qx, Qu = lx + fx.T @ Vx, lu + fu.T @ Vx
        Qxx, Qux, Quu = lxx + fx.T @ Vxx @ fx, lux + fu.T @ Vxx @ fx, luu + fu.T @ Vxx @ fu
        if second == "tensors":
            hxx, hux, huu = (jnp.einsum("i,iab->ab", Vx, f) for f in d[11:14])
        elif second is not None:  # V'_x · f_·· from the step (at f(x̄, ū) = x̄' + gap)
            hxx, hux, huu = second(x, u, Vx, x_next + gap, fx, fu)
        if second is not None:
            Qxx, Qux, Quu = Qxx + hxx, Qux + hux, Quu + huu
        Quu = 0.5 * (Quu + Quu.T)
        if regularisation == "control":
            Quu = Quu + mu * jnp.eye(Quu.shape[0])
        L = jnp.linalg.cholesky(Quu)
        if box is None:
            gains = -jsl.cho_solve((L, True), jnp.concatenate([Qu[:, None], Qux], axis=1))
            k, K = gains[:, 0], gains[:, 1:]
            measure = Qu @ Qu
        else:  # the feedforward step from the box QP; feedback only in its free components
            lower, upper, k_previous = d[-3:]
            k, free, L_free = _box_qp(Quu, Qu, lower, upper, k_previous)
            K = jnp.where(free[:, None], -jsl.cho_solve((L_free, True), jnp.where(free[:, None], Qux, 0.0)), 0.0)
            # the projected gradient at ū: components at a bound with Q_u pushing outwards do not count
            held = ((lower >= 0) & (Qu > 0)) | ((upper <= 0) & (Qu < 0))
            measure = jnp.sum(jnp.where(held, 0.0, Qu) ** 2)
        ok = jnp.all(jnp.isfinite(L)) & jnp.all(jnp.isfinite(k))
        Vx = Qx + K.T @ Quu @ k + K.T @ Qu + Qux.T @ k
        Vxx = Qxx + K.T @ Quu @ K + K.T @ Qux + Qux.T @ K
        Vxx = 0.5 * (Vxx + Vxx.T)
        return (Vx, Vxx), (k, K, k @ Qu, k @ Quu @ k, measure, ok, Vx, Vxx)

    inputs = (*derivs[:7], xs[:-1], us, xs[1:], gaps[1:], *derivs[7:])
    inputs = inputs if box is None else (*inputs, *box)
    _, (k, K, d1, d2, qu2, ok, Vx, Vxx) = jax.lax.scan(back, (phi_x, phi_xx), inputs, reverse=True)
    Vx, Vxx = jnp.concatenate([Vx, phi_x[None]]), jnp.concatenate([Vxx, phi_xx[None]])
    return k, K, jnp.sum(d1), jnp.sum(d2), jnp.sum(qu2), jnp.all(ok), Vx, Vxx


def _forward(problem: DiscreteProblem, xs, us, k, K, alpha, lower, upper, gaps):
    """The closed-loop rollout ``u = clip(ū + α k + K (x − x̄), lower, upper)`` that closes the fraction α of the
    gaps, ``x_{k+1} = f(x_k, u_k) − (1 − α) f̄_{k+1}`` from ``x_0 = x0 − (1 − α) f̄_0`` (Mastalli et al. 2020, eq. (9));
    (states, controls, cost)."""

    def one(x, inputs):
        x_bar, u_bar, k_t, K_t, lo, up, gap = inputs
        u = jnp.clip(u_bar + alpha * k_t + K_t @ (x - x_bar), lo, up)
        x_next = problem.step(x, u) - (1.0 - alpha) * gap
        return x_next, (x_next, u)

    x_start = problem.x0 - (1.0 - alpha) * gaps[0]
    _, (x_next, new_us) = jax.lax.scan(one, x_start, (xs[:-1], us, k, K, lower, upper, gaps[1:]))
    new_xs = jnp.concatenate([x_start[None], x_next])
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
    k: jax.Array
    gaps: jax.Array
    feasible: jax.Array


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
    lower: Float[ArrayLike, "*T n_u"] | None = None,
    upper: Float[ArrayLike, "*T n_u"] | None = None,
    regularisation: str = "state",
    xs0: Float[ArrayLike, "T+1 n_x"] | None = None,
) -> DDPSolution:
    """Solve ``problem`` by DDP (``method="ddp"``, exact second derivatives of the step) or Gauss–Newton iLQR
    (``"ilqr"``), from the controls ``us0`` (default zero) and the states ``xs0`` (default: the rollout of ``us0``).
    Jit-able and vmap-able (module docstring).

    Args:
        max_iters: the largest number of iterations (each: one evaluation of the derivatives, the backward passes
            its regularisation needs, one line search).
        th_stop: the stopping test on ``Σ_k ‖Q_u,k‖²``.
        mu_init, mu_min, mu_max: the regularisation μ: its start, the floor it falls to after full steps, and the
            ceiling at which the solve stops unconverged.
        lower, upper: bounds on the controls (scalars, per control (n_u,) or per knot (T, n_u); None: unbounded).
            With bounds the backward pass solves a box-constrained QP per knot for the feedforward step and keeps
            feedback only in the controls it leaves free (Tassa, Mansard & Todorov, ICRA 2014; Crocoddyl's
            ``SolverBoxDDP``), the forward pass clamps, and the stopping test ignores the components of Q_u held at
            a bound. ``us0`` is clamped into them.
        xs0: initial states (T + 1, n_x) that need not be a rollout (a guess such as x0 at every knot, or an
            interpolation to a goal): the solve is then feasibility-driven (FDDP, Mastalli et al., ICRA 2020): the
            defects ``f(x_k, u_k) − x_{k+1}`` enter the backward pass and the expected decrease, each step closes the
            fraction α of them, and a step may raise the cost while they remain; after the first full step the
            trajectory is a rollout and the solve is plain DDP. It converges only once feasible.
        regularisation: ``"state"`` (default): μ is added to the Hessian of the value function, ``V'_xx + μI``
            (Tassa et al. 2012, eq. (10)), a proximal term ``μ/2 ‖x_k − x̄_k‖²`` on the states that damps each
            control by how much it moves the state; ``"control"``: μI is also added to Q_uu (Crocoddyl's ``ureg``
            and ``xreg``). On the arm-reaching benchmark, state regularisation needs fewer iterations and ends
            lower: controls that barely move the state (early knots, small ``dt²``) are not frozen by a μ sized
            for the terminal knots.
    """
    if method not in ("ddp", "ilqr"):
        raise ValueError(f"solve_ddp: method must be 'ddp' or 'ilqr', got {method!r}")
    if regularisation not in REGULARISATIONS:
        raise ValueError(f"solve_ddp: regularisation must be one of {REGULARISATIONS}, got {regularisation!r}")
    if not isinstance(problem, DiscreteProblem):
        raise TypeError(f"solve_ddp: problem must be a DiscreteProblem, got {type(problem).__name__}")
    shape = (problem.horizon, problem.n_controls)
    us = jnp.zeros(shape) if us0 is None else jnp.asarray(us0, dtype=float)
    if us.shape != shape:
        raise ValueError(f"solve_ddp: us0 must have shape {shape}, got {us.shape}")
    boxed = lower is not None or upper is not None
    bounds = []
    for name, value, fill in (("lower", lower, -jnp.inf), ("upper", upper, jnp.inf)):
        value = jnp.asarray(fill if value is None else value, dtype=float)
        try:
            bounds.append(jnp.broadcast_to(value, shape))
        except ValueError:
            raise ValueError(
                f"solve_ddp: {name} must be a scalar, one bound per control ({problem.n_controls},) or per knot "
                f"{shape}, got shape {value.shape}"
            ) from None
    lower, upper = bounds
    if not isinstance(lower, jax.core.Tracer) and not isinstance(upper, jax.core.Tracer):
        if np.any(np.asarray(lower) > np.asarray(upper)):
            raise ValueError("solve_ddp: lower > upper for some controls")
    us = jnp.clip(us, lower, upper)
    second = _second_order(problem, method)
    n_x = problem.x0.shape[0]
    if xs0 is None:
        xs, gaps, feasible = problem.rollout(us), jnp.zeros((problem.horizon + 1, n_x)), jnp.asarray(True)
    else:
        xs = jnp.asarray(xs0, dtype=float)
        if xs.shape != (problem.horizon + 1, n_x):
            raise ValueError(f"solve_ddp: xs0 must have shape {(problem.horizon + 1, n_x)}, got {xs.shape}")
        gaps = jnp.concatenate([(problem.x0 - xs[0])[None], jax.vmap(problem.step)(xs[:-1], us) - xs[1:]])
        feasible = jnp.asarray(False)
    cost = problem.cost(xs, us)
    history = jnp.full((max_iters + 1, 4), jnp.nan).at[0, 0].set(cost).at[0, 2].set(mu_init)  # J, α, μ, stop
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
        jnp.zeros(shape),
        gaps,
        feasible,
    )

    def iteration(s: _State) -> _State:
        derivs, phi_x, phi_xx = _derivatives(problem, s.xs, s.us, s.gaps, second)

        # the backward pass, with μ raised (×10) until every Q_uu + μI is positive definite (the derivatives kept)
        def backward(mu):
            box = (lower - s.us, upper - s.us, s.k) if boxed else None
            return _backward(derivs, phi_x, phi_xx, s.xs, s.us, s.gaps, mu, second, regularisation, box)

        def not_definite(c):
            mu, out = c
            return ~out[5] & (mu <= mu_max)

        def raise_mu(c):
            mu = c[0] * 10.0
            return mu, backward(mu)

        init = (s.mu, backward(s.mu))
        mu, (k, K, d1, d2, stop, ok, Vx, Vxx) = jax.lax.while_loop(not_definite, raise_mu, init)
        converged = ok & s.feasible & (stop < th_stop)
        # the model's decrease for a step α (Mastalli et al. 2020, eqs. (15)–(16); Crocoddyl's SolverFDDP):
        # α (g + dv) + ½ α² (q − 2 dv) with dv = Σ f̄_t·V_xx,t (x_t − x̄_t) from the trial's states; no gaps: the
        # usual −(α Σ k·Q_u + ½ α² Σ k·Q_uu k)
        Vx_gap = Vx + jnp.einsum("tij,tj->ti", Vxx, s.gaps)  # the gradient where the gap lands (Crocoddyl's Vx_)
        g = -d1 - jnp.sum(Vx_gap * s.gaps)
        q = -d2 + jnp.einsum("ti,tij,tj->", s.gaps, Vxx, s.gaps)

        def cond(c):  # no line search once converged (Crocoddyl stops before trying a step)
            i, accepted, _ = c
            return (i < _ALPHAS.size) & ~accepted & ~converged

        def body(c):
            i, _, _ = c
            alpha = _ALPHAS[i]
            new_xs, new_us, new_cost = _forward(problem, s.xs, s.us, k, K, alpha, lower, upper, s.gaps)
            dv = jnp.einsum("ti,tij,tj->", s.gaps, Vxx, new_xs - s.xs)
            expected = alpha * (g + dv) + 0.5 * alpha * alpha * (q - 2.0 * dv)
            decrease = s.cost - new_cost
            # a descent step must achieve 0.1 of the model's decrease; while gaps remain, a step may raise the
            # cost by up to twice the model's (negative) decrease to close them (Crocoddyl's th_acceptnegstep)
            accepted = jnp.isfinite(new_cost) & jnp.where(
                expected >= 0, decrease >= 0.1 * expected, ~s.feasible & (decrease > 2.0 * expected)
            )
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
        feasible = s.feasible | (take & (alpha == 1.0))
        gaps = jnp.where(feasible, 0.0, jnp.where(take, 1.0 - alpha, 1.0) * s.gaps)  # the step closed α of them
        return _State(
            xs_,
            us_,
            cost_,
            mu,
            jnp.where(ok, stop, s.stop),
            it,
            done,
            converged,
            s.history.at[it].set(jnp.stack([cost_, jnp.where(take, alpha, 0.0), mu, stop])),
            jnp.where(ok, K, s.K),
            jnp.where(ok, k, s.k),
            gaps,
            feasible,
        )

    s = jax.lax.while_loop(lambda s: ~s.done, iteration, state)
    status = jnp.where(s.converged, 0, jnp.where(s.mu > mu_max, 2, 1))
    defect = jnp.max(jnp.abs(s.gaps))
    return DDPSolution(s.xs, s.us, s.cost, *s.history.T, s.it, s.converged, status, s.stop, s.mu, s.K, defect)
