"""pytest plugin (loaded by ``-p tests.parallel`` in ``addopts``): run the suite on 2 pytest-xdist workers when xdist is
installed and no ``-n`` was given, so that ``pytest --nbmake notebooks/`` and runs without xdist still work.

``--dist loadfile`` keeps each test file's compiled functions in one worker; ``--max-worker-restart=0`` fails the run
at once, naming the test, if a worker crashes (instead of waiting forever for a replacement).
"""

import importlib.util

PARALLEL = ["-n", "2", "--dist", "loadfile", "--max-worker-restart=0"]


def pytest_load_initial_conftests(early_config, parser, args):
    given = any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args)
    disabled = any("no:xdist" in a for a in args)
    if not given and not disabled and importlib.util.find_spec("xdist") is not None:
        args[:0] = PARALLEL
