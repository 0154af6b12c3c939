"""First-order partial derivatives of inverse dynamics: IDSVA FO (seed 002 eqs. (7)–(8), digest §1.5).

``rnea_derivatives(model, q, v, a, f_ext)`` returns ``(dtau_dq, dtau_dv, M)`` with ``∂τ/∂q`` taken in the tangent
space of the configuration manifold with a right (child-side) perturbation ``q ⊕ δ = q·exp(δ̂)`` (docs/conventions.md), so all
three are ``(nv, nv)`` with rows = τ.

The algorithm works with every quantity in the ground frame (digest §1.4): a forward pass gives, per DoF column, the
motion subspace ``s``, ``Ṡ = v_i × s``, ``Ψ̇ = v_λ(i) × s`` and ``Ψ̈ = a_λ(i) × s + v_λ(i) × Ψ̇`` (eq. (5)), and per body
the composites ``I^C``, ``B^C`` (Coriolis factor, eq. (6) **times 2**, as in Algorithm 1: digest §7) and ``f^C``,
the inertias by their parts (A, h, m) and the Coriolis factors by their two nonzero blocks (:class:`CoriolisBlocks`:
the right block column of B(I, x) vanishes for a spatial inertia), 25 numbers per body instead of 72.
Because the tree is static, the sums over ancestors and subtrees are products with constant 0/1 matrices
(:class:`Topology`), so the whole routine is a handful of dense, batched contractions — no Python loop over the
tree in the traced program; 6×6 products with cross-product matrices are written as cross products on the columns
and rows (:func:`cross_sandwich`) — and the blocks of eqs. (7)–(8) are selected by the ancestor masks:

* (7a), (8a), ``j ⪯ i``: rows of DoFs of i, columns of DoFs of its ancestors (diagonal blocks included: the (7a)
  form is the one that is right inside a multi-DoF joint, digest §1.5);
* (7b), (8b), ``j ≺ i``: rows of strict ancestors, columns of descendants.

The public ``rnea_derivatives`` carries a ``custom_jvp`` rule that contracts the second-order formulas of
:mod:`jaxse3.rigid.rnea_second_order_derivatives` with the tangent (digest §9), so ``jax.jacfwd`` / ``jax.hessian``
of anything built on it run the analytical second-order algorithm.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from jaxse3.lie import se3 as _se3
from jaxse3.lie.rules import RULE_CALLS
from jaxse3.lie.tangents import accumulate, is_zero, jvp_of_rest
from jaxse3.rigid import _spatial
from jaxse3.rigid import joints as _joints
from jaxse3.rigid.kinematics import world_motion_subspaces, world_poses
from jaxse3.rigid.model import Model, _tree_matrices
from jaxse3.rigid.rnea import _rnea, check_state, world_inertias

__all__ = ["rnea", "rnea_derivatives", "Topology", "topology", "GroundPass", "ground_pass", "tangent_of"]


# ---------------------------------------------------------------------------------------------------------------------
# spatial cross-product matrices (seed 002 eqs. (3)–(4) and the swapped force cross of digest §1.1)


def crf_bar(f):
    """f×̄*, defined by (f×̄*) v = (v×*) f; equals −adbar_f and is skew-symmetric (digest §1.1)."""
    return -_se3.adbar(f)


def crf_times(x, M):
    """(x×*) M for any 6×6 ``M`` (batched), as cross products on the columns of M (cheaper than a 6×6 product)."""
    return jnp.swapaxes(_spatial.cross_force(x[..., None, :], jnp.swapaxes(M, -1, -2)), -1, -2)


def cross_sandwich(x, M):
    """(x×*) M − M (x×) for any 6×6 ``M`` (batched); ``M (x×)`` has rows ``−(x×*) M[r, :]`` since ``(x×)ᵀ = −x×*``."""
    return crf_times(x, M) + _spatial.cross_force(x[..., None, :], M)


class CoriolisBlocks(NamedTuple):
    """B(I, x) = (x×*) I − I (x×) + (I x)×̄*, **twice** the body Coriolis factor of eq. (6) (Algorithm 1 lines 9,
    15), for a spatial inertia I = (A, h, m) (:class:`~jaxse3.rigid._spatial.Inertia`). Its right block column
    vanishes: ``B = [[X, 0], [−2 f̃, 0]]`` with ``X = [ω̃, A] − ũh̃ − h̃ũ − ñ`` and
    ``(n, f) = I x`` for x = (ω, u) (the m terms cancel, and the upper-right block is ``(ω × h + m u − f)~ = 0``).
    B is linear in (X, f), so composites are sums of blocks."""

    X: Array  # (..., 3, 3)
    f: Array  # (..., 3)

    @classmethod
    def of(cls, inertia: _spatial.Inertia, x, momentum) -> "CoriolisBlocks":
        """The blocks of B(I, x), given ``momentum = I x``."""
        W, U, H = _spatial.skew(x[..., :3]), _spatial.skew(x[..., 3:]), _spatial.skew(inertia.h)
        WA, UH = W @ inertia.A, U @ H
        return cls(WA + jnp.swapaxes(WA, -1, -2) - UH - jnp.swapaxes(UH, -1, -2) - _spatial.skew(momentum[..., :3]),
                   momentum[..., 3:])  # fmt: skip

    def matrix(self) -> Array:
        """The 6×6 matrix."""
        z = jnp.zeros_like(self.X)
        return jnp.concatenate([jnp.concatenate([self.X, z], -1), jnp.concatenate([-2.0 * _spatial.skew(self.f), z], -1)],
                               -2)  # fmt: skip

    def apply(self, y):
        """B y = (X y_ω, −2 f × y_ω)."""
        return jnp.concatenate([_matvec(self.X, y[..., :3]), -2.0 * jnp.cross(self.f, y[..., :3])], -1)

    def apply_transpose(self, y):
        """Bᵀ y = (Xᵀ y_ω + 2 f × y_v, 0)."""
        return jnp.concatenate([_matvec(jnp.swapaxes(self.X, -1, -2), y[..., :3]) + 2.0 * jnp.cross(self.f, y[..., 3:]),
                                jnp.zeros_like(y[..., 3:])], -1)  # fmt: skip


def _matvec(M, x):
    return jnp.einsum("...ij,...j->...i", M, x)


# ---------------------------------------------------------------------------------------------------------------------
# static topology


class Topology(NamedTuple):
    """Constant 0/1 matrices of the tree (numpy, built at trace time from the static ``model.parents``).

    ``joint[a]`` is the joint of DoF a; ``support[i, k] = 1`` iff ``i ⪯ k`` (i on the path from k to the root);
    ``E[a, b] = 1`` iff ``joint(b) ⪯ joint(a)``; ``same[a, b] = 1`` iff both DoFs belong to one joint.
    """

    joint: np.ndarray  # (nv,) int
    support: np.ndarray  # (nb, nb)
    E: np.ndarray  # (nv, nv)
    same: np.ndarray  # (nv, nv)


@functools.lru_cache(maxsize=None)
def _topology(parents: tuple[int, ...], joint_types: tuple[str, ...]) -> Topology:
    tree = _tree_matrices(parents, joint_types)
    joint = tree.joint
    return Topology(joint, tree.support, tree.support[joint][:, joint].T.copy(),
                    (joint[:, None] == joint[None, :]).astype(float))  # fmt: skip


def topology(model: Model) -> Topology:
    """The :class:`Topology` of ``model`` (cached per tree)."""
    return _topology(model.parents, model.joint_types)


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


def ground_pass(model: Model, q, v, a, f_ext=None) -> GroundPass:
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


def subtree_sums(top: Topology, tree):
    """``x_i ← Σ_{k⪰i} x_k`` for every (nb, ...) leaf of ``tree``, as one product with ``top.support``."""
    leaves, treedef = jax.tree.flatten(tree)
    nb = leaves[0].shape[0]
    sizes = np.cumsum([0] + [int(np.prod(x.shape[1:])) for x in leaves])
    total = jnp.asarray(top.support) @ jnp.concatenate([x.reshape(nb, -1) for x in leaves], axis=1)
    return treedef.unflatten([total[:, i:j].reshape(x.shape) for i, j, x in zip(sizes, sizes[1:], leaves)])


# ---------------------------------------------------------------------------------------------------------------------
# eqs. (7)–(8)


def _first_order(model: Model, q, v, a, f_ext=None):
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
    return dtau_dq, dtau_dv, M


def tangent_of(model: Model, q, dq):
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


# ---------------------------------------------------------------------------------------------------------------------
# public, differentiable


@jax.custom_jvp
def _rnea_derivatives(model, q, v, a, f_ext):
    return _first_order(model, q, v, a, f_ext)


def _rnea_derivatives_jvp(primals, tangents):
    # Second-order formulas as contractions (seed 002 Algorithm 1, digest §9); the SO module builds on this one.
    from jaxse3.rigid.rnea_second_order_derivatives import second_order_contractions

    model, q, v, a, f_ext = primals
    _, dq, dv, da, _ = tangents
    RULE_CALLS["rigid.rnea_derivatives"] += 1
    out = _first_order(model, q, v, a, f_ext)
    dq = None if is_zero(dq) else tangent_of(model, q, dq)
    d_out = second_order_contractions(model, q, v, a, f_ext, dq, None if is_zero(dv) else dv, None if is_zero(da) else da)
    d_rest = jvp_of_rest(lambda m, _q, _v, _a, f: _first_order(m, q, v, a, f), primals, tangents, ANALYTIC)
    return out, d_out if d_rest is None else jax.tree.map(jnp.add, d_out, d_rest)


_rnea_derivatives.defjvp(_rnea_derivatives_jvp, symbolic_zeros=True)


#: the arguments (q, v, a) of rnea-like functions whose tangents the analytical formulas cover; model parameters and
#: external forces go through plain autodiff (:func:`jaxse3.lie.tangents.jvp_of_rest`)
ANALYTIC = (1, 2, 3)


def rnea_derivatives(model: Model, q, v, a, f_ext=None) -> tuple[Array, Array, Array]:
    """IDSVA FO (seed 002 eqs. (7)–(8)): ``(∂τ/∂q, ∂τ/∂v, M)``, each ``(nv, nv)``, rows = τ.

    ``∂τ/∂q[:, k] = d/dε rnea(model, integrate(q, ε e_k), v, a)`` at ε = 0: the tangent-space derivative with the
    right perturbation of Lie-group joints (their ``v`` are body twists in the child frame). ``∂τ/∂a = M``.
    ``f_ext`` (nb, 6): external wrenches on the bodies in body frames (optional). Differentiable: its ``custom_jvp``
    rule contracts the second-order tensors of :func:`rnea_second_order_derivatives` with the tangent.
    """
    q, v, a, *f_ext = check_state("rnea_derivatives", model, q, v, a, f_ext)
    return _rnea_derivatives(model, q, v, a, f_ext[0] if f_ext else None)


@jax.custom_jvp
def _rnea_differentiable(model, q, v, a, f_ext):
    return _rnea(model, q, v, a, f_ext)


def _rnea_jvp(primals, tangents):
    # dτ = ∂τ/∂q δ + ∂τ/∂v dv + M da (eqs. (7)–(8)); the primal and the Jacobians are the registered functions, so a
    # second derivative of this rule runs the second-order contractions.
    model, q, v, a, f_ext = primals
    _, dq, dv, da, _ = tangents
    RULE_CALLS["rigid.rnea"] += 1
    tau = _rnea_differentiable(model, q, v, a, f_ext)
    dtau_dq, dtau_dv, M = _rnea_derivatives(model, q, v, a, f_ext)
    rest = jvp_of_rest(lambda m, _q, _v, _a, f: _rnea(m, q, v, a, f), primals, tangents, ANALYTIC)
    terms = [(lambda t: dtau_dq @ tangent_of(model, q, t), dq), (dtau_dv, dv), (M, da)]
    return tau, accumulate(tau, terms, rest)


_rnea_differentiable.defjvp(_rnea_jvp, symbolic_zeros=True)


def rnea(model: Model, q: Array, v: Array, a: Array, f_ext: Array | None = None) -> Array:
    """Inverse dynamics τ = ID(q, v, a, f_ext), shape (nv,), differentiable by the analytical algorithms.

    Same value and arguments as the plain :func:`jaxse3.rigid.rnea.rnea`; its ``custom_jvp`` rule applies IDSVA FO
    (seed 002 eqs. (7)–(8)) and, through :func:`rnea_derivatives`, IDSVA SO for second derivatives, so
    ``jax.jacfwd``, ``jax.jacrev`` and ``jax.hessian`` never differentiate the recursion itself. Derivatives with
    respect to the quaternions of spherical/free joints are those of the configuration restricted to the manifold
    (see :func:`tangent_of`); compose with :func:`jaxse3.rigid.integrate` for tangent-space Jacobians.
    """
    q, v, a, *f_ext = check_state("rnea", model, q, v, a, f_ext)
    return _rnea_differentiable(model, q, v, a, f_ext[0] if f_ext else None)
