"""Generalised forces and forward dynamics of a GVS rod with their analytical Jacobians (seed 003 eqs. (4)–(9), (35)).

* τ(q, q̇, u; loads) = B(q) u − K q − D q̇ + Σ_k J_kᵀ 𝓕ext_k — internal and actuation forces (35) plus the
  generalised external loads (point wrenches, contact); ``∂τ/∂q = ∂(Bu)/∂q − K + ∂(ΣJᵀ𝓕ext)/∂q``, ``∂τ/∂q̇ = −D``.
* FD(q, q̇, u) = M⁻¹(τ − ID(q, q̇, 0)) (eq. (4)); its Jacobians
  ``∂FD/∂q = M⁻¹(∂τ/∂q − ∂ID/∂q)`` (7) and ``∂FD/∂q̇ = M⁻¹(∂τ/∂q̇ − ∂ID/∂q̇)`` (9), with ID's derivatives evaluated at
  q̈ = FD (digest §3), and ``∂FD/∂u = M⁻¹B``.

:func:`generalized_forces` and :func:`forward_dynamics` carry ``custom_jvp`` rules built from these closed forms, so
``jax.jacfwd``, diffrax's implicit solvers, optimistix's Newton and optax run them. Tangents along the rod's parameters
or the loads' values (e.g. when optimising a material) fall back to autodiff of the plain functions.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from jaxse3._chunks import cache_sized
from jaxse3.lie.tangents import accumulate, custom_rule, is_zero, jvp_of_rest
from jaxse3.rod._inverse_dynamics import mass_matrix, rnea
from jaxse3.rod.forces import Loads, actuation_matrix, internal_forces, internal_forces_derivatives
from jaxse3.rod.kinematics import check_state, forward_kinematics
from jaxse3.rod.model import Rod

__all__ = [
    "generalized_forces",
    "generalized_forces_derivatives",
    "forward_dynamics",
    "forward_dynamics_jacobians",
    "Energy",
    "energy",
]


def _f(*arrays):
    return tuple(None if a is None else jnp.asarray(a, dtype=jnp.result_type(float, a)) for a in arrays)


def _u(rod, u, dtype):
    return jnp.zeros((rod.n_tendons,), dtype) if u is None else u


def _loads_terms(rod, q, loads, level):
    """(−Σ Jᵀ𝓕ext, −∂/∂q) from the RNEA recursion without inertia, or zeros."""
    z = jnp.zeros_like(q)
    r = rnea(rod, q, z, z, loads=loads, level=level, inertia=False)
    return r.tau, r.dq


def _tau_plain(rod, q, qd, u, loads):
    tau = internal_forces(rod, q, qd, u)
    if loads is not None:
        tau = tau - _loads_terms(rod, q, loads, "id")[0]
    return tau


def generalized_forces_derivatives(
    rod: Rod,
    q: Float[Array, " n_dof"],
    qd: Float[Array, " n_dof"],
    u: Float[Array, " n_tendons"] | None = None,
    loads: Loads | None = None,
) -> tuple[Float[Array, "n_dof n_dof"], Float[Array, "n_dof n_dof"]]:
    """(∂τ/∂q, ∂τ/∂q̇), each (n_dof, n_dof): D63 for the tendons, eqs. (55), (56), (59)–(61) for the loads."""
    check_state(rod, q=q, qd=qd, u=u)
    q, qd, u = _f(q, qd, u)
    dq, dqd = internal_forces_derivatives(rod, q, qd, u)
    if loads is not None:
        dq = dq - _loads_terms(rod, q, loads, "all")[1]
    return dq, dqd


def _tau_jvp(primals, tangents):
    rod, q, qd, u, loads = primals
    _, dq, dqd, du, _ = tangents
    tau = _tau_plain(rod, q, qd, u, loads)
    state = (
        []
        if is_zero(dq) and is_zero(dqd)
        else list(zip(generalized_forces_derivatives(rod, q, qd, u, loads), (dq, dqd)))
    )
    terms = state + ([(lambda t: actuation_matrix(rod, q) @ t, du)] if rod.n_tendons else [])
    return tau, accumulate(tau, terms, jvp_of_rest(_tau_plain, primals, tangents, analytic=(1, 2, 3)))


_tau = custom_rule("generalized_forces", _tau_plain, _tau_jvp)


def generalized_forces(
    rod: Rod,
    q: Float[Array, " n_dof"],
    qd: Float[Array, " n_dof"],
    u: Float[Array, " n_tendons"] | None = None,
    loads: Loads | None = None,
) -> Float[Array, " n_dof"]:
    """τ = B(q) u − K q − D q̇ + Σ_k J_kᵀ 𝓕ext_k (seed 003 eq. (35) plus the external loads of §6), (n_dof,).

    Args:
        rod: a :class:`~jaxse3.rod.model.Rod`. q, qd: (n_dof,).
        u: tendon tensions (n_tendons,), ≥ 0 pulls; None for no actuation.
        loads: a :class:`~jaxse3.rod.forces.Loads` (point wrenches local/world, cylinder contact) or None.
    """
    check_state(rod, q=q, qd=qd, u=u)
    q, qd, u = _f(q, qd, u)
    return _tau(rod, q, qd, _u(rod, u, q.dtype), loads)


def _fd_parts(rod, q, qd, u, loads):
    """q̈ = FD and M (one RNEA pass at q̈ = 0 with the loads)."""
    z = jnp.zeros_like(q)
    r = rnea(rod, q, qd, z, loads=loads, level="mass")
    rhs = internal_forces(rod, q, qd, u) - r.tau
    chol = jax.scipy.linalg.cho_factor(r.M)
    return jax.scipy.linalg.cho_solve(chol, rhs), chol


def _fd_plain(rod, q, qd, u, loads):
    return _fd_parts(rod, q, qd, u, loads)[0]


@cache_sized
def _fd_jacobians(rod, q, qd, u, loads):
    """q̈ = FD and (∂FD/∂q, ∂FD/∂q̇, ∂FD/∂u) (eqs. (7), (9) and M⁻¹B; (n_dof, 0) without tendons): one forward
    dynamics and one derivative pass at q̈ = FD. (One solve of all the columns together made the CDM's 10 s Kvaerno5
    run 1.3× slower on two cores, 2026-12-05.)"""
    qdd, chol = _fd_parts(rod, q, qd, u, loads)
    r = rnea(rod, q, qd, qdd, loads=loads, level="all")  # ∂ID/∂(q, q̇) at q̈ = FD, loads included (−Σ Jᵀ𝓕ext)
    tq, tqd = internal_forces_derivatives(rod, q, qd, u)
    solve = lambda A: jax.scipy.linalg.cho_solve(chol, A)
    Ju = solve(actuation_matrix(rod, q)) if rod.n_tendons else jnp.zeros((q.shape[0], 0))
    return qdd, solve(tq - r.dq), solve(tqd - r.dqd), Ju


def forward_dynamics_jacobians(
    rod: Rod,
    q: Float[Array, " n_dof"],
    qd: Float[Array, " n_dof"],
    u: Float[Array, " n_tendons"] | None = None,
    loads: Loads | None = None,
) -> tuple[Float[Array, "n_dof n_dof"], Float[Array, "n_dof n_dof"]]:
    """(∂FD/∂q, ∂FD/∂q̇), each (n_dof, n_dof) (seed 003 eqs. (7), (9))."""
    check_state(rod, q=q, qd=qd, u=u)
    q, qd, u = _f(q, qd, u)
    _, Jq, Jqd, _ = _fd_jacobians(rod, q, qd, _u(rod, u, q.dtype), loads)
    return Jq, Jqd


def _fd_jvp(primals, tangents):
    rod, q, qd, u, loads = primals
    _, dq, dqd, du, _ = tangents
    qdd, Jq, Jqd, Ju = _fd_jacobians(rod, q, qd, u, loads)
    terms = [(Jq, dq), (Jqd, dqd)] + ([(Ju, du)] if rod.n_tendons else [])
    return qdd, accumulate(qdd, terms, jvp_of_rest(_fd_plain, primals, tangents, analytic=(1, 2, 3)))


# the primal in chunks under vmap on a CPU
_fd = custom_rule("forward_dynamics", cache_sized(_fd_plain), _fd_jvp)


def forward_dynamics(
    rod: Rod,
    q: Float[Array, " n_dof"],
    qd: Float[Array, " n_dof"],
    u: Float[Array, " n_tendons"] | None = None,
    loads: Loads | None = None,
) -> Float[Array, " n_dof"]:
    """q̈ = FD(q, q̇, u) = M⁻¹(τ + F) (seed 003 eq. (4)), (n_dof,). Custom_jvp: eqs. (7), (9) and M⁻¹B."""
    check_state(rod, q=q, qd=qd, u=u)
    q, qd, u = _f(q, qd, u)
    return _fd(rod, q, qd, _u(rod, u, q.dtype), loads)


class Energy(NamedTuple):
    """The mechanical energy of a rod (:func:`energy`), in J."""

    kinetic: Float[Array, ""]  # ½ q̇ᵀ M(q) q̇
    elastic: Float[Array, ""]  # ½ qᵀ K q
    gravitational: Float[Array, ""]  # −Σ_k m_k a_gᵀ r_k

    @property
    def total(self) -> Float[Array, ""]:
        return self.kinetic + self.elastic + self.gravitational


def energy(rod: Rod, q: Float[Array, " n_dof"], qd: Float[Array, " n_dof"]) -> Energy:
    """The rod's mechanical energy at (q, q̇), in the discretisation the dynamics use, so that its gradient is the
    dynamics' conservative force: kinetic ½ q̇ᵀM(q)q̇ (M of eq. (34)); elastic ½ qᵀKq, the strain energy
    ½ ∫ (ξ − ξ*)ᵀ Σ (ξ − ξ*) dX by the rod's quadrature (K of D64, ξ − ξ* = Φq); gravitational −Σ_k m_k a_gᵀ r_k
    over the computational points (m_k = w_k ρA(X_k), the translational entries of 𝓜_k; r_k the centreline; zero at
    the base). Hence ∂(elastic + gravitational)/∂q = Kq + ID(q, 0, 0) and, along a motion,
    dE/dt = q̇ᵀ(B(q)u − Dq̇ + Σ_k J_kᵀ𝓕ext_k): the tendons, the material damping and the external loads do work on
    it."""
    check_state(rod, q=q, qd=qd)
    q, qd = _f(q, qd)
    kinetic = 0.5 * qd @ mass_matrix(rod, q) @ qd
    elastic = 0.5 * q @ rod.stiffness @ q
    r = forward_kinematics(rod, q)[:, :3, 3] - rod.base_pose[:3, 3]
    gravitational = -jnp.sum(rod.inertia[:, 3] * (r @ rod.gravity))
    return Energy(kinetic, elastic, gravitational)
