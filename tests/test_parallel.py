"""The suite's parallel options are added only when pytest-xdist can take them (tests/parallel.py)."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).parents[1]


def _collect(*flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *flags, "tests/test_parallel.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_pytest_runs_without_xdist():
    """``-n 2`` in addopts made pytest fail at once without xdist (e.g. ``pytest --nbmake notebooks/``)."""
    r = _collect("-p", "no:xdist")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "unrecognized arguments" not in r.stderr


def test_an_explicit_worker_count_wins():
    r = _collect("-n", "0")
    assert r.returncode == 0, r.stdout + r.stderr
