"""pytest plugin (loaded by ``-p tests.parallel`` in ``addopts``): run the suite on 2 pytest-xdist workers when xdist is
installed and no ``-n`` was given, so that ``pytest --nbmake notebooks/`` and runs without xdist still work.

``--dist loadfile`` keeps each test file's compiled functions in one worker; ``--max-worker-restart=0`` fails the run
at once, naming the test, if a worker crashes (instead of waiting forever for a replacement).

The longest files are moved to the front (``LONGEST``) and ``--no-loadscope-reorder`` makes the workers take the files
in that order: started last, one of them kept a worker busy minutes after the other had finished. (By default
pytest-xdist orders the files by their number of tests, so a long file of one test, tests/sim/test_float32.py, ran
last.) The list is a schedule, not a requirement: a file missing from it runs after those on it, a stale entry only
costs balance. Measure with ``python -m pytest -p tests.timing`` (tests/timing.py).
"""

import importlib.util

PARALLEL = ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder", "--max-worker-restart=0"]


def pytest_load_initial_conftests(early_config, parser, args):
    given = any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args)
    disabled = any("no:xdist" in a for a in args)
    if not given and not disabled and importlib.util.find_spec("xdist") is not None:
        args[:0] = PARALLEL


#: the files that took longest (≥ 100 s on one worker of a 2-core machine, 2026-12-03), longest first
LONGEST = (
    "tests/lie/test_rules.py",
    "tests/linkage/test_closed_chain_simulation.py",
    "tests/test_cli.py",
    "tests/linkage/test_closure_derivatives.py",
    "tests/linkage/test_linkage.py",
    "tests/optim/test_ddp.py",
    "tests/sim/test_gradients.py",
    "tests/integrate/test_newmark.py",
    "tests/rigid/test_rnea_second_order_derivatives.py",
    "tests/optim/test_linkages.py",
    "tests/sim/test_float32.py",
    "tests/linkage/test_fin_ray.py",
    "tests/linkage/test_closure.py",
    "tests/rod/test_segments.py",
    "tests/linkage/test_linkage_simulation.py",
    "tests/rod/test_inverse_dynamics.py",
    "tests/rod/test_forces.py",
)


def pytest_collection_modifyitems(session, config, items):
    """The files of LONGEST first, in its order; the others after them, in the order of collection."""
    rank = {path: i for i, path in enumerate(LONGEST)}

    def key(item) -> int:
        path = item.path.relative_to(config.rootpath).as_posix() if item.path.is_relative_to(config.rootpath) else ""
        return rank.get(path, len(rank))

    items.sort(key=key)  # stable: the tests of a file keep their order
