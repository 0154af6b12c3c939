"""RNEA against the plain reference of tests/rigid/reference.py, the gravity/potential and energy identities, and
the shape errors. Every model of conftest.MODEL_NAMES, random states (gravity and external wrenches on), jit + vmap."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rigid
from jaxse3.lie.rules import RULE_CALLS
from tests.rigid import reference
from tests.rigid.conftest import MODEL_NAMES, jit, model, random_state


@functools.cache
def _batched(fn_name: str, name: str):
    m = model(name)
    fns = {
        "rnea": lambda q, v, a, f: rigid.rnea(m, q, v, a, f),
        "reference": lambda q, v, a, f: reference.rnea(m, q, v, a, f),
    }
    return jax.jit(jax.vmap(fns[fn_name]))


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_rnea_matches_plain_reference(name):
    m = model(name)
    q, v, a, f = random_state(m, seed=10, batch=3)
    q = q.at[0].set(jit["neutral_configuration"](m))  # exactly zero rotation in every Lie joint
    tau = _batched("rnea", name)(q, v, a, f)
    ref = _batched("reference", name)(q, v, a, f)
    np.testing.assert_allclose(tau, ref, rtol=1e-11, atol=1e-11 * float(jnp.abs(ref).max()))
    np.testing.assert_allclose(jit["rnea"](m, q[2], v[2], a[2], f[2]), tau[2], rtol=1e-12, atol=1e-12)  # vmap == 1


def _potential(m, q):
    """V(q) = −Σ m_i gᵀ c_i with c_i the world centre of mass (m c = the (3:, :3) block of the spatial inertia)."""
    H = rigid.forward_kinematics(m, q)
    mass = m.inertias[:, 5, 5]
    mc = jnp.stack([m.inertias[:, 2, 4], m.inertias[:, 0, 5], m.inertias[:, 1, 3]], axis=1)  # m c̃ → m c
    com_world = jnp.einsum("bij,bj->bi", H[:, :3, :3], mc) + mass[:, None] * H[:, :3, 3]
    return -jnp.sum(com_world @ m.gravity)


def _kinetic(m, q, v):
    """T = ½ Σ V_iᵀ I_i V_i with the body twists V_i = J_i v (body Jacobians, not CRBA)."""
    V = jnp.einsum("bin,n->bi", rigid.body_jacobians(m, q), v)
    return 0.5 * jnp.einsum("bi,bij,bj->", V, m.inertias, V)


@pytest.mark.parametrize("name", ["branched", "floating"])
def test_gravity_torque_is_gradient_of_potential_and_power_balance(name):
    """g(q) = ∂V/∂q (tangent space, right perturbation) and d/dt (T + V) = τ·v along the motion (f_ext = 0)."""
    m = model(name)
    q, v, a, _ = random_state(m, seed=3)

    def energy(dq, w):
        qq = rigid.integrate(m, q, dq)
        return _kinetic(m, qq, w) + _potential(m, qq)

    @jax.jit
    def check():
        zero = jnp.zeros(m.nv)
        grad_v_pot = jax.grad(lambda d: _potential(m, rigid.integrate(m, q, d)))(zero)
        dE_dq, dE_dv = jax.grad(energy, argnums=(0, 1))(zero, v)
        power = dE_dq @ v + dE_dv @ a  # q̇ = v in tangent coordinates, v̇ = a
        return rigid.rnea(m, q, zero, zero), grad_v_pot, power, rigid.rnea(m, q, v, a) @ v

    g, grad_pot, power, tau_v = check()
    np.testing.assert_allclose(g, grad_pot, rtol=1e-11, atol=1e-11 * float(jnp.abs(g).max()))
    np.testing.assert_allclose(power, tau_v, rtol=1e-11)


def test_nonlinear_effects_split():
    """rnea(q, v, 0) − g(q) is quadratic in v (C(q, v)v: scaling v by s scales it by s²) and equals h − g."""
    m = model("floating")
    q, v, _, _ = random_state(m, seed=4)
    zero = jnp.zeros(m.nv)
    g = jit["rnea"](m, q, zero, zero)
    h = jit["nonlinear_effects"](m, q, v)
    np.testing.assert_allclose(h, jit["rnea"](m, q, v, zero), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(jit["nonlinear_effects"](m, q, 3.0 * v) - g, 9.0 * (h - g), rtol=1e-11, atol=1e-10)


def test_external_wrench_is_virtual_power():
    """The f_ext term of τ is −Σ J_iᵀ f_i with the body Jacobians."""
    m = model("floating")
    q, v, a, f = random_state(m, seed=5)
    delta = jit["rnea"](m, q, v, a, f) - jit["rnea"](m, q, v, a)
    np.testing.assert_allclose(delta, -jnp.einsum("bin,bi->n", jit["body_jacobians"](m, q), f), rtol=1e-12, atol=1e-12)


def test_rnea_autodiff_is_rnea_without_rules():
    """``rnea_autodiff`` has the value of ``rnea`` and, by autodiff through the recursion (no custom rule called),
    the Jacobians of IDSVA FO."""
    m = model("floating")
    q, v, a, f = random_state(m, seed=6)
    calls = sum(RULE_CALLS.values())
    tau, dtau_dv = jax.jit(
        lambda: (rigid.rnea_autodiff(m, q, v, a, f), jax.jacfwd(lambda x: rigid.rnea_autodiff(m, q, x, a, f))(v))
    )()
    assert sum(RULE_CALLS.values()) == calls
    np.testing.assert_allclose(tau, jit["rnea"](m, q, v, a, f), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(dtau_dv, rigid.rnea_derivatives(m, q, v, a, f)[1], rtol=1e-11, atol=1e-11)


def test_wrong_sizes_raise_naming_nq_nv():
    m = model("floating")
    q, v, a, f = random_state(m)
    with pytest.raises(ValueError, match=r"q must have shape \(nq,\) = \(17,\)"):
        rigid.rnea(m, q[:-1], v, a)
    with pytest.raises(ValueError, match=r"v must have shape \(nv,\) = \(15,\)"):
        rigid.rnea(m, q, q, a)
    with pytest.raises(ValueError, match=r"a must have shape \(nv,\)"):
        rigid.rnea(m, q, v, a[None])
    with pytest.raises(ValueError, match=r"f_ext must have shape \(nb, 6\) = \(8, 6\)"):
        rigid.rnea(m, q, v, a, f[:, :3])
    with pytest.raises(ValueError, match=r"nq"):
        jax.jit(lambda q: rigid.crba(m, q))(jnp.zeros(3))
    with pytest.raises(ValueError, match=r"tau must have shape \(nv,\)"):
        rigid.forward_dynamics(m, q, v, q)
