"""The README's "first hour" block runs as written (it needs the example-robot-data robots: ``.[robots]``)."""

import pytest

from tests.docs_code import ROOT, python_blocks, run_as_reader


@pytest.mark.slow
def test_first_hour_block_runs(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
    scope = run_as_reader(python_blocks(text.split("### Your first hour")[1])[0], tmp_path, monkeypatch, "hyq")
    assert scope["eq"].converged and scope["eq"].stable and scope["traj"].ok
    assert scope["dtau_dq"].shape == (18, 18)
    assert (tmp_path / "run.npz").exists()
