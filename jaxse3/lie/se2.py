"""SE(2) as the planar subgroup of SE(3): twists X = (ω, v_x, v_y) ∈ R³, poses H = [[R, r], [0, 1]] (3×3).

A planar motion of SE(3) — rotation about z, translation in the xy-plane — has twists with only the components
``PLANE`` = (2, 3, 4) of an se(3) twist (ω_z, v_x, v_y); they form a subalgebra, closed under ``ad`` and invariant
under ``Ad`` of planar poses. Every map here is therefore the restriction of its :mod:`jaxse3.lie.se3` counterpart to
that subalgebra (tested): ``ad(X) = se3.ad(X₆)[PLANE][:, PLANE]`` and likewise ``Ad``, ``Ad_inv``, ``coAd`` (acting on
the wrench components (m_z, f_x, f_y)) and ``dexp``, with X₆ the embedded twist. On the subalgebra ad_X satisfies
ad_X³ = −ω² ad_X, so the degree-4 ad-polynomials of SE(3) collapse to degree 2 with SO(3)'s coefficients:

    exp(X̂) = [[R(ω), V(ω) v], [0, 1]],  R(ω) = I + α ω J + (β/2) ω² J²,  V(ω) = I + (β/2) ω J + δ ω² J²
    dexp_X = I + (β/2) ad_X + δ ad_X²                                   (seed 000 eqs. (10), (21)–(23) on se(2))

with J the planar rotation by π/2 and α, β, δ the Taylor-switched base functions of
:mod:`jaxse3.lie.coefficients` (finite with finite derivatives at ω = 0 exactly). The functions are plain JAX
(autodiff runs through the closed forms) and broadcast over leading axes: ``(..., 3)``, ``(..., 3, 3)``; the
derivatives of dexp that the rod's derivative recursions use (``d_dexp``, the evaluation-map Jacobians ``dexp_jac``,
``dexpT_jac`` and ``dexp_jac_dir``) are closed forms too, from b = β/2 = a₁ − ω²a₃ and δ = a₂ − ω²a₄ of seed 000
eq. (23) and their derivatives in ω through the bar and breve coefficients (eqs. (31), (44)): ad-polynomials of
degree 2 plus a rank-one column, a few dozen flops where autodiff of the 3×3 forms costs several times more.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxse3.lie import coefficients

__all__ = [
    "PLANE",
    "ad",
    "adbar",
    "exp",
    "Ad",
    "Ad_inv",
    "coAd",
    "dexp",
    "d_dexp",
    "dexp_apply",
    "dexpT_apply",
    "dexp_jac",
    "dexpT_jac",
    "dexp_jac_dir",
]

#: The components of an se(3) twist (rotation first) that a planar twist keeps: ω_z, v_x, v_y; of a wrench: m_z, f_x,
#: f_y.
PLANE = (2, 3, 4)

Vector = Float[Array, "... 3"]
Matrix = Float[Array, "... 3 3"]


def _check(fn: str, **arrays: Array) -> None:
    """Trace-time shape check: twists and wrenches end in (3,), poses and operators in (3, 3)."""
    for name, a in arrays.items():
        want, text = ((3, 3), "(..., 3, 3)") if name == "H" else ((3,), "(..., 3)")
        if jnp.shape(a)[-len(want) :] != want:
            raise ValueError(f"se2.{fn}: '{name}' must have shape {text}, got {jnp.shape(a)}")


def _matrix(rows: list[list[Array]]) -> Array:
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def ad(X: Vector) -> Matrix:
    """ad_X = [[0, 0, 0], [v_y, 0, −ω], [−v_x, ω, 0]]: ad_X Y = [X, Y] (``se3.ad`` on the plane)."""
    _check("ad", X=X)
    w, a, b = X[..., 0], X[..., 1], X[..., 2]
    z = jnp.zeros_like(w)
    return _matrix([[z, z, z], [b, z, -w], [-a, w, z]])


def adbar(U: Vector) -> Matrix:
    """adbar_U with ad_Xᵀ U = adbar_U X for a wrench U = (m_z, f_x, f_y) (``se3.adbar`` on the plane)."""
    _check("adbar", U=U)
    m, f, g = U[..., 0], U[..., 1], U[..., 2]
    z = jnp.zeros_like(m)
    return _matrix([[z, -g, f], [g, z, z], [-f, z, z]])


def _coefficients(w: Array) -> tuple[Array, Array, Array]:
    c = coefficients.evaluate(("alpha", "beta", "delta"), w * w)
    return c[..., 0], c[..., 1], c[..., 2]


def exp(X: Vector) -> Float[Array, "... 3 3"]:
    """exp(X̂) = [[R(ω), V(ω) v], [0, 1]] (``se3.exp`` on the plane). ``(..., 3) -> (..., 3, 3)``."""
    _check("exp", X=X)
    w, a, b = X[..., 0], X[..., 1], X[..., 2]
    alpha, beta, delta = _coefficients(w)
    c, s = 1.0 - 0.5 * beta * w * w, alpha * w  # cos ω, sin ω
    d, e = 1.0 - delta * w * w, 0.5 * beta * w  # V = d I + e J
    z, one = jnp.zeros_like(w), jnp.ones_like(w)
    return _matrix([[c, -s, d * a - e * b], [s, c, e * a + d * b], [z, z, one]])


def Ad(H: Float[Array, "... 3 3"]) -> Matrix:
    """Ad_H = [[1, 0, 0], [r_y, R], [−r_x, R]] (``se3.Ad`` on the plane)."""
    _check("Ad", H=H)
    R, x, y = H[..., :2, :2], H[..., 0, 2], H[..., 1, 2]
    z, one = jnp.zeros_like(x), jnp.ones_like(x)
    return _matrix([[one, z, z], [y, R[..., 0, 0], R[..., 0, 1]], [-x, R[..., 1, 0], R[..., 1, 1]]])


def Ad_inv(H: Float[Array, "... 3 3"]) -> Matrix:
    """Ad_{H⁻¹} = [[1, 0, 0], [−(Rᵀr̃)…], [Rᵀ]] (``se3.Ad_inv`` on the plane)."""
    _check("Ad_inv", H=H)
    R, x, y = H[..., :2, :2], H[..., 0, 2], H[..., 1, 2]
    c, s = R[..., 0, 0], R[..., 1, 0]
    xi, yi = -(c * x + s * y), s * x - c * y  # r' = −Rᵀ r
    z, one = jnp.zeros_like(x), jnp.ones_like(x)
    return _matrix([[one, z, z], [yi, c, s], [-xi, -s, c]])


def coAd(H: Float[Array, "... 3 3"]) -> Matrix:
    """Coadjoint Ad*_H = Ad_H^{−T} = Ad_{H⁻¹}ᵀ, acting on wrenches (m_z, f_x, f_y) (``se3.coAd`` on the plane)."""
    _check("coAd", H=H)
    return jnp.swapaxes(Ad_inv(H), -1, -2)


def dexp(X: Vector) -> Matrix:
    """dexp_X = I + (β/2) ad_X + δ ad_X², right-trivialised (``se3.dexp`` on the plane). ``(..., 3) -> (..., 3, 3)``."""
    _check("dexp", X=X)
    _, beta, delta = _coefficients(X[..., 0])
    A = ad(X)
    eye = jnp.eye(3, dtype=A.dtype)
    return eye + (0.5 * beta)[..., None, None] * A + delta[..., None, None] * (A @ A)


def _dexp_rates(w: Array, second: bool = False) -> tuple[Array, ...]:
    """(b, d, b', d'), with ``second`` also (b'', d''), of dexp_X = I + b ad_X + d ad_X² (b = β/2, d = δ) and their
    ω-derivatives: on the plane ad³ = −t ad (t = ω²), so b = a₁ − t a₃ and d = a₂ − t a₄ of seed 000 eq. (23), and with
    ā = 2 da/dt, ă = 2 dā/dt (eqs. (31), (44)) b' = ω(ā₁ − 2a₃ − t ā₃), b'' = ā₁ − 2a₃ − t ā₃ + t(ă₁ − 4ā₃ − t ă₃),
    d alike with (a₂, a₄) — all Taylor-switched, finite at ω = 0."""
    t = w * w
    names = ("a1", "a2", "a3", "a4", "a1_bar", "a2_bar", "a3_bar", "a4_bar")
    c = coefficients.evaluate(names + (("a1_brev", "a2_brev", "a3_brev", "a4_brev") if second else ()), t)
    a1, a2, a3, a4, a1b, a2b, a3b, a4b = (c[..., i] for i in range(8))
    b_t, d_t = a1b - 2 * a3 - t * a3b, a2b - 2 * a4 - t * a4b  # 2 db/dt, 2 dd/dt
    first = (a1 - t * a3, a2 - t * a4, w * b_t, w * d_t)
    if not second:
        return first
    a1v, a2v, a3v, a4v = (c[..., i] for i in range(8, 12))
    b_tt, d_tt = a1v - 4 * a3b - t * a3v, a2v - 4 * a4b - t * a4v  # 4 d²b/dt², 4 d²d/dt²
    return (*first, b_t + t * b_tt, d_t + t * d_tt)


def _apply(M: Matrix, x: Vector) -> Vector:
    return jnp.einsum("...ij,...j->...i", M, x)


def _scaled(c: Array, M: Matrix) -> Matrix:
    return c[..., None, None] * M


def _first_column(v: Vector) -> Matrix:
    """v e₀ᵀ: the matrix whose first column is v (the derivative along ω of a coefficient)."""
    return v[..., :, None] * jnp.asarray([1.0, 0.0, 0.0], v.dtype)


def d_dexp(X: Vector, U: Vector) -> Matrix:
    """(D_X dexp_X)(U) = b ad_U + d (ad_U ad_X + ad_X ad_U) + u_ω (b′ ad_X + d′ ad_X²), the directional derivative of
    :func:`dexp` (``se3.d_dexp`` on the plane), in closed form."""
    _check("d_dexp", X=X, U=U)
    b, d, b1, d1 = _dexp_rates(X[..., 0])
    A, B = ad(X), ad(jnp.broadcast_to(U, jnp.shape(X)))
    u = jnp.broadcast_to(U, jnp.shape(X))[..., 0]
    return _scaled(b, B) + _scaled(d, B @ A + A @ B) + _scaled(u, _scaled(b1, A) + _scaled(d1, A @ A))


def dexp_apply(X: Vector, Z: Vector) -> Vector:
    """dexp_X Z."""
    _check("dexp_apply", X=X, Z=Z)
    return jnp.einsum("...ij,...j->...i", dexp(X), Z)


def dexpT_apply(X: Vector, Z: Vector) -> Vector:
    """dexp_Xᵀ Z."""
    _check("dexpT_apply", X=X, Z=Z)
    return jnp.einsum("...ji,...j->...i", dexp(X), Z)


def dexp_jac(X: Vector, Z: Vector) -> Matrix:
    """∂(dexp_X Z)/∂X = −b ad_Z − d (ad_X ad_Z + ad_{ad_X Z}) + (b′ ad_X Z + d′ ad_X² Z) e₀ᵀ, rows = outputs
    (``se3.dexp_jac`` on the plane), in closed form."""
    _check("dexp_jac", X=X, Z=Z)
    b, d, b1, d1 = _dexp_rates(X[..., 0])
    A = ad(X)
    AZ = _apply(A, Z)
    rate = b1[..., None] * AZ + d1[..., None] * _apply(A, AZ)
    return -_scaled(b, ad(Z)) - _scaled(d, A @ ad(Z) + ad(AZ)) + _first_column(rate)


def dexpT_jac(X: Vector, Z: Vector) -> Matrix:
    """∂(dexp_Xᵀ Z)/∂X = b adbar_Z + d (ad_Xᵀ adbar_Z + adbar_{ad_Xᵀ Z}) + (b′ ad_Xᵀ Z + d′ (ad_Xᵀ)² Z) e₀ᵀ
    (``se3.dexpT_jac`` on the plane), in closed form."""
    _check("dexpT_jac", X=X, Z=Z)
    b, d, b1, d1 = _dexp_rates(X[..., 0])
    At = jnp.swapaxes(ad(X), -1, -2)
    AtZ = _apply(At, Z)
    rate = b1[..., None] * AtZ + d1[..., None] * _apply(At, AtZ)
    return (
        _scaled(b, adbar(jnp.broadcast_to(Z, jnp.shape(AtZ))))
        + _scaled(d, At @ adbar(Z) + adbar(AtZ))
        + (_first_column(rate))
    )


def dexp_jac_dir(X: Vector, Z: Vector, S: Vector) -> Matrix:
    """The derivative of ``dexp_jac(X, Z)`` along S: U ↦ (D²_X dexp_X)(U)(S) Z (``se3.dexp_jac_dir`` on the plane),
    in closed form: the derivative along S of every factor of :func:`dexp_jac` (δ ad_X = ad_S, δb = b′ s_ω,
    δb′ = b″ s_ω)."""
    _check("dexp_jac_dir", X=X, Z=Z, S=S)
    _, d, b1, d1, b2, d2 = _dexp_rates(X[..., 0], second=True)
    shape = jnp.broadcast_shapes(jnp.shape(X), jnp.shape(Z), jnp.shape(S))
    Z, S = jnp.broadcast_to(Z, shape), jnp.broadcast_to(S, shape)
    A, AS, adZ = ad(X), ad(S), ad(Z)
    s = S[..., 0]
    AZ, SZ = _apply(A, Z), _apply(AS, Z)
    rate = (
        (b2 * s)[..., None] * AZ
        + b1[..., None] * SZ
        + (d2 * s)[..., None] * _apply(A, AZ)
        + d1[..., None] * (_apply(AS, AZ) + _apply(A, SZ))
    )
    return (
        -_scaled(b1 * s, adZ) - _scaled(d1 * s, A @ adZ + ad(AZ)) - _scaled(d, AS @ adZ + ad(SZ)) + _first_column(rate)
    )
