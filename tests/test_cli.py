"""The ``jaxse3`` command: listing, the main job on a short horizon (in-process), bad arguments."""

import subprocess
import sys

import numpy as np
import pytest

from jaxse3 import cli


def test_list(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("cdm", "cdm-contact", "lie-demo"):
        assert name in out


@pytest.mark.parametrize("argv, message", [
    (["run", "nope"], "invalid choice"),
    (["run", "cdm", "--t-final", "-1"], "must be positive"),
    (["run", "cdm", "--t-final", "abc"], "expected a float"),
    (["run", "cdm", "--solver", "euler"], "invalid choice"),
])  # fmt: skip
def test_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code != 0
    assert message in capsys.readouterr().err


def test_bad_arguments_subprocess():
    r = subprocess.run([sys.executable, "-m", "jaxse3.cli", "run", "cdm", "--n-save", "0"], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2 and "must be positive" in r.stderr


@pytest.mark.slow
def test_run_cdm_short(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JAXSE3_CACHE", "")  # no persistent cache from tests
    out = tmp_path / "out"
    # default --n-save 201: the same compiled simulation as tests/sim/test_dynamics.py's CDM run
    assert cli.main(["run", "cdm", "--t-final", "0.05", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "compile" in text and "simulated in" in text and "wall" in text
    data = np.load(out / "cdm.npz")
    assert data["t"].shape == (201,) and data["q"].shape == (201, 24) and data["tip"].shape == (201, 3)
    np.testing.assert_allclose(data["t"][-1], 0.05)
    np.testing.assert_allclose(data["tip"][0], [0.0, 0.0, -0.5], atol=1e-12)  # hangs straight down at t = 0
    assert (out / "cdm.png").stat().st_size > 10_000
