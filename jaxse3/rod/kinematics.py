"""GVS kinematics of one rod with a fixed base: joints, poses, body Jacobians and their derivatives (seed 003 eq. (2)).

A rod is a chain of n_p − 1 "pseudo-rigid joints": joint α joins computational point α to α + 1 with the constant twist
Ω_α of the Magnus expansion (:mod:`jaxse3.rod.magnus`) and the motion subspace

    S_α = T(Ω_α) 𝓩_α                                                     (C15)

where the tangent operator T(Ω) = Σ_k ad_Ω^k/(k+1)! of the paper (App. A) is the right-trivialised ``se3.dexp(Ω)``
(checked in the tests), so T, Ṫ = ``d_dexp(Ω, Ω̇)`` and all its q-derivatives reuse the closed forms of
:mod:`jaxse3.lie` — Taylor-switched, finite with finite gradients at θ = 0 (the straight rod) exactly. The joint-level
derivative terms of App. C are written with the evaluation-map Jacobians of dexp instead of the paper's f_r series:

* (∂S/∂q) v  = dexp_jac(Ω, 𝓩v) 𝓩 + T dZ(v)                                                    (C19, C20)
* (∂Ṡ/∂q) q̇ = dexp_jac_dir(Ω, Ω̇, Ω̇) 𝓩 + (d_dexp(Ω, Ω̇) + dexp_jac(Ω, Ω̇)) 𝓩̇ + dexp_jac(Ω, 𝓩̇q̇) 𝓩    (C24)
* ∂(Sᵀ𝓕)/∂q = 𝓩ᵀ dexpT_jac(Ω, 𝓕) 𝓩 + dZT(T ᵀ𝓕)                                                 (C29)

with Ω̇ = 𝓩q̇ and dZ, dZT from :mod:`jaxse3.rod.magnus` (𝓩̇q̇ does not depend on q). The forward recursions are
``g_{α+1} = g_α exp(Ω̂_α)``, ``J_{α+1} = Ad⁻¹_{exp Ω_α}(J_α + S_α)``, ``J̇_{α+1} = Ad⁻¹(J̇_α + Ṡ_α + ad_{η_α}S_α)``
(eq. (2a)–(2c)). J is the body (local-frame) geometric Jacobian: δg = g (J δq)^.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from jaxse3 import se3
from jaxse3.lie import se2
from jaxse3.rod.magnus import collocation_nodes, magnus_dZ, magnus_dZT, magnus_omega, magnus_rates, magnus_Z
from jaxse3.rod.model import Rod

__all__ = [
    "UNROLLED_STEPS",
    "tangent_operator",
    "joint_twists",
    "forward_kinematics",
    "tip_pose",
    "tip_position",
    "strain_at",
    "pose_at",
    "body_jacobians",
    "differential_kinematics",
    "Joints",
    "joints",
    "check_state",
    "JointRates",
    "joint_rates",
    "joint_force_jacobian_sum",
]

#: The longest pass over the joints (in scan steps: joints, or runs of constant strain) that runs unrolled.
UNROLLED_STEPS = 4


def tangent_operator(Omega: Float[Array, "... 6"]) -> Float[Array, "... 6 6"]:
    """T(Ω) = I + Σ_{r=1}^4 f_r(θ) ad_Ω^r of seed 003 App. A = ``se3.dexp(Ω)`` (right-trivialised), (..., 6, 6)."""
    return se3.dexp(Omega)


def check_state(rod: Rod, **arrays: ArrayLike | None) -> None:
    """Trace-time shape check of generalised coordinates/velocities/accelerations/inputs against ``rod``."""
    for name, a in arrays.items():
        if a is None:
            continue
        want = (rod.n_tendons,) if name == "u" else (rod.n_dof,)
        if jnp.shape(a) != want:
            raise ValueError(f"jaxse3.rod: argument '{name}' must have shape {want} for this rod, got {jnp.shape(a)}")


def joint_twists(rod: Rod, q: Float[Array, " n_dof"]) -> tuple[Float[Array, "n_p-1 6"], Float[Array, "n_p-1 6 n_dof"]]:
    """Ω_α and 𝓩_α of every joint: (n_p − 1, 6) and (n_p − 1, 6, n_dof) (C1, C5)."""
    xi_c = rod.Phi_c @ q + rod.xi_star_c
    order = rod.expansion_order
    Om = jax.vmap(lambda x, h: magnus_omega(x, h, order))(xi_c, rod.h)
    Z = jax.vmap(lambda x, P, h: magnus_Z(x, P, h, order))(xi_c, rod.Phi_c, rod.h)
    return Om, Z


class JointRates(NamedTuple):
    """The joint twists and their right-trivialised rates (leading axis n_p − 1)."""

    Omega: jax.Array  # Ω_α (6,)
    Z: jax.Array  # 𝓩_α (6, n)
    T: jax.Array  # T(Ω_α) = dexp(Ω_α) (6, 6)
    vel: jax.Array  # T Ω̇_α = S_α q̇ (6,)
    acc: jax.Array  # T Ω̈_α + Ṫ Ω̇_α = S_α q̈ + Ṡ_α q̇ (6,)


def joint_rates(
    rod: Rod,
    q: Float[Array, " n_dof"],
    qd: Float[Array, " n_dof"] | None,
    qdd: Float[Array, " n_dof"] | None,
    anchored: bool = False,
    planar: bool = False,
) -> JointRates:
    """Ω_α, 𝓩_α, T(Ω_α) and the twist rates S_α q̇ = T Ω̇ and S_α q̈ + Ṡ_α q̇ = T Ω̈ + Ṫ Ω̇ of every joint (C1, C5, C6,
    C8, C15, C21), with Ω̇ = 𝓩q̇ and Ω̈ = 𝓩q̈ + 𝓩̇q̇; ``qd = qdd = None`` is the rod at rest (zero rates).

    Joint by joint, Ω_α, Ω̇_α, Ω̈_α come from the Magnus expansion (on a run of ``rod.strain_run`` intervals of constant
    strain ξ, Ω_α = h_α ξ exactly) and T, Ṫ Ω̇ from ``se3.dexp`` and ``se3.d_dexp_apply``.

    ``anchored`` (for runs of constant strain): joint α goes from the run's first point (its anchor) to point α + 1,
    Ω = (X_{α+1} − X_anchor) ξ, so that every point of a run follows from its anchor alone
    (:func:`jaxse3.rod._inverse_dynamics.rnea` evaluates a run's points side by side), and
    :func:`~jaxse3.lie.se3.dexp_rates` forms the powers of ad_ξ once per run. Without runs it changes nothing.

    ``planar`` (a ``rod.planar`` rod): the twists' in-plane components (ω_z, v_x, v_y) on SE(2) (:mod:`jaxse3.lie.se2`):
    (…, 3) vectors and (…, 3, 3) matrices, equal to the rows and columns ``se2.PLANE`` of the spatial ones.
    """
    m = rod.strain_run
    rest, zero = qd is None and qdd is None, jnp.zeros_like(q)
    qd, qdd = (zero if v is None else v for v in (qd, qdd))
    if planar:
        return _planar_rates(*_twist_rates(rod, q, qd, qdd, anchored, se2.PLANE), rest)
    if m > 1 and anchored:  # ξ, Φ of each run at the first collocation point of its first interval
        xi, Phi = rod.Phi_c[::m, 0] @ q + rod.xi_star_c[::m, 0], rod.Phi_c[::m, 0]  # (n_runs, 6), (n_runs, 6, n)
        rates = se3.dexp_rates(xi, Phi @ qd, Phi @ qdd, _run_scales(rod))
        Om, _, _, Z = _twist_rates(rod, q, qd, qdd, anchored)  # Ω = sξ, 𝓩 = sΦ (its unused rates are never formed)
        return JointRates(Om, Z, *(a.reshape((-1,) + a.shape[2:]) for a in rates))
    Om, Om_d, Om_dd, Z = _twist_rates(rod, q, qd, qdd, anchored)
    T = se3.dexp(Om)
    if rest:  # no rates to form (statics)
        return JointRates(Om, Z, T, jnp.zeros_like(Om), jnp.zeros_like(Om))
    acc = jnp.einsum("kij,kj->ki", T, Om_dd) + se3.d_dexp_apply(Om, Om_d, Om_d)  # T Ω̈ + Ṫ Ω̇ without the matrix Ṫ
    return JointRates(Om, Z, T, jnp.einsum("kij,kj->ki", T, Om_d), acc)


def _run_scales(rod: Rod) -> jax.Array:
    """X_{α+1} − X_anchor of every joint of every run of constant strain: (n_runs, strain_run)."""
    m = rod.strain_run
    return rod.X[1:].reshape(-1, m) - rod.X[:-1:m, None]


def _twist_rates(
    rod: Rod, q: jax.Array, qd: jax.Array, qdd: jax.Array, anchored: bool, rows: tuple[int, ...] | slice = slice(None)
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Ω, Ω̇ = 𝓩q̇, Ω̈ = 𝓩q̈ + 𝓩̇q̇ and 𝓩 of every joint, the twist components ``rows`` only: (n_p − 1, r) thrice and
    (n_p − 1, r, n). Anchored joints of a run of constant strain ξ: Ω = sξ, 𝓩 = sΦ with s = X_{α+1} − X_anchor."""
    m, order = rod.strain_run, rod.expansion_order
    if m > 1 and anchored:
        s = _run_scales(rod).reshape(-1)
        Phi = jnp.repeat(rod.Phi_c[::m, 0][:, rows], m, axis=0) * s[:, None, None]  # 𝓩 (n_p − 1, r, n)
        xi = jnp.repeat(rod.xi_star_c[::m, 0][:, rows], m, axis=0) * s[:, None]
        return Phi @ q + xi, Phi @ qd, Phi @ qdd, Phi
    xi = rod.Phi_c @ q + rod.xi_star_c
    Om, Om_d, Om_dd = jax.vmap(lambda *a: magnus_rates(*a, order))(xi, rod.Phi_c @ qd, rod.Phi_c @ qdd, rod.h)
    Z = jax.vmap(lambda x, P, h: magnus_Z(x, P, h, order))(xi, rod.Phi_c, rod.h)
    return Om[:, rows], Om_d[:, rows], Om_dd[:, rows], Z[:, rows]


def _planar_rates(Om: jax.Array, Om_d: jax.Array, Om_dd: jax.Array, Z: jax.Array, rest: bool) -> JointRates:
    """:class:`JointRates` on SE(2) from the planar twists: T = dexp(Ω) and (T Ω̇, T Ω̈ + Ṫ Ω̇) as one jvp of
    (Ω, Ω̇) ↦ T(Ω) Ω̇ along (Ω̇, Ω̈)."""
    if rest:
        return JointRates(Om, Z, se2.dexp(Om), jnp.zeros_like(Om), jnp.zeros_like(Om))
    rate = lambda x, v: jnp.einsum("kij,kj->ki", se2.dexp(x), v)
    (T, vel), (_, acc) = jax.jvp(lambda x, v: (se2.dexp(x), rate(x, v)), (Om, Om_d), (Om_d, Om_dd))
    return JointRates(Om, Z, T, vel, acc)


def _chain(base: jax.Array, steps: jax.Array) -> jax.Array:
    """Poses g_1 = base, g_{α+1} = g_α steps_α: (n_p, 4, 4)."""

    def body(g, s):
        g2 = g @ s
        return g2, g2

    _, gs = jax.lax.scan(body, base, steps)
    return jnp.concatenate([base[None], gs], axis=0)


def forward_kinematics(rod: Rod, q: Float[Array, " n_dof"]) -> Float[Array, "n_p 4 4"]:
    """Poses g(X_k) of all computational points (base, Gauss points, tip), (n_p, 4, 4) (eq. (2a))."""
    check_state(rod, q=q)
    Om, _ = joint_twists(rod, q)
    return _chain(rod.base_pose, se3.exp(Om))


def tip_pose(rod: Rod, q: Float[Array, " n_dof"]) -> Float[Array, "4 4"]:
    """Pose of the tip, (4, 4)."""
    return forward_kinematics(rod, q)[-1]


def tip_position(rod: Rod, q: Float[Array, " n_dof"]) -> Float[Array, "3"]:
    """World position of the tip, (3,)."""
    return tip_pose(rod, q)[:3, 3]


def strain_at(rod: Rod, q: Float[Array, " n_dof"], s: Float[ArrayLike, "..."]) -> Float[Array, "... 6"]:
    """The strain ξ(s) = Φ(s) q + ξ*(s) at arc lengths s ∈ [0, L] of any shape (seed 003 eq. (1)), ``s.shape + (6,)``:
    (ω, v), the curvature–torsion and the stretch–shear of the section's frame, in that frame."""
    check_state(rod, q=q)
    s = rod.arc_lengths(s, "strain_at")
    return rod.basis(s, rod.length) @ q + rod.reference_strain(s)


def pose_at(rod: Rod, q: Float[Array, " n_dof"], s: Float[ArrayLike, "..."]) -> Float[Array, "... 4 4"]:
    """The pose g(s) at arc lengths s ∈ [0, L] of any shape, ``s.shape + (4, 4)``: the pose of the computational
    point X_α ≤ s before it (eq. (2a)) advanced over [X_α, s] by the rod's own Magnus expansion (C1) at that
    interval's collocation nodes, so g(X_k) is the pose of point k and between the points the same discretisation
    interpolates (exact for piecewise-constant strain, 4th order in the interval otherwise)."""
    check_state(rod, q=q)
    s = rod.arc_lengths(s, "pose_at")
    g = forward_kinematics(rod, q)
    k = jnp.clip(jnp.searchsorted(rod.X, s, side="right") - 1, 0, rod.n_points - 2)
    d = s - rod.X[k]
    order = rod.expansion_order
    xc = rod.X[k][..., None] + d[..., None] * jnp.asarray(collocation_nodes(order), s.dtype)  # (..., n_c)
    xi_c = rod.basis(xc, rod.length) @ q + rod.reference_strain(xc)  # (..., n_c, 6)
    omega = jnp.vectorize(lambda x, h: magnus_omega(x, h, order), signature="(c,i),()->(i)")(xi_c, d)
    return g[k] @ se3.exp(omega)


class Joints(NamedTuple):
    """Per-joint quantities (leading axis n_p − 1) at (q, q̇, q̈); entries not requested by ``level`` are None."""

    Omega: jax.Array  # Ω_α (6,)
    Z: jax.Array  # 𝓩_α (6, n)
    step: jax.Array  # exp(Ω̂_α) = g_{α,α+1} (4, 4)
    Ad_inv: jax.Array  # Ad⁻¹_{g_{α,α+1}} (6, 6)
    coAd: jax.Array  # Ad*_{g_{α,α+1}}: wrench from frame α+1 to α (6, 6)
    S: jax.Array  # S_α (6, n)
    S_qd: jax.Array | None  # S_α q̇ = T Ω̇ (6,)
    S_acc: jax.Array | None  # S_α q̈ + Ṡ_α q̇ = T Ω̈ + Ṫ Ω̇ (6,), without forming Ṡ_α
    Sd: jax.Array | None  # Ṡ_α (6, n)
    dS_qd: jax.Array | None  # (∂S/∂q) q̇ (6, n)          (C19)
    dS_qdd: jax.Array | None  # (∂S/∂q) q̈ (6, n)         (C20)
    dSd_qd: jax.Array | None  # (∂Ṡ/∂q) q̇ (6, n)         (C24)


def joints(
    rod: Rod,
    q: Float[Array, " n_dof"],
    qd: Float[Array, " n_dof"] | None = None,
    qdd: Float[Array, " n_dof"] | None = None,
    derivatives: bool = False,
    rate_matrix: bool = False,
    anchored: bool = False,
    planar: bool = False,
) -> Joints:
    """Joint quantities of every joint, vectorised over joints.

    ``qd`` gives the vectors S q̇ and S q̈ + Ṡ q̇ (``qdd`` default zero) from Ω̇ = 𝓩q̇ and Ω̈ = 𝓩q̈ + 𝓩̇q̇
    (:func:`~jaxse3.rod.magnus.magnus_rates`), the matrix Ṡ (C21) only when ``rate_matrix`` or ``derivatives`` asks
    for it (it costs three 6×6 products and the 6×6 Ṫ); ``derivatives`` gives the App. C terms. ``anchored``: joints
    from the first point of each run of constant strain (:func:`joint_rates`). An anchored joint is a joint like any
    other, Ω = sξ(q) with 𝓩 = sΦ constant, so its Ṡ and App. C terms are the 2nd-order ones. ``planar``: on SE(2)
    (:func:`joint_rates`; the rows and columns ``se2.PLANE`` of every vector and matrix).
    """
    lie, rows = (se2, jnp.asarray(se2.PLANE)) if planar else (se3, slice(None))
    order = rod.expansion_order
    r = joint_rates(rod, q, qd, qdd, anchored, planar)
    S = r.T @ r.Z
    extra = dict(S_qd=None, S_acc=None, Sd=None, dS_qd=None, dS_qdd=None, dSd_qd=None)
    if qd is not None:
        extra.update(S_qd=r.vel, S_acc=r.acc)
    if qd is not None and (rate_matrix or derivatives):

        def one(Om, Z, T, Phi_c, h):
            a = Z @ qd  # Ω̇
            dT = lie.d_dexp(Om, a)  # Ṫ
            acc = jnp.zeros_like(qd) if qdd is None else qdd
            if order == 2:  # 𝓩 does not depend on q: 𝓩̇ = 0 and every term in it vanishes
                out = dict(Sd=dT @ Z)  # (C21)
                if derivatives:  # dexp_jac is linear in its second argument: one vectorised call for both
                    Ja, Jb = lie.dexp_jac(Om, jnp.stack([a, Z @ acc]))
                    out.update(dS_qd=Ja @ Z, dSd_qd=lie.dexp_jac_dir(Om, a, a) @ Z, dS_qdd=Jb @ Z)  # (C19, C24, C20)
                return out
            Zd = magnus_dZ(Phi_c, qd, h, order)[rows]  # 𝓩̇ (C8)
            out = dict(Sd=dT @ Z + T @ Zd)  # (C21)
            if derivatives:
                Ja, Jc, Jb = lie.dexp_jac(Om, jnp.stack([a, Zd @ qd, Z @ acc]))
                out["dS_qd"] = Ja @ Z + T @ Zd
                out["dSd_qd"] = lie.dexp_jac_dir(Om, a, a) @ Z + (dT + Ja) @ Zd + Jc @ Z
                out["dS_qdd"] = Jb @ Z + T @ magnus_dZ(Phi_c, acc, h, order)[rows]
            return out

        extra.update(jax.vmap(one)(r.Omega, r.Z, r.T, rod.Phi_c, rod.h))
    step = lie.exp(r.Omega)
    return Joints(r.Omega, r.Z, step, lie.Ad_inv(step), lie.coAd(step), S, **extra)


def body_jacobians(rod: Rod, q: Float[Array, " n_dof"]) -> Float[Array, "n_p 6 n_dof"]:
    """Body Jacobians J_k of all points, (n_p, 6, n_dof): the body twist of point k is η_k = J_k q̇ (eq. (2b))."""
    return differential_kinematics(rod, q, jnp.zeros_like(q))[1]


def differential_kinematics(
    rod: Rod, q: Float[Array, " n_dof"], qd: Float[Array, " n_dof"]
) -> tuple[Float[Array, "n_p 4 4"], Float[Array, "n_p 6 n_dof"], Float[Array, "n_p 6"], Float[Array, "n_p 6 n_dof"]]:
    """Poses, body Jacobians, body twists and Jacobian time derivatives of all points (eq. (2a)–(2c)).

    Returns ``(g, J, eta, J_dot)`` of shapes (n_p, 4, 4), (n_p, 6, n), (n_p, 6), (n_p, 6, n).
    """
    check_state(rod, q=q, qd=qd)
    jt = joints(rod, q, qd, rate_matrix=True)
    n = rod.n_dof
    zero = (rod.base_pose, jnp.zeros((6, n), q.dtype), jnp.zeros((6, n), q.dtype))

    def body(carry, x):
        g, J, Jd = carry
        step, Ai, S, Sd = x
        eta = J @ qd
        new = (g @ step, Ai @ (J + S), Ai @ (Jd + Sd + se3.ad(eta) @ S))
        return new, carry

    last, hist = jax.lax.scan(body, zero, (jt.step, jt.Ad_inv, jt.S, jt.Sd))
    g, J, Jd = (jnp.concatenate([h, l[None]], axis=0) for h, l in zip(hist, last))
    return g, J, J @ qd, Jd


def joint_force_jacobian_sum(
    Omega: Float[Array, "n_j d"],
    Z: Float[Array, "n_j d n"],
    F: Float[Array, "n_j d"],
    Phi_c: Float[Array, "n_j n_c d n"],
    h: Float[Array, " n_j"],
    order: int,
) -> Float[Array, "n n"]:
    """Σ_α ∂(S_αᵀ𝓕_α)/∂q at fixed 𝓕_α over joints α (C29): 𝓩ᵀ(∂(T(Ω)ᵀ𝓕)/∂Ω)𝓩 plus the Magnus term of 𝓩's
    dependence on q (:func:`~jaxse3.rod.magnus.magnus_dZT` at Tᵀ𝓕), the first as one contraction over the joints and
    twist components (no (n, n) matrix per joint); on SE(2) for 3-vectors (a planar rod's recursions)."""
    lie = se2 if F.shape[-1] == 3 else se3
    n = Z.shape[-1]
    total = Z.reshape(-1, n).T @ (lie.dexpT_jac(Omega, F) @ Z).reshape(-1, n)
    if order == 2:  # 𝓩 = hΦ does not depend on q
        return total
    w = lie.dexpT_apply(Omega, F)
    return total + jnp.sum(jax.vmap(lambda P, wa, ha: magnus_dZT(P, wa, ha, order))(Phi_c, w, h), axis=0)
