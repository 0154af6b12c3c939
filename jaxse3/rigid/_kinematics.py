"""Forward kinematics: body poses, ground-frame motion subspaces and body Jacobians (seed 002 digest §1.2, §1.4).

The traced programs are vectorised over bodies so that their size (and XLA compile time) does not grow with the number
of bodies: joint transforms are evaluated per joint type in one batch, world poses by depth level (one batched
composition per level), and sums over ancestors/subtrees are products with the constant 0/1 matrices of
:func:`jaxse3.rigid._topology.tree_matrices`. All functions are unbatched in the state (``vmap`` for batches).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from jaxse3.rigid import _spatial, joints as _joints
from jaxse3.rigid._model import Model, check_vector
from jaxse3.rigid._topology import tree_matrices

__all__ = ["forward_kinematics", "body_jacobians", "local_poses", "world_poses", "world_motion_subspaces"]


def local_poses(model: Model, q: Array) -> tuple[Array, Array]:
    """(R, p) of every body's frame in its parent's frame (the world for roots), ``X_tree_i · X_J(q_i)``: (nb, 3, 3),
    (nb, 3); joint transforms evaluated in one batch per joint type."""
    nb, dtype = model.nb, model.inertias.dtype
    Rj, pj = jnp.zeros((nb, 3, 3), dtype), jnp.zeros((nb, 3), dtype)
    for kind in ("1dof", "spherical", "free"):
        bodies = [i for i, t in enumerate(model.joint_types) if _joints.group(t) == kind]
        if not bodies:
            continue
        qcols = np.array(
            [np.arange(model.q_index[i], model.q_index[i] + _joints.NQ[model.joint_types[i]]) for i in bodies]
        )
        R, p = _joints.batched_transform(kind, model.joint_axes[np.array(bodies)], q[qcols])
        Rj, pj = Rj.at[np.array(bodies)].set(R), pj.at[np.array(bodies)].set(p)
    X = model.joint_placements
    return X[:, :3, :3] @ Rj, X[:, :3, 3] + jnp.einsum("bij,bj->bi", X[:, :3, :3], pj)


def world_poses(model: Model, q: Array) -> tuple[Array, Array]:
    """(R, p) of every body in the world frame, (nb, 3, 3) and (nb, 3), composed level by level from the roots."""
    R, p = local_poses(model, q)
    for level in tree_matrices(model).levels[1:]:
        par = np.array([model.parents[i] for i in level])
        R = R.at[level].set(R[par] @ R[level])
        p = p.at[level].set(p[par] + jnp.einsum("bij,bj->bi", R[par], p[level]))
    return R, p


def world_motion_subspaces(model: Model, R: Array, p: Array) -> Array:
    """Ground-frame motion-subspace columns s_a (nv, 6) for the world poses (R, p): ``s_a = Ad_{H_joint(a)} S_a``."""
    S_local = jnp.concatenate(
        [_joints.motion_subspace(t, model.joint_axes[i]) for i, t in enumerate(model.joint_types)]
    )
    joint = tree_matrices(model).joint
    return _spatial.motion_to_parent(R[joint], p[joint], S_local)


def forward_kinematics(model: Model, q: Array) -> Array:
    """World poses of all bodies, ``(nb, 4, 4)`` homogeneous matrices ``[[R, p], [0, 1]]``."""
    q = check_vector("forward_kinematics", model, "q", q, "nq")
    R, p = world_poses(model, q)
    top = jnp.concatenate([R, p[:, :, None]], axis=2)
    bottom = jnp.broadcast_to(jnp.array([0.0, 0.0, 0.0, 1.0], dtype=R.dtype), (model.nb, 1, 4))
    return jnp.concatenate([top, bottom], axis=1)


def body_jacobians(model: Model, q: Array) -> Array:
    """Body Jacobians ``J[i]`` (nb, 6, nv): the body twist (ω, v) of body i in its own frame is ``J[i] @ v``.

    Column a is ``Ad_{H_i⁻¹} s_a`` for the DoFs of joints j ⪯ i (ground-frame subspace carried to frame i), else 0.
    """
    q = check_vector("body_jacobians", model, "q", q, "nq")
    R, p = world_poses(model, q)
    S = world_motion_subspaces(model, R, p)
    up = jnp.asarray(tree_matrices(model).body_dof)  # (nb, nv): 1 iff joint(a) ⪯ i
    cols = _spatial.motion_to_child(R[:, None], p[:, None], S[None])  # (nb, nv, 6)
    return jnp.swapaxes(cols * up[:, :, None], 1, 2)
