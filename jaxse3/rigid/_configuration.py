"""Configuration-space operations on the joint groups: ⊕ (integrate), ⊖ (difference), neutral and random q, and the
map :func:`tangent_of` of ambient tangents dq to tangent coordinates δ (used by the ``custom_jvp`` rules).

The Lie-group joints use the right perturbation ``q ⊕ δ = q·exp(δ̂)`` (docs/conventions.md; seed 002 digest §3.1), so
``integrate(model, q, v, dt)`` moves spherical/free joints along the body angular velocity / body twist ``v``, and
derivatives "with respect to q" of any function f are ``∂/∂δ f(q ⊕ δ)`` at δ = 0. Unbatched: ``vmap`` for batches.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from jaxse3.rigid import joints as _joints
from jaxse3.rigid._model import Model, check_vector

__all__ = ["integrate", "difference", "neutral_configuration", "random_configuration", "tangent_of"]


def integrate(
    model: Model, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"], dt: Float[ArrayLike, ""] = 1.0
) -> Float[Array, " nq"]:
    """q ⊕ (v dt), joint by joint (exact exponential for spherical and free joints). Returns (nq,)."""
    q = check_vector("integrate", model, "q", q, "nq")
    v = check_vector("integrate", model, "v", v, "nv")
    dv = v * dt
    return jnp.concatenate(
        [_joints.integrate(t, q[model.q_slice(i)], dv[model.v_slice(i)]) for i, t in enumerate(model.joint_types)]
    )


def difference(model: Model, q0: Float[ArrayLike, " nq"], q1: Float[ArrayLike, " nq"]) -> Float[Array, " nv"]:
    """v with ``integrate(model, q0, v, 1) == q1`` (principal logarithm for spherical/free joints). Returns (nv,)."""
    q0 = check_vector("difference", model, "q0", q0, "nq")
    q1 = check_vector("difference", model, "q1", q1, "nq")
    return jnp.concatenate(
        [_joints.difference(t, q0[model.q_slice(i)], q1[model.q_slice(i)]) for i, t in enumerate(model.joint_types)]
    )


def neutral_configuration(model: Model) -> Float[Array, " nq"]:
    """The identity configuration: zero joint values and identity quaternions (w = 1)."""
    dtype = model.inertias.dtype
    return jnp.concatenate([_joints.neutral(t, dtype) for t in model.joint_types])


def random_configuration(model: Model, key: PRNGKeyArray, scale: float = 1.0) -> Float[Array, " nq"]:
    """A random configuration: ``neutral ⊕ δ`` with δ ~ N(0, scale²) for each joint (uniform-ish rotations for scale
    ≳ 2)."""
    delta = scale * jax.random.normal(key, (model.nv,), dtype=model.inertias.dtype)
    return integrate(model, neutral_configuration(model), delta)


def tangent_of(model: Model, q: Float[Array, " nq"], dq: Float[Array, " nq"]) -> Float[Array, " nv"]:
    """Map an ambient tangent ``dq`` (nq,) at ``q`` to tangent coordinates δ (nv,) of the right perturbation.

    1-DoF joints: δ = dq. Spherical: δ = 2 vec(q̄ ⊗ dq) (unit quaternion q, Hamilton (w, x, y, z)). Free:
    δ = (2 vec(q̄ ⊗ dq_quat), Rᵀ dp). The component of dq normal to the unit-quaternion sphere is dropped, so this
    is the derivative of the configuration restricted to the manifold (what the analytical formulas give).
    """
    out = []
    for i, jtype in enumerate(model.joint_types):
        qi, dqi = q[model.q_slice(i)], dq[model.q_slice(i)]
        if jtype == "spherical":
            out.append(_quat_tangent(qi, dqi))
        elif jtype == "free":
            R = _joints.quat_to_rotation(qi[3:])
            out.append(jnp.concatenate([_quat_tangent(qi[3:], dqi[3:]), R.T @ dqi[:3]]))
        else:
            out.append(dqi)
    return jnp.concatenate(out)


def _quat_tangent(quat, dquat):
    conj = quat * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=quat.dtype)
    return 2.0 * _joints.quat_multiply(conj, dquat)[1:]
