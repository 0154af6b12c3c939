"""Trajectory files: atomic writes, the ``.npz`` suffix, units and run parameters, older files."""

import os

import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3.sim import Trajectory


def _traj(value: float = 1.0) -> Trajectory:
    n = 5
    points = jnp.full((n, 3, 3), value)
    return Trajectory(
        t=jnp.linspace(0.0, 1.0, n),
        q=jnp.full((n, 2), value),
        qd=jnp.zeros((n, 2)),
        u=jnp.zeros((n, 1)),
        points=points,
        tip=points[:, -1],
        num_steps=jnp.asarray(7),
        result=jnp.asarray(0, jnp.int32),
    )


def test_save_without_suffix_loads_back_with_units_and_parameters(tmp_path):
    written = _traj().save(tmp_path / "out", metadata={"run": {"solver": "kvaerno5", "t_final": 1.0}})
    assert written == str(tmp_path / "out.npz") and os.path.exists(written)
    back = Trajectory.load(tmp_path / "out")  # the same name the user saved under
    for k in Trajectory.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(back, k), getattr(_traj(), k))
    meta = Trajectory.metadata(tmp_path / "out")
    assert meta["units"]["t"] == "s" and meta["units"]["tip"].startswith("m") and meta["run"]["solver"] == "kvaerno5"
    assert back.ok and back.message == "successful"


def test_an_interrupted_save_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "good.npz"
    _traj(1.0).save(path)

    def crash(file, **arrays):  # writes part of the archive, then dies (as a kill mid-write would)
        file.write(b"PK\x03\x04 partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        _traj(2.0).save(path)
    monkeypatch.undo()
    np.testing.assert_array_equal(Trajectory.load(path).q, _traj(1.0).q)
    assert [p.name for p in tmp_path.iterdir()] == ["good.npz"]  # no temporary file left behind


def test_files_without_result_code_load_as_successful(tmp_path):
    fields = {k: np.asarray(v) for k, v in vars(_traj()).items() if k not in ("result", "monitors")}
    np.savez(tmp_path / "old.npz", **fields)
    back = Trajectory.load(tmp_path / "old.npz")
    assert back.ok and int(back.result) == 0 and back.monitors == {}
    assert Trajectory.metadata(tmp_path / "old.npz") == {}


def test_monitors_save_and_load_with_their_units(tmp_path):
    """Named monitors are entries ``monitors/<name>`` of the file (units from MONITOR_UNITS, else "unspecified")."""
    tr = _traj()
    tr = Trajectory(**{**vars(tr), "monitors": {"energy": jnp.arange(5.0), "gap": jnp.ones((5, 2))}})
    back = Trajectory.load(tr.save(tmp_path / "m"))
    assert set(back.monitors) == {"energy", "gap"}
    np.testing.assert_array_equal(back.monitors["energy"], np.arange(5.0))
    np.testing.assert_array_equal(back.monitors["gap"], np.ones((5, 2)))
    units = Trajectory.metadata(tmp_path / "m")["units"]
    assert units["monitors/energy"].startswith("J") and units["monitors/gap"] == "unspecified"
