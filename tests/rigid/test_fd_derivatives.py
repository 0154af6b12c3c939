"""Forward-dynamics derivatives by the chain rule (seed 002 digest §6 item 9) against autodiff of the plain forward
dynamics, and the custom_jvp registration of the differentiable ``forward_dynamics``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxse3.lie.rules import RULE_CALLS
from jaxse3.rigid import (
    forward_dynamics,
    forward_dynamics_derivatives,
    forward_dynamics_second_order_derivatives,
    integrate,
)
from jaxse3.rigid._forward_dynamics import forward_dynamics as plain_forward_dynamics
from tests.rigid import conftest
from tests.rigid.derivative_oracles import relative_error


@pytest.mark.slow
def test_against_autodiff_of_plain_forward_dynamics():
    m = conftest.model("floating")
    q, v, tau, _ = conftest.random_state(m, seed=9)
    z = jnp.zeros(m.nv)

    def fd(d, v, tau):
        return plain_forward_dynamics(m, integrate(m, q, d), v, tau)

    def oracle():
        fo = jax.jacfwd(fd, (0, 1, 2))(z, v, tau)

        def dq_at(d, v, tau):  # ∂a/∂q at q ⊕ d
            return jax.jacfwd(lambda e: plain_forward_dynamics(m, integrate(m, integrate(m, q, d), e), v, tau))(z)

        Hqq, Hqv, Hqt = jax.jacfwd(dq_at, (0, 1, 2))(z, v, tau)
        Hvv = jax.jacfwd(jax.jacfwd(fd, 1), 1)(z, v, tau)
        return fo, (Hqq, Hvv, Hqv, Hqt)

    (fo_ref, so_ref), fo, so = jax.jit(
        lambda: (
            oracle(),
            forward_dynamics_derivatives(m, q, v, tau),
            forward_dynamics_second_order_derivatives(m, q, v, tau),
        )
    )()
    for x, r in zip(fo + so, fo_ref + so_ref):
        assert relative_error(x, r) < 1e-9
    assert float(jnp.max(jnp.abs(so_ref[0]))) > 1e-2


def test_registration():
    """jacfwd and hessian of the differentiable forward_dynamics run the analytical rules and agree with autodiff."""
    m = conftest.model("branched")
    q, v, tau, _ = conftest.random_state(m, seed=10)
    w = jax.random.normal(jax.random.PRNGKey(2), (m.nv,))

    def loss(fn):
        return lambda q, v, tau: jnp.sum(jnp.tanh(fn(m, q, v, tau) * w))

    hessian = jax.hessian(loss(forward_dynamics), (0, 1, 2))
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    RULE_CALLS.clear()
    jax.eval_shape(hessian, q, v, tau)  # tracing only: which rules the second derivative runs
    assert RULE_CALLS["rigid.forward_dynamics"] > 0 and RULE_CALLS["rigid.rnea_derivatives"] > 0

    @jax.jit
    def everything():
        ref = jax.hessian(loss(plain_forward_dynamics), (0, 1, 2))(q, v, tau)
        jac = jax.jacfwd(forward_dynamics, (1, 2, 3))(m, q, v, tau)
        return hessian(q, v, tau), ref, jac, forward_dynamics_derivatives(m, q, v, tau)

    ours, ref, jac, fo = everything()
    for x, r in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)):
        assert relative_error(x, r) < 1e-9
    assert relative_error(jac[0], fo[0]) < 1e-10 and relative_error(jac[1], fo[1]) < 1e-10
    assert relative_error(jac[2], fo[2]) < 1e-10
