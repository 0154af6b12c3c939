"""Natural frequencies and mode shapes of a system about an equilibrium (modal analysis).

Small undamped oscillations δq about a state at rest (q*, q̇ = 0) under constant inputs u obey M(q*) δq̈ + K δq = 0
with the system's residual r(q, q̇, q̈, u) = τ + F − ID (seed 003 eq. (8)):

    K = −∂r/∂q (the tangent stiffness: elastic, geometric from gravity and the loads),   M = −∂r/∂q̈ (the mass matrix),

both from ``jax.jacfwd`` of the residual, i.e. the models' analytical rules (seed 003 eqs. (21), (32); for a rod
:mod:`jaxse3.rod`). The modes solve K φ = ω² M φ. For conservative loads K is symmetric and the problem is solved as
the symmetric eigenproblem of L⁻¹KL⁻ᵀ (M = LLᵀ), with M-orthonormal shapes; follower loads and tendon tensions make
K unsymmetric, and then the eigenvalues of M⁻¹K are used (shapes normalised to φᵀMφ = 1). An eigenvalue ω² < 0 is
an unstable direction (q* not a stable equilibrium: divergence) and a complex pair ω² a flutter instability (Beck's
follower-loaded column): their ω is NaN (and ω² NaN for a complex pair). Damping is left out (undamped modes).
Systems with constraints (closed chains) are not covered.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from jaxse3.sim.system import System

__all__ = ["Modes", "natural_modes"]


class Modes(NamedTuple):
    """Result of :func:`natural_modes`, lowest first."""

    omega: np.ndarray  # (n_dof,) angular frequencies ω [rad/s]; NaN for ω² < 0
    frequency: np.ndarray  # (n_dof,) ω / 2π [Hz]
    shapes: np.ndarray  # (n_dof, n_dof) the mode shapes φ as columns, φᵀMφ = 1
    omega_squared: np.ndarray  # (n_dof,) the eigenvalues ω² (negative: divergence; NaN: a complex pair, flutter)


@eqx.filter_jit
def _stiffness_and_mass(system: System, q, u):
    zero = jnp.zeros_like(q)
    residual = lambda q, qdd: system.residual(system.params, q, zero, qdd, u)
    K, M = jax.jacfwd(residual, argnums=(0, 1))(q, zero)
    return -K, -M


def natural_modes(
    system: System, q: Float[ArrayLike, " n_dof"] | None = None, u: Float[ArrayLike, " n_inputs"] | None = None
) -> Modes:
    """The natural frequencies and mode shapes about the rest state ``q`` (default q = 0) under the constant inputs
    ``u`` (default zero), from the tangent stiffness and the mass matrix of the system's residual (module docstring).
    ``q`` should be an equilibrium under ``u`` (e.g. ``solve_statics(system, u).q``): elsewhere the residual's
    Jacobians still give K and M, but the linearisation omits the unbalanced force."""
    if system.constraint is not None:
        raise ValueError(
            "natural_modes: systems with constraints (closed chains) are not covered; their modes live on the "
            "constraints' tangent space"
        )
    n, m = system.n_dof, system.n_inputs
    q = jnp.zeros(n) if q is None else jnp.asarray(q, dtype=float)
    u = jnp.zeros(m) if u is None else jnp.asarray(u, dtype=float)
    if q.shape != (n,):
        raise ValueError(f"natural_modes: q must have shape ({n},), got {q.shape}")
    if u.shape != (m,):
        raise ValueError(f"natural_modes: u must have shape ({m},) (the system's inputs), got {u.shape}")
    K, M = (np.asarray(a) for a in _stiffness_and_mass(system, q, u))
    L = np.linalg.cholesky(0.5 * (M + M.T))
    Linv = np.linalg.inv(L)
    A = Linv @ K @ Linv.T
    if np.abs(K - K.T).max() <= 1e-10 * np.abs(K).max():
        w2, V = np.linalg.eigh(0.5 * (A + A.T))
        shapes = Linv.T @ V
    else:
        w2, V = np.linalg.eig(A)
        order = np.argsort(w2.real)
        w2, V = w2[order], Linv.T @ V[:, order]
        flutter = np.abs(w2.imag) > 1e-8 * np.abs(w2).max()
        w2, V = np.where(flutter, np.nan, w2.real), V.real
        shapes = V / np.sqrt(np.abs(np.einsum("ik,ij,jk->k", V, M, V)))
    omega = np.sqrt(np.where(w2 >= 0.0, w2, np.nan))
    return Modes(omega, omega / (2.0 * np.pi), shapes, w2)
