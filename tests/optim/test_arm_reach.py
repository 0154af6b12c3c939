"""The arm-reaching benchmark problem (:func:`jaxse3.optim.scenarios.arm_reach`) is Crocoddyl's: its initial cost
(gravity compensation from q0) equals the one Crocoddyl 3.2.1 computes for the same problem, its effort limits are the
URDF's; targets may be traced (``vmap``); and ``jaxse3 optimize arm-reach`` writes a solution whose controls replay
to its states and respect the effort limits. Needs example-robot-data (CI's Pinocchio step)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("urdf_parser_py")
try:
    from jaxse3 import rigid

    rigid.example_robot_path("talos_arm")
except (ImportError, FileNotFoundError):
    pytest.skip("example-robot-data is not installed", allow_module_level=True)

from jaxse3 import cli
from jaxse3.optim import Solution, scenarios

#: ShootingProblem.calc of Crocoddyl 3.2.1 (with pin 4.0.0) on the same problem, from the rollout of
#: ``problem.quasiStatic([x0] * 100)`` (2026-11-26)
CROCODDYL_INITIAL_COST = 1175.1772136821132


def test_problem_is_crocoddyls():
    problem, us0 = scenarios.arm_reach()
    cost = jax.jit(lambda us: problem.cost(problem.rollout(us), us))(us0)
    np.testing.assert_allclose(cost, CROCODDYL_INITIAL_COST, rtol=1e-11)
    # gravity compensation holds the arm at q0 for the first step
    np.testing.assert_allclose(problem.step(problem.x0, us0[0]), problem.x0, atol=1e-12)
    from urdf_parser_py.urdf import URDF

    with open(rigid.example_robot_path("talos_arm")) as f:
        robot = URDF.from_xml_string(f.read())
    model = scenarios.talos_arm()
    effort = [next(j.limit.effort for j in robot.joints if j.name == name) for name in model.names]
    np.testing.assert_allclose(scenarios.TALOS_ARM["effort_limit"], effort)
    np.testing.assert_allclose(model.armature, scenarios.TALOS_ARM["armature"])


def test_targets_may_be_traced():
    targets = jnp.array([[0.0, 0.0, 0.4], [0.1, -0.05, 0.35]])
    x = jnp.concatenate([jnp.asarray(scenarios.TALOS_ARM["q0"]) + 0.1, jnp.zeros(7)])
    batched = jax.vmap(lambda p: scenarios.arm_reach(p)[0].terminal(x))(targets)
    single = [scenarios.arm_reach(p)[0].terminal(x) for p in targets]
    np.testing.assert_allclose(batched, single, rtol=1e-13)
    assert single[0] != single[1]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="frame 'hand' is not a joint"):
        scenarios.arm_reach(frame="hand")
    with pytest.raises(ValueError, match=r"target must be a position \(3,\) or a pose \(4, 4\)"):
        scenarios.arm_reach(target=(0.0, 0.4))
    with pytest.raises(ValueError, match=r"q0 must have shape \(nv,\) = \(7,\)"):
        scenarios.arm_reach(q0=np.zeros(6))


def test_optimize_arm_reach_writes_a_solution_that_replays(tmp_path):
    out = tmp_path / "out"
    argv = ["optimize", "arm-reach", "--max-iters", "4", "--effort-limits", "--out", str(out)]
    assert cli.main(argv) == 0
    sol = Solution.load(out / "arm-reach.npz")
    assert sol.u.shape == (100, 7) and sol.x.shape == (101, 14) and sol.iterations == 4
    assert sol.cost_history[-1] < 0.5 * sol.cost_history[0]
    limit = np.asarray(scenarios.TALOS_ARM["effort_limit"])
    assert np.all(np.abs(sol.u) <= limit + 1e-12)
    problem, _ = scenarios.arm_reach()
    np.testing.assert_allclose(jax.jit(lambda u: problem.rollout(u))(sol.u), sol.x, atol=1e-10)
    assert (out / "arm-reach.png").stat().st_size > 10_000
