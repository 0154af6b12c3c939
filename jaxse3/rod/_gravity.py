"""The generalised gravity force of a rod at rest, ID(q, 0, 0), and its Jacobian, by sums in the world frame.

At rest (q̇ = q̈ = 0) the point wrenches of (16) are the weights alone, and the composite wrench of joint α (22c), the
weight of every point k > α expressed at point α, has a closed form. With g_k = (R_k, p_k) and the points' masses m_k
(the isotropic translational entries of 𝓜_k), the weights' world wrench about point α is ((c_α × a), M_α a), with
M_α = Σ_{k>α} m_k and the first mass moment c_α = Σ_{k>α} m_k (p_k − p_α), so (wrenches (moment, force); the minus sign
of 𝓕_k = −𝓜_k Ad⁻¹_{g_k}𝓖 in (16))

    𝓕^C_α = −(R_αᵀ(c_α × a), M_α R_αᵀ a),        ID = Σ_α S_αᵀ 𝓕^C_α                                       (14)

and the Jacobian of (21) at rest follows from δR_α = R_α[J^ω_α δq]×, δc_α = Σ_{k>α} m_k δp_k − M_α δp_α:

    ∂𝓕^C_α/∂q = −([R_αᵀ(c_α × a)]× J^ω_α − R_αᵀ[a]×(D_α − M_α V_α),  M_α [R_αᵀ a]× J^ω_α),
    ∂ID/∂q = Σ_α ∂(S_αᵀ𝓕)/∂q|_{𝓕^C_α} (C29) + S_αᵀ ∂𝓕^C_α/∂q,

where V_k = ∂p_k/∂q is the world Jacobian of point k's position (the linear rows of the spatial Jacobian Σ_{β<k}
Ad_{g_β} S_β taken at p_k), J^ω_α = R_αᵀ Σ_{β<α} R_β S^ω_β the body angular Jacobian and D_α = Σ_{k>α} m_k V_k. Every
sum over joints or points is a cumulative sum: no recursion over the joints is left but the poses' (none on the plane,
where rotations commute; one step per run of constant strain otherwise), so the rest residual of statics costs a few
fused array operations instead of two passes over the joints. A planar rod on runs of constant strain (a
PiecewiseConstantBasis) goes further: ID at rest is the gradient of its points' potential, which has a closed form
over the runs (:func:`_planar_runs`), and the Jacobian its Hessian, written out in the 3 strains of each run. On the
two-segment rod of ``benchmarks/rod_peers.py`` value and Jacobian took 16.7 µs by the sums, 8.8 µs in closed form
(one core, 2026-12-02), and 1.5 µs once the basis's selection is gathered instead of multiplied (2026-12-05). The
recursions of :func:`jaxse3.rod.rnea` at rest are the oracle in the tests.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxse3 import se3, so3
from jaxse3.lie import se2
from jaxse3.rod.kinematics import UNROLLED_STEPS, _run_scales, _twist_rates, joint_force_jacobian_sum
from jaxse3.rod.model import Rod

__all__ = ["gravity_at_rest"]

_PLANE = jnp.asarray(se2.PLANE)


class _Space:
    """The vector algebra of the sums in space: angular and linear vectors are 3-vectors, columns (..., 3, n)."""

    cross = staticmethod(jnp.cross)  # u × v of linear vectors: an angular vector

    @staticmethod
    def cross_columns(U: Array, v: Array) -> Array:
        """U × v column by column (linear columns U, a linear vector v): angular columns."""
        return jnp.cross(U, v[:, None], axis=-2)

    @staticmethod
    def linear_cross(u: Array, W: Array) -> Array:
        """u × W column by column (a linear vector u, angular columns W): linear columns."""
        return so3.hat(u) @ W

    @staticmethod
    def angular_cross(y: Array, W: Array) -> Array:
        """y × W column by column (an angular vector y, angular columns W): angular columns."""
        return so3.hat(y) @ W

    @staticmethod
    def rotate_angular(R: Array, x: Array) -> Array:
        return _rotate(R, x)


class _Plane:
    """The same algebra in the plane: angular vectors about z are (..., 1), linear vectors (..., 2)."""

    @staticmethod
    def cross(u: Array, v: Array) -> Array:
        return (u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0])[..., None]

    @staticmethod
    def cross_columns(U: Array, v: Array) -> Array:
        return (U[..., 0, :] * v[1] - U[..., 1, :] * v[0])[..., None, :]

    @staticmethod
    def linear_cross(u: Array, W: Array) -> Array:
        return jnp.stack([u[..., 1], -u[..., 0]], axis=-1)[..., :, None] * W  # u × (w e_z) = w (u_y, −u_x)

    @staticmethod
    def angular_cross(y: Array, W: Array) -> Array:
        return jnp.zeros_like(W)  # rotations about one axis commute

    @staticmethod
    def rotate_angular(R: Array, x: Array) -> Array:
        return x  # a rotation about z keeps z


def _rotate(R: Array, x: Array) -> Array:
    """R x for linear vectors (..., d) or columns (..., d, n)."""
    return R @ x if x.ndim == R.ndim else jnp.einsum("...ij,...j->...i", R, x)


def _after(x: Array) -> Array:
    """Σ_{k>α} x_k for every joint α = 0 … n_p − 2, from the points' x_k (k = 1 … n_p − 1)."""
    return jnp.cumsum(x[::-1], axis=0)[::-1]


def _before(x: Array) -> Array:
    """Σ_{β<k} x_β for every point k = 0 … n_p − 1, from the joints' x_β (β = 0 … n_p − 2)."""
    return jnp.concatenate([jnp.zeros_like(x[:1]), jnp.cumsum(x, axis=0)])


def _planar_poses(Om: Float[Array, "n_j 3"]) -> tuple[Float[Array, "n_p 2 2"], Float[Array, "n_p 2"]]:
    """Rotations and positions of every point of a planar rod in its base frame: on the plane rotations commute, so
    θ_k = Σ_{β<k} ω_β and p_k = Σ_{β<k} R(θ_β) t_β with t_β the translation of exp(Ω̂_β) — cumulative sums, no
    recursion."""
    t = se2.exp(Om)[:, :2, 2]
    th = jnp.concatenate([jnp.zeros(1, Om.dtype), jnp.cumsum(Om[:, 0])])
    c, s = jnp.cos(th), jnp.sin(th)
    R = jnp.stack([jnp.stack([c, -s], -1), jnp.stack([s, c], -1)], -2)
    p = jnp.concatenate([jnp.zeros((1, 2), Om.dtype), jnp.cumsum(jnp.einsum("kij,kj->ki", R[:-1], t), axis=0)])
    return R, p


def _spatial_poses(rod: Rod, q: Float[Array, " n_dof"], Om: Float[Array, "n_j 6"]) -> Float[Array, "n_p 4 4"]:
    """Poses of every point in the world: on runs of constant strain ξ each point follows from its run's first point,
    g = g_anchor exp(s ξ̂) side by side, and only the anchors are chained (one step per run); otherwise the chain
    g_{α+1} = g_α exp(Ω̂_α)."""
    m = rod.strain_run
    base = rod.base_pose.astype(q.dtype)
    if m > 1:
        xi = rod.Phi_c[::m, 0] @ q + rod.xi_star_c[::m, 0]  # (n_runs, 6)
        steps = se3.exp(_run_scales(rod)[..., None] * xi[:, None, :])  # (n_runs, m, 4, 4): anchor → its points
    else:
        steps = se3.exp(Om)[:, None]  # (n_j, 1, 4, 4)

    def run(anchor, E):
        pts = anchor @ E
        return pts[-1], pts

    _, g = jax.lax.scan(run, base, steps, unroll=steps.shape[0] <= UNROLLED_STEPS)
    return jnp.concatenate([base[None], g.reshape((-1, 4, 4))])


#: ψ_j(x) by its Taylor series below this |x| (16 terms: truncation below 1e−17), by the recurrence above it (its
#: round-off, ~2ε/x², is below 1e−14 there)
_PSI_SERIES = 0.5
_PSI_TERMS = 16
#: the series' real and imaginary parts as polynomials in x²: Re ψ_j = Σ_k c_{2k} x^{2k}, Im ψ_j = x Σ_k c_{2k+1} x^{2k}
#: with c_n = (−1)^{⌊n/2⌋} / (n! (n + j + 1)), since (ix)ⁿ is (−1)^{⌊n/2⌋} xⁿ, times i for odd n
_PSI_COEFFICIENTS = [
    [(-1) ** (n // 2) / (math.factorial(n) * (n + j + 1)) for n in range(_PSI_TERMS)] for j in range(3)
]


def _psi(x: Array) -> tuple[Array, Array, Array]:
    """ψ_j(x) = ∫₀¹ tʲ e^{ixt} dt for j = 0, 1, 2 (complex): ψ₀ = (e^{ix} − 1)/(ix), ψ_j = (e^{ix} − j ψ_{j−1})/(ix),
    and Σ_n (ix)ⁿ/(n! (n + j + 1)) near x = 0, where the recurrence cancels. Evaluated in real arithmetic (cos x,
    sin x; the series' even and odd terms as polynomials in x²): complex Horner steps and divisions cost several
    times more."""
    small = jnp.abs(x) < _PSI_SERIES
    xs = jnp.where(small, x, 0.0)
    u = xs * xs
    series = []
    for c in _PSI_COEFFICIENTS:
        re, im = jnp.zeros_like(u), jnp.zeros_like(u)
        for k in reversed(range(_PSI_TERMS // 2)):
            re, im = re * u + c[2 * k], im * u + c[2 * k + 1]
        series.append((re, xs * im))
    xl = jnp.where(small, 1.0, x)
    cos, sin = jnp.cos(xl), jnp.sin(xl)
    r0, i0 = sin / xl, (1.0 - cos) / xl  # (e^{ix} − 1)/(ix)
    r1, i1 = (sin - i0) / xl, (r0 - cos) / xl  # (e^{ix} − ψ₀)/(ix)
    r2, i2 = (sin - 2.0 * i1) / xl, (2.0 * r1 - cos) / xl  # (e^{ix} − 2ψ₁)/(ix)
    return tuple(
        jax.lax.complex(jnp.where(small, sr, r), jnp.where(small, si, i))
        for (sr, si), (r, i) in zip(series, ((r0, i0), (r1, i1), (r2, i2)))
    )


def _run_rows(rod: Rod) -> np.ndarray:
    """Where each coordinate enters the closed form over the runs: (k, n) row indices into ∂U/∂(κ, σ_x, σ_y) — slot
    s ∈ {κ, σ_x, σ_y} of run r at row s·n_runs + r — for the k runs of the basis segment that carries coordinate j.
    On runs Φ is a PiecewiseConstantBasis's selection (one 1 per coordinate and run of its segment), so Φq is a
    scatter and Φᵀ∇U, Φᵀ∇²UΦ are gathers and sums, not products of (3 n_runs, n) matrices (fused into the Hessian's
    elements, such a product evaluates each element once per term of the contraction)."""
    basis = rod.basis
    n_runs = (rod.n_points - 1) // rod.strain_run
    k = n_runs // basis.n_segments
    rows = np.empty((k, basis.n_dof), dtype=np.int32)
    for j in range(basis.n_dof):
        segment, c = divmod(j, len(basis.components))
        slot = se2.PLANE.index(basis.components[c])
        rows[:, j] = slot * n_runs + segment * k + np.arange(k)
    return rows


def _planar_runs(
    rod: Rod, q: Float[Array, " n_dof"], a: Float[Array, "2"], jacobian: bool
) -> tuple[Float[Array, " n_dof"], Float[Array, "n_dof n_dof"] | None]:
    """:func:`gravity_at_rest` of a planar rod on runs of constant strain, as the gradient and Hessian of the points'
    potential written in closed form over the runs (no sum over joints, no S_α).

    In the base frame's plane as complex numbers, run r has the strain (κ_r, σ_r = σ_x + iσ_y), its anchor p_r
    turned by θ_r = Σ_{r'<r} L_r' κ_r' (L_r its length), and a point at offset s from the anchor lies at
    p_r + e^{iθ_r} f(s, κ_r) σ_r with f(s, κ) = ∫₀ˢ e^{iuκ} du. Gathering each run's points and the runs after it
    (whose anchors it moves),

        U = −Re(ā Σ_r w_r),   w_r = e^{iθ_r} G_r(κ_r) σ_r,   G_r = Σ_{k∈r} m_k f(s_k, ·) + M_{>r} f(L_r, ·),

    with ā = a_x − i a_y and M_{>r} the mass of the later runs; ID(q, 0, 0) = ∂U/∂q and its Jacobian ∂²U/∂q², by the
    chain rule through ξ = Φq + ξ*. In ξ: ∂w_r/∂σ_r is linear, ∂w_r/∂κ_r' = iL_r' w_r (r' < r), and ∂/∂κ_r takes
    f′ = i s² ψ₁(sκ) and f″ = −s³ ψ₂(sκ) (f = s ψ₀(sκ), :func:`_psi`)."""
    m, rows = rod.strain_run, _run_rows(rod)
    n_runs = (rod.n_points - 1) // m
    Phi_q = jnp.zeros(3 * n_runs, q.dtype).at[rows].set(jnp.broadcast_to(q, rows.shape))  # Φq, slot by slot
    xi = Phi_q.reshape(3, n_runs).T + rod.xi_star_c[::m, 0][:, _PLANE].astype(q.dtype)  # (R, 3): κ, σ_x, σ_y
    kappa, sigma = xi[:, 0], xi[:, 1] + 1j * xi[:, 2]
    s = _run_scales(rod).astype(q.dtype)  # (R, m): each point's offset from its run's anchor
    L = s[:, -1]
    mass = rod.inertia[1:, 3].astype(q.dtype).reshape(s.shape)
    M = jnp.sum(mass, axis=1)
    later = _after(M) - M  # the mass of the runs after r
    p0, p1, p2 = _psi(s * kappa[:, None])
    e0, e1, e2 = _psi(L * kappa)
    G0 = jnp.sum(mass * s * p0, axis=1) + later * L * e0  # G, G′, G″
    G1 = 1j * (jnp.sum(mass * s**2 * p1, axis=1) + later * L**2 * e1)
    G2 = -(jnp.sum(mass * s**3 * p2, axis=1) + later * L**3 * e2)
    turn = jnp.exp(1j * jnp.concatenate([jnp.zeros(1, q.dtype), jnp.cumsum(L * kappa)[:-1]]))
    E0, E1, E2 = turn * G0, turn * G1, turn * G2
    w = E0 * sigma
    W = _after(w) - w  # Σ_{r''>r} w_r''
    ab = a[0] - 1j * a[1]
    re = lambda z: jnp.real(ab * z)
    grad = jnp.concatenate([-re(E1 * sigma) - L * re(1j * W), -re(E0), -re(1j * E0)])  # ∂U/∂(κ, σ_x, σ_y)
    tau = jnp.sum(grad[rows], axis=0)  # Φᵀ∇U
    if not jacobian:
        return tau, None
    earlier = jnp.tril(jnp.ones((n_runs, n_runs), q.dtype), -1)  # [r, r'] = 1 where r' < r
    Lb = L[None, :]  # L_r' along the columns
    k_sx = jnp.diag(-re(E1)) - earlier * re(1j * Lb * E0[:, None])  # ∂²U/∂σ_x,r ∂κ_r'
    k_sy = jnp.diag(-re(1j * E1)) + earlier * re(Lb * E0[:, None])
    k_k = earlier * (L[:, None] * Lb * re(W)[:, None] - Lb * re(1j * E1 * sigma)[:, None])
    k_k = jnp.diag(L**2 * re(W) - re(E2 * sigma)) + k_k + k_k.T
    zero = jnp.zeros((n_runs, n_runs), q.dtype)
    H = jnp.block([[k_k, k_sx.T, k_sy.T], [k_sx, zero, zero], [k_sy, zero, zero]])
    return tau, jnp.sum(H[rows[:, None, :, None], rows[None, :, None, :]], axis=(0, 1))  # Φᵀ∇²UΦ


def gravity_at_rest(
    rod: Rod, q: Float[Array, " n_dof"], jacobian: bool = True
) -> tuple[Float[Array, " n_dof"], Float[Array, "n_dof n_dof"] | None]:
    """(ID(q, 0, 0), ∂ID(q, 0, 0)/∂q or None): the generalised gravity force of the rod at rest with its sign in ID
    (seed 003 eqs. (14), (16) at rest) and the Jacobian (21) at rest, by the world-frame sums of the module
    docstring. A planar rod (``rod.planar``) runs them in the plane of its base frame: joints on SE(2), angular
    vectors about z; on runs of constant strain, in closed form over the runs (:func:`_planar_runs`)."""
    dtype = q.dtype
    a = rod.gravity.astype(dtype)
    z = jnp.zeros_like(q)
    if rod.planar:
        a = (rod.base_pose[:3, :3].astype(dtype).T @ a)[:2]  # in the plane of the base frame
        if rod.strain_run > 1:
            return _planar_runs(rod, q, a, jacobian)
        alg, lie, k = _Plane, se2, 1  # k: the angular rows of a twist
        Om, _, _, Z = _twist_rates(rod, q, z, z, False, se2.PLANE)  # (n_j, 3), (n_j, 3, n)
        R, p = _planar_poses(Om)
        Phi_c = rod.Phi_c[..., _PLANE, :]
    else:
        alg, lie, k = _Space, se3, 3
        Om, _, _, Z = _twist_rates(rod, q, z, z, False)
        g = _spatial_poses(rod, q, Om)
        R, p = g[:, :3, :3], g[:, :3, 3]
        Phi_c = rod.Phi_c
    Ra, RaT, pa = R[:-1], jnp.swapaxes(R[:-1], -1, -2), p[:-1]  # each joint's start point α
    m = rod.inertia[1:, 3].astype(dtype)  # the points k > 0 (the base carries no joint)
    M = _after(m)
    c = _after(m[:, None] * p[1:]) - M[:, None] * pa
    y1 = alg.rotate_angular(RaT, alg.cross(c, a))  # R_αᵀ(c_α × a)
    y2 = _rotate(RaT, a)  # R_αᵀ a
    FC = -jnp.concatenate([y1, M[:, None] * y2], axis=-1)  # 𝓕^C_α (22c) at rest
    if not jacobian:  # (14) without forming S_α: S_αᵀ𝓕^C_α = 𝓩_αᵀ(T_αᵀ𝓕^C_α)
        return jnp.einsum("kin,ki->n", Z, lie.dexpT_apply(Om, FC)), None
    S = lie.dexp(Om) @ Z  # (C15)
    tau = jnp.einsum("kin,ki->n", S, FC)  # (14)
    n = q.shape[0]
    Wj = alg.rotate_angular(Ra, S[:, :k])  # each joint's world angular columns
    W = _before(Wj)  # the spatial Jacobian at every point: angular columns,
    U = _before(_rotate(Ra, S[:, k:]) + alg.linear_cross(pa, Wj))  # linear columns at the world origin
    V = U - alg.linear_cross(p, W)  # ∂p_k/∂q
    Jw = alg.rotate_angular(RaT, W[:-1])  # body angular Jacobian at α
    dc = _after(m[:, None, None] * V[1:]) - M[:, None, None] * V[:-1]  # ∂c_α/∂q
    dang = alg.angular_cross(y1, Jw) + alg.rotate_angular(RaT, alg.cross_columns(dc, a))
    dFC = -jnp.concatenate([dang, M[:, None, None] * alg.linear_cross(y2, Jw)], axis=-2)
    C29 = joint_force_jacobian_sum(Om, Z, FC, Phi_c, rod.h, rod.expansion_order)
    return tau, C29 + S.reshape(-1, n).T @ dFC.reshape(-1, n)  # (21) at rest
