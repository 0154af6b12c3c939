"""Recursive Newton–Euler algorithm: inverse dynamics τ = ID(q, v, a, f_ext) (Featherstone; seed 002 digest §1.4).

Ground-frame form of seed 002 §II (digest §1.4), vectorised over bodies (sums over ancestors and subtrees are
products with the constant 0/1 matrices of :func:`jaxse3.rigid.model.tree_matrices`, so the traced program does not
grow with the number of bodies):

    v_i = Σ_{j⪯i} S_j q̇_j,   a_i = −a_g + Σ_{j⪯i} (S_j q̈_j + v_j × S_j q̇_j)      (S̊ = 0; gravity as a_0 = −a_g)
    f_i = I_i a_i + v_i ×* I_i v_i − f_ext,i,   f_i^C = Σ_{k⪰i} f_k,   τ_i = S_iᵀ f_i^C

with S_i, I_i the ground-frame motion subspaces and inertias at q (``s = Ad_{H_i} S_i^local``, ``I = Ad_{H_i}^{-T}
I^body Ad_{H_i}^{-1}``).

Coordination with the analytical derivatives (``jaxse3.rigid.rnea_derivatives``, which imports this module): ``_rnea``
is the plain core (no checks, differentiable by ordinary autodiff). The public :func:`rnea` checks shapes and calls
``_rnea``; the derivatives module wraps ``_rnea`` in the ``custom_jvp`` built from seed 002 eqs. (7)–(8), and
``jaxse3.rigid`` exports that wrapped version as ``jaxse3.rigid.rnea``.
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array

from jaxse3.rigid import _spatial
from jaxse3.rigid.kinematics import world_motion_subspaces, world_poses
from jaxse3.rigid.model import Model, check_vector, tree_matrices

__all__ = ["rnea", "check_state", "world_inertias"]


def check_state(fname: str, model: Model, q, v=None, a=None, f_ext=None):
    """Trace-time shape checks of a state: q (nq,), v and a (nv,), f_ext (nb, 6) or None. Returns the arrays."""
    out = [check_vector(fname, model, "q", q, "nq")]
    for name, x in (("v", v), ("a", a)):
        if x is not None:
            out.append(check_vector(fname, model, name, x, "nv"))
    if f_ext is not None:
        f_ext = jnp.asarray(f_ext)
        if f_ext.shape != (model.nb, 6):
            raise ValueError(f"{fname}: f_ext must have shape (nb, 6) = ({model.nb}, 6), got {f_ext.shape}")
        out.append(f_ext)
    return out


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
    return jnp.einsum("ai,ai->a", S, f_composite[tree.joint])


def world_inertias(R: Array, p: Array, inertias: Array) -> _spatial.Inertia:
    """Ground-frame spatial inertias ``Xᵀ I X`` with ``X = Ad_{H⁻¹}`` of the bodies (poses (R, p), body-frame
    ``inertias`` (nb, 6, 6)), as :class:`~jaxse3.rigid._spatial.Inertia` parts (nb, ...)."""
    return _spatial.inertia_to_parent(R, p, _spatial.inertia_parts(inertias))


def rnea(model: Model, q: Array, v: Array, a: Array, f_ext: Array | None = None) -> Array:
    """Inverse dynamics τ = M(q) a + C(q, v) v + g(q) − Σ J_iᵀ f_ext,i, shape (nv,).

    ``q`` (nq,), ``v`` and ``a`` (nv,) (velocities of spherical/free joints are body twists in the child frame),
    ``f_ext`` (nb, 6): external wrench (moment, force) applied to each body, expressed in the body's frame (about its
    origin), or None. Unbatched: ``jax.vmap`` over states. Gravity is ``model.gravity`` (world frame).
    """
    args = check_state("rnea", model, q, v, a, f_ext)
    return _rnea(model, *args)
