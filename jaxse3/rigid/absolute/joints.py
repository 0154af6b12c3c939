"""Spherical joints in absolute coordinates: constraint, velocity Jacobian, acceleration terms (seed 004 §3, §5).

A spherical joint makes a point ``a_i`` of body ``i`` coincide with a point ``a_j`` of body ``j`` or with a fixed
ground point ``P``:

    g = (R_i a_i + r_i) − (R_j a_j + r_j)        or        g = (R_i a_i + r_i) − P        (seed 004 eqs. (38), (43))

expressed in the spatial frame. Differentiating along the motion gives the velocity constraint ``J V = 0`` and the
index-1 acceleration constraint ``J V̇ = η`` (seed 004 eq. (3)), assembled from each body's point kinematics
(:meth:`RigidBody.point_jacobian`, :meth:`RigidBody.point_bias`), so the rows depend on the bodies'
configuration spaces: eqs. (50)/(53) for SE(3), (61)/(64) for SO(3)×R³.

The paper writes the ground-joint rows of the SE(3) formulation in the body frame (``R_iᵀ`` times these rows, eqs. (40),
(50)): that only rotates the multiplier λ; the accelerations are the same. Here every λ is the joint reaction force in
the spatial frame. (The form obtained by differentiating ``R_iᵀg``, eq. (39), differs off the constraint manifold,
digest 004 P8; it is not used.)
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxse3.rigid.absolute.bodies import RigidBody


class SphericalJoint(eqx.Module):
    """Spherical joint between body ``body_i`` and body ``body_j`` (or the ground when ``body_j`` is None).

    Attributes:
        body_i: index of the first body (static).
        point_i: ``(3,)`` joint point in body i's COM frame.
        body_j: index of the second body, or None for a ground joint (static).
        point_j: ``(3,)`` joint point in body j's COM frame, or the fixed ground point in the spatial frame.
    """

    body_i: int = eqx.field(static=True)
    point_i: Float[Array, "3"]
    body_j: int | None = eqx.field(static=True)
    point_j: Float[Array, "3"]

    def __check_init__(self):
        for name in ("point_i", "point_j"):
            if jnp.shape(getattr(self, name)) != (3,):
                raise ValueError(f"SphericalJoint: {name} must have shape (3,), got {jnp.shape(getattr(self, name))}")
        if self.body_j is not None and self.body_j == self.body_i:
            raise ValueError(f"SphericalJoint: body_i and body_j must differ, both are {self.body_i}")

    @property
    def grounded(self) -> bool:
        return self.body_j is None

    def violation(self, R: Float[Array, "n 3 3"], r: Float[Array, "n 3"]) -> Float[Array, "3"]:
        """Position constraint ``g(q)`` (seed 004 eqs. (38), (43)), spatial frame [m]."""
        g = R[self.body_i] @ self.point_i + r[self.body_i]
        if self.grounded:
            return g - self.point_j
        return g - (R[self.body_j] @ self.point_j + r[self.body_j])

    def jacobian(self, bodies: Sequence[RigidBody], R: Float[Array, "n 3 3"]) -> Float[Array, "3 6n"]:
        """Velocity-constraint rows ``J`` with ``ġ = J V`` over all bodies' velocities (eqs. (50), (61))."""
        n = len(bodies)
        blocks = [jnp.zeros((3, 6), R.dtype)] * n
        blocks[self.body_i] = bodies[self.body_i].point_jacobian(R[self.body_i], self.point_i)
        if not self.grounded:
            blocks[self.body_j] = -bodies[self.body_j].point_jacobian(R[self.body_j], self.point_j)
        return jnp.concatenate(blocks, axis=1)

    def acceleration_rhs(
        self, bodies: Sequence[RigidBody], R: Float[Array, "n 3 3"], V: Float[Array, "n 6"]
    ) -> Float[Array, "3"]:
        """``η`` with ``g̈ = J V̇ − η``, so that ``g̈ = 0`` reads ``J V̇ = η`` (eqs. (53), (64))."""
        eta = -bodies[self.body_i].point_bias(R[self.body_i], V[self.body_i], self.point_i)
        if not self.grounded:
            eta = eta + bodies[self.body_j].point_bias(R[self.body_j], V[self.body_j], self.point_j)
        return eta


def ground_joint(body: int, point: Float[Array, "3"], ground_point: Float[Array, "3"]) -> SphericalJoint:
    """Spherical joint fixing the body point ``point`` (COM frame) to the spatial point ``ground_point``."""
    return SphericalJoint(body, jnp.asarray(point, float), None, jnp.asarray(ground_point, float))


def body_joint(body_i: int, point_i: Float[Array, "3"], body_j: int, point_j: Float[Array, "3"]) -> SphericalJoint:
    """Spherical joint between the point ``point_i`` of body ``body_i`` and ``point_j`` of body ``body_j``."""
    return SphericalJoint(body_i, jnp.asarray(point_i, float), body_j, jnp.asarray(point_j, float))
