"""First-order partial derivatives of inverse dynamics: IDSVA FO (seed 002 eqs. (7)–(8), digest §1.5).

``_first_order(model, q, v, a, f_ext)`` returns ``(dtau_dq, dtau_dv, M)`` with ``∂τ/∂q`` taken in the tangent
space of the configuration manifold with a right (child-side) perturbation ``q ⊕ δ = q·exp(δ̂)``
(docs/conventions.md), so all
three are ``(nv, nv)`` with rows = τ.

The algorithm works with every quantity in the ground frame (digest §1.4): a forward pass gives, per DoF column, the
motion subspace ``s``, ``Ṡ = v_i × s``, ``Ψ̇ = v_λ(i) × s`` and ``Ψ̈ = a_λ(i) × s + v_λ(i) × Ψ̇`` (eq. (5)), and per body
the composites ``I^C``, ``B^C`` (Coriolis factor, eq. (6) **times 2**, as in Algorithm 1: digest §7) and ``f^C``,
the inertias by their parts (A, h, m) and the Coriolis factors by their two nonzero blocks
(:class:`~jaxse3.rigid._spatial.CoriolisBlocks`: the right block column of B(I, x) vanishes for a spatial inertia),
25 numbers per body instead of 72. Because the tree is static, the sums over ancestors and subtrees are products with
constant 0/1 matrices (:class:`~jaxse3.rigid._topology.Topology`), so the whole routine is a handful of dense,
batched contractions — no Python loop over the tree in the traced program; 6×6 products with cross-product matrices
are written as cross products on the columns and rows (:func:`~jaxse3.rigid._spatial.cross_sandwich`) — and the
blocks of eqs. (7)–(8) are selected by the ancestor masks:

* (7a), (8a), ``j ⪯ i``: rows of DoFs of i, columns of DoFs of its ancestors (diagonal blocks included: the (7a)
  form is the one that is right inside a multi-DoF joint, digest §1.5);
* (7b), (8b), ``j ≺ i``: rows of strict ancestors, columns of descendants.

This module is first order only: :func:`ground_pass` and the plain :func:`_first_order` (ordinary autodiff). The
second-order algorithm (:mod:`jaxse3.rigid._rnea_second_order_derivatives`) builds on :func:`ground_pass`; the public
``jaxse3.rigid.rnea_derivatives``, whose ``custom_jvp`` rule contracts the second-order formulas with the tangent
(digest §9), is registered above both, in :mod:`jaxse3.rigid._rules`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxse3.rigid import _spatial
from jaxse3.rigid._kinematics import world_motion_subspaces, world_poses
from jaxse3.rigid._model import Model
from jaxse3.rigid._rnea import world_inertias
from jaxse3.rigid._spatial import CoriolisBlocks
from jaxse3.rigid._topology import subtree_sums, topology

__all__ = ["GroundPass", "ground_pass"]


# ---------------------------------------------------------------------------------------------------------------------
# forward pass in the ground frame (Algorithm 1 lines 1–11; digest §1.4)


class GroundPass(NamedTuple):
    """Ground-frame quantities of the forward pass; per-DoF arrays are (nv, 6), per-body composites (nb, ...)."""

    S: Array  # motion subspace columns s
    S_dot: Array  # Ṡ = v_i × s
    Psi_dot: Array  # Ψ̇ = v_λ(i) × s
    Psi_ddot: Array  # Ψ̈ = a_λ(i) × s + v_λ(i) × Ψ̇
    IC: _spatial.Inertia  # composite inertias by parts (nb, ...)
    BC: CoriolisBlocks  # composite Coriolis factors, 2 × eq. (6), by blocks (nb, ...)
    fC: Array  # composite forces (nb, 6), external forces subtracted


def ground_pass(
    model: Model,
    q: Float[Array, " nq"],
    v: Float[Array, " nv"],
    a: Float[Array, " nv"],
    f_ext: Float[Array, "nb 6"] | None = None,
) -> GroundPass:
    """Forward pass of IDSVA in the ground frame, with the subtree sums as products with ``Topology.support``.

    Gravity enters as the base acceleration ``a_0 = −a_g`` (Algorithm 1 line 1); ``f_ext`` (nb, 6) are wrenches on
    the bodies in their own frames (they move with the bodies, so the derivative formulas hold unchanged with
    ``f_i ← f_i − f_ext,i``).
    """
    top = topology(model)
    R, p = world_poses(model, q)
    S = world_motion_subspaces(model, R, p)
    inertia = world_inertias(R, p, model.inertias)
    # ancestor sums: x_i = Σ_{joint(a) ⪯ i} y_a  ->  support[joint].T @ y ; strict ancestors: minus joint i's own DoFs
    up = jnp.asarray(top.support[top.joint].T)  # (nb, nv)
    own = jnp.asarray((top.joint[None, :] == np.arange(len(model.parents))[:, None]).astype(float))  # (nb, nv)
    a0 = jnp.concatenate([jnp.zeros(3, dtype=S.dtype), -model.gravity])
    sv = S * v[:, None]
    vel = up @ sv
    vel_parent = (up - own) @ sv
    S_dot = _spatial.cross_motion(vel[top.joint], S)
    acc_terms = S * a[:, None] + S_dot * v[:, None]
    acc = a0 + up @ acc_terms
    acc_parent = a0 + (up - own) @ acc_terms
    Psi_dot = _spatial.cross_motion(vel_parent[top.joint], S)
    Psi_ddot = _spatial.cross_motion(acc_parent[top.joint], S) + _spatial.cross_motion(vel_parent[top.joint], Psi_dot)
    Iv = inertia.apply(vel)
    f = inertia.apply(acc) + _spatial.cross_force(vel, Iv)
    if f_ext is not None:
        f = f - _spatial.force_to_parent(R, p, f_ext)
    # subtree sums of all per-body parts in one product (inertias, Coriolis blocks and forces are linear in them)
    IC, BC, fC = subtree_sums(top, (inertia, CoriolisBlocks.of(inertia, vel, Iv), f))
    return GroundPass(S, S_dot, Psi_dot, Psi_ddot, IC, BC, fC)


# ---------------------------------------------------------------------------------------------------------------------
# eqs. (7)–(8)


def _first_order(model: Model, q, v, a, f_ext=None):
    """IDSVA FO, unchecked and without a ``custom_jvp`` rule: ``(∂τ/∂q, ∂τ/∂v, M)``, each (nv, nv), rows = τ."""
    top = topology(model)
    g = ground_pass(model, q, v, a, f_ext)
    J = top.joint
    IC, BC, fC = jax.tree.map(lambda x: x[J], (g.IC, g.BC, g.fC))
    T1 = IC.apply(g.S)  # I^C s
    T2 = BC.apply(g.S) + IC.apply(g.Psi_dot + g.S_dot)  # 2B^C s + I^C (Ψ̇ + Ṡ)
    T3 = BC.apply(g.Psi_dot) + IC.apply(g.Psi_ddot) + _spatial.cross_force(g.S, fC)  # 2B^C Ψ̇ + I^C Ψ̈ + (f^C ×̄*) s
    T4 = BC.apply_transpose(g.S)  # (2B^C)ᵀ s
    E = jnp.asarray(top.E)
    below = jnp.asarray((top.E * (1.0 - top.same)).T)  # below[r, c] = 1 iff joint(r) ≺ joint(c)
    dtau_dq = E * (T4 @ g.Psi_dot.T + T1 @ g.Psi_ddot.T) + below * (g.S @ T3.T)  # (7a) + (7b)
    dtau_dv = E * (T1 @ (g.Psi_dot + g.S_dot).T + T4 @ g.S.T) + below * (g.S @ T2.T)  # (8a) + (8b)
    M = E * (T1 @ g.S.T) + below * (g.S @ T1.T)  # M_ji = S_jᵀ I_i^C S_i, j ⪯ i (eq. (16))
    return dtau_dq, dtau_dv, M + jnp.diag(model.armature)  # the rotor inertias enter M only
