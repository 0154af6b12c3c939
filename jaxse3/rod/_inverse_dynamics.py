"""RNEA inverse dynamics of a GVS rod and its analytical derivatives in one forward and one backward pass.

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

Here ad*_V = −ad_Vᵀ and \\bar{ad}*_V = −``se3.adbar(V)``. ID(q, q̇, q̈) = M q̈ − F(q, q̇) (eq. (8)) contains inertia,
Coriolis/centrifugal terms and gravity; external loads (:class:`~jaxse3.rod.forces.Loads`) enter the same recursion
with the minus sign of (16) when passed to :func:`rnea` (the public :func:`inverse_dynamics` has none; they belong
to τ, :func:`jaxse3.rod.dynamics.generalized_forces`).

:func:`inverse_dynamics` carries a ``custom_jvp`` rule built from these derivatives, so ``jax.jacfwd`` and every
solver that linearises it run the analytical formulas (counted in :data:`ROD_RULE_CALLS`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxse3 import se3
from jaxse3.lie.tangents import RULE_CALLS, accumulate, custom_rule, jvp_of_rest
from jaxse3.rod.forces import Loads, external_wrenches
from jaxse3.rod.kinematics import check_state, joints
from jaxse3.rod.magnus import magnus_dZT, magnus_rates, magnus_ZT_apply

__all__ = [
    "RNEAResult",
    "rnea",
    "inverse_dynamics",
    "inverse_dynamics_derivatives",
    "mass_matrix",
    "ROD_RULE_CALLS",
]

#: The package's rule counter (:data:`jaxse3.lie.tangents.RULE_CALLS`), under the name the rod has always used; its
#: keys "inverse_dynamics", "generalized_forces", "forward_dynamics" show that jax.jacfwd runs the rod's formulas.
ROD_RULE_CALLS = RULE_CALLS

_LEVELS = ("id", "mass", "all")


class RNEAResult(NamedTuple):
    """Output of :func:`rnea`; entries not requested by ``level`` are None."""

    tau: jax.Array  # ID (n,)
    M: jax.Array | None  # ∂ID/∂q̈ = M(q) (n, n)
    dq: jax.Array | None  # ∂ID/∂q (n, n)
    dqd: jax.Array | None  # ∂ID/∂q̇ (n, n)


def _coad_star(eta):  # ad*_η = −ad_ηᵀ
    return -se3.ad(eta).swapaxes(-1, -2)


def rnea(
    rod,
    q: jax.Array,
    qd: jax.Array,
    qdd: jax.Array,
    loads: Loads | None = None,
    level: str = "id",
    inertia: bool = True,
) -> RNEAResult:
    """Recursive Newton–Euler inverse dynamics with optional analytical derivatives (seed 003 §4, digest §2.2).

    Args:
        rod: a :class:`~jaxse3.rod.model.Rod`.
        q, qd, qdd: (n_dof,) generalised coordinates, velocities, accelerations.
        loads: external physical loads; they enter 𝓕_k with a minus sign, so the result is ID − Σ J_kᵀ𝓕ext_k.
        level: ``"id"`` (ID only), ``"mass"`` (+ M), ``"all"`` (+ M, ∂ID/∂q, ∂ID/∂q̇).
        inertia: False drops inertia, Coriolis and gravity (only the loads term remains; used for τ's loads).
    """
    if level not in _LEVELS:
        raise ValueError(f"rnea: 'level' must be one of {_LEVELS}, got {level!r}")
    check_state(rod, q=q, qd=qd, qdd=qdd)
    q, qd, qdd = (jnp.asarray(a, dtype=jnp.result_type(float, a)) for a in (q, qd, qdd))
    deriv, need_mass = level == "all", level != "id"
    jt = joints(rod, q, qd, qdd, derivatives=deriv and inertia)
    n, dtype = rod.n_dof, q.dtype
    grav = jnp.concatenate([jnp.zeros(3, dtype), rod.gravity.astype(dtype)])  # 𝓖 = (0, a_g)
    zero6n = jnp.zeros((6, n), dtype)
    has_loads = loads is not None and not (loads.local is None and loads.world is None and loads.contact is None)
    if level == "id" and inertia and not has_loads:
        return RNEAResult(_rnea_tau(rod, q, qd, qdd, grav), None, None, None)
    want_J = need_mass or has_loads

    # ---------------------------------------------------------------- forward pass (joints α = 1 .. n_p − 1)
    def forward(carry, x):
        g, eta, etad, B = carry
        step, Ai, S, Sd, dS_qd, dS_qdd, dSd_qd = x
        eta_p = eta + S @ qd  # η_α⁺
        etad_p = etad + S @ qdd + Sd @ qd + se3.ad(eta) @ (S @ qd)  # η̇_α⁺
        out = dict(g=g, eta=eta, etad=etad, B=B)
        newB = B
        if want_J or (deriv and inertia):
            parts = {"S": S}
            if deriv and inertia:
                gloc = se3.Ad_inv(g) @ grav  # Ad⁻¹_{g_α} 𝓖
                R = se3.ad(eta_p) @ S + dS_qd  # (20b)
                Q = (
                    se3.ad(etad_p) @ S + se3.ad(eta_p) @ R + se3.ad(eta) @ dS_qd + dSd_qd + dS_qdd - se3.ad(gloc) @ S
                )  # (20c), gravity sign corrected (digest §8)
                Y = R + se3.ad(eta) @ S + Sd  # (26)
                parts.update(R=R, Q=Q, Y=Y)
                out.update(R=R, Q=Q, Y=Y)
            newB = {k: Ai @ (parts[k] + B[k]) for k in B}  # (22a, 22b, 28a, 28b)
        return (g @ step, Ai @ eta_p, Ai @ etad_p, newB), out

    B0 = {}
    if want_J:
        B0["S"] = zero6n
    if deriv and inertia:
        B0.update(R=zero6n, Q=zero6n, Y=zero6n)
    init = (rod.base_pose.astype(dtype), jnp.zeros(6, dtype), jnp.zeros(6, dtype), B0)
    xs = (jt.step, jt.Ad_inv, jt.S, jt.Sd, jt.dS_qd, jt.dS_qdd, jt.dSd_qd)
    last, hist = jax.lax.scan(forward, init, xs)

    def points(name, final):  # per-point history + the tip
        return jax.tree.map(lambda h, l: jnp.concatenate([h, l[None]], axis=0), hist[name], final)

    g, eta, etad = points("g", last[0]), points("eta", last[1]), points("etad", last[2])
    XB = points("B", last[3])  # X^B at every point

    # ---------------------------------------------------------------- point quantities (16), (20a)
    Mk = rod.inertia.astype(dtype)
    F = _point_wrenches(Mk, g, eta, etad, grav) if inertia else jnp.zeros((rod.n_points, 6), dtype)
    ext = external_wrenches(rod, loads, g, XB["S"]) if has_loads else None
    dFext = None
    if ext is not None:
        F = F - ext[0]
        dFext = ext[1] if deriv else None
    Nk = None
    if deriv and inertia:
        adeta = se3.ad(eta)
        Nk = -se3.adbar(jnp.einsum("kij,kj->ki", Mk, eta)) - jnp.swapaxes(adeta, -1, -2) @ Mk - Mk @ adeta

    # ---------------------------------------------------------------- backward pass (α = n_p − 1 .. 1)
    def backward(carry, x):
        c = carry
        As, Ai, S, Om, Z, Phi_c, h, pt, jq, bq = x
        out = {}
        FC = As @ (pt["F"] + c["FC"])  # (22c)
        out["tau"] = S.T @ FC  # (14)
        new = {"FC": FC}
        if need_mass and inertia:
            MC = As @ (pt["M"] + c["MC"]) @ Ai  # (22e)
            W = MC @ S + As @ c["W"]  # (33)
            out["M"] = S.T @ (MC @ bq["S"] + W)  # (32)
            new.update(MC=MC, W=W)
        if deriv:
            P = -se3.adbar(FC) @ S + As @ c["P"]  # (22g)
            acc = P
            if inertia:
                NC = As @ (pt["N"] + c["NC"]) @ Ai  # (22d)
                U = NC @ jq["R"] + MC @ jq["Q"] + As @ c["U"]  # (22f)
                V = NC @ S + MC @ jq["Y"] + As @ c["V"]  # (28c)
                acc = acc + NC @ bq["R"] + MC @ bq["Q"] + U
                out["dqd"] = S.T @ (NC @ bq["S"] + MC @ bq["Y"] + V)  # (27)
                new.update(NC=NC, U=U, V=V)
            if dFext is not None:
                E = As @ (pt["dF"] + c["E"])  # (56)
                acc = acc - E
                new["E"] = E
            w = se3.dexpT_apply(Om, FC)  # T ᵀ𝓕^C
            dSTF = Z.T @ se3.dexpT_jac(Om, FC) @ Z + magnus_dZT(Phi_c, w, h, rod.magnus_order)  # (C29)
            out["dq"] = dSTF + S.T @ acc  # (21, 55)
            new["P"] = P
        return new, out

    c0 = {"FC": jnp.zeros(6, dtype)}
    if need_mass and inertia:
        c0.update(MC=jnp.zeros((6, 6), dtype), W=zero6n)
    if deriv:
        c0["P"] = zero6n
        if inertia:
            c0.update(NC=jnp.zeros((6, 6), dtype), U=zero6n, V=zero6n)
        if dFext is not None:
            c0["E"] = zero6n
    pt = {"F": F[1:]}
    if need_mass and inertia:
        pt["M"] = Mk[1:]
    if Nk is not None:
        pt["N"] = Nk[1:]
    if dFext is not None:
        pt["dF"] = dFext[1:]
    jq = {k: hist[k] for k in ("R", "Q", "Y") if k in hist}
    bq = {k: v[:-1] for k, v in XB.items()}
    xs = (jt.coAd, jt.Ad_inv, jt.S, jt.Omega, jt.Z, rod.Phi_c, rod.h, pt, jq, bq)
    _, outs = jax.lax.scan(backward, c0, xs, reverse=True)
    tot = {k: jnp.sum(v, axis=0) for k, v in outs.items()}
    zeros = jnp.zeros((n, n), dtype)
    M = tot.get("M", zeros) if need_mass else None
    return RNEAResult(tot["tau"], M, tot.get("dq", zeros) if deriv else None, tot.get("dqd", zeros) if deriv else None)


def _point_wrenches(Mk, g, eta, etad, grav):
    """𝓕_k = 𝓜_k η̇_k + ad*_{η_k} 𝓜_k η_k − 𝓜_k Ad⁻¹_{g_k} 𝓖 at every point (16), without external loads."""
    Meta = jnp.einsum("kij,kj->ki", Mk, eta)
    gloc = jnp.einsum("kij,j->ki", se3.Ad_inv(g), grav)
    return (
        jnp.einsum("kij,kj->ki", Mk, etad)
        + jnp.einsum("kij,kj->ki", _coad_star(eta), Meta)
        - jnp.einsum("kij,kj->ki", Mk, gloc)
    )


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

    last, hist = jax.lax.scan(
        forward,
        (rod.base_pose.astype(q.dtype), jnp.zeros(6, q.dtype), jnp.zeros(6, q.dtype)),
        (step, se3.Ad_inv(step), S_qd, S_acc),
    )
    g, eta, etad = (jnp.concatenate([h, l[None]], axis=0) for h, l in zip(hist, last))
    F = _point_wrenches(rod.inertia.astype(q.dtype), g, eta, etad, grav)

    def backward(FC, x):
        As, F = x
        FC = As @ (F + FC)  # (22c)
        return FC, FC

    _, FC = jax.lax.scan(backward, jnp.zeros(6, q.dtype), (se3.coAd(step), F[1:]), reverse=True)
    w = se3.dexpT_apply(Om, FC)
    return jnp.sum(jax.vmap(lambda *a: magnus_ZT_apply(*a, order))(xi, rod.Phi_c, w, rod.h), axis=0)  # (14)


def inverse_dynamics_derivatives(
    rod, q: jax.Array, qd: jax.Array, qdd: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(∂ID/∂q, ∂ID/∂q̇, ∂ID/∂q̈ = M), each (n_dof, n_dof), in one forward and one backward pass (eqs. (23), (29),
    (34))."""
    r = rnea(rod, q, qd, qdd, level="all")
    return r.dq, r.dqd, r.M


def mass_matrix(rod, q: jax.Array) -> jax.Array:
    """M(q) = ∂ID/∂q̈ (eq. (34)), symmetric positive definite, (n_dof, n_dof)."""
    z = jnp.zeros_like(jnp.asarray(q, dtype=jnp.result_type(float, q)))
    return rnea(rod, q, z, z, level="mass").M


def _id_plain(rod, q, qd, qdd):
    return rnea(rod, q, qd, qdd).tau


def _id_jvp(primals, tangents):
    rod, q, qd, qdd = primals
    _, dq, dqd, dqdd = tangents
    r = rnea(rod, q, qd, qdd, level="all")
    rest = jvp_of_rest(_id_plain, primals, tangents, analytic=(1, 2, 3))
    return r.tau, accumulate(r.tau, [(r.dq, dq), (r.dqd, dqd), (r.M, dqdd)], rest)


_id = custom_rule("inverse_dynamics", _id_plain, _id_jvp)


def inverse_dynamics(rod, q: jax.Array, qd: jax.Array, qdd: jax.Array) -> jax.Array:
    """ID(q, q̇, q̈) = M(q) q̈ − F(q, q̇) (seed 003 eqs. (8), (14)–(16)), with gravity; (n_dof,).

    F holds Coriolis/centrifugal and gravity terms (not the external loads: those are in τ). Carries a custom_jvp
    rule built from :func:`inverse_dynamics_derivatives`.
    """
    check_state(rod, q=q, qd=qd, qdd=qdd)
    f = jnp.result_type(float)
    return _id(rod, *(jnp.asarray(a, dtype=jnp.result_type(f, a)) for a in (q, qd, qdd)))
