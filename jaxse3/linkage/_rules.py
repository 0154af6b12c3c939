"""A linkage's inverse and forward dynamics with their analytical derivatives as ``custom_jvp`` rules.

* ID(q, q̇, q̈) (:func:`inverse_dynamics`): the rule runs :func:`~jaxse3.linkage.inverse_dynamics_derivatives`
  (seed 003 eqs. (21), (27), (32) on the tree, (39)–(42)).
* τ(q, q̇, u) (:func:`~jaxse3.linkage.generalized_forces`) and its Jacobians (:func:`generalized_forces_derivatives`):
  block by block, each rod's (D63, eq. (36)), each actuated joint's identity in u.
* FD(q, q̇, u) = M⁻¹(τ − ID(q, q̇, 0)) (eq. (4), :func:`forward_dynamics`) with ∂FD/∂q = M⁻¹(∂τ/∂q − ∂ID/∂q) (7),
  ∂FD/∂q̇ = M⁻¹(∂τ/∂q̇ − ∂ID/∂q̇) (9), ID's derivatives at q̈ = FD, and ∂FD/∂u = M⁻¹ ∂τ/∂u
  (:func:`forward_dynamics_jacobians`).

The rules are registered through :func:`jaxse3.lie.tangents.custom_rule` (counted in its ``RULE_CALLS`` under
"linkage.inverse_dynamics" and "linkage.forward_dynamics"). Tangents along the model's parameters fall back to
autodiff of the plain functions; linkages outside the analytical derivatives' coverage (spherical and free joints,
:func:`~jaxse3.linkage._derivatives.covered`) are differentiated by autodiff of the plain recursion altogether.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxse3 import rod as rods
from jaxse3.lie.tangents import accumulate, custom_rule, jvp_of_rest
from jaxse3.linkage._derivatives import covered, inverse_dynamics_derivatives
from jaxse3.linkage._dynamics import (
    check_state,
    generalized_forces,
    inverse_dynamics_and_mass,
    inverse_dynamics_autodiff,
)
from jaxse3.linkage._model import Linkage

__all__ = [
    "inverse_dynamics",
    "generalized_forces_derivatives",
    "forward_dynamics",
    "forward_dynamics_jacobians",
]


def _id_jvp(primals, tangents):
    linkage, q, qd, qdd = primals
    _, dq, dqd, dqdd = tangents
    r = inverse_dynamics_derivatives(linkage, q, qd, qdd)
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
    fn = _id if covered(linkage) else inverse_dynamics_autodiff
    return fn(linkage, args["q"], args["qd"], args["qdd"])


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


def _fd_jacobians(linkage, q, qd, u):
    qdd, chol = _fd_parts(linkage, q, qd, u)
    r = inverse_dynamics_derivatives(linkage, q, qd, qdd)  # at q̈ = FD
    Tq, Tqd, Tu = generalized_forces_derivatives(linkage, q, qd, u)
    solve = lambda A: jax.scipy.linalg.cho_solve(chol, A)
    return qdd, solve(Tq - r.dq), solve(Tqd - r.dqd), solve(Tu)


def _fd_jvp(primals, tangents):
    linkage, q, qd, u = primals
    _, dq, dqd, du = tangents
    qdd, Jq, Jqd, Ju = _fd_jacobians(linkage, q, qd, u)
    rest = jvp_of_rest(_fd_plain, primals, tangents, analytic=(1, 2, 3))
    return qdd, accumulate(qdd, [(Jq, dq), (Jqd, dqd), (Ju, du)], rest)


_fd = custom_rule("linkage.forward_dynamics", _fd_plain, _fd_jvp)


def forward_dynamics(
    linkage: Linkage, q: Float[Array, " nq"], qd: Float[Array, " nv"], u: Float[Array, " n_inputs"]
) -> Float[Array, " nv"]:
    """q̈ = FD(q, q̇, u) = M(q)⁻¹(τ(q, q̇, u) − ID(q, q̇, 0)) (seed 003 eq. (4)), (nv,). Its ``custom_jvp`` rule runs the
    analytical Jacobians (eqs. (7), (9); :func:`forward_dynamics_jacobians`)."""
    args = check_state("forward_dynamics", linkage, q=q, qd=qd, u=u)
    fn = _fd if covered(linkage) else _fd_plain
    return fn(linkage, args["q"], args["qd"], args["u"])


def forward_dynamics_jacobians(
    linkage: Linkage, q: Float[Array, " nq"], qd: Float[Array, " nv"], u: Float[Array, " n_inputs"]
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv n_inputs"]]:
    """(∂FD/∂q, ∂FD/∂q̇, ∂FD/∂u) (seed 003 eqs. (7), (9)): one forward dynamics, one derivative pass at q̈ = FD."""
    args = check_state("forward_dynamics_jacobians", linkage, q=q, qd=qd, u=u)
    if not covered(linkage):
        raise ValueError(
            "forward_dynamics_jacobians: the analytical derivatives do not cover spherical or free joints yet; "
            "differentiate jaxse3.linkage.forward_dynamics with jax.jacfwd"
        )
    return _fd_jacobians(linkage, args["q"], args["qd"], args["u"])[1:]
