"""The CDM circle-tracking problem: its reference circle, its running cost (tracking only after the lead-in, effort
always) against the formula at the rod's rest shape, equal problems with equal costs (shared compiled programs), and
bad arguments named. Cheap: no simulation (the example ``examples/cdm_track_circle.py`` optimises it). The DDP
form of CDM reaching: its costs and a short rollout."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3.optim import scenarios

PROBLEM = scenarios.cdm_track_circle(radius=0.04, centre=(0.01, -0.02, -0.48), t_final=1.0, lead=0.2)


def test_reference_circle():
    circle = PROBLEM.running.circle
    np.testing.assert_allclose(circle(0.2), [0.05, -0.02, -0.48], atol=1e-15)
    np.testing.assert_allclose(circle(1.0), [0.05, -0.02, -0.48], atol=1e-15)
    np.testing.assert_allclose(circle(0.6), [-0.03, -0.02, -0.48], atol=1e-15)
    np.testing.assert_allclose(circle(0.4), [0.01, 0.02, -0.48], atol=1e-15)
    radii = [np.linalg.norm(np.asarray(circle(t)) - [0.01, -0.02, -0.48]) for t in np.linspace(0.2, 1.0, 7)]
    np.testing.assert_allclose(radii, 0.04, rtol=1e-14)


def test_running_cost_at_rest():
    system = PROBLEM.system
    q = jnp.zeros(system.n_dof)
    tip = np.asarray(system.tip(q))
    np.testing.assert_allclose(tip, [0.0, 0.0, -0.5], atol=1e-12)
    u = jnp.arange(1.0, 6.0)
    w_track, w_u = scenarios.CDM_TRACK_WEIGHTS
    running = jax.jit(PROBLEM.running)
    np.testing.assert_allclose(running(0.1, q, q, u), w_u * 0.5 * 55.0, rtol=1e-14)  # lead-in: effort only
    e = tip - np.asarray(PROBLEM.running.circle(0.6))
    np.testing.assert_allclose(running(0.6, q, q, u), 0.5 * w_track * e @ e + w_u * 0.5 * 55.0, rtol=1e-13)
    assert PROBLEM.kind == "bspline" and float(PROBLEM.lower[0]) == 0.0 and float(PROBLEM.upper[0]) == 20.0


def test_equal_problems_have_equal_costs():
    again = scenarios.cdm_track_circle(radius=0.04, centre=(0.01, -0.02, -0.48), t_final=1.0, lead=0.2)
    assert again.running == PROBLEM.running and hash(again.running) == hash(PROBLEM.running)
    assert scenarios.cdm_track_circle(radius=0.05).running != PROBLEM.running


def test_bad_arguments():
    with pytest.raises(ValueError, match="radius must be positive"):
        scenarios.cdm_track_circle(radius=0.0)
    with pytest.raises(ValueError, match="lead must lie in"):
        scenarios.cdm_track_circle(lead=2.0)
    with pytest.raises(ValueError, match=r"centre must be a point \(3,\)"):
        scenarios.cdm_track_circle(centre=(0.0, 0.0))


def test_cdm_reach_steps():
    """The DDP form of CDM reaching: horizon and bounds, the costs against their formulas, a rollout under tension
    that bends the rod (the implicit step converges on the stiff rod at 20 ms), bad arguments named."""
    problem, us0, bounds = scenarios.cdm_reach_steps(target=(0.1, 0.05, -0.45), t_final=0.1, dt=0.02)
    assert problem.horizon == 5 and us0.shape == (5, 5) and bounds == dict(lower=0.0, upper=20.0)
    n = problem.x0.shape[0] // 2
    w_u, w_T, w_v = scenarios.CDM_REACH_WEIGHTS
    u = jnp.arange(1.0, 6.0)
    np.testing.assert_allclose(problem.running(problem.x0, u), 0.02 * w_u * 0.5 * 55.0, rtol=1e-14)
    x = problem.x0.at[n:].set(0.1)
    e = np.array([0.0, 0.0, -0.5]) - np.array([0.1, 0.05, -0.45])
    np.testing.assert_allclose(problem.terminal(x), w_T * 0.5 * e @ e + w_v * 0.5 * 0.01 * n, rtol=1e-12)
    xs = jax.jit(lambda us: problem.rollout(us))(jnp.full((5, 5), 5.0).at[:, 1:].set(0.0))
    assert bool(jnp.all(jnp.isfinite(xs)))
    assert float(jnp.linalg.norm(problem.step.system.tip(xs[-1, :n]) - jnp.array([0.0, 0.0, -0.5]))) > 1e-3
    with pytest.raises(ValueError, match="must be a positive multiple of dt"):
        scenarios.cdm_reach_steps(t_final=0.1, dt=0.03)
    with pytest.raises(ValueError, match=r"target must be a point \(3,\)"):
        scenarios.cdm_reach_steps(target=(0.0, 0.0))
