"""IDSVA FO (seed 002 eqs. (7)–(8)) against autodiff of an independent reference RNEA, and the custom_jvp registration
of ``rnea`` and ``rnea_derivatives`` (jacfwd / jacrev / hessian run the analytical algorithms).

The comparison of FO with nested autodiff of the plain RNEA on every test model is in
``test_rnea_second_order_derivatives.py::test_against_nested_autodiff`` (one jitted oracle per model for FO and SO,
compiled once). Each test here compiles one jitted function (ours and the oracle together).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3.lie.rules import RULE_CALLS
from jaxse3.rigid import integrate, rnea, rnea_derivatives
from jaxse3.rigid._rnea_derivatives import ground_pass
from jaxse3.rigid._topology import topology
from tests.rigid import conftest, reference
from tests.rigid.derivative_oracles import plain_rnea, relative_error
from tests.rigid.test_rnea_second_order_derivatives import FAST


@pytest.mark.slow
def test_first_order_against_reference_and_tau():
    """Against jacfwd of the independent reference RNEA (with external forces); the forward pass reproduces τ."""
    m = conftest.model("floating")
    q, v, a, f = conftest.random_state(m, seed=2)

    @jax.jit
    def both():
        z = jnp.zeros(m.nv)
        ref = jax.jacfwd(lambda d, x, y: reference.rnea(m, q, x, y, f, dq=d), (0, 1, 2))(z, v, a)  # one trace
        g = ground_pass(m, q, v, a, f)
        tau = jnp.einsum("ai,ai->a", g.S, g.fC[topology(m).joint])
        return rnea_derivatives(m, q, v, a, f), ref, tau, reference.rnea(m, q, v, a, f)

    ours, ref, tau, tau_ref = both()
    for x, r in zip(ours, ref):
        assert relative_error(x, r) < 1e-10
    assert relative_error(tau, tau_ref) < 1e-12


def test_registration_first_and_second_order():
    """jax.jacfwd / jacrev / hessian of the public rnea run the IDSVA rules (trace-time counters) and agree with plain
    autodiff of the library's uninstrumented recursion, in tangent coordinates."""
    m = conftest.model("floating")
    q, v, a, _ = conftest.random_state(m, seed=4)
    z = jnp.zeros(m.nv)
    w = jax.random.normal(jax.random.PRNGKey(1), (m.nv,))

    def scalar(fn):
        return lambda d, v: 0.5 * jnp.sum(jnp.sin(fn(m, q, v, a, dq=d) * w))

    def ours(m, q, v, a, dq):
        return rnea(m, integrate(m, q, dq), v, a)

    def jac():
        return jax.jacfwd(lambda d, v: ours(m, q, v, a, d), (0, 1))(z, v)

    def hess():
        return jax.hessian(scalar(ours), (0, 1))(z, v)

    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    RULE_CALLS.clear()
    jax.eval_shape(jac)  # tracing only: which rules a first derivative runs
    assert RULE_CALLS["rigid.rnea"] > 0 and RULE_CALLS["rigid.rnea_derivatives"] == 0
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    RULE_CALLS.clear()
    jax.eval_shape(hess)
    assert RULE_CALLS["rigid.rnea_derivatives"] > 0

    @jax.jit
    def everything():
        jac_rev = jax.jacrev(lambda d, v: ours(m, q, v, a, d), (0, 1))(z, v)
        jac_ref = jax.jacfwd(lambda d, v: plain_rnea(m, q, v, a, dq=d), (0, 1))(z, v)
        return (jac(), jac_rev, hess()), (jac_ref, jac_ref, jax.hessian(scalar(plain_rnea), (0, 1))(z, v))

    got, want = everything()
    for x, r in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert relative_error(x, r) < 1e-10


def test_bad_input():
    m = conftest.model("serial")
    q, v, a, _ = conftest.random_state(m)
    with pytest.raises(ValueError, match="nq"):
        rnea_derivatives(m, q[:-1], v, a)
    with pytest.raises(ValueError, match="nv"):
        rnea(m, q, v, a[:-1])
    with pytest.raises(ValueError, match="f_ext"):
        rnea_derivatives(m, q, v, a, jnp.zeros((m.nb, 3)))


def test_derivatives_at_rest_and_neutral():
    """At the neutral configuration with v = a = 0 only gravity acts; the rules stay finite and exact."""
    name = FAST[1]
    m = conftest.model(name)
    q = conftest.rigid.neutral_configuration(m)
    z = jnp.zeros(m.nv)
    ours, ref = jax.jit(lambda: (rnea_derivatives(m, q, z, z), jax.jacfwd(lambda d: plain_rnea(m, q, z, z, dq=d))(z)))()
    assert relative_error(ours[0], ref) < 1e-10
    assert float(jnp.max(jnp.abs(ref))) > 1e-2  # gravity really acts
    assert float(jnp.max(jnp.abs(ours[1]))) == 0.0


def test_inertia_parts_and_coriolis_blocks():
    """The by-parts spatial-inertia transform and the block form of B(I, x) equal their 6×6 definitions
    (Xᵀ I X with X = Ad_{H⁻¹} = [[Rᵀ, 0], [−Rᵀp̃, Rᵀ]]; (x×*) I − I (x×) + (I x)×̄* with the matrices written here)."""
    from jaxse3.rigid import _spatial, spatial_inertia
    from jaxse3.rigid._spatial import CoriolisBlocks

    rng = np.random.default_rng(3)

    def hat(x):
        return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])

    for _ in range(5):
        L = rng.normal(size=(3, 3))
        I = np.asarray(spatial_inertia(rng.uniform(0.5, 2.0), rng.normal(size=3), L @ L.T + np.eye(3)))
        R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        p, x = rng.normal(size=3), rng.normal(size=6)
        X = np.block([[R.T, np.zeros((3, 3))], [-R.T @ hat(p), R.T]])
        world = _spatial.inertia_to_parent(jnp.asarray(R), jnp.asarray(p), _spatial.inertia_parts(jnp.asarray(I)))
        Iw = X.T @ I @ X
        np.testing.assert_allclose(world.matrix(), Iw, rtol=0, atol=1e-12 * np.abs(Iw).max())
        np.testing.assert_allclose(world.apply(jnp.asarray(x)), Iw @ x, rtol=0, atol=1e-12 * np.abs(Iw).max())
        w, u = hat(x[:3]), hat(x[3:])
        cross_m = np.block([[w, np.zeros((3, 3))], [u, w]])  # x×
        n, f = np.split(Iw @ x, 2)
        bar = -np.block([[hat(n), hat(f)], [hat(f), np.zeros((3, 3))]])  # (Ix)×̄*: (F×̄*) y = y ×* F
        B = -cross_m.T @ Iw - Iw @ cross_m + bar  # x×* = −(x×)ᵀ
        blocks = CoriolisBlocks.of(world, jnp.asarray(x), world.apply(jnp.asarray(x)))
        y = rng.normal(size=6)
        for ours, ref in (
            (blocks.matrix(), B),
            (blocks.apply(jnp.asarray(y)), B @ y),
            (blocks.apply_transpose(jnp.asarray(y)), B.T @ y),
        ):
            np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12 * np.abs(B).max())
        assert np.abs(B[:, 3:]).max() < 1e-12 * np.abs(B).max()  # the vanishing right block column
