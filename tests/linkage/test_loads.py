"""Point wrenches on linkages (:class:`jaxse3.linkage.PointLoad`, seed 003 §6.1, eqs. (53), (59)): their generalised
forces equal the virtual work J_kᵀ𝓕 with the body Jacobian J_k from autodiff of the forward kinematics alone; a one-rod
linkage with a world wrench at its tip equals :mod:`jaxse3.rod` with the same load; the derivatives of ID with loads
(the pose dependence of world wrenches through E^S) match central differences, at the straight rest state and at a
random state; statics' load continuation scales them with gravity."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk, rigid, rod, se3
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material

ROD = rod.Rod(
    length=0.3,
    section=CircularSection(0.01, 0.008),
    material=Material(E=1e5, rho=1000.0, nu=0.5, damping=10.0),
    basis=LegendreBasis((1, 1, 1, None, None, None)),
    n_gauss=3,
)
LINKS = [
    lk.Link.rigid(
        "link", None, "revolute", rigid.spatial_inertia(0.3, (0, 0, -0.05), 1e-4 * np.eye(3)), axis=(0, 1, 0, 0, 0, 0)
    ),
    lk.Link.soft("rod", "link", ROD, se3.exp(jnp.array([0.0, 1.2, 0.3, 0.0, 0.0, -0.05]))),
    lk.Link.rigid("hook", "rod", "fixed", rigid.spatial_inertia(0.02, (0.01, 0, 0), 1e-6 * np.eye(3))),
]
LOADS = (
    lk.PointLoad("hook", (0.01, -0.02, 0.03, 0.5, -0.2, 0.1), "world"),
    lk.PointLoad("rod", (0.02, 0.0, -0.01, 0.1, 0.3, -0.4), "local", point=2),
    lk.PointLoad("rod", (0.0, 0.01, 0.0, -0.3, 0.0, 0.2), "world"),
    lk.PointLoad("link", (0.0, 0.05, 0.0, 0.0, 0.0, 0.0), "local"),
)
LOADED = lk.Linkage(LINKS, gravity=(0.2, 0.0, -9.81), loads=LOADS)
FREE = lk.Linkage(LINKS, gravity=(0.2, 0.0, -9.81))


def _state(seed):
    if seed is None:
        return (jnp.zeros(LOADED.nq),) * 3
    k = jax.random.split(jax.random.PRNGKey(seed), 3)
    return tuple(0.7 * jax.random.normal(key, (LOADED.nv,)) for key in k)


@jax.jit
def _poses_and_body_jacobians(q):
    """The points' poses g and body Jacobians J from autodiff of the forward kinematics alone."""
    g = lk.forward_kinematics(LOADED, q)
    dg = jax.jacfwd(lambda q: lk.forward_kinematics(LOADED, q))(q)  # (n_points, 4, 4, nv)
    J = jax.vmap(lambda g, d: jax.vmap(lambda c: se3.vee(se3.inv(g) @ c), in_axes=-1, out_axes=-1)(d))(g, dg)
    return g, J


@pytest.mark.parametrize("seed", [None, 1])
def test_point_loads_do_virtual_work_and_have_exact_derivatives(seed):
    q, v, a = _state(seed)
    ids = jax.jit(lambda q, v, a: (lk.inverse_dynamics(LOADED, q, v, a), lk.inverse_dynamics(FREE, q, v, a)))
    loaded, free = ids(q, v, a)
    g, J = (np.asarray(x) for x in _poses_and_body_jacobians(q))
    work = np.zeros(LOADED.nv)
    for load in LOADS:
        k = LOADED.points_of(load.link).start + (load.point % LOADED.links[LOADED.index(load.link)].n_points)
        R, wrench = g[k, :3, :3], np.asarray(load.wrench)
        w = wrench if load.frame == "local" else np.concatenate([R.T @ wrench[:3], R.T @ wrench[3:]])
        work = work + J[k].T @ w
    np.testing.assert_allclose(free - loaded, work, rtol=1e-10, atol=1e-12)
    r = jax.jit(lambda q, v, a: lk.inverse_dynamics_derivatives(LOADED, q, v, a))(q, v, a)
    np.testing.assert_allclose(r.tau, loaded, rtol=1e-12, atol=1e-14)
    eps = 1e-6
    tau = jax.jit(lambda q: lk.inverse_dynamics_autodiff(LOADED, q, v, a))
    central = np.stack([(tau(q + e) - tau(q - e)) / (2 * eps) for e in np.eye(LOADED.nv) * eps], axis=1)
    np.testing.assert_allclose(r.dq, central, rtol=1e-6, atol=1e-7 * np.abs(central).max())


def test_a_tip_wrench_on_a_one_rod_linkage_equals_the_rods():
    cdm = rod.cdm_rod(n_gauss=3, orders=(1, 1, 1, 1, 1, 1))
    wrench = jnp.array([0.01, -0.02, 0.03, 0.5, -0.2, 0.4])
    linkage = lk.Linkage([lk.Link.soft("rod", None, cdm)], cdm.gravity, loads=[lk.PointLoad("rod", wrench, "world")])
    k = jax.random.split(jax.random.PRNGKey(2), 3)
    q, v, a = (0.5 * jax.random.normal(key, (cdm.n_dof,)) for key in k)
    u = jnp.array([1.0, 2.0, 0.0, 3.0, 0.5])
    loads = rod.Loads.at_tip(cdm, wrench, "world")

    @jax.jit
    def both(q, v, a, u):
        got = lk.generalized_forces(linkage, q, v, u) - lk.inverse_dynamics(linkage, q, v, a)
        return got, rod.generalized_forces(cdm, q, v, u, loads) - rod.inverse_dynamics(cdm, q, v, a)

    got, want = both(q, v, a, u)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())


def test_scaled_scales_gravity_and_loads():
    half = LOADED.scaled(0.5)
    np.testing.assert_allclose(half.gravity, 0.5 * LOADED.gravity)
    for a, b in zip(half.loads, LOADED.loads):
        np.testing.assert_allclose(a.wrench, 0.5 * b.wrench)
        assert (a.link, a.frame, a.point) == (b.link, b.frame, b.point)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: lk.PointLoad("hook", np.zeros(6), "body"), "'frame' must be 'local' or 'world'"),
        (lambda: lk.PointLoad("hook", np.zeros(3)), "'wrench' must be 6 finite numbers"),
        (lambda: lk.Linkage(LINKS, loads=[lk.PointLoad("nope", np.zeros(6))]), "not a link"),
        (lambda: lk.Linkage(LINKS, loads=[lk.PointLoad("hook", np.zeros(6), point=3)]), "the link has 1"),
    ],
)
def test_bad_loads_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()
