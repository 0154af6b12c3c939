"""Forward dynamics a = FD(q, v, τ) = M(q)⁻¹ (τ − h(q, v) + Σ J_iᵀ f_ext,i) by CRBA and a Cholesky solve.

The bias ``h(q, v) = C(q, v) v + g(q)`` is the RNEA at zero acceleration (:func:`nonlinear_effects`). Cost O(n³) in
the solve, which is cheap next to the unrolled recursions at the sizes of interest (n ≤ 50); seed 002 digest §6
item 9 gives the derivatives of this map by the chain rule (:mod:`jaxse3.rigid._forward_dynamics_derivatives`,
:mod:`jaxse3.rigid._forward_dynamics_second_order_derivatives`).

:func:`forward_dynamics` here is the plain map (ordinary autodiff through CRBA, RNEA and the solve); the public
``jaxse3.rigid.forward_dynamics`` has the same value with the ``custom_jvp`` rule of :mod:`jaxse3.rigid._rules`.
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl
from jaxtyping import Array

from jaxse3.rigid._crba import _crba
from jaxse3.rigid._model import Model, check_state, check_vector
from jaxse3.rigid._rnea import _rnea

__all__ = ["nonlinear_effects", "forward_dynamics"]


def nonlinear_effects(model: Model, q: Array, v: Array) -> Array:
    """h(q, v) = C(q, v) v + g(q) = rnea(q, v, 0), shape (nv,)."""
    q, v = check_state("nonlinear_effects", model, q, v)
    return _rnea(model, q, v, jnp.zeros_like(v))


def forward_dynamics(model: Model, q: Array, v: Array, tau: Array, f_ext: Array | None = None) -> Array:
    """Joint accelerations a (nv,) with ``rnea(q, v, a, f_ext) = τ``; ``f_ext`` as in :func:`jaxse3.rigid.rnea`."""
    args = check_state("forward_dynamics", model, q, v, None, f_ext)
    tau = check_vector("forward_dynamics", model, "tau", tau, "nv")
    q, v = args[0], args[1]
    bias = _rnea(model, q, v, jnp.zeros_like(v), *args[2:])
    factor = jsl.cho_factor(_crba(model, q))
    return jsl.cho_solve(factor, tau - bias)
