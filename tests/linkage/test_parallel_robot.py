"""The hybrid parallel robot of seed 003 §6.1 (``sim.scenarios.parallel_robot``): sizes, a consistent start, and its
statics.

Oracle under gravity alone: the structure is symmetric under turns of 120° about the vertical, so the platform sinks
straight down without turning, and each pillar stays straight, compressed by its tip load (a ball and a third of the
platform) and its own weight: the tip sinks by F L/(EA) + ρ g L²/(2E) — exact for the first-order elongation basis,
whose linear axial strain the self-weight produces. Under the default wrench the platform moves along the applied
force and turns with the applied moment, with the loops closed to round-off.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk
from jaxse3.sim import scenarios, solve_statics


@pytest.fixture(scope="module")
def robots():
    return {"weight": scenarios.parallel_robot(wrench=np.zeros(6)), "loaded": scenarios.parallel_robot()}


@eqx.filter_jit
def _platform_and_closure_error(params, q):
    """The platform's pose and the closures' error at q (one compiled program instead of op-by-op dispatch)."""
    linkage = params.linkage
    pose = lk.forward_kinematics(linkage, q)[linkage.points_of("platform")][0]
    return pose, lk.closure_error(linkage, params.closures, q)


def test_sizes_and_a_consistent_start():
    system, u = scenarios.parallel_robot()
    linkage, closures = system.params.linkage, system.params.closures
    assert (linkage.nq, linkage.nv, system.n_dof, u.shape) == (63, 63, 63, (0,))  # 3 × 18 + 3 × 3, as the paper
    assert sum(c.k for c in closures) == 12
    pose, error = _platform_and_closure_error(system.params, jnp.zeros(63))
    np.testing.assert_allclose(error, 0.0, atol=1e-15)
    np.testing.assert_allclose(pose[:3, 3], [0.0, 0.0, 0.155], atol=1e-15)


def test_statics_under_gravity_is_the_symmetric_compression(robots):
    system, u = robots["weight"]
    sol = solve_statics(system, u)
    pose, error = _platform_and_closure_error(system.params, sol.q)
    linkage = system.params.linkage
    rod = linkage.links[linkage.index("pillar1")].body
    E, rho, L, g = 1e6, 1000.0, 0.15, 9.81
    area = 0.015 * 0.03
    plate = rho * np.sqrt(3.0) / 4 * 0.2**2 * 0.01
    tip_load = (plate / 3 + 0.005) * g
    sink = tip_load * L / (E * area) + rho * g * L**2 / (2 * E)
    assert float(rod.length) == L
    np.testing.assert_allclose(pose[:3, 3], [0.0, 0.0, 0.155 - sink], rtol=0, atol=1e-12)
    np.testing.assert_allclose(pose[:3, :3], np.eye(3), atol=1e-12)
    np.testing.assert_allclose(error, 0.0, atol=1e-13)


def test_statics_under_the_wrench_follows_the_load(robots):
    system, u = robots["loaded"]
    sol = solve_statics(system, u)
    pose, error = _platform_and_closure_error(system.params, sol.q)
    force, moment = np.asarray(scenarios.PARALLEL_WRENCH[3:]), np.asarray(scenarios.PARALLEL_WRENCH[:3])
    shift = np.asarray(pose[:2, 3])
    assert np.dot(shift, force[:2]) > 0.9 * np.linalg.norm(shift) * np.linalg.norm(force[:2])  # along the force
    turn = np.arctan2(float(pose[1, 0]), float(pose[0, 0]))
    assert np.sign(turn) == np.sign(moment[2]) and abs(turn) > 0.05
    np.testing.assert_allclose(error, 0.0, atol=1e-13)
