"""Polynomials in ad_X and all their derivatives, written once for so(3) and se(3) (seed 000 §3–§5).

Every closed form of seed 000 has the shape ``F(X) = Σ_{i=0}^{N-1} c_i P_i`` with ``P_i = ad_X^i`` (eq. (20)) and scalar
coefficients ``c_i(t)``, ``t = φ²``:

* dexp_X:   ``c = (1, a1, a2, a3, a4)`` (eq. (21)),  dexp_X⁻¹: ``c = (1, b1, b2, 0, b4)`` (eq. (22));
* the k-th order approximations of §5–§6: constant ``c_i = 1/(i+1)!`` or ``B_i/i!`` and N = k + 1, k + 2, k + 3.

Writing ``c̄_i = 2 dc_i/dt`` and ``c̆_i = 2 dc̄_i/dt`` (so ``(D_X c_i)(U) = ξ c̄_i`` with ``ξ = x₀ᵀU``, eq. (30)), the
paper's formulas follow from three recursions, which are what this module evaluates:

* ``DP_i(U) = B P_{i−1} + A DP_{i−1}(U)`` (eq. (24)), A = ad_X, B = ad_U;
* ``D²P_i(U)(S) = B DP_{i−1}(S) + C DP_{i−1}(U) + A D²P_{i−1}(U)(S)`` (eq. (41)), C = ad_S;
* ``J_i = A J_{i−1} − ad_{Z_{i−1}}`` with ``Z_i = P_i Z``, so that ``DP_i(U) Z = J_i U`` (Table 1, eqs. (55)–(56)).

From them: the directional derivatives (28)/(29) and (40), the Jacobians of the evaluation maps (36), (37), (39), the
Hessians (47)–(51), and the directional derivative of the Jacobian, ``D_S J`` (the S-contraction of the same second
derivative, ``(D_S J) U = (D²F)(U)(S) Z``; ``Qᵀ (D_S J) = (H(Q) S)ᵀ``), which the custom_jvp rule of the Jacobian uses.

All functions act on single (unbatched) vectors. Coefficients may be Python floats; an exact ``0.0`` skips its term.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxse3.lie._algebra import AdForm, Algebra, dense

Scalar = float | jnp.ndarray


class Poly(NamedTuple):
    """Coefficients c_i, c̄_i = 2 dc_i/dt, c̆_i = 2 dc̄_i/dt of ``F(X) = Σ c_i ad_X^i``, i = 0 … N−1."""

    c: Sequence[Scalar]
    cbar: Sequence[Scalar]
    cbrev: Sequence[Scalar]


def _nz(c: Scalar) -> bool:
    return not (isinstance(c, (int, float)) and c == 0)


def _outer(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    a, b = dense(a), dense(b)
    return a[:, None] * b[None, :]


def _sym(m: jnp.ndarray) -> jnp.ndarray:
    return m + m.T


def _acc(total, term):
    return term if total is None else total + term


def _or_zeros(total, shape, dtype):
    return jnp.zeros(shape, dtype) if total is None else total


def value(alg: Algebra, X: jnp.ndarray, p: Poly) -> jnp.ndarray:
    """F(X) = Σ c_i ad_X^i (seed 000 eqs. (21), (22))."""
    A = alg.ad_form(X)
    P = out = None
    for i in range(1, len(p.c)):
        P = A if i == 1 else A @ P
        if _nz(p.c[i]):
            out = _acc(out, p.c[i] * P)
    return p.c[0] * jnp.eye(alg.dim, dtype=X.dtype) + dense(_or_zeros(out, (alg.dim, alg.dim), X.dtype))


def derivative(alg: Algebra, X: jnp.ndarray, U: jnp.ndarray, p: Poly) -> jnp.ndarray:
    """(D_X F)(U) = Σ c_i DP_i(U) + ξ Σ c̄_i P_i, ξ = x₀ᵀU (seed 000 eqs. (28), (29))."""
    A, B = alg.ad_form(X), alg.ad_form(U)
    xi = jnp.dot(alg.rot(X), U)
    P = jnp.eye(alg.dim, dtype=X.dtype)
    DP = None
    out = None
    for i in range(1, len(p.c)):
        DP = B if i == 1 else B @ P + A @ DP  # DP_1 = B: no product with the zero matrix
        P = A if i == 1 else A @ P
        if _nz(p.c[i]):
            out = _acc(out, p.c[i] * DP)
        if _nz(p.cbar[i]):
            out = _acc(out, (xi * p.cbar[i]) * P)
    return dense(_or_zeros(out, P.shape, P.dtype))


def second_derivative(alg: Algebra, X: jnp.ndarray, U: jnp.ndarray, S: jnp.ndarray, p: Poly) -> jnp.ndarray:
    """(D²_X F)(U)(S), symmetric in U and S (seed 000 eqs. (40)–(46))."""
    A, B, C = alg.ad_form(X), alg.ad_form(U), alg.ad_form(S)
    x0 = alg.rot(X)
    xi_u, xi_s, sigma = jnp.dot(x0, U), jnp.dot(x0, S), jnp.dot(alg.rot(S), U)
    P = jnp.eye(alg.dim, dtype=X.dtype)
    DPu = DPs = D2P = None
    out = None
    for i in range(1, len(p.c)):
        if i == 1:  # D²P_1 = 0, DP_1 = ad, P_1 = A: skip products with zero/identity matrices
            DPu, DPs, P = B, C, A
        else:
            D2P = B @ DPs + C @ DPu + (A @ D2P if D2P is not None else 0.0)
            DPu, DPs = B @ P + A @ DPu, C @ P + A @ DPs
            P = A @ P
        if _nz(p.c[i]) and D2P is not None:
            out = _acc(out, p.c[i] * D2P)
        if _nz(p.cbar[i]):
            out = _acc(out, p.cbar[i] * (sigma * P + xi_u * DPs + xi_s * DPu))
        if _nz(p.cbrev[i]):
            out = _acc(out, (p.cbrev[i] * xi_u * xi_s) * P)
    return dense(_or_zeros(out, P.shape, P.dtype))


def apply(alg: Algebra, X: jnp.ndarray, Z: jnp.ndarray, p: Poly, transpose: bool = False) -> jnp.ndarray:
    """F(X) Z (or F(X)ᵀ Z) by matrix-vector products only (se(3): in the 3×3 blocks of :class:`AdForm`)."""
    A = alg.ad(X).T if transpose else alg.ad_form(X)
    out = p.c[0] * Z
    for i in range(1, len(p.c)):
        Z = A @ Z
        if _nz(p.c[i]):
            out = out + p.c[i] * Z
    return out


def apply_derivative(alg: Algebra, X: jnp.ndarray, Z: jnp.ndarray, U: jnp.ndarray, p: Poly) -> jnp.ndarray:
    """(D_X F)(U) Z = ``jacobian(X, Z) @ U`` by matrix-vector products only, without forming the Jacobian.

    With ``Z_i = A^i Z`` (A = ad_X) and C = ad_U: ``D_U Z_i = C Z_{i−1} + A D_U Z_{i−1}`` (the Jacobian recursion of
    :func:`_jac_parts` applied to U), and the coefficients' derivatives enter through ``x₀ᵀ U`` (eq. (36)).
    """
    A, C = alg.ad_form(X), alg.ad_form(U)
    Zi, dZi = Z, None
    out = w = None
    for i in range(1, len(p.c)):
        dZi = C @ Zi if dZi is None else C @ Zi + A @ dZi
        Zi = A @ Zi
        if _nz(p.c[i]):
            out = _acc(out, p.c[i] * dZi)
        if _nz(p.cbar[i]):
            w = _acc(w, p.cbar[i] * Zi)
    out = _or_zeros(out, Z.shape, Z.dtype)
    return out if w is None else out + w * jnp.dot(alg.rot(X), U)


def ray_rates(
    alg: Algebra, X: jnp.ndarray, U: jnp.ndarray, W: jnp.ndarray, s: jnp.ndarray, p: Poly
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """F, its velocity and its acceleration along the ray Y = s X, for many scales s at once.

    For Y(t) = s X(t) with Ẋ = U, Ẍ = W and each s of ``s`` (m,): ``F(Y)`` (m, n, n), ``F(Y) Ẏ`` and
    ``F(Y) Ÿ + (D_Y F)(Ẏ) Ẏ`` (m, n); ``p`` holds the coefficients at every s Y as arrays (m,). The powers of A = ad_X
    and the vectors P_i U, P_i W and DP_i(U) U (eq. (24) applied to U; DP_1(U) U = ad_U U = 0) are formed once for
    all s: ad_Y^i = s^i P_i, DP_i^Y(Ẏ) = s^i DP_i(U) and (D c_i)(Ẏ) = s² ξ c̄_i with ξ = x₀ᵀU (eq. (30)), so each s
    costs only its scalar coefficients and sums of the shared terms.
    """
    A, B = alg.ad_form(X), alg.ad_form(U)
    xi = jnp.dot(alg.rot(X), U)
    col = lambda c: c[:, None]
    P, Ui, Wi, dUi = None, U, W, None
    F, v, a = [], p.c[0] * U[None], p.c[0] * W[None]  # F: the terms c_i s^i P_i, each in P_i's structured form
    si = jnp.ones_like(s)
    for i in range(1, len(p.c)):
        if i > 1:
            dUi = B @ Ui if dUi is None else B @ Ui + A @ dUi  # DP_i(U) U = B P_{i−1} U + A DP_{i−1}(U) U
        P = A if i == 1 else A @ P
        Ui, Wi, si = A @ Ui, A @ Wi, si * s
        if _nz(p.c[i]):
            c = p.c[i] * si
            F.append((c, P))
            v = v + col(c) * Ui[None]
            a = a + col(c) * Wi[None] + (0.0 if dUi is None else col(c) * dUi[None])
        if _nz(p.cbar[i]):
            a = a + col(p.cbar[i] * si * s * s * xi) * Ui[None]
    eye = p.c[0] * jnp.eye(alg.dim, dtype=X.dtype)
    return eye + _scaled_sum(F, s.shape), col(s) * v, col(s) * a


def _scaled_sum(terms: list, shape: tuple[int, ...]) -> jnp.ndarray:
    """Σ c P over (c (m,), P) pairs as (m, n, n); AdForm terms are summed block by block and expanded once."""
    if terms and isinstance(terms[0][1], AdForm):
        blocks = [sum(c[:, None, None] * getattr(P, k)[None] for c, P in terms) for k in ("a", "b")]
        return jax.vmap(lambda a, b: AdForm(a, b).dense())(*blocks)
    return sum((c[:, None, None] * P[None] for c, P in terms), jnp.zeros(shape + (1, 1)))


def _jac_parts(alg: Algebra, A: jnp.ndarray, Z: jnp.ndarray, n: int, transpose: bool):
    """Z_i = P_i Z and J_i with DP_i(U) Z = J_i U (or Z̄_i = P_iᵀ Z and J̄_i with DP_i(U)ᵀ Z = J̄_i U), i < n."""
    Zs = [Z]
    Js = [jnp.zeros((alg.dim, alg.dim), Z.dtype)]
    At = A.T if transpose else None
    for i in range(1, n):
        if transpose:  # J̄_i = Aᵀ J̄_{i−1} + adbar_{Z̄_{i−1}}  (eq. (39)); J̄_0 = 0
            Js.append(alg.adbar(Zs[-1]) + (At @ Js[-1] if i > 1 else 0.0))
            Zs.append(At @ Zs[-1])
        else:  # J_i = A J_{i−1} − ad_{Z_{i−1}}  (Table 1, eq. (56)); J_0 = 0
            Js.append(-alg.ad_form(Zs[-1]) + (A @ Js[-1] if i > 1 else 0.0))
            Zs.append(A @ Zs[-1])
    return Zs, Js


def jacobian(alg: Algebra, X: jnp.ndarray, Z: jnp.ndarray, p: Poly, transpose: bool = False) -> jnp.ndarray:
    """∂(F(X) Z)/∂X (seed 000 eqs. (36), (37)) or ∂(F(X)ᵀ Z)/∂X (eq. (39)); rows = outputs."""
    Zs, Js = _jac_parts(alg, alg.ad(X) if transpose else alg.ad_form(X), Z, len(p.c), transpose)
    out = None
    w = None
    for i in range(1, len(p.c)):
        if _nz(p.c[i]):
            out = _acc(out, p.c[i] * Js[i])
        if _nz(p.cbar[i]):
            w = _acc(w, p.cbar[i] * Zs[i])
    out = dense(_or_zeros(out, Js[0].shape, Z.dtype))
    return out if w is None else out + _outer(w, alg.rot(X))


def jacobian_derivative(
    alg: Algebra, X: jnp.ndarray, Z: jnp.ndarray, S: jnp.ndarray, p: Poly, transpose: bool = False
) -> jnp.ndarray:
    """D_S of :func:`jacobian`: the matrix U ↦ (D²F)(U)(S) Z (or its transposed-map analogue).

    Recursion: ``D_S J_i = C J_{i−1} + A D_S J_{i−1} − ad_{J_{i−1} S}`` (``D_S Z_i = J_i S``); for the transposed map
    ``D_S J̄_i = Cᵀ J̄_{i−1} + Aᵀ D_S J̄_{i−1} + adbar_{J̄_{i−1} S}``. Contracting with Q gives seed 000 eq. (47).
    """
    if transpose:
        A, C = alg.ad(X).T, alg.ad(S).T
    else:
        A, C = alg.ad_form(X), alg.ad_form(S)
    x0, s0 = alg.rot(X), alg.rot(S)
    xi_s = jnp.dot(x0, S)
    Zs, Js = _jac_parts(alg, alg.ad(X) if transpose else A, Z, len(p.c), transpose)
    DJ = None
    out = None
    w_x = w_s = None  # vectors multiplying x₀ᵀ and s₀ᵀ
    for i in range(1, len(p.c)):
        if i >= 2:
            corr = alg.adbar(Js[i - 1] @ S) if transpose else -alg.ad_form(Js[i - 1] @ S)
            DJ = C @ Js[i - 1] + corr + (A @ DJ if i > 2 else 0.0)  # D_S J_1 = 0
        if _nz(p.c[i]) and i >= 2:
            out = _acc(out, p.c[i] * DJ)
        if _nz(p.cbar[i]):
            out = _acc(out, (p.cbar[i] * xi_s) * Js[i])
            w_x = _acc(w_x, p.cbar[i] * (Js[i] @ S))
            w_s = _acc(w_s, p.cbar[i] * Zs[i])
        if _nz(p.cbrev[i]):
            w_x = _acc(w_x, (p.cbrev[i] * xi_s) * Zs[i])
    out = dense(_or_zeros(out, Js[0].shape, Z.dtype))
    if w_x is not None:
        out = out + _outer(w_x, x0)
    if w_s is not None:
        out = out + _outer(w_s, s0)
    return out


def hessian(alg: Algebra, X: jnp.ndarray, Q: jnp.ndarray, Z: jnp.ndarray, p: Poly) -> jnp.ndarray:
    """Hessian of h(X) = Qᵀ F(X) Z (seed 000 eqs. (47)–(51)), symmetric, ``Sᵀ H U = Qᵀ (D²F)(U)(S) Z``.

    ``H = (Σ c̄_i QᵀZ_i) I₀ + (Σ c̆_i QᵀZ_i) x₀x₀ᵀ + sym(x₀ gᵀ) − sym(Σ_m adbar_{Q̄_m} W_m)`` with
    ``g = (Σ c̄_i J_i)ᵀ Q``, ``Q̄_m = (Aᵀ)^m Q`` and ``W_m = Σ_k c_{k+1+m} J_k``: eqs. (48), (50) and (49) regrouped so
    that only N − 2 matrix products are formed.
    """
    n = len(p.c)
    A = alg.ad_form(X)
    x0 = alg.rot(X)
    Zs, Js = _jac_parts(alg, A, Z, n, transpose=False)
    qz = [Q @ z for z in Zs]
    s_bar = s_brev = None
    jbar = None
    for i in range(1, n):
        if _nz(p.cbar[i]):
            s_bar = _acc(s_bar, p.cbar[i] * qz[i])
            jbar = _acc(jbar, p.cbar[i] * Js[i])
        if _nz(p.cbrev[i]):
            s_brev = _acc(s_brev, p.cbrev[i] * qz[i])
    H = None
    Qm = Q
    for m in range(n - 2):
        W = None
        for k in range(1, n - 1 - m):
            if _nz(p.c[k + 1 + m]):
                W = _acc(W, p.c[k + 1 + m] * Js[k])
        if W is not None:
            H = _acc(H, -(alg.adbar(Qm) @ W))
        Qm = A.T @ Qm
    H = _or_zeros(H, A.shape, X.dtype)
    H = _sym(H)
    if jbar is not None:
        H = H + _sym(_outer(x0, jbar.T @ Q))
    if s_bar is not None:
        H = H + s_bar * alg.rot_projector(X)
    if s_brev is not None:
        H = H + s_brev * _outer(x0, x0)
    return H
