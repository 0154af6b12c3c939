"""Magnus expansions of g′ = g ξ̂ between two computational points (seed 003, App. C, eqs. (C1)–(C14)).

Over an interval of length h the pose advances by ``exp(Ω̂)``. With ξ(X) = Φ(X) q + ξ*(X) sampled at the collocation
points of the interval:

* 4th order (Zanna; seed 003 eqs. (C1), (C5)): nodes X_α + (1/2 ∓ √3/6) h,
  ``Ω = (h/2)(ξ₁ + ξ₂) + (√3h²/12) ad_{ξ₁} ξ₂`` and
  ``𝓩 = ∂Ω/∂q = (h/2)(Φ₁ + Φ₂) + (√3h²/12)(ad_{ξ₁}Φ₂ − ad_{ξ₂}Φ₁)``;
* 2nd order (midpoint): ``Ω = h ξ(X_α + h/2)``, ``𝓩 = h Φ(X_α + h/2)``.

The q-dependence of 𝓩 is bilinear, so one function gives 𝓩̇ (C8), the 𝓩̈ term of (C14) and every q-derivative of
𝓩 v: :func:`magnus_dZ` ``(Φ_c, v) = ∂(𝓩(q) v)/∂q = (√3h²/12)(ad_{Φ₁v}Φ₂ − ad_{Φ₂v}Φ₁)``, so that 𝓩̇ = dZ(q̇) and
𝓩̈ = dZ(q̈). :func:`magnus_dZT` is the transpose-side derivative ∂(𝓩(q)ᵀ w)/∂q used in (C29). Both vanish for the
2nd-order scheme. All functions act on one interval; vmap them over intervals.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxse3 import se3

__all__ = ["ORDERS", "collocation_nodes", "magnus_omega", "magnus_Z", "magnus_dZ", "magnus_dZT"]

ORDERS = (2, 4)
_S3 = math.sqrt(3.0)


def collocation_nodes(order: int) -> np.ndarray:
    """Relative positions in [0, 1] of the collocation points of one interval."""
    if order == 4:
        return np.array([0.5 - _S3 / 6, 0.5 + _S3 / 6])
    if order == 2:
        return np.array([0.5])
    raise ValueError(f"magnus: 'order' must be 2 or 4, got {order!r}")


def _c(h):
    return _S3 * h**2 / 12


def magnus_omega(xi_c: jax.Array, h: jax.Array, order: int) -> jax.Array:
    """Ω of one interval (C1). ``xi_c``: (n_c, 6) strains at the collocation points; returns (6,)."""
    if order == 2:
        return h * xi_c[0]
    return h / 2 * (xi_c[0] + xi_c[1]) + _c(h) * se3.ad(xi_c[0]) @ xi_c[1]


def magnus_Z(xi_c: jax.Array, Phi_c: jax.Array, h: jax.Array, order: int) -> jax.Array:
    """𝓩 = ∂Ω/∂q (C4, C5). ``Phi_c``: (n_c, 6, n); returns (6, n)."""
    if order == 2:
        return h * Phi_c[0]
    return h / 2 * (Phi_c[0] + Phi_c[1]) + _c(h) * (se3.ad(xi_c[0]) @ Phi_c[1] - se3.ad(xi_c[1]) @ Phi_c[0])


def magnus_dZ(Phi_c: jax.Array, v: jax.Array, h: jax.Array, order: int) -> jax.Array:
    """∂(𝓩(q) v)/∂q (6, n); equals 𝓩̇ for v = q̇ (C8) and the 𝓩̈ of (C14) for v = q̈."""
    if order == 2:
        return jnp.zeros_like(Phi_c[0])
    return _c(h) * (se3.ad(Phi_c[0] @ v) @ Phi_c[1] - se3.ad(Phi_c[1] @ v) @ Phi_c[0])


def magnus_dZT(Phi_c: jax.Array, w: jax.Array, h: jax.Array, order: int) -> jax.Array:
    """∂(𝓩(q)ᵀ w)/∂q at fixed w (n, n): (√3h²/12)(Φ₂ᵀ adbar_w Φ₁ − Φ₁ᵀ adbar_w Φ₂) (the first term of (C29))."""
    n = Phi_c.shape[-1]
    if order == 2:
        return jnp.zeros((n, n), Phi_c.dtype)
    B = se3.adbar(w)
    return _c(h) * (Phi_c[1].T @ B @ Phi_c[0] - Phi_c[0].T @ B @ Phi_c[1])
