"""A trajectory optimisation problem on a :class:`~jaxse3.sim.System`: costs, horizon, controls, bounds.

Minimise over the knot values ``c`` of a control parameterisation (:class:`~jaxse3.optim.controls.Controls`)

    J(c) = ∫₀ᵀ ℓ(t, q, q̇, u) dt + φ(q(T), q̇(T)),      lower ≤ c ≤ upper  (per input),

where (q, q̇) is the simulated motion from (q0, q̇0) under u = u_c(t) (:func:`jaxse3.sim.simulate`), the running cost
ℓ and terminal cost φ are plain JAX functions returning scalars, and the integral is the trapezoidal rule on the
``n_save`` equally spaced samples of the simulation. Every kind of control is a convex combination of its knots, so
bounds on the knots bound u(t) at every t.

Constraints beyond the bounds: ``terminal_constraint(q(T), q̇(T)) = 0`` (a vector, e.g. the tip exactly at a target)
and ``path_constraint(t, q, q̇, u) ≤ 0`` (a vector, enforced at the ``n_save`` samples, e.g. a floor or a speed
limit); :func:`~jaxse3.optim.solve_shooting` handles them by an augmented Lagrangian.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxse3.optim.controls import KINDS, MIN_KNOTS, Controls
from jaxse3.sim import FIXED_STEP, System, Trajectory, simulate

__all__ = ["Problem"]


def _zero_running(t, q, qd, u):
    return jnp.zeros((), q.dtype)


def _zero_terminal(q, qd):
    return jnp.zeros((), q.dtype)


def _no_terminal_constraint(q, qd):
    return jnp.zeros((0,), q.dtype)


def _no_path_constraint(t, q, qd, u):
    return jnp.zeros((0,), q.dtype)


class Problem(eqx.Module):
    """A trajectory optimisation problem (module docstring).

    Args:
        system: the model (a rod, a rigid tree, …).
        t_final: the horizon T (s).
        running: ℓ(t, q, q̇, u) -> scalar, integrated over [0, T]; ``None``: 0.
        terminal: φ(q(T), q̇(T)) -> scalar; ``None``: 0.
        n_knots: knots per input of the control parameterisation.
        kind: the parameterisation, one of :data:`jaxse3.optim.controls.KINDS`.
        lower, upper: bounds on the controls, scalars or (n_inputs,) (±inf: none); e.g. ``lower=0`` for cables.
        q0, qd0: the initial state (default: rest at q = 0).
        n_save: samples of the motion for the running cost (the trapezoidal rule) and the result.
        simulation: keyword arguments of :func:`jaxse3.sim.simulate` (``solver``, ``rtol``, ``dt``, ``adjoint``, …;
            without ``adjoint``, :func:`~jaxse3.optim.solve_shooting` chooses the gradient's mode by the problem's
            size);
            for a fixed-step solver (``"newmark"``, ``"generalized-alpha"``) the horizon must be a whole number of
            steps ``dt``.
        terminal_constraint: ``(q(T), q̇(T)) -> (m,)``, required to vanish; ``None``: none.
        path_constraint: ``(t, q, q̇, u) -> (p,)``, required to be ≤ 0 at every sample; ``None``: none.
    """

    system: System
    q0: Float[Array, " n_dof"]
    qd0: Float[Array, " n_dof"]
    lower: Float[Array, " n_inputs"]
    upper: Float[Array, " n_inputs"]
    t_final: float = eqx.field(static=True)
    running: Callable = eqx.field(static=True)
    terminal: Callable = eqx.field(static=True)
    n_knots: int = eqx.field(static=True)
    kind: str = eqx.field(static=True)
    n_save: int = eqx.field(static=True)
    simulation: tuple[tuple[str, Any], ...] = eqx.field(static=True)
    terminal_constraint: Callable = eqx.field(static=True)
    path_constraint: Callable = eqx.field(static=True)

    def __init__(
        self,
        system: System,
        t_final: float,
        *,
        running: Callable | None = None,
        terminal: Callable | None = None,
        n_knots: int = 10,
        kind: str = "linear",
        lower: Float[ArrayLike, " n_inputs"] | float = -np.inf,
        upper: Float[ArrayLike, " n_inputs"] | float = np.inf,
        q0: Float[ArrayLike, " n_dof"] | None = None,
        qd0: Float[ArrayLike, " n_dof"] | None = None,
        n_save: int = 101,
        simulation: dict[str, Any] | None = None,
        terminal_constraint: Callable | None = None,
        path_constraint: Callable | None = None,
    ):
        if not isinstance(system, System):
            raise TypeError(f"Problem: system must be a jaxse3.sim.System, got {type(system).__name__}")
        if not (np.ndim(t_final) == 0 and np.isfinite(t_final) and t_final > 0):
            raise ValueError(f"Problem: t_final must be positive and finite, got {t_final}")
        if kind not in KINDS:
            raise ValueError(f"Problem: kind must be one of {KINDS}, got {kind!r}")
        if not (isinstance(n_knots, int) and n_knots >= MIN_KNOTS[kind]):
            raise ValueError(f"Problem: n_knots = {n_knots!r} is too few for kind {kind!r}")
        if not (isinstance(n_save, int) and n_save >= 2):
            raise ValueError(f"Problem: n_save must be an int >= 2, got {n_save!r}")
        n, m = system.n_dof, system.n_inputs
        self.system = system
        self.q0, self.qd0 = (jnp.zeros(n) if x is None else jnp.asarray(x, dtype=float) for x in (q0, qd0))
        for name, x in (("q0", self.q0), ("qd0", self.qd0)):
            if x.shape != (n,):
                raise ValueError(f"Problem: {name} must have shape ({n},), got {x.shape}")
        self.lower, self.upper = (jnp.broadcast_to(jnp.asarray(b, dtype=float), (m,)) for b in (lower, upper))
        bad = np.flatnonzero(np.asarray(self.lower) > np.asarray(self.upper))
        if bad.size:
            raise ValueError(
                f"Problem: lower > upper for inputs {bad.tolist()} "
                f"(lower {np.asarray(self.lower)[bad]}, upper {np.asarray(self.upper)[bad]})"
            )
        simulation = dict(simulation or {})
        for key in ("t_final", "q0", "qd0", "n_save", "inputs"):
            if key in simulation:
                raise ValueError(f"Problem: simulation must not set {key!r}; it is an argument of Problem")
        if simulation.get("solver") in FIXED_STEP:
            steps = t_final / simulation.get("dt", 2e-3)
            if abs(steps - round(steps)) > 1e-9 * max(1.0, steps):
                raise ValueError(
                    f"Problem: the horizon t_final = {t_final} is not a whole number of Newmark steps "
                    f"dt = {simulation.get('dt', 2e-3)} ({steps:.6g} steps)"
                )
        self.t_final, self.kind, self.n_knots, self.n_save = float(t_final), kind, n_knots, n_save
        self.running = _zero_running if running is None else running
        self.terminal = _zero_terminal if terminal is None else terminal
        self.simulation = tuple(sorted(simulation.items()))
        self.terminal_constraint = _no_terminal_constraint if terminal_constraint is None else terminal_constraint
        self.path_constraint = _no_path_constraint if path_constraint is None else path_constraint
        z, u = jnp.zeros(n), jnp.zeros(m)
        for name, fn, args in (("running", self.running, (0.0, z, z, u)), ("terminal", self.terminal, (z, z))):
            shape = jax.eval_shape(fn, *args).shape
            if shape != ():
                raise ValueError(f"Problem: the {name} cost must return a scalar, got shape {shape}")
        for name, fn, args in (
            ("terminal_constraint", self.terminal_constraint, (z, z)),
            ("path_constraint", self.path_constraint, (0.0, z, z, u)),
        ):
            shape = jax.eval_shape(fn, *args).shape
            if len(shape) != 1:
                raise ValueError(f"Problem: {name} must return a vector (m,), got shape {shape}")

    @property
    def control_shape(self) -> tuple[int, int]:
        """The shape (n_knots, n_inputs) of the decision variables."""
        return (self.n_knots, self.system.n_inputs)

    def controls(self, values: Float[ArrayLike, "n_knots n_inputs"]) -> Controls:
        """The inputs u(t) of the knot ``values``."""
        values = jnp.asarray(values, dtype=float)
        if values.shape != self.control_shape:
            raise ValueError(f"Problem: controls must have shape {self.control_shape}, got {values.shape}")
        return Controls(values, self.t_final, self.kind)

    def rollout(self, values: Float[ArrayLike, "n_knots n_inputs"], **overrides: Any) -> Trajectory:
        """The simulated motion under the knot ``values`` (``overrides``: keyword arguments of ``simulate``)."""
        options = {**dict(self.simulation), **overrides}
        return simulate(
            self.system,
            self.controls(values),
            t_final=self.t_final,
            q0=self.q0,
            qd0=self.qd0,
            n_save=self.n_save,
            **options,
        )

    def cost_of(self, traj: Trajectory) -> Float[Array, ""]:
        """J of a motion: the trapezoidal rule of ℓ on its samples plus φ at its end."""
        ell = jax.vmap(self.running)(traj.t, traj.q, traj.qd, traj.u)
        dt = jnp.diff(traj.t)
        return jnp.sum(0.5 * dt * (ell[1:] + ell[:-1])) + self.terminal(traj.q[-1], traj.qd[-1])

    @property
    def constrained(self) -> bool:
        """Whether the problem has constraints beyond the bounds."""
        return (
            self.terminal_constraint is not _no_terminal_constraint or self.path_constraint is not _no_path_constraint
        )

    def constraints_of(self, traj: Trajectory) -> tuple[Float[Array, " m"], Float[Array, "n_save p"]]:
        """The terminal equality residual (m,) and the path inequality values (n_save, p) of a motion."""
        path = jax.vmap(self.path_constraint)(traj.t, traj.q, traj.qd, traj.u)
        return self.terminal_constraint(traj.q[-1], traj.qd[-1]), path

    def cost(self, values: Float[ArrayLike, "n_knots n_inputs"]) -> Float[Array, ""]:
        """J(c) (module docstring); differentiable (``simulate``'s ``adjoint``)."""
        return self.cost_of(self.rollout(values))

    def project(self, values: Float[Array, "n_knots n_inputs"]) -> Float[Array, "n_knots n_inputs"]:
        """The knot values clipped to the bounds."""
        return jnp.clip(values, self.lower, self.upper)
