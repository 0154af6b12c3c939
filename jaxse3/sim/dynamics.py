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
- ``"tsit5"`` / ``"dopri5"``: adaptive explicit solvers, for comparison.

Inputs u(t) are a callable, a constant or a :class:`~jaxse3.sim.system.SampledInput`. ``progress=True`` shows a tqdm
progress bar (diffrax ``TqdmProgressMeter``). The result is a :class:`~jaxse3.sim.trajectory.Trajectory`.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import optimistix as optx

from jaxse3.integrate.newmark import Newmark, SecondOrderResidualTerm
from jaxse3.sim.system import System, as_input, finite_difference
from jaxse3.sim.trajectory import Trajectory

__all__ = ["simulate", "SOLVERS", "StepChord"]

SOLVERS = ("kvaerno5", "kvaerno3", "newmark", "tsit5", "dopri5")
_ADAPTIVE = {"kvaerno5": diffrax.Kvaerno5, "kvaerno3": diffrax.Kvaerno3, "tsit5": diffrax.Tsit5,
             "dopri5": diffrax.Dopri5}  # fmt: skip


class _ChordState(eqx.Module):
    operator: lx.AbstractLinearOperator  # ∂(relation)/∂f = I − γ h ∂ẋ/∂x at the step's linearisation point
    linear_state: Any  # its LU factors
    diffsize: jax.Array  # scaled size of the last stage-increment update
    diffsize_prev: jax.Array
    result: optx.RESULTS
    step: jax.Array


class StepChord(optx.AbstractRootFinder):
    """Chord iteration for the stages of diffrax's ESDIRK solvers (Kvaerno3/5), one Jacobian per step.

    diffrax linearises the stage relation ``f − ẋ(t_i, y_i + γ h f) = 0`` once per step (at the second stage) through
    ``init`` and passes that state to every stage (``options["init_state"]``, as for diffrax's ``VeryChord``). The
    iteration stops by the test of Hairer & Wanner (*Solving ODEs II*, §IV.8) on the **stage increment** γ h Δf scaled
    by the step controller's tolerances (atol + rtol |y_i|): converged when ``‖Δz‖ ρ/(1 − ρ) < kappa`` (ρ the observed
    contraction rate) or ``‖Δz‖ < tiny`` (an update far below the tolerance, where ρ is round-off); diverged when ρ > 2.
    A failure makes diffrax reject the step and shrink it. Measuring the update in f-space against atol instead
    (optimistix ``Chord``/``Newton``) is ~1/(γh) times stricter, and the plain rate test then fails on round-off near
    rest (diffrax ``VeryChord``: 50× more steps on the CDM). This relies on diffrax's stage-relation arguments
    ``(stage, γ, vf, prod, t_i, y_partial, args, h)``, which diffrax passes for custom root finders.

    The state built for the structure of diffrax's stage loop (γ = 0: identity Jacobian) costs no Jacobian (under a
    ``vmap`` that batches γ the ``cond`` evaluates both branches, i.e. one extra Jacobian per step, as diffrax does).
    """

    rtol: float
    atol: float
    norm: Callable = optx.max_norm
    kappa: float = 0.1
    tiny: float = 1e-3
    linear_solver: lx.AbstractLinearSolver = lx.LU()

    def init(self, fn, y, args, options, f_struct, aux_struct, tags):
        del f_struct, aux_struct
        if "init_state" in options:
            return options["init_state"]
        diagonal = args[1]
        jac = jax.lax.cond(diagonal == 0, lambda: jax.jacfwd(lambda f: f)(y),
                           lambda: jax.jacfwd(lambda f: fn(f, args)[0])(y))  # fmt: skip
        operator = lx.PyTreeLinearOperator(jax.lax.stop_gradient(jac), jax.eval_shape(lambda: y), tags)
        inf = jnp.array(jnp.inf, jnp.result_type(*jax.tree.leaves(y)))
        return _ChordState(operator, jax.lax.stop_gradient(self.linear_solver.init(operator, {})), inf, inf,
                           optx.RESULTS.successful, jnp.array(0))  # fmt: skip

    def step(self, fn, y, args, options, state, tags):
        del options, tags
        fx, aux = fn(y, args)
        sol = lx.linear_solve(state.operator, fx, self.linear_solver, state=state.linear_state, throw=False)
        new_y = jax.tree.map(lambda a, b: a - b, y, sol.value)
        _, diagonal, _, prod, _, y_partial, _, control = args
        dz = prod(sol.value, control)
        yi = jax.tree.map(lambda p, z: p + diagonal * z, y_partial, prod(new_y, control))
        size = self.norm(jax.tree.map(lambda d, v: diagonal * d / (self.atol + self.rtol * jnp.abs(v)), dz, yi))
        new_state = _ChordState(state.operator, state.linear_state, jnp.asarray(size, state.diffsize.dtype),
                                state.diffsize, optx.RESULTS.promote(sol.result), state.step + 1)  # fmt: skip
        return new_y, new_state, aux

    def terminate(self, fn, y, args, options, state, tags):
        del fn, y, args, options, tags
        rate = state.diffsize / state.diffsize_prev
        factor = state.diffsize * rate / (1 - rate)
        converged = ((state.step >= 1) & (state.diffsize < self.tiny)) | (
            (state.step >= 2) & (factor > 0) & (factor < self.kappa))  # fmt: skip
        diverged = (state.step >= 2) & ~converged & (~jnp.isfinite(rate) | (rate > 2))
        failed = state.result != optx.RESULTS.successful
        result = optx.RESULTS.where(diverged, optx.RESULTS.nonlinear_divergence, optx.RESULTS.successful)
        return converged | diverged | failed, optx.RESULTS.where(failed, state.result, result)

    def postprocess(self, fn, y, aux, args, options, state, tags, result):
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


def _stacked(fn: Callable, axes) -> Callable:
    """``fn(t, q, q̇, q̈, args)`` over a stack of members: q, q̇, q̈ (B, n), and the arrays of ``args = (system, inputs,
    residual)`` batched along axis 0 where ``axes = (system_axes, inputs_axes)`` say so."""

    def stacked(t, q, qd, qdd, args):
        system, inputs, residual = args
        one = lambda system, inputs, q, qd, qdd: fn(t, q, qd, qdd, (system, inputs, residual))  # noqa: E731
        return eqx.filter_vmap(one, in_axes=(*axes, 0, 0, 0))(system, inputs, q, qd, qdd)

    return stacked


def _progress_meter(progress: bool) -> diffrax.AbstractProgressMeter:
    if not progress:
        return diffrax.NoProgressMeter()
    try:
        import tqdm  # noqa: F401
    except ImportError:  # pragma: no cover - tqdm is a dependency, but stay usable without it
        return diffrax.TextProgressMeter()
    return diffrax.TqdmProgressMeter()


def simulate(
    system: System,
    inputs=None,
    *,
    t_final: float,
    q0: jax.Array | None = None,
    qd0: jax.Array | None = None,
    solver: str = "kvaerno5",
    jacobian: str = "analytic",
    rtol: float = 1e-3,
    atol: float = 1e-6,
    dt0: float | None = None,
    dt: float = 2e-3,
    n_save: int = 201,
    max_steps: int = 100_000,
    progress: bool = False,
    throw: bool = True,
) -> Trajectory:
    """Simulate ``system`` from ``(q0, q̇0)`` (default: rest at q = 0) over ``[0, t_final]``.

    Args:
        system: the model.
        inputs: u(t): ``None`` (zero), an array (constant), a callable of t or a ``SampledInput``.
        t_final: end time (s).
        solver: one of :data:`SOLVERS`.
        jacobian: ``"analytic"`` (the system's derivative rules) or ``"finite-difference"`` (forward differences,
            ε = 1e−6, seed 003 eq. (38)); used by the implicit solvers only.
        rtol, atol: tolerances of the adaptive solvers (paper: MATLAB defaults 1e−3, 1e−6).
        dt0: initial step of the adaptive solvers (default: chosen by diffrax).
        dt: fixed step of Newmark-β (paper: 2 ms for the CDM).
        n_save: number of equally spaced output times, 0 and ``t_final`` included.
        max_steps: step limit; reaching it is an error (``throw=True``) or a ``num_steps == max_steps`` result.
        progress: show a progress bar.
        throw: raise if the solver fails (diffrax result codes); otherwise return what was computed.

    Returns:
        A :class:`Trajectory` at ``n_save`` times.
    """
    return _checked_simulate("simulate", system, inputs, None, t_final=t_final, q0=q0, qd0=qd0, solver=solver,
                             jacobian=jacobian, rtol=rtol, atol=atol, dt0=dt0, dt=dt, n_save=n_save,
                             max_steps=max_steps, progress=progress, throw=throw)  # fmt: skip


#: the keyword arguments of :func:`simulate` with their defaults
DEFAULTS = {k: p.default for k, p in inspect.signature(simulate).parameters.items()
            if p.kind is p.KEYWORD_ONLY and p.default is not p.empty}  # fmt: skip


def batch_axes(x, batched: bool):
    """vmap in_axes for a pytree: 0 on its array leaves if batched, else None."""
    return jax.tree.map(lambda _: 0 if batched else None, eqx.filter(x, eqx.is_array))


def simulate_stack(system: System, inputs, batched: tuple[bool, bool], **kwargs) -> Trajectory:
    """Newmark-β over a stack of B systems on one time grid (``q0``, ``qd0`` (B, n)), the arrays of ``system`` /
    ``inputs`` batched along axis 0 where ``batched = (batch_system, batch_inputs)`` say so; the implementation of
    :func:`~jaxse3.sim.batch.simulate_batch` for Newmark. Keyword arguments as :func:`simulate`."""
    kw = {**DEFAULTS, **kwargs}
    if kw["solver"] != "newmark":
        raise ValueError(f"simulate_stack: only for solver='newmark', got {kw['solver']!r}")
    return _checked_simulate("simulate_batch", system, inputs, batched, **kw)


def _checked_simulate(who, system, inputs, stack, *, t_final, q0, qd0, solver, jacobian, rtol, atol, dt0, dt, n_save,
                      max_steps, progress, throw) -> Trajectory:  # fmt: skip
    """:func:`simulate` after checking the arguments; for a Newmark stack, ``stack = (batch_system, batch_inputs)``
    and ``q0``, ``qd0`` are (B, n)."""
    if solver not in SOLVERS:
        raise ValueError(f"{who}: solver must be one of {SOLVERS}, got {solver!r}")
    if jacobian not in ("analytic", "finite-difference"):
        raise ValueError(f"{who}: jacobian must be 'analytic' or 'finite-difference', got {jacobian!r}")
    if not isinstance(t_final, jax.core.Tracer) and not t_final > 0:  # traced under simulate_batch: checked there
        raise ValueError(f"{who}: t_final must be positive, got {t_final}")
    if n_save < 2:
        raise ValueError(f"{who}: n_save must be >= 2, got {n_save}")
    n = system.n_dof
    shape = (n,) if stack is None else (jnp.shape(q0)[0], n)
    q0 = jnp.zeros(shape) if q0 is None else jnp.asarray(q0, dtype=float)
    qd0 = jnp.zeros(shape) if qd0 is None else jnp.asarray(qd0, dtype=float)
    for name, v in (("q0", q0), ("qd0", qd0)):
        if v.shape != shape:
            raise ValueError(f"{who}: {name} must have shape {shape}, got {v.shape}")
    if stack is not None and stack[1]:  # one input specification per member
        inputs = eqx.filter_vmap(lambda u: as_input(u, system.n_inputs))(inputs)
    else:
        inputs = as_input(inputs, system.n_inputs)
    axes = None if stack is None else (batch_axes(system, stack[0]), batch_axes(inputs, stack[1]))
    # numbers enter as arrays, so that one compilation serves every t_final, tolerance and step
    t_final, rtol, atol, dt = (jnp.asarray(v, dtype=float) for v in (t_final, rtol, atol, dt))
    dt0 = None if dt0 is None else jnp.asarray(dt0, dtype=float)
    return _simulate(system, inputs, axes, q0, qd0, t_final, solver, jacobian, rtol, atol, dt0, dt, n_save, max_steps,
                     progress, throw)  # fmt: skip


@eqx.filter_jit
def _simulate(system, inputs, axes, q0, qd0, t_final, solver, jacobian, rtol, atol, dt0, dt, n_save, max_steps,
              progress, throw) -> Trajectory:  # fmt: skip
    ts = jnp.linspace(0.0, t_final, n_save)
    meter = _progress_meter(progress)
    fd_jac = finite_difference if jacobian == "finite-difference" else (lambda f: f)
    if solver == "newmark":
        if axes is None:
            term = SecondOrderResidualTerm(_residual)
        else:
            term = SecondOrderResidualTerm(_stacked(_residual, axes), _stacked(_residual_jacobians, axes))
        method = Newmark(beta=0.25, gamma=0.5, iteration="modified")
        args, dt0, controller = (system, inputs, fd_jac(system.residual)), dt, diffrax.ConstantStepSize()
    else:
        method = _ADAPTIVE[solver]()
        if isinstance(method, diffrax.AbstractImplicitSolver):
            method = type(method)(root_finder=diffrax.with_stepsize_controller_tols(StepChord)())
        term = diffrax.ODETerm(_vector_field)
        args, controller = (system, inputs, fd_jac(system.forward_dynamics)), diffrax.PIDController(rtol=rtol, atol=atol)
    sol = diffrax.diffeqsolve(term, method, 0.0, t_final, dt0, (q0, qd0), args=args, saveat=diffrax.SaveAt(ts=ts),
                              stepsize_controller=controller, max_steps=max_steps, progress_meter=meter, throw=throw)
    (q, qd), num_steps = sol.ys, sol.stats["num_steps"]
    if axes is None:
        return _trajectory(system, inputs, ts, q, qd, num_steps)
    one = lambda system, inputs, q, qd: _trajectory(system, inputs, ts, q, qd, num_steps)  # noqa: E731
    return eqx.filter_vmap(one, in_axes=(*axes, 1, 1))(system, inputs, q, qd)  # stack axis 1 of (T, B, n)


def _trajectory(system: System, inputs: Callable, ts, q, qd, num_steps) -> Trajectory:
    points = jax.vmap(lambda q: system.points(system.params, q))(q)
    return Trajectory(t=ts, q=q, qd=qd, u=jax.vmap(inputs)(ts), points=points, tip=points[:, -1], num_steps=num_steps)


