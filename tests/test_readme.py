"""The README's "first hour" block runs as written (it needs the example-robot-data robots: ``.[robots]``)."""

import pathlib

import pytest


@pytest.mark.slow
def test_first_hour_block_runs(tmp_path, monkeypatch):
    from jaxse3 import rigid

    try:
        rigid.example_robot_path("hyq")
    except ImportError:
        pytest.skip("example-robot-data is not installed (extra 'robots')")
    text = (pathlib.Path(__file__).parents[1] / "README.md").read_text()
    block = text.split("### Your first hour")[1].split("```python")[1].split("```")[0]
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(block, scope)
    assert scope["eq"].converged and scope["eq"].stable and scope["traj"].ok
    assert scope["dtau_dq"].shape == (18, 18)
    assert (tmp_path / "run.npz").exists()
