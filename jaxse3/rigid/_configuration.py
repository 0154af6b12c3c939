"""Configuration-space operations on the joint groups: ⊕ (integrate), ⊖ (difference), neutral and random q.

The Lie-group joints use the right perturbation ``q ⊕ δ = q·exp(δ̂)`` (docs/conventions.md; seed 002 digest §3.1), so
``integrate(model, q, v, dt)`` moves spherical/free joints along the body angular velocity / body twist ``v``, and
derivatives "with respect to q" of any function f are ``∂/∂δ f(q ⊕ δ)`` at δ = 0. Unbatched: ``vmap`` for batches.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array

from jaxse3.rigid import joints as _joints
from jaxse3.rigid.model import Model, check_vector

__all__ = ["integrate", "difference", "neutral_configuration", "random_configuration"]


def integrate(model: Model, q: Array, v: Array, dt: float | Array = 1.0) -> Array:
    """q ⊕ (v dt), joint by joint (exact exponential for spherical and free joints). Returns (nq,)."""
    q = check_vector("integrate", model, "q", q, "nq")
    v = check_vector("integrate", model, "v", v, "nv")
    dv = v * dt
    return jnp.concatenate([_joints.integrate(t, q[model.q_slice(i)], dv[model.v_slice(i)])
                            for i, t in enumerate(model.joint_types)])  # fmt: skip


def difference(model: Model, q0: Array, q1: Array) -> Array:
    """v with ``integrate(model, q0, v, 1) == q1`` (principal logarithm for spherical/free joints). Returns (nv,)."""
    q0 = check_vector("difference", model, "q0", q0, "nq")
    q1 = check_vector("difference", model, "q1", q1, "nq")
    return jnp.concatenate([_joints.difference(t, q0[model.q_slice(i)], q1[model.q_slice(i)])
                            for i, t in enumerate(model.joint_types)])  # fmt: skip


def neutral_configuration(model: Model) -> Array:
    """The identity configuration: zero joint values and identity quaternions (w = 1)."""
    dtype = model.inertias.dtype
    return jnp.concatenate([_joints.neutral(t, dtype) for t in model.joint_types])


def random_configuration(model: Model, key: Array, scale: float = 1.0) -> Array:
    """A random configuration: ``neutral ⊕ δ`` with δ ~ N(0, scale²) for each joint (uniform-ish rotations for scale ≳ 2)."""
    delta = scale * jax.random.normal(key, (model.nv,), dtype=model.inertias.dtype)
    return integrate(model, neutral_configuration(model), delta)
