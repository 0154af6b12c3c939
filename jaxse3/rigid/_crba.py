"""Composite-rigid-body algorithm: the joint-space inertia matrix M(q) (Featherstone; seed 002 eq. (16)).

Ground frame, vectorised over bodies: composite inertias ``I_i^C = Σ_{k⪰i} I_k`` (a product with the subtree 0/1
matrix), then ``M_ji = S_jᵀ I_i^C S_i`` for j ⪯ i and ``M_ij = M_jiᵀ``; blocks of unrelated joints are zero; the
rotor inertias ``diag(model.armature)`` are added.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array

from jaxse3.rigid._kinematics import world_motion_subspaces, world_poses
from jaxse3.rigid._model import Model, check_vector
from jaxse3.rigid._rnea import world_inertias
from jaxse3.rigid._topology import tree_matrices

__all__ = ["crba"]


def _crba(model: Model, q: Array) -> Array:
    tree = tree_matrices(model)
    R, p = world_poses(model, q)
    S = world_motion_subspaces(model, R, p)  # (nv, 6)
    support = jnp.asarray(tree.support)
    composite = jax.tree.map(lambda x: jnp.einsum("ik,k...->i...", support, x), world_inertias(R, p, model.inertias))
    force = jax.tree.map(lambda x: x[tree.joint], composite).apply(S)  # I^C_joint(a) s_a
    ancestor = tree.support[tree.joint][:, tree.joint]  # [a, b] = 1 iff joint(a) ⪯ joint(b)
    # M[a, b] = s_aᵀ I^C_joint(b) s_b if joint(a) ⪯ joint(b); its transpose if joint(b) ≺ joint(a); 0 if unrelated
    M = jnp.asarray(ancestor) * (S @ force.T) + jnp.asarray(ancestor.T * (1.0 - ancestor)) * (force @ S.T)
    return M + jnp.diag(model.armature)


def crba(model: Model, q: Array) -> Array:
    """Joint-space inertia matrix M(q), shape (nv, nv), symmetric positive definite; ``∂rnea/∂a = M``."""
    return _crba(model, check_vector("crba", model, "q", q, "nq"))
