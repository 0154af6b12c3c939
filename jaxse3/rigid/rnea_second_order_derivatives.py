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
is a *piece* ``P[a, b, c] = F[a, b] G[b, c] U[a, b] · W[c]`` over DoF indices (a, b, c) = (ip, jt, kr), where the
masks ``F``, ``G`` encode the chain condition and the ``j ≠ i`` / ``k ≠ j`` branches, ``U`` is one of seven
12-vectors of u's per chain pair and ``W`` one of seven 12-vectors of S, Ψ̇, Ψ̈, Ṡ columns per DoF (:data:`PIECES`);
the pieces of one tensor have disjoint supports (their sum is Algorithm 1's sequence of writes).

Work proportional to the chains (digest §9): the u's are computed only for the chain pairs (a, b), ``joint(b) ⪯
joint(a)``, in the chain layout of :mod:`jaxse3.rigid._chains` (n × L pairs, L − 1 = the most DoFs on one root path,
instead of n²); the products ``Y[a, l, c] = U[a, l] · W[c]`` of the 16 (U, W) combinations that occur are a few
batched matrix products, and each tensor is then **one** gather from Y with index arrays built once per tree at trace
time (structurally zero entries point at a padded slot, an exact zero): no n³ mask products and no scatters. The
contractions of the ``custom_jvp`` rule (:func:`second_order_contractions`) never form an n³ array: every piece is a
product of two-index factors, so its contraction with a tangent along any axis is an einsum of n²-sized operands.

Errata applied (digest §7): loop index of line 2; ``I×s_p`` → ``I(s_p×)`` in lines 18, 20; the composite force
``f_i^C`` in line 22; ``B`` without the ½ of eq. (6) throughout.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from jaxse3.rigid import _spatial
from jaxse3.rigid._chains import Chains, chains, chains_of
from jaxse3.rigid.model import Model
from jaxse3.rigid.rnea import check_state
from jaxse3.rigid.rnea_derivatives import coriolis_factor, crf_bar, crf_times, cross_sandwich, ground_pass

__all__ = ["rnea_second_order_derivatives", "second_order_contractions", "PIECES"]

#: U rows (12-vectors per chain pair (a, b)): U0 = (u8, u9), U1 = (u1, u2), U2 = (u5, u9), U3 = (u3, u11),
#: U4 = (u6, u7), U5 = (u10, u4), U6 = (u12, 0). W rows (12-vectors per DoF c): W0 = (Ψ̇, Ψ̈), W1 = (s, 0),
#: W2 = (0, −Ψ̇), W3 = (s, Ṡ + Ψ̇), W4 = (0, Ψ̇), W5 = (0, s), W6 = (0, −s).
#: Pieces per tensor: (output axes as letters of (a, b, c), F, G, U, W) with masks E (chain), N (chain, different
#: joints), Q (same joint), EQ (chain and same joint); Algorithm 1 line in the comment.
PIECES = {
    "qq": (
        ("abc", "E", "E", 0, 0),  # line 44: p2
        ("acb", "E", "N", 0, 0),  # line 53
        ("bca", "N", "E", 1, 0),  # line 46
        ("bac", "N", "E", 1, 0),  # line 46
        ("cab", "E", "N", 3, 1),  # line 53: s_rᵀ u3
        ("cba", "N", "N", 3, 1),  # line 59
    ),
    "qv": (
        ("acb", "E", "E", 3, 2),  # line 44: −p1
        ("bac", "N", "E", 1, 3),  # line 47
        ("bca", "N", "E", 3, 4),  # line 48: p1
        ("abc", "E", "N", 2, 3),  # line 55
        ("cba", "E", "N", 4, 1),  # line 56: s_rᵀ u6
        ("cab", "N", "N", 4, 5),  # line 60: s_rᵀ u7
    ),
    "vv": (
        ("bca", "N", "E", 3, 5),  # line 49: u11ᵀ s_r
        ("bac", "N", "E", 3, 5),  # line 49
        ("abc", "E", "N", 3, 6),  # line 54: −u11ᵀ s_r
        ("acb", "E", "N", 3, 6),  # line 54
        ("cab", "N", "N", 5, 1),  # line 61: s_rᵀ u10
        ("cba", "N", "N", 5, 1),  # line 61
        ("cba", "EQ", "N", 5, 5),  # line 63 (j = i): s_rᵀ u4
        ("abc", "E", "Q", 1, 6),  # line 66 (k = j): −u2ᵀ s_r
    ),
    "dM": (
        ("cba", "N", "E", 6, 1),  # line 50: s_rᵀ u12
        ("bca", "N", "N", 6, 1),  # line 50; for k = j the first copy already covers both orders
        ("cab", "E", "N", 0, 5),  # line 57: s_rᵀ u9
        ("acb", "E", "N", 0, 5),  # line 57
    ),
}


def _masks(ch: Chains) -> dict[str, np.ndarray]:
    return {"E": ch.E, "N": ch.E & ~ch.same, "Q": ch.same, "EQ": ch.E & ch.same}


#: the W kinds that each U kind meets in the pieces: ((ku, (kw, ...)), ...)
_COMBOS = sorted({(ku, kw) for pieces in PIECES.values() for *_, ku, kw in pieces})
_BY_U = tuple((ku, tuple(kw for u, kw in _COMBOS if u == ku)) for ku in sorted({u for u, _ in _COMBOS}))


@functools.lru_cache(maxsize=None)
def _gather_indices(parents: tuple[int, ...], joint_types: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Per tensor, the flat indices of its n³ entries into the concatenated products ``Y_ku[a, l, w, c] = U_ku[a, l] ·
    W_w[c]`` (ku, w over :data:`_BY_U`); entries outside every piece point at a padded slot (an exact zero)."""
    ch = chains_of(parents, joint_types)
    n, L = ch.chain.shape
    masks = _masks(ch)
    offsets = np.cumsum([0] + [len(kws) * n * L * n for _, kws in _BY_U])
    out = {}
    for name, pieces in PIECES.items():
        index = np.full((n, n, n), (L - 1) * len(_BY_U[0][1]) * n)  # Y_0[0, L - 1, 0, 0] = 0
        taken = np.zeros((n, n, n), dtype=bool)
        for order, F, G, ku, kw in pieces:
            a, b, c = np.nonzero(masks[F][:, :, None] & masks[G][None, :, :])
            var = {"a": a, "b": b, "c": c}
            pos = tuple(var[x] for x in order)
            assert not taken[pos].any(), (name, order)  # disjoint supports
            taken[pos] = True
            k = [u for u, _ in _BY_U].index(ku)
            kws = _BY_U[k][1]
            index[pos] = offsets[k] + ((a * L + ch.slot[a, b]) * len(kws) + kws.index(kw)) * n + c
        out[name] = index.ravel()
    return out


def _tables(model: Model, q, v, a, f_ext=None) -> tuple[list[Array], list[Array]]:
    """The seven U row kinds in the chain layout, (n, L, 12) each, and the seven W row kinds, (n, 12) each."""
    ch = chains(model)
    g = ground_pass(model, q, v, a, f_ext)
    IC, BC, fC = g.IC[ch.joint], g.BC[ch.joint], g.fC[ch.joint]
    S, Sd, Pd, Pdd = g.S, g.S_dot, g.Psi_dot, g.Psi_ddot
    mv = functools.partial(jnp.einsum, "aij,aj->ai")
    # per (i, p): lines 15–24 (B without the ½)
    Bs = coriolis_factor(IC, S)
    Bpsi = coriolis_factor(IC, Pd)
    A0 = crf_bar(mv(IC, S))
    A1 = cross_sandwich(S, IC)
    A2 = 2.0 * A0 - Bs
    A3 = Bpsi + cross_sandwich(S, BC)
    A4 = crf_bar(jnp.einsum("aji,aj->ai", BC, S))
    A5 = crf_bar(mv(BC, Pd) + mv(IC, Pdd) + _spatial.cross_force(S, fC))  # composite f^C (erratum of line 22)
    A6 = crf_times(S, IC) + A0
    A7 = crf_bar(mv(BC, S) + mv(IC, Pd + Sd))
    # per chain pair (a, b) = (ip, jt): lines 29–36, u = A(a) x(b) with x gathered in the chain layout (n, L, 6)
    zero = jnp.zeros((1, 6), dtype=S.dtype)

    def on_chain(x):
        return jnp.concatenate([x, zero])[ch.chain]

    x = {"s": on_chain(S), "psi_dot": on_chain(Pd), "psi_ddot": on_chain(Pdd), "psi_dot+s_dot": on_chain(Pd + Sd)}

    def ax(A, name):  # A(a) x(b), (n, L, 6); one product per (A, x): no stacked arrays larger than the u's
        return jnp.einsum("aij,alj->ali", A, x[name])

    def atx(A, name):  # A(a)ᵀ x(b)
        return jnp.einsum("aji,alj->ali", A, x[name])

    u1, u2 = atx(A3, "s"), atx(A1, "s")
    u3 = ax(A3, "psi_dot") + ax(A1, "psi_ddot") + ax(A5, "s")
    u4 = ax(A6, "s")
    u5 = ax(A2, "psi_dot") + ax(A4, "s")
    u6 = ax(Bs, "psi_dot") + ax(A7, "s")
    u7 = ax(A3, "s") + ax(A1, "psi_dot+s_dot")
    u8 = ax(A4, "s") - atx(Bs, "psi_dot")
    u9, u10, u11, u12 = ax(A0, "s"), ax(Bs, "s"), atx(Bs, "s"), ax(A1, "s")
    cat = functools.partial(jnp.concatenate, axis=-1)
    U = [cat([u8, u9]), cat([u1, u2]), cat([u5, u9]), cat([u3, u11]), cat([u6, u7]), cat([u10, u4]),
         cat([u12, jnp.zeros_like(u12)])]  # fmt: skip
    z = jnp.zeros_like(S)
    W = [cat([Pd, Pdd]), cat([S, z]), cat([z, -Pd]), cat([S, Sd + Pd]), cat([z, Pd]), cat([z, S]), cat([z, -S])]
    return U, W


def rnea_second_order_derivatives(model: Model, q, v, a, f_ext=None) -> tuple[Array, Array, Array, Array]:
    """IDSVA SO (seed 002 Algorithm 1 with the errata of digest §7): ``(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq)``.

    Layouts (all ``(nv, nv, nv)``): ``d2tau_dq2[τ, q_j, q_k] = ∂_k ∂_j τ`` (tangent space, right perturbation; not
    symmetric inside a multi-DoF joint), ``d2tau_dv2[τ, v, v]``, ``d2tau_dqdv[τ, q, v]``, ``dM_dq[row, col, q]``
    (the **last** index is the q index). ``f_ext`` (nb, 6): body-frame external wrenches (optional).
    """
    q, v, a, *f_ext = check_state("rnea_second_order_derivatives", model, q, v, a, f_ext)
    U, W = _tables(model, q, v, a, f_ext[0] if f_ext else None)
    Y = jnp.concatenate([jnp.einsum("alx,kcx->alkc", U[ku], jnp.stack([W[kw] for kw in kws])).ravel()
                         for ku, kws in _BY_U])  # fmt: skip
    index = _gather_indices(model.parents, model.joint_types)
    n = model.nv
    return tuple(Y[index[k]].reshape(n, n, n) for k in ("qq", "vv", "qv", "dM"))


def _contract(pieces, masks, U, W, axis: int, vec):
    """Σ of the pieces laid out as ``[x, y, z]``, contracted with ``vec`` along output axis ``axis``."""
    total = 0.0
    for order, F, G, ku, kw in pieces:
        out = order.replace(order[axis], "")
        total = total + jnp.einsum(f"ab,bc,abx,cx,{order[axis]}->{out}", masks[F], masks[G], U[ku], W[kw], vec)
    return total


def second_order_contractions(model: Model, q, v, a, f_ext, dq, dv, da):
    """Directional derivative of ``(∂τ/∂q, ∂τ/∂v, M)`` along a tangent (δq in tangent coordinates, δv, δa), as
    contractions of the second-order tensors without forming them (digest §9); ``None`` stands for a zero tangent.

    ``d(∂τ/∂q) = Hqq·δq + Hqv·δv + dMᵀ·δa``, ``d(∂τ/∂v) = Hqvᵀ·δq + Hvv·δv``, ``dM = dM·δq``.
    """
    n = model.nv
    ch = chains(model)
    U, W = _tables(model, q, v, a, f_ext)
    U = [u[jnp.arange(n)[:, None], ch.slot] for u in U]  # chain layout -> dense (n, n, 12), zero off the chains
    masks = {k: jnp.asarray(m, dtype=W[0].dtype) for k, m in _masks(ch).items()}
    zero = jnp.zeros((n, n), dtype=model.inertias.dtype)
    d_dq, d_dv, d_M = zero, zero, zero
    if dq is not None:
        d_dq = d_dq + _contract(PIECES["qq"], masks, U, W, 2, dq)
        d_dv = d_dv + _contract(PIECES["qv"], masks, U, W, 1, dq)
        d_M = d_M + _contract(PIECES["dM"], masks, U, W, 2, dq)
    if dv is not None:
        d_dq = d_dq + _contract(PIECES["qv"], masks, U, W, 2, dv)
        d_dv = d_dv + _contract(PIECES["vv"], masks, U, W, 2, dv)
    if da is not None:
        d_dq = d_dq + _contract(PIECES["dM"], masks, U, W, 1, da)
    return d_dq, d_dv, d_M
