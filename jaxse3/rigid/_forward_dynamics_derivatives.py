"""First- and second-order derivatives of forward dynamics a = FD(q, v, τ) by the chain rule (seed 002 digest §6 item 9).

Differentiating ``ID(q, v, FD(q, v, τ)) = τ`` once and twice (x, y ∈ {q, v}, q derivatives in the tangent space with
the right perturbation; ``∂M/∂x`` terms only for q components; tensors ``[a, first, second]``):

* ``FD_x = −M⁻¹ ID_x``, ``FD_τ = M⁻¹``;
* ``FD_xy[:, x, y] = −M⁻¹ [ID_xy[:, x, y] + Σ_l ∂M[:, l]/∂x FD_y[l] + Σ_l ∂M[:, l]/∂y FD_x[l]]``;
* ``FD_qτ[:, x, t] = −M⁻¹ Σ_l ∂M[:, l]/∂q_x M⁻¹[l, t]``; ``FD_vτ = FD_ττ = 0``.

``ID_x`` and ``ID_xy`` are IDSVA FO/SO evaluated at ``a = FD(q, v, τ)``
(:mod:`jaxse3.rigid.rnea_derivatives`, :mod:`jaxse3.rigid.rnea_second_order_derivatives`). The differentiable
:func:`forward_dynamics` defined here carries the first-order rule as a ``custom_jvp``; its second derivatives then run
through :func:`jaxse3.rigid.rnea_derivatives` (second-order contractions) and the linear solve.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jaxtyping import Array

from jaxse3.lie.rules import RULE_CALLS
from jaxse3.lie.tangents import accumulate, jvp_of_rest
from jaxse3.rigid.forward_dynamics import forward_dynamics as _forward_dynamics_plain
from jaxse3.rigid.model import Model, check_vector
from jaxse3.rigid.rnea import _rnea, check_state
from jaxse3.rigid.rnea_derivatives import ANALYTIC, _first_order, _rnea_derivatives, tangent_of
from jaxse3.rigid.rnea_second_order_derivatives import rnea_second_order_derivatives

__all__ = ["forward_dynamics", "forward_dynamics_derivatives", "forward_dynamics_second_order_derivatives"]


def _checked(fname, model, q, v, tau, f_ext):
    q, v, *f_ext = check_state(fname, model, q, v, None, f_ext)
    return q, v, check_vector(fname, model, "tau", tau, "nv"), (f_ext[0] if f_ext else None)


def forward_dynamics_derivatives(model: Model, q, v, tau, f_ext=None) -> tuple[Array, Array, Array]:
    """``(∂a/∂q, ∂a/∂v, ∂a/∂τ = M⁻¹)`` of forward dynamics, each (nv, nv): ``FD_x = −M⁻¹ ID_x`` at a = FD(q, v, τ)."""
    q, v, tau, f_ext = _checked("forward_dynamics_derivatives", model, q, v, tau, f_ext)
    a = _forward_dynamics_plain(model, q, v, tau, f_ext)
    dtau_dq, dtau_dv, M = _first_order(model, q, v, a, f_ext)
    factor = jsl.cho_factor(M)
    Minv = jsl.cho_solve(factor, jnp.eye(model.nv, dtype=M.dtype))
    return -Minv @ dtau_dq, -Minv @ dtau_dv, Minv


def forward_dynamics_second_order_derivatives(model: Model, q, v, tau) -> tuple[Array, Array, Array, Array]:
    """``(d2a_dq2, d2a_dv2, d2a_dqdv, d2a_dqdtau)`` of forward dynamics, each (nv, nv, nv), layouts
    ``[a, q, q]``, ``[a, v, v]``, ``[a, q, v]``, ``[a, q, τ]`` (``H[:, x, y] = ∂_y ∂_x a``; the q-q block inside a
    multi-DoF joint is not symmetric, as for inverse dynamics). Chain rule of digest §6 item 9 (module docstring)."""
    q, v, tau, _ = _checked("forward_dynamics_second_order_derivatives", model, q, v, tau, None)
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


@jax.custom_jvp
def _forward_dynamics(model, q, v, tau, f_ext):
    return _forward_dynamics_plain(model, q, v, tau, f_ext)


def _forward_dynamics_jvp(primals, tangents):
    # M da = dτ − ∂τ/∂q δ − ∂τ/∂v dv − ∂τ/∂(model, f_ext)·d(model, f_ext) at a = FD(q, v, τ).
    model, q, v, tau, f_ext = primals
    _, dq, dv, dtau, _ = tangents
    RULE_CALLS["rigid.forward_dynamics"] += 1
    a = _forward_dynamics(model, q, v, tau, f_ext)
    dtau_dq, dtau_dv, M = _rnea_derivatives(model, q, v, a, f_ext)
    rest = jvp_of_rest(lambda m, _q, _v, _tau, f: -_rnea(m, q, v, a, f), primals, tangents, ANALYTIC)
    terms = [(lambda t: t, dtau), (lambda t: -(dtau_dq @ tangent_of(model, q, t)), dq), (lambda t: -(dtau_dv @ t), dv)]
    rhs = accumulate(a, terms, rest)
    return a, jsl.cho_solve(jsl.cho_factor(M), rhs)


_forward_dynamics.defjvp(_forward_dynamics_jvp, symbolic_zeros=True)


def forward_dynamics(model: Model, q: Array, v: Array, tau: Array, f_ext: Array | None = None) -> Array:
    """Joint accelerations a (nv,) with ``rnea(q, v, a, f_ext) = τ``, differentiable by the analytical algorithms.

    Same value and arguments as the plain :func:`jaxse3.rigid.forward_dynamics.forward_dynamics`; its ``custom_jvp``
    rule is ``da = M⁻¹ (dτ − ∂τ/∂q δ − ∂τ/∂v dv)`` with IDSVA FO, whose own rule is IDSVA SO, so ``jax.jacfwd`` and
    ``jax.hessian`` of forward dynamics run the analytical algorithms (quaternion tangents as in
    :func:`jaxse3.rigid.rnea_derivatives.tangent_of`).
    """
    q, v, tau, f_ext = _checked("forward_dynamics", model, q, v, tau, f_ext)
    return _forward_dynamics(model, q, v, tau, f_ext)
