"""Second-order partial derivatives of inverse dynamics: IDSVA SO (seed 002 Algorithm 1, digest §4, errata applied).

``rnea_second_order_derivatives(model, q, v, a)`` returns the four non-zero rank-3 tensors (all ``(nv, nv, nv)``):

* ``d2tau_dq2[τ, q_first, q_second]``: ``H[:, j, k] = ∂/∂q_k (∂τ/∂q_j)`` — q derivatives are Lie derivatives along
  right perturbations, so the (j, k) block **inside one multi-DoF joint is not symmetric** (digest §3.1);
* ``d2tau_dv2[τ, v, v]`` (symmetric in its last two axes);
* ``d2tau_dqdv[τ, q, v] = ∂/∂v (∂τ/∂q)`` (Algorithm 1's layout; App. B's ``[τ, q̇, q]`` is its transpose (1, 2));
* ``dM_dq[row, col, q]``: ``∂M[row, col]/∂q`` — **the q index is the last one**.

(∂²τ/∂a² = 0 and ∂²τ/∂a∂v = 0; ∂²τ/∂a∂q is ``dM_dq``.)

Algorithm 1 loops over chain triples ``k ⪯ j ⪯ i`` and, for DoFs ``p`` of i, ``t`` of j, ``r`` of k, writes products
``(A_m(i,p) x(j,t))ᵀ y(k,r)`` of per-(i,p) 6×6 matrices A0–A7 (lines 15–24), per-(j,t) vectors u1–u12 (lines 29–36)
and per-(k,r) columns of S, Ψ̇, Ψ̈, Ṡ (lines 40–41) into permuted places of the tensors (lines 44–66). Here each write
is a *piece* ``P[a, b, c] = F[a, b] G[b, c] Σ_x u[a, b, x] w[c, x]`` over DoF indices (a, b, c) = (ip, jt, kr), where
the 0/1 masks ``F``, ``G`` encode the chain condition and the ``j ≠ i`` / ``k ≠ j`` branches; the pieces of one tensor
have disjoint supports (their sum is Algorithm 1's sequence of writes). Since every piece is a product of two-index
factors, the same expression contracted with a tangent along any axis is an einsum that never forms an n³ array —
that is the ``custom_jvp`` rule of :func:`jaxse3.rigid.rnea_derivatives` (digest §9).

Errata applied (digest §7): loop index of line 2; ``I×s_p`` → ``I(s_p×)`` in lines 18, 20; the composite force
``f_i^C`` in line 22; ``B`` without the ½ of eq. (6) throughout.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax.numpy as jnp
from jaxtyping import Array

from jaxse3.rigid.model import Model
from jaxse3.rigid.rnea import check_state
from jaxse3.rigid.rnea_derivatives import coriolis_factor, crf, crf_bar, crm, ground_pass, topology

__all__ = ["rnea_second_order_derivatives", "second_order_contractions"]


class _Piece(NamedTuple):
    order: str  # output axes as letters of (a, b, c) = (ip, jt, kr)
    F: Array  # (n, n) mask over (a, b)
    G: Array  # (n, n) mask over (b, c)
    u: Array  # (n, n, m)
    w: Array  # (n, m)


def _pieces(model: Model, q, v, a, f_ext=None) -> dict[str, list[_Piece]]:
    top = topology(model)
    g = ground_pass(model, q, v, a, f_ext)
    J = top.joint
    IC, BC, fC = g.IC[J], g.BC[J], g.fC[J]
    S, Sd, Pd, Pdd = g.S, g.S_dot, g.Psi_dot, g.Psi_ddot
    mv = functools.partial(jnp.einsum, "aij,aj->ai")
    # per (i, p): lines 15–24 (B without the ½)
    Bs = coriolis_factor(IC, S)
    Bpsi = coriolis_factor(IC, Pd)
    A0 = crf_bar(mv(IC, S))
    A1 = crf(S) @ IC - IC @ crm(S)
    A2 = 2.0 * A0 - Bs
    A3 = Bpsi + crf(S) @ BC - BC @ crm(S)
    A4 = crf_bar(jnp.einsum("aji,aj->ai", BC, S))
    A5 = crf_bar(mv(BC, Pd) + mv(IC, Pdd) + mv(crf(S), fC))  # composite f^C (erratum of line 22)
    A6 = crf(S) @ IC + A0
    A7 = crf_bar(mv(BC, S) + mv(IC, Pd + Sd))

    # per (i p, j t): lines 29–36; u[a, b] = A(a) x(b) or A(a)ᵀ x(b)
    def ax(A, x):
        return jnp.einsum("axy,by->abx", A, x)

    def atx(A, x):
        return jnp.einsum("ayx,by->abx", A, x)

    u1, u2 = atx(A3, S), atx(A1, S)
    u3 = ax(A3, Pd) + ax(A1, Pdd) + ax(A5, S)
    u4 = ax(A6, S)
    u5 = ax(A2, Pd) + ax(A4, S)
    u6 = ax(Bs, Pd) + ax(A7, S)
    u7 = ax(A3, S) + ax(A1, Pd + Sd)
    u8 = ax(A4, S) - atx(Bs, Pd)
    u9, u10, u11, u12 = ax(A0, S), ax(Bs, S), atx(Bs, S), ax(A1, S)

    E = jnp.asarray(top.E)  # E[x, y] = 1 iff joint(y) ⪯ joint(x): the chain condition over (a, b) and (b, c)
    N = jnp.asarray(top.E * (1.0 - top.same))  # ... with different joints (j ≠ i, resp. k ≠ j)
    Q = jnp.asarray(top.same)  # ... with the same joint
    cat = functools.partial(jnp.concatenate, axis=-1)
    P, PP = cat([Pd, Pdd]), cat([S, Sd + Pd])
    return {
        "qq": [
            _Piece("abc", E, E, cat([u8, u9]), P),  # line 44: p2
            _Piece("acb", E, N, cat([u8, u9]), P),  # line 53
            _Piece("bca", N, E, cat([u1, u2]), P),  # line 46
            _Piece("bac", N, E, cat([u1, u2]), P),  # line 46
            _Piece("cab", E, N, u3, S),  # line 53
            _Piece("cba", N, N, u3, S),  # line 59
        ],
        "qv": [
            _Piece("acb", E, E, -u11, Pd),  # line 44: −p1
            _Piece("bac", N, E, cat([u1, u2]), PP),  # line 47
            _Piece("bca", N, E, u11, Pd),  # line 48: p1
            _Piece("abc", E, N, cat([u5, u9]), PP),  # line 55
            _Piece("cba", E, N, u6, S),  # line 56
            _Piece("cab", N, N, u7, S),  # line 60
        ],
        "vv": [
            _Piece("bca", N, E, u11, S),  # line 49
            _Piece("bac", N, E, u11, S),  # line 49
            _Piece("abc", E, N, -u11, S),  # line 54
            _Piece("acb", E, N, -u11, S),  # line 54
            _Piece("cab", N, N, u10, S),  # line 61
            _Piece("cba", N, N, u10, S),  # line 61
            _Piece("cba", E * Q, N, u4, S),  # line 63 (j = i)
            _Piece("abc", E, Q, -u2, S),  # line 66 (k = j)
        ],
        "dM": [
            _Piece("cba", N, E, u12, S),  # line 50
            _Piece("bca", N, N, u12, S),  # line 50; for k = j the first copy already covers both orders
            _Piece("cab", E, N, u9, S),  # line 57
            _Piece("acb", E, N, u9, S),  # line 57
        ],
    }


def _assemble(pieces: list[_Piece], axis: int | None = None, vec=None):
    """Σ of the pieces laid out as ``[x, y, z]``; with ``axis``, contracted with ``vec`` along that output axis."""
    total = 0.0
    for pc in pieces:
        operands, subs, out = [pc.F, pc.G, pc.u, pc.w], ["ab", "bc", "abx", "cx"], pc.order
        if axis is not None:
            operands.append(vec)
            subs.append(pc.order[axis])
            out = out.replace(pc.order[axis], "")
        total = total + jnp.einsum(",".join(subs) + "->" + out, *operands)
    return total


def rnea_second_order_derivatives(model: Model, q, v, a, f_ext=None) -> tuple[Array, Array, Array, Array]:
    """IDSVA SO (seed 002 Algorithm 1 with the errata of digest §7): ``(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq)``.

    Layouts (all ``(nv, nv, nv)``): ``d2tau_dq2[τ, q_j, q_k] = ∂_k ∂_j τ`` (tangent space, right perturbation; not
    symmetric inside a multi-DoF joint), ``d2tau_dv2[τ, v, v]``, ``d2tau_dqdv[τ, q, v]``, ``dM_dq[row, col, q]``
    (the **last** index is the q index). ``f_ext`` (nb, 6): body-frame external wrenches (optional).
    """
    q, v, a, *f_ext = check_state("rnea_second_order_derivatives", model, q, v, a, f_ext)
    pcs = _pieces(model, q, v, a, f_ext[0] if f_ext else None)
    return _assemble(pcs["qq"]), _assemble(pcs["vv"]), _assemble(pcs["qv"]), _assemble(pcs["dM"])


def second_order_contractions(model: Model, q, v, a, f_ext, dq, dv, da):
    """Directional derivative of ``(∂τ/∂q, ∂τ/∂v, M)`` along a tangent (δq in tangent coordinates, δv, δa), as
    contractions of the second-order tensors without forming them (digest §9); ``None`` stands for a zero tangent.

    ``d(∂τ/∂q) = Hqq·δq + Hqv·δv + dMᵀ·δa``, ``d(∂τ/∂v) = Hqvᵀ·δq + Hvv·δv``, ``dM = dM·δq``.
    """
    n = model.nv
    pcs = _pieces(model, q, v, a, f_ext)
    zero = jnp.zeros((n, n), dtype=model.inertias.dtype)
    d_dq, d_dv, d_M = zero, zero, zero
    if dq is not None:
        d_dq = d_dq + _assemble(pcs["qq"], 2, dq)
        d_dv = d_dv + _assemble(pcs["qv"], 1, dq)
        d_M = d_M + _assemble(pcs["dM"], 2, dq)
    if dv is not None:
        d_dq = d_dq + _assemble(pcs["qv"], 2, dv)
        d_dv = d_dv + _assemble(pcs["vv"], 2, dv)
    if da is not None:
        d_dq = d_dq + _assemble(pcs["dM"], 1, da)
    return d_dq, d_dv, d_M
