"""Constrained multibody system in absolute coordinates: index-1 KKT accelerations as a Lie-group vector field.

Seed 004 §3–§4 (Müller & Terze 2013). Each body lives in SE(3) or SO(3)×R³ (its :attr:`RigidBody.space`); the motion
equations are the constrained Boltzmann–Hamel equations (eqs. (1a)–(1c)), reduced to index 1 (eq. (3)):

    [[M, Jᵀ], [J, 0]] [V̇; λ] = [Q; η],        q̇ = q V,

with ``M = diag(Θ_i, m_i I)``, ``Q`` the gyroscopic and gravity terms of each body (eqs. (40), (42), (54)), and ``J``,
``η`` the spherical-joint rows (eqs. (50), (53), (61), (64)). No constraint stabilisation is applied (the paper uses
none; digest 004 P9): the constraint drift is what the study measures.

State pytree (one entry per body, for the Munthe-Kaas solvers of :mod:`jaxse3.integrate.rkmk`):

- SE(3) body: ``(SE3Element(H), V)`` with ``H = [[R, r], [0, 1]]`` and the body twist ``V = (ω, v)``;
- SO(3)×R³ body: ``(SO3Element(R), r, V)`` with the hybrid velocity ``V = (ω, vˢ)``.

:meth:`MultibodySystem.vector_field` returns the left-trivialised derivative ``F = (V, V̇)`` of eq. (35) in the same
layout (``(V, V̇)``, resp. ``(ω, vˢ, V̇)``), so ``RKMK*(side="body")`` is the scheme (37) with ``dexp⁻¹`` at ``−Ψ``.

:meth:`MultibodySystem.poses` gives the bodies' homogeneous transforms ``(n, 4, 4)`` whatever their space, and
:meth:`MultibodySystem.state_from_poses` rebuilds the state from them and the velocities ``V``, exactly: the flat form
in which :func:`jaxse3.sim.simulate_multibody` saves a run (``Trajectory.q``, ``Trajectory.qd``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxse3.integrate.group_state import SE3Element, SO3Element
from jaxse3.lie import se3
from jaxse3.rigid.absolute.bodies import RigidBody, Space
from jaxse3.rigid.absolute.joints import SphericalJoint

State = tuple  # one (SE3Element, V) or (SO3Element, r, V) per body


class MultibodySystem(eqx.Module):
    """Bodies, spherical joints and gravity; the configuration space of each body is chosen in its :class:`RigidBody`.

    Attributes:
        bodies: the rigid bodies (a tuple; their order defines body indices).
        joints: the spherical joints (ground or body–body).
        gravity: ``(3,)`` gravitational acceleration in the spatial frame [m/s²].
    """

    bodies: tuple[RigidBody, ...]
    joints: tuple[SphericalJoint, ...]
    gravity: Float[Array, "3"]

    def __check_init__(self):
        n = len(self.bodies)
        if n == 0:
            raise ValueError("MultibodySystem: bodies must not be empty")
        if jnp.shape(self.gravity) != (3,):
            raise ValueError(f"MultibodySystem: gravity must have shape (3,), got {jnp.shape(self.gravity)}")
        for k, jt in enumerate(self.joints):
            for b in (jt.body_i, jt.body_j):
                if b is not None and not 0 <= b < n:
                    raise ValueError(f"MultibodySystem: joint {k} refers to body {b}, but there are {n} bodies")

    @property
    def spaces(self) -> tuple[str, ...]:
        return tuple(b.space for b in self.bodies)

    def with_spaces(self, spaces: Space | Sequence[Space]) -> "MultibodySystem":
        """The same system with another configuration space for every body (a string) or per body (a sequence)."""
        if isinstance(spaces, str):
            spaces = (spaces,) * len(self.bodies)
        if len(spaces) != len(self.bodies):
            raise ValueError(f"with_spaces: expected {len(self.bodies)} spaces, got {len(spaces)}")
        return MultibodySystem(tuple(b.with_space(s) for b, s in zip(self.bodies, spaces)), self.joints, self.gravity)

    # ---- state <-> (R, r, V) --------------------------------------------------------------------------------------

    def state(
        self, R: Float[Array, "n 3 3"], r: Float[Array, "n 3"], omega: Float[Array, "n 3"], rdot: Float[Array, "n 3"]
    ) -> State:
        """State pytree from rotations, COM positions, body angular velocities and spatial COM velocities."""
        n = len(self.bodies)
        for name, a, shape in (("R", R, (n, 3, 3)), ("r", r, (n, 3)), ("omega", omega, (n, 3)), ("rdot", rdot, (n, 3))):
            if jnp.shape(a) != shape:
                raise ValueError(f"MultibodySystem.state: {name} must have shape {shape}, got {jnp.shape(a)}")
        out = []
        for i, b in enumerate(self.bodies):
            V = b.velocity(R[i], omega[i], rdot[i])
            if b.space == "se3":
                out.append((SE3Element(se3.from_rotation_translation(R[i], r[i])), V))
            else:
                out.append((SO3Element(R[i]), r[i], V))
        return tuple(out)

    def unpack(self, y: State) -> tuple[Float[Array, "n 3 3"], Float[Array, "n 3"], Float[Array, "n 6"]]:
        """``(R, r, V)`` stacked over bodies from a state pytree (V in each body's own velocity convention)."""
        self.check_state(y)
        Rs, rs, Vs = [], [], []
        for b, yb in zip(self.bodies, y):
            if b.space == "se3":
                H, V = yb
                Rs.append(H.matrix[:3, :3])
                rs.append(H.matrix[:3, 3])
            else:
                Rm, r, V = yb
                Rs.append(Rm.matrix)
                rs.append(r)
            Vs.append(V)
        return jnp.stack(Rs), jnp.stack(rs), jnp.stack(Vs)

    def poses(self, y: State) -> Float[Array, "n 4 4"]:
        """The homogeneous transforms ``[[R, r], [0, 1]]`` of every body (COM frames): an SE(3) body's element as it is
        stored, an SO(3)×R³ body's ``(R, r)`` placed in one matrix; :meth:`state_from_poses` inverts it exactly."""
        self.check_state(y)
        out = []
        for b, yb in zip(self.bodies, y):
            if b.space == "se3":
                out.append(yb[0].matrix)
            else:
                Rm, r, _ = yb
                out.append(se3.from_rotation_translation(Rm.matrix, r))
        return jnp.stack(out)

    def state_from_poses(self, H: Float[Array, "n 4 4"], V: Float[Array, "n 6"]) -> State:
        """The state pytree from the body poses ``H`` (:meth:`poses`) and velocities ``V`` (each body's own
        convention, as in :meth:`unpack`): the inverse of ``(poses(y), unpack(y)[2])``, bit for bit. It rebuilds the
        group elements of a saved sample, e.g. ``state_from_poses(traj.q[i], traj.qd[i])`` of a
        :func:`jaxse3.sim.simulate_multibody` trajectory."""
        n = len(self.bodies)
        for name, a, shape in (("H", H, (n, 4, 4)), ("V", V, (n, 6))):
            if jnp.shape(a) != shape:
                raise ValueError(
                    f"MultibodySystem.state_from_poses: {name} must have shape {shape}, got {jnp.shape(a)}"
                )
        return tuple(
            (SE3Element(H[i]), V[i]) if b.space == "se3" else (SO3Element(H[i, :3, :3]), H[i, :3, 3], V[i])
            for i, b in enumerate(self.bodies)
        )

    def check_state(self, y: State) -> None:
        """Raise a clear error unless ``y`` has this system's state layout (static: node types and tuple lengths)."""
        if not isinstance(y, tuple) or len(y) != len(self.bodies):
            raise ValueError(f"MultibodySystem: the state must be a tuple of {len(self.bodies)} body states")
        for i, (b, yb) in enumerate(zip(self.bodies, y)):
            ok = isinstance(yb, tuple) and (
                (len(yb) == 2 and isinstance(yb[0], SE3Element))
                if b.space == "se3"
                else (len(yb) == 3 and isinstance(yb[0], SO3Element))
            )
            if not ok:
                want = "(SE3Element, V)" if b.space == "se3" else "(SO3Element, r, V)"
                raise ValueError(
                    f"MultibodySystem: body {i} is in {b.space}, so its state must be {want} "
                    "(build states with MultibodySystem.state)"
                )

    # ---- dynamics -------------------------------------------------------------------------------------------------

    def mass_matrix(self) -> Float[Array, "6n 6n"]:
        """Constant block-diagonal ``M = diag(Θ_1, m_1 I, …)``."""
        return jax.scipy.linalg.block_diag(*(b.mass_matrix() for b in self.bodies))

    def forces(self, R: Float[Array, "n 3 3"], V: Float[Array, "n 6"]) -> Float[Array, "6n"]:
        """Stacked ``Q`` (gyroscopic + gravity terms of every body)."""
        return jnp.concatenate([b.forces(R[i], V[i], self.gravity) for i, b in enumerate(self.bodies)])

    def constraint_jacobian(self, R: Float[Array, "n 3 3"]) -> Float[Array, "3k 6n"]:
        """Stacked velocity-constraint rows ``J`` (3 per joint)."""
        return jnp.concatenate([jt.jacobian(self.bodies, R) for jt in self.joints], axis=0)

    def acceleration_rhs(self, R: Float[Array, "n 3 3"], V: Float[Array, "n 6"]) -> Float[Array, "3k"]:
        """Stacked ``η`` of ``J V̇ = η``."""
        return jnp.concatenate([jt.acceleration_rhs(self.bodies, R, V) for jt in self.joints])

    def accelerations(
        self, R: Float[Array, "n 3 3"], V: Float[Array, "n 6"]
    ) -> tuple[Float[Array, "n 6"], Float[Array, "k 3"]]:
        """``(V̇, λ)`` from the index-1 KKT system (seed 004 eq. (3)); λ are the spatial joint reaction forces."""
        n, k = len(self.bodies), len(self.joints)
        Q = self.forces(R, V)
        if k == 0:
            return jnp.linalg.solve(self.mass_matrix(), Q).reshape(n, 6), jnp.zeros((0, 3), Q.dtype)
        J = self.constraint_jacobian(R)
        kkt = jnp.block([[self.mass_matrix(), J.T], [J, jnp.zeros((3 * k, 3 * k), J.dtype)]])
        sol = jnp.linalg.solve(kkt, jnp.concatenate([Q, self.acceleration_rhs(R, V)]))
        return sol[: 6 * n].reshape(n, 6), sol[6 * n :].reshape(k, 3)

    def vector_field(self, t: Any, y: State, args: Any = None) -> State:
        """Left-trivialised vector field ``F = (V, V̇)`` of seed 004 eq. (35), for ``RKMK*(side="body")``.

        Per body: ``(V, V̇)`` for SE(3) (the twist replaces the SE3Element), ``(ω, vˢ, V̇)`` for SO(3)×R³.
        """
        R, _, V = self.unpack(y)
        Vdot, _ = self.accelerations(R, V)
        out = []
        for i, b in enumerate(self.bodies):
            out.append((V[i], Vdot[i]) if b.space == "se3" else (V[i, :3], V[i, 3:], Vdot[i]))
        return tuple(out)

    # ---- monitors -------------------------------------------------------------------------------------------------

    def energy(self, y: State) -> Float[Array, ""]:
        """Total mechanical energy (kinetic + gravitational potential) [J]."""
        _R, r, V = self.unpack(y)
        return sum(b.kinetic_energy(V[i]) + b.potential_energy(r[i], self.gravity) for i, b in enumerate(self.bodies))

    def joint_violations(self, y: State) -> Float[Array, " k"]:
        """Position-constraint violation ``‖g‖`` of every joint [m]."""
        R, r, _ = self.unpack(y)
        return jnp.stack([jnp.linalg.norm(jt.violation(R, r)) for jt in self.joints])

    def velocity_violations(self, y: State) -> Float[Array, " k"]:
        """Velocity-constraint violation ``‖J V‖`` of every joint [m/s]."""
        R, _, V = self.unpack(y)
        return jnp.linalg.norm((self.constraint_jacobian(R) @ V.reshape(-1)).reshape(-1, 3), axis=-1)
