"""Parameter sweeps (:mod:`jaxse3.sim.sweep`, ``jaxse3 sweep``): sampling, members against the same solve run
directly on a model built by hand (its own TOML text, its own material), failures kept with their reasons, an
interrupted sweep resumed to the uninterrupted result, the command line, and two processes under
``jax.distributed`` (127.0.0.1) gathering the same results as one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage, rigid, rod, sim
from jaxse3.cli import main
from jaxse3.rod.geometry import Material
from jaxse3.sim import load_sweep, read_sweep, run_sweep, scenarios, simulate, solve_statics, sweep as sweeps

#: a small model file: one soft link bending in two planes (2 DoF), its parameters in {young} and {gravity}
MODEL = """
gravity = [0.0, 0.0, {gravity}]
[[link]]
name = "arm"
joint = "soft"
rotation = [0.0, 0.3, 0.0]
[link.rod]
length = 0.3
radius = 0.01
young = {young}
density = 1000.0
damping = 100.0
strains = ["wy", "wz"]
order = 0
gauss = 2
"""


def _write(folder, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w") as fh:
        fh.write(textwrap.dedent(text))
    return path


@pytest.fixture
def model_file(tmp_path):
    return _write(tmp_path, "arm.toml", MODEL.format(young=1e6, gravity=-9.81))


# --- reading and sampling -------------------------------------------------------------------------------------------


def test_grid_is_every_combination_first_parameter_slowest(tmp_path):
    path = _write(
        tmp_path,
        "s.toml",
        """
        model = "cdm"
        [parameters]
        "inputs[0]" = [0.0, 5.0, 10.0]
        young = { low = 1e5, high = 1e7, n = 3, log = true }
        """,
    )
    s = read_sweep(path)
    assert s.names == ("inputs[0]", "young") and s.kind == "statics" and s.record == ("tip",)
    np.testing.assert_allclose(s.values[:, 0], np.repeat([0.0, 5.0, 10.0], 3))
    np.testing.assert_allclose(s.values[:3, 1], [1e5, 1e6, 1e7], rtol=1e-12)
    assert s.n_chunks == 1 and s.model == "cdm"


def test_latin_hypercube_fills_each_stratum_once_and_random_stays_in_range(tmp_path):
    body = """
        model = "cdm"
        [sampling]
        method = "{method}"
        n = 50
        seed = 3
        [parameters]
        "inputs[0]" = [2.0, 12.0]
        young = {{ low = 1e5, high = 1e7, log = true }}
        """
    latin = read_sweep(_write(tmp_path, "l.toml", body.format(method="latin"))).values
    strata = np.floor((latin[:, 0] - 2.0) / 10.0 * 50).astype(int)
    assert sorted(strata) == list(range(50))
    log_strata = np.floor(np.log(latin[:, 1] / 1e5) / np.log(100.0) * 50).astype(int)
    assert sorted(log_strata) == list(range(50))
    rand = read_sweep(_write(tmp_path, "r.toml", body.format(method="random"))).values
    assert rand.shape == (50, 2) and np.all((rand[:, 0] >= 2.0) & (rand[:, 0] <= 12.0))
    assert np.all((rand[:, 1] >= 1e5) & (rand[:, 1] <= 1e7))
    again = read_sweep(_write(tmp_path, "r2.toml", body.format(method="random"))).values
    np.testing.assert_array_equal(rand, again)  # the seed fixes the members


@pytest.mark.parametrize(
    "text, message",
    [
        ('model = "cdm"\ncolour = 1\n[parameters]\nyoung = [1e6]', "unknown field"),
        ('model = "nope"\n[parameters]\nyoung = [1e6]', "'model' must be one of"),
        ('model = "cdm"\nkind = "fly"\n[parameters]\nyoung = [1e6]', "'kind' must be one of"),
        ('model = "cdm"\nrecord = ["t"]\n[parameters]\nyoung = [1e6]', "'record' must be"),
        ('model = "cdm"\n[sampling]\nmethod = "sobol"\n[parameters]\nyoung = [1e6]', "'method' must be one of"),
        ('model = "cdm"\n[sampling]\nmethod = "latin"\n[parameters]\nyoung = [1e6, 2e6]', "'n'"),
        ('model = "cdm"\n[sampling]\nmethod = "random"\nn = 4\n[parameters]\nyoung = [2e6, 1e6]', "low ≤ high"),
        ('model = "cdm"\n[parameters]', "at least one parameter"),
        ('model = "cdm"\n[parameters]\n"in puts" = [1.0]', "not a parameter name"),
        ('model = "cdm"\nkind = "simulate"\n[parameters]\nyoung = [1e6]', "needs t_final"),
        ('model = "cdm"\n[settings]\nt_final = 1.0\n[parameters]\nyoung = [1e6]', "[settings] of kind 'statics'"),
        ('model = "missing.toml"\n[parameters]\nyoung = [1e6]', "no such model file"),
    ],
)
def test_bad_sweep_files_are_named(tmp_path, text, message):
    with pytest.raises(ValueError, match=f"s.toml: .*{message}".replace("[", r"\[").replace("(", r"\(")):
        read_sweep(_write(tmp_path, "s.toml", text))


@pytest.mark.parametrize(
    "parameters, message",
    [
        ('"inputs[5]" = [1.0]', "the model has 5 inputs"),
        ('"q0[0]" = [1.0]', "q0 is a simulation's initial state"),
        ("stiffness = [1.0]", "a built-in model's parameters are"),
        ("inputs = [1.0]", r"name one inputs entry"),
    ],
)
def test_parameters_the_model_lacks_are_refused(tmp_path, parameters, message):
    sweep = read_sweep(_write(tmp_path, "s.toml", f'model = "cdm"\n[parameters]\n{parameters}'))
    with pytest.raises(ValueError, match=message):
        sweeps._Model(sweep)


def test_model_file_parameters_that_change_the_structure_or_do_not_exist_are_refused(tmp_path, model_file):
    base = 'model = "arm.toml"\n[parameters]\n'
    with pytest.raises(ValueError, match="change the model's structure"):
        sweeps._Model(read_sweep(_write(tmp_path, "s.toml", base + '"arm.gauss" = [2, 3]')))
    with pytest.raises(ValueError, match="no link 'hand'"):
        sweeps._Model(read_sweep(_write(tmp_path, "s.toml", base + '"hand.young" = [1e6]')))
    with pytest.raises(ValueError, match=r"young = -1.*positive"):
        sweeps._Model(read_sweep(_write(tmp_path, "s.toml", base + '"arm.young" = [-1.0]')))


# --- members against direct solves -----------------------------------------------------------------------------------


CDM_SWEEP = """
model = "cdm"
record = ["tip", "q", "stable", "morse_index", "energy"]
chunk = 2
[settings]
rtol = 1e-10
atol = 1e-12
[parameters]
"inputs[0]" = [0.0, 8.0, 16.0]
young = [1e6, 2e6]
"""


_rod_energy = jax.jit(rod.energy)


def test_cdm_statics_members_equal_direct_solves(tmp_path):
    path = _write(tmp_path, "cdm.toml", CDM_SWEEP)
    out = os.path.join(tmp_path, "out")
    result = run_sweep(path, out, progress=False)
    assert result.complete and result.ok.all() and result.reasons == [""] * 6
    assert sorted(os.listdir(os.path.join(out, "chunks"))) == [f"chunk-{i:05d}.npz" for i in range(3)]
    for i in (0, 3, 5):  # members of the first, second and last chunk
        tension, E = result["inputs[0]"][i], result["young"][i]
        system = scenarios.cdm_system(material=Material(E=E, rho=1000.0, nu=0.5, damping=1e4))
        u = jnp.zeros(5).at[0].set(tension)
        direct = solve_statics(system, u, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(result["tip"][i], direct.tip, atol=1e-11)
        np.testing.assert_allclose(result["q"][i], direct.q, atol=1e-9)
        assert bool(result["stable"][i]) == bool(direct.stable)
        assert int(result["morse_index"][i]) == int(direct.morse_index) == 0
        rest = _rod_energy(system.params[0], direct.q, jnp.zeros_like(direct.q)).total
        np.testing.assert_allclose(result["energy"][i], rest, rtol=1e-9)
    assert np.linalg.norm(result["tip"][4] - result["tip"][0]) > 1e-2  # the tension moves the tip
    loaded = load_sweep(out)
    assert loaded.names == result.names and loaded.complete
    for key in result.fields:
        np.testing.assert_array_equal(loaded[key], result[key])
    np.testing.assert_array_equal(loaded.values, result.values)


def test_model_file_members_equal_the_model_written_with_their_values(tmp_path, model_file):
    path = _write(
        tmp_path,
        "s.toml",
        """
        model = "arm.toml"
        record = ["tip", "q"]
        chunk = 4
        [parameters]
        "arm.young" = [5e5, 2e6]
        "gravity[2]" = [-9.81, -3.0]
        """,
    )
    result = run_sweep(path, os.path.join(tmp_path, "out"), progress=False)
    assert result.ok.all()
    for i in range(4):
        E, g = result["arm.young"][i], result["gravity[2]"][i]
        system = scenarios.from_toml(_write(tmp_path, "m.toml", MODEL.format(young=E, gravity=g)))[0]
        direct = solve_statics(system, jnp.zeros(0))
        np.testing.assert_allclose(result["q"][i], direct.q, atol=1e-10)
    drop = -result["tip"][:, 2]
    assert drop[0] > drop[2] > drop[3] and drop[0] > drop[1]  # softer and heavier sag more


_linkage_energy = jax.jit(linkage.energy)


def test_simulation_members_equal_direct_simulations(tmp_path, model_file):
    path = _write(
        tmp_path,
        "s.toml",
        """
        model = "arm.toml"
        kind = "simulate"
        record = ["t", "tip", "q", "qd", "energy"]
        chunk = 2
        [settings]
        t_final = 0.1
        solver = "tsit5"
        rtol = 1e-9
        atol = 1e-11
        samples = 5
        [parameters]
        "q0[1]" = [0.0, 0.5]
        """,
    )
    result = run_sweep(path, os.path.join(tmp_path, "out"), progress=False)
    assert result.ok.all() and result["tip"].shape == (2, 5, 3)
    np.testing.assert_allclose(result["t"][0], np.linspace(0.0, 0.1, 5))
    system = scenarios.from_toml(model_file)[0]
    for i, bend in enumerate((0.0, 0.5)):
        q0 = jnp.array([0.0, bend])
        direct = simulate(system, jnp.zeros(0), q0=q0, t_final=0.1, solver="tsit5", rtol=1e-9, atol=1e-11, n_save=5)
        np.testing.assert_allclose(result["q"][i], direct.q, atol=1e-9)
        energy = [_linkage_energy(system.params, q, qd).total for q, qd in zip(direct.q, direct.qd)]
        np.testing.assert_allclose(result["energy"][i], energy, rtol=1e-9, atol=1e-12)
    assert np.abs(result["tip"][1] - result["tip"][0]).max() > 1e-2
    assert result["energy"].shape == (2, 5) and result["energy"][1, 0] > result["energy"][0, 0]  # bent: elastic


def test_a_model_without_energy_refuses_to_record_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sweeps.BUILT_IN, "cdm", lambda **_: sim.rigid_system(rigid.auto_tree(2, seed=0)))
    path = _write(tmp_path, "s.toml", 'model = "cdm"\nrecord = ["energy"]\n[parameters]\n"inputs[0]" = [0.0, 1.0]\n')
    with pytest.raises(ValueError, match="the model 'cdm' has no energy function to record"):
        run_sweep(path, os.path.join(tmp_path, "out"), progress=False)


def test_failed_members_keep_their_place_and_reason(tmp_path):
    path = _write(
        tmp_path,
        "s.toml",
        """
        model = "cdm"
        [settings]
        max_steps = 2
        load_steps = 1
        [parameters]
        "inputs[0]" = [0.0, 30.0]
        """,
    )
    result = run_sweep(path, os.path.join(tmp_path, "out"), progress=False)
    assert result.complete and list(result.ok) == [True, False]
    assert result.reasons[0] == "" and "maximum number of steps" in result.reasons[1]
    assert result["result"][1] != 0 and np.isfinite(result["tip"][1]).all()


# --- interruption and resumption --------------------------------------------------------------------------------------


def test_an_interrupted_sweep_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch):
    path = _write(tmp_path, "cdm.toml", CDM_SWEEP)
    reference = run_sweep(path, os.path.join(tmp_path, "reference"), progress=False)
    out = os.path.join(tmp_path, "out")
    run = sweeps._Model.run
    calls = []

    def interrupted(self, rows):
        calls.append(len(rows))
        if len(calls) == 2:
            raise KeyboardInterrupt  # the user stops the sweep during its second chunk
        return run(self, rows)

    monkeypatch.setattr(sweeps._Model, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(path, out, progress=False)
    partial = load_sweep(out)
    assert list(partial.done) == [True, True, False, False, False, False] and not partial.complete
    assert partial.reasons[2:] == ["not run"] * 4 and np.isnan(partial["tip"][2:]).all()
    np.testing.assert_array_equal(partial["tip"][:2], reference["tip"][:2])
    with pytest.raises(ValueError, match="holds a sweep already"):
        run_sweep(path, out, progress=False)
    monkeypatch.setattr(sweeps._Model, "run", run)
    calls.clear()
    resumed = run_sweep(path, out, resume=True, progress=False)
    assert resumed.complete
    for key in reference.fields:
        np.testing.assert_array_equal(resumed[key], reference[key])
    changed = _write(tmp_path, "cdm.toml", CDM_SWEEP.replace("16.0", "12.0"))
    with pytest.raises(ValueError, match="differs from this one"):
        run_sweep(changed, out, resume=True, progress=False)


# --- the command line and many processes ------------------------------------------------------------------------------


def test_command_line_runs_a_sweep_and_names_bad_options(tmp_path, capsys, model_file):
    path = _write(tmp_path, "s.toml", 'model = "arm.toml"\n[parameters]\n"arm.young" = [5e5, 2e6]\n')
    out = os.path.join(tmp_path, "out")
    assert main(["sweep", path, "--out", out, "--no-progress"]) == 0
    assert "2 of 2 members succeeded" in capsys.readouterr().out
    assert main(["sweep", path, "--out", out, "--no-progress"]) == 2  # the folder holds it: --resume needed
    assert "--resume" in capsys.readouterr().err
    assert main(["sweep", path, "--out", out, "--no-progress", "--resume"]) == 0
    assert main(["sweep", path, "--out", out, "--no-progress", "--resume", "--dtype", "float32"]) == 2
    assert "ran in float64, this process computes in float32" in capsys.readouterr().err and jax.config.jax_enable_x64
    out32 = os.path.join(tmp_path, "out32")  # the same sweep in float32: its results within float32's round-off
    assert main(["sweep", path, "--out", out32, "--no-progress", "--dtype", "float32"]) == 0
    r32, r64 = load_sweep(out32), load_sweep(out)
    assert r32["tip"].dtype == np.float32 and r64["tip"].dtype == np.float64 and jax.config.jax_enable_x64
    np.testing.assert_allclose(r32["tip"], r64["tip"], atol=1e-6)
    with pytest.raises(SystemExit):
        main(["sweep", path, "--coordinator", "127.0.0.1:1234"])
    assert "go together" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sweep", path, "--coordinator", "nohost", "--num-processes", "2", "--process-id", "0"])
    with pytest.raises(SystemExit):
        main(["sweep", path, "--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"])
    assert "--process-id must lie in 0 … 1" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_gather_the_single_process_results(tmp_path, model_file):
    path = _write(
        tmp_path,
        "s.toml",
        """
        model = "arm.toml"
        record = ["tip", "q"]
        chunk = 2
        [parameters]
        "arm.young" = [5e5, 1e6, 2e6]
        "gravity[2]" = [-9.81, -3.0]
        """,
    )
    single = run_sweep(path, os.path.join(tmp_path, "single"), progress=False)
    out, port = os.path.join(tmp_path, "pair"), _free_port()
    command = [sys.executable, "-m", "jaxse3.cli", "sweep", path, "--out", out, "--no-progress"]
    command += ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    procs = [
        subprocess.Popen([*command, "--process-id", str(k)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for k in (0, 1)
    ]
    logs = [p.communicate(timeout=400)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(logs)
    assert "process 0 of 2" in logs[0] and "process 1 of 2" in logs[1]
    # chunks 0 and 2 by process 0, chunk 1 by process 1, into the shared folder; process 0 wrote the gathered file
    assert sorted(os.listdir(os.path.join(out, "chunks"))) == [f"chunk-{i:05d}.npz" for i in range(3)]
    gathered = load_sweep(out)
    assert gathered.complete
    for key in single.fields:
        np.testing.assert_array_equal(gathered[key], single[key])
    assert jax.process_count() == 1  # this process never joined them


def test_the_example_sweep_runs_as_documented(tmp_path):
    """examples/sweeps/cdm_workspace.toml (the README's and docs/scale.md's): 64 equilibria of the CDM, each stable
    and within the reach of the rod (0.5 m from its base)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "examples", "sweeps", "cdm_workspace.toml")
    result = run_sweep(path, os.path.join(tmp_path, "out"), progress=False)
    assert result.complete and result.ok.all() and result["stable"].all()
    assert result["tip"].shape == (64, 3) and np.all(np.linalg.norm(result["tip"], axis=1) < 0.5)
    assert np.ptp(result["tip"][:, 0]) > 0.05 and np.ptp(result["tip"][:, 1]) > 0.05  # the tensions spread the tip
