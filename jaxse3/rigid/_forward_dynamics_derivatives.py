"""First-order derivatives of forward dynamics a = FD(q, v, τ) by the chain rule (seed 002 digest §6 item 9).

Differentiating ``ID(q, v, FD(q, v, τ)) = τ`` once (q derivatives in the tangent space with the right perturbation):
``FD_x = −M⁻¹ ID_x`` for x ∈ {q, v} and ``FD_τ = M⁻¹``, with ``ID_x`` IDSVA FO evaluated at ``a = FD(q, v, τ)``
(:mod:`jaxse3.rigid._rnea_derivatives`). The second order is in
:mod:`jaxse3.rigid._forward_dynamics_second_order_derivatives`; the differentiable ``jaxse3.rigid.forward_dynamics``,
whose ``custom_jvp`` rule is the first-order chain rule, in :mod:`jaxse3.rigid._rules`.
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jaxtyping import Array, ArrayLike, Float

from jaxse3.rigid._forward_dynamics import forward_dynamics as _forward_dynamics_plain
from jaxse3.rigid._model import Model, check_state, check_vector
from jaxse3.rigid._rnea_derivatives import _first_order

__all__ = ["forward_dynamics_derivatives", "check_fd_state"]


def check_fd_state(
    fname: str,
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
    f_ext: Float[ArrayLike, "nb 6"] | None,
) -> tuple[Float[Array, " nq"], Float[Array, " nv"], Float[Array, " nv"], Float[Array, "nb 6"] | None]:
    """Trace-time shape checks of the arguments of forward dynamics; returns ``(q, v, tau, f_ext or None)``."""
    q, v, *f_ext = check_state(fname, model, q, v, None, f_ext)
    return q, v, check_vector(fname, model, "tau", tau, "nv"), (f_ext[0] if f_ext else None)


def forward_dynamics_derivatives(
    model: Model,
    q: Float[ArrayLike, " nq"],
    v: Float[ArrayLike, " nv"],
    tau: Float[ArrayLike, " nv"],
    f_ext: Float[ArrayLike, "nb 6"] | None = None,
) -> tuple[Float[Array, "nv nv"], Float[Array, "nv nv"], Float[Array, "nv nv"]]:
    """``(∂a/∂q, ∂a/∂v, ∂a/∂τ = M⁻¹)`` of forward dynamics, each (nv, nv): ``FD_x = −M⁻¹ ID_x`` at a = FD(q, v, τ)."""
    q, v, tau, f_ext = check_fd_state("forward_dynamics_derivatives", model, q, v, tau, f_ext)
    a = _forward_dynamics_plain(model, q, v, tau, f_ext)
    dtau_dq, dtau_dv, M = _first_order(model, q, v, a, f_ext)
    factor = jsl.cho_factor(M)
    Minv = jsl.cho_solve(factor, jnp.eye(model.nv, dtype=M.dtype))
    return -Minv @ dtau_dq, -Minv @ dtau_dv, Minv
