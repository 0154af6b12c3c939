"""Tendon actuation (D60–D63), point wrenches (53)/(59), cylinder contact (57)–(61), τ and FD with their Jacobians.

Oracles: plain physical definitions in :mod:`tests.rod.reference` (Σ J_kᵀ𝓕_k with autodiff Jacobians of expm-based
poses; the Kane assembly for FD), their autodiff, and central differences; at random states and at the straight rod.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rod as R
from jaxse3.rod.forces import CylinderContact
from tests.rod import reference as ref
from tests.rod.conftest import random_state, relative_error, small_rod


def _loads(rod, q):
    """World tip wrench + local wrench at a Gauss point + a cylinder that some points penetrate."""
    rng = np.random.default_rng(11)
    world = jnp.zeros((rod.n_points, 6)).at[-1].set(jnp.asarray(rng.normal(size=6)))
    local = jnp.zeros((rod.n_points, 6)).at[2].set(jnp.asarray(rng.normal(size=6)))
    g = R.forward_kinematics(rod, q)
    reach = jnp.linalg.norm(g[:, :2, 3], axis=1) + rod.contact_radius
    rc = float(jnp.sort(reach)[len(reach) // 2]) - 1e-3  # about half the points penetrate
    contact = (jnp.asarray(rc), jnp.asarray(2e3), jnp.asarray(1.5))
    return R.Loads(local=local, world=world, contact=CylinderContact(*contact)), dict(
        local=local, world=world, contact=contact
    )


def _tau_all(rod, q, qd, u, loads):
    return R.generalized_forces(rod, q, qd, u, loads)


_tau = jax.jit(_tau_all)


@jax.jit
def _ref_tau_oracles(rod, q, qd, u, plain):
    f = lambda x: ref.generalized_forces(rod, x, qd, u, **plain)
    return f(q), jax.jacfwd(f)(q), ref.central_difference(f, q)


@jax.jit
def _ref_fd_oracles(rod, q, qd, u, plain):
    f = lambda a, b: ref.forward_dynamics(rod, a, b, u, **plain)
    return (f(q, qd),) + jax.jacfwd(f, argnums=(0, 1))(q, qd)


@jax.jit
def _fd_central(rod, q, qd, u, loads):
    return ref.central_difference(lambda x: R.forward_dynamics(rod, x, qd, u, loads), q, 1e-5)


@jax.jit
def _actuation_oracles(rod, q, u):
    f = lambda x: ref.actuation(rod, x, u)
    return f(q), jax.jacfwd(f)(q), ref.central_difference(f, q)


_tau_derivs = jax.jit(R.generalized_forces_derivatives)
_fd = jax.jit(R.forward_dynamics)
_fd_jac = jax.jit(R.forward_dynamics_jacobians)


def test_actuation_and_its_derivative_D60_D63():
    rod = small_rod()
    q, _, _, u = random_state(rod, 0)
    for qq in (q, jnp.zeros_like(q)):
        Bu = R.actuation_matrix(rod, qq) @ u
        want, jac, cd = _actuation_oracles(rod, qq, u)
        np.testing.assert_allclose(Bu, want, rtol=1e-12, atol=1e-14)
        dBu = R.actuation_derivative(rod, qq, u)
        assert bool(jnp.all(jnp.isfinite(dBu)))
        assert relative_error(dBu, jac) < 1e-12
        assert relative_error(dBu, cd) < 1e-8


def test_generalized_forces_with_all_loads_and_derivatives():
    rod = small_rod()
    q, qd, _, u = random_state(rod, 1)
    loads, plain = _loads(rod, q)
    z = jnp.zeros_like(q)
    for qq, qqd in ((q, qd), (z, z)):  # random and straight at rest
        want, jac, cd = _ref_tau_oracles(rod, qq, qqd, u, plain)
        assert relative_error(_tau(rod, qq, qqd, u, loads), want) < 1e-12
        Tq, Tqd = _tau_derivs(rod, qq, qqd, u, loads)
        assert bool(jnp.all(jnp.isfinite(Tq)))
        assert relative_error(Tq, jac) < 1e-10
        assert relative_error(Tq, cd) < 1e-8
        np.testing.assert_allclose(Tqd, -rod.damping, atol=0)


def test_eq54_as_printed_is_wrong_eq59_is_right():
    """Digest §8: ∂𝓕/∂q of a world wrench is ad_𝓕 I_θ J (59), not ad*_𝓕 I_θ J (54 as printed)."""
    rod = small_rod()
    q, _, _, _ = random_state(rod, 2)
    loads = R.Loads.at_tip(rod, jnp.array([0.3, -0.2, 0.1, 1.0, 2.0, -1.5]), frame="world")
    g, J = ref.poses(rod, q), ref.jacobians(rod, q)
    F, dF = R.external_wrenches(rod, loads, g, J)
    want = jax.jacfwd(lambda x: ref.load_wrenches(rod, x, world=loads.world))(q)
    assert relative_error(dF, want) < 1e-12
    printed = -jnp.swapaxes(jax.vmap(ref.ad)(F), -1, -2)[:, :, :3] @ J[:, :3]  # ad*_𝓕 I_θ J
    assert relative_error(printed, want) > 0.1


def test_contact_pushes_inward_and_is_conservative():
    """The wall force points to the axis, and the generalised contact force is −∇ of Σ k_c δ^{p+1}/(p+1)."""
    rod = small_rod()
    q, _, _, _ = random_state(rod, 3)
    loads, plain = _loads(rod, q)
    rc, kc, p = plain["contact"]
    z = jnp.zeros_like(q)
    Q = _tau(rod, q, z, jnp.zeros(rod.n_tendons), R.Loads(contact=loads.contact)) + rod.stiffness @ q

    def potential(x):
        r = ref.poses(rod, x)[:, :3, 3]
        delta = jnp.linalg.norm(r[:, :2], axis=1) + rod.contact_radius - rc
        return jnp.sum(kc * jnp.maximum(delta, 0.0) ** (p + 1) / (p + 1))

    V, dV = jax.jit(jax.value_and_grad(potential))(q)
    assert float(V) > 0
    assert relative_error(Q, -dV) < 1e-10
    f, _ = loads.contact.force(jnp.array([0.2, 0.1, 0.3]), 0.1)
    assert float(jnp.dot(f[:2], jnp.array([0.2, 0.1]))) < 0  # inward
    for r in (jnp.zeros(3), jnp.array([0.0, 0.0, 5.0])):  # on the axis: finite, zero, with finite derivatives
        f, df = loads.contact.force(r, 0.01)
        jf = jax.jacfwd(lambda x: loads.contact.force(x, 0.01)[0])(r)
        assert bool(jnp.all(jnp.isfinite(jnp.concatenate([f, df.ravel(), jf.ravel()]))))
        assert float(jnp.max(jnp.abs(f))) == 0.0


def test_forward_dynamics_and_jacobians_eq7_eq9():
    rod = small_rod()
    q, qd, _, u = random_state(rod, 4)
    loads, plain = _loads(rod, q)
    for qq in (q, jnp.zeros_like(q)):
        qdd = _fd(rod, qq, qd, u, loads)
        want, Aq, Aqd = _ref_fd_oracles(rod, qq, qd, u, plain)
        assert relative_error(qdd, want) < 1e-11
        Jq, Jqd = _fd_jac(rod, qq, qd, u, loads)
        assert relative_error(Jq, Aq) < 1e-9
        assert relative_error(Jqd, Aqd) < 1e-10
        assert relative_error(Jq, _fd_central(rod, qq, qd, u, loads)) < 1e-6


def test_custom_rules_are_used_by_jacfwd():
    rod = small_rod()
    q, qd, _, u = random_state(rod, 5)
    loads, _ = _loads(rod, q)
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = dict(R.ROD_RULE_CALLS)
    Jq, Jqd, Ju = jax.jit(jax.jacfwd(R.forward_dynamics, argnums=(1, 2, 3)))(rod, q, qd, u, loads)
    Tq, Tqd = jax.jit(jax.jacfwd(R.generalized_forces, argnums=(1, 2)))(rod, q, qd, u, loads)
    assert R.ROD_RULE_CALLS["forward_dynamics"] > before.get("forward_dynamics", 0)
    assert R.ROD_RULE_CALLS["generalized_forces"] > before.get("generalized_forces", 0)
    Aq, Aqd = _fd_jac(rod, q, qd, u, loads)
    assert (
        relative_error(Jq, Aq) < 1e-11 and relative_error(Jqd, Aqd) < 1e-11
    )  # same formulas, other order of operations
    M = jax.jit(R.mass_matrix)(rod, q)
    assert relative_error(M @ Ju, jax.jit(R.actuation_matrix)(rod, q)) < 1e-10
    Bq, Bqd = _tau_derivs(rod, q, qd, u, loads)
    assert relative_error(Tq, Bq) < 1e-14 and relative_error(Tqd, Bqd) < 1e-14


def test_bad_loads_shape():
    rod = small_rod()
    z = jnp.zeros(rod.n_dof)
    with pytest.raises(ValueError, match="'world' must have shape"):
        R.generalized_forces(rod, z, z, None, R.Loads(world=jnp.zeros((2, 6))))
    with pytest.raises(ValueError, match="'u' must have shape"):
        R.forward_dynamics(rod, z, z, jnp.zeros(7))
