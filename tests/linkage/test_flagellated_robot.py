"""The underwater flagellated robot of seed 003 §6.3 (digest §5.6): its sizes, the Jacobians of its forward dynamics
(analytical, eqs. (7), (9) on the tree with the hydrodynamic terms (62)–(66), against autodiff of the plain dynamics
and a five-point central difference stencil, ≤ 1e−8 relative), the point of the opposite shaft torques (equal ones
turn the body), and a run: it swims along its axis and its body does not turn."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk, sim
from jaxse3.linkage._rules import _fd_plain
from jaxse3.sim import scenarios

ROBOT = scenarios.flagellated_robot_linkage()


def test_flagellated_robot_sizes():
    assert (ROBOT.nq, ROBOT.nv, ROBOT.n_inputs) == (80, 80, 2)  # 6 + 2 + 6 × 12 (the paper's 80 DoF)
    assert [link.joint for link in ROBOT.links[:3]] == ["free", "revolute", "fixed"]
    assert sum(link.joint == "soft" for link in ROBOT.links) == 6
    assert ROBOT.links[0].exponential and ROBOT.fluid is not None
    # 6 flagella × (6 Gauss points + 2 ends) + 9 rigid bodies (the paper's n_p = 80 counts other points)
    assert ROBOT.n_points == 57
    # the six flagella (front and rear differ in length only) are one group of rods, evaluated side by side
    assert lk._dynamics.rod_groups(ROBOT) == ((3, 5, 7, 10, 12, 14),)
    # neutrally buoyant: no net weight on any point
    for i in range(len(ROBOT.links)):
        np.testing.assert_allclose(lk._model.point_inertias(ROBOT, i, jnp.float64).gravity, 0.0, atol=1e-12)


def test_flagellated_robot_forward_dynamics_jacobians():
    k = jax.random.split(jax.random.PRNGKey(3), 2)
    q, qd = 0.2 * jax.random.normal(k[0], (80,)), 0.5 * jax.random.normal(k[1], (80,))
    u = jnp.asarray(scenarios.FLAGELLATED_TORQUES)
    compiled = lambda f: jax.jit(f).lower(q, qd).compile()
    fd = compiled(lambda q, qd: lk.forward_dynamics(ROBOT, q, qd, u))
    Jq, Jqd, _ = compiled(lambda q, qd: lk.forward_dynamics_jacobians(ROBOT, q, qd, u))(q, qd)
    plain = compiled(jax.jacfwd(lambda q, qd: _fd_plain(ROBOT, q, qd, u), argnums=(0, 1)))(q, qd)
    h = 1e-3
    stencil = lambda f, x, e: (8 * (f(x + h * e) - f(x - h * e)) - (f(x + 2 * h * e) - f(x - 2 * h * e))) / (12 * h)
    E = jnp.eye(80)
    for got, want, f, x in ((Jq, plain[0], lambda x: fd(x, qd), q), (Jqd, plain[1], lambda x: fd(q, x), qd)):
        central = np.stack([stencil(f, x, e) for e in E], axis=1)
        scale = np.abs(central).max()
        np.testing.assert_allclose(got, want, atol=1e-12 * scale)
        assert np.abs(np.asarray(got) - central).max() <= 1e-8 * scale


def test_opposite_shaft_torques_leave_the_body_still_and_equal_ones_turn_it():
    """At rest, the body's angular acceleration: zero for the paper's opposite torques (the reactions cancel), about
    its axis for equal ones (the reaction of both shafts)."""
    zero = jnp.zeros(80)
    fd = jax.jit(lambda u: lk.forward_dynamics(ROBOT, zero, zero, u))
    np.testing.assert_allclose(fd(jnp.asarray(scenarios.FLAGELLATED_TORQUES))[:3], 0.0, atol=1e-9)
    turn = fd(jnp.array([0.25, 0.25]))[:3]
    assert turn[0] < -1.0 and np.abs(turn[1:]).max() < 1e-9 * abs(turn[0])


@pytest.mark.slow
def test_flagellated_robot_swims_without_turning():
    """2 s from rest (Kvaerno5, the analytical Jacobian): the body moves forward along its axis (the rear flagella,
    longer, push harder than the front ones pull), stays on the axis, and does not turn while the shafts make more
    than three turns."""
    system, u = scenarios.flagellated_robot()
    traj = sim.simulate(system, u, t_final=2.0, n_save=9)
    assert traj.ok
    swim = scenarios.swimming(ROBOT, traj.q, traj.t)
    assert swim["distance"] > 0.02 and swim["direction"][0] > 0.999
    assert swim["speed"] > 0.02
    assert swim["body_rotation"] < 1e-8
    assert swim["turns_front"] > 3 and swim["turns_rear"] < -3
