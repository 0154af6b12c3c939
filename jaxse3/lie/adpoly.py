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

**Evaluation on rows.** Vectors and matrices are carried through the recursions as tuples of their rows (scalars for
a vector, (n,) arrays for a matrix), and the products with ``ad_X``, ``ad_Xᵀ`` and ``adbar_U`` are the algebra's
cross-product formulas on those rows (:class:`~jaxse3.lie._algebra.Algebra` ``*_rows``). No ad matrix is formed and
no matrix product or concatenation happens before the result is stacked once at the end, so XLA fuses a whole
closed form into a few elementwise loops (on CPU, each small matrix product would be a separate kernel, and the time
of these small functions is the number of kernels, not the arithmetic).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence, Union

import jax
import jax.numpy as jnp

from jaxse3.lie._algebra import Algebra

Scalar = Union[float, jnp.ndarray]
Rows = tuple  # the rows of a vector (scalars) or of a matrix ((n,) arrays)


class Poly(NamedTuple):
    """Coefficients c_i, c̄_i = 2 dc_i/dt, c̆_i = 2 dc̄_i/dt of ``F(X) = Σ c_i ad_X^i``, i = 0 … N−1."""

    c: Sequence[Scalar]
    cbar: Sequence[Scalar]
    cbrev: Sequence[Scalar]


def _nz(c: Scalar) -> bool:
    return not (isinstance(c, (int, float)) and c == 0)


def _rows(v: jnp.ndarray) -> Rows:
    return tuple(v[i] for i in range(v.shape[0]))


def _stack(R: Rows) -> jnp.ndarray:
    return jnp.stack(R)


def _eye(alg: Algebra, dtype) -> Rows:
    return _rows(jnp.eye(alg.dim, dtype=dtype))


def _add(*terms: Rows) -> Rows:
    return tuple(sum(parts[1:], parts[0]) for parts in zip(*terms))


def _scale(c, R: Rows) -> Rows:
    return tuple(c * r for r in R)


def _neg(R: Rows) -> Rows:
    return tuple(-r for r in R)


def _acc(total, term):
    return term if total is None else _add(total, term)


def _or_zeros(total, shape, dtype) -> jnp.ndarray:
    return jnp.zeros(shape, dtype) if total is None else _stack(total)


def _dot(a: Rows, b: Rows):
    """aᵀ b of two vectors given by their entries (exact Python zeros are skipped)."""
    terms = [x * y for x, y in zip(a, b) if _nz(x) and _nz(y)]
    return sum(terms[1:], terms[0]) if terms else 0.0


def _matvec(M: Rows, v: Rows) -> Rows:
    """M v for a matrix given by its rows and a vector given by its entries."""
    return tuple(sum((r[j] * v[j] for j in range(1, len(v))), r[0] * v[0]) for r in M)


def _outer(a: Rows, b: Rows) -> Rows:
    """a bᵀ as rows."""
    return tuple(x * jnp.stack(b) for x in a)


def value(alg: Algebra, X: jnp.ndarray, p: Poly) -> jnp.ndarray:
    """F(X) = Σ c_i ad_X^i (seed 000 eqs. (21), (22))."""
    x = _rows(X)
    P = _eye(alg, X.dtype)
    out = _scale(p.c[0], P)
    for i in range(1, len(p.c)):
        P = alg.ad_rows(x, P)
        if _nz(p.c[i]):
            out = _add(out, _scale(p.c[i], P))
    return _stack(out)


def derivative(alg: Algebra, X: jnp.ndarray, U: jnp.ndarray, p: Poly) -> jnp.ndarray:
    """(D_X F)(U) = Σ c_i DP_i(U) + ξ Σ c̄_i P_i, ξ = x₀ᵀU (seed 000 eqs. (28), (29))."""
    x, u = _rows(X), _rows(U)
    xi = _dot(alg.rot_rows(x), u)
    P = _eye(alg, X.dtype)
    DP = None
    out = None
    for i in range(1, len(p.c)):
        DP = alg.ad_rows(u, P) if i == 1 else _add(alg.ad_rows(u, P), alg.ad_rows(x, DP))
        P = alg.ad_rows(x, P)
        if _nz(p.c[i]):
            out = _acc(out, _scale(p.c[i], DP))
        if _nz(p.cbar[i]):
            out = _acc(out, _scale(xi * p.cbar[i], P))
    return _or_zeros(out, (alg.dim, alg.dim), X.dtype)


def second_derivative(alg: Algebra, X: jnp.ndarray, U: jnp.ndarray, S: jnp.ndarray, p: Poly) -> jnp.ndarray:
    """(D²_X F)(U)(S), symmetric in U and S (seed 000 eqs. (40)–(46))."""
    x, u, s = _rows(X), _rows(U), _rows(S)
    x0 = alg.rot_rows(x)
    xi_u, xi_s, sigma = _dot(x0, u), _dot(x0, s), _dot(alg.rot_rows(s), u)
    P = _eye(alg, X.dtype)
    DPu = DPs = D2P = None
    out = None
    for i in range(1, len(p.c)):
        if i == 1:  # D²P_1 = 0, DP_1 = ad, P_1 = A: skip products with zero/identity matrices
            DPu, DPs, P = alg.ad_rows(u, P), alg.ad_rows(s, P), alg.ad_rows(x, P)
        else:
            D2P = _add(alg.ad_rows(u, DPs), alg.ad_rows(s, DPu), *([alg.ad_rows(x, D2P)] if D2P is not None else []))
            DPu, DPs = _add(alg.ad_rows(u, P), alg.ad_rows(x, DPu)), _add(alg.ad_rows(s, P), alg.ad_rows(x, DPs))
            P = alg.ad_rows(x, P)
        if _nz(p.c[i]) and D2P is not None:
            out = _acc(out, _scale(p.c[i], D2P))
        if _nz(p.cbar[i]):
            out = _acc(out, _scale(p.cbar[i], _add(_scale(sigma, P), _scale(xi_u, DPs), _scale(xi_s, DPu))))
        if _nz(p.cbrev[i]):
            out = _acc(out, _scale(p.cbrev[i] * xi_u * xi_s, P))
    return _or_zeros(out, (alg.dim, alg.dim), X.dtype)


def apply(alg: Algebra, X: jnp.ndarray, Z: jnp.ndarray, p: Poly, transpose: bool = False) -> jnp.ndarray:
    """F(X) Z (or F(X)ᵀ Z) by matrix-vector products only."""
    mul = alg.adT_rows if transpose else alg.ad_rows
    x, z = _rows(X), _rows(Z)
    out = _scale(p.c[0], z)
    for i in range(1, len(p.c)):
        z = mul(x, z)
        if _nz(p.c[i]):
            out = _add(out, _scale(p.c[i], z))
    return _stack(out)


def apply_derivative(alg: Algebra, X: jnp.ndarray, Z: jnp.ndarray, U: jnp.ndarray, p: Poly) -> jnp.ndarray:
    """(D_X F)(U) Z = ``jacobian(X, Z) @ U`` by matrix-vector products only, without forming the Jacobian.

    With ``Z_i = A^i Z`` (A = ad_X) and C = ad_U: ``D_U Z_i = C Z_{i−1} + A D_U Z_{i−1}`` (the Jacobian recursion of
    :func:`_jac_parts` applied to U), and the coefficients' derivatives enter through ``x₀ᵀ U`` (eq. (36)).
    """
    x, u = _rows(X), _rows(U)
    Zi, dZi = _rows(Z), None
    out = w = None
    for i in range(1, len(p.c)):
        dZi = alg.ad_rows(u, Zi) if dZi is None else _add(alg.ad_rows(u, Zi), alg.ad_rows(x, dZi))
        Zi = alg.ad_rows(x, Zi)
        if _nz(p.c[i]):
            out = _acc(out, _scale(p.c[i], dZi))
        if _nz(p.cbar[i]):
            w = _acc(w, _scale(p.cbar[i], Zi))
    if w is not None:
        out = _acc(out, _scale(_dot(alg.rot_rows(x), u), w))
    return _or_zeros(out, Z.shape, Z.dtype)


def _jac_parts(alg: Algebra, x: Rows, z: Rows, n: int, transpose: bool):
    """Z_i = P_i Z and J_i with DP_i(U) Z = J_i U (or Z̄_i = P_iᵀ Z and J̄_i with DP_i(U)ᵀ Z = J̄_i U), i < n,
    as rows; ``Js[0]`` (= 0) is None."""
    Zs, Js = [z], [None]
    eye = None
    for i in range(1, n):
        eye = eye if eye is not None else _eye(alg, jnp.result_type(*z))
        if transpose:  # J̄_i = Aᵀ J̄_{i−1} + adbar_{Z̄_{i−1}}  (eq. (39)); J̄_0 = 0
            J = alg.adbar_rows(Zs[-1], eye)
            Js.append(J if i == 1 else _add(J, alg.adT_rows(x, Js[-1])))
            Zs.append(alg.adT_rows(x, Zs[-1]))
        else:  # J_i = A J_{i−1} − ad_{Z_{i−1}}  (Table 1, eq. (56)); J_0 = 0
            J = _neg(alg.ad_rows(Zs[-1], eye))
            Js.append(J if i == 1 else _add(J, alg.ad_rows(x, Js[-1])))
            Zs.append(alg.ad_rows(x, Zs[-1]))
    return Zs, Js


def jacobian(alg: Algebra, X: jnp.ndarray, Z: jnp.ndarray, p: Poly, transpose: bool = False) -> jnp.ndarray:
    """∂(F(X) Z)/∂X (seed 000 eqs. (36), (37)) or ∂(F(X)ᵀ Z)/∂X (eq. (39)); rows = outputs."""
    x = _rows(X)
    Zs, Js = _jac_parts(alg, x, _rows(Z), len(p.c), transpose)
    out = None
    w = None
    for i in range(1, len(p.c)):
        if _nz(p.c[i]):
            out = _acc(out, _scale(p.c[i], Js[i]))
        if _nz(p.cbar[i]):
            w = _acc(w, _scale(p.cbar[i], Zs[i]))
    if w is not None:
        out = _acc(out, _outer(w, alg.rot_rows(x)))
    return _or_zeros(out, (alg.dim, alg.dim), Z.dtype)


def jacobian_derivative(
    alg: Algebra, X: jnp.ndarray, Z: jnp.ndarray, S: jnp.ndarray, p: Poly, transpose: bool = False
) -> jnp.ndarray:
    """D_S of :func:`jacobian`: the matrix U ↦ (D²F)(U)(S) Z (or its transposed-map analogue).

    Recursion: ``D_S J_i = C J_{i−1} + A D_S J_{i−1} − ad_{J_{i−1} S}`` (``D_S Z_i = J_i S``); for the transposed map
    ``D_S J̄_i = Cᵀ J̄_{i−1} + Aᵀ D_S J̄_{i−1} + adbar_{J̄_{i−1} S}``. Contracting with Q gives seed 000 eq. (47).
    """
    mul = alg.adT_rows if transpose else alg.ad_rows
    x, s = _rows(X), _rows(S)
    x0, s0 = alg.rot_rows(x), alg.rot_rows(s)
    xi_s = _dot(x0, s)
    Zs, Js = _jac_parts(alg, x, _rows(Z), len(p.c), transpose)
    eye = _eye(alg, X.dtype)
    DJ = None  # D_S J_1 = 0
    out = None
    w_x = w_s = None  # vectors multiplying x₀ᵀ and s₀ᵀ
    for i in range(1, len(p.c)):
        if i >= 2:
            JS = _matvec(Js[i - 1], s)
            corr = alg.adbar_rows(JS, eye) if transpose else _neg(alg.ad_rows(JS, eye))
            DJ = _add(mul(s, Js[i - 1]), corr, *([mul(x, DJ)] if DJ is not None else []))
        if _nz(p.c[i]) and i >= 2:
            out = _acc(out, _scale(p.c[i], DJ))
        if _nz(p.cbar[i]):
            out = _acc(out, _scale(p.cbar[i] * xi_s, Js[i]))
            w_x = _acc(w_x, _scale(p.cbar[i], _matvec(Js[i], s)))
            w_s = _acc(w_s, _scale(p.cbar[i], Zs[i]))
        if _nz(p.cbrev[i]):
            w_x = _acc(w_x, _scale(p.cbrev[i] * xi_s, Zs[i]))
    if w_x is not None:
        out = _acc(out, _outer(w_x, x0))
    if w_s is not None:
        out = _acc(out, _outer(w_s, s0))
    return _or_zeros(out, (alg.dim, alg.dim), Z.dtype)


def hessian(alg: Algebra, X: jnp.ndarray, Q: jnp.ndarray, Z: jnp.ndarray, p: Poly) -> jnp.ndarray:
    """Hessian of h(X) = Qᵀ F(X) Z (seed 000 eqs. (47)–(51)), symmetric, ``Sᵀ H U = Qᵀ (D²F)(U)(S) Z``.

    ``H = (Σ c̄_i QᵀZ_i) I₀ + (Σ c̆_i QᵀZ_i) x₀x₀ᵀ + sym(x₀ gᵀ) − sym(Σ_m adbar_{Q̄_m} W_m)`` with
    ``g = (Σ c̄_i J_i)ᵀ Q``, ``Q̄_m = (Aᵀ)^m Q`` and ``W_m = Σ_k c_{k+1+m} J_k``: eqs. (48), (50) and (49) regrouped so
    that only N − 2 matrix products are formed.
    """
    n = len(p.c)
    x, q = _rows(X), _rows(Q)
    x0 = alg.rot_rows(x)
    Zs, Js = _jac_parts(alg, x, _rows(Z), n, transpose=False)
    qz = [_dot(q, z) for z in Zs]
    s_bar = s_brev = None
    jbar = None
    for i in range(1, n):
        if _nz(p.cbar[i]):
            s_bar = p.cbar[i] * qz[i] + (0.0 if s_bar is None else s_bar)
            jbar = _acc(jbar, _scale(p.cbar[i], Js[i]))
        if _nz(p.cbrev[i]):
            s_brev = p.cbrev[i] * qz[i] + (0.0 if s_brev is None else s_brev)
    H = None
    Qm = q
    for m in range(0, n - 2):
        W = None
        for k in range(1, n - 1 - m):
            if _nz(p.c[k + 1 + m]):
                W = _acc(W, _scale(p.c[k + 1 + m], Js[k]))
        if W is not None:
            H = _acc(H, _neg(alg.adbar_rows(Qm, W)))
        Qm = alg.adT_rows(x, Qm)
    if jbar is not None:  # sym(x₀ gᵀ) is part of sym(H)
        g = sum((qi * r for qi, r in zip(q[1:], jbar[1:])), q[0] * jbar[0])  # jbarᵀ Q
        H = _acc(H, tuple(xi * g for xi in x0))
    H = jnp.zeros((alg.dim, alg.dim), X.dtype) if H is None else _stack(H)
    H = jax.lax.optimization_barrier(H)  # materialised once: XLA would otherwise recompute it for Hᵀ
    H = H + H.T
    if s_bar is not None:
        H = H + s_bar * alg.rot_projector(X)
    if s_brev is not None:
        H = H + s_brev * jnp.outer(_stack(x0), _stack(x0))
    return H
