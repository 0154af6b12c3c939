"""The two Lie algebras as data: so(3) (3 coordinates) and se(3) (6 coordinates, rotation first).

Everything in :mod:`jaxse3.lie.adpoly` is written once for "a matrix Lie algebra whose ad-matrix satisfies
ad⁵ = −2φ²ad³ − φ⁴ad with φ = ‖rotation part‖" (seed 000 §3); so(3) (ad_x = x̃) and se(3) (ad_X = [[x̃,0],[ỹ,x̃]])
both do. This module holds the few algebra-specific pieces: ad, adbar, and the embedding of the rotation part.
All functions here act on single (unbatched) vectors; batching is done by :func:`jaxse3.lie._shapes.vectorize`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

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


def cross_rows(a: tuple, b: tuple) -> tuple:
    """a × b for 3-vectors given by their entries (scalars, or rows of matrices: then column by column)."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _add3(a: tuple, b: tuple) -> tuple:
    return tuple(x + y for x, y in zip(a, b))


def _ad6_rows(X: tuple, M: tuple) -> tuple:
    """ad_X M = (x × M₁, x × M₂ + y × M₁) for the rows of M (6 entries of a vector or 6 rows of a matrix)."""
    x, y, M1, M2 = X[:3], X[3:], M[:3], M[3:]
    return cross_rows(x, M1) + _add3(cross_rows(x, M2), cross_rows(y, M1))


def _ad6T_rows(X: tuple, M: tuple) -> tuple:
    """ad_Xᵀ M = (−x × M₁ − y × M₂, −x × M₂)."""
    x, y, M1, M2 = X[:3], X[3:], M[:3], M[3:]
    return tuple(-e for e in _add3(cross_rows(x, M1), cross_rows(y, M2)) + cross_rows(x, M2))


def _adbar6_rows(U: tuple, M: tuple) -> tuple:
    """adbar_U M = (u × M₁ + v × M₂, v × M₁)."""
    u, v, M1, M2 = U[:3], U[3:], M[:3], M[3:]
    return _add3(cross_rows(u, M1), cross_rows(v, M2)) + cross_rows(v, M1)


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
    # the same on rows (:mod:`jaxse3.lie.adpoly`): X, U as tuples of entries, M as the tuple of the rows of a vector
    # (scalars) or a matrix ((m,) arrays); no ad matrix is formed
    ad_rows: Callable[[tuple, tuple], tuple]  # ad_X M
    adT_rows: Callable[[tuple, tuple], tuple]  # ad_Xᵀ M
    adbar_rows: Callable[[tuple, tuple], tuple]  # adbar_U M
    rot_rows: Callable[[tuple], tuple]  # x₀, with exact 0.0 for the translation part

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
    ad_rows=cross_rows,
    adT_rows=lambda x, M: tuple(-e for e in cross_rows(x, M)),
    adbar_rows=cross_rows,
    rot_rows=lambda x: x,
)

SE3 = Algebra(
    name="se3",
    dim=6,
    ad=_ad6,
    adbar=_adbar6,
    rot=_rot6,
    rot_projector=lambda X: jnp.diag(jnp.array([1, 1, 1, 0, 0, 0], dtype=X.dtype)),
    ad_rows=_ad6_rows,
    adT_rows=_ad6T_rows,
    adbar_rows=_adbar6_rows,
    rot_rows=lambda X: tuple(X[:3]) + (0.0, 0.0, 0.0),
)
