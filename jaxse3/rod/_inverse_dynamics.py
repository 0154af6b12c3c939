"""RNEA inverse dynamics of a GVS rod and its analytical derivatives in one forward and one backward pass.

Seed 003 §4 and App. C/D, following the verified pseudocode of digest 003 §2.2 (single rod, fixed base):

* forward pass over joints α (:func:`_forward_pass`): poses, body twists η_α and accelerations η̇_α (D14, D15), the
  joint terms R_α (20b), Q_α (20c, with the **minus** sign of the gravity term: the boxed D12 is a misprint, digest
  §8) and Y_α (26), and their transported sums R^B, Q^B (22a, 22b), S^B (= J), Y^B (28a, 28b);
* point quantities (:func:`_point_quantities`): wrenches 𝓕_k = 𝓜_k η̇_k + ad*_{η_k}𝓜_kη_k − 𝓜_k Ad⁻¹_{g_k}𝓖 − 𝓕ext_k
  (16) and 𝓝_k = \\bar{ad}*_{𝓜η} + ad*_η 𝓜 − 𝓜 ad_η (20a);
* backward pass (:func:`_backward_pass`): composite wrench 𝓕^C (22c), composite 𝓝^C, 𝓜^C (22d, 22e), U^S, P^S, V^S,
  W^S, E^S (22f, 22g, 28c, 33, 56), giving

  ID = Σ_α S_αᵀ 𝓕^C_α                                                                          (14)
  ∂ID/∂q  = Σ_α ∂(S_αᵀ𝓕^C)/∂q|_𝓕 + S_αᵀ(𝓝^C R^B + 𝓜^C Q^B + U^S + P^S − E^S)                  (21, 55)
  ∂ID/∂q̇ = Σ_α S_αᵀ(𝓝^C S^B + 𝓜^C Y^B + V^S)                                                    (27)
  ∂ID/∂q̈ = Σ_α S_αᵀ(𝓜^C S^B + W^S) = M(q)                                                      (32, 34)

  and, below ``level="all"``, the mass-only path (:func:`_mass_pass`): ID = Σ_k J_kᵀ𝓕_k and M = Σ_k J_kᵀ𝓜_k J_k
  over the points, from the forward pass's body Jacobians (the same sums, without a backward pass).

Here ad*_V = −ad_Vᵀ and \\bar{ad}*_V = −``se3.adbar(V)``. ID(q, q̇, q̈) = M q̈ − F(q, q̇) (eq. (8)) contains inertia,
Coriolis/centrifugal terms and gravity; external loads (:class:`~jaxse3.rod.forces.Loads`) enter the same recursion
with the minus sign of (16) when passed to :func:`rnea` (the public :func:`inverse_dynamics` has none; they belong
to τ, :func:`jaxse3.rod.dynamics.generalized_forces`). ID alone, without loads, takes a matrix-free path
(:func:`_rnea_tau`).

Two specialisations of the same recursions: a rod with runs of constant strain (``Rod.strain_run`` > 1) evaluates
each run's points side by side from the run's first point, which turns the chain into a tree of stars (the backward
sums run over each anchor's joints, the rule of seed 003 §2.3 for branched linkages); a planar rod (``Rod.planar``)
without external loads runs them on SE(2), with 3-vectors and 3×3 operators (:mod:`jaxse3.lie.se2`, the
restrictions of the se(3) maps to the planar subalgebra, which ad and Ad keep invariant).

:func:`inverse_dynamics` carries a ``custom_jvp`` rule built from these derivatives, so ``jax.jacfwd`` and every
solver that linearises it run the analytical formulas (counted in :data:`ROD_RULE_CALLS`).
"""

from __future__ import annotations

from types import ModuleType
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import DTypeLike
from jaxtyping import Array, Float, PyTree

from jaxse3 import se3
from jaxse3.lie import se2
from jaxse3.lie.tangents import RULE_CALLS, accumulate, custom_rule, is_zero, jvp_of_rest
from jaxse3.rod._gravity import gravity_at_rest
from jaxse3.rod.forces import Loads, external_wrenches
from jaxse3.rod.kinematics import UNROLLED_STEPS, Joints, check_state, joint_rates, joints
from jaxse3.rod.magnus import magnus_dZT, magnus_ZT_apply
from jaxse3.rod.model import Rod

__all__ = [
    "RNEAResult",
    "rnea",
    "inverse_dynamics",
    "inverse_dynamics_derivatives",
    "inverse_dynamics_at_rest",
    "mass_matrix",
    "ROD_RULE_CALLS",
]

#: The package's rule counter (:data:`jaxse3.lie.tangents.RULE_CALLS`), under the name the rod has always used; its
#: keys "inverse_dynamics", "generalized_forces", "forward_dynamics" show that jax.jacfwd runs the rod's formulas.
ROD_RULE_CALLS = RULE_CALLS

#: The entries of :class:`RNEAResult` besides ID that each level returns.
_LEVELS = {"id": (), "mass": ("M",), "all": ("M", "dq", "dqd")}


class RNEAResult(NamedTuple):
    """Output of :func:`rnea`; entries not requested by ``level`` are None."""

    tau: Float[Array, " n_dof"]  # ID (14)
    M: Float[Array, "n_dof n_dof"] | None  # ∂ID/∂q̈ = M(q) (32, 34)
    dq: Float[Array, "n_dof n_dof"] | None  # ∂ID/∂q (21, 55)
    dqd: Float[Array, "n_dof n_dof"] | None  # ∂ID/∂q̇ (27)


class JointTerms(NamedTuple):
    """The App. C terms of joint α that ∂ID/∂q and ∂ID/∂q̇ need, or their transported sums X^B (same shapes). At rest
    (q̇ = q̈ = 0) R_α and Y_α vanish (None) and Q_α is its gravity term alone."""

    R: Float[Array, "... 6 n_dof"] | None  # R_α = ad_{η_α⁺}S_α + (∂S_α/∂q)q̇ (20b); R^B_α (22a)
    Q: Float[Array, "... 6 n_dof"]  # Q_α (20c), gravity term −ad_{Ad⁻¹_{g_α}𝓖}S_α (digest §8); Q^B_α (22b)
    Y: Float[Array, "... 6 n_dof"] | None  # Y_α = R_α + ad_{η_α}S_α + Ṡ_α (26); Y^B_α (28b)


class PointKinematics(NamedTuple):
    """What the forward pass carries from point α to α + 1 (stacked over the points in :class:`ForwardPass`)."""

    g: Float[Array, "... 4 4"]  # pose g_α (2a)
    eta: Float[Array, "... 6"]  # body twist η_α (D14)
    etad: Float[Array, "... 6"]  # body acceleration η̇_α (D15)
    J: Float[Array, "... 6 n_dof"]  # body Jacobian J_α = S^B_α (2b, 28a)
    termsB: JointTerms | None  # R^B_α, Q^B_α, Y^B_α (22a, 22b, 28b); None without the App. C terms


class ForwardPass(NamedTuple):
    """Result of :func:`_forward_pass`."""

    points: PointKinematics  # g_k, η_k, η̇_k, J_k, X^B_k at every point (leading axis n_p)
    terms: JointTerms | None  # R_α, Q_α, Y_α of every joint (leading axis n_p − 1) (20b, 20c, 26)


class PointQuantities(NamedTuple):
    """Per-point inputs of the backward pass (leading axis n_p); None where the level does not use them."""

    F: Float[Array, "... 6"]  # 𝓕_k, external wrenches subtracted (16)
    M: Float[Array, "... 6"] | None  # 𝓜_k, the weighted screw inertia (16), diagonal; None without inertia or for ID
    N: Float[Array, "... 6 6"] | None  # 𝓝_k (20a); None without inertia or below level "all"
    dFext: Float[Array, "... 6 n_dof"] | None  # ∂𝓕ext_k/∂q (55, 56); None without loads or below level "all"


class Composites(NamedTuple):
    """The sums of ID and M at joint α (all zero past the tip): part of the backward pass's carry."""

    FC: Float[Array, " 6"]  # 𝓕^C_α, composite wrench (22c)
    MC: Float[Array, "6 6"] | None  # 𝓜^C_α, composite inertia (22e); None without 𝓜_k
    W: Float[Array, "6 n_dof"] | None  # W^S_α (33); None without 𝓜_k

    @classmethod
    def zero(cls, n: int, dtype: DTypeLike, inertia: bool, d: int = 6) -> Composites:
        """(·)_{n_p} = 0, with 𝓜^C and W^S if ``inertia``; ``d``: the twists' size (3 on the plane)."""
        inertial = (jnp.zeros((d, d), dtype), jnp.zeros((d, n), dtype)) if inertia else (None,) * 2
        return cls(jnp.zeros(d, dtype), *inertial)


class DerivativeSums(NamedTuple):
    """The further sums of ∂ID/∂q and ∂ID/∂q̇ at joint α (all zero past the tip)."""

    P: Float[Array, "6 n_dof"]  # P^S_α (22g)
    NC: Float[Array, "6 6"] | None  # 𝓝^C_α (22d); None without inertia or at rest
    U: Float[Array, "6 n_dof"] | None  # U^S_α (22f); None without inertia
    V: Float[Array, "6 n_dof"] | None  # V^S_α (28c); None without inertia or at rest
    E: Float[Array, "6 n_dof"] | None  # E^S_α, the transported ∂𝓕ext/∂q (56); None without loads

    @classmethod
    def zero(
        cls, n: int, dtype: DTypeLike, inertia: bool, loads: bool, rest: bool = False, d: int = 6
    ) -> DerivativeSums:
        """(·)_{n_p} = 0, with U^S if ``inertia``, 𝓝^C and V^S if ``inertia`` and not at ``rest``, E^S if ``loads``;
        ``d``: the twists' size (3 on the plane)."""
        zdn = jnp.zeros((d, n), dtype)
        moving = inertia and not rest
        NC, V = (jnp.zeros((d, d), dtype), zdn) if moving else (None, None)
        return cls(zdn, NC, zdn if inertia else None, V, zdn if loads else None)


def _lie(twists: Array) -> ModuleType:
    """The algebra of twists of this size: se(3) (6), or se(2) (3) in the recursions of a planar rod."""
    return se2 if twists.shape[-1] == 3 else se3


def _on_plane(rod: Rod, grav: Float[Array, " 6"]) -> tuple[Float[Array, " 3"], Float[Array, "3 3"]]:
    """A planar rod's gravity 𝓖 and base pose on SE(2), in its base frame: (Ad⁻¹_{base} 𝓖)'s components ``se2.PLANE``
    and the identity (the out-of-plane component of gravity does no work on a planar rod)."""
    base = rod.base_pose.astype(grav.dtype)
    return (se3.Ad_inv(base) @ grav)[jnp.asarray(se2.PLANE)], jnp.eye(3, dtype=grav.dtype)


def _coad_star(eta: Float[Array, "... 6"]) -> Float[Array, "... 6 6"]:  # ad*_η = −ad_ηᵀ
    return -_lie(eta).ad(eta).swapaxes(-1, -2)


def _with_tip(hist: PyTree[Array], last: PyTree[Array]) -> PyTree[Array]:
    """The scan's per-joint history at points 1 … n_p − 1 with the tip's value appended (point n_p)."""
    return jax.tree.map(lambda h, l: jnp.concatenate([h, l[None]], axis=0), hist, last)


class JointRows(NamedTuple):
    """One joint's summands of ID (14), M (32), ∂ID/∂q (21, 55) and ∂ID/∂q̇ (27), each matrix as factor pairs (L, R)
    with summand Σ Lᵀ R — (S_α, 𝓜^C S^B + W^S) for M, (S_α, ·) for ∂ID/∂q̇, (𝓩_α, (∂(Tᵀ𝓕^C)/∂Ω)𝓩_α) of (C29) and
    (S_α, ·) for ∂ID/∂q — left unmultiplied, so that the sum over the joints is one contraction over the joints and
    the twist components (:func:`_sum_over_joints`) instead of an (n, n) matrix per joint; ``dq_dZT``: the Magnus
    order-4 term of (C29), an (n, n) matrix (None at order 2)."""

    tau: Float[Array, " n_dof"]
    M: tuple[tuple[Array, Array], ...] | None
    dq: tuple[tuple[Array, Array], ...] | None
    dq_dZT: Float[Array, "n_dof n_dof"] | None
    dqd: tuple[tuple[Array, Array], ...] | None


def _sum_over_joints(rows: JointRows) -> RNEAResult:
    """Σ_α of the per-joint summands of (14), (21), (27), (32) (leading axes: the joints, or runs and their joints)."""
    lead = rows.tau.ndim - 1

    def contract(pairs: tuple[tuple[Array, Array], ...] | None) -> Array | None:
        if pairs is None:
            return None
        n = pairs[0][0].shape[-1]
        return sum(L.reshape(-1, n).T @ R.reshape(-1, n) for L, R in pairs)

    dq = contract(rows.dq)
    if rows.dq_dZT is not None:
        dq = dq + jnp.sum(rows.dq_dZT, axis=tuple(range(lead)))
    return RNEAResult(jnp.sum(rows.tau, axis=tuple(range(lead))), contract(rows.M), dq, contract(rows.dqd))


# ---------------------------------------------------------------------------------------------------------------------
# forward pass (joints α = 1 … n_p − 1)


def _joint_terms(
    j: Joints,
    k: PointKinematics,
    eta_p: Float[Array, " 6"],
    etad_p: Float[Array, " 6"],
    grav: Float[Array, " 6"],
) -> JointTerms:
    """R_α, Q_α, Y_α of joint α (20b, 20c, 26) from the App. C terms of ``j`` (C19, C20, C24) and η_α⁺, η̇_α⁺; at rest
    (``j`` without App. C terms) Q_α = −ad_{Ad⁻¹_{g_α}𝓖}S_α alone."""
    lie = _lie(grav)
    ad = lie.ad
    gloc = lie.Ad_inv(k.g) @ grav  # Ad⁻¹_{g_α} 𝓖
    if j.dS_qd is None:  # at rest: η = η̇ = 0 and every velocity and acceleration term vanishes
        return JointTerms(None, -ad(gloc) @ j.S, None)
    R = ad(eta_p) @ j.S + j.dS_qd  # (20b)
    Q = (
        ad(etad_p) @ j.S + ad(eta_p) @ R + ad(k.eta) @ j.dS_qd + j.dSd_qd + j.dS_qdd - ad(gloc) @ j.S
    )  # (20c), gravity sign corrected (digest §8)
    Y = R + ad(k.eta) @ j.S + j.Sd  # (26)
    return JointTerms(R, Q, Y)


def _forward_pass(
    jt: Joints, grav: Float[Array, " 6"], base: Float[Array, "4 4"], terms: bool, run: int = 1
) -> ForwardPass:
    """FORWARD of digest §2.2: g, η, η̇, J at every point (2a, 2b, D14, D15), and with ``terms`` R_α, Q_α, Y_α (20b,
    20c, 26) with their transported sums (22a, 22b, 28b) from the App. C terms of ``jt`` (``joints(...,
    derivatives=True)``). The twists advance by the vectors S q̇ and S q̈ + Ṡ q̇ of ``jt`` (no Ṡ matrix is needed for
    them); a ``jt`` without them (``joints(rod, q)``) is a rod at rest: η = η̇ = 0, and R, Y vanish.

    ``run`` > 1: ``jt`` holds anchored joints (``joints(..., anchored=True)``, runs of ``run`` joints from a common
    anchor point), and the scan takes one step per run, computing the run's points side by side from its anchor."""
    (d, n), dtype = jt.S.shape[-2:], jt.S.dtype
    zero = jnp.zeros((d, n), dtype)
    rest = jt.S_qd is None
    init = PointKinematics(
        base,
        jnp.zeros(d, dtype),
        jnp.zeros(d, dtype),
        zero,
        (JointTerms(None, zero, None) if rest else JointTerms(zero, zero, zero)) if terms else None,
    )
    ad = _lie(init.eta).ad

    def point(k: PointKinematics, j: Joints) -> tuple[PointKinematics, JointTerms | None]:
        """The point at the end of joint j, whose start (or anchor) is the point k."""
        eta_p = k.eta if rest else k.eta + j.S_qd  # η_α⁺
        etad_p = k.etad if rest else k.etad + j.S_acc + ad(k.eta) @ j.S_qd  # η̇_α⁺
        joint_terms = _joint_terms(j, k, eta_p, etad_p, grav) if terms else None
        transport = lambda X, XB: j.Ad_inv @ (X + XB)  # X^B_{α+1} = Ad⁻¹_{g_{α,α+1}}(X_α + X^B_α)
        nxt = PointKinematics(
            k.g @ j.step,  # (2a)
            j.Ad_inv @ eta_p,  # η_{α+1} (D14)
            j.Ad_inv @ etad_p,  # η̇_{α+1} (D15)
            transport(j.S, k.J),  # (2b, 28a)
            jax.tree.map(transport, joint_terms, k.termsB),  # (22a, 22b, 28b)
        )
        return nxt, joint_terms

    def step(k: PointKinematics, js: Joints) -> tuple[PointKinematics, tuple[PointKinematics, JointTerms | None]]:
        out = jax.vmap(point, in_axes=(None, 0))(k, js) if run > 1 else point(k, js)
        return (jax.tree.map(lambda a: a[-1], out[0]) if run > 1 else out[0]), out

    xs = jax.tree.map(lambda a: a.reshape((-1, run) + a.shape[1:]), jt) if run > 1 else jt
    steps = jax.tree.leaves(xs)[0].shape[0]
    # a short pass runs unrolled: under vmap XLA:CPU's while loop materialises the stacked (B, 6, n) carries between
    # iterations (spatial FD, vmap 1000: 1.7× faster unrolled); long passes stay loops (compile time)
    _, (pts, joint_terms) = jax.lax.scan(step, init, xs, unroll=steps <= UNROLLED_STEPS)
    if run > 1:
        pts, joint_terms = jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), (pts, joint_terms))
    return ForwardPass(jax.tree.map(lambda a0, a: jnp.concatenate([a0[None], a]), init, pts), joint_terms)


# ---------------------------------------------------------------------------------------------------------------------
# point quantities (points k = 1 … n_p)


def _point_wrenches(
    Mk: Float[Array, "n_p 6"],
    g: Float[Array, "n_p 4 4"],
    eta: Float[Array, "n_p 6"],
    etad: Float[Array, "n_p 6"],
    grav: Float[Array, " 6"],
) -> Float[Array, "n_p 6"]:
    """𝓕_k = 𝓜_k η̇_k + ad*_{η_k} 𝓜_k η_k − 𝓜_k Ad⁻¹_{g_k} 𝓖 at every point (16), without external loads; ``Mk``: the
    diagonals of 𝓜_k."""
    gloc = jnp.einsum("kij,j->ki", _lie(grav).Ad_inv(g), grav)
    return Mk * (etad - gloc) + jnp.einsum("kij,kj->ki", _coad_star(eta), Mk * eta)


def _point_N(Mk: Float[Array, "n_p 6"], eta: Float[Array, "n_p 6"]) -> Float[Array, "n_p 6 6"]:
    """𝓝_k = \\bar{ad}*_{𝓜_k η_k} + ad*_{η_k} 𝓜_k − 𝓜_k ad_{η_k} at every point (20a); ``Mk``: the diagonals of 𝓜_k."""
    lie = _lie(eta)
    adeta = lie.ad(eta)
    return -lie.adbar(Mk * eta) - jnp.swapaxes(adeta, -1, -2) * Mk[:, None, :] - Mk[:, :, None] * adeta


def _point_quantities(
    rod: Rod,
    kin: PointKinematics,
    grav: Float[Array, " 6"],
    loads: Loads | None,
    inertia: bool,
    level: str,
    rest: bool = False,
) -> PointQuantities:
    """POINT QUANTITIES of digest §2.2: 𝓕_k (16) — its inertial and gravity part if ``inertia``, minus the external
    wrenches — and what the backward pass of ``level`` needs: 𝓜_k, 𝓝_k (20a; zero at ``rest``, then None),
    ∂𝓕ext_k/∂q (55, 56)."""
    Mk = rod.inertia.astype(grav.dtype)
    if grav.shape[-1] == 3:  # on the plane
        Mk = Mk[:, se2.PLANE]
    F = _point_wrenches(Mk, kin.g, kin.eta, kin.etad, grav) if inertia else jnp.zeros_like(kin.eta)
    ext = external_wrenches(rod, loads, kin.g, kin.J)  # None without loads
    if ext is not None:
        F = F - ext[0]
    derivatives = level == "all"
    return PointQuantities(
        F,
        Mk if inertia and level != "id" else None,
        _point_N(Mk, kin.eta) if inertia and derivatives and not rest else None,
        ext[1] if ext is not None and derivatives else None,
    )


# ---------------------------------------------------------------------------------------------------------------------
# backward pass (joints α = n_p − 1 … 1)


def _composite_step(
    c: Composites, j: Joints, p: PointQuantities, J: Float[Array, "6 n_dof"]
) -> tuple[Composites, JointRows]:
    """The composite part of one backward step at joint α, from the sums at α + 1 and point α + 1: 𝓕^C_α (22c) and
    the summand S_αᵀ𝓕^C_α of ID (14); with 𝓜_k also 𝓜^C_α (22e), W^S_α (33) and S_αᵀ(𝓜^C_α S^B_α + W^S_α) of M
    (32)."""
    FC = j.coAd @ (p.F + c.FC)  # (22c)
    if p.M is None:
        return Composites(FC, None, None), JointRows(j.S.T @ FC, None, None, None, None)  # (14)
    MC = j.coAd @ (p.M[:, None] * jnp.eye(p.M.shape[-1], dtype=p.M.dtype) + c.MC) @ j.Ad_inv  # (22e)
    W = MC @ j.S + j.coAd @ c.W  # (33)
    return Composites(FC, MC, W), JointRows(j.S.T @ FC, ((j.S, MC @ J + W),), None, None, None)  # (14), (32)


def _next_points(pts: PointQuantities) -> PointQuantities:
    """The point quantities at α + 1 for the joints α = 1 … n_p − 1."""
    return jax.tree.map(lambda a: a[1:], pts)


def _mass_pass(fwd: ForwardPass, pts: PointQuantities) -> RNEAResult:
    """The mass-only path (levels "id" and "mass") in Jacobian form: ID = Σ_k J_kᵀ𝓕_k and M = Σ_k J_kᵀ𝓜_k J_k over the
    points, from the body Jacobians of the forward pass. Both equal the composite sums Σ_α S_αᵀ𝓕^C_α (14) and
    Σ_α S_αᵀ(𝓜^C_α S^B_α + W^S_α) (32, 34) — transport each point's wrench back joint by joint, or each joint's motion
    forward to the point — but need no backward pass: two contractions over the points instead of a sequential
    recursion with 6×6 composite inertias."""
    J = fwd.points.J  # (n_p, 6, n); J_1 = 0 at the base
    tau = jnp.einsum("kin,ki->n", J, pts.F)  # (14)
    if pts.M is None:
        return RNEAResult(tau, None, None, None)
    MJ = pts.M[..., None] * J  # 𝓜_k J_k, 𝓜_k diagonal
    return RNEAResult(tau, jnp.einsum("kin,kim->nm", J, MJ), None, None)  # (32, 34)


def _backward_pass(rod: Rod, jt: Joints, fwd: ForwardPass, pts: PointQuantities, run: int = 1) -> RNEAResult:
    """BACKWARD of digest §2.2 (level "all"): the mass-only path's 𝓕^C, 𝓜^C, W^S and the sums P^S (22g), 𝓝^C, U^S,
    V^S (22d, 22f, 28c; with inertia) and E^S (56; with loads), giving ID (14), ∂ID/∂q (21, 55), ∂ID/∂q̇ (27) and
    M = ∂ID/∂q̈ (32, 34).

    ``run`` > 1 (anchored joints, see :func:`_forward_pass`): the joints of a run all start at its anchor, so the
    chain is a tree whose anchors each carry a star of ``run`` joints, and the sums of a joint run over its subtree
    (the rule of seed 003 §2.3 for branched linkages: (•)^C and (•)^S summed over all children). Only the run's last
    joint has children (the next run's joints), so the scan takes one step per run: the run's joints side by side,
    the last one fed with the sums of the run ahead (the others with zero), and their sums added at the anchor."""
    n, dtype, order = rod.n_dof, pts.F.dtype, rod.expansion_order
    lie, d = _lie(pts.F), pts.F.shape[-1]
    Phi_c = rod.Phi_c[..., se2.PLANE, :] if d == 3 else rod.Phi_c

    def step(
        c: tuple[Composites, DerivativeSums],
        x: tuple[
            Joints, PointQuantities, PointKinematics, JointTerms | None, Float[Array, "n_c 6 n_dof"], Float[Array, ""]
        ],
    ) -> tuple[tuple[Composites, DerivativeSums], JointRows]:
        ahead, s = c  # the sums at α + 1
        j, p, k, t, Phi_c, h = x  # joint α, point α + 1, point α (J_α = S^B_α, X^B_α), R_α, Q_α, Y_α, interval α
        comp, row = _composite_step(ahead, j, p, k.J)
        P = -lie.adbar(comp.FC) @ j.S + j.coAd @ s.P  # (22g)
        acc = P  # P^S + 𝓝^C R^B + 𝓜^C Q^B + U^S − E^S of (21, 55)
        NC = U = V = E = dqd = None
        if comp.MC is not None:  # inertia: U^S; 𝓝^C, V^S and ∂ID/∂q̇ unless at rest (𝓝 = 0, R = Y = 0, ∂ID/∂q̇ = 0)
            U = comp.MC @ t.Q + j.coAd @ s.U  # (22f)
            acc = acc + comp.MC @ k.termsB.Q
            if p.N is not None:
                NC = j.coAd @ (p.N + s.NC) @ j.Ad_inv  # (22d)
                U = U + NC @ t.R  # (22f)
                V = NC @ j.S + comp.MC @ t.Y + j.coAd @ s.V  # (28c)
                acc = acc + NC @ k.termsB.R
                dqd = ((j.S, NC @ k.J + comp.MC @ k.termsB.Y + V),)  # (27)
            acc = acc + U
        if p.dFext is not None:
            E = j.coAd @ (p.dFext + s.E)  # (56)
            acc = acc - E
        # (C29) and (21, 55): 𝓩ᵀ(∂(Tᵀ𝓕^C)/∂Ω)𝓩 + S_αᵀ acc as factor pairs, the Magnus order-4 term apart
        dq = ((j.Z, lie.dexpT_jac(j.Omega, comp.FC) @ j.Z), (j.S, acc))
        dZT = None if order == 2 else magnus_dZT(Phi_c, lie.dexpT_apply(j.Omega, comp.FC), h, order)
        return (comp, DerivativeSums(P, NC, U, V, E)), row._replace(dq=dq, dq_dZT=dZT, dqd=dqd)

    def run_step(c, x):  # the joints of one run, from the sums of the run ahead; their sums at the anchor
        first = lambda a: jnp.zeros((run - 1,) + a.shape, a.dtype)  # no joint ahead of the run's other joints
        ahead = jax.tree.map(lambda a: jnp.concatenate([first(a), a[None]]), c)
        sums, rows = jax.vmap(step, in_axes=(0, (0, 0, None, 0, 0, 0)))(ahead, x)  # one anchor for the run
        return jax.tree.map(lambda a: jnp.sum(a, axis=0), sums), rows

    inertia, rest = pts.M is not None, pts.N is None
    loads = pts.dFext is not None
    c0 = (Composites.zero(n, dtype, inertia, d), DerivativeSums.zero(n, dtype, inertia, loads, rest, d))
    start = jax.tree.map(lambda a: a[:-1:run], fwd.points)  # point α of joint α, or the anchor of each run
    joint_xs = (jt, _next_points(pts), fwd.terms, Phi_c, rod.h)
    if run > 1:
        joint_xs = jax.tree.map(lambda a: a.reshape((-1, run) + a.shape[1:]), joint_xs)
    xs = (*joint_xs[:2], start, *joint_xs[2:])
    steps = jax.tree.leaves(xs)[0].shape[0]  # a short pass runs unrolled, as the forward pass
    _, rows = jax.lax.scan(step if run == 1 else run_step, c0, xs, reverse=True, unroll=steps <= UNROLLED_STEPS)
    return _sum_over_joints(rows)


# ---------------------------------------------------------------------------------------------------------------------
# ID alone, matrix-free

# the carry (g_α, η_α, η̇_α) and the inputs (exp Ω̂_α, Ad⁻¹_{exp Ω̂_α}, S_α q̇, S_α q̈ + Ṡ_α q̇) of its forward pass
_Kinematics = tuple[Float[Array, "4 4"], Float[Array, " 6"], Float[Array, " 6"]]
_TwistRates = tuple[Float[Array, "4 4"], Float[Array, "6 6"], Float[Array, " 6"], Float[Array, " 6"]]


def _rnea_tau(
    rod: Rod,
    q: Float[Array, " n_dof"],
    qd: Float[Array, " n_dof"] | None,
    qdd: Float[Array, " n_dof"] | None,
    grav: Float[Array, " 6"],
) -> Float[Array, " n_dof"]:
    """ID alone (14)–(16) with vectors only: the joint twist rates S_α q̇ = T Ω̇_α and S_α q̈ + Ṡ_α q̇ = T Ω̈_α + Ṫ Ω̇_α
    from :func:`~jaxse3.rod.kinematics.joint_rates` (zero at rest, ``qd`` None), and S_αᵀ𝓕^C_α = 𝓩_αᵀ(Tᵀ𝓕^C_α) from
    :func:`~jaxse3.rod.magnus.magnus_ZT_apply`; no (6, n) matrix S_α is formed (5× fewer flops for the CDM). On SE(2)
    for a ``rod.planar`` rod."""
    order = rod.expansion_order
    rows = jnp.asarray(se2.PLANE) if rod.planar else slice(None)
    Phi_c = rod.Phi_c[..., rows, :]
    xi = Phi_c @ q + rod.xi_star_c[..., rows]  # (n_p − 1, n_c, 6) or (…, 3)
    r = joint_rates(rod, q, qd, qdd, planar=rod.planar)  # zero rates at rest
    Om, S_qd, S_acc = r.Omega, r.vel, r.acc
    lie = _lie(Om)
    grav, base = _on_plane(rod, grav) if rod.planar else (grav, rod.base_pose.astype(q.dtype))
    step = lie.exp(Om)

    def forward(carry: _Kinematics, x: _TwistRates) -> tuple[_Kinematics, _Kinematics]:
        g, eta, etad = carry
        step, Ai, v, acc = x
        eta_p = eta + v
        return (g @ step, Ai @ eta_p, Ai @ (etad + acc + lie.ad(eta) @ v)), carry

    zero = jnp.zeros_like(grav)
    last, hist = jax.lax.scan(forward, (base, zero, zero), (step, lie.Ad_inv(step), S_qd, S_acc))
    g, eta, etad = _with_tip(hist, last)
    F = _point_wrenches(rod.inertia.astype(q.dtype)[:, rows], g, eta, etad, grav)

    def backward(
        FC: Float[Array, " 6"], x: tuple[Float[Array, "6 6"], Float[Array, " 6"]]
    ) -> tuple[Float[Array, " 6"], Float[Array, " 6"]]:
        As, F = x
        FC = As @ (F + FC)  # (22c)
        return FC, FC

    _, FC = jax.lax.scan(backward, zero, (lie.coAd(step), F[1:]), reverse=True)
    w = jnp.einsum("kji,kj->ki", r.T, FC)  # T ᵀ𝓕^C
    return jnp.sum(jax.vmap(lambda *a: magnus_ZT_apply(*a, order))(xi, Phi_c, w, rod.h), axis=0)  # (14)


# ---------------------------------------------------------------------------------------------------------------------
# public functions


def rnea(
    rod: Rod,
    q: Float[Array, " n_dof"],
    qd: Float[Array, " n_dof"] | None,
    qdd: Float[Array, " n_dof"] | None,
    loads: Loads | None = None,
    level: str = "id",
    inertia: bool = True,
) -> RNEAResult:
    """Recursive Newton–Euler inverse dynamics with optional analytical derivatives (seed 003 §4, digest §2.2).

    Args:
        rod: a :class:`~jaxse3.rod.model.Rod`.
        q, qd, qdd: (n_dof,) generalised coordinates, velocities, accelerations. ``qd = qdd = None``: the rod at rest
            (q̇ = q̈ = 0 exactly, as in statics, eq. (13)): every velocity and acceleration term is skipped — η = η̇ =
            0, 𝓝 = 0, R_α = Y_α = 0, no App. C joint derivatives — and ∂ID/∂q̇ = 0.
        loads: external physical loads; they enter 𝓕_k with a minus sign, so the result is ID − Σ J_kᵀ𝓕ext_k.
        level: ``"id"`` (ID only), ``"mass"`` (+ M), ``"all"`` (+ M, ∂ID/∂q, ∂ID/∂q̇).
        inertia: False drops inertia, Coriolis and gravity (only the loads term remains; used for τ's loads).
    """
    if level not in _LEVELS:
        raise ValueError(f"rnea: 'level' must be one of {tuple(_LEVELS)}, got {level!r}")
    rest = qd is None
    if rest != (qdd is None):
        raise ValueError("rnea: 'qd' and 'qdd' must both be arrays, or both None (the rod at rest)")
    check_state(rod, q=q, qd=qd, qdd=qdd)
    q, qd, qdd = (None if a is None else jnp.asarray(a, dtype=jnp.result_type(float, a)) for a in (q, qd, qdd))
    dtype = q.dtype
    grav = jnp.concatenate([jnp.zeros(3, dtype), rod.gravity.astype(dtype)])  # 𝓖 = (0, a_g)
    has_loads = loads is not None and not (loads.local is None and loads.world is None and loads.contact is None)
    if not (inertia or has_loads):  # no wrench acts on the rod: ID and its derivatives vanish
        r = RNEAResult(jnp.zeros(rod.n_dof, dtype), None, None, None)
    elif level == "id" and not has_loads:
        r = RNEAResult(_rnea_tau(rod, q, qd, qdd, grav), None, None, None)
    else:
        with_terms = level == "all" and inertia
        run = rod.strain_run  # > 1: each run's points side by side from its first point (anchored joints)
        planar = rod.planar and not has_loads  # on SE(2), in the base frame's plane (the loads' wrenches are spatial)
        grav, base = _on_plane(rod, grav) if planar else (grav, rod.base_pose.astype(dtype))
        jt = joints(rod, q, qd, qdd, derivatives=with_terms and not rest, anchored=run > 1, planar=planar)
        fwd = _forward_pass(jt, grav, base, terms=with_terms, run=run)
        pts = _point_quantities(rod, fwd.points, grav, loads, inertia, level, rest)
        r = _backward_pass(rod, jt, fwd, pts, run) if level == "all" else _mass_pass(fwd, pts)
    zero = jnp.zeros((rod.n_dof, rod.n_dof), dtype)  # the requested entries that no term produced
    return r._replace(**{name: zero for name in _LEVELS[level] if getattr(r, name) is None})


def inverse_dynamics_derivatives(
    rod: Rod, q: Float[Array, " n_dof"], qd: Float[Array, " n_dof"], qdd: Float[Array, " n_dof"]
) -> tuple[Float[Array, "n_dof n_dof"], Float[Array, "n_dof n_dof"], Float[Array, "n_dof n_dof"]]:
    """(∂ID/∂q, ∂ID/∂q̇, ∂ID/∂q̈ = M), each (n_dof, n_dof), in one forward and one backward pass (eqs. (23), (29),
    (34))."""
    r = rnea(rod, q, qd, qdd, level="all")
    return r.dq, r.dqd, r.M


def _id_rest_plain(rod: Rod, q: Float[Array, " n_dof"]) -> Float[Array, " n_dof"]:
    return gravity_at_rest(rod, q, jacobian=False)[0]


def _id_rest_jvp(primals: tuple, tangents: tuple) -> tuple[Float[Array, " n_dof"], Float[Array, " n_dof"]]:
    rod, q = primals
    rest = jvp_of_rest(_id_rest_plain, primals, tangents, analytic=(1,))
    if is_zero(tangents[1]):  # along the rod's parameters only: no derivative pass
        return _id_rest_plain(rod, q), rest
    tau, dq = gravity_at_rest(rod, q)
    return tau, accumulate(tau, [(dq, tangents[1])], rest)


_id_rest = custom_rule("inverse_dynamics_at_rest", _id_rest_plain, _id_rest_jvp)


def inverse_dynamics_at_rest(rod: Rod, q: Float[Array, " n_dof"]) -> Float[Array, " n_dof"]:
    """ID(q, 0, 0), the generalised gravity force with its sign in ID (seed 003 eqs. (13a), (14)–(16)), (n_dof,).

    Equal to ``inverse_dynamics(rod, q, 0, 0)``, for statics: the value and its custom_jvp rule, the (21) Jacobian
    with R = Y = 𝓝 = 0, are the world-frame sums of :func:`jaxse3.rod._gravity.gravity_at_rest` (no velocity or
    acceleration term, no recursion over the joints).
    """
    check_state(rod, q=q)
    return _id_rest(rod, jnp.asarray(q, dtype=jnp.result_type(float, q)))


def mass_matrix(rod: Rod, q: Float[Array, " n_dof"]) -> Float[Array, "n_dof n_dof"]:
    """M(q) = ∂ID/∂q̈ (eq. (34)), symmetric positive definite, (n_dof, n_dof)."""
    z = jnp.zeros_like(jnp.asarray(q, dtype=jnp.result_type(float, q)))
    return rnea(rod, q, z, z, level="mass").M


def _id_plain(
    rod: Rod, q: Float[Array, " n_dof"], qd: Float[Array, " n_dof"], qdd: Float[Array, " n_dof"]
) -> Float[Array, " n_dof"]:
    return rnea(rod, q, qd, qdd).tau


def _id_jvp(primals: tuple, tangents: tuple) -> tuple[Float[Array, " n_dof"], Float[Array, " n_dof"]]:
    rod, q, qd, qdd = primals
    _, dq, dqd, dqdd = tangents
    rest = jvp_of_rest(_id_plain, primals, tangents, analytic=(1, 2, 3))
    if is_zero(dq) and is_zero(dqd) and is_zero(dqdd):  # along the rod's parameters only: no derivative pass
        return _id_plain(rod, q, qd, qdd), rest
    r = rnea(rod, q, qd, qdd, level="all")
    return r.tau, accumulate(r.tau, [(r.dq, dq), (r.dqd, dqd), (r.M, dqdd)], rest)


_id = custom_rule("inverse_dynamics", _id_plain, _id_jvp)


def inverse_dynamics(
    rod: Rod, q: Float[Array, " n_dof"], qd: Float[Array, " n_dof"], qdd: Float[Array, " n_dof"]
) -> Float[Array, " n_dof"]:
    """ID(q, q̇, q̈) = M(q) q̈ − F(q, q̇) (seed 003 eqs. (8), (14)–(16)), with gravity; (n_dof,).

    F holds Coriolis/centrifugal and gravity terms (not the external loads: those are in τ). Carries a custom_jvp
    rule built from :func:`inverse_dynamics_derivatives`.
    """
    check_state(rod, q=q, qd=qd, qdd=qdd)
    f = jnp.result_type(float)
    return _id(rod, *(jnp.asarray(a, dtype=jnp.result_type(f, a)) for a in (q, qd, qdd)))
