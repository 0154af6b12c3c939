"""Cayley map on SO(3) and SE(3): cay, its inverse, the right-trivialised differentials and their derivatives.

Seed 001 (Müller 2021, §3; digest ``papers/notes/001.md`` §5). Twists ``X = (x, y)`` put rotation first,
``hat(X) = [[x̃, y], [0, 0]]``, ``ad_X = [[x̃, 0], [ỹ, x̃]]``, ``Ad_H = [[R, 0], [r̃R, R]]``. Functions with suffix
``_so3`` take vectors ``(..., 3)`` and rotation matrices ``(..., 3, 3)``; functions with suffix ``_se3`` take twists
``(..., 6)``, poses ``(..., 4, 4)`` and return 6×6 matrices. Every function broadcasts over leading batch axes.

Two scalings are provided.

* **Seed 001 convention** (``cay_*``, ``cay_inv_*``, ``dcay_*``, ``dcay_inv_*``, ``d_dcay_*``, ``d_dcay_inv_*``):
  ``cay(X) = (I − X̂)⁻¹(I + X̂)`` (eq. (3.1)), so ``cay(X) = I + 2X̂ + O(X²)`` and ``dcay_0 = 2I``.
  With σ = 2/(1 + |x|²) (eq. (3.8)):

  - ``cay_so3``: ``I + σ(x̃ + x̃²)`` (3.7); ``cay_se3``: ``[[cay x̃, (I + cay x̃) y], [0, 1]]`` (3.14).
  - ``cay_inv_so3``: ``vee(R − Rᵀ)/(1 + tr R)``; ``cay_inv_se3``: the same x and ``y = ½(I − x̃) r``, because
    ``(I + cay x̃)⁻¹ = ½(I − x̃)``. (Inverse map: digest §5.5 [EXT], ``cay⁻¹(A) = (A − I)(A + I)⁻¹``.)
  - ``dcay_so3``: ``σ(I + x̃)`` (3.10); ``dcay_se3``: (3.16).
  - ``dcay_inv_so3``: ``(1/σ) I + ½(x̃² − x̃)`` (3.11); ``dcay_inv_se3``: (3.17).
  - ``d_dcay_so3``, ``d_dcay_inv_so3``, ``d_dcay_se3``, ``d_dcay_inv_se3``: the directional derivatives
    ``(D_X dcay)(U) = d/dt dcay_{X+tU}|₀`` and likewise for ``dcay⁻¹``, eqs. (3.20), (3.21), (3.22), (3.23).

  ``dcay`` is right-trivialised (spatial): ``d/dt cay(X + tY)|₀ = (dcay_X Y)^ cay(X)`` (eq. (1.6)); the left
  (body) version is ``dcay_{−X}``. On SO(3) ``dcay_{−x} = dcay_xᵀ``; on SE(3) there is no transpose rule.

* **Half-scale convention** (``cay_half_*`` …; Hairer–Lubich–Wanner): ``cay_h(X) := cay(X/2)``, so that
  ``cay_h(X) = I + X̂ + O(X²)`` and ``dcay_h`` at 0 is I, which is what Lie-group integrators (RKMK, generalized-α)
  assume of a local parametrisation. The relations (digest §5.1) are ``cay_h⁻¹ = 2 cay⁻¹``,
  ``dcay_h,X = ½ dcay_{X/2}``, ``dcay_h,X⁻¹ = 2 dcay_{X/2}⁻¹``, ``(D dcay_h)_X(U) = ¼ (D dcay)_{X/2}(U)`` and
  ``(D dcay_h⁻¹)_X(U) = (D dcay⁻¹)_{X/2}(U)``.

All forward maps and differentials are rational in X with denominator ``1 + |x|²`` ≥ 1: there is no singularity at
X = 0 (nor anywhere in the algebra), so no Taylor switching and no custom_jvp rule is needed; plain autodiff of these
closed forms is exact to all orders. The limitation is on the group side: Cayley coordinates cover only rotations
with angle |φ| < π (x = tan(φ/2) n, so |x| → ∞ as φ → π). A rotation with tr R = −1 (a half turn) has no Cayley
coordinates; ``cay_inv_*`` divides by ``1 + tr R`` and returns inf or nan there (nan at an exact half turn, where
both numerator and denominator vanish), and loses accuracy close to it. Use Cayley for incremental (per-step)
rotations, not as a global chart.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxse3.lie._algebra import skew, unskew
from jaxse3.lie.shapes import batched

__all__ = [
    "cay_so3",
    "cay_inv_so3",
    "dcay_so3",
    "dcay_inv_so3",
    "d_dcay_so3",
    "d_dcay_inv_so3",
    "cay_se3",
    "cay_inv_se3",
    "dcay_se3",
    "dcay_inv_se3",
    "d_dcay_se3",
    "d_dcay_inv_se3",
    "cay_ad_se3",
    "cay_half_so3",
    "cay_half_inv_so3",
    "dcay_half_so3",
    "dcay_half_inv_so3",
    "d_dcay_half_so3",
    "d_dcay_half_inv_so3",
    "cay_half_se3",
    "cay_half_inv_se3",
    "dcay_half_se3",
    "dcay_half_inv_se3",
    "d_dcay_half_se3",
    "d_dcay_half_inv_se3",
]


# ---------------------------------------------------------------------------------------------------------------------
# Unbatched cores (seed 001 convention).
# ---------------------------------------------------------------------------------------------------------------------


def _sigma(x):
    """σ = 2/(1 + |x|²) (seed 001 eq. (3.8))."""
    return 2.0 / (1.0 + jnp.dot(x, x))


def _eye(x):
    return jnp.eye(3, dtype=x.dtype)


def _block(a, b, c, d):
    return jnp.block([[a, b], [c, d]])


def _cay3(x):
    K = skew(x)
    return _eye(x) + _sigma(x) * (K + K @ K)


def _cay_inv3(R):
    # vee(R − Rᵀ) = 2 unskew(R); 1 + tr R = 2σ for R = cay x̃.
    return 2.0 * unskew(R) / (1.0 + jnp.trace(R))


def _dcay3(x):
    return _sigma(x) * (_eye(x) + skew(x))


def _dcay_inv3(x):
    K = skew(x)
    return (0.5 * (1.0 + jnp.dot(x, x))) * _eye(x) + 0.5 * (K @ K - K)


def _d_dcay3(x, u):
    s = _sigma(x)
    return s * skew(u) - (s * s * jnp.dot(x, u)) * (_eye(x) + skew(x))


def _d_dcay_inv3(x, u):
    K, Ku = skew(x), skew(u)
    return jnp.dot(x, u) * _eye(x) + 0.5 * (K @ Ku + Ku @ K - Ku)


def _cay6(X):
    x, y = X[:3], X[3:]
    R = _cay3(x)
    r = (_eye(x) + R) @ y
    top = jnp.concatenate([R, r[:, None]], axis=1)
    bottom = jnp.concatenate([jnp.zeros((1, 3), X.dtype), jnp.ones((1, 1), X.dtype)], axis=1)
    return jnp.concatenate([top, bottom], axis=0)


def _cay_inv6(H):
    x = _cay_inv3(H[:3, :3])
    r = H[:3, 3]
    return jnp.concatenate([x, 0.5 * (r - skew(x) @ r)])


def _dcay6(X):
    x, y = X[:3], X[3:]
    s = _sigma(x)
    K, Ky, eye = skew(x), skew(y), _eye(x)
    A = s * (eye + K)
    return _block(A, jnp.zeros_like(A), Ky @ A, 2.0 * eye + s * (K + K @ K))


def _dcay_inv6(X):
    x, y = X[:3], X[3:]
    K, Ky, eye = skew(x), skew(y), _eye(x)
    A = _dcay_inv3(x)
    return _block(A, jnp.zeros_like(A), 0.5 * ((K - eye) @ Ky), 0.5 * (eye - K))


def _d_dcay6(X, U):
    x, y, u, v = X[:3], X[3:], U[:3], U[3:]
    s = _sigma(x)
    c = s * s * jnp.dot(x, u)
    K, Ky, Ku, Kv, eye = skew(x), skew(y), skew(u), skew(v), _eye(x)
    A = s * Ku - c * (eye + K)
    B = s * (Kv + Kv @ K + Ky @ Ku) - c * (Ky + Ky @ K)
    D = s * (Ku + K @ Ku + Ku @ K) - c * (K + K @ K)
    return _block(A, jnp.zeros_like(A), B, D)


def _cay_ad6(X):
    x, y = X[:3], X[3:]
    R = _cay3(x)
    P = _eye(x) + R
    return _block(R, jnp.zeros_like(R), 0.5 * (P @ skew(y) @ P), R)


def _d_dcay_inv6(X, U):
    x, y, u, v = X[:3], X[3:], U[:3], U[3:]
    K, Ky, Ku, Kv = skew(x), skew(y), skew(u), skew(v)
    A = _d_dcay_inv3(x, u)
    return _block(A, jnp.zeros_like(A), 0.5 * (K @ Kv + Ku @ Ky - Kv), -0.5 * Ku)


# ---------------------------------------------------------------------------------------------------------------------
# SO(3), seed 001 convention.
# ---------------------------------------------------------------------------------------------------------------------


@batched("(3)->(3,3)", ("x",), "cay_so3")
def cay_so3(x: ArrayLike) -> jax.Array:
    """cay(x̃) = (I − x̃)⁻¹(I + x̃) = I + σ(x̃ + x̃²), σ = 2/(1+|x|²) (seed 001 eqs. (3.1), (3.7)).

    ``(..., 3) -> (..., 3, 3)``. x = tan(φ/2) n gives the rotation by angle φ about n; for a unit quaternion
    (q0, q), x = q/q0."""
    return _cay3(x)


@batched("(3,3)->(3)", ("R",), "cay_inv_so3")
def cay_inv_so3(R: ArrayLike) -> jax.Array:
    """Inverse Cayley map x = vee(R − Rᵀ)/(1 + tr R) (seed 001 digest §5.5, [EXT]). ``(..., 3, 3) -> (..., 3)``.

    Defined only for rotations with angle |φ| < π; inf/nan where tr R = −1 (half turns)."""
    return _cay_inv3(R)


@batched("(3)->(3,3)", ("x",), "dcay_so3")
def dcay_so3(x: ArrayLike) -> jax.Array:
    """Right-trivialised differential dcay_x = σ(I + x̃) (seed 001 eq. (3.10)). ``(..., 3) -> (..., 3, 3)``.

    Spatial angular velocity ω = dcay_x ẋ; the body (left) version is dcay_{−x} = dcay_xᵀ."""
    return _dcay3(x)


@batched("(3)->(3,3)", ("x",), "dcay_inv_so3")
def dcay_inv_so3(x: ArrayLike) -> jax.Array:
    """dcay_x⁻¹ = (1/σ) I + ½(x̃² − x̃) (seed 001 eq. (3.11)). ``(..., 3) -> (..., 3, 3)``."""
    return _dcay_inv3(x)


@batched("(3),(3)->(3,3)", ("x", "u"), "d_dcay_so3")
def d_dcay_so3(x: ArrayLike, u: ArrayLike) -> jax.Array:
    """(D_x dcay)(u) = σ ũ − σ²(xᵀu)(I + x̃) (seed 001 eq. (3.20)). ``(..., 3), (..., 3) -> (..., 3, 3)``."""
    return _d_dcay3(x, u)


@batched("(3),(3)->(3,3)", ("x", "u"), "d_dcay_inv_so3")
def d_dcay_inv_so3(x: ArrayLike, u: ArrayLike) -> jax.Array:
    """(D_x dcay⁻¹)(u) = (xᵀu) I + ½(x̃ũ + ũx̃ − ũ) (seed 001 eq. (3.21)). ``(..., 3), (..., 3) -> (..., 3, 3)``."""
    return _d_dcay_inv3(x, u)


# ---------------------------------------------------------------------------------------------------------------------
# SE(3), seed 001 convention.
# ---------------------------------------------------------------------------------------------------------------------


@batched("(6)->(4,4)", ("X",), "cay_se3")
def cay_se3(X: ArrayLike) -> jax.Array:
    """cay(X̂) = (I − X̂)⁻¹(I + X̂) = [[cay x̃, (I + cay x̃) y], [0, 1]] (seed 001 eq. (3.14)).

    ``(..., 6) -> (..., 4, 4)``. Note cay(0, y) = [[I, 2y], [0, 1]] (the factor 2 of this convention)."""
    return _cay6(X)


@batched("(4,4)->(6)", ("H",), "cay_inv_se3")
def cay_inv_se3(H: ArrayLike) -> jax.Array:
    """Inverse of :func:`cay_se3`: x = vee(R − Rᵀ)/(1 + tr R), y = ½(I − x̃) r. ``(..., 4, 4) -> (..., 6)``.

    Uses (I + cay x̃)⁻¹ = ½(I − x̃). Defined only for rotation angle |φ| < π; inf/nan where tr R = −1."""
    return _cay_inv6(H)


@batched("(6)->(6,6)", ("X",), "dcay_se3")
def dcay_se3(X: ArrayLike) -> jax.Array:
    """dcay_X = [[σ(I + x̃), 0], [σ ỹ(I + x̃), 2I + σ(x̃ + x̃²)]] (seed 001 eq. (3.16)). ``(..., 6) -> (..., 6, 6)``.

    Right-trivialised (spatial twist V = dcay_X Ẋ). The lower-right block is I + cay x̃, not the upper-left block.
    The body version is dcay_{−X}, which is *not* dcay_Xᵀ on SE(3)."""
    return _dcay6(X)


@batched("(6)->(6,6)", ("X",), "dcay_inv_se3")
def dcay_inv_se3(X: ArrayLike) -> jax.Array:
    """dcay_X⁻¹ = [[dcay_x⁻¹, 0], [½(x̃ − I)ỹ, ½(I − x̃)]] (seed 001 eq. (3.17)). ``(..., 6) -> (..., 6, 6)``."""
    return _dcay_inv6(X)


@batched("(6),(6)->(6,6)", ("X", "U"), "d_dcay_se3")
def d_dcay_se3(X: ArrayLike, U: ArrayLike) -> jax.Array:
    """(D_X dcay)(U) = d/dt dcay_{X+tU}|₀ (seed 001 eq. (3.22)), X = (x, y), U = (u, v).

    ``[[σũ − σ²(xᵀu)(I + x̃), 0], [σ(ṽ + ṽx̃ + ỹũ) − σ²(xᵀu)(ỹ + ỹx̃), σ(ũ + x̃ũ + ũx̃) − σ²(xᵀu)(x̃ + x̃²)]]``.
    ``(..., 6), (..., 6) -> (..., 6, 6)``."""
    return _d_dcay6(X, U)


@batched("(6),(6)->(6,6)", ("X", "U"), "d_dcay_inv_se3")
def d_dcay_inv_se3(X: ArrayLike, U: ArrayLike) -> jax.Array:
    """(D_X dcay⁻¹)(U) = ½[[2(xᵀu)I + ũx̃ + x̃ũ − ũ, 0], [x̃ṽ + ũỹ − ṽ, −ũ]] (seed 001 eq. (3.23)).

    ``(..., 6), (..., 6) -> (..., 6, 6)``."""
    return _d_dcay_inv6(X, U)


@batched("(6)->(6,6)", ("X",), "cay_ad_se3")
def cay_ad_se3(X: ArrayLike) -> jax.Array:
    """cay(ad_X) = (I − ad_X)⁻¹(I + ad_X) = [[R, 0], [A, R]], R = cay x̃, A = ½(I + R) ỹ (I + R) (seed 001 Lemma 3.4,
    eqs. (3.24)–(3.26)), ``(..., 6) -> (..., 6, 6)``: the Cayley map of the adjoint representation.

    It is the adjoint Ad_C of the pose C = [[R, dcay_x y], [0, 1]] (A = (dcay_x y)~ R, eq. (3.29)), not Ad of
    :func:`cay_se3`, whose translation is (I + R) y: the same six numbers are different motions in the two maps (digest
    §5.5). Eq. (3.33) reads A = (I − x̃)⁻¹ ỹ (I + R) (the printed text drops the inverse; digest §6). Rational in X:
    plain autodiff differentiates it exactly.
    """
    return _cay_ad6(X)


# ---------------------------------------------------------------------------------------------------------------------
# Half-scale convention cay_h(X) = cay(X/2) (HLW): cay_h(X) = I + X̂ + O(X²), dcay_h at 0 = I.
# ---------------------------------------------------------------------------------------------------------------------


@batched("(3)->(3,3)", ("x",), "cay_half_so3")
def cay_half_so3(x: ArrayLike) -> jax.Array:
    """cay_h(x) = cay(x/2) (seed 001 eq. (3.7) at x/2); x = 2 tan(φ/2) n. ``(..., 3) -> (..., 3, 3)``."""
    return _cay3(0.5 * x)


@batched("(3,3)->(3)", ("R",), "cay_half_inv_so3")
def cay_half_inv_so3(R: ArrayLike) -> jax.Array:
    """Inverse of :func:`cay_half_so3`: 2 cay⁻¹(R) = 2 vee(R − Rᵀ)/(1 + tr R). inf/nan where tr R = −1."""
    return 2.0 * _cay_inv3(R)


@batched("(3)->(3,3)", ("x",), "dcay_half_so3")
def dcay_half_so3(x: ArrayLike) -> jax.Array:
    """dcay_h,x = ½ dcay_{x/2} = (I + x̃/2)/(1 + |x|²/4) (seed 001 eq. (3.10), digest §5.1)."""
    return 0.5 * _dcay3(0.5 * x)


@batched("(3)->(3,3)", ("x",), "dcay_half_inv_so3")
def dcay_half_inv_so3(x: ArrayLike) -> jax.Array:
    """dcay_h,x⁻¹ = 2 dcay_{x/2}⁻¹ = (1 + |x|²/4) I − x̃/2 + x̃²/4 (seed 001 eq. (3.11), digest §5.1)."""
    return 2.0 * _dcay_inv3(0.5 * x)


@batched("(3),(3)->(3,3)", ("x", "u"), "d_dcay_half_so3")
def d_dcay_half_so3(x: ArrayLike, u: ArrayLike) -> jax.Array:
    """(D_x dcay_h)(u) = ¼ (D dcay)_{x/2}(u) (seed 001 eq. (3.20), digest §5.1)."""
    return 0.25 * _d_dcay3(0.5 * x, u)


@batched("(3),(3)->(3,3)", ("x", "u"), "d_dcay_half_inv_so3")
def d_dcay_half_inv_so3(x: ArrayLike, u: ArrayLike) -> jax.Array:
    """(D_x dcay_h⁻¹)(u) = (D dcay⁻¹)_{x/2}(u) (seed 001 eq. (3.21), digest §5.1)."""
    return _d_dcay_inv3(0.5 * x, u)


@batched("(6)->(4,4)", ("X",), "cay_half_se3")
def cay_half_se3(X: ArrayLike) -> jax.Array:
    """cay_h(X) = cay(X/2) = [[cay(x̃/2), ½(I + cay(x̃/2)) y], [0, 1]] (seed 001 eq. (3.14) at X/2)."""
    return _cay6(0.5 * X)


@batched("(4,4)->(6)", ("H",), "cay_half_inv_se3")
def cay_half_inv_se3(H: ArrayLike) -> jax.Array:
    """Inverse of :func:`cay_half_se3`: 2 cay⁻¹(H). inf/nan where tr R = −1."""
    return 2.0 * _cay_inv6(H)


@batched("(6)->(6,6)", ("X",), "dcay_half_se3")
def dcay_half_se3(X: ArrayLike) -> jax.Array:
    """dcay_h,X = ½ dcay_{X/2} (seed 001 eq. (3.16), digest §5.1); identity at X = 0."""
    return 0.5 * _dcay6(0.5 * X)


@batched("(6)->(6,6)", ("X",), "dcay_half_inv_se3")
def dcay_half_inv_se3(X: ArrayLike) -> jax.Array:
    """dcay_h,X⁻¹ = 2 dcay_{X/2}⁻¹ (seed 001 eq. (3.17), digest §5.1)."""
    return 2.0 * _dcay_inv6(0.5 * X)


@batched("(6),(6)->(6,6)", ("X", "U"), "d_dcay_half_se3")
def d_dcay_half_se3(X: ArrayLike, U: ArrayLike) -> jax.Array:
    """(D_X dcay_h)(U) = ¼ (D dcay)_{X/2}(U) (seed 001 eq. (3.22), digest §5.1)."""
    return 0.25 * _d_dcay6(0.5 * X, U)


@batched("(6),(6)->(6,6)", ("X", "U"), "d_dcay_half_inv_se3")
def d_dcay_half_inv_se3(X: ArrayLike, U: ArrayLike) -> jax.Array:
    """(D_X dcay_h⁻¹)(U) = (D dcay⁻¹)_{X/2}(U) (seed 001 eq. (3.23), digest §5.1)."""
    return _d_dcay_inv6(0.5 * X, U)
