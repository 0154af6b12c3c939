"""SO(3): rotation vectors x ∈ R³ (φ = ‖x‖), rotation matrices R, and the closed-form dexp family.

Conventions (docs/conventions.md): ``hat(x) z = x × z``; right-trivialised ``dexp_x`` with spatial angular
velocity ``ω = dexp_x ẋ`` (seed 001 eq. (2.17)); body angular velocity ``ω_b = dexp_{−x} ẋ = dexp_xᵀ ẋ``.

Exponential and logarithm: seed 001 eqs. (2.6), (2.13), (2.16); the logarithm (absent from both papers) is accurate
up to and at φ = π. All scalar coefficients come from :mod:`jaxse3.lie.coefficients` (Taylor-switched, accurate over
the whole range, finite derivatives at x = 0). ``exp``, ``log``, ``dexp``, ``dexp_inv``, ``d_dexp``, ``d_dexp_inv``
and the evaluation maps carry custom_jvp rules (:mod:`jaxse3.lie.rules`).

Every function broadcasts over leading batch axes: vectors ``(..., 3)``, matrices ``(..., 3, 3)``.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxse3.lie import _api, coefficients
from jaxse3.lie._algebra import SO3, skew, unskew
from jaxse3.lie.cayley import (  # Cayley map family, seed 001 §3 (plain autodiff is exact: no singularity)
    cay_half_inv_so3 as cay_half_inv,
    cay_half_so3 as cay_half,
    cay_inv_so3 as cay_inv,
    cay_so3 as cay,
    d_dcay_half_inv_so3 as d_dcay_half_inv,
    d_dcay_half_so3 as d_dcay_half,
    d_dcay_inv_so3 as d_dcay_inv,
    d_dcay_so3 as d_dcay,
    dcay_half_inv_so3 as dcay_half_inv,
    dcay_half_so3 as dcay_half,
    dcay_inv_so3 as dcay_inv,
    dcay_so3 as dcay,
)
from jaxse3.lie.shapes import batched
from jaxse3.lie.tangents import custom_rule

__all__ = [
    "hat",
    "vee",
    "ad",
    "adbar",
    "Ad",
    "Ad_inv",
    "coAd",
    "exp",
    "log",
    "log_checked",
    "inv",
    "compose",
    "act",
    "project",
    "dexp",
    "dexp_inv",
    "d_dexp",
    "d_dexp_inv",
    "d2_dexp",
    "d2_dexp_inv",
    "dexp_apply",
    "dexp_inv_apply",
    "d_dexp_apply",
    "d_dexp_inv_apply",
    "dexpT_apply",
    "dexp_invT_apply",
    "dexp_jac",
    "dexp_inv_jac",
    "dexpT_jac",
    "dexp_invT_jac",
    "dexp_jac_dir",
    "dexp_inv_jac_dir",
    "dexpT_jac_dir",
    "dexp_invT_jac_dir",
    "dexp_hess",
    "dexp_inv_hess",
    "dexp_form",
    "dexp_inv_form",
    "cay",
    "cay_inv",
    "dcay",
    "dcay_inv",
    "d_dcay",
    "d_dcay_inv",
    "cay_half",
    "cay_half_inv",
    "dcay_half",
    "dcay_half_inv",
    "d_dcay_half",
    "d_dcay_half_inv",
]

Vector = Float[Array, "... 3"]  # algebra coordinates, batched over leading axes
Matrix = Float[Array, "... 3 3"]
_F = _api.build(SO3)  # the batched, shape-checked closed forms with their custom_jvp rules (seed 000)


def dexp(X: Vector) -> Matrix:
    """dexp_X (3×3), right-trivialised (seed 000 eq. (21), (23)).

    Args:
        X: algebra coordinates ``(..., 3)``.
    Returns:
        ``(..., 3, 3)``. Carries a custom_jvp rule whose tangent is ``d_dexp``.
    """
    return _F.dexp(X)


def dexp_inv(X: Vector) -> Matrix:
    """dexp_X⁻¹ (3×3), right-trivialised (seed 000 eq. (22)).

    Args:
        X: algebra coordinates ``(..., 3)``.
    Returns:
        ``(..., 3, 3)``. Carries a custom_jvp rule whose tangent is ``d_dexp_inv``.
    """
    return _F.dexp_inv(X)


def d_dexp(X: Vector, U: Vector) -> Matrix:
    """(D_X dexp_X)(U): directional derivative (seed 000 eq. (28), (30)–(31)).

    Args:
        X, U: ``(..., 3)``.
    Returns:
        ``(..., 3, 3)``. Its custom_jvp rule evaluates ``d2_dexp`` (closed-form second derivative).
    """
    return _F.d_dexp(X, U)


def d_dexp_inv(X: Vector, U: Vector) -> Matrix:
    """(D_X dexp_X⁻¹)(U): directional derivative (seed 000 eq. (29)).

    Args:
        X, U: ``(..., 3)``.
    Returns:
        ``(..., 3, 3)``. Its custom_jvp rule evaluates ``d2_dexp_inv`` (closed-form second derivative).
    """
    return _F.d_dexp_inv(X, U)


def d2_dexp(X: Vector, U: Vector, S: Vector) -> Matrix:
    """(D²_X dexp_X)(U)(S), symmetric in U and S (seed 000 eq. (40)–(46)).

    Args:
        X, U, S: ``(..., 3)``.
    Returns:
        ``(..., 3, 3)``.
    """
    return _F.d2_dexp(X, U, S)


def d2_dexp_inv(X: Vector, U: Vector, S: Vector) -> Matrix:
    """(D²_X dexp_X⁻¹)(U)(S), symmetric in U and S (seed 000 eq. (40), (43), (45)).

    Args:
        X, U, S: ``(..., 3)``.
    Returns:
        ``(..., 3, 3)``.
    """
    return _F.d2_dexp_inv(X, U, S)


def dexp_apply(X: Vector, Z: Vector) -> Vector:
    """Evaluation map X ↦ dexp_X Z.

    Args:
        X, Z: ``(..., 3)``.
    Returns:
        ``(..., 3)``. Custom_jvp rule: ``dexp_jac(X, Z) dX + dexp_apply(X, dZ)``, itself differentiable in
        closed form, so ``jax.jacfwd``/``jacrev``/``hessian`` run the hand-derived formulas.
    """
    return _F.dexp_apply(X, Z)


def dexp_inv_apply(X: Vector, Z: Vector) -> Vector:
    """Evaluation map X ↦ dexp_X⁻¹ Z.

    Args:
        X, Z: ``(..., 3)``.
    Returns:
        ``(..., 3)``. Custom_jvp rule: ``dexp_inv_jac(X, Z) dX + dexp_inv_apply(X, dZ)``, itself differentiable in
        closed form, so ``jax.jacfwd``/``jacrev``/``hessian`` run the hand-derived formulas.
    """
    return _F.dexp_inv_apply(X, Z)


def dexpT_apply(X: Vector, Z: Vector) -> Vector:
    """Evaluation map X ↦ dexp_Xᵀ Z (custom_jvp, like ``dexp_apply``)."""
    return _F.dexpT_apply(X, Z)


def dexp_invT_apply(X: Vector, Z: Vector) -> Vector:
    """Evaluation map X ↦ dexp_X⁻¹ᵀ Z (custom_jvp, like ``dexp_inv_apply``)."""
    return _F.dexp_invT_apply(X, Z)


def d_dexp_apply(X: Vector, U: Vector, Z: Vector) -> Vector:
    """(D_X dexp_X)(U) Z = ``d_dexp(X, U) @ Z = dexp_jac(X, Z) @ U``, matrix-free.

    By matrix-vector products only (no 3×3 matrix is formed): the cheap way to differentiate
    ``dexp_apply(X, Z)`` along one direction (e.g. the rate of ``dexp_X Z`` along a curve X(t)).

    Args:
        X, U, Z: ``(..., 3)``.
    Returns:
        ``(..., 3)``. Custom_jvp rule: ``dexp_jac_dir(X, Z, dX) @ U`` plus itself in dU and dZ (closed forms).
    """
    return _F.d_dexp_apply(X, U, Z)


def d_dexp_inv_apply(X: Vector, U: Vector, Z: Vector) -> Vector:
    """(D_X dexp_X⁻¹)(U) Z = ``d_dexp_inv(X, U) @ Z = dexp_inv_jac(X, Z) @ U``, matrix-free.

    By matrix-vector products only (no 3×3 matrix is formed): the cheap way to differentiate
    ``dexp_inv_apply(X, Z)`` along one direction (e.g. the rate of ``dexp_X⁻¹ Z`` along a curve X(t)).

    Args:
        X, U, Z: ``(..., 3)``.
    Returns:
        ``(..., 3)``. Custom_jvp rule: ``dexp_inv_jac_dir(X, Z, dX) @ U`` plus itself in dU and dZ (closed forms).
    """
    return _F.d_dexp_inv_apply(X, U, Z)


def dexp_jac(X: Vector, Z: Vector) -> Matrix:
    """∂(dexp_X Z)/∂X, rows = outputs (seed 000 eq. (36)).

    Args:
        X, Z: ``(..., 3)``.
    Returns:
        ``(..., 3, 3)``; ``dexp_jac(X, Z) @ U == d_dexp(X, U) @ Z``.
    """
    return _F.dexp_jac(X, Z)


def dexp_inv_jac(X: Vector, Z: Vector) -> Matrix:
    """∂(dexp_X⁻¹ Z)/∂X, rows = outputs (seed 000 eq. (37)).

    Args:
        X, Z: ``(..., 3)``.
    Returns:
        ``(..., 3, 3)``; ``dexp_inv_jac(X, Z) @ U == d_dexp_inv(X, U) @ Z``.
    """
    return _F.dexp_inv_jac(X, Z)


def dexpT_jac(X: Vector, Z: Vector) -> Matrix:
    """∂(dexp_Xᵀ Z)/∂X (seed 000 eq. (39)); custom_jvp via ``dexpT_jac_dir``."""
    return _F.dexpT_jac(X, Z)


def dexp_invT_jac(X: Vector, Z: Vector) -> Matrix:
    """∂(dexp_X⁻¹ᵀ Z)/∂X (seed 000 eq. (39) with a → b); custom_jvp via ``dexp_invT_jac_dir``."""
    return _F.dexp_invT_jac(X, Z)


def dexp_jac_dir(X: Vector, Z: Vector, S: Vector) -> Matrix:
    """Directional derivative of ``dexp_jac(X, Z)`` along S: the matrix U ↦ (D²_X dexp_X)(U)(S) Z.

    The S-contraction of the Hessian (seed 000 eq. (47)–(50)): ``Q @ dexp_jac_dir(X, Z, S) == dexp_hess(X, Q, Z) @ S``.
    Used as the custom_jvp tangent of ``dexp_jac``.
    """
    return _F.dexp_jac_dir(X, Z, S)


def dexp_inv_jac_dir(X: Vector, Z: Vector, S: Vector) -> Matrix:
    """Directional derivative of ``dexp_inv_jac(X, Z)`` along S: the matrix U ↦ (D²_X dexp_X⁻¹)(U)(S) Z.

    The S-contraction of the Hessian (seed 000 eq. (51)):
    ``Q @ dexp_inv_jac_dir(X, Z, S) == dexp_inv_hess(X, Q, Z) @ S``.
    Used as the custom_jvp tangent of ``dexp_inv_jac``.
    """
    return _F.dexp_inv_jac_dir(X, Z, S)


def dexpT_jac_dir(X: Vector, Z: Vector, S: Vector) -> Matrix:
    """Directional derivative of ``dexpT_jac(X, Z)`` along S."""
    return _F.dexpT_jac_dir(X, Z, S)


def dexp_invT_jac_dir(X: Vector, Z: Vector, S: Vector) -> Matrix:
    """Directional derivative of ``dexp_invT_jac(X, Z)`` along S."""
    return _F.dexp_invT_jac_dir(X, Z, S)


def dexp_hess(X: Vector, Q: Vector, Z: Vector) -> Matrix:
    """Hessian of h(X) = Qᵀ dexp_X Z (seed 000 eq. (47)–(50)), symmetric.

    Args:
        X, Q, Z: ``(..., 3)``.
    Returns:
        ``(..., 3, 3)`` with ``H[i, j] = ∂²h/∂X_i∂X_j`` and ``Sᵀ H U = Qᵀ (D²dexp_X)(U)(S) Z``.
    """
    return _F.dexp_hess(X, Q, Z)


def dexp_inv_hess(X: Vector, Q: Vector, Z: Vector) -> Matrix:
    """Hessian of h(X) = Qᵀ dexp_X⁻¹ Z (seed 000 eq. (51)), symmetric.

    Args:
        X, Q, Z: ``(..., 3)``.
    Returns:
        ``(..., 3, 3)`` with ``H[i, j] = ∂²h/∂X_i∂X_j`` and ``Sᵀ H U = Qᵀ (D²dexp_X⁻¹)(U)(S) Z``.
    """
    return _F.dexp_inv_hess(X, Q, Z)


def dexp_form(X: Vector, Q: Vector, Z: Vector) -> Float[Array, "..."]:
    """h = Qᵀ dexp_X Z, the scalar whose ``jax.hessian`` runs the Q-contracted closed form :func:`dexp_hess` (seed 000
    eq. (47)–(50)) and whose ``jax.grad`` runs ``dexp_jac(X, Z)ᵀ Q``: write a scalar of the map with it when
    second derivatives are wanted (through ``Q @ dexp_apply(X, Z)`` a Hessian forms six directional Jacobians first).

    Args:
        X, Q, Z: ``(..., 3)``.
    Returns:
        ``(...)``.
    """
    return _F.dexp_form(X, Q, Z)


def dexp_inv_form(X: Vector, Q: Vector, Z: Vector) -> Float[Array, "..."]:
    """h = Qᵀ dexp_X⁻¹ Z, as :func:`dexp_form` (its Hessian is :func:`dexp_inv_hess`, seed 000 eq. (51)).

    Args:
        X, Q, Z: ``(..., 3)``.
    Returns:
        ``(...)``.
    """
    return _F.dexp_inv_form(X, Q, Z)


for _name in (
    "dexp",
    "dexp_inv",
    "d_dexp",
    "d_dexp_inv",
    "d2_dexp",
    "d2_dexp_inv",
    "dexp_apply",
    "dexp_inv_apply",
    "dexpT_apply",
    "dexp_invT_apply",
    "d_dexp_apply",
    "d_dexp_inv_apply",
    "dexp_jac",
    "dexp_inv_jac",
    "dexpT_jac",
    "dexp_invT_jac",
    "dexp_jac_dir",
    "dexp_inv_jac_dir",
    "dexpT_jac_dir",
    "dexp_invT_jac_dir",
    "dexp_hess",
    "dexp_inv_hess",
    "dexp_form",
    "dexp_inv_form",
):
    globals()[_name].core = getattr(_F, _name).core  # the unbatched closed form, for composition inside other cores


@batched("(3)->(3,3)", ("x",), "hat")
def hat(x: Vector) -> Matrix:
    """x̃, the skew matrix with x̃ z = x × z (seed 000 eq. (3)). ``(..., 3) -> (..., 3, 3)``."""
    return skew(x)


@batched("(3,3)->(3)", ("M",), "vee")
def vee(M: Matrix) -> Vector:
    """Inverse of :func:`hat`, applied to the skew-symmetric part of M. ``(..., 3, 3) -> (..., 3)``."""
    return unskew(M)


@batched("(3)->(3,3)", ("x",), "ad")
def ad(x: Vector) -> Matrix:
    """ad_x = x̃ on so(3). ``(..., 3) -> (..., 3, 3)``."""
    return skew(x)


@batched("(3)->(3,3)", ("u",), "adbar")
def adbar(u: Vector) -> Matrix:
    """adbar_u with ad_xᵀ u = adbar_u x; on so(3) adbar_u = ũ. ``(..., 3) -> (..., 3, 3)``."""
    return skew(u)


@batched("(3,3)->(3,3)", ("R",), "Ad")
def Ad(R: Matrix) -> Matrix:
    """Adjoint representation, Ad_R = R."""
    return R


@batched("(3,3)->(3,3)", ("R",), "Ad_inv")
def Ad_inv(R: Matrix) -> Matrix:
    """Ad_{R⁻¹} = Rᵀ."""
    return R.T


@batched("(3,3)->(3,3)", ("R",), "coAd")
def coAd(R: Matrix) -> Matrix:
    """Coadjoint Ad*_R = Ad_R^{-T} = R."""
    return R


@batched("(3,3)->(3,3)", ("R",), "inv")
def inv(R: Matrix) -> Matrix:
    """R⁻¹ = Rᵀ."""
    return R.T


@batched("(3,3),(3,3)->(3,3)", ("R1", "R2"), "compose")
def compose(R1: Matrix, R2: Matrix) -> Matrix:
    """R1 R2."""
    return R1 @ R2


@batched("(3,3),(3)->(3)", ("R", "p"), "act")
def act(R: Matrix, p: Vector) -> Vector:
    """R p: the rotation applied to a vector."""
    return R @ p


def rodrigues(x: Float[Array, " 3"]) -> tuple[Float[Array, "3 3"], Float[Array, "3 3"]]:
    """Unbatched: (R, dexp_x) with R = I + α x̃ + (β/2) x̃² and dexp_x = I + (β/2) x̃ + δ x̃² (seed 001 (2.6), (2.13))."""
    alpha, beta, delta = jnp.moveaxis(coefficients.evaluate(("alpha", "beta", "delta"), jnp.dot(x, x)), -1, 0)
    K = skew(x)
    K2 = K @ K
    eye = jnp.eye(3, dtype=x.dtype)
    return eye + alpha * K + (0.5 * beta) * K2, eye + (0.5 * beta) * K + delta * K2


def _exp_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    R = _exp(x)
    return R, skew(dexp_apply.core(x, dx)) @ R  # (D_x exp)(u) = (dexp_x u)~ exp(x̃)  (seed 001 eq. (1.3))


_exp = custom_rule("so3.exp", lambda x: rodrigues(x)[0], _exp_jvp, symbolic_zeros=False)


@batched("(3)->(3,3)", ("x",), "exp")
def exp(x: Vector) -> Matrix:
    """Rotation matrix exp(x̃) = I + α x̃ + (β/2) x̃² (seed 001 eq. (2.6)). ``(..., 3) -> (..., 3, 3)``.

    Custom_jvp: ``(D_x exp)(u) = (dexp_x u)~ exp(x̃)``, differentiable again through ``dexp_apply``'s closed forms.
    """
    return _exp(x)


def log_core(R: Float[Array, "3 3"]) -> Float[Array, " 3"]:
    """Unbatched principal logarithm, accurate for every angle in [0, π].

    φ = atan2(‖s‖, c) with s = vee(R − Rᵀ)/2 = sin φ n and c = (tr R − 1)/2. For c ≥ 0 (φ ≤ π/2): x = s / sinc φ.
    For c < 0 the axis comes from the symmetric part (R + Rᵀ)/2 − c I = (1 − c) n nᵀ (its largest column), with
    the sign of s; this stays accurate at and near φ = π, where s → 0.
    """
    c = jnp.clip(0.5 * (jnp.trace(R) - 1.0), -1.0, 1.0)
    s = unskew(R)
    phi = jnp.arctan2(jnp.linalg.norm(s), c)
    alpha = coefficients.evaluate(("alpha",), phi * phi)[..., 0]
    x_small = s / alpha
    B = 0.5 * (R + R.T) - c * jnp.eye(3, dtype=R.dtype)
    k = jnp.argmax(jnp.diag(B))
    large = c < 0
    denom = jnp.where(large, B[k, k] * (1.0 - c), 1.0)
    n = B[:, k] / jnp.sqrt(denom)
    n = jnp.where(jnp.dot(n, s) < 0, -n, n)
    return jnp.where(large, phi * n, x_small)


def _log_jvp(primals, tangents):
    (R,), (dR,) = primals, tangents
    x = _log(R)
    # spatial angular velocity of the perturbation, then ẋ = dexp_x⁻¹ ω (seed 001 eq. (2.17))
    return x, dexp_inv_apply.core(x, unskew(dR @ R.T))


_log = custom_rule("so3.log", log_core, _log_jvp, symbolic_zeros=False)


@batched("(3,3)->(3)", ("R",), "log")
def log(R: Matrix) -> Vector:
    """Principal logarithm x = log R with ‖x‖ ∈ [0, π]. ``(..., 3, 3) -> (..., 3)``.

    Accurate at and near φ = π (see :func:`log_core`). R must be a rotation matrix; the result for other matrices is
    unspecified: use :func:`log_checked` to verify, or :func:`project` first. Custom_jvp: ``dx = dexp_x⁻¹ vee(dR Rᵀ)``
    (the skew part of dR Rᵀ, i.e. the tangent projected onto the rotation group).
    """
    return _log(R)


@batched("(3,3)->(3,3)", ("M",), "project")
def project(M: Matrix) -> Matrix:
    """Nearest rotation matrix to M in the Frobenius norm (polar decomposition by SVD, det fixed to +1)."""
    u, _, vt = jnp.linalg.svd(M)
    d = jnp.sign(jnp.linalg.det(u @ vt))
    return u @ jnp.diag(jnp.array([1.0, 1.0, 1.0], M.dtype).at[2].set(d)) @ vt


def rotation_error(R: Float[Array, "3 3"]) -> Float[Array, ""]:
    """max |RᵀR − I| + |det R − 1| over the trailing 3×3 matrix (unbatched helper for checks)."""
    eye = jnp.eye(3, dtype=R.dtype)
    return jnp.max(jnp.abs(R.T @ R - eye)) + jnp.abs(jnp.linalg.det(R) - 1.0)


def log_checked(R: Matrix, tol: float = 1e-6) -> Vector:
    """:func:`log` with a runtime check (``equinox.error_if``, survives ``jit``) that R is a rotation to ``tol``."""

    def core(R):
        bad = rotation_error(R) > tol
        return _log(eqx.error_if(R, bad, f"so3.log_checked: argument 'R' is not a rotation matrix (tol={tol})"))

    return batched("(3,3)->(3)", ("R",), "log_checked")(core)(R)
