"""A linkage's inverse and forward dynamics with their analytical derivatives as ``custom_jvp`` rules.

* ID(q, q̇, q̈) (:func:`inverse_dynamics`): the rule runs the recursions of :mod:`jaxse3.linkage._derivatives`
  (:func:`inverse_dynamics_derivatives`; seed 003 eqs. (21), (27), (32) on the tree, (39)–(42)).
* τ(q, q̇, u) (:func:`~jaxse3.linkage.generalized_forces`) and its Jacobians (:func:`generalized_forces_derivatives`):
  block by block, each rod's (D63, eq. (36)), each actuated joint's identity in u.
* FD(q, q̇, u) = M⁻¹(τ − ID(q, q̇, 0)) (eq. (4), :func:`forward_dynamics`) with ∂FD/∂q = M⁻¹(∂τ/∂q − ∂ID/∂q) (7),
  ∂FD/∂q̇ = M⁻¹(∂τ/∂q̇ − ∂ID/∂q̇) (9), ID's derivatives at q̈ = FD, and ∂FD/∂u = M⁻¹ ∂τ/∂u
  (:func:`forward_dynamics_jacobians`).

A linkage of rigid links alone (:attr:`~jaxse3.linkage.Linkage.rigid_obstacle` is None, e.g. a robot from URDF) runs on
:mod:`jaxse3.rigid` instead (:meth:`~jaxse3.linkage.Linkage.to_rigid`): RNEA, IDSVA and the CRBA forward dynamics with
their own rules, vectorised over bodies, where the recursions here go link by link (the same values: tested). Its
spherical and free joints in quaternions are then differentiated analytically too (tangent space, as
:mod:`jaxse3.rigid`).

The rules are registered through :func:`jaxse3.lie.tangents.custom_rule` (counted in its ``RULE_CALLS`` under
"linkage.inverse_dynamics" and "linkage.forward_dynamics"). Tangents along the model's parameters fall back to
autodiff of the plain functions; linkages outside the analytical derivatives' coverage (spherical and free joints,
:func:`~jaxse3.linkage._derivatives.covered`) are differentiated by autodiff of the plain recursion altogether.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxse3 import rigid, rod as rods
from jaxse3._chunks import cache_sized
from jaxse3.lie.tangents import accumulate, custom_rule, jvp_of_rest
from jaxse3.linkage._derivatives import IDDerivatives, covered, tree_derivatives
from jaxse3.linkage._dynamics import (
    check_state,
    generalized_forces,
    inverse_dynamics_and_mass,
    inverse_dynamics_autodiff,
)
from jaxse3.linkage._model import Linkage

__all__ = [
    "inverse_dynamics",
    "inverse_dynamics_derivatives",
    "generalized_forces_derivatives",
    "forward_dynamics",
    "forward_dynamics_jacobians",
]


def _id_jvp(primals, tangents):
    linkage, q, qd, qdd = primals
    _, dq, dqd, dqdd = tangents
    r = tree_derivatives(linkage, q, qd, qdd)
    rest = jvp_of_rest(inverse_dynamics_autodiff, primals, tangents, analytic=(1, 2, 3))
    return r.tau, accumulate(r.tau, [(r.dq, dq), (r.dqd, dqd), (r.M, dqdd)], rest)


_id = custom_rule("linkage.inverse_dynamics", inverse_dynamics_autodiff, _id_jvp)


def inverse_dynamics(
    linkage: Linkage, q: Float[Array, " nq"], qd: Float[Array, " nv"], qdd: Float[Array, " nv"]
) -> Float[Array, " nv"]:
    """ID(q, q̇, q̈) = M(q)q̈ − F(q, q̇): inertia, Coriolis/centrifugal terms and gravity (seed 003 eqs. (8), (14)–(16)),
    (nv,); the generalised forces are :func:`~jaxse3.linkage.generalized_forces`. Its ``custom_jvp`` rule runs the
    analytical derivatives (eqs. (21), (27), (32), (39)–(42))."""
    args = check_state("inverse_dynamics", linkage, q=q, qd=qd, qdd=qdd)
    if linkage.rigid_obstacle is None:
        return rigid.rnea(linkage.to_rigid(), args["q"], args["qd"], args["qdd"])
    fn = _id if covered(linkage) else inverse_dynamics_autodiff
    return fn(linkage, args["q"], args["qd"], args["qdd"])


def inverse_dynamics_derivatives(
    linkage: Linkage, q: Float[Array, " nq"], qd: Float[Array, " nv"], qdd: Float[Array, " nv"]
) -> IDDerivatives:
    """ID(q, q̇, q̈), ∂ID/∂q, ∂ID/∂q̇ and M = ∂ID/∂q̈ (seed 003 eqs. (14), (21), (27), (32), (39)–(42)): one forward and
    one backward pass over the tree (:mod:`jaxse3.linkage._derivatives`), or RNEA and IDSVA for a linkage of rigid
    links alone (module docstring). For spherical and free joints ∂/∂q is in the tangent space, q ⊕ δ = q·exp(δ̂) at
    fixed body velocities (the convention of :mod:`jaxse3.rigid`, :func:`~jaxse3.linkage.integrate`): nv columns."""
    args = check_state("inverse_dynamics_derivatives", linkage, q=q, qd=qd, qdd=qdd)
    q, qd, qdd = args["q"], args["qd"], args["qdd"]
    if linkage.rigid_obstacle is None:
        model = linkage.to_rigid()
        return IDDerivatives(rigid.rnea(model, q, qd, qdd), *rigid.rnea_derivatives(model, q, qd, qdd))
    return tree_derivatives(linkage, q, qd, qdd)


def generalized_forces_derivatives(
    linkage: Linkage, q: Float[Array, " nq"], qd: Float[Array, " nv"], u: Float[Array, " n_inputs"]
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv n_inputs"]]:
    """(∂τ/∂q, ∂τ/∂q̇, ∂τ/∂u) of :func:`~jaxse3.linkage.generalized_forces`: each rod's block (D63, eq. (36);
    ∂τ/∂u = B(q)), each actuated joint's identity in u."""
    args = check_state("generalized_forces_derivatives", linkage, q=q, qd=qd, u=u)
    q, qd, u = args["q"], args["qd"], args["u"]
    nv, dtype = linkage.nv, jnp.result_type(q, qd, u)
    Tq, Tqd, Tu = jnp.zeros((nv, nv), dtype), jnp.zeros((nv, nv), dtype), jnp.zeros((nv, linkage.n_inputs), dtype)
    for i, link in enumerate(linkage.links):
        vs, us = linkage.v_slice(i), linkage.u_slice(i)
        if link.joint == "soft":
            qi = q[linkage.q_slice(i)]
            dq, dqd = rods.generalized_forces_derivatives(link.body, qi, qd[vs], u[us])
            Tq, Tqd = Tq.at[vs, vs].set(dq), Tqd.at[vs, vs].set(dqd)
            if link.n_inputs:
                Tu = Tu.at[vs, us].set(rods.forces.actuation_matrix(link.body, qi))
        elif link.actuated:
            Tu = Tu.at[vs, us].set(jnp.eye(link.nv, dtype=dtype))
    return Tq, Tqd, Tu


def _fd_parts(linkage, q, qd, u):
    """q̈ = FD and the Cholesky factor of M."""
    bias, M = inverse_dynamics_and_mass(linkage, q, qd)  # ID(q, q̇, 0) and M(q) from one forward pass
    chol = jax.scipy.linalg.cho_factor(M)
    return jax.scipy.linalg.cho_solve(chol, generalized_forces(linkage, q, qd, u) - bias), chol


def _fd_plain(linkage, q, qd, u):
    return _fd_parts(linkage, q, qd, u)[0]


@cache_sized
def _fd_jacobians(linkage, q, qd, u):
    """q̈ = FD and (∂FD/∂q, ∂FD/∂q̇, ∂FD/∂u): one forward dynamics and one derivative pass at q̈ = FD."""
    qdd, chol = _fd_parts(linkage, q, qd, u)
    r = tree_derivatives(linkage, q, qd, qdd)  # at q̈ = FD
    Tq, Tqd, Tu = generalized_forces_derivatives(linkage, q, qd, u)
    solve = lambda A: jax.scipy.linalg.cho_solve(chol, A)
    return qdd, solve(Tq - r.dq), solve(Tqd - r.dqd), solve(Tu)


def _fd_jvp(primals, tangents):
    linkage, q, qd, u = primals
    _, dq, dqd, du = tangents
    qdd, Jq, Jqd, Ju = _fd_jacobians(linkage, q, qd, u)
    rest = jvp_of_rest(_fd_plain, primals, tangents, analytic=(1, 2, 3))
    return qdd, accumulate(qdd, [(Jq, dq), (Jqd, dqd), (Ju, du)], rest)


# the primal in chunks under vmap on a CPU
_fd = custom_rule("linkage.forward_dynamics", cache_sized(_fd_plain), _fd_jvp)


def forward_dynamics(
    linkage: Linkage, q: Float[Array, " nq"], qd: Float[Array, " nv"], u: Float[Array, " n_inputs"]
) -> Float[Array, " nv"]:
    """q̈ = FD(q, q̇, u) = M(q)⁻¹(τ(q, q̇, u) − ID(q, q̇, 0)) (seed 003 eq. (4)), (nv,). Its ``custom_jvp`` rule runs the
    analytical Jacobians (eqs. (7), (9); :func:`forward_dynamics_jacobians`)."""
    args = check_state("forward_dynamics", linkage, q=q, qd=qd, u=u)
    q, qd, u = args["q"], args["qd"], args["u"]
    if linkage.rigid_obstacle is None:
        return rigid.forward_dynamics(linkage.to_rigid(), q, qd, generalized_forces(linkage, q, qd, u))
    fn = _fd if covered(linkage) else _fd_plain
    return fn(linkage, q, qd, u)


def forward_dynamics_jacobians(
    linkage: Linkage, q: Float[Array, " nq"], qd: Float[Array, " nv"], u: Float[Array, " n_inputs"]
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv n_inputs"]]:
    """(∂FD/∂q, ∂FD/∂q̇, ∂FD/∂u) (seed 003 eqs. (7), (9)): one forward dynamics, one derivative pass at q̈ = FD."""
    args = check_state("forward_dynamics_jacobians", linkage, q=q, qd=qd, u=u)
    q, qd, u = args["q"], args["qd"], args["u"]
    if linkage.rigid_obstacle is None:  # tangent-space ∂/∂q for quaternion joints, as jaxse3.rigid
        tau = generalized_forces(linkage, q, qd, u)
        Jq, Jqd, Minv = rigid.forward_dynamics_derivatives(linkage.to_rigid(), q, qd, tau)
        return Jq, Jqd, Minv @ generalized_forces_derivatives(linkage, q, qd, u)[2]
    if not covered(linkage):
        raise ValueError(
            "forward_dynamics_jacobians: the analytical derivatives do not cover spherical or free joints yet; "
            "differentiate jaxse3.linkage.forward_dynamics with jax.jacfwd"
        )
    return _fd_jacobians(linkage, q, qd, u)[1:]
