"""Joint models: configuration spaces, joint transforms and motion subspaces (seed 002 digest §1.2;
docs/conventions.md).

| type | q (nq) | v (nv) | pose of the child (joint) frame in the joint's parent-side frame |
|---|---|---|---|
| ``revolute`` | angle (1) | rate (1) | exp(ŝ q), s = (a, 0), ‖a‖ = 1 |
| ``prismatic`` | displacement (1) | rate (1) | exp(ŝ q), s = (0, a) |
| ``helical`` | angle (1) | rate (1) | exp(ŝ q), s = (a, h a) (pitch h: translation per radian) |
| ``spherical`` | unit quaternion (w, x, y, z) (4) | body angular velocity ω (3) | (R(quat), 0) |
| ``free`` | position p (3), then unit quaternion (w, x, y, z) (4) | body twist (ω, v) in the child frame (6) |
(R(quat), p) |

The motion subspace S (6 × nv, constant in the child frame, S̊ = 0) is s for 1-DoF joints, ``[I₃; 0]`` for spherical
and ``I₆`` for free joints, so the relative velocity in the child frame is ``S v`` and, for the Lie-group joints, the
configuration moves by the right perturbation ``q ⊕ δ = q·exp(δ̂)``: spherical ``R ← R exp(δ̃)``, free
``H ← H exp(δ̂)`` (exactly Pinocchio's SO(3)/SE(3) free-flyer retraction, up to the ordering of components).

Everything here is unbatched and dispatches on the joint type (a Python string) at trace time.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import DTypeLike
from jaxtyping import Array, ArrayLike, Float

from jaxse3.lie import se3 as _se3, so3 as _so3
from jaxse3.rigid._spatial import skew

JOINT_TYPES = ("revolute", "prismatic", "helical", "spherical", "free")
NQ = {"revolute": 1, "prismatic": 1, "helical": 1, "spherical": 4, "free": 7}
NV = {"revolute": 1, "prismatic": 1, "helical": 1, "spherical": 3, "free": 6}


def quat_to_rotation(quat: Float[ArrayLike, "4"]) -> Float[Array, "3 3"]:
    """Rotation matrix of a unit quaternion (w, x, y, z) (Hamilton convention, active rotation)."""
    w, x, y, z = quat[0], quat[1], quat[2], quat[3]
    return jnp.stack(
        [
            jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)]),
            jnp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)]),
            jnp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]),
        ]
    )


def quat_multiply(q1: Float[Array, "4"], q2: Float[Array, "4"]) -> Float[Array, "4"]:
    """Hamilton product q1 ⊗ q2 of quaternions (w, x, y, z): R(q1 ⊗ q2) = R(q1) R(q2)."""
    w1, v1 = q1[0], q1[1:]
    w2, v2 = q2[0], q2[1:]
    return jnp.concatenate([jnp.stack([w1 * w2 - v1 @ v2]), w1 * v2 + w2 * v1 + jnp.cross(v1, v2)])


def _half_angle_coefficients(t):
    """cos(φ/2) and sin(φ/2)/φ as functions of t = φ², Taylor-switched so that values and derivatives are finite at
    0."""
    small = t < 1e-2
    ts = jnp.where(small, 1.0, t)  # double-where: the closed form is never evaluated (nor differentiated) near 0
    phi = jnp.sqrt(ts)
    u = t / 4.0
    cos_series = 1 - u / 2 + u**2 / 24 - u**3 / 720 + u**4 / 40320 - u**5 / 3628800
    sin_series = 0.5 * (1 - u / 6 + u**2 / 120 - u**3 / 5040 + u**4 / 362880 - u**5 / 39916800)
    return (jnp.where(small, cos_series, jnp.cos(0.5 * phi)), jnp.where(small, sin_series, jnp.sin(0.5 * phi) / phi))


def quat_exp(omega: Float[Array, "3"]) -> Float[Array, "4"]:
    """Unit quaternion (w, x, y, z) of the rotation exp(ω̃): (cos(φ/2), sin(φ/2)/φ · ω) with φ = ‖ω‖."""
    c, s = _half_angle_coefficients(omega @ omega)
    return jnp.concatenate([c[None], s * omega])


def group(jtype: str) -> str:
    """The batching group of a joint type: ``"1dof"`` (revolute/prismatic/helical), ``"spherical"`` or ``"free"``."""
    return "1dof" if NV[jtype] == 1 else jtype


def batched_transform(
    kind: str, axes: Float[Array, "k 6"], qs: Float[Array, "k nq"]
) -> tuple[Float[Array, "k 3 3"], Float[Array, "k 3"]]:
    """(R, p), the pose of the child frame in the joint frame, for k joints of one :func:`group`: axes (k, 6), qs
    (k, nq) → (k, 3, 3), (k, 3). 1-DoF: ``exp(ŝ q)`` = (Rodrigues(a, q), b q) (‖a‖ ∈ {0, 1}, b ∥ a or a = 0);
    spherical: (R(quat), 0); free: (R(quat), p)."""
    if kind == "1dof":
        a, th = axes[:, :3], qs[:, 0]
        K = jax.vmap(skew)(a)
        eye = jnp.eye(3, dtype=axes.dtype)
        R = eye + jnp.sin(th)[:, None, None] * K + (1.0 - jnp.cos(th))[:, None, None] * (K @ K)
        return R, axes[:, 3:] * th[:, None]
    if kind == "spherical":
        return jax.vmap(quat_to_rotation)(qs), jnp.zeros((qs.shape[0], 3), qs.dtype)
    return jax.vmap(quat_to_rotation)(qs[:, 3:]), qs[:, :3]


def motion_subspace(jtype: str, axis: Float[Array, "6"]) -> Float[Array, "nv 6"]:
    """S as an (nv_joint, 6) array: its rows are the motion-subspace columns in the child frame (angular first)."""
    if jtype in ("revolute", "prismatic", "helical"):
        return axis[None, :]
    if jtype == "spherical":
        return jnp.eye(3, 6, dtype=axis.dtype)
    if jtype == "free":
        return jnp.eye(6, dtype=axis.dtype)
    raise ValueError(f"unknown joint type {jtype!r}; expected one of {JOINT_TYPES}")


def apply_subspace(jtype: str, axis: Float[Array, "6"], vi: Float[Array, " nv"]) -> Float[Array, "6"]:
    """S vᵢ: the joint's relative spatial velocity (or acceleration) in the child frame."""
    if jtype in ("revolute", "prismatic", "helical"):
        return axis * vi[0]
    if jtype == "spherical":
        return jnp.concatenate([vi, jnp.zeros(3, dtype=vi.dtype)])
    return vi


def project_subspace(jtype: str, axis: Float[Array, "6"], f: Float[Array, "6"]) -> Float[Array, " nv"]:
    """Sᵀ f: the generalised force of a joint from a wrench in the child frame."""
    if jtype in ("revolute", "prismatic", "helical"):
        return (axis @ f)[None]
    if jtype == "spherical":
        return f[:3]
    return f


def neutral(jtype: str, dtype: DTypeLike = jnp.float64) -> Float[Array, " nq"]:
    """The identity configuration of a joint: 0, quaternion (1, 0, 0, 0), or position 0 with that quaternion."""
    q = jnp.zeros(NQ[jtype], dtype=dtype)
    if jtype == "spherical":
        q = q.at[0].set(1.0)
    if jtype == "free":
        q = q.at[3].set(1.0)
    return q


def integrate(jtype: str, qi: Float[Array, " nq"], dv: Float[Array, " nv"]) -> Float[Array, " nq"]:
    """qᵢ ⊕ δ: vector addition for 1-DoF joints, ``quat ⊗ exp(δ)`` (spherical), ``H exp(δ̂)`` (free)."""
    if jtype in ("revolute", "prismatic", "helical"):
        return qi + dv
    if jtype == "spherical":
        return quat_multiply(qi, quat_exp(dv))
    w, v = dv[:3], dv[3:]
    _, dexp_w = _so3.rodrigues(w)  # translation of exp(δ̂) is dexp_w v (docs/conventions.md)
    p = qi[:3] + quat_to_rotation(qi[3:]) @ (dexp_w @ v)
    return jnp.concatenate([p, quat_multiply(qi[3:], quat_exp(w))])


def difference(jtype: str, q0: Float[Array, " nq"], q1: Float[Array, " nq"]) -> Float[Array, " nv"]:
    """δ with q0 ⊕ δ = q1: ``q1 − q0``, ``log(R0ᵀR1)`` (spherical) or ``log(H0⁻¹H1)`` (free); principal branch."""
    if jtype in ("revolute", "prismatic", "helical"):
        return q1 - q0
    if jtype == "spherical":
        return _so3.log(quat_to_rotation(q0).T @ quat_to_rotation(q1))
    R0, R1 = quat_to_rotation(q0[3:]), quat_to_rotation(q1[3:])
    H = _se3.from_rotation_translation(R0.T @ R1, R0.T @ (q1[:3] - q0[:3]))
    return _se3.log(H)
