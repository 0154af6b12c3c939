"""Spatial-vector algebra, angular part first (Featherstone; GUIDE §2; seed 002 digest §1.1).

For the pose ``H = (R, p)`` of a child frame in its parent frame, ``Ad_{H⁻¹}`` maps motion vectors from parent to
child coordinates and ``Ad_{H⁻¹}ᵀ`` maps wrenches from child to parent coordinates. The vector functions work on
(..., 6) arrays (the last axis holds the spatial vector, so a (k, 6) array is k vectors) and are written with 3×3
blocks, which is cheaper than 6×6 products.
"""

from __future__ import annotations

import jax.numpy as jnp


def skew(x):
    """x̃ (3×3) with x̃ y = x × y."""
    z = jnp.zeros((), x.dtype)
    return jnp.stack([jnp.stack([z, -x[2], x[1]]), jnp.stack([x[2], z, -x[0]]), jnp.stack([-x[1], x[0], z])])


def inverse_adjoint(R, p):
    """ⁱX_λ = Ad_{H⁻¹} = [[Rᵀ, 0], [−Rᵀp̃, Rᵀ]] for the child pose H = (R, p): parent → child motion coordinates."""
    Rt = R.T
    return jnp.block([[Rt, jnp.zeros_like(Rt)], [-Rt @ skew(p), Rt]])


def _rot(R, x):
    return jnp.einsum("...ij,...j->...i", R, x)


def cross_motion(v, m):
    """v × m = (ω × m_ω, ω × m_v + v_lin × m_ω) on trailing axes."""
    w, u, mw, mu = v[..., :3], v[..., 3:], m[..., :3], m[..., 3:]
    return jnp.concatenate([jnp.cross(w, mw), jnp.cross(w, mu) + jnp.cross(u, mw)], axis=-1)


def cross_force(v, f):
    """v ×* f = (ω × n + v_lin × f_lin, ω × f_lin) on trailing axes."""
    w, u, n, fl = v[..., :3], v[..., 3:], f[..., :3], f[..., 3:]
    return jnp.concatenate([jnp.cross(w, n) + jnp.cross(u, fl), jnp.cross(w, fl)], axis=-1)


def motion_to_child(R, p, m):
    """Ad_{H⁻¹} m: a motion vector in parent coordinates expressed in the child frame H = (R, p)."""
    w, u = m[..., :3], m[..., 3:]
    Rt = jnp.swapaxes(R, -1, -2)
    return jnp.concatenate([_rot(Rt, w), _rot(Rt, u - jnp.cross(p, w))], axis=-1)


def motion_to_parent(R, p, m):
    """Ad_H m: a motion vector in child coordinates expressed in the parent frame."""
    Rw = _rot(R, m[..., :3])
    return jnp.concatenate([Rw, _rot(R, m[..., 3:]) + jnp.cross(p, Rw)], axis=-1)


def force_to_parent(R, p, f):
    """Ad_{H⁻¹}ᵀ f: a wrench (moment, force) in child coordinates expressed in the parent frame."""
    Rf = _rot(R, f[..., 3:])
    return jnp.concatenate([_rot(R, f[..., :3]) + jnp.cross(p, Rf), Rf], axis=-1)


def inertia_transform_to_parent(R, p, inertia):
    """Ad_{H⁻¹}ᵀ I Ad_{H⁻¹}: a spatial inertia given in the child frame, expressed in the parent frame (unbatched)."""
    X = inverse_adjoint(R, p)
    return X.T @ inertia @ X
