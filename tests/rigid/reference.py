"""A plain, independent inverse dynamics for tests (the oracle of jaxse3.rigid.rnea and of its derivatives).

No code is shared with the library except the Model's data. Poses are products of 4×4 matrices (1-DoF joints: screw
motions; Lie-group perturbations: the Taylor series of ``expm``, accurate for tangents of norm ≲ 1); body twists and
accelerations are obtained by differentiating the world poses along the curve ``q ⊕ (t v + t²/2 a)`` (whose body
velocity is v and body acceleration a at t = 0); τ follows from the principle
of virtual power, ``τ = Σ_k J_kᵀ (I_k A_k + V_k ×* I_k V_k − I_k g_k − f_ext,k)``, with the body Jacobians J_k = ∂V_k/∂v
obtained by autodiff.

``rnea(model, q, v, a, f_ext=None, dq=None)``: ``dq`` (nv,) evaluates at ``q ⊕ dq`` (right perturbation: 1-DoF joints
``q + dq``, spherical ``R exp(dq̃)``, free ``H exp(dq̂)``), so ``jax.jacfwd`` in ``dq`` at 0 gives tangent-space
derivatives with respect to q.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def expm(X, terms: int = 18):
    """Matrix exponential by its plain Taylor series (used only for the tangent perturbations, ‖X‖ ≲ 1)."""
    term = jnp.eye(X.shape[0])
    out = term
    for n in range(1, terms):
        term = term @ X / n
        out = out + term
    return out


def screw_matrix(axis, theta):
    """exp(ŝ θ) for a 1-DoF joint axis s = (a, b) with ‖a‖ ∈ {0, 1} and b ∥ a: rotation by θ about a, shift b θ."""
    a, b = axis[:3], axis[3:]
    A = jnp.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    R = jnp.eye(3) + jnp.sin(theta) * A + (1.0 - jnp.cos(theta)) * A @ A
    return jnp.eye(4).at[:3, :3].set(R).at[:3, 3].set(b * theta)


def rigid_inverse(H):
    R, p = H[:3, :3], H[:3, 3]
    return jnp.eye(4).at[:3, :3].set(R.T).at[:3, 3].set(-R.T @ p)


NQ = {"revolute": 1, "prismatic": 1, "helical": 1, "spherical": 4, "free": 7}
NV = {"revolute": 1, "prismatic": 1, "helical": 1, "spherical": 3, "free": 6}


def hat(x):
    """4×4 matrix of a twist (ω, v)."""
    w, v = x[:3], x[3:]
    W = jnp.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    return jnp.zeros((4, 4)).at[:3, :3].set(W).at[:3, 3].set(v)


def vee(X):
    return jnp.array([X[2, 1], X[0, 2], X[1, 0], X[0, 3], X[1, 3], X[2, 3]])


def quat_matrix(quat):
    """Rotation of a unit quaternion (w, x, y, z) via R = (w² − vᵀv) I + 2 v vᵀ + 2 w ṽ."""
    w, u = quat[0], quat[1:]
    U = jnp.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    return (w * w - u @ u) * jnp.eye(3) + 2.0 * jnp.outer(u, u) + 2.0 * w * U


def joint_matrix(jtype, axis, qi, xi):
    """4×4 pose of the child frame in the joint frame, at configuration qi perturbed by the tangent xi."""
    if jtype in ("revolute", "prismatic", "helical"):
        return screw_matrix(axis, qi[0] + xi[0])
    if jtype == "spherical":
        base = jnp.eye(4).at[:3, :3].set(quat_matrix(qi))
        return base @ expm(hat(jnp.concatenate([xi, jnp.zeros(3)])))
    base = jnp.eye(4).at[:3, :3].set(quat_matrix(qi[3:])).at[:3, 3].set(qi[:3])
    return base @ expm(hat(xi))


def world_poses(model, q, xi):
    poses = []
    iq = iv = 0
    for i, jtype in enumerate(model.joint_types):
        local = model.joint_placements[i] @ joint_matrix(
            jtype, model.joint_axes[i], q[iq : iq + NQ[jtype]], xi[iv : iv + NV[jtype]]
        )
        iq, iv = iq + NQ[jtype], iv + NV[jtype]
        par = model.parents[i]
        poses.append(local if par < 0 else poses[par] @ local)
    return jnp.stack(poses)


def body_twists(model, q, w):
    """V_k = vee(H_k⁻¹ Ḣ_k) for the joint velocities w at q (body twists of the Lie joints)."""
    H, Hdot = jax.jvp(lambda x: world_poses(model, q, x), (jnp.zeros_like(w),), (w,))
    return jax.vmap(lambda h, hd: vee(rigid_inverse(h) @ hd))(H, Hdot)


def rnea(model, q, v, a, f_ext=None, dq=None):
    """τ (nv,) at q ⊕ dq: Newton–Euler per body in its own frame + virtual power; see the module docstring."""
    nv = v.shape[0]
    dq = jnp.zeros(nv) if dq is None else dq

    q_at_dq = _integrate(model, q, dq)

    def pose_curve(t):  # q ⊕ dq ⊕ (t v + t²/2 a): body velocity v and body acceleration a at t = 0
        return world_poses(model, q_at_dq, t * v + 0.5 * t * t * a)

    def twists(t):
        H, Hdot = jax.jvp(pose_curve, (t,), (jnp.ones_like(t),))
        return jax.vmap(lambda h, hd: vee(rigid_inverse(h) @ hd))(H, Hdot)

    t0 = jnp.zeros(())
    V, A = jax.jvp(twists, (t0,), (jnp.ones_like(t0),))
    H = pose_curve(t0)
    jac = jax.jacfwd(lambda w: body_twists(model, q_at_dq, w))(v)  # (nb, 6, nv), linear in w
    forces = []
    for k in range(len(model.parents)):
        I = model.inertias[k]
        R = H[k, :3, :3]
        g_body = jnp.concatenate([jnp.zeros(3), R.T @ model.gravity])  # gravity acceleration in body coordinates
        w, u = V[k, :3], V[k, 3:]
        h = I @ V[k]
        coriolis = jnp.concatenate([jnp.cross(w, h[:3]) + jnp.cross(u, h[3:]), jnp.cross(w, h[3:])])
        f = I @ (A[k] - g_body) + coriolis
        if f_ext is not None:
            f = f - f_ext[k]
        forces.append(f)
    return jnp.einsum("kin,ki->n", jac, jnp.stack(forces))


def _integrate(model, q, dq):
    """q ⊕ dq with matrices (quaternions of the perturbed rotations recovered by a plain formula)."""
    out = []
    iq = iv = 0
    for jtype in model.joint_types:
        qi, di = q[iq : iq + NQ[jtype]], dq[iv : iv + NV[jtype]]
        iq, iv = iq + NQ[jtype], iv + NV[jtype]
        if jtype in ("revolute", "prismatic", "helical"):
            out.append(qi + di)
        elif jtype == "spherical":
            out.append(_quat_mul(qi, _quat_exp(di)))
        else:
            E = expm(hat(di))
            out.append(jnp.concatenate([qi[:3] + quat_matrix(qi[3:]) @ E[:3, 3], _quat_mul(qi[3:], _quat_exp(di[:3]))]))
    return jnp.concatenate(out)


def _quat_mul(a, b):
    return jnp.concatenate(
        [jnp.array([a[0] * b[0] - a[1:] @ b[1:]]), a[0] * b[1:] + b[0] * a[1:] + jnp.cross(a[1:], b[1:])]
    )


def _quat_exp(w):
    """(cos(φ/2), sin(φ/2) w/φ) via the power series of cos and sinc in φ²/4 (fine for φ < 2, exact enough for
    tests)."""
    u = (w @ w) / 4.0
    c = s = 0.0
    term_c, term_s = 1.0, 0.5
    for n in range(12):
        c, s = c + term_c, s + term_s
        term_c = -term_c * u / ((2 * n + 1) * (2 * n + 2))
        term_s = -term_s * u / ((2 * n + 2) * (2 * n + 3))
    return jnp.concatenate([jnp.array([c]), s * w])
