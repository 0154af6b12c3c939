"""Rigid bodies in absolute coordinates, each with its own configuration space: SE(3) or SO(3)×R³ (seed 004 §2).

A body's configuration is ``(R, r)``: the rotation of its centre-of-mass (COM) frame and the spatial position of its
COM. Its velocity ``V = (ω, v)`` (angular first) is interpreted according to the body's configuration space:

- ``"se3"``: the body twist ``V̂ = C⁻¹Ċ`` of ``C = [[R, r], [0, 1]]``, i.e. ``ω̂ = RᵀṘ`` and ``v = Rᵀṙ`` (seed 004
  eq. (6)); the configuration is updated on SE(3), so translation and rotation move along a screw (eq. (8)).
- ``"so3xr3"``: the hybrid velocity ``(ω, vˢ) = (RᵀṘ, ṙ)`` of the direct product SO(3)×R³ (seed 004 eq. (20)):
  body-fixed angular velocity, *spatial* linear velocity; the position is updated along a straight line (eq. (18)).

Both use the constant block-diagonal mass matrix ``diag(Θ, m I)`` of a COM frame; they differ in the velocity-dependent
and external-force terms ``Q`` of the Newton–Euler equations ``M V̇ = Q`` (seed 004 eqs. (40), (42), (54)) and in the
kinematics of a body point (its velocity Jacobian and its acceleration bias), which the joints use.
"""

from __future__ import annotations

from typing import Literal

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxse3.lie import so3

Space = Literal["se3", "so3xr3"]
SPACES: tuple[str, ...] = ("se3", "so3xr3")


class RigidBody(eqx.Module):
    """One rigid body: mass, COM inertia (body frame) and its configuration space (static).

    Attributes:
        mass: scalar mass m [kg].
        inertia: ``(3, 3)`` inertia tensor Θ about the COM, in the COM body frame [kg m²].
        space: ``"se3"`` (body twist, screw update) or ``"so3xr3"`` (hybrid velocity, straight-line update).
    """

    mass: Float[Array, ""]
    inertia: Float[Array, "3 3"]
    space: str = eqx.field(static=True, default="se3")

    def __check_init__(self):
        if self.space not in SPACES:
            raise ValueError(f"RigidBody: space must be one of {SPACES}, got {self.space!r}")
        if jnp.shape(self.mass) != ():
            raise ValueError(f"RigidBody: mass must be a scalar, got shape {jnp.shape(self.mass)}")
        if jnp.shape(self.inertia) != (3, 3):
            raise ValueError(f"RigidBody: inertia must have shape (3, 3), got {jnp.shape(self.inertia)}")

    def with_space(self, space: Space) -> "RigidBody":
        """The same body with another configuration space."""
        return RigidBody(self.mass, self.inertia, space)

    def mass_matrix(self) -> Float[Array, "6 6"]:
        """``diag(Θ, m I)`` in both spaces (seed 004 eqs. (40), (42))."""
        z = jnp.zeros((3, 3), self.inertia.dtype)
        return jnp.block([[self.inertia, z], [z, self.mass * jnp.eye(3, dtype=self.inertia.dtype)]])

    def forces(self, R: Float[Array, "3 3"], V: Float[Array, "6"], gravity: Float[Array, "3"]) -> Float[Array, "6"]:
        """Right-hand side ``Q`` of ``M V̇ = Q`` for the unconstrained body under gravity ``gravity`` (spatial).

        SE(3): ``Q = (−ω̃Θω, m Rᵀg − m ω̃v)`` (seed 004 eqs. (40), (54); equals ``ad_Vᵀ M V + W``);
        SO(3)×R³: ``Q = (−ω̃Θω, m g)``, no translational gyroscopic term (eq. (42)). The paper's gravity
        "F = Rᵀgˢ" lacks the factor m (digest 004 §4.2, P6); it is included here.
        """
        w, v = V[:3], V[3:]
        moment = -jnp.cross(w, self.inertia @ w)
        if self.space == "se3":
            force = self.mass * (R.T @ gravity - jnp.cross(w, v))
        else:
            force = self.mass * gravity
        return jnp.concatenate([moment, force])

    def point_jacobian(self, R: Float[Array, "3 3"], point: Float[Array, "3"]) -> Float[Array, "3 6"]:
        """``J`` with ``ṗ = J V`` for the spatial position ``p = R a + r`` of the body point ``a`` (COM frame).

        SE(3): ``[−R ã, R]``; SO(3)×R³: ``[−R ã, I]`` (the blocks of seed 004 eqs. (50), (61)).
        """
        lin = R if self.space == "se3" else jnp.eye(3, dtype=R.dtype)
        return jnp.concatenate([-R @ so3.hat(point), lin], axis=1)

    def point_bias(self, R: Float[Array, "3 3"], V: Float[Array, "6"], point: Float[Array, "3"]) -> Float[Array, "3"]:
        """``b`` with ``p̈ = J V̇ + b`` for ``p = R a + r`` (the velocity-product terms of seed 004 eqs. (53), (64)).

        SE(3): ``b = R ω̃(ω̃a + v)``; SO(3)×R³: ``b = R ω̃ω̃a``.
        """
        w, v = V[:3], V[3:]
        wa = jnp.cross(w, point)
        if self.space == "se3":
            wa = wa + v
        return R @ jnp.cross(w, wa)

    def spatial_linear_velocity(self, R: Float[Array, "3 3"], V: Float[Array, "6"]) -> Float[Array, "3"]:
        """COM velocity ``ṙ`` in the spatial frame: ``R v`` (SE(3)) or ``vˢ`` (SO(3)×R³, eq. (20))."""
        return R @ V[3:] if self.space == "se3" else V[3:]

    def velocity(self, R: Float[Array, "3 3"], omega: Float[Array, "3"], rdot: Float[Array, "3"]) -> Float[Array, "6"]:
        """The body's velocity ``V`` from the body angular velocity ω and the spatial COM velocity ``ṙ``."""
        return jnp.concatenate([omega, R.T @ rdot if self.space == "se3" else rdot])

    def kinetic_energy(self, V: Float[Array, "6"]) -> Float[Array, ""]:
        """``½ωᵀΘω + ½m‖v‖²``; the same in both spaces since ``‖vˢ‖ = ‖Rv‖ = ‖v‖``."""
        w, v = V[:3], V[3:]
        return 0.5 * w @ self.inertia @ w + 0.5 * self.mass * v @ v

    def potential_energy(self, r: Float[Array, "3"], gravity: Float[Array, "3"]) -> Float[Array, ""]:
        """``−m gᵀr`` (zero without gravity)."""
        return -self.mass * gravity @ r


def box(mass: float, sides: tuple[float, float, float], space: Space = "se3") -> RigidBody:
    """Homogeneous box, sides ``(a, b, c)`` along its COM-frame axes: ``Θ = m/12 diag(b²+c², a²+c², a²+b²)``."""
    a, b, c = sides
    inertia = mass / 12.0 * jnp.diag(jnp.array([b * b + c * c, a * a + c * c, a * a + b * b]))
    return RigidBody(jnp.asarray(mass, inertia.dtype), inertia, space)
