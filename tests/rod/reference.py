"""Plain, independent implementations used as oracles by the rod tests.

Nothing here uses :mod:`jaxse3.lie` or the RNEA: poses come from a plain Taylor exponential of the 4×4 hat matrix,
body Jacobians from autodiff of the forward kinematics (δg = g (J δq)^), J̇ from a time-jvp, and the dynamics from the
Kane/Jacobian assembly ``M = Σ J_kᵀ𝓜_kJ_k``, ``F = −Σ J_kᵀ(𝓜_k J̇_k q̇ + ad*_{η_k}𝓜_kη_k) + Σ J_kᵀ𝓜_k Ad⁻¹_{g_k}𝓖``
(digest 003 §7.6). Loads and tendons are written from their physical definitions. The only shared inputs are the
rod's arrays (Φ at the points, weights, inertias), which the basis/geometry tests check separately.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp


def skew(x):
    return jnp.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def hat(X):
    return jnp.zeros((4, 4), X.dtype).at[:3, :3].set(skew(X[:3])).at[:3, 3].set(X[3:])


def vee(H):
    return jnp.array([H[2, 1], H[0, 2], H[1, 0], H[0, 3], H[1, 3], H[2, 3]])


def ad(X):
    z = jnp.zeros((3, 3), X.dtype)
    return jnp.block([[skew(X[:3]), z], [skew(X[3:]), skew(X[:3])]])


def Ad_inv(g):
    R, r = g[:3, :3], g[:3, 3]
    return jnp.block([[R.T, jnp.zeros((3, 3))], [-R.T @ skew(r), R.T]])


def expm4(A, squarings=2, terms=12):
    """exp of a 4×4 matrix by a fixed scaled-and-squared Taylor polynomial (plain, cheap to differentiate).

    Accurate to float64 round-off for the joint twists of the test rods (‖Ω‖ ≲ 1: remainder ≤ (1/4)^13/13! ≈ 2e-18
    after scaling by 2⁻²).
    """
    B = A / 2.0**squarings
    out, term = jnp.eye(4, dtype=A.dtype), jnp.eye(4, dtype=A.dtype)
    for k in range(1, terms + 1):
        term = term @ B / k
        out = out + term
    for _ in range(squarings):
        out = out @ out
    return out


def omega(rod, q, j):
    """Ω of interval j from the Zanna formula (C1) or the midpoint rule, written out."""
    xi = rod.Phi_c[j] @ q + rod.xi_star_c[j]
    h = rod.h[j]
    if rod.magnus_order == 2:
        return h * xi[0]
    return h / 2 * (xi[0] + xi[1]) + math.sqrt(3) * h**2 / 12 * (ad(xi[0]) @ xi[1])


def poses(rod, q):
    """(n_p, 4, 4) poses by :func:`expm4`."""
    gs = [rod.base_pose]
    for j in range(rod.n_points - 1):
        gs.append(gs[-1] @ expm4(hat(omega(rod, q, j))))
    return jnp.stack(gs)


def jacobians(rod, q):
    """Body Jacobians by autodiff of :func:`poses`: J_k[:, i] = vee(g_k⁻¹ ∂g_k/∂q_i)."""
    g = poses(rod, q)
    dg = jax.jacfwd(poses, argnums=1)(rod, q)  # (n_p, 4, 4, n)
    ginv = jnp.linalg.inv(g)
    return jax.vmap(lambda gi, d: jax.vmap(lambda col: vee(gi @ col), in_axes=-1, out_axes=-1)(d))(ginv, dg)


def twists_and_bias(rod, q, qd):
    """η_k = J_k q̇ and J̇_k q̇ = d/dt (J_k(q + t q̇)) q̇ (by jvp in time)."""
    J, Jd = jax.jvp(lambda qq: jacobians(rod, qq), (q,), (qd,))
    return J, jnp.einsum("kin,n->ki", J, qd), jnp.einsum("kin,n->ki", Jd, qd)


def kane(rod, q, qd):
    """(M, F) of the Kane/Jacobian assembly (eq. (4): M q̈ = τ + F)."""
    g = poses(rod, q)
    J, eta, Jdqd = twists_and_bias(rod, q, qd)
    grav = jnp.concatenate([jnp.zeros(3), rod.gravity])
    Mk = jax.vmap(jnp.diag)(rod.inertia)  # the model stores the diagonals of 𝓜_k
    M = jnp.einsum("kin,kij,kjm->nm", J, Mk, J)
    adstar = lambda e: -ad(e).T
    bias = jnp.stack(
        [Mk[k] @ Jdqd[k] + adstar(eta[k]) @ Mk[k] @ eta[k] - Mk[k] @ Ad_inv(g[k]) @ grav for k in range(rod.n_points)]
    )
    return M, -jnp.einsum("kin,ki->n", J, bias)


def inverse_dynamics(rod, q, qd, qdd):
    M, F = kane(rod, q, qd)
    return M @ qdd - F


def actuation(rod, q, u):
    """B(q) u = −Σ_k w_k Φ_kᵀ Σ_j [d_j × t_j; t_j] u_j with t = 𝒯/‖𝒯‖, 𝒯 = k × d + p + d′ (tension ≥ 0 pulls)."""
    out = jnp.zeros(rod.n_dof)
    for k in range(rod.n_points):
        xi = rod.Phi[k] @ q + rod.xi_star[k]
        for j in range(rod.n_tendons):
            d = rod.tendon_d[j, k]
            T = jnp.cross(xi[:3], d) + xi[3:] + rod.tendon_dd[j, k]
            t = T / jnp.linalg.norm(T)
            out = out - rod.weights[k] * rod.Phi[k].T @ jnp.concatenate([jnp.cross(d, t), t]) * u[j]
    return out


def contact_force(r, rk, rc, kc, p):
    """Physical world force of the cylinder wall on a sphere at r: inward, magnitude k_c δ^p."""
    n = jnp.array([r[0], r[1], 0.0])
    nn = jnp.linalg.norm(n)
    delta = nn + rk - rc
    return jnp.where(delta > 0, -kc * jnp.maximum(delta, 0.0) ** p * n / nn, 0.0)


def load_wrenches(rod, q, local=None, world=None, contact=None):
    """Physical wrenches in the local frames: local + blockdiag(Rᵀ, Rᵀ)(world + contact)."""
    g = poses(rod, q)
    out = []
    for k in range(rod.n_points):
        Rt = g[k, :3, :3].T
        W = jnp.zeros(6) if world is None else world[k]
        if contact is not None:
            rc, kc, p = contact
            W = W + jnp.concatenate([jnp.zeros(3), contact_force(g[k, :3, 3], rod.contact_radius[k], rc, kc, p)])
        F = jnp.concatenate([Rt @ W[:3], Rt @ W[3:]])
        if local is not None:
            F = F + local[k]
        out.append(F)
    return jnp.stack(out)


def generalized_forces(rod, q, qd, u=None, local=None, world=None, contact=None):
    tau = -rod.stiffness @ q - rod.damping @ qd
    if u is not None:
        tau = tau + actuation(rod, q, u)
    if local is not None or world is not None or contact is not None:
        tau = tau + jnp.einsum("kin,ki->n", jacobians(rod, q), load_wrenches(rod, q, local, world, contact))
    return tau


def forward_dynamics(rod, q, qd, u=None, **loads):
    M, F = kane(rod, q, qd)
    return jnp.linalg.solve(M, generalized_forces(rod, q, qd, u, **loads) + F)


def central_difference(f, x, eps=1e-6):
    """Central-difference Jacobian of f at x (columns = inputs), vectorised over the columns."""
    cols = jax.vmap(lambda e: (f(x + eps * e) - f(x - eps * e)) / (2 * eps))(jnp.eye(x.shape[0], dtype=x.dtype))
    return jnp.moveaxis(cols, 0, -1)


def integrate_pose(strain, length, base=None, rtol=1e-13):
    """Tip pose of g′ = g ξ̂(X) by a high-accuracy DOP853 integration (numpy/scipy)."""
    base = np.eye(4) if base is None else np.asarray(base)

    def sk(x):
        return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])

    def rhs(X, y):
        R = y[:9].reshape(3, 3)
        xi = np.asarray(strain(X))
        return np.concatenate([(R @ sk(xi[:3])).ravel(), R @ xi[3:]])

    y0 = np.concatenate([base[:3, :3].ravel(), base[:3, 3]])
    sol = solve_ivp(rhs, (0.0, float(length)), y0, method="DOP853", rtol=rtol, atol=1e-15)
    y = sol.y[:, -1]
    g = np.eye(4)
    g[:3, :3], g[:3, 3] = y[:9].reshape(3, 3), y[9:]
    return g
