"""Linkages through :mod:`jaxse3.optim` with no change there: a hybrid linkage (an actuated revolute shoulder carrying a
soft rod, under gravity) as a :class:`~jaxse3.sim.System` from :func:`jaxse3.sim.linkage_system`.

Oracles: the gradient of a shooting problem's cost (Newmark through the implicit-function rule, whose backward pass
runs the linkage's analytical rules — counted) against central differences of the same cost; iLQR through implicit
Euler reaches a point where the gradient of J through a plain rollout of its own step map vanishes.
"""

import jax
import jax.numpy as jnp
import numpy as np

from jaxse3 import linkage as lk, rigid, rod
from jaxse3.lie.tangents import RULE_CALLS
from jaxse3.optim import DiscreteProblem, Problem, costs, implicit_euler, solve_ddp
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material
from jaxse3.sim import linkage_system

TARGET = jnp.array([0.12, 0.15, -0.02])


def _arm():
    """A shoulder turning about z (actuated) with a 0.2 m rod along its x axis, twisting and bending in the plane of the
    swing (4 DoF; E = 5 MPa, so the rod follows the shoulder with a few millimetres of lag)."""
    body = rigid.spatial_inertia(0.3, (0.02, 0.0, 0.0), np.diag([1e-4, 2e-4, 2e-4]))
    r = rod.Rod(
        length=0.2,
        section=CircularSection(0.01),
        material=Material(E=5e6, rho=1000.0, nu=0.5, damping=100.0),
        basis=LegendreBasis((1, None, 1, None, None, None)),
        n_gauss=2,
    )
    links = [
        lk.Link.rigid("shoulder", None, "revolute", body, axis=(0, 0, 1, 0, 0, 0)),
        lk.Link.soft("arm", "shoulder", r),
    ]
    return linkage_system(lk.Linkage(links))


SYSTEM = _arm()


def _running(t, q, qd, u):
    return 1e-3 * costs.effort(u)


def _terminal(q, qd):
    e = costs.tip_position_error(SYSTEM, q, TARGET)
    return 0.5 * jnp.sum(e * e) + 1e-3 * 0.5 * jnp.sum(qd * qd)


def test_a_linkage_shooting_gradient_is_exact_and_runs_the_linkage_rules():
    problem = Problem(
        SYSTEM,
        0.2,
        running=_running,
        terminal=_terminal,
        n_knots=3,
        kind="linear",
        n_save=11,
        # Newton to round-off, so that the differenced runs are the exact step map whose derivative the
        # implicit-function rule gives (at 1e−13 they differ from it by ~1e−5 relative)
        simulation=dict(solver="newmark", dt=5e-3, newton_tol=1e-15),
    )
    knots = jnp.array([[0.02], [0.05], [-0.01]])
    cost = jax.jit(lambda k: problem.cost(k))
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = RULE_CALLS["linkage.inverse_dynamics"]
    grad = jax.jit(jax.grad(problem.cost))(knots)
    assert RULE_CALLS["linkage.inverse_dynamics"] > before  # the backward pass runs the analytical rule
    h = 1e-5
    central = np.array([(cost(knots + h * e) - cost(knots - h * e)) / (2 * h) for e in np.eye(3).reshape(3, 3, 1)])
    np.testing.assert_allclose(np.ravel(grad), central, rtol=1e-6, atol=1e-9 * np.abs(central).max())


def test_ilqr_on_a_linkage_reaches_a_first_order_optimum():
    """iLQR (Gauss–Newton DDP) through implicit Euler steps of the linkage (Newton with its analytical FD Jacobians)
    converges to a point where the gradient of J through a plain rollout of the same step map vanishes."""
    dt, horizon = 0.02, 10
    step = implicit_euler(SYSTEM, dt)
    running = lambda x, u: dt * 1e-3 * costs.effort(u)
    terminal = lambda x: _terminal(x[: SYSTEM.n_dof], x[SYSTEM.n_dof :])
    problem = DiscreteProblem(step, running, terminal, jnp.zeros(2 * SYSTEM.n_dof), horizon, SYSTEM.n_inputs)
    us0 = jnp.zeros((horizon, SYSTEM.n_inputs))
    # J and its gradient through a plain rollout: one program for the start and the solution
    plain = jax.jit(jax.value_and_grad(lambda us: problem.cost(problem.rollout(us), us)))
    sol = jax.jit(lambda us: solve_ddp(problem, us, method="ilqr", max_iters=100, th_stop=1e-12))(us0)
    assert bool(sol.converged), sol.message
    assert float(sol.cost) < 0.5 * float(plain(us0)[0])
    assert float(jnp.max(jnp.abs(plain(sol.us)[1]))) < 1e-5
