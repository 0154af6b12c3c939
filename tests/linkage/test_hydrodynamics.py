"""A linkage in water (seed 003 §6.3, eqs. (62)–(66); :class:`jaxse3.linkage.Fluid`): buoyancy, added mass, drag.

Oracles: the drag dissipates (the generalised force it adds does negative work at every state); a body as dense as
the water weighs nothing; the added mass adds Σ_k J_kᵀ𝓜_Ak J_k to M; the analytical derivatives (drag in 𝓝_k, the
weight as a point load) against autodiff of the plain recursion and central differences, at rest (where the
regularised speed keeps them finite) and at a random state.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk, rigid

from .test_linkage import HYBRID, _random_state


def _in_water(**fluid):
    links = list(HYBRID.links)
    hook = links[3]  # a rigid body with its own hydrodynamic coefficients
    links[3] = lk.Link.rigid(
        hook.name,
        hook.parent,
        "fixed",
        hook.body,
        hook.placement,
        volume=5e-5,
        drag=(1e-4, 1e-4, 1e-4, 0.5, 0.8, 0.8),
        added_mass=np.diag([1e-4, 1e-4, 1e-4, 0.02, 0.05, 0.05]),
    )
    return lk.Linkage(links, HYBRID.gravity, HYBRID.armature, fluid=lk.Fluid(**fluid))


WET = _in_water()


def test_drag_dissipates_and_buoyancy_lightens():
    vacuum = lk.Linkage(WET.links, WET.gravity, WET.armature)

    @jax.jit
    def velocity_terms(q, v):
        zero = jnp.zeros_like(v)
        extra = lk.inverse_dynamics(WET, q, v, zero) - lk.inverse_dynamics(WET, q, zero, zero)
        coriolis = lk.inverse_dynamics(vacuum, q, v, zero) - lk.inverse_dynamics(vacuum, q, zero, zero)
        return extra, coriolis

    for seed in range(3):
        q, v, _ = _random_state(WET, seed, 1.0)
        extra, coriolis = velocity_terms(q, v)
        # the added mass's Coriolis terms do no work, the drag's force opposes the motion
        assert float(v @ (extra - coriolis)) > 0.0
    # as dense as the water: a rod (ρ = 1000 kg/m³) in water of the same density, without the rigid bodies' weight
    rod_only = lk.Linkage([HYBRID.links[0], HYBRID.links[1], HYBRID.links[2]], fluid=lk.Fluid(density=1000.0))
    dry_links = lk.Linkage(rod_only.links[:2])
    q, _, _ = _random_state(rod_only, 4)

    @jax.jit
    def at_rest(q):
        zero = jnp.zeros(rod_only.nv)
        return lk.inverse_dynamics(dry_links, q[:2], zero[:2], zero[:2]), lk.inverse_dynamics(rod_only, q, zero, zero)

    heavy, wet = at_rest(q)
    np.testing.assert_allclose(wet[2:], 0.0, atol=1e-12)
    np.testing.assert_allclose(wet[:2], heavy, rtol=1e-12, atol=1e-14)


def test_added_mass_enters_the_mass_matrix():
    q, _, _ = _random_state(WET, 5)
    dry = lk.Linkage(WET.links, WET.gravity, WET.armature)

    @jax.jit
    def mass_matrices(q):
        s = lk.point_states(WET, q)
        added = s.M - lk.point_states(dry, q).M
        want = lk.mass_matrix(dry, q) + jnp.einsum("kin,kij,kjm->nm", s.J, added, s.J)
        return lk.mass_matrix(WET, q), want, added

    got, want, added = mass_matrices(q)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert float(jnp.abs(added).max()) > 1e-3


@pytest.fixture(scope="module")
def wet_derivatives():
    analytic = jax.jit(lambda q, v, a: lk.inverse_dynamics_derivatives(WET, q, v, a))
    plain = jax.jit(jax.jacfwd(lambda q, v, a: lk.inverse_dynamics_autodiff(WET, q, v, a), argnums=(0, 1, 2)))
    return analytic, plain


@pytest.mark.parametrize("seed", [None, 6])
def test_derivatives_in_water_match_autodiff_and_central_differences(wet_derivatives, seed):
    q, v, a = (jnp.zeros(WET.nq),) * 3 if seed is None else _random_state(WET, seed)
    analytic, plain = wet_derivatives
    r = analytic(q, v, a)
    for got, want in zip((r.dq, r.dqd, r.M), plain(q, v, a)):
        assert np.isfinite(np.asarray(got)).all()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * max(np.abs(want).max(), 1.0))
    idf = jax.jit(lambda q, v: lk.inverse_dynamics_autodiff(WET, q, v, a))
    eps = 1e-6
    E = np.eye(WET.nv) * eps
    fd_q = np.stack([(idf(q + e, v) - idf(q - e, v)) / (2 * eps) for e in E], axis=1)
    fd_v = np.stack([(idf(q, v + e) - idf(q, v - e)) / (2 * eps) for e in E], axis=1)
    for got, want in ((r.dq, fd_q), (r.dqd, fd_v)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7 * max(np.abs(want).max(), 1.0))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: lk.Fluid(density=-1.0), "'density' must be a finite non-negative"),
        (lambda: lk.Fluid(speed_scale=0.0), "'speed_scale' must be a finite positive"),
        (lambda: lk.Linkage(HYBRID.links, fluid=1000.0), "'fluid' must be a Fluid"),
        (lambda: lk.Link.rigid("a", None, "fixed", np.eye(6), volume=-1.0), "'volume' must be finite and non-negative"),
        (lambda: lk.Link.rigid("a", None, "fixed", np.eye(6), drag=np.ones(3)), r"'drag' must have shape \(6,\)"),
        (lambda: lk.Link.rigid("a", None, "fixed", np.eye(6), added_mass=-np.eye(6)), "positive semi-definite"),
    ],
)
def test_bad_fluids_are_named(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_rigid_link_defaults_have_no_hydrodynamics():
    link = lk.Link.rigid(
        "a", None, "revolute", rigid.spatial_inertia(1.0, (0, 0, 0), np.eye(3)), axis=(0, 0, 1, 0, 0, 0)
    )
    assert float(link.volume) == 0.0 and not np.asarray(link.drag).any() and not np.asarray(link.added_mass).any()


def _floating_quaternions():
    """A free base and a spherical joint in quaternion coordinates (the local charts of the derivative pass), and a
    configuration."""
    types = ("free", "spherical", "revolute", "prismatic")
    model = rigid.auto_tree(4, bf=1.5, joint_types=types, floating_base=True, seed=3)
    return lk.Linkage.from_rigid(model), rigid.random_configuration(model, jax.random.PRNGKey(5))


LOADS = (
    lk.PointLoad("hook", (0.01, -0.02, 0.03, 0.5, -0.2, 0.1), "world"),
    lk.PointLoad("arm", (0.02, 0.0, -0.01, 0.1, 0.3, -0.4), "local", point=2),
    lk.PointLoad("branch", (0.0, 0.01, 0.0, -0.3, 0.0, 0.2), "world"),
)


@pytest.mark.parametrize("name", ["hybrid", "loaded in water", "exponential", "quaternions"])
def test_the_derivative_pass_at_rest_equals_the_general_pass_at_zero_rates(name):
    """The derivative pass at rest (:func:`~jaxse3.linkage._derivatives.tree_derivatives_with_wrenches` with
    q̇ = q̈ = None: poses, Jacobians, 𝓕^C, P^S, E^S only; statics' path) gives ID(q, 0, 0) and ∂ID/∂q equal to the
    general pass at q̇ = q̈ = 0 (:func:`~jaxse3.linkage.tree_derivatives`), with rods, exponential and quaternion joints,
    world and local loads, buoyancy and drag (zero at rest), and the same extra point wrench in both, at a random
    configuration and at q = 0 (straight rods, zero rotations); values observed equal to round-off."""
    from jaxse3.linkage._derivatives import PointWrench, tree_derivatives_with_wrenches
    from tests.linkage.test_linkage import EXPONENTIAL

    if name == "quaternions":
        linkage, q = _floating_quaternions()
    else:
        linkage = {
            "hybrid": HYBRID,
            "loaded in water": lk.Linkage(WET.links, WET.gravity, WET.armature, WET.fluid, LOADS),
            "exponential": EXPONENTIAL,
        }[name]
        q = _random_state(linkage, 4)[0]
    wrench = jnp.array([0.1, -0.2, 0.05, 0.3, 0.4, -0.5])

    def applied(frame):  # a wrench fixed in the last link's end frame, with a made-up explicit derivative
        end = frame(len(linkage.links) - 1, -1)
        return [PointWrench(len(linkage.links) - 1, -1, wrench, 0.1 * end.J)], None

    @jax.jit
    def both(q):
        zero = jnp.zeros(linkage.nv)
        general = tree_derivatives_with_wrenches(linkage, q, zero, zero, applied)[0]
        rest = tree_derivatives_with_wrenches(linkage, q, None, None, applied)[0]
        return general, rest

    # at a random configuration and, in coordinates, at q = 0 (straight rods, zero rotations: no NaN)
    configurations = [q] if name == "quaternions" else [q, jnp.zeros_like(q)]
    for q in configurations:
        general, rest = both(q)
        assert rest.dqd is None and rest.M is None
        for a, b in ((rest.tau, general.tau), (rest.dq, general.dq)):
            assert np.isfinite(a).all()
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * np.abs(b).max())
