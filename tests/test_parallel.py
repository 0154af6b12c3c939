"""The suite's parallel options are added only when pytest-xdist can take them (tests/parallel.py)."""

import json
import os
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


def test_the_parallel_options_are_accepted():
    """Without ``-n``, the options of tests/parallel.py are added, and this pytest-xdist knows each of them (pytest
    stops with "unrecognized arguments" on one it does not)."""
    r = _collect()
    assert r.returncode == 0 and "unrecognized arguments" not in r.stderr, r.stdout + r.stderr


def test_an_explicit_worker_count_wins():
    r = _collect("-n", "0")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_longest_files_exist_and_run_first():
    """tests/parallel.py's schedule names files that exist, and collection puts them first, in its order."""
    from tests.parallel import LONGEST

    assert [path for path in LONGEST if not (ROOT / path).is_file()] == []
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", *reversed(LONGEST[:2]), __file__],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    files = list(dict.fromkeys(line.split("::")[0] for line in r.stdout.splitlines() if "::" in line))
    assert files == [*LONGEST[:2], "tests/test_parallel.py"]


def test_the_timing_plugin_splits_a_test_into_trace_lower_and_compile(tmp_path):
    """``-p tests.timing``: a test that compiles one program shows one compile and the parts of its time."""
    test = tmp_path / "test_one.py"
    test.write_text("import jax\n\ndef test_jit():\n    jax.jit(lambda x: x * 2.0)(1.0).block_until_ready()\n")
    out = tmp_path / "timing.json"
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "tests.timing", "--rootdir", str(tmp_path), str(test)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "JAXSE3_TEST_TIMING": str(out), "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "where the time goes" in r.stdout
    (record,) = json.loads(out.read_text()).values()
    assert record["compiles"] == 1
    assert 0 < record["trace"] and 0 < record["lower"] and 0 < record["compile"] <= record["wall"]
