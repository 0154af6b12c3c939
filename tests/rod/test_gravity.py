"""The generalised gravity force at rest by world-frame sums (``jaxse3.rod._gravity``) against independent oracles.

Oracles: the RNEA recursions at rest (``rnea(rod, q, None, None, level="all")``: forward and backward passes over the
joints), autodiff of the Kane/Jacobian assembly of :mod:`tests.rod.reference`, and central differences; on spatial
rods (Legendre bases at Magnus order 2 and 4, tapered, tilted base; a precurved PCS rod on runs of constant strain)
and planar ones (on SE(2), tilted out of the world axes, gravity with an out-of-plane component; the planar PCS rod
by the closed form over its runs), at random configurations, strongly bent ones and the straight rod (θ = 0
exactly), under jit and vmap; the closed form's ψ_j against quadrature on both sides of its switch.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rod as R
from jaxse3.rod._gravity import _PSI_SERIES, _psi, gravity_at_rest
from tests.rod import reference as ref
from tests.rod.conftest import relative_error, small_rod
from tests.rod.test_segments import _planar_rods, _rod

_gravity = jax.jit(jax.vmap(gravity_at_rest, in_axes=(None, 0)))
_recursion = jax.jit(jax.vmap(lambda rod, q: R.rnea(rod, q, None, None, level="all"), in_axes=(None, 0)))


def _rods():
    pcs_planar, legendre_planar = _planar_rods()
    precurved = _rod(R.PiecewiseConstantBasis(2), n_gauss=2, xi_star=(0.1, -0.3, 2.0, 1.0, 0.05, 0.0))
    # two runs per basis segment and two of the three planar strains: coordinates that enter several runs' rows
    pcs_subdivided = _rod(
        R.PiecewiseConstantBasis(2, ("elongation", "bend_z")), n_gauss=2, n_segments=4, xi_star=(0, 0, 1.5, 1.1, 0.1, 0)
    )
    return {
        "legendre order 4": small_rod(4),
        "legendre order 2": small_rod(2),
        "pcs runs": precurved,
        "planar pcs": pcs_planar,
        "planar pcs, two runs per segment": pcs_subdivided,
        "planar legendre": legendre_planar,
    }


@pytest.mark.parametrize("name", list(_rods()))
def test_gravity_at_rest_equals_the_recursions(name):
    rod = _rods()[name]
    assert (rod.strain_run > 1) == ("pcs" in name) and rod.planar == ("planar" in name)
    qs = jnp.concatenate([jnp.zeros((1, rod.n_dof)), 0.5 * jax.random.normal(jax.random.PRNGKey(1), (3, rod.n_dof))])
    # strongly bent: on the planar runs s κ then lies on both sides of ψ's switch in each run (|s κ| from 0.1 to 1.1)
    qs = jnp.concatenate([qs, 3.0 * jax.random.normal(jax.random.PRNGKey(1), (1, rod.n_dof))])
    tau, dq = _gravity(rod, qs)
    want = _recursion(rod, qs)
    assert float(jnp.max(jnp.abs(want.dq[1:]))) > 1e-3  # the gravity stiffness is present
    for k in range(qs.shape[0]):
        assert relative_error(tau[k], want.tau[k]) < 1e-12, (name, k)
        assert relative_error(dq[k], want.dq[k]) < 1e-11, (name, k)
    for k in range(qs.shape[0]):  # the value alone, without forming S_α
        value_only, none = gravity_at_rest(rod, qs[k], jacobian=False)
        assert none is None and relative_error(value_only, want.tau[k]) < 1e-12, (name, k)


def test_psi_is_its_integral_on_both_sides_of_its_switch():
    """ψ_j(x) = ∫₀¹ tʲ e^{ixt} dt (the planar runs' closed form) against mpmath's quadrature at 30 digits."""
    import mpmath

    xs = [0.0, 1e-9, -1e-4, 0.3, _PSI_SERIES * (1 - 1e-12), _PSI_SERIES * (1 + 1e-12), -0.7, 2.0, 25.0]
    got = jax.jit(_psi)(jnp.asarray(xs))
    for j in range(3):
        for k, x in enumerate(xs):
            with mpmath.workdps(30):
                want = complex(mpmath.quad(lambda t: t**j * mpmath.expj(x * t), [0, 1]))
            # the recurrence's round-off, ~2ε/x² relative, is largest just above the switch: 2e−15 there
            assert abs(complex(got[j][k]) - want) <= 1e-14 * max(1.0, abs(want)), (j, x, complex(got[j][k]), want)


def test_gravity_at_rest_against_the_kane_assembly_and_central_differences():
    rod = small_rod(4)
    q = 0.4 * jax.random.normal(jax.random.PRNGKey(5), (rod.n_dof,))
    z = jnp.zeros_like(q)
    tau, dq = jax.jit(gravity_at_rest)(rod, q)
    assert relative_error(tau, ref.inverse_dynamics(rod, q, z, z)) < 1e-12
    assert relative_error(dq, jax.jacfwd(ref.inverse_dynamics, argnums=1)(rod, q, z, z)) < 1e-11
    value = jax.jit(lambda x: gravity_at_rest(rod, x, jacobian=False)[0])
    assert relative_error(dq, ref.central_difference(value, q, 1e-5)) < 1e-8


def test_planar_runs_jacobian_is_the_central_difference_of_their_value():
    """The closed form over the runs: its written-out Hessian against central differences of its value, at the straight
    rod and strongly bent (both sides of ψ's switch)."""
    rod = _rods()["planar pcs"]
    value = jax.jit(lambda x: gravity_at_rest(rod, x, jacobian=False)[0])
    for q in (jnp.zeros(rod.n_dof), 3.0 * jax.random.normal(jax.random.PRNGKey(1), (rod.n_dof,))):
        _, dq = jax.jit(gravity_at_rest)(rod, q)
        assert relative_error(dq, ref.central_difference(value, q, 1e-5)) < 1e-8


def test_statics_rule_runs_it_and_parameter_tangents_fall_back_to_autodiff():
    """inverse_dynamics_at_rest's value and rule are these sums; a tangent along the rod's inertia differentiates
    the same plain function (ID at rest is linear in the inertia)."""
    rod = _rods()["planar pcs"]
    q = 0.5 * jax.random.normal(jax.random.PRNGKey(2), (rod.n_dof,))
    tau, dq = jax.jit(gravity_at_rest)(rod, q)
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = R.ROD_RULE_CALLS["inverse_dynamics_at_rest"]
    np.testing.assert_allclose(jax.jit(R.inverse_dynamics_at_rest)(rod, q), tau, rtol=1e-13, atol=1e-15)
    jacobian = jax.jit(jax.jacfwd(R.inverse_dynamics_at_rest, argnums=1))(rod, q)
    np.testing.assert_allclose(jacobian, dq, rtol=0, atol=1e-15)
    assert R.ROD_RULE_CALLS["inverse_dynamics_at_rest"] > before
    scaled = lambda s: R.inverse_dynamics_at_rest(eqx.tree_at(lambda r: r.inertia, rod, rod.inertia * s), q)
    np.testing.assert_allclose(jax.jit(jax.jacfwd(scaled))(1.0), tau, rtol=1e-12, atol=1e-15)
