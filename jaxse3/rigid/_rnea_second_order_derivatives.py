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
is a *piece* ``P[a, b, c] = F[a, b] G[b, c] value(a, b, c)`` over DoF indices (a, b, c) = (ip, jt, kr), where the
masks ``F``, ``G`` encode the chain condition and the ``j ≠ i`` / ``k ≠ j`` branches and the value is a sum of one or
two terms ``± u(a, b) · w(c)`` of a u and a column w of S, Ψ̇, Ψ̈ or Ṡ + Ψ̇ (:data:`PIECES`; 16 distinct values);
the pieces of one tensor have disjoint supports (their sum is Algorithm 1's sequence of writes).

Work proportional to the chains (digest §9): the u's are computed only for the chain pairs (a, b), ``joint(b) ⪯
joint(a)``, in the chain layout of :mod:`jaxse3.rigid._topology` (n × L pairs, L − 1 = the most DoFs on one root path,
instead of n²), as batched 6×6 products per (A, x), or cross products ``x ×* f`` where A = f×̄*. Every piece has
``c ⪯ b ⪯ a``, and a value is evaluated only at the (a, b, c) where some piece needs it (index tables built once per
tree at trace time, numpy), each as an unrolled 6-term dot of gathered components, which XLA fuses into one loop per
value (for HyQ, n = 18: ≈ 6 000 entries in all, against 16·n²·L 12-dots for dense tables of u and W rows). Each
tensor is then **one** gather from the concatenated values, structurally zero entries pointing at an appended exact
zero: no n³ mask products, no scatters. The contractions of the ``custom_jvp`` rule of ``jaxse3.rigid.rnea_derivatives``
(:func:`second_order_contractions`, registered in :mod:`jaxse3.rigid._rules`) never form an n³ array: every piece is
a product of two-index factors, so its contraction with a tangent along any axis is an einsum of n²-sized operands.

Errata applied (digest §7): loop index of line 2; ``I×s_p`` → ``I(s_p×)`` in lines 18, 20; the composite force
``f_i^C`` in line 22; ``B`` without the ½ of eq. (6) throughout.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxse3.rigid import _spatial
from jaxse3.rigid._model import Model, check_state
from jaxse3.rigid._rnea_derivatives import ground_pass
from jaxse3.rigid._spatial import CoriolisBlocks, crf_bar, crf_times, cross_sandwich
from jaxse3.rigid._topology import Chains, chains, chains_of

__all__ = ["rnea_second_order_derivatives", "second_order_contractions", "PIECES"]

# The values that Algorithm 1 writes, as sums of terms ``(sign, u, w)`` = sign · u(a, b) · w(c) of a u of lines 29–36
# (per chain pair (a, b) = (ip, jt)) and a column w of S, Ψ̇, Ψ̈ or Ṡ + Ψ̇ (per DoF c = kr; named as in :data:`_X`).
_P1 = ((1.0, "u11", "psi_dot"),)  # line 42
_P2 = ((1.0, "u8", "psi_dot"), (1.0, "u9", "psi_ddot"))  # line 43
_L46 = ((1.0, "u1", "psi_dot"), (1.0, "u2", "psi_ddot"))
_L47 = ((1.0, "u1", "s"), (1.0, "u2", "psi_dot+s_dot"))
_L55 = ((1.0, "u5", "s"), (1.0, "u9", "psi_dot+s_dot"))


def _s(u: str, sign: float = 1.0):
    """The value ``sign · u · s_r``."""
    return ((sign, u, "s"),)


#: Pieces per tensor: (output axes as letters of (a, b, c), F, G, value) with masks E (chain), N (chain, different
#: joints), Q (same joint), EQ (chain and same joint); Algorithm 1 line in the comment.
PIECES = {
    "qq": (
        ("abc", "E", "E", _P2),  # line 44
        ("acb", "E", "N", _P2),  # line 53
        ("bca", "N", "E", _L46),  # line 46
        ("bac", "N", "E", _L46),  # line 46
        ("cab", "E", "N", _s("u3")),  # line 53
        ("cba", "N", "N", _s("u3")),  # line 59
    ),
    "qv": (
        ("acb", "E", "E", ((-1.0, "u11", "psi_dot"),)),  # line 44: −p1
        ("bac", "N", "E", _L47),  # line 47
        ("bca", "N", "E", _P1),  # line 48
        ("abc", "E", "N", _L55),  # line 55
        ("cba", "E", "N", _s("u6")),  # line 56
        ("cab", "N", "N", _s("u7")),  # line 60
    ),
    "vv": (
        ("bca", "N", "E", _s("u11")),  # line 49
        ("bac", "N", "E", _s("u11")),  # line 49
        ("abc", "E", "N", _s("u11", -1.0)),  # line 54
        ("acb", "E", "N", _s("u11", -1.0)),  # line 54
        ("cab", "N", "N", _s("u10")),  # line 61
        ("cba", "N", "N", _s("u10")),  # line 61
        ("cba", "EQ", "N", _s("u4")),  # line 63 (j = i)
        ("abc", "E", "Q", _s("u2", -1.0)),  # line 66 (k = j)
    ),
    "dM": (
        ("cba", "N", "E", _s("u12")),  # line 50
        ("bca", "N", "N", _s("u12")),  # line 50; for k = j the first copy already covers both orders
        ("cab", "E", "N", _s("u9")),  # line 57
        ("acb", "E", "N", _s("u9")),  # line 57
    ),
}


def _masks(ch: Chains) -> dict[str, np.ndarray]:
    return {"E": ch.E, "N": ch.E & ~ch.same, "Q": ch.same, "EQ": ch.E & ch.same}


#: the distinct values of the pieces
_VALUES = tuple(dict.fromkeys(v for pieces in PIECES.values() for *_, v in pieces))
#: the per-DoF columns that the values dot the u's with, in the order of the stack returned by :func:`_tables`
_X = ("s", "psi_dot", "psi_ddot", "psi_dot+s_dot")


@functools.cache
def _entries(parents: tuple[int, ...], joint_types: tuple[str, ...]):
    """Where each value is needed, and where each tensor entry is found (numpy, once per tree).

    Returns ``(rows, cols, index)``: per value of :data:`_VALUES`, the (a, b, c) that some piece needs it at (the
    union of the pieces' supports, c ⪯ b ⪯ a) as ``rows`` = a·L + l with b = chain[a, l] (the row of u in the chain
    layout, flattened) and ``cols`` = c; ``index[tensor]`` (n³,): the flat position of each entry in the
    concatenation of the values in that order, followed by one zero, where every entry outside the pieces points."""
    ch = chains_of(parents, joint_types)
    n, L = ch.chain.shape
    masks = _masks(ch)
    need = [np.zeros((n, n, n), dtype=bool) for _ in _VALUES]
    for pieces in PIECES.values():
        for _, F, G, value in pieces:
            need[_VALUES.index(value)] |= masks[F][:, :, None] & masks[G][None, :, :]
    rows, cols, position, offset = [], [], [], 0
    for nd in need:
        a, b, c = np.nonzero(nd)
        rows.append(a * L + ch.slot[a, b])
        cols.append(c)
        pos = np.full((n, n, n), -1)
        pos[a, b, c] = offset + np.arange(len(a))
        position.append(pos)
        offset += len(a)
    index = {}
    for name, pieces in PIECES.items():
        idx = np.full((n, n, n), offset)
        taken = np.zeros((n, n, n), dtype=bool)
        for order, F, G, value in pieces:
            a, b, c = np.nonzero(masks[F][:, :, None] & masks[G][None, :, :])
            var = {"a": a, "b": b, "c": c}
            pos = tuple(var[x] for x in order)
            assert not taken[pos].any(), (name, order)  # disjoint supports
            taken[pos] = True
            idx[pos] = position[_VALUES.index(value)][a, b, c]
        index[name] = idx.ravel()
    return rows, cols, index


def _tables(model: Model, q, v, a, f_ext=None) -> tuple[dict[str, Array], Array]:
    """The u's of lines 29–36 in the chain layout, (n, L, 6) each, and the columns of S, Ψ̇, Ψ̈, Ṡ + Ψ̇ per DoF (in the
    order of :data:`_X`) with a zero dummy DoF ``n`` appended, (n + 1, 4, 6)."""
    ch = chains(model)
    g = ground_pass(model, q, v, a, f_ext)
    ICp, BCb, fC = jax.tree.map(lambda x: x[ch.joint], (g.IC, g.BC, g.fC))  # by parts / blocks
    IC, BC = ICp.matrix(), BCb.matrix()
    S, Sd, Pd, Pdd = g.S, g.S_dot, g.Psi_dot, g.Psi_ddot
    # per (i, p): lines 15–24 (B without the ½); A0, A4, A5, A7 are f×̄* of the wrenches f0, f4, f5, f7, applied to x
    # as x ×* f (cheaper than a 6×6 product); Bs = A1 + A0 (lines 15, 17, 18) and A2 = 2 A0 − Bs = A0 − A1 (line 19)
    # need no matrices of their own
    Bpsi = CoriolisBlocks.of(ICp, Pd, ICp.apply(Pd)).matrix()
    f0 = ICp.apply(S)
    A1 = cross_sandwich(S, IC)
    A3 = Bpsi + cross_sandwich(S, BC)
    f4 = BCb.apply_transpose(S)
    f5 = BCb.apply(Pd) + ICp.apply(Pdd) + _spatial.cross_force(S, fC)  # composite f^C (erratum of line 22)
    A6 = crf_times(S, IC) + crf_bar(f0)
    f7 = BCb.apply(S) + ICp.apply(Pd + Sd)
    # per chain pair (a, b) = (ip, jt): lines 29–36, u = A(a) x(b) with x gathered in the chain layout
    xd = jnp.stack([S, Pd, Pdd, Pd + Sd], axis=1)
    xd = jnp.concatenate([xd, jnp.zeros((1, *xd.shape[1:]), xd.dtype)])
    x = [xd[:, k][ch.chain] for k in range(len(_X))]  # (n, L, 6) each: x[a, l] of DoF chain[a, l], 0 at padded slots

    def ax(A, k):  # A(a) x_k(b), (n, L, 6); one product per (A, x): no stacked arrays larger than the u's
        return jnp.einsum("aij,alj->ali", A, x[k])

    def atx(A, k):  # A(a)ᵀ x_k(b)
        return jnp.einsum("aji,alj->ali", A, x[k])

    def bar(f, k):  # (f(a)×̄*) x_k(b) = x_k(b) ×* f(a)
        return _spatial.cross_force(x[k], f[:, None])

    s, pd, pdd, pdsd = range(4)
    A6s, A3s, A1s, A3p, A1p, A1pp, A1psd = (
        ax(A, k) for A, k in ((A6, s), (A3, s), (A1, s), (A3, pd), (A1, pd), (A1, pdd), (A1, pdsd))
    )
    A3ts, A1ts, A1tp = atx(A3, s), atx(A1, s), atx(A1, pd)
    A0s, A4s, A5s, A7s = (bar(f, s) for f in (f0, f4, f5, f7))
    A0p = bar(f0, pd)
    Bss, Bsp, Bsts, Bstp, A2p = A1s + A0s, A1p + A0p, A1ts - A0s, A1tp - A0p, A0p - A1p  # A0ᵀ = −A0
    u = {
        "u1": A3ts,
        "u2": A1ts,
        "u3": A3p + A1pp + A5s,
        "u4": A6s,
        "u5": A2p + A4s,
        "u6": Bsp + A7s,
        "u7": A3s + A1psd,
        "u8": A4s - Bstp,
        "u9": A0s,
        "u10": Bss,
        "u11": Bsts,
        "u12": A1s,
    }
    return u, xd


def rnea_second_order_derivatives(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    a: Float[ArrayLike, " nv"],
    f_ext: Float[ArrayLike, "nb 6"] | None = None,
) -> tuple[Float[Array, "nv nv nv"], Float[Array, "nv nv nv"], Float[Array, "nv nv nv"], Float[Array, "nv nv nv"]]:
    """IDSVA SO (seed 002 Algorithm 1 with the errata of digest §7): ``(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq)``.

    Layouts (all ``(nv, nv, nv)``): ``d2tau_dq2[τ, q_j, q_k] = ∂_k ∂_j τ`` (tangent space, right perturbation; not
    symmetric inside a multi-DoF joint), ``d2tau_dv2[τ, v, v]``, ``d2tau_dqdv[τ, q, v]``, ``dM_dq[row, col, q]``
    (the **last** index is the q index). ``f_ext`` (nb, 6): body-frame external wrenches (optional).
    """
    q, v, a, *f_ext = check_state("rnea_second_order_derivatives", model, q, v, a, f_ext)
    u, xd = _tables(model, q, v, a, f_ext[0] if f_ext else None)
    rows, cols, index = _entries(model.parents, model.joint_types)
    # each needed value entry as an unrolled 6-term dot of gathered components (one loop fusion per value)
    uT = {k: x.reshape(-1, 6).T for k, x in u.items()}  # (6, n L)
    xT = jnp.moveaxis(xd, 0, -1)  # (4, 6, n + 1)
    values = [
        sum(sign * uT[k][i][r] * xT[_X.index(w), i][c] for sign, k, w in value for i in range(6))
        for value, r, c in zip(_VALUES, rows, cols)
    ]
    V = jnp.concatenate(values + [jnp.zeros(1, xd.dtype)])
    n = model.nv
    return tuple(V[index[k]].reshape(n, n, n) for k in ("qq", "vv", "qv", "dM"))


def _contract(pieces, masks, u, xd, axis: int, vec):
    """Σ of the pieces laid out as ``[x, y, z]``, contracted with ``vec`` along output axis ``axis``."""
    total = 0.0
    for order, F, G, value in pieces:
        out = order.replace(order[axis], "")
        for sign, k, w in value:
            total = total + sign * jnp.einsum(
                f"ab,bc,abx,cx,{order[axis]}->{out}", masks[F], masks[G], u[k], xd[:, _X.index(w)], vec
            )
    return total


def second_order_contractions(
    model: Model,
    q: Float[Array, " nq"],
    v: Float[Array, " nv"],
    a: Float[Array, " nv"],
    f_ext: Float[Array, "nb 6"] | None,
    dq: Float[Array, " nv"] | None,
    dv: Float[Array, " nv"] | None,
    da: Float[Array, " nv"] | None,
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"]]:
    """Directional derivative of ``(∂τ/∂q, ∂τ/∂v, M)`` along a tangent (δq in tangent coordinates, δv, δa), as
    contractions of the second-order tensors without forming them (digest §9); ``None`` stands for a zero tangent.

    ``d(∂τ/∂q) = Hqq·δq + Hqv·δv + dMᵀ·δa``, ``d(∂τ/∂v) = Hqvᵀ·δq + Hvv·δv``, ``dM = dM·δq``.
    """
    n = model.nv
    ch = chains(model)
    u, xd = _tables(model, q, v, a, f_ext)
    u = {k: x[jnp.arange(n)[:, None], ch.slot] for k, x in u.items()}  # chain layout -> dense (n, n, 6), 0 off chains
    xd = xd[:n]
    masks = {k: jnp.asarray(m, dtype=xd.dtype) for k, m in _masks(ch).items()}
    zero = jnp.zeros((n, n), dtype=model.inertias.dtype)
    d_dq, d_dv, d_M = zero, zero, zero
    if dq is not None:
        d_dq = d_dq + _contract(PIECES["qq"], masks, u, xd, 2, dq)
        d_dv = d_dv + _contract(PIECES["qv"], masks, u, xd, 1, dq)
        d_M = d_M + _contract(PIECES["dM"], masks, u, xd, 2, dq)
    if dv is not None:
        d_dq = d_dq + _contract(PIECES["qv"], masks, u, xd, 2, dv)
        d_dv = d_dv + _contract(PIECES["vv"], masks, u, xd, 2, dv)
    if da is not None:
        d_dq = d_dq + _contract(PIECES["dM"], masks, u, xd, 1, da)
    return d_dq, d_dv, d_M
