"""The ``jaxse3`` command: listing, the main job on a short horizon (in-process), bad arguments."""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import jaxse3
from jaxse3 import cli
from jaxse3.sim import Trajectory

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "models")
ARM = os.path.join(MODELS, "hybrid_arm.toml")


def test_list(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in (
        "cdm",
        "cdm-contact",
        "serial-robot",
        "flagellated",
        "parallel-robot",
        "lie-demo",
        "jaxse3 optimize cdm-reach",
        "jaxse3 optimize arm-reach",
    ):
        assert name in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "nope"], "invalid choice"),
        (["run", "cdm", "--t-final", "-1"], "must be positive"),
        (["run", "cdm", "--t-final", "abc"], "expected a float"),
        (["run", "cdm", "--solver", "euler"], "invalid choice"),
        (["run", "cdm", "--solver", "newmark-index3"], "integrates closed chains"),
        (["run", "cdm", "--solver", "generalized-alpha-index3"], "use --solver generalized-alpha"),
        (["run", "cdm", "--rho-inf", "1.5"], "must lie in [0, 1]"),
        (["run", "cdm", "--rho-inf", "0.5"], "--rho-inf is an option of the generalized-alpha solvers only"),
        (["optimize", "arm"], "invalid choice"),
        (["run", "missing.toml"], "no such model file"),
        (["optimize", "cdm-reach", "--target", "0.1", "0.2"], "expected 3 arguments"),
        (["optimize", "cdm-reach", "--t-final", "0.0031"], "whole number of 2 ms steps"),
        (["optimize", "cdm-reach", "--knots", "1"], "--knots must be at least 2"),
        (["optimize", "arm-reach", "--knots", "3"], "--knots: not an option of arm-reach"),
        (["optimize", "arm-reach", "--method", "shooting"], "--method shooting: not a method of arm-reach"),
        (["optimize", "arm-reach", "--method", "fddp"], "invalid choice"),
        (["optimize", "cdm-reach", "--method", "ddp", "--knots", "4"], "--knots: only for --method shooting"),
        (["optimize", "cdm-reach", "--method", "ilqr", "--t-final", "0.05"], "whole number of 20 ms steps"),
        (["optimize", "missing.toml"], "no such model file"),
        (["optimize", ARM], "a model file needs --target X Y Z"),
        (["optimize", ARM, "--target", "0", "0", "0", "--method", "ddp"], "not a method of"),
        (["optimize", ARM, "--target", "0", "0", "0", "--effort-limits"], "--effort-limits: not an option of"),
        (["optimize", "cdm-reach", "--max-input", "3"], "--max-input: not an option of cdm-reach"),
        (["optimize", os.path.join(MODELS, "serial_robot.toml"), "--target", "0", "0", "0"], "prescribed joints"),
        (["optimize", os.path.join(MODELS, "parallel_robot.toml"), "--target", "0", "0", "0"], "has no inputs"),
    ],
)
def test_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code != 0
    assert message in capsys.readouterr().err


def test_bad_arguments_subprocess():
    r = subprocess.run(
        [sys.executable, "-m", "jaxse3.cli", "run", "cdm", "--n-save", "0"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2 and "must be positive" in r.stderr


def test_output_paths_are_checked_before_any_work(tmp_path, capsys):
    """A bad --out or --save stops at once with a message naming the option (nothing is compiled or simulated)."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    for argv, option in (
        (["run", "cdm", "--out", str(blocker / "out")], "--out"),
        (["run", "lie-demo", "--save", str(blocker / "x.json")], "--save"),
    ):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == 2
        assert option in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "lie-demo", "--t-final", "1"], "--t-final: not used by lie-demo"),
        (["run", "lie-demo", "--no-progress"], "--no-progress: not used by lie-demo"),
        (["run", "cdm", "--batch", "5"], "--batch: only for lie-demo"),
        (["run", "lie-demo", "--animate"], "--animate: not used by lie-demo"),
        (["run", "lie-demo", "--compile", "optimized"], "--compile: not used by lie-demo"),
        (["run", "cdm", "--format", "gif"], "--format: an option of --animate"),
    ],
)
def test_options_of_another_example_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit):
        cli.main(argv)
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_run_cdm_twice_the_second_run_is_served_by_the_cache(tmp_path):
    """The main job on a short horizon, as a user runs it (a subprocess); the second run loads both compiled programs
    from the persistent cache (which needs programs without host callbacks), and the output carries its units."""
    env = {**os.environ, "JAXSE3_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "jaxse3.cli", "run", "cdm", "--t-final", "0.05", "--out", str(out)]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert first.returncode == 0, first.stderr
    assert "jaxse3: compiling simulate (kvaerno5, 24 DoF)" in first.stderr and "simulated in" in first.stdout
    assert "0 of 2 programs from the persistent cache" in first.stdout
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert second.returncode == 0, second.stderr
    assert "2 of 2 programs from the persistent cache" in second.stdout
    data = np.load(out / "cdm.npz")
    assert data["t"].shape == (201,) and data["q"].shape == (201, 24) and data["tip"].shape == (201, 3)
    np.testing.assert_allclose(data["t"][-1], 0.05)
    np.testing.assert_allclose(data["tip"][0], [0.0, 0.0, -0.5], atol=1e-12)  # hangs straight down at t = 0
    assert int(data["result"]) == 0
    meta = Trajectory.metadata(out / "cdm.npz")
    assert meta["units"]["t"] == "s" and meta["run"]["t_final"] == 0.05 and meta["run"]["solver"] == "kvaerno5"
    assert (out / "cdm.png").stat().st_size > 10_000


@pytest.mark.slow
def test_optimize_cdm_reach_writes_a_solution_that_replays(tmp_path):
    """``jaxse3 optimize cdm-reach`` on a short horizon: the cost decreases, the npz holds the controls (T, 5), the
    states (T + 1, 48), the cost history and the iterations, and replaying its knots reproduces its tip."""
    from jaxse3.optim import Solution, scenarios

    out = tmp_path / "out"
    argv = ["optimize", "cdm-reach", "--t-final", "0.1", "--max-iters", "2", "--no-progress", "--out", str(out)]
    assert cli.main(argv) == 0
    sol = Solution.load(out / "cdm-reach.npz")
    assert sol.u.shape == (5, 5) and sol.x.shape == (6, 48) and sol.iterations == 2
    assert sol.cost_history[-1] < sol.cost_history[0]
    assert np.all(sol.values >= 0.0) and np.all(sol.values <= 20.0)
    replay = scenarios.cdm_reach(t_final=0.1).rollout(sol.values)
    np.testing.assert_allclose(replay.tip, sol.tip, atol=1e-12)
    assert (out / "cdm-reach.png").stat().st_size > 10_000


def test_optimize_cdm_reach_by_ilqr_writes_a_solution_that_replays(tmp_path):
    """``jaxse3 optimize cdm-reach --method ilqr`` on two steps of 20 ms: the cost decreases; the npz holds the
    tensions held over the steps (2, 5), within their bounds, and the states (3, 48), which the problem's steps
    reproduce from rest."""
    from jaxse3.optim import Solution, scenarios

    out = tmp_path / "out"
    argv = ["optimize", "cdm-reach", "--method", "ilqr", "--t-final", "0.04", "--max-iters", "2", "--out", str(out)]
    assert cli.main(argv) == 0
    sol = Solution.load(out / "cdm-reach.npz")
    assert sol.u.shape == (2, 5) and sol.x.shape == (3, 48) and 1 <= sol.iterations <= 2
    assert sol.cost_history[-1] < sol.cost_history[0]
    assert np.all(sol.u >= 0.0) and np.all(sol.u <= 20.0)
    problem, _, _ = scenarios.cdm_reach_steps(t_final=0.04)
    x = np.zeros(48)
    for k in range(2):
        x = np.asarray(problem.step(x, sol.u[k]))
        np.testing.assert_allclose(x, sol.x[k + 1], rtol=1e-9, atol=1e-12)
    system = scenarios.cdm_system()
    np.testing.assert_allclose(sol.tip[-1], system.tip(sol.x[-1, :24]), atol=1e-12)
    assert (out / "cdm-reach.png").stat().st_size > 10_000


@pytest.mark.slow
def test_optimize_a_model_file_writes_a_solution_that_replays(tmp_path):
    """``jaxse3 optimize examples/models/hybrid_arm.toml --target ...`` on a short horizon: the cost decreases from
    the file's constant efforts, the knots stay within ±--max-input, the npz holds the efforts (T, 2) and the states
    (T + 1, 12), and the reaching problem of :func:`jaxse3.optim.scenarios.reach` replays its tip."""
    from jaxse3.optim import Solution, scenarios as problems
    from jaxse3.sim import scenarios

    out = tmp_path / "out"
    argv = ["optimize", ARM, "--target", "0.3", "0.2", "0.1", "--t-final", "0.1", "--knots", "3", "--max-iters", "2"]
    assert cli.main([*argv, "--max-input", "0.5", "--no-progress", "--out", str(out)]) == 0
    sol = Solution.load(out / "hybrid_arm.npz")
    assert sol.u.shape == (5, 2) and sol.x.shape == (6, 12) and sol.iterations == 2
    assert sol.cost_history[-1] < sol.cost_history[0]
    assert np.all(np.abs(sol.values) <= 0.5)
    system, _, _, q0 = scenarios.from_toml(ARM)
    problem = problems.reach(system, (0.3, 0.2, 0.1), 0.1, lower=-0.5, upper=0.5, q0=q0, n_knots=3)
    np.testing.assert_allclose(problem.rollout(sol.values).tip, sol.tip, atol=1e-12)
    assert (out / "hybrid_arm.png").stat().st_size > 10_000


def test_run_compiles_in_the_fast_mode_unless_asked_and_restores_the_mode(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(cli, "run_simulation_example", lambda *args: seen.append(jaxse3.compile_mode()) or 0)
    assert cli.main(["run", "cdm", "--out", str(tmp_path)]) == 0
    assert cli.main(["run", "cdm", "--compile", "optimized", "--out", str(tmp_path)]) == 0
    assert seen == ["fast", "optimized"] and jaxse3.compile_mode() == "optimized"


def test_precision_is_float32_for_rods_on_accelerators_float64_otherwise_unless_chosen(monkeypatch, tmp_path):
    """``--dtype``: by default float32 for the CDM examples on a GPU or TPU, float64 on a CPU and for linkages (whose
    adaptive steps collapse in float32); JAX's x64 switch is restored after the run."""
    seen = []
    monkeypatch.setattr(cli, "run_simulation_example", lambda *args: seen.append(jax.config.jax_enable_x64) or 0)
    for backend, example, argv, x64 in (
        ("cpu", "cdm", [], True),
        ("gpu", "cdm", [], False),
        ("tpu", "cdm-contact", [], False),
        ("gpu", "flagellated", [], True),
        ("gpu", ARM, [], True),
        ("cpu", "cdm", ["--dtype", "float32"], False),
        ("gpu", "cdm", ["--dtype", "float64"], True),
        ("gpu", "fin-ray", ["--dtype", "float32"], False),
    ):
        monkeypatch.setattr(jax, "default_backend", lambda backend=backend: backend)
        assert cli.main(["run", example, "--out", str(tmp_path), *argv]) == 0
        assert seen.pop() is x64 and jax.config.jax_enable_x64, (backend, example, argv)


@pytest.mark.slow
def test_run_in_float32(tmp_path, capsys):
    """``jaxse3 run cdm --dtype float32`` (as on a GPU): the saved arrays are float32, the run says so, and the tip
    agrees with float64's at the float32 budget of tests/sim/test_float32.py."""
    argv = ["run", "cdm", "--t-final", "0.05", "--n-save", "3", "--no-progress", "--out", str(tmp_path)]
    assert cli.main([*argv, "--dtype", "float32"]) == 0
    assert "analytic Jacobian, float32" in capsys.readouterr().out and jax.config.jax_enable_x64
    data = np.load(tmp_path / "cdm.npz")
    assert data["q"].dtype == np.float32 and data["tip"].dtype == np.float32
    assert Trajectory.metadata(tmp_path / "cdm.npz")["run"]["dtype"] == "float32"
    tip32 = data["tip"]
    assert cli.main(argv) == 0
    tip64 = np.load(tmp_path / "cdm.npz")["tip"]
    assert tip64.dtype == np.float64 and 0 < np.abs(tip64 - tip32).max() < 1e-5


def test_a_solver_failure_is_said_and_the_samples_before_it_are_saved(tmp_path, capsys):
    """``jaxse3 run`` whose solver fails (here: too few steps allowed) exits with status 1 and says where it failed,
    after writing the samples it reached (NaN after the failure) and the figure."""
    argv = ["run", "cdm", "--t-final", "0.05", "--max-steps", "4", "--n-save", "6", "--no-progress"]
    assert cli.main([*argv, "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "the kvaerno5 solver failed after t = " in err and "maximum number of solver steps" in err, err
    assert "the samples before it are saved" in err
    data = np.load(tmp_path / "cdm.npz")
    finite = np.isfinite(data["q"]).all(axis=1)
    assert finite[0] and not finite[-1] and int(data["result"]) != 0 and (tmp_path / "cdm.png").exists()


@pytest.mark.slow
def test_run_a_model_file(tmp_path):
    """``jaxse3 run my_robot.toml``: a revolute link with a rod, its [simulation] settings, a flag overriding one."""
    model = tmp_path / "pendulum.toml"
    model.write_text(
        """
[[link]]
name = "arm"
joint = "revolute"
axis = [0.0, 1.0, 0.0]
mass = 0.2
com = [0.0, 0.0, -0.05]
inertia = [1e-4, 1e-4, 1e-4]

[[link]]
name = "tail"
parent = "arm"
joint = "soft"
position = [0.0, 0.0, -0.1]
rotation = [0.0, 1.5707963267948966, 0.0]
[link.rod]
length = 0.2
radius = 0.01
young = 1e5
density = 1000.0
damping = 100.0
strains = ["wy", "wz"]
order = 1

[simulation]
t_final = 5.0
solver = "tsit5"
q0 = [0.3, 0.0, 0.0, 0.0, 0.0]
"""
    )
    out = tmp_path / "out"
    argv = ["run", str(model), "--t-final", "0.05", "--n-save", "3", "--no-progress", "--out", str(out)]
    assert cli.main([*argv, "--animate", "--format", "gif"]) == 0
    from PIL import Image

    assert Image.open(out / "pendulum.gif").n_frames == 3  # one frame per saved time
    traj = Trajectory.load(str(out / "pendulum.npz"))
    assert traj.q.shape == (3, 5) and float(traj.t[-1]) == pytest.approx(0.05)  # the flag won over the file's 5 s
    np.testing.assert_allclose(traj.q[0], [0.3, 0, 0, 0, 0])
