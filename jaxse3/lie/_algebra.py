"""The two Lie algebras as data: so(3) (3 coordinates) and se(3) (6 coordinates, rotation first).

Everything in :mod:`jaxse3.lie.adpoly` is written once for "a matrix Lie algebra whose ad-matrix satisfies
ad⁵ = −2φ²ad³ − φ⁴ad with φ = ‖rotation part‖" (seed 000 §3); so(3) (ad_x = x̃) and se(3) (ad_X = [[x̃,0],[ỹ,x̃]])
both do. This module holds the few algebra-specific pieces: ad, adbar, and the embedding of the rotation part.
All functions here act on single (unbatched) vectors; batching is done by :func:`jaxse3.lie.shapes.batched`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax.numpy as jnp


def skew(x: jnp.ndarray) -> jnp.ndarray:
    """x̃ with x̃ z = x × z (seed 000 eq. (3)); x has shape (3,)."""
    z = jnp.zeros_like(x[0])
    return jnp.array([[z, -x[2], x[1]], [x[2], z, -x[0]], [-x[1], x[0], z]])


def unskew(m: jnp.ndarray) -> jnp.ndarray:
    """Inverse of :func:`skew` applied to the skew-symmetric part of m (3×3)."""
    return 0.5 * jnp.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]])


def _ad6(X: jnp.ndarray) -> jnp.ndarray:
    """ad_X = [[x̃, 0], [ỹ, x̃]] (seed 000 eq. (19)): ad_X Y = vee([X̂, Ŷ])."""
    xt, yt = skew(X[:3]), skew(X[3:])
    z = jnp.zeros_like(xt)
    return jnp.block([[xt, z], [yt, xt]])


def _adbar6(U: jnp.ndarray) -> jnp.ndarray:
    """adbar_U = [[ũ, ṽ], [ṽ, 0]] (seed 000 eq. (38)), defined by ad_Xᵀ U = adbar_U X."""
    ut, vt = skew(U[:3]), skew(U[3:])
    return jnp.block([[ut, vt], [vt, jnp.zeros_like(ut)]])


def _rot6(X: jnp.ndarray) -> jnp.ndarray:
    """x₀ = (x, 0) ∈ R⁶: the rotation part, padded (seed 000 Lemma 4.6)."""
    return jnp.concatenate([X[:3], jnp.zeros_like(X[3:])])


@dataclass(frozen=True)
class Algebra:
    """Algebra-specific pieces used by the generic ad-polynomial formulas."""

    name: str
    dim: int
    ad: Callable[[jnp.ndarray], jnp.ndarray]
    adbar: Callable[[jnp.ndarray], jnp.ndarray]
    rot: Callable[[jnp.ndarray], jnp.ndarray]  # x₀: the rotation part embedded in the algebra's coordinates
    rot_projector: Callable[[jnp.ndarray], jnp.ndarray]  # I₀ = ∂x₀/∂X (dtype taken from the argument)

    def angle2(self, X: jnp.ndarray) -> jnp.ndarray:
        """t = φ² = ‖x‖², the only quantity the coefficients depend on."""
        x = X[:3]
        return jnp.dot(x, x)


# so(3): ad_x = x̃ and ad_xᵀ u = −x̃u = ũx, so adbar_u = ũ.
SO3 = Algebra(
    name="so3",
    dim=3,
    ad=skew,
    adbar=skew,
    rot=lambda x: x,
    rot_projector=lambda x: jnp.eye(3, dtype=x.dtype),
)

SE3 = Algebra(
    name="se3",
    dim=6,
    ad=_ad6,
    adbar=_adbar6,
    rot=_rot6,
    rot_projector=lambda X: jnp.diag(jnp.array([1, 1, 1, 0, 0, 0], dtype=X.dtype)),
)
