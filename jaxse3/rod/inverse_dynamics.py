"""RNEA inverse dynamics of a GVS rod and its analytical derivatives in one forward and one backward sweep.

Seed 003 §4 and App. C/D, following the verified pseudocode of digest 003 §2.2 (single rod, fixed base):

* forward pass over joints α: poses, body twists η_α and accelerations η̇_α (D14, D15), the joint terms
  R_α (20b), Q_α (20c, with the **minus** sign of the gravity term: the boxed D12 is a misprint, digest §8) and
  Y_α (26), and their transported sums S^B (= J), R^B, Q^B, Y^B (22a, 22b, 28a, 28b);
* point wrenches 𝓕_k = 𝓜_k η̇_k + ad*_{η_k}𝓜_kη_k − 𝓜_k Ad⁻¹_{g_k}𝓖 − 𝓕ext_k (16) and
  𝓝_k = \\bar{ad}*_{𝓜η} + ad*_η 𝓜 − 𝓜 ad_η (20a);
* backward pass: composite wrench 𝓕^C (22c), composite 𝓝^C, 𝓜^C (22d, 22e), U^S, P^S, V^S, W^S, E^S
  (22f, 22g, 28c, 33, 56), giving

  ID = Σ_α S_αᵀ 𝓕^C_α                                                                          (14)
  ∂ID/∂q  = Σ_α ∂(S_αᵀ𝓕^C)/∂q|_𝓕 + S_αᵀ(𝓝^C R^B + 𝓜^C Q^B + U^S + P^S − E^S)                  (21, 55)
  ∂ID/∂q̇ = Σ_α S_αᵀ(𝓝^C S^B + 𝓜^C Y^B + V^S)                                                    (27)
  ∂ID/∂q̈ = Σ_α S_αᵀ(𝓜^C S^B + W^S) = M(q)                                                      (32, 34)

Here ad*_V = −ad_Vᵀ and \\bar{ad}*_V = −``se3.adbar(V)``.

**Evaluated in the world frame** (a deviation in form, not in result, from the paper's body-frame recursions): with
``A_k = Ad_{g_k}`` the pose of point k, every quantity is carried as its world-frame image (``A_α S_α``,
``A_k η_k``, ``Ad*_{g_k} 𝓜_k Ad⁻¹_{g_k}``, …). The transports of the recursions then become identities: each forward
sum X^B_{α+1} = Ad⁻¹_{g_α,α+1}(X_α + X^B_α) is a prefix sum over the joints and each backward sum a suffix sum, and
the products S_αᵀ(·) are frame-invariant. Every ad_X M is a cross product on M's columns; joint-local terms (T, 𝓩 and
their q-derivatives, ∂(Sᵀ𝓕)/∂q) are evaluated in the joints' frames, vectorised over the joints. So one call runs a
few dozen batched operations instead of a sequential loop over the joints (on CPU, where the cost of these small
operations is their number, about 3× fewer kernels for the derivatives).

ID(q, q̇, q̈) = M q̈ − F(q, q̇) (eq. (8)) contains inertia, Coriolis/centrifugal terms and gravity; external loads
(:class:`~jaxse3.rod.forces.Loads`) enter the same recursion with the minus sign of (16) when passed to :func:`rnea`
(the public :func:`inverse_dynamics` has none; they belong to τ, :func:`jaxse3.rod.dynamics.generalized_forces`).

:func:`inverse_dynamics` carries a ``custom_jvp`` rule built from these derivatives, so ``jax.jacfwd`` and every
solver that linearises it run the analytical formulas (counted in :data:`ROD_RULE_CALLS`).
"""

from __future__ import annotations

import collections
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxse3 import se3
from jaxse3.lie._algebra import SE3
from jaxse3.lie.tangents import accumulate, jvp_of_rest
from jaxse3.rod.forces import Loads, external_wrenches
from jaxse3.rod.kinematics import _chain, check_state, joints
from jaxse3.rod.magnus import magnus_dZT, magnus_rates, magnus_ZT_apply

__all__ = ["RNEAResult", "rnea", "inverse_dynamics", "inverse_dynamics_derivatives", "mass_matrix", "ROD_RULE_CALLS",
           ]  # fmt: skip

#: Trace-time counter of the rod's custom_jvp rule invocations (keys "inverse_dynamics", "generalized_forces",
#: "forward_dynamics"); the tests use it to show that jax.jacfwd runs the analytical derivatives.
ROD_RULE_CALLS: collections.Counter = collections.Counter()

_LEVELS = ("id", "mass", "all")


class RNEAResult(NamedTuple):
    """Output of :func:`rnea`; entries not requested by ``level`` are None."""

    tau: jax.Array  # ID (n,)
    M: jax.Array | None  # ∂ID/∂q̈ = M(q) (n, n)
    dq: jax.Array | None  # ∂ID/∂q (n, n)
    dqd: jax.Array | None  # ∂ID/∂q̇ (n, n)


def _coad_star(eta):  # ad*_η = −ad_ηᵀ
    return -se3.ad(eta).swapaxes(-1, -2)


def rnea(rod, q: jax.Array, qd: jax.Array, qdd: jax.Array, loads: Loads | None = None, level: str = "id",
         inertia: bool = True) -> RNEAResult:  # fmt: skip
    """Recursive Newton–Euler inverse dynamics with optional analytical derivatives (seed 003 §4, digest §2.2).

    Args:
        rod: a :class:`~jaxse3.rod.model.Rod`.
        q, qd, qdd: (n_dof,) generalised coordinates, velocities, accelerations.
        loads: external physical loads; they enter 𝓕_k with a minus sign, so the result is ID − Σ J_kᵀ𝓕ext_k.
        level: ``"id"`` (ID only), ``"mass"`` (+ M), ``"all"`` (+ M, ∂ID/∂q, ∂ID/∂q̇).
        inertia: False drops inertia, Coriolis and gravity (only the loads term remains; used for τ's loads).

    The recursions are evaluated in the world frame (see the module docstring): every transported sum of the paper's
    forward pass (22a, 22b, 28a, 28b) is a prefix sum and every one of the backward pass (22c–22g, 28c, 33, 56) a
    suffix sum over the joints, so all joints are processed together, with no loop over them.
    """
    if level not in _LEVELS:
        raise ValueError(f"rnea: 'level' must be one of {_LEVELS}, got {level!r}")
    check_state(rod, q=q, qd=qd, qdd=qdd)
    q, qd, qdd = (jnp.asarray(a, dtype=jnp.result_type(float, a)) for a in (q, qd, qdd))
    deriv, need_mass = level == "all", level != "id"
    n, dtype = rod.n_dof, q.dtype
    grav = jnp.concatenate([jnp.zeros(3, dtype), rod.gravity.astype(dtype)])  # 𝓖 = (0, a_g)
    has_loads = loads is not None and not (loads.local is None and loads.world is None and loads.contact is None)
    if level == "id" and inertia and not has_loads:
        return RNEAResult(_rnea_tau(rod, q, qd, qdd, grav), None, None, None)
    inertial_derivs = deriv and inertia
    jt = joints(rod, q, qd, qdd, derivatives=inertial_derivs)

    # ---------------------------------------------------------------- forward: prefix sums over the joints
    g = _chain(rod.base_pose.astype(dtype), jt.step)  # (n_p, 4, 4) poses of the points (2a)
    Ainv = se3.Ad_inv(g)  # (n_p, 6, 6): world -> point frame (motion); its transpose takes wrenches to the world
    A = se3.Ad(g[:-1])  # joint α sits at point α: its frame -> world
    local = [jt.S, (jt.Sd @ qd)[..., None]]  # S_α, Ṡ_α q̇ (6, 1)
    if inertial_derivs:
        local += [jt.Sd, jt.dS_qd, jt.dSd_qd + jt.dS_qdd]
    world = jnp.split(A @ jnp.concatenate(local, axis=-1), np.cumsum([x.shape[-1] for x in local])[:-1], axis=-1)
    S, Sd_qd = world[0], world[1][..., 0]  # (n_p − 1, 6, n), (n_p − 1, 6)
    J = _prefix(S)  # (n_p, 6, n): world-frame body Jacobians Ad_{g_k} J_k (22a)
    eta = J @ qd  # Ad_{g_k} η_k
    v = S @ qd
    etad = _prefix(S @ qdd + Sd_qd + _ad(eta[:-1], v))  # Ad_{g_k} η̇_k (D15)

    # ---------------------------------------------------------------- point quantities (16), (20a), world frame
    AinvT = jnp.swapaxes(Ainv, -1, -2)
    F = jnp.zeros((rod.n_points, 6), dtype)
    if inertia:
        Mk = AinvT @ rod.inertia.astype(dtype) @ Ainv  # Ad*_{g_k} 𝓜_k Ad⁻¹_{g_k}
        Meta = _mv(Mk, eta)
        F = _mv(Mk, etad - grav) - _adbar(Meta, eta)  # (16): ad*_η = −ad_ηᵀ and ad_ηᵀ 𝓜η = adbar_{𝓜η} η
    dF = None
    if has_loads:
        ext = external_wrenches(rod, loads, g, Ainv @ J)  # local frames
        F = F - _mv(AinvT, ext[0])
        dF = AinvT @ ext[1] if deriv else None

    # ---------------------------------------------------------------- backward: suffix sums over the joints
    FC = _suffix(F[1:])  # (22c): 𝓕^C_α, the wrench of the points beyond joint α
    out = {"tau": S, "M": None, "dqd": None, "dq": None}  # Σ_α S_αᵀ(·) of each, below
    rows = {"tau": FC[..., None]}
    Jj = J[:-1]  # the Jacobian at joint α's own point (S^B_α)
    if need_mass and inertia:
        MC = _suffix(Mk[1:])  # (22e)
        if inertial_derivs:
            R = _ad_cols(eta[1:], S) + world[3]  # (20b), η_α⁺ = η_{α+1}
            Q = (_ad_cols(etad[1:], S) + _ad_cols(eta[1:], R) + _ad_cols(eta[:-1], world[3]) + world[4]
                 - _ad_cols(grav, S))  # (20c), gravity sign corrected (digest §8)  # fmt: skip
            Y = R + _ad_cols(eta[:-1], S) + world[2]  # (26)
            RB, QB, YB = (_prefix(X)[:-1] for X in (R, Q, Y))  # (22b, 28a, 28b)
            Nk = -se3.adbar(Meta) - jnp.swapaxes(se3.ad(eta), -1, -2) @ Mk - Mk @ se3.ad(eta)  # (20a)
            NC = _suffix(Nk[1:])  # (22d)
            m_prod = jnp.split(MC @ jnp.concatenate([S, Jj, Q, Y, QB, YB], -1), 6, axis=-1)
            n_prod = jnp.split(NC @ jnp.concatenate([S, Jj, R, RB], -1), 4, axis=-1)
            W = _suffix(m_prod[0])  # (33)
            U = _suffix(n_prod[2] + m_prod[2])  # (22f)
            V = _suffix(n_prod[0] + m_prod[3])  # (28c)
            rows["M"] = m_prod[1] + W  # (32)
            rows["dqd"] = n_prod[1] + m_prod[5] + V  # (27)
            acc = n_prod[3] + m_prod[4] + U
        else:
            MS, MJ = jnp.split(MC @ jnp.concatenate([S, Jj], -1), 2, axis=-1)
            rows["M"] = MJ + _suffix(MS)  # (32), (33)
    if deriv:
        P = _suffix(-_adbar_cols(FC, S))  # (22g)
        acc = P + acc if inertial_derivs else P
        if dF is not None:
            acc = acc - _suffix(dF[1:])  # (56)
        rows["dq"] = acc  # (21, 55), plus the ∂S/∂q|_𝓕 term below
    names = [k for k in out if k in rows]
    sizes = [rows[k].shape[-1] for k in names]
    total = jnp.einsum("ain,aim->nm", S, jnp.concatenate([rows[k] for k in names], -1))  # Σ_α S_αᵀ(·)
    res = dict(zip(names, jnp.split(total, np.cumsum(sizes)[:-1], axis=-1)))
    res["tau"] = res["tau"][:, 0]  # (14)
    if deriv:  # ∂(S_αᵀ𝓕^C_α)/∂q at fixed 𝓕^C (C29), in joint α's frame
        FC_local = _mv(jnp.swapaxes(A, -1, -2), FC)
        order = rod.magnus_order
        res["dq"] = res["dq"] + jnp.sum(jax.vmap(
            lambda Om, Z, Phi_c, h, f: Z.T @ se3.dexpT_jac(Om, f) @ Z + magnus_dZT(Phi_c, se3.dexpT_apply(Om, f), h, order)
        )(jt.Omega, jt.Z, rod.Phi_c, rod.h, FC_local), axis=0)  # fmt: skip
    zeros = jnp.zeros((n, n), dtype)
    M = res.get("M", zeros) if need_mass else None
    return RNEAResult(res["tau"], M, res.get("dq", zeros) if deriv else None,
                      res.get("dqd", zeros) if deriv else None)  # fmt: skip


def _prefix(x):
    """Σ_{α<k} x_α for k = 0 .. len(x): the sums at the points (the first is zero), over the leading axis."""
    c = jnp.cumsum(x, axis=0)
    return jnp.concatenate([jnp.zeros_like(c[:1]), c], axis=0)


def _suffix(x):
    """Σ_{β≥α} x_β over the leading axis."""
    return jnp.flip(jnp.cumsum(jnp.flip(x, 0), axis=0), 0)


def _mv(M, x):
    return jnp.einsum("...ij,...j->...i", M, x)


def _rows(M):
    """The 6 rows of columns M (..., 6, m)."""
    return tuple(M[..., i, :] for i in range(6))


def _entries(x):
    """The 6 entries of vectors x (..., 6), as (..., 1) arrays that broadcast against rows."""
    return tuple(x[..., i, None] for i in range(6))


def _ad_cols(x, M):
    """ad_x M for twists x (..., 6) and columns M (..., 6, m), as the cross products of ``SE3.ad_rows`` (no 6×6
    matrix: XLA fuses the products with their neighbours)."""
    return jnp.stack(SE3.ad_rows(_entries(x), _rows(M)), axis=-2)


def _adbar_cols(F, M):
    """adbar_F M (the columns ad_mᵀ F) for wrenches F (..., 6) and columns M (..., 6, m)."""
    return jnp.stack(SE3.adbar_rows(_entries(F), _rows(M)), axis=-2)


def _ad(x, y):
    return _ad_cols(x, y[..., None])[..., 0]


def _adbar(F, x):
    return _adbar_cols(F, x[..., None])[..., 0]


def _point_wrenches(Mk, g, eta, etad, grav):
    """𝓕_k = 𝓜_k η̇_k + ad*_{η_k} 𝓜_k η_k − 𝓜_k Ad⁻¹_{g_k} 𝓖 at every point (16), without external loads."""
    Meta = jnp.einsum("kij,kj->ki", Mk, eta)
    gloc = jnp.einsum("kij,j->ki", se3.Ad_inv(g), grav)
    return (jnp.einsum("kij,kj->ki", Mk, etad) + jnp.einsum("kij,kj->ki", _coad_star(eta), Meta)
            - jnp.einsum("kij,kj->ki", Mk, gloc))  # fmt: skip


def _rnea_tau(rod, q, qd, qdd, grav):
    """ID alone (14)–(16) with vectors only: the joint twist rates S_α q̇ = T Ω̇_α and S_α q̈ + Ṡ_α q̇ = T Ω̈_α + Ṫ Ω̇_α
    from :func:`~jaxse3.rod.magnus.magnus_rates`, and S_αᵀ𝓕^C_α = 𝓩_αᵀ(Tᵀ𝓕^C_α) from
    :func:`~jaxse3.rod.magnus.magnus_ZT_apply`; no (6, n) matrix S_α is formed (5× fewer flops for the CDM)."""
    order = rod.magnus_order
    xi = rod.Phi_c @ q + rod.xi_star_c  # (n_p − 1, n_c, 6)
    Om, Om_d, Om_dd = jax.vmap(lambda *a: magnus_rates(*a, order))(xi, rod.Phi_c @ qd, rod.Phi_c @ qdd, rod.h)
    S_qd = se3.dexp_apply(Om, Om_d)  # T Ω̇
    S_acc = se3.dexp_apply(Om, Om_dd) + se3.d_dexp_apply(Om, Om_d, Om_d)  # T Ω̈ + Ṫ Ω̇ (matrix-free)
    step = se3.exp(Om)

    def forward(carry, x):
        g, eta, etad = carry
        step, Ai, v, acc = x
        eta_p = eta + v
        return (g @ step, Ai @ eta_p, Ai @ (etad + acc + se3.ad(eta) @ v)), carry

    last, hist = jax.lax.scan(forward, (rod.base_pose.astype(q.dtype), jnp.zeros(6, q.dtype), jnp.zeros(6, q.dtype)),
                              (step, se3.Ad_inv(step), S_qd, S_acc))  # fmt: skip
    g, eta, etad = (jnp.concatenate([h, l[None]], axis=0) for h, l in zip(hist, last))
    F = _point_wrenches(rod.inertia.astype(q.dtype), g, eta, etad, grav)

    def backward(FC, x):
        As, F = x
        FC = As @ (F + FC)  # (22c)
        return FC, FC

    _, FC = jax.lax.scan(backward, jnp.zeros(6, q.dtype), (se3.coAd(step), F[1:]), reverse=True)
    w = se3.dexpT_apply(Om, FC)
    return jnp.sum(jax.vmap(lambda *a: magnus_ZT_apply(*a, order))(xi, rod.Phi_c, w, rod.h), axis=0)  # (14)


def inverse_dynamics_derivatives(rod, q: jax.Array, qd: jax.Array, qdd: jax.Array
                                 ) -> tuple[jax.Array, jax.Array, jax.Array]:  # fmt: skip
    """(∂ID/∂q, ∂ID/∂q̇, ∂ID/∂q̈ = M), each (n_dof, n_dof), in one forward and one backward pass (eqs. (23), (29), (34))."""
    r = rnea(rod, q, qd, qdd, level="all")
    return r.dq, r.dqd, r.M


def mass_matrix(rod, q: jax.Array) -> jax.Array:
    """M(q) = ∂ID/∂q̈ (eq. (34)), symmetric positive definite, (n_dof, n_dof)."""
    z = jnp.zeros_like(jnp.asarray(q, dtype=jnp.result_type(float, q)))
    return rnea(rod, q, z, z, level="mass").M


def _id_plain(rod, q, qd, qdd):
    return rnea(rod, q, qd, qdd).tau


@jax.custom_jvp
def _id(rod, q, qd, qdd):
    return _id_plain(rod, q, qd, qdd)


def _id_jvp(primals, tangents):
    ROD_RULE_CALLS["inverse_dynamics"] += 1
    rod, q, qd, qdd = primals
    _, dq, dqd, dqdd = tangents
    r = rnea(rod, q, qd, qdd, level="all")
    rest = jvp_of_rest(_id_plain, primals, tangents, analytic=(1, 2, 3))
    return r.tau, accumulate(r.tau, [(r.dq, dq), (r.dqd, dqd), (r.M, dqdd)], rest)


_id.defjvp(_id_jvp, symbolic_zeros=True)


def inverse_dynamics(rod, q: jax.Array, qd: jax.Array, qdd: jax.Array) -> jax.Array:
    """ID(q, q̇, q̈) = M(q) q̈ − F(q, q̇) (seed 003 eqs. (8), (14)–(16)), with gravity; (n_dof,).

    F holds Coriolis/centrifugal and gravity terms (not the external loads: those are in τ). Carries a custom_jvp
    rule built from :func:`inverse_dynamics_derivatives`.
    """
    check_state(rod, q=q, qd=qd, qdd=qdd)
    f = jnp.result_type(float)
    return _id(rod, *(jnp.asarray(a, dtype=jnp.result_type(f, a)) for a in (q, qd, qdd)))
