"""Multiple shooting: a :class:`~jaxse3.optim.Problem` transcribed to S segments of equal length.

The horizon [0, T] is cut at ``t_j = j T / S``; segment j is simulated from its own start state ``s_j = (q_j, q̇_j)``
(``s_0`` the problem's initial state; ``s_1 … s_{S−1}`` decision variables next to the control knots) under the same
controls, all segments at once (``vmap``). Continuity is imposed as equality constraints, the defects

    d_j = x_j(t_{j+1}) − s_{j+1} = 0,      j = 0 … S − 2,

next to the problem's own terminal constraint, so :func:`~jaxse3.optim.solve_shooting` handles them by its augmented
Lagrangian (Bock & Plitt, IFAC 1984, for the transcription). Each simulation spans T/S: gradients of unstable or
long motions stay bounded, and the segments run in parallel. The cost is the problem's: the trapezoidal rule of ℓ on
every segment's samples (absolute times) plus φ at the last segment's end; at a feasible point (all defects zero)
cost and motion are those of single shooting.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxse3.optim.controls import Controls
from jaxse3.optim.problem import Problem
from jaxse3.sim import FIXED_STEP, Trajectory, simulate

__all__ = ["MultipleShooting"]


class _Shifted(eqx.Module):
    """The controls seen by a segment starting at ``offset``: ``u(t + offset)``."""

    controls: Controls
    offset: Float[Array, ""]

    def __call__(self, t):
        return self.controls(t + self.offset)


class MultipleShooting(eqx.Module):
    """``problem`` on ``segments`` segments (module docstring); the decision variables are one flat vector z of the
    control knots (``problem.control_shape``, raveled) followed by the start states of segments 1 … S − 1
    (``(S − 1, 2 n_dof)``, raveled). It offers what :func:`~jaxse3.optim.solve_shooting` asks of a problem:
    ``rollout``, ``cost_of``, ``constraints_of``, ``project``, ``lower``/``upper`` and ``constrained``."""

    problem: Problem
    lower: Float[Array, " n_z"]
    upper: Float[Array, " n_z"]
    segments: int = eqx.field(static=True)

    def __init__(self, problem: Problem, segments: int):
        if not (isinstance(segments, int) and segments >= 2):
            raise ValueError(f"MultipleShooting: segments must be an int >= 2, got {segments!r}")
        if (problem.n_save - 1) % segments:
            raise ValueError(
                f"MultipleShooting: the problem's n_save - 1 = {problem.n_save - 1} samples must divide into "
                f"{segments} segments"
            )
        options = dict(problem.simulation)
        if options.get("solver") in FIXED_STEP:
            steps = problem.t_final / segments / options.get("dt", 2e-3)
            if abs(steps - round(steps)) > 1e-9 * max(1.0, steps):
                raise ValueError(
                    f"MultipleShooting: a segment (t_final / {segments} = {problem.t_final / segments:g} s) must be a "
                    f"whole number of Newmark steps dt = {options.get('dt', 2e-3)}"
                )
        self.problem, self.segments = problem, segments
        n_s = (segments - 1) * 2 * problem.system.n_dof

        def bound(b, fill):  # the knots' bounds, then none on the states
            return jnp.concatenate([jnp.broadcast_to(b, problem.control_shape).ravel(), jnp.full(n_s, fill)])

        self.lower, self.upper = bound(problem.lower, -jnp.inf), bound(problem.upper, jnp.inf)

    @property
    def control_shape(self) -> tuple[int]:
        """The shape (n_z,) of the decision vector."""
        return self.lower.shape

    @property
    def constrained(self) -> bool:
        """Always: the defects are constraints."""
        return True

    def split(self, z: Float[Array, " n_z"]) -> tuple[Float[Array, "n_knots n_inputs"], Float[Array, "S-1 2n"]]:
        """The knots and the start states of segments 1 … S − 1."""
        n_c = int(np.prod(self.problem.control_shape))
        return z[:n_c].reshape(self.problem.control_shape), z[n_c:].reshape(self.segments - 1, -1)

    def join(
        self, knots: Float[ArrayLike, "n_knots n_inputs"], starts: Float[ArrayLike, "S-1 2n"]
    ) -> Float[Array, " n_z"]:
        """The decision vector of knots and start states."""
        return jnp.concatenate([jnp.ravel(jnp.asarray(knots, float)), jnp.ravel(jnp.asarray(starts, float))])

    def initial(self, knots: Float[ArrayLike, "n_knots n_inputs"]) -> Float[Array, " n_z"]:
        """The decision vector of ``knots`` with the start states of their single-shooting motion (no defects)."""
        problem = self.problem
        traj = problem.rollout(knots)
        at = np.arange(1, self.segments) * ((problem.n_save - 1) // self.segments)
        return self.join(knots, jnp.concatenate([traj.q[at], traj.qd[at]], axis=1))

    def rollout(self, z: Float[Array, " n_z"], **overrides: Any) -> Trajectory:
        """The segments' motions, stacked (leading axis S; times absolute; ``overrides``: keyword arguments of
        ``simulate``)."""
        problem = self.problem
        knots, starts = self.split(z)
        n = problem.system.n_dof
        x0 = jnp.concatenate([jnp.concatenate([problem.q0, problem.qd0])[None], starts])
        span = problem.t_final / self.segments
        offsets = span * jnp.arange(self.segments)
        controls = problem.controls(knots)

        def segment(x, offset):
            traj = simulate(
                problem.system,
                _Shifted(controls, offset),
                t_final=span,
                q0=x[:n],
                qd0=x[n:],
                n_save=(problem.n_save - 1) // self.segments + 1,
                **{**dict(problem.simulation), **overrides},
            )
            return eqx.tree_at(lambda tr: tr.t, traj, traj.t + offset)

        return jax.vmap(segment)(x0, offsets)

    def cost_of(self, traj: Trajectory) -> Float[Array, ""]:
        """J of stacked segments: the trapezoidal rule of ℓ on each, φ at the last one's end."""
        problem = self.problem
        ell = jax.vmap(jax.vmap(problem.running))(traj.t, traj.q, traj.qd, traj.u)
        dt = jnp.diff(traj.t, axis=1)
        return jnp.sum(0.5 * dt * (ell[:, 1:] + ell[:, :-1])) + problem.terminal(traj.q[-1, -1], traj.qd[-1, -1])

    def defects(self, traj: Trajectory) -> Float[Array, "S-1 2n"]:
        """``x_j(t_{j+1}) − s_{j+1}`` for j = 0 … S − 2."""
        ends = jnp.concatenate([traj.q[:-1, -1], traj.qd[:-1, -1]], axis=1)
        starts = jnp.concatenate([traj.q[1:, 0], traj.qd[1:, 0]], axis=1)
        return ends - starts

    def constraints_of(self, traj: Trajectory) -> tuple[Float[Array, " m"], Float[Array, "n p"]]:
        """The problem's terminal equality residual followed by the defects; its path values at every sample."""
        problem = self.problem
        h = jnp.concatenate([problem.terminal_constraint(traj.q[-1, -1], traj.qd[-1, -1]), self.defects(traj).ravel()])
        path = jax.vmap(jax.vmap(problem.path_constraint))(traj.t, traj.q, traj.qd, traj.u)
        return h, path.reshape(path.shape[0] * path.shape[1], path.shape[2])

    def project(self, z: Float[Array, " n_z"]) -> Float[Array, " n_z"]:
        """The knots clipped to the problem's bounds (the states are free)."""
        return jnp.clip(z, self.lower, self.upper)

    def stitch(self, traj: Trajectory) -> Trajectory:
        """One motion of ``problem.n_save`` samples: each segment without its end (the next one's start), then the
        last segment's end."""

        def joined(a):
            return jnp.concatenate([a[:, :-1].reshape(-1, *a.shape[2:]), a[-1, -1:]])

        return Trajectory(
            joined(traj.t),
            joined(traj.q),
            joined(traj.qd),
            joined(traj.u),
            joined(traj.points),
            joined(traj.tip),
            jnp.sum(traj.num_steps),
            jnp.max(traj.result),
        )
