"""SE(3): twists X = (x, y) ∈ R⁶ (rotation first), poses H = [[R, r], [0, 1]], and the closed-form dexp family.

Conventions (docs/conventions.md): ``hat(X) = [[x̃, y], [0, 0]]``; ``ad_X = [[x̃, 0], [ỹ, x̃]]``; ``Ad_H = [[R, 0],
[r̃R, R]]``;
right-trivialised ``dexp_X`` (spatial twist ``V = dexp_X Ẋ``); body twist and rod strain use ``dexp_{−X}``, which is
not ``dexp_Xᵀ`` on SE(3). The translation of ``exp(X)`` is ``dexp_x y`` (SO(3) dexp), not y (seed 000 eq. (4)).

Seed 000 (Müller 2026): dexp, dexp⁻¹ eqs. (21)–(23); directional derivatives (28)–(29), (40)–(46); Jacobians of the
evaluation maps (36), (37), (39); Hessians (47)–(51). Every closed form is evaluated by the ad-polynomial recursions of
:mod:`jaxse3.lie.adpoly` with Taylor-switched coefficients (:mod:`jaxse3.lie.coefficients`). ``exp``, ``log``,
``dexp``, ``dexp_inv``, ``d_dexp``, ``d_dexp_inv`` and the evaluation maps carry custom_jvp rules.

Every function broadcasts over leading batch axes: ``(..., 6)``, ``(..., 4, 4)``, ``(..., 6, 6)``.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxse3.lie import _api, adpoly, coefficients, so3
from jaxse3.lie._algebra import SE3, skew, unskew
from jaxse3.lie.cayley import (  # Cayley map family, seed 001 §3 (plain autodiff is exact: no singularity)
    cay_ad_se3 as cay_ad,
    cay_half_inv_se3 as cay_half_inv,
    cay_half_se3 as cay_half,
    cay_inv_se3 as cay_inv,
    cay_se3 as cay,
    d_dcay_half_inv_se3 as d_dcay_half_inv,
    d_dcay_half_se3 as d_dcay_half,
    d_dcay_inv_se3 as d_dcay_inv,
    d_dcay_se3 as d_dcay,
    dcay_half_inv_se3 as dcay_half_inv,
    dcay_half_se3 as dcay_half,
    dcay_inv_se3 as dcay_inv,
    dcay_se3 as dcay,
)
from jaxse3.lie.rules import family_poly
from jaxse3.lie.shapes import as_float, batched
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
    "from_rotation_translation",
    "dexp",
    "dexp_inv",
    "d_dexp",
    "d_dexp_inv",
    "d2_dexp",
    "d2_dexp_inv",
    "dexp_apply",
    "dexp_inv_apply",
    "d_dexp_apply",
    "dexp_rates",
    "exp_acceleration",
    "exp_jerk",
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
    "cay_ad",
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

Vector = Float[Array, "... 6"]  # algebra coordinates, rotation first, batched over leading axes
Matrix = Float[Array, "... 6 6"]
Pose = Float[Array, "... 4 4"]  # homogeneous transforms [[R, r], [0, 1]]
Rotation = Float[Array, "... 3 3"]
Point = Float[Array, "... 3"]
_F = _api.build(SE3)  # the batched, shape-checked closed forms with their custom_jvp rules (seed 000)


def dexp(X: Vector) -> Matrix:
    """dexp_X (6×6), right-trivialised (seed 000 eq. (21), (23)).

    Args:
        X: algebra coordinates ``(..., 6)``, rotation part first.
    Returns:
        ``(..., 6, 6)``. Carries a custom_jvp rule whose tangent is ``d_dexp``.
    """
    return _F.dexp(X)


def dexp_inv(X: Vector) -> Matrix:
    """dexp_X⁻¹ (6×6), right-trivialised (seed 000 eq. (22)).

    Args:
        X: algebra coordinates ``(..., 6)``, rotation part first.
    Returns:
        ``(..., 6, 6)``. Carries a custom_jvp rule whose tangent is ``d_dexp_inv``.
    """
    return _F.dexp_inv(X)


def d_dexp(X: Vector, U: Vector) -> Matrix:
    """(D_X dexp_X)(U): directional derivative (seed 000 eq. (28), (30)–(31)).

    Args:
        X, U: ``(..., 6)``.
    Returns:
        ``(..., 6, 6)``. Its custom_jvp rule evaluates ``d2_dexp`` (closed-form second derivative).
    """
    return _F.d_dexp(X, U)


def d_dexp_inv(X: Vector, U: Vector) -> Matrix:
    """(D_X dexp_X⁻¹)(U): directional derivative (seed 000 eq. (29)).

    Args:
        X, U: ``(..., 6)``.
    Returns:
        ``(..., 6, 6)``. Its custom_jvp rule evaluates ``d2_dexp_inv`` (closed-form second derivative).
    """
    return _F.d_dexp_inv(X, U)


def d2_dexp(X: Vector, U: Vector, S: Vector) -> Matrix:
    """(D²_X dexp_X)(U)(S), symmetric in U and S (seed 000 eq. (40)–(46)).

    Args:
        X, U, S: ``(..., 6)``.
    Returns:
        ``(..., 6, 6)``.
    """
    return _F.d2_dexp(X, U, S)


def d2_dexp_inv(X: Vector, U: Vector, S: Vector) -> Matrix:
    """(D²_X dexp_X⁻¹)(U)(S), symmetric in U and S (seed 000 eq. (40), (43), (45)).

    Args:
        X, U, S: ``(..., 6)``.
    Returns:
        ``(..., 6, 6)``.
    """
    return _F.d2_dexp_inv(X, U, S)


def dexp_apply(X: Vector, Z: Vector) -> Vector:
    """Evaluation map X ↦ dexp_X Z.

    Args:
        X, Z: ``(..., 6)``.
    Returns:
        ``(..., 6)``. Custom_jvp rule: ``dexp_jac(X, Z) dX + dexp_apply(X, dZ)``, itself differentiable in
        closed form, so ``jax.jacfwd``/``jacrev``/``hessian`` run the hand-derived formulas.
    """
    return _F.dexp_apply(X, Z)


def dexp_inv_apply(X: Vector, Z: Vector) -> Vector:
    """Evaluation map X ↦ dexp_X⁻¹ Z.

    Args:
        X, Z: ``(..., 6)``.
    Returns:
        ``(..., 6)``. Custom_jvp rule: ``dexp_inv_jac(X, Z) dX + dexp_inv_apply(X, dZ)``, itself differentiable in
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

    By matrix-vector products only (no 6×6 matrix is formed): the cheap way to differentiate
    ``dexp_apply(X, Z)`` along one direction (e.g. the rate of ``dexp_X Z`` along a curve X(t)).

    Args:
        X, U, Z: ``(..., 6)``.
    Returns:
        ``(..., 6)``. Custom_jvp rule: ``dexp_jac_dir(X, Z, dX) @ U`` plus itself in dU and dZ (closed forms).
    """
    return _F.d_dexp_apply(X, U, Z)


def dexp_rates(
    X: Vector, U: Vector, W: Vector, s: Float[Array, "... m"]
) -> tuple[Float[Array, "... m 6 6"], Float[Array, "... m 6"], Float[Array, "... m 6"]]:
    """dexp along the ray Y = s X, with the velocity and acceleration of exp(Ŷ), for many scales s at once.

    For Y(t) = s X(t) with Ẋ = U and Ẍ = W, at each s of ``s``: ``dexp_Y`` and the right-trivialised velocity
    ``dexp_Y Ẏ`` and acceleration ``dexp_Y Ÿ + (D_Y dexp_Y)(Ẏ) Ẏ`` of exp(Ŷ) (seed 000 eqs. (21), (28)): the
    equals of ``dexp(sX)``, ``dexp_apply(sX, sU)`` and ``dexp_apply(sX, sW) + d_dexp_apply(sX, sU, sU)``, with the
    powers of ad_X and their products with U and W formed once for all s (a rod's intervals of constant strain, seed
    003 eq. (C1)). Plain JAX (autodiff differentiates the closed form; no custom rule).

    Args:
        X, U, W: ``(..., 6)``. s: ``(..., m)``.
    Returns:
        ``(..., m, 6, 6)``, ``(..., m, 6)``, ``(..., m, 6)``.
    """
    X, U, W, s = as_float(X, U, W, s)
    for name, a in (("X", X), ("U", U), ("W", W)):
        if a.ndim < 1 or a.shape[-1] != 6:
            raise ValueError(f"dexp_rates: argument '{name}' must have shape (..., 6), got {tuple(a.shape)}")
    if s.ndim < 1:
        raise ValueError(f"dexp_rates: argument 's' must have shape (..., m) (the scales), got {tuple(s.shape)}")
    return _dexp_rates(X, U, W, s)


@functools.partial(jnp.vectorize, signature="(k),(k),(k),(m)->(m,k,k),(m,k),(m,k)")
def _dexp_rates(X, U, W, s):
    return adpoly.ray_rates(SE3, X, U, W, s, family_poly(SE3, X, "dexp", 1, scale=s))


@batched("(6),(6),(6)->(6)", ("X", "Xd", "Xdd"), "exp_acceleration")
def exp_acceleration(X: Vector, Xd: Vector, Xdd: Vector) -> Vector:
    """V̇ = dexp_X Ẍ + (D_X dexp)(Ẋ) Ẋ (seed 000 eq. (12)): the rate of the right-trivialised (spatial) twist
    V = dexp_X Ẋ = (Ḣ H⁻¹)^∨ of H(t) = exp(X̂(t)) at X, Ẋ, Ẍ; for the body twist of exp(X̂), pass −X, −Ẋ, −Ẍ and
    negate (``dexp_{−X}``, as a rod's strain). By :func:`dexp_apply` and :func:`d_dexp_apply`, so its derivatives run
    their closed-form rules.

    Args:
        X, Xd, Xdd: ``(..., 6)``.
    Returns:
        ``(..., 6)``.
    """
    return dexp_apply(X, Xdd) + d_dexp_apply(X, Xd, Xd)


@batched("(6),(6),(6),(6)->(6)", ("X", "Xd", "Xdd", "Xddd"), "exp_jerk")
def exp_jerk(X: Vector, Xd: Vector, Xdd: Vector, Xddd: Vector) -> Vector:
    """V̈ = dexp_X X⃛ + 2(D_X dexp)(Ẋ) Ẍ + (D_X dexp)(Ẍ) Ẋ + (D²_X dexp)(Ẋ)(Ẋ) Ẋ (seed 000 eq. (13)): the second rate
    of the spatial twist of exp(X̂(t)) (:func:`exp_acceleration`), by :func:`dexp_apply`, :func:`d_dexp_apply` and
    :func:`d2_dexp` with their rules.

    Args:
        X, Xd, Xdd, Xddd: ``(..., 6)``.
    Returns:
        ``(..., 6)``.
    """
    return dexp_apply(X, Xddd) + 2.0 * d_dexp_apply(X, Xd, Xdd) + d_dexp_apply(X, Xdd, Xd) + d2_dexp(X, Xd, Xd) @ Xd


def d_dexp_inv_apply(X: Vector, U: Vector, Z: Vector) -> Vector:
    """(D_X dexp_X⁻¹)(U) Z = ``d_dexp_inv(X, U) @ Z = dexp_inv_jac(X, Z) @ U``, matrix-free.

    By matrix-vector products only (no 6×6 matrix is formed): the cheap way to differentiate
    ``dexp_inv_apply(X, Z)`` along one direction (e.g. the rate of ``dexp_X⁻¹ Z`` along a curve X(t)).

    Args:
        X, U, Z: ``(..., 6)``.
    Returns:
        ``(..., 6)``. Custom_jvp rule: ``dexp_inv_jac_dir(X, Z, dX) @ U`` plus itself in dU and dZ (closed forms).
    """
    return _F.d_dexp_inv_apply(X, U, Z)


def dexp_jac(X: Vector, Z: Vector) -> Matrix:
    """∂(dexp_X Z)/∂X, rows = outputs (seed 000 eq. (36)).

    Args:
        X, Z: ``(..., 6)``.
    Returns:
        ``(..., 6, 6)``; ``dexp_jac(X, Z) @ U == d_dexp(X, U) @ Z``.
    """
    return _F.dexp_jac(X, Z)


def dexp_inv_jac(X: Vector, Z: Vector) -> Matrix:
    """∂(dexp_X⁻¹ Z)/∂X, rows = outputs (seed 000 eq. (37)).

    Args:
        X, Z: ``(..., 6)``.
    Returns:
        ``(..., 6, 6)``; ``dexp_inv_jac(X, Z) @ U == d_dexp_inv(X, U) @ Z``.
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
        X, Q, Z: ``(..., 6)``.
    Returns:
        ``(..., 6, 6)`` with ``H[i, j] = ∂²h/∂X_i∂X_j`` and ``Sᵀ H U = Qᵀ (D²dexp_X)(U)(S) Z``.
    """
    return _F.dexp_hess(X, Q, Z)


def dexp_inv_hess(X: Vector, Q: Vector, Z: Vector) -> Matrix:
    """Hessian of h(X) = Qᵀ dexp_X⁻¹ Z (seed 000 eq. (51)), symmetric.

    Args:
        X, Q, Z: ``(..., 6)``.
    Returns:
        ``(..., 6, 6)`` with ``H[i, j] = ∂²h/∂X_i∂X_j`` and ``Sᵀ H U = Qᵀ (D²dexp_X⁻¹)(U)(S) Z``.
    """
    return _F.dexp_inv_hess(X, Q, Z)


def dexp_form(X: Vector, Q: Vector, Z: Vector) -> Float[Array, "..."]:
    """h = Qᵀ dexp_X Z, the scalar whose ``jax.hessian`` runs the Q-contracted closed form :func:`dexp_hess` (seed 000
    eq. (47)–(50)) and whose ``jax.grad`` runs ``dexp_jac(X, Z)ᵀ Q``: write a scalar of the map with it when
    second derivatives are wanted (through ``Q @ dexp_apply(X, Z)`` a Hessian forms six directional Jacobians first).

    Args:
        X, Q, Z: ``(..., 6)``.
    Returns:
        ``(...)``.
    """
    return _F.dexp_form(X, Q, Z)


def dexp_inv_form(X: Vector, Q: Vector, Z: Vector) -> Float[Array, "..."]:
    """h = Qᵀ dexp_X⁻¹ Z, as :func:`dexp_form` (its Hessian is :func:`dexp_inv_hess`, seed 000 eq. (51)).

    Args:
        X, Q, Z: ``(..., 6)``.
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


def _pose(R, r):
    bottom = jnp.array([[0.0, 0.0, 0.0, 1.0]], dtype=R.dtype)
    return jnp.concatenate([jnp.concatenate([R, r[:, None]], axis=1), bottom], axis=0)


@batched("(3,3),(3)->(4,4)", ("R", "r"), "from_rotation_translation")
def from_rotation_translation(R: Rotation, r: Point) -> Pose:
    """H = [[R, r], [0, 1]]."""
    return _pose(R, r)


def _hat(X):
    return jnp.concatenate([jnp.concatenate([skew(X[:3]), X[3:, None]], axis=1), jnp.zeros((1, 4), X.dtype)], 0)


@batched("(6)->(4,4)", ("X",), "hat")
def hat(X: Vector) -> Pose:
    """X̂ = [[x̃, y], [0, 0]] (seed 000 eq. (3)). ``(..., 6) -> (..., 4, 4)``."""
    return _hat(X)


@batched("(4,4)->(6)", ("M",), "vee")
def vee(M: Pose) -> Vector:
    """Inverse of :func:`hat`: (vee of the skew part of the rotation block, upper-right column)."""
    return jnp.concatenate([unskew(M[:3, :3]), M[:3, 3]])


@batched("(6)->(6,6)", ("X",), "ad")
def ad(X: Vector) -> Matrix:
    """ad_X = [[x̃, 0], [ỹ, x̃]] (seed 000 eq. (19)); ad_X Y = vee([X̂, Ŷ])."""
    return SE3.ad(X)


@batched("(6)->(6,6)", ("U",), "adbar")
def adbar(U: Vector) -> Matrix:
    """adbar_U = [[ũ, ṽ], [ṽ, 0]] (seed 000 eq. (38)), defined by ad_Xᵀ U = adbar_U X (it is not ad_Uᵀ)."""
    return SE3.adbar(U)


def _Ad(H):
    R, rt = H[:3, :3], skew(H[:3, 3])
    return jnp.block([[R, jnp.zeros_like(R)], [rt @ R, R]])


@batched("(4,4)->(6,6)", ("H",), "Ad")
def Ad(H: Pose) -> Matrix:
    """Ad_H = [[R, 0], [r̃R, R]], so that Ad_H Y = vee(H Ŷ H⁻¹) and Ad_{exp X} = expm(ad_X) (seed 001 (2.56), (2.59))."""
    return _Ad(H)


@batched("(4,4)->(6,6)", ("H",), "Ad_inv")
def Ad_inv(H: Pose) -> Matrix:
    """Ad_{H⁻¹} = [[Rᵀ, 0], [−Rᵀr̃, Rᵀ]]."""
    R, rt = H[:3, :3], skew(H[:3, 3])
    return jnp.block([[R.T, jnp.zeros_like(R)], [-R.T @ rt, R.T]])


@batched("(4,4)->(6,6)", ("H",), "coAd")
def coAd(H: Pose) -> Matrix:
    """Coadjoint Ad*_H = Ad_H^{-T} = [[R, r̃R], [0, R]], acting on wrenches (moment, force)."""
    R, rt = H[:3, :3], skew(H[:3, 3])
    return jnp.block([[R, rt @ R], [jnp.zeros_like(R), R]])


@batched("(4,4)->(4,4)", ("H",), "inv")
def inv(H: Pose) -> Pose:
    """H⁻¹ = [[Rᵀ, −Rᵀr], [0, 1]]."""
    R = H[:3, :3]
    return _pose(R.T, -R.T @ H[:3, 3])


@batched("(4,4),(4,4)->(4,4)", ("H1", "H2"), "compose")
def compose(H1: Pose, H2: Pose) -> Pose:
    """H1 H2."""
    return H1 @ H2


@batched("(4,4),(3)->(3)", ("H", "p"), "act")
def act(H: Pose, p: Point) -> Point:
    """H applied to a point: R p + r."""
    return H[:3, :3] @ p + H[:3, 3]


def _exp_plain(X):
    R, V = so3.rodrigues(X[:3])
    return _pose(R, V @ X[3:])  # translation dexp_x y (seed 000 eq. (4), (17))


def _exp_jvp(primals, tangents):
    (X,), (dX,) = primals, tangents
    H = _exp(X)
    return H, _hat(dexp_apply.core(X, dX)) @ H  # (D_X exp)(U) = (dexp_X U)^ exp(X̂)  (seed 000 eq. (1))


_exp = custom_rule("se3.exp", _exp_plain, _exp_jvp, symbolic_zeros=False)


@batched("(6)->(4,4)", ("X",), "exp")
def exp(X: Vector) -> Pose:
    """exp(X̂) = [[exp x̃, dexp_x y], [0, 1]] (seed 000 eqs. (4), (17)). ``(..., 6) -> (..., 4, 4)``.

    Custom_jvp: ``(D_X exp)(U) = (dexp_X U)^ exp(X̂)``, differentiable again through ``dexp_apply``'s closed forms.
    """
    return _exp(X)


def log_core(H: Float[Array, "4 4"]) -> Float[Array, " 6"]:
    """Unbatched: x = log R (:func:`jaxse3.lie.so3.log_core`), y = dexp_x⁻¹ r = r − ½ x × r + ((1−γ)/φ²) x × (x × r)."""
    x = so3.log_core(H[:3, :3])
    r = H[:3, 3]
    b2 = coefficients.evaluate(("so3_b2",), jnp.dot(x, x))[..., 0]
    xr = jnp.cross(x, r)
    return jnp.concatenate([x, r - 0.5 * xr + b2 * jnp.cross(x, xr)])


def _log_jvp(primals, tangents):
    (H,), (dH,) = primals, tangents
    X = _log(H)
    R, r = H[:3, :3], H[:3, 3]
    W = dH[:3, :3] @ R.T
    dV = jnp.concatenate([unskew(W), dH[:3, 3] - W @ r])  # spatial twist vee(dH H⁻¹), rotation block skew-projected
    return X, dexp_inv_apply.core(X, dV)


_log = custom_rule("se3.log", log_core, _log_jvp, symbolic_zeros=False)


@batched("(4,4)->(6)", ("H",), "log")
def log(H: Pose) -> Vector:
    """Principal logarithm X = log H with rotation angle in [0, π]. ``(..., 4, 4) -> (..., 6)``.

    Accurate at and near φ = π. H must be in SE(3); for other matrices the result is unspecified: use
    :func:`log_checked` to verify, or :func:`project` first. Custom_jvp: ``dX = dexp_X⁻¹ vee(dH H⁻¹)``.
    """
    return _log(H)


def pose_error(H: Float[Array, "4 4"]) -> Float[Array, ""]:
    """Unbatched: rotation error of the 3×3 block plus the deviation of the bottom row from (0, 0, 0, 1)."""
    bottom = jnp.array([0.0, 0.0, 0.0, 1.0], H.dtype)
    return so3.rotation_error(H[:3, :3]) + jnp.max(jnp.abs(H[3] - bottom))


def log_checked(H: Pose, tol: float = 1e-6) -> Vector:
    """:func:`log` with a runtime check (``equinox.error_if``, survives ``jit``) that H is in SE(3) to ``tol``."""

    def core(H):
        bad = pose_error(H) > tol
        return _log(eqx.error_if(H, bad, f"se3.log_checked: argument 'H' is not in SE(3) (tol={tol})"))

    return batched("(4,4)->(6)", ("H",), "log_checked")(core)(H)


@batched("(4,4)->(4,4)", ("M",), "project")
def project(M: Pose) -> Pose:
    """Nearest element of SE(3): rotation block projected by :func:`jaxse3.lie.so3.project`, bottom row reset."""
    return _pose(so3.project.core(M[:3, :3]), M[:3, 3])
