"""RNEA inverse dynamics and its analytical derivatives (seed 003 §4, App. C/D) against independent oracles.

Oracles: the Kane/Jacobian assembly of :mod:`tests.rod.reference` (expm-based poses, autodiff Jacobians), autodiff of
that assembly, and central differences; at random states and at the straight rod at rest (θ = 0 exactly).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rod as R
from tests.rod import reference as ref
from tests.rod.conftest import random_state, relative_error, small_rod

_derivs = jax.jit(R.inverse_dynamics_derivatives)
_id = jax.jit(R.inverse_dynamics)
_ref_id = jax.jit(ref.inverse_dynamics)
_ref_jac = jax.jit(jax.jacfwd(ref.inverse_dynamics, argnums=(1, 2, 3)))
_mass = jax.jit(R.mass_matrix)
_ref_kane = jax.jit(ref.kane)


def _states(rod):
    n = rod.n_dof
    z = jnp.zeros(n)
    q, qd, qdd, _ = random_state(rod, 0)
    return {"random": (q, qd, qdd), "straight_at_rest": (z, z, z), "straight_moving": (z, qd, qdd)}


_id_matrix_path = jax.jit(lambda rod, q, qd, qdd: R.rnea(rod, q, qd, qdd, level="mass").tau)


@pytest.mark.parametrize("order", [4, 2])
def test_id_equals_kane_assembly(order):
    """Both RNEA paths: ID alone (twist rates and 𝓩ᵀw, no (6, n) matrices) and the one that also forms S, M."""
    rod = small_rod(order)
    for name, (q, qd, qdd) in _states(rod).items():
        want = _ref_id(rod, q, qd, qdd)
        assert relative_error(_id(rod, q, qd, qdd), want) < 1e-12, name
        assert relative_error(_id_matrix_path(rod, q, qd, qdd), want) < 1e-12, name


def test_derivatives_against_autodiff_of_kane_and_central_differences():
    rod = small_rod()
    for name, (q, qd, qdd) in _states(rod).items():
        dq, dqd, M = _derivs(rod, q, qd, qdd)
        for got in (dq, dqd, M):
            assert bool(jnp.all(jnp.isfinite(got))), name
        Aq, Aqd, Aqdd = _ref_jac(rod, q, qd, qdd)
        assert relative_error(dq, Aq) < 1e-11, name
        assert relative_error(dqd, Aqd) < 1e-11, name
        assert relative_error(M, Aqdd) < 1e-12, name
    q, qd, qdd = _states(rod)["random"]
    dq, dqd, _ = _derivs(rod, q, qd, qdd)
    f = jax.jit(lambda x: R.rnea(rod, x[0], x[1], qdd).tau)
    assert relative_error(dq, ref.central_difference(lambda x: f(jnp.stack([x, qd])), q, 1e-5)) < 1e-8
    assert relative_error(dqd, ref.central_difference(lambda x: f(jnp.stack([q, x])), qd, 1e-5)) < 1e-8


def test_mass_matrix_symmetric_positive_definite_and_equal_to_kane():
    rod = small_rod()
    for name, (q, qd, _qdd) in _states(rod).items():
        M = _mass(rod, q)
        Mk, _ = _ref_kane(rod, q, qd)
        assert relative_error(M, Mk) < 1e-12, name
        assert relative_error(M, M.T) < 1e-14, name
        assert float(jnp.min(jnp.linalg.eigvalsh(M))) > 0, name


def test_gravity_derivative_sign():
    """Digest §8: the boxed D12 lacks a minus sign; with gravity only (at rest), ∂ID/∂q must match the Kane oracle."""
    rod = small_rod()
    q, _, _, _ = random_state(rod, 3)
    z = jnp.zeros_like(q)
    dq, _, _ = _derivs(rod, q, z, z)
    Aq = _ref_jac(rod, q, z, z)[0]
    assert float(jnp.max(jnp.abs(Aq))) > 1e-3  # gravity terms are present
    assert relative_error(dq, Aq) < 1e-11


_all = jax.jit(lambda rod, q, qd, qdd, loads: R.rnea(rod, q, qd, qdd, loads, level="all"))
_at_rest = jax.jit(lambda rod, q, loads: R.rnea(rod, q, None, None, loads, level="all"))
_rest_jac = jax.jit(jax.jacfwd(R.inverse_dynamics_at_rest, argnums=1))
_id_rest = jax.jit(R.inverse_dynamics_at_rest)


def test_rest_path_equals_the_full_recursion_and_the_kane_oracle():
    """The statics path (qd = qdd = None: no velocity terms, no App. C joint derivatives) gives the full recursion's
    ID, M and ∂ID/∂q at q̇ = q̈ = 0 and ∂ID/∂q̇ = 0, with and without loads, at a random and the straight state;
    inverse_dynamics_at_rest and its own rule equal ID(q, 0, 0) and the autodiff of the Kane assembly."""
    rod = small_rod()
    z = jnp.zeros(rod.n_dof)
    tip = R.Loads.at_tip(rod, jnp.array([0.02, -0.01, 0.03, 0.5, -0.2, 0.4]))
    for name, q in (("random", random_state(rod, 4)[0]), ("straight", z)):
        for loads in (None, tip):
            full, rest = _all(rod, q, z, z, loads), _at_rest(rod, q, loads)
            for field in ("tau", "M", "dq"):
                assert relative_error(getattr(rest, field), getattr(full, field)) < 1e-13, (name, field)
            np.testing.assert_array_equal(rest.dqd, 0.0)
        assert relative_error(_id_rest(rod, q), _id(rod, q, z, z)) < 1e-13, name
        fresh = name == "random"  # rules are traced once and cached: count a fresh trace, at the first state
        if fresh:
            jax.clear_caches()
        before = R.ROD_RULE_CALLS["inverse_dynamics_at_rest"]
        J = jax.jit(jax.jacfwd(R.inverse_dynamics_at_rest, argnums=1))(rod, q)
        assert not fresh or R.ROD_RULE_CALLS["inverse_dynamics_at_rest"] > before  # traced anew: the rule ran
        assert relative_error(J, _ref_jac(rod, q, z, z)[0]) < 1e-11, name
        assert relative_error(_rest_jac(rod, q), J) < 1e-14, name
    with pytest.raises(ValueError, match="both None"):
        R.rnea(rod, z, None, z)


def test_custom_jvp_rule_is_used_by_jacfwd():
    rod = small_rod()
    q, qd, qdd = _states(rod)["random"]
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = R.ROD_RULE_CALLS["inverse_dynamics"]
    J = jax.jacfwd(R.inverse_dynamics, argnums=(1, 2, 3))(rod, q, qd, qdd)
    assert R.ROD_RULE_CALLS["inverse_dynamics"] > before
    dq, dqd, M = _derivs(rod, q, qd, qdd)
    for a, b in zip(J, (dq, dqd, M)):
        assert relative_error(a, b) < 1e-14


def test_tangent_along_rod_parameters_falls_back_to_autodiff():
    """Differentiating ID w.r.t. a material parameter (through the rod's inertia) still works and is exact."""
    rod = small_rod()
    q, qd, qdd = _states(rod)["random"]

    def id_of_scale(s):
        return R.inverse_dynamics(_scaled(rod, s), q, qd, qdd)

    d = jax.jacfwd(id_of_scale)(1.0)
    np.testing.assert_allclose(d, _id(rod, q, qd, qdd), rtol=1e-10, atol=1e-14)  # ID is linear in the inertia


def _scaled(rod, s):
    return eqx.tree_at(lambda r: r.inertia, rod, rod.inertia * s)


def test_jit_vmap_batch_of_states_and_rods():
    rod = small_rod()
    qs = jnp.stack([random_state(rod, s)[0] for s in range(3)])
    z = jnp.zeros_like(qs)
    batched = jax.vmap(_id, in_axes=(None, 0, 0, 0))(rod, qs, z, qs)
    for i in range(3):
        assert relative_error(batched[i], _id(rod, qs[i], z[i], qs[i])) < 1e-14
    rods = jax.vmap(lambda s: _scaled(rod, s))(jnp.array([1.0, 2.0]))
    ids = jax.vmap(_id, in_axes=(0, None, None, None))(rods, qs[0], z[0], qs[0])
    assert relative_error(ids[1], 2 * ids[0]) < 1e-13


def test_shape_errors_are_clear():
    rod = small_rod()
    z = jnp.zeros(rod.n_dof)
    with pytest.raises(ValueError, match="'qd' must have shape"):
        R.inverse_dynamics(rod, z, z[:3], z)
