"""Linkages in the simulation drivers (:func:`jaxse3.sim.linkage_system`): an undamped, unactuated hybrid linkage
conserves its energy (kinetic + gravity + elastic, each written here from the forward kinematics and the rod's
stiffness), and its static equilibrium under gravity is a stationary point of that potential energy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk, rigid, rod, se3, sim
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material

Y = (0.0, 1.0, 0.0, 0.0, 0.0, 0.0)


def _pendulum():
    """A rigid link on a horizontal revolute joint, a Kirchhoff rod on it, a rigid hook on the rod's tip; no damping."""
    r = rod.Rod(
        length=0.3,
        section=CircularSection(0.01, 0.008),
        material=Material(E=1e5, rho=1000.0, nu=0.5, damping=0.0),
        basis=LegendreBasis((1, 1, 1, None, None, None)),
        n_gauss=3,
        magnus_order=2,
    )
    down = se3.exp(jnp.array([0.0, jnp.pi / 2, 0.0, 0.0, 0.0, 0.0]))  # the rod along world −z
    links = [
        lk.Link.rigid("link", None, "revolute", rigid.spatial_inertia(0.3, (0, 0, -0.05), 1e-4 * np.eye(3)), axis=Y),
        lk.Link.soft("rod", "link", r, down),
        lk.Link.rigid("hook", "rod", "fixed", rigid.spatial_inertia(0.02, (0.01, 0, 0), 1e-6 * np.eye(3))),
    ]
    return lk.Linkage(links)


PENDULUM = _pendulum()


def _energy(linkage, q, qd):
    M = lk.point_states(linkage, q).M
    mass = M[:, 3, 3]
    com = jnp.stack([M[:, 2, 4], M[:, 0, 5], M[:, 1, 3]], axis=-1) / jnp.maximum(mass, 1e-300)[:, None]
    g = lk.forward_kinematics(linkage, q)
    c = jnp.einsum("kij,kj->ki", g[:, :3, :3], com) + g[:, :3, 3]
    gravity = -jnp.sum(mass * (c @ linkage.gravity))
    r, s = linkage.links[1].body, linkage.v_slice(1)
    elastic = 0.5 * q[s] @ r.stiffness @ q[s]
    return 0.5 * qd @ lk.mass_matrix(linkage, q) @ qd + gravity + elastic


def test_linkage_system_rejects_quaternion_joints():
    model = rigid.auto_tree(2, joint_types=("revolute", "revolute"), floating_base=True, seed=0)
    with pytest.raises(ValueError, match="nq == nv"):
        sim.linkage_system(lk.Linkage.from_rigid(model))
    with pytest.raises(TypeError, match=r"must be a jaxse3\.linkage\.Linkage"):
        sim.linkage_system(model)


def test_undamped_hybrid_linkage_conserves_energy():
    """Kvaerno5 with the analytical Jacobian (the linkage's rules), tight tolerances, 0.5 s from a swung, bent start."""
    system = sim.linkage_system(PENDULUM)
    q0 = jnp.zeros(PENDULUM.nq).at[0].set(0.8).at[1:4].set(jnp.array([0.5, -0.3, 0.2]))
    traj = sim.simulate(system, t_final=0.5, q0=q0, rtol=1e-9, atol=1e-11, n_save=11)
    assert traj.ok
    energy = jax.vmap(lambda q, qd: _energy(PENDULUM, q, qd))(traj.q, traj.qd)
    swing = np.ptp(np.asarray(jax.vmap(lambda q, qd: 0.5 * qd @ lk.mass_matrix(PENDULUM, q) @ qd)(traj.q, traj.qd)))
    assert swing > 0.01  # it moves: the kinetic energy changes by more than 10 mJ
    np.testing.assert_allclose(energy, energy[0], atol=1e-6 * swing)


def test_static_equilibrium_is_stationary_for_the_potential_energy():
    system = sim.linkage_system(PENDULUM)
    sol = sim.solve_statics(system, q0=jnp.zeros(PENDULUM.nq).at[0].set(0.3))
    assert bool(sol.converged) and bool(sol.stable)
    grad = jax.grad(lambda q: _energy(PENDULUM, q, jnp.zeros_like(q)))(sol.q)
    np.testing.assert_allclose(grad, 0.0, atol=1e-9)
    assert abs(float(sol.q[0])) < 0.2  # it hangs (nearly) down
