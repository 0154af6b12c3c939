"""Autodiff oracles of the rigid-body derivatives, shared by the derivative test files (jitted once per model).

The oracle is a plain RNEA differentiated by nested ``jax.jacfwd`` in tangent coordinates:
``∂τ/∂q[:, j] = d/dε τ(q ⊕ ε e_j)`` and, with the order of digest 002 §3.1, ``H[:, j, k] = d/dδ_k [d/dε_j τ((q ⊕ δ) ⊕
ε)]``.
The plain RNEA is the library's body-frame recursion ``jaxse3.rigid._rnea._rnea`` (no custom rules; a different
formulation from the ground-frame IDSVA under test, and itself checked against :mod:`tests.rigid.reference` in
``test_rnea.py``): nesting two more ``jacfwd`` levels over the reference, which is already built from nested autodiff,
takes minutes of XLA compilation per model. The first-order derivatives are also checked against the reference itself
(:func:`reference_first_order`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxse3.rigid import integrate, rnea_derivatives, rnea_second_order_derivatives
from jaxse3.rigid._rnea import _rnea  # the unchecked core, without custom rules: the oracle
from tests.rigid import conftest, reference


def reference_first_order(m, q, v, a, f_ext=None):
    z = jnp.zeros(m.nv)
    return (
        jax.jacfwd(lambda d: reference.rnea(m, q, v, a, f_ext, dq=d))(z),
        jax.jacfwd(lambda x: reference.rnea(m, q, x, a, f_ext))(v),
        jax.jacfwd(lambda x: reference.rnea(m, q, v, x, f_ext))(a),
    )


def plain_rnea(m, q, v, a, f_ext=None, dq=None):
    """The library's plain RNEA at q ⊕ dq (no custom_jvp rule), for nested autodiff."""
    return _rnea(m, q if dq is None else integrate(m, q, dq), v, a, f_ext)


def plain_first_order(m, q, v, a, f_ext=None):
    z = jnp.zeros(m.nv)
    return (
        jax.jacfwd(lambda d: plain_rnea(m, q, v, a, f_ext, dq=d))(z),
        jax.jacfwd(lambda x: plain_rnea(m, q, x, a, f_ext))(v),
        jax.jacfwd(lambda x: plain_rnea(m, q, v, x, f_ext))(a),
    )


def plain_second_order(m, q, v, a):
    z = jnp.zeros(m.nv)

    def dtau_dq(d, v):  # ∂τ/∂q at q ⊕ d
        return jax.jacfwd(lambda e: plain_rnea(m, integrate(m, q, d), v, a, dq=e))(z)

    Hqq, Hqv = jax.jacfwd(dtau_dq, (0, 1))(z, v)
    Hvv = jax.jacfwd(jax.jacfwd(lambda x: plain_rnea(m, q, x, a)))(v)
    dM = jax.jacfwd(lambda d: jax.jacfwd(lambda x: plain_rnea(m, q, v, x, dq=d))(a))(z)
    return Hqq, Hvv, Hqv, dM


@functools.cache
def comparison(name: str, batch: int = 2):
    """(ours, oracle) for ``batch`` random states of model ``name``: FO with f_ext (3 arrays) + SO (4 arrays) each,
    computed under one ``jit(vmap(...))``; plus the states."""
    m = conftest.model(name)
    states = conftest.random_state(m, seed=11, batch=batch)

    def both(q, v, a, f):
        ours = (*rnea_derivatives(m, q, v, a, f), *rnea_second_order_derivatives(m, q, v, a))
        ref = (*plain_first_order(m, q, v, a, f), *plain_second_order(m, q, v, a))
        return ours, ref

    ours, ref = jax.jit(jax.vmap(both))(*states)
    return ours, ref, states


def relative_error(x, ref):
    """max |x − ref| / max(1, max |ref|) (per array)."""
    return float(jnp.max(jnp.abs(x - ref)) / jnp.maximum(1.0, jnp.max(jnp.abs(ref))))
