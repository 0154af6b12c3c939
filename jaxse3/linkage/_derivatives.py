"""Analytical derivatives of a linkage's inverse dynamics: the recursions of seed 003 §4 over a tree (§5, eqs. 39–42).

Every link is a chain from its joint frame: a rigid link has one joint (its joint transform X(q); a fixed link the
identity with no coordinate) and two points, the joint frame (no inertia, rule 2) and the link frame (the body's
inertia); a soft link has its rod's n_p − 1 joints and n_p points. Per joint α the recursions need the step
g_{α,α+1}, the motion subspace S_α in frame α, the rates S_α q̇, S_α q̈ + Ṡ_α q̇, and the App. C terms Ṡ_α,
(∂S_α/∂q)q̇, (∂S_α/∂q)q̈, (∂Ṡ_α/∂q)q̇ (:class:`LinkJoints`): a rod's from :func:`jaxse3.rod.kinematics.joints`; a 1-DoF
rigid joint's are S_α = its screw axis (δX = (S_α δq)^ X, as for a rod joint) with every q-derivative zero.

* **forward pass** (links parents first, each link's joints in order; :func:`_forward_link`): g, η, η̇, J = S^B and the
  transported sums R^B, Q^B, Y^B of the joint terms R_α (20b), Q_α (20c, without its gravity term: see below), Y_α
  (26), with a link's columns placed at its coordinates (rule 5, eq. (39)); a link starts from its parent's end frame
  moved by its placement P (a fixed transform: everything transported by Ad⁻¹_P, rule 3). Each link carries only the
  columns of its path from the root and of its subtree (:func:`_column_blocks`), where these matrices and the
  backward sums can be nonzero (a flagellum of the flagellated robot 19 of its 80), and where a closure's frame A lies
  in its subtree those of frame B's path, which the multiplier's derivative (D68) couples in. A link's pass carries
  its own columns first, so its joints' terms are formed on those alone. Links on one level of a schedule (parents
  first) whose joints, inertias and loads have equal shapes run side by side, one ``vmap`` in each pass, their
  columns padded with zeros to the widest (:func:`_equal_links`, :func:`_group_columns`: the six flagella, their
  hooks, the two shafts; a fin-ray finger's five hinges, and its five ribs with its last two walls), so their passes
  are traced and compiled once;
* **point quantities**: 𝓕_k (16) and 𝓝_k (20a) with full 6 × 6 screw inertias 𝓜_k (a rigid body's is not diagonal;
  in a :class:`~jaxse3.linkage.Fluid` with the added mass, and the drag in 𝓕_k and 𝓝_k, eqs. (62)–(66)). The weight
  −𝓜g_k Ad⁻¹_{g_k}𝓖 is a point load with ∂𝓕_k/∂q = −𝓜g_k ad_{Ad⁻¹_{g_k}𝓖} J_k transported as E^S (55, 56), not the
  gravity term of Q_α: it acts on the body's own mass less its buoyancy (𝓜g_k), not on the added mass. Without a
  fluid the two forms are equal (the sign of that term is the digest §8 correction);
* **backward pass** (links children first, each link's joints in reverse; :func:`_backward_link`): 𝓕^C, 𝓜^C, 𝓝^C, U^S,
  P^S, V^S, W^S, E^S (22c–22g, 28c, 33, 56). A link starts from the sums of its children (rule 4 and eq. (40): over
  all branches), each child's sums at its first joint plus its joint frame's point quantities, moved to the parent's
  end frame by Ad*_P (and 𝓜, 𝓝 by Ad*_P(·)Ad⁻¹_P); its rows of ID, ∂ID/∂q, ∂ID/∂q̇, M follow from (14), (21), (27),
  (32), and are stacked into the global matrices (eq. (42));
* **at rest** (q̇ = q̈ = 0, statics; :func:`tree_derivatives_with_wrenches` with q̇ = q̈ = None): R, Q, Y, η and η̇
  vanish, so the forward pass carries g and J only, the points their weights and loads, and the backward pass 𝓕^C,
  P^S and E^S: ID(q, 0, 0) and ∂ID/∂q = Sᵀ(P^S + E^S) (+ C29), without 𝓜^C, 𝓝^C, U^S, V^S, W^S.

Fewer rows and columns (:func:`tree_derivatives` with ``rows``, ``columns``; joint control asks for the unknown
coordinates' alone): each link carries only the columns asked for (all of its own where it has one asked for), and a
link runs its backward pass only where it or a link on its path from the root has a row asked for (the sums flow
towards the root and only reach those rows).

More point wrenches that depend on the forward pass (a closed chain's multipliers, :class:`PointWrench`) enter
between the two passes as the loads do.

A rod joint's ∂(S_αᵀ𝓕^C)/∂q at fixed 𝓕^C (C29) stays in the rod's own block; it is formed after the backward pass
from the joints' composite wrenches 𝓕^C_α, for every joint of every rod of one structure at once
(:func:`~jaxse3.linkage._dynamics.per_rod`), as are the rods' joint terms before the forward pass.

A joint in exponential coordinates (exp(Φq̂), :func:`~jaxse3.linkage.joint_basis`) is a rod-like joint with 𝓩 = Φ
constant (:func:`~jaxse3.linkage._dynamics.exponential_joint`; its C29 term Φᵀ(∂T(Ω)ᵀ𝓕/∂Ω)Φ).

Spherical and free joints in quaternion coordinates (velocities: the child's body angular velocity or twist ν;
derivatives in the tangent space, q ⊕ δ = X exp(S̄δ)) enter as their transform X(q), applied like a placement, followed
by the local chart exp(S̄Ω) at Ω = 0: a rod-like joint with 𝓩 = S̄ constant (S = S̄, Ṡ = ½ad_{S̄ν}S̄, and the App. C
terms from ``se3.dexp_jac``/``dexp_jac_dir`` at 0). The chart differentiates at fixed (Ω̇, Ω̈) and yields forces
conjugate to Ω̇; two corrections give the derivative at fixed (ν, ν̇) (:func:`_chart_correction`): Ω̇ = dexp⁻¹_{−Ω}ν
adds ∂ID/∂q̇ (−½ad_ν) + M (−½ad_ν̇ + ⅙ad_ν²) to the joint's columns, and τ_ν = dexp_{−Ω}^{−T}τ_Ω adds
½S̄ᵀ\\bar{ad}(S̄τ)S̄ to its own block. A rigid-only linkage then equals IDSVA (:func:`jaxse3.rigid.rnea_derivatives`) on
floating trees with spherical joints (tests). The ``custom_jvp`` rules of :mod:`jaxse3.linkage._rules` apply to linkages
without these joints (:func:`covered`): JAX's tangents of a quaternion are coordinate tangents, not δ.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Array, Float

from jaxse3 import rigid, se3
from jaxse3.lie.shapes import matmul_blocks
from jaxse3.linkage._dynamics import (
    add_columns,
    applied_wrenches,
    check_state,
    exponential_joint,
    joint_transform,
    link_groups,
    per_rod,
    rod_joints,
    side_by_side,
    speed,
)
from jaxse3.linkage._model import Link, Linkage, PointInertias, joint_basis, point_inertias, point_loads
from jaxse3.rod import kinematics as rod_kinematics
from jaxse3.rod.model import Rod

__all__ = ["covered", "tree_derivatives", "tree_derivatives_with_wrenches", "IDDerivatives", "PointWrench"]


class IDDerivatives(NamedTuple):
    """ID and its derivatives (each (nv,) or (nv, nv); ``dqd`` and ``M`` None from a pass at rest)."""

    tau: Float[Array, " nv"]
    dq: Float[Array, "nv nv"]  # ∂ID/∂q (21, 41a)
    dqd: Float[Array, "nv nv"]  # ∂ID/∂q̇ (27, 41b)
    M: Float[Array, "nv nv"]  # ∂ID/∂q̈ = M(q) (32, 41c)


class PointWrench(NamedTuple):
    """A wrench applied at a computational point (:func:`tree_derivatives_with_wrenches`): its link's index, the
    point's index among the link's (:meth:`~jaxse3.linkage.Linkage.points_of`; −1 its end), the wrench (moment,
    force) in the point's frame, and its explicit derivative ∂w/∂q (6, nv) at fixed point pose, the dependence on q
    other than through the point's own motion (a closure's, (D68); zero for a local load)."""

    link: int
    point: int
    wrench: Float[Array, " 6"]
    d_wrench: Float[Array, "6 nv"]


class LinkJoints(NamedTuple):
    """A link's joints (leading axis: the link's joints), their matrices on the link's own n_l coordinates."""

    step: Float[Array, "m 4 4"]
    Ad_inv: Float[Array, "m 6 6"]
    coAd: Float[Array, "m 6 6"]
    S: Float[Array, "m 6 n_l"]
    S_qd: Float[Array, "m 6"]
    S_acc: Float[Array, "m 6"]
    Sd: Float[Array, "m 6 n_l"]
    dS_qd: Float[Array, "m 6 n_l"]
    dS_qdd: Float[Array, "m 6 n_l"]
    dSd_qd: Float[Array, "m 6 n_l"]


class Kinematics(NamedTuple):
    """What the forward pass carries from point to point (stacked over a link's points in its output)."""

    g: Float[Array, "4 4"]
    eta: Float[Array, " 6"]
    etad: Float[Array, " 6"]
    J: Float[Array, "6 nv"]  # S^B
    RB: Float[Array, "6 nv"]
    QB: Float[Array, "6 nv"]
    YB: Float[Array, "6 nv"]

    def moved(self, P: Float[Array, "4 4"]) -> Kinematics:
        """Through the fixed transform P (rule 3): g P and every twist-like quantity by Ad⁻¹_P."""
        Ai = se3.Ad_inv(P)
        return Kinematics(self.g @ P, *(None if x is None else Ai @ x for x in self[1:]))


class Sums(NamedTuple):
    """The backward pass's carry at a joint (all zero past a leaf's end)."""

    FC: Float[Array, " 6"]
    MC: Float[Array, "6 6"]
    NC: Float[Array, "6 6"]
    U: Float[Array, "6 nv"]
    P: Float[Array, "6 nv"]
    V: Float[Array, "6 nv"]
    W: Float[Array, "6 nv"]
    E: Float[Array, "6 nv"]  # the transported ∂𝓕_k/∂q of the point wrenches' explicit pose dependence (weight) (56)

    @classmethod
    def zero(cls, nv: int, dtype: DTypeLike, rest: bool = False) -> Sums:
        """Zero sums; ``rest``: only those of a pass at rest (𝓕^C, P^S, E^S), the others None."""
        z6, zn = jnp.zeros((6, 6), dtype), jnp.zeros((6, nv), dtype)
        if rest:
            return cls(jnp.zeros(6, dtype), None, None, None, zn, None, None, zn)
        return cls(jnp.zeros(6, dtype), z6, z6, zn, zn, zn, zn, zn)

    def moved(self, P: Float[Array, "4 4"]) -> Sums:
        """To the frame in which P is the pose of this carry's frame: wrenches by Ad*_P, 𝓜, 𝓝 by Ad*_P(·)Ad⁻¹_P."""
        As, Ai = se3.coAd(P), se3.Ad_inv(P)
        inertia = lambda X: None if X is None else As @ X @ Ai
        return Sums(
            As @ self.FC, inertia(self.MC), inertia(self.NC), *(None if x is None else As @ x for x in self[3:])
        )


class Points(NamedTuple):
    """Point quantities (leading axis: a link's points)."""

    F: Float[Array, "p 6"]
    M: Float[Array, "p 6 6"]
    N: Float[Array, "p 6 6"]
    dF: Float[Array, "p 6 nv"]  # ∂𝓕_k/∂q through the weight's dependence on the point's orientation


def covered(linkage: Linkage) -> bool:
    """Whether the ``custom_jvp`` rules apply to ``linkage``: no spherical or free joint in quaternion coordinates,
    which JAX differentiates in coordinates (nq ≠ nv) while the analytical derivatives are in the tangent space
    (:func:`tree_derivatives` covers them). Joints in exponential coordinates are covered."""
    return not any(link.quaternion for link in linkage.links)


def _chart(link: Link, q) -> tuple[Array, Array]:
    """(Φ, Ω) of a joint run as one rod-like joint with constant 𝓩 = Φ: exponential coordinates (Ω = Φq), or the local
    chart exp(S̄Ω) at Ω = 0 of a quaternion joint (Φ = S̄)."""
    if link.exponential:
        Phi = joint_basis(link)
        return Phi, Phi @ q
    return rigid.joints.motion_subspace(link.joint, link.axis).T, jnp.zeros(6, link.axis.dtype)


def _link_joints(link: Link, q, qd, qdd, j: rod_kinematics.Joints | None) -> tuple[LinkJoints, Array | None]:
    """The joint quantities of a link (module docstring; ``j``: a soft link's rod joints, from :func:`rod_joints`), and
    for a quaternion joint its transform X(q), which the forward pass applies as a fixed transform before the joint's
    local chart exp(S̄Ω) at Ω = 0."""
    if link.joint == "soft":
        return LinkJoints(j.step, j.Ad_inv, j.coAd, j.S, j.S_qd, j.S_acc, j.Sd, j.dS_qd, j.dS_qdd, j.dSd_qd), None
    dtype = link.axis.dtype
    eye = jnp.eye(4, dtype=dtype)
    if link.exponential or link.quaternion:  # a rod-like joint with 𝓩 = Φ (module docstring)
        Phi = _chart(link, q)[0]
        zero = jnp.zeros(Phi.shape[1], dtype)
        one = LinkJoints(*exponential_joint(Phi, zero if link.quaternion else q, qd, qdd, derivatives=True))
        return jax.tree.map(lambda x: x[None], one), joint_transform(link, q) if link.quaternion else None
    if link.joint == "fixed":
        step = eye
        S = jnp.zeros((6, 0), dtype)
        z = jnp.zeros(6, dtype)
    else:
        step = joint_transform(link, q)
        S = link.axis[:, None]
        z = None
    vel = z if z is not None else S @ qd
    acc = z if z is not None else S @ qdd
    zS = jnp.zeros_like(S)
    one = LinkJoints(step, se3.Ad_inv(step), se3.coAd(step), S, vel, acc, zS, zS, zS, zS)
    return jax.tree.map(lambda a: a[None], one), None


def _chart_correction(S: Array, qd: Array, qdd: Array) -> tuple[Array, Array]:
    """(∂Ω̇/∂Ω, ∂Ω̈/∂Ω) at Ω = 0 for the local chart X exp(S̄Ω) of a spherical or free joint at fixed body velocity ν
    and acceleration ν̇: Ω̇ = dexp⁻¹_{−Ω}ν gives −½ ad_ν and −½ ad_ν̇ + ⅙ ad_ν² (ad restricted to the joint's
    subalgebra: S̄ᵀ ad_{S̄ν} S̄). The derivative at fixed (ν, ν̇) is the chart's plus ∂ID/∂q̇ and M times these, and
    the joint's own rows, forces conjugate to ν rather than Ω̇ (τ_ν = dexp_{−Ω}^{−T}τ_Ω), gain ½ S̄ᵀ\\bar{ad}(S̄τ)S̄."""
    ad_v, ad_a = S.T @ se3.ad(S @ qd) @ S, S.T @ se3.ad(S @ qdd) @ S
    return -0.5 * ad_v, -0.5 * ad_a + ad_v @ ad_v / 6.0


def _embed(X: Array, S: Array, own: bool = True) -> Array:
    """X + [S 0]: a link's (6, n_l) columns added at its coordinates, the first of those its pass carries
    (:func:`_group_columns`); X itself when the pass does not carry them (``own`` False: derivatives in other
    coordinates only, :func:`tree_derivatives`)."""
    return add_columns(X, S, 0) if own else X


def _forward_link(k: Kinematics, jt: LinkJoints, own: bool = True) -> tuple[Kinematics, tuple[Array, ...]]:
    """The points of a link from its joint frame's kinematics ``k``, and the joint terms (R, Q, Y) (20b, 20c, 26); Q
    without its gravity term, which the points' weights carry as loads (:func:`_point_quantities`). ``own``: whether
    the pass carries the link's own columns (:func:`_embed`)."""
    ad = se3.ad

    def point(k: Kinematics, j: LinkJoints):
        eta_p = k.eta + j.S_qd  # η_α⁺
        ad_eta, ad_p = ad(k.eta), ad(eta_p)
        eta_S, eta_dS, eta_v = matmul_blocks(ad_eta, j.S, j.dS_qd, j.S_qd)
        etad_p = k.etad + j.S_acc + eta_v  # η̇_α⁺
        R = ad_p @ j.S + j.dS_qd  # (20b)
        Q = ad(etad_p) @ j.S + ad_p @ R + eta_dS + j.dSd_qd + j.dS_qdd  # (20c) without gravity
        Y = R + eta_S + j.Sd  # (26)
        # X^B_{α+1} = Ad⁻¹(X_α + X^B_α), the twists by Ad⁻¹ too
        XB = [_embed(XB, X, own) for X, XB in ((j.S, k.J), (R, k.RB), (Q, k.QB), (Y, k.YB))]
        eta, etad, *moved = matmul_blocks(j.Ad_inv, eta_p, etad_p, *XB)
        nxt = Kinematics(k.g @ j.step, eta, etad, *moved)
        return nxt, (nxt, (R, Q, Y))

    def still(k: Kinematics, j: LinkJoints):  # at rest: poses and Jacobians only
        nxt = Kinematics(k.g @ j.step, None, None, j.Ad_inv @ _embed(k.J, j.S, own), None, None, None)
        return nxt, (nxt, None)

    unroll = jt.step.shape[0] == 1  # a rigid joint: no loop
    _, (pts, terms) = jax.lax.scan(still if jt.S_qd is None else point, k, jt, unroll=unroll)
    return jax.tree.map(lambda a0, a: jnp.concatenate([a0[None], a]), k, pts), terms


def _point_quantities(linkage: Linkage, m: PointInertias, k: Kinematics, grav: Array, loads) -> Points:
    """𝓕_k = 𝓜η̇ + ad*_η𝓜η − 𝓜g Ad⁻¹_g𝓖 − 𝓕_ext (16) with ``loads`` the points' (local, world) applied wrenches or
    None, 𝓝_k = \\bar{ad}*_{𝓜η} + ad*_η𝓜 − 𝓜ad_η (20a), ad*_η = −ad_ηᵀ, and ∂𝓕_k/∂q of the weight,
    −𝓜g ad_{Ad⁻¹_g𝓖} J_k (the gravity term of (20c), D11, as a point load), and of the world wrenches (59); in a fluid
    the drag adds 𝓓‖v‖η to 𝓕_k and 𝓓* = 𝓓(ηηᵀI_v/‖v‖ + ‖v‖1) to 𝓝_k (62), (63), (66)."""
    gloc = jnp.einsum("kij,j->ki", se3.Ad_inv(k.g), grav)
    F = -jnp.einsum("kij,kj->ki", m.gravity, gloc)  # the weight
    dF = -m.gravity @ se3.ad(gloc) @ k.J
    if loads is not None:
        # applied wrenches: 𝓕_k −= 𝓕_ext,k; a world one turns with the point, ∂𝓕_ext/∂q = ad_{𝓕_ext} I_θ J (59)
        applied, world = applied_wrenches(loads, k.g)
        F = F - applied
        dF = dF - se3.ad(world)[:, :, :3] @ k.J[:, :3]
    if k.eta is None:  # at rest: no inertial or drag terms (a pass at rest needs no 𝓜, 𝓝)
        return Points(F, None, None, dF)
    M = m.inertia
    adeta = se3.ad(k.eta)
    Meta = jnp.einsum("kij,kj->ki", M, k.eta)
    F = F + jnp.einsum("kij,kj->ki", M, k.etad) - jnp.einsum("kji,kj->ki", adeta, Meta)
    N = -se3.adbar(Meta) - jnp.swapaxes(adeta, -1, -2) @ M - M @ adeta
    if m.drag is not None:
        v = speed(linkage, k.eta)
        F = F + m.drag * v[:, None] * k.eta
        lin = k.eta.at[:, :3].set(0.0)
        outer = k.eta[:, :, None] * lin[:, None, :] / v[:, None, None]
        N = N + m.drag[:, :, None] * (outer + v[:, None, None] * jnp.eye(6, dtype=M.dtype))
    return Points(F, M, N, dF)


def _backward_link(
    link: Link, own: bool, jt: LinkJoints, pts: Kinematics, terms: tuple, quantities: Points, ahead: Sums, q: Array
) -> tuple[Sums, tuple[Array, ...], Array]:
    """The link's joints in reverse from the sums ``ahead`` of its children; its rows (τ, M, ∂ID/∂q, ∂ID/∂q̇) and the
    composite wrenches 𝓕^C_α of its joints (a rod's C29 term, :func:`_rod_C29`). ``own``: whether the pass carries
    the link's own columns (:func:`_embed`)."""
    lie = se3
    chart = _chart(link, q) if own and (link.exponential or link.quaternion) else None
    embed = functools.partial(_embed, own=own)

    def with_chart(dq, FC):  # + C29 of a joint exp(ΦΩ̂) with 𝓩 = Φ constant
        if chart is None:
            return dq
        Phi, Om = chart
        return embed(dq, Phi.T @ lie.dexpT_jac(Om, FC) @ Phi)

    def still(s: Sums, x):  # at rest: (22c), (56), (22g) and the rows (14), (21) of 𝓕^C, P^S, E^S alone
        j, _, _, p = x
        FC, E, P = matmul_blocks(j.coAd, p.F + s.FC, p.dF + s.E, s.P)
        P = embed(P, -lie.adbar(FC) @ j.S)
        tau, dq = matmul_blocks(j.S.T, FC, P + E)
        return Sums(FC, None, None, None, P, None, None, E), ((tau, None, with_chart(dq, FC), None), FC)

    def step(s: Sums, x):
        j, k, (R, Q, Y), p = x  # joint α, point α (its kinematics and B sums), its terms, point α + 1
        # (22c), (56), (22e), (22d), and the transported sums of (33), the U term, (22g), (28c)
        FC, E, MC, NC, U, P, V, W = matmul_blocks(j.coAd, p.F + s.FC, p.dF + s.E, p.M + s.MC, p.N + s.NC, *s[3:7])
        MC, NC = jnp.split(jnp.concatenate([MC, NC]) @ j.Ad_inv, 2)  # one product for both
        M_S, M_Q, M_Y, M_J, M_QB, M_YB = matmul_blocks(MC, j.S, Q, Y, k.J, k.QB, k.YB)
        N_R, N_S, N_RB, N_J = matmul_blocks(NC, R, j.S, k.RB, k.J)
        # the joint's own columns (the first ones, :func:`_group_columns`) gain its terms
        W = embed(W, M_S)  # (33)
        U = embed(U, N_R + M_Q)
        P = embed(P, -lie.adbar(FC) @ j.S)  # (22g)
        V = embed(V, N_S + M_Y)  # (28c)
        # (14), (32), (21) with (55), (27)
        tau, M_rows, dq, dqd = matmul_blocks(j.S.T, FC, M_J + W, N_RB + M_QB + U + P + E, N_J + M_YB + V)
        return Sums(FC, MC, NC, U, P, V, W, E), ((tau, M_rows, with_chart(dq, FC), dqd), FC)

    start_pts = jax.tree.map(lambda a: a[:-1], pts)
    next_q = jax.tree.map(lambda a: a[1:], quantities)
    xs = (jt, start_pts, terms, next_q)
    body = still if jt.S_qd is None else step
    sums, (rows, FC) = jax.lax.scan(body, ahead, xs, reverse=True, unroll=jt.step.shape[0] == 1)
    return sums, tuple(None if r is None else jnp.sum(r, axis=0) for r in rows), FC


def _rod_C29(rod: Rod, Om: Array, Z: Array, FC: Array) -> Array:
    """Σ_α ∂(S_αᵀ𝓕^C_α)/∂q at fixed 𝓕^C_α of a rod's joints (C29), its own (n_dof, n_dof) block of ∂ID/∂q."""

    return rod_kinematics.joint_force_jacobian_sum(Om, Z, FC, rod.Phi_c, rod.h, rod.expansion_order)


def tree_derivatives(
    linkage: Linkage,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"] | None,
    qdd: Float[Array, " nv"] | None,
    rows: Sequence[int] | None = None,
    columns: Sequence[int] | None = None,
) -> IDDerivatives:
    """ID(q, q̇, q̈), ∂ID/∂q, ∂ID/∂q̇ and M = ∂ID/∂q̈ in one forward and one backward pass over the tree (seed 003
    eqs. (14), (21), (27), (32), (39)–(42); module docstring), for any linkage (the public
    :func:`~jaxse3.linkage.inverse_dynamics_derivatives` runs :mod:`jaxse3.rigid` on rigid-only ones). For spherical
    and free joints ∂/∂q is in the tangent space, q ⊕ δ = q·exp(δ̂) at fixed body velocities (the convention of
    :mod:`jaxse3.rigid`): nv columns.

    ``rows``, ``columns``: only these rows (coordinates of ID) and columns (coordinates differentiated), in the
    given order (None: all nv), e.g. the unknown coordinates of joint control (:mod:`jaxse3.linkage._control`):
    τ has ``len(rows)`` entries and the matrices are (len(rows), len(columns)). The passes then carry only the
    columns asked for, and a link runs its backward pass only where it or a link on its path from the root has a
    row asked for: a serial robot's prescribed rigid links ahead of a rod carry no columns and run no backward pass.
    Not for linkages with spherical or free joints in quaternion coordinates.

    ``qd = qdd = None``: at rest (q̇ = q̈ = 0, statics), a pass of poses, Jacobians and composite wrenches only
    (:func:`tree_derivatives_with_wrenches`'s): ID(q, 0, 0) and ∂ID/∂q, with ``dqd`` and ``M`` None."""
    return _tree_pass("tree_derivatives", linkage, q, qd, qdd, None, couplings=(), rows=rows, columns=columns)[0]


def tree_derivatives_with_wrenches(
    linkage: Linkage,
    q: Float[Array, " nq"],
    qd: Float[Array, " nv"] | None,
    qdd: Float[Array, " nv"] | None,
    applied: Callable[[Callable[[int, int], Kinematics]], tuple[Sequence[PointWrench], Any]],
    couplings: Sequence[tuple[int, int | None]] | None = None,
) -> tuple[IDDerivatives, Any]:
    """:func:`tree_derivatives` of ID − Σ J_kᵀ w_k with more wrenches w_k applied at points, which may depend on the
    forward pass: ``applied(frame)`` gets ``frame(link, point)``, the forward pass's :class:`Kinematics` (g, η, η̇,
    J, …) of a link's computational point, and returns the wrenches (:class:`PointWrench`) and anything else computed
    from the frames (``aux``, returned beside the derivatives). A wrench's derivative enters the backward pass as a
    point load's: through the transported composite wrench (P^S, C29) at fixed w_k, and its explicit ∂w_k/∂q as
    E^S (56). A closed chain's multipliers are such wrenches (seed 003 §5.2, (D68), (D69)).

    ``qd = qdd = None``: at rest (q̇ = q̈ = 0), for statics: a pass of poses, Jacobians, 𝓕^C, P^S and E^S only (the
    frames' η, η̇, R^B, Q^B, Y^B are None), returning ID(q, 0, 0) − Σ J_kᵀ w_k and its ∂/∂q (∂/∂q̇ and M None).

    ``couplings``: pairs (a, b) of links such that a wrench at a point of link a has an explicit ∂w/∂q in the
    columns of b's path from the root (a closure's frames A and B, (D68); b None: the world), and no other wrench
    has one outside its own link's columns. Each link then carries only the columns of its path, its subtree and the
    couplings within its subtree (:func:`_column_blocks`), as :func:`tree_derivatives` does; None: every link carries
    all nv columns."""
    return _tree_pass("tree_derivatives_with_wrenches", linkage, q, qd, qdd, applied, couplings)


def _pass_index(link: Link, point: int) -> int:
    """The index in the derivative pass's points of a link's computational point: a rigid link's pass has its joint
    frame first (module docstring)."""
    return point % link.n_points + (0 if link.joint == "soft" else 1)


def _move_columns(x: Array | None, src: np.ndarray, dst: np.ndarray) -> Array | None:
    """The (…, len(dst)) matrix whose column j is ``x``'s column of coordinate ``dst[j]`` (``x``'s columns are the
    coordinates ``src``; −1 labels a padding column), zero where ``src`` lacks it or ``dst[j]`` is −1: static slices
    and zeros, concatenated (a gather or scatter is slow on XLA:CPU)."""
    if x is None or np.array_equal(src, dst):
        return x
    where = {int(c): k for k, c in enumerate(src) if c >= 0}
    pos = [where.get(int(c), -1) if c >= 0 else -1 for c in dst]
    parts, a = [], 0
    while a < len(pos):
        b = a + 1
        if pos[a] < 0:
            while b < len(pos) and pos[b] < 0:
                b += 1
            parts.append(jnp.zeros((*x.shape[:-1], b - a), x.dtype))
        else:
            while b < len(pos) and pos[b] == pos[b - 1] + 1:
                b += 1
            parts.append(x[..., pos[a] : pos[a] + b - a])
        a = b
    if not parts:
        return jnp.zeros((*x.shape[:-1], 0), x.dtype)
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=-1)


#: the forward pass's matrices over the columns a link carries
_CARRIED = ("J", "RB", "QB", "YB")


def _equal_links(linkage: Linkage, prep: list, flags: list) -> list[list[int]]:
    """The links in groups whose passes run side by side (:func:`side_by_side`), parents first: links on one level
    whose joints, placement, inertias and loads have equal shapes (the six flagella of the flagellated robot, the
    three pillars of the parallel robot, a fin-ray finger's ribs and its last walls), on the schedule with the fewest
    groups (:func:`link_groups`). A joint with a chart (exponential or quaternion coordinates) stays alone: its
    backward step reads its link. Links of one group have equal ``flags`` (which columns and passes they run)."""
    alone = lambda link: link.exponential or link.quaternion
    groups = link_groups(linkage, lambda i: None if alone(linkage.links[i]) else prep[i], fewest=True)
    split = lambda g: [[i for i in g if flags[i] == f] for f in dict.fromkeys(flags[i] for i in g)]
    return [part for g in groups for part in split(g)]


def _group_columns(
    linkage: Linkage, cols: list[np.ndarray], groups: list[list[int]], own: list[bool]
) -> list[np.ndarray]:
    """The columns each link's pass carries, in the order of its group's pass: its own coordinates first (one place
    for the whole group) where it carries them (``own[i]``), the rest of ``cols[i]`` in order, then padding (−1, zero
    columns) up to the group's widest."""
    out = list(cols)
    for g in groups:
        width = max(cols[i].size for i in g)
        for i in g:
            vs = linkage.v_slice(i)
            rest = cols[i][(cols[i] < vs.start) | (cols[i] >= vs.stop)]
            first = np.arange(vs.start, vs.stop) if own[i] else np.zeros(0, int)
            out[i] = np.concatenate([first, rest, -np.ones(width - first.size - rest.size, int)])
    return out


def _column_blocks(
    linkage: Linkage,
    couplings: Sequence[tuple[int, int | None]] | None,
    columns: np.ndarray | None = None,
    backward: Sequence[bool] | None = None,
) -> list[np.ndarray]:
    """The columns (coordinates) each link's pass carries: those of its path from the root and of its subtree, where
    its J, R^B, Q^B, Y^B (the path's) and its backward sums (the subtree's, transported with the path's) can be
    nonzero (rule 5, eq. (39)), and for each coupling (a, b) with a in its subtree the columns of b's path, which the
    explicit derivative of a wrench at a brings into the sums E^S (:func:`tree_derivatives_with_wrenches`); every
    coordinate when ``couplings`` is None. A child's columns are a subset of its parent's. With ``columns`` (the
    coordinates asked for) only those, and all of a link's own where it has one asked for; with ``backward`` (which
    links run a backward pass) a link without one carries its path's alone."""
    nv, n = linkage.nv, len(linkage.links)
    if couplings is None:
        return [np.arange(nv) for _ in range(n)]
    if columns is not None:
        return [
            np.asarray(sorted((set(c) & set(columns.tolist())) | _own_asked(linkage, i, columns)), dtype=int)
            for i, c in enumerate(_column_blocks(linkage, couplings, None, backward))
        ]
    own = [set(range(linkage.v_slice(i).start, linkage.v_slice(i).stop)) for i in range(n)]
    path = [set() for _ in range(n)]
    for i, parent in enumerate(linkage.parents):  # parents first
        path[i] = own[i] | (path[parent] if parent >= 0 else set())
    carried = [set(p) for p in path]
    for a, b in couplings:
        carried[a] |= set() if b is None else path[b]
    for i in reversed(range(n)):  # children first: a subtree's columns and couplings into its parent's
        parent = linkage.parents[i]
        if parent >= 0 and (backward is None or backward[parent]):
            carried[parent] |= carried[i]
    return [np.asarray(sorted(c), dtype=int) for c in carried]


def _own_asked(linkage: Linkage, i: int, columns: np.ndarray | None) -> set[int]:
    """Link i's own coordinates if any of them is among ``columns`` (None: all), else none."""
    own = set(range(linkage.v_slice(i).start, linkage.v_slice(i).stop))
    return own if columns is None or own & set(columns.tolist()) else set()


def _coordinates(fname: str, linkage: Linkage, name: str, x: Sequence[int]) -> np.ndarray:
    """``rows`` or ``columns`` of :func:`tree_derivatives` as an integer array, checked: distinct coordinates in
    0 … nv − 1, given as Python or NumPy integers (static: they shape the passes)."""
    if isinstance(x, jax.Array):
        raise TypeError(f"{fname}: {name} must be a sequence of Python or NumPy integers (static), not a JAX array")
    a = np.asarray(x)
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{fname}: {name} must be a 1-D sequence of integer coordinates, got {x!r}")
    a = a.astype(int)
    if (a.size and (a.min() < 0 or a.max() >= linkage.nv)) or len(set(a.tolist())) != a.size:
        raise ValueError(f"{fname}: {name} must be distinct coordinates in 0 … {linkage.nv - 1}, got {a.tolist()}")
    return a


def _passes(linkage: Linkage, rows: np.ndarray | None) -> list[bool]:
    """Which links run a backward pass for the rows asked for (None: all): those with a row asked for, and every link
    below one (its backward sums reach that link's rows)."""
    out = []
    for i, parent in enumerate(linkage.parents):  # parents first
        vs = linkage.v_slice(i)
        asked = rows is None or bool(np.any((rows >= vs.start) & (rows < vs.stop)))
        out.append(asked or (parent >= 0 and out[parent]))
    return out


def _take(x: Array | None, src: np.ndarray, dst: np.ndarray, axis: int) -> Array | None:
    """:func:`_move_columns` along ``axis``."""
    if x is None:
        return None
    return jnp.moveaxis(_move_columns(jnp.moveaxis(x, axis, -1), src, dst), -1, axis)


def _tree_pass(
    fname: str, linkage: Linkage, q, qd, qdd, applied, couplings, rows=None, columns=None
) -> tuple[IDDerivatives, Any]:
    """The pass of :func:`tree_derivatives_with_wrenches` (``applied`` None: no more wrenches); ``qd`` and ``qdd`` None:
    at rest, without the velocity and acceleration terms; ``couplings``: as there (None: all nv columns); ``rows``,
    ``columns``: as :func:`tree_derivatives`'s (``applied`` None)."""
    rest = qd is None
    nv = linkage.nv
    rows, columns = (
        None if x is None else _coordinates(fname, linkage, name, x)
        for name, x in (("rows", rows), ("columns", columns))
    )
    if (rows is not None or columns is not None) and not covered(linkage):
        raise ValueError(f"{fname}: rows and columns are not supported for spherical or free joints in quaternions")
    args = check_state(fname, linkage, q=q, qd=qd, qdd=qdd)
    q = args["q"]
    dtype = jnp.result_type(q, linkage.gravity.dtype, *(() if rest else (args["qd"], args["qdd"])))
    qd, qdd = (jnp.zeros(nv, dtype), jnp.zeros(nv, dtype)) if rest else (args["qd"], args["qdd"])
    grav = jnp.concatenate([jnp.zeros(3, dtype), linkage.gravity.astype(dtype)])

    def world(n: int) -> Kinematics:
        zero, z6 = jnp.zeros((6, n), dtype), jnp.zeros(6, dtype)
        if rest:
            return Kinematics(jnp.eye(4, dtype=dtype), None, None, zero, None, None, None)
        return Kinematics(jnp.eye(4, dtype=dtype), z6, z6, zero, zero, zero, zero)

    rods = rod_joints(linkage, q, *((None, None) if rest else (qd, qdd)), derivatives=not rest)
    prep = []  # per link: its joints, placement, and its points' inertias and loads
    for i, link in enumerate(linkage.links):
        qs, vs = linkage.q_slice(i), linkage.v_slice(i)
        jt, X = _link_joints(link, q[qs], qd[vs], qdd[vs], rods.get(i))
        if rest:  # the joints' poses and motion subspaces only
            jt = jt._replace(S_qd=None, S_acc=None, Sd=None, dS_qd=None, dS_qdd=None, dSd_qd=None)
        place = link.placement.astype(dtype) if X is None else link.placement.astype(dtype) @ X
        m, loads = point_inertias(linkage, i, dtype), point_loads(linkage, i, dtype)
        if link.joint != "soft":  # the joint frame carries nothing (rule 2)
            m, loads = jax.tree.map(lambda a: jnp.concatenate([jnp.zeros_like(a), a]), (m, loads))
        prep.append((jt, place, m, loads))
    backward = _passes(linkage, rows)
    own = [
        bool(_own_asked(linkage, i, columns)) or linkage.v_slice(i).stop == linkage.v_slice(i).start
        for i in range(len(prep))
    ]
    groups = _equal_links(linkage, prep, list(zip(own, backward)))
    cols = _group_columns(linkage, _column_blocks(linkage, couplings, columns, backward), groups, own)
    every = np.arange(nv)
    asked = every if columns is None else columns

    def forward_link(own, base, jt, place, m, loads):
        pts, terms = _forward_link(base.moved(place), jt, own)
        return pts, terms, _point_quantities(linkage, m, pts, grav, loads)

    forward = [None] * len(linkage.links)
    for g in groups:
        bases = []
        for i in g:
            parent = linkage.parents[i]
            if parent < 0:
                bases.append(world(cols[i].size))
            else:
                end = jax.tree.map(lambda a: a[-1], forward[parent][1])
                bases.append(
                    end._replace(**{f: _move_columns(getattr(end, f), cols[parent], cols[i]) for f in _CARRIED})
                )
        outs = side_by_side(functools.partial(forward_link, own[g[0]]), [(b, *prep[i]) for b, i in zip(bases, g)])
        for i, (pts, terms, quantities) in zip(g, outs):
            forward[i] = (prep[i][0], pts, terms, quantities, prep[i][1])
    aux = None
    if applied is not None:  # more point wrenches: 𝓕_k −= w_k, ∂𝓕_k/∂q −= ∂w_k/∂q (as the loads' in (16), (56))

        def frame(i: int, point: int) -> Kinematics:  # with all nv columns
            k = jax.tree.map(lambda a: a[_pass_index(linkage.links[i], point)], forward[i][1])
            return k._replace(**{f: _move_columns(getattr(k, f), cols[i], every) for f in _CARRIED})

        wrenches, aux = applied(frame)
        for w in wrenches:
            jt, pts, terms, p, place = forward[w.link]
            k = _pass_index(linkage.links[w.link], w.point)
            dw = _move_columns(w.d_wrench, every, cols[w.link])
            p = p._replace(F=p.F.at[k].add(-w.wrench), dF=p.dF.at[k].add(-dw))
            forward[w.link] = (jt, pts, terms, p, place)
    blocks = {}  # per link: its rows of τ, M, ∂ID/∂q, ∂ID/∂q̇ (n_l, nv) (None at rest: M, ∂ID/∂q̇)
    ahead = [Sums.zero(c.size, dtype, rest) for c in cols]
    wrenches = {}  # a rod's composite wrenches at its joints
    for g in reversed(groups):  # children first
        if not backward[g[0]]:
            continue
        backward_link = functools.partial(_backward_link, linkage.links[g[0]], own[g[0]])  # (a chart: links alone)
        args = [(*forward[i][:4], ahead[i], q[linkage.q_slice(i)]) for i in g]
        outs = side_by_side(backward_link, args)
        for i, (sums, rows_i, composite) in zip(g, outs):
            wrenches[i] = composite
            quantities, place, parent = forward[i][3], forward[i][4], linkage.parents[i]
            # the link's sums at its joint frame, with that point's quantities, into the parent's end
            if parent >= 0 and backward[parent]:
                p0 = jax.tree.map(lambda a: a[0], quantities)
                add = lambda a, b: None if a is None else a + b
                at_joint = sums._replace(
                    FC=sums.FC + p0.F, MC=add(sums.MC, p0.M), NC=add(sums.NC, p0.N), E=sums.E + p0.dF
                )
                moved = at_joint.moved(place)
                widen = lambda x: _move_columns(x, cols[i], cols[parent])  # the child's columns, parent's
                moved = moved._replace(**{f: widen(getattr(moved, f)) for f in ("U", "P", "V", "W", "E")})
                ahead[parent] = jax.tree.map(jnp.add, ahead[parent], moved)
            blocks[i] = [rows_i[0], *(None if r is None else _move_columns(r, cols[i], asked) for r in rows_i[1:])]
    C29 = per_rod(
        linkage, _rod_C29, {i: (j.Omega, j.Z, wrenches[i]) for i, j in rods.items() if i in wrenches and own[i]}
    )
    for i, local in C29.items():  # ∂(S_αᵀ𝓕^C)/∂q at fixed 𝓕^C, in the rod's block
        vs = linkage.v_slice(i)
        blocks[i][2] = blocks[i][2] + _move_columns(local, np.arange(vs.start, vs.stop), asked)
    # the global vector and matrices: the links' rows in the order of their coordinates (eq. (42))
    order = sorted(blocks, key=lambda i: linkage.v_slice(i).start)
    tau, Mm, dq, dqd = (
        None if blocks[order[0]][k] is None else jnp.concatenate([blocks[i][k] for i in order]) for k in range(4)
    )
    if rows is not None:  # the rows asked for, of those the passes formed
        formed = np.concatenate([np.arange(linkage.v_slice(i).start, linkage.v_slice(i).stop) for i in order])
        tau, Mm, dq, dqd = (_take(x, formed, rows, 0) for x in (tau, Mm, dq, dqd))
    for i, link in enumerate(linkage.links):  # from the charts' derivatives to the tangent space at fixed ν, ν̇
        if link.quaternion:
            vs = linkage.v_slice(i)
            S = forward[i][0].S[0]
            if not rest:  # (zero at rest)
                d_rate, d_acc = _chart_correction(S, qd[vs], qdd[vs])
                dq = dq.at[:, vs].add(dqd[:, vs] @ d_rate + Mm[:, vs] @ d_acc)
            # the rows are the forces conjugate to ν = dexp_{−Ω}Ω̇, not to Ω̇: τ_ν = dexp_{−Ω}^{−T} τ_Ω
            dq = dq.at[vs, vs].add(0.5 * S.T @ se3.adbar(S @ tau[vs]) @ S)
    if rest:
        return IDDerivatives(tau, dq, None, None), aux
    arm, at = linkage.armature.astype(dtype), every if rows is None else rows  # (the rows asked for)
    tau = tau + _move_columns(arm * qdd, every, at)
    return IDDerivatives(tau, dq, dqd, Mm + _take(_move_columns(jnp.diag(arm), every, asked), every, at, 0)), aux
