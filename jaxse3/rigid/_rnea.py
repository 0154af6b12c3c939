"""Recursive Newton–Euler algorithm: inverse dynamics τ = ID(q, v, a, f_ext) (Featherstone; seed 002 digest §1.4).

Ground-frame form of seed 002 §II (digest §1.4), vectorised over bodies (sums over ancestors and subtrees are
products with the constant 0/1 matrices of :func:`jaxse3.rigid._topology.tree_matrices`, so the traced program does not
grow with the number of bodies):

    v_i = Σ_{j⪯i} S_j q̇_j,   a_i = −a_g + Σ_{j⪯i} (S_j q̈_j + v_j × S_j q̇_j)      (S̊ = 0; gravity as a_0 = −a_g)
    f_i = I_i a_i + v_i ×* I_i v_i − f_ext,i,   f_i^C = Σ_{k⪰i} f_k,   τ_i = S_iᵀ f_i^C + armature_i q̈_i

with S_i, I_i the ground-frame motion subspaces and inertias at q (``s = Ad_{H_i} S_i^local``, ``I = Ad_{H_i}^{-T}
I^body Ad_{H_i}^{-1}``).

``_rnea`` is the plain core (no checks, differentiable by ordinary autodiff through the recursion); the public
:func:`rnea_autodiff` checks the state and calls it. The public ``jaxse3.rigid.rnea`` is the same core wrapped in the
``custom_jvp`` of the analytical derivatives (seed 002 eqs. (7)–(8)), registered in :mod:`jaxse3.rigid._rules`.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array

from jaxse3.rigid import _spatial
from jaxse3.rigid._kinematics import world_motion_subspaces, world_poses
from jaxse3.rigid._model import Model, check_state
from jaxse3.rigid._topology import tree_matrices

__all__ = ["rnea_autodiff", "world_inertias"]


def _rnea(model: Model, q: Array, v: Array, a: Array, f_ext: Array | None = None) -> Array:
    """Unchecked RNEA core (see the module docstring); ``f_ext=None`` means no external wrenches."""
    tree = tree_matrices(model)
    R, p = world_poses(model, q)
    S = world_motion_subspaces(model, R, p)  # (nv, 6)
    up = jnp.asarray(tree.body_dof)  # (nb, nv)
    vel = up @ (S * v[:, None])  # (nb, 6)
    acc_terms = S * a[:, None] + _spatial.cross_motion(vel[tree.joint], S * v[:, None])
    acc = jnp.concatenate([jnp.zeros(3, model.gravity.dtype), -model.gravity]) + up @ acc_terms
    inertia = world_inertias(R, p, model.inertias)
    f = inertia.apply(acc) + _spatial.cross_force(vel, inertia.apply(vel))
    if f_ext is not None:
        f = f - _spatial.force_to_parent(R, p, f_ext)
    f_composite = jnp.asarray(tree.support) @ f
    return jnp.einsum("ai,ai->a", S, f_composite[tree.joint]) + model.armature * a


def world_inertias(R: Array, p: Array, inertias: Array) -> _spatial.Inertia:
    """Ground-frame spatial inertias ``Xᵀ I X`` with ``X = Ad_{H⁻¹}`` of the bodies (poses (R, p), body-frame
    ``inertias`` (nb, 6, 6)), as :class:`~jaxse3.rigid._spatial.Inertia` parts (nb, ...)."""
    return _spatial.inertia_to_parent(R, p, _spatial.inertia_parts(inertias))


def rnea_autodiff(model: Model, q: Array, v: Array, a: Array, f_ext: Array | None = None) -> Array:
    """Inverse dynamics with the value and arguments of :func:`jaxse3.rigid.rnea` but no ``custom_jvp`` rule: JAX
    differentiates the recursion itself. The autodiff reference for the analytical derivatives (slower, and its
    compile time grows with every nested derivative).

    ``q`` (nq,), ``v`` and ``a`` (nv,) (velocities of spherical/free joints are body twists in the child frame),
    ``f_ext`` (nb, 6): external wrench (moment, force) applied to each body, expressed in the body's frame (about its
    origin), or None. Unbatched: ``jax.vmap`` over states. Gravity is ``model.gravity`` (world frame).
    """
    args = check_state("rnea_autodiff", model, q, v, a, f_ext)
    return _rnea(model, *args)
