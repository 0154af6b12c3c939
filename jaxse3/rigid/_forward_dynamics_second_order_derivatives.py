"""Second-order derivatives of forward dynamics a = FD(q, v, τ) by the chain rule (seed 002 digest §6 item 9).

Differentiating ``ID(q, v, FD(q, v, τ)) = τ`` twice (x, y ∈ {q, v}, q derivatives in the tangent space with the right
perturbation; ``∂M/∂x`` terms only for q components; tensors ``[a, first, second]``):

* ``FD_xy[:, x, y] = −M⁻¹ [ID_xy[:, x, y] + Σ_l ∂M[:, l]/∂x FD_y[l] + Σ_l ∂M[:, l]/∂y FD_x[l]]``;
* ``FD_qτ[:, x, t] = −M⁻¹ Σ_l ∂M[:, l]/∂q_x M⁻¹[l, t]``; ``FD_vτ = FD_ττ = 0``,

with the first-order ``FD_x = −M⁻¹ ID_x`` (:mod:`jaxse3.rigid._forward_dynamics_derivatives`), and ``ID_x``, ``ID_xy``
IDSVA FO/SO evaluated at ``a = FD(q, v, τ)`` (:mod:`jaxse3.rigid._rnea_derivatives`,
:mod:`jaxse3.rigid._rnea_second_order_derivatives`).
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jaxtyping import Array, ArrayLike, Float

from jaxse3.rigid._forward_dynamics import forward_dynamics as _forward_dynamics_plain
from jaxse3.rigid._forward_dynamics_derivatives import check_fd_state
from jaxse3.rigid._model import Model
from jaxse3.rigid._rnea_derivatives import _first_order
from jaxse3.rigid._rnea_second_order_derivatives import rnea_second_order_derivatives

__all__ = ["forward_dynamics_second_order_derivatives"]


def forward_dynamics_second_order_derivatives(
    model: Model, q: Float[ArrayLike, " nq"], v: Float[ArrayLike, " nv"], tau: Float[ArrayLike, " nv"]
) -> tuple[Float[Array, "nv nv nv"], Float[Array, "nv nv nv"], Float[Array, "nv nv nv"], Float[Array, "nv nv nv"]]:
    """``(d2a_dq2, d2a_dv2, d2a_dqdv, d2a_dqdtau)`` of forward dynamics, each (nv, nv, nv), layouts
    ``[a, q, q]``, ``[a, v, v]``, ``[a, q, v]``, ``[a, q, τ]`` (``H[:, x, y] = ∂_y ∂_x a``; the q-q block inside a
    multi-DoF joint is not symmetric, as for inverse dynamics). Chain rule of digest §6 item 9 (module docstring)."""
    q, v, tau, _ = check_fd_state("forward_dynamics_second_order_derivatives", model, q, v, tau, None)
    a = _forward_dynamics_plain(model, q, v, tau)
    dtau_dq, dtau_dv, M = _first_order(model, q, v, a)
    Hqq, Hvv, Hqv, dM = rnea_second_order_derivatives(model, q, v, a)
    factor = jsl.cho_factor(M)
    Minv = jsl.cho_solve(factor, jnp.eye(model.nv, dtype=M.dtype))
    da_dq, da_dv = -Minv @ dtau_dq, -Minv @ dtau_dv

    def solve(T):  # −M⁻¹ applied to the first axis of a rank-3 tensor
        return -jnp.einsum("il,ljk->ijk", Minv, T)

    dM_a_dq = jnp.einsum("ilx,ly->ixy", dM, da_dq)  # Σ_l ∂M[:, l]/∂q_x FD_q[l, y]
    d2a_dq2 = solve(Hqq + dM_a_dq + jnp.swapaxes(dM_a_dq, 1, 2))
    d2a_dqdv = solve(Hqv + jnp.einsum("ilx,ly->ixy", dM, da_dv))
    d2a_dqdtau = solve(jnp.einsum("ilx,lt->ixt", dM, Minv))
    return d2a_dq2, solve(Hvv), d2a_dqdv, d2a_dqdtau
