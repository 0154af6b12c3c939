"""Tests run in float64; float32 tests request it explicitly with arrays of that dtype.

Two process-wide measures keep a long test run healthy:

* The tests share a persistent compilation cache of this run alone: a fresh, empty folder (``JAXSE3_CACHE``, unless
  the caller sets it), made by the first process and inherited by the pytest-xdist workers and by the subprocesses
  the tests start, and removed at the end. A test must not depend on what an earlier run left on the machine; within
  the run, a program that one worker compiled is loaded by the other, and by this worker again after the caches are
  cleared (below). Tests of the cache give it a folder of their own.
* Every compiled XLA:CPU program holds memory mappings (about five for a small one, more for a large one) until JAX
  drops it, and a pytest worker compiles thousands: past the kernel's limit (``vm.max_map_count``, 65530 by default)
  the next compile or cache load aborts or segfaults inside XLA. A worker reached 33 000 mappings on the rod and rigid
  tests alone; so between test files, once a worker holds more than half the limit, the caches are cleared
  (``jaxse3.clear_caches()``: JAX's and the executables of jaxse3's ``Compiled`` programs — solve_statics, simulate —
  which ``jax.clear_caches()`` alone leaves in place, so that their mappings piled up over a run; later files
  recompile what they use), and after any test once it holds more than three quarters.

And one measure keeps it short: compilation is most of the suite's time, and tests check values, not speed, so every
program the tests compile (in this process and in the subprocesses it starts) skips XLA's expensive CPU optimisations
(:data:`tests.fast_compile.FAST_COMPILE`, passed as ``XLA_FLAGS``; 40 % off the compile-bound tests, and half of
XLA's compile of programs of nested loops). The program and its arithmetic are the same, so results agree to
round-off. CI executes the notebooks with the same flags (``.ci/run``); the README's main job and the benchmarks
run with jaxse3's own setting (XLA's defaults with the CPU fusion emitters off, :mod:`jaxse3._runtime`).
``JAXSE3_TEST_XLA_DEFAULTS=1`` runs the tests with them too.
"""

import atexit
import gc
import os
import shutil
import tempfile

from tests.fast_compile import xla_flags  # imports nothing: read before JAX reads XLA_FLAGS

if "JAXSE3_CACHE" not in os.environ:  # before anything imports jaxse3 (which reads it once)
    os.environ["JAXSE3_CACHE"] = tempfile.mkdtemp(prefix="jaxse3-test-cache-")
    atexit.register(shutil.rmtree, os.environ["JAXSE3_CACHE"], ignore_errors=True)
if os.environ.get("JAXSE3_TEST_XLA_DEFAULTS", "0") != "1":  # before JAX starts its backend (it reads XLA_FLAGS once)
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {xla_flags()}".strip()

import jax  # after XLA_FLAGS

import jaxse3  # after JAXSE3_CACHE

jax.config.update("jax_enable_x64", True)


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode()
    except OSError:  # no /proc here: nothing to watch
        return None


def _mappings() -> int:
    """The number of memory mappings this process holds (0 where /proc is not there)."""
    maps = _read("/proc/self/maps")
    return 0 if maps is None else maps.count("\n")


_limit = _read("/proc/sys/vm/max_map_count")
MAPPING_BUDGET = (int(_limit) if _limit and _limit.strip().isdigit() else 65530) // 2


#: Within a file, the caches are cleared past this many mappings (a file that compiles many large programs must not
#: reach the limit before its end; clearing mid-file costs the file's later tests their recompilations).
MAPPING_CEILING = 3 * MAPPING_BUDGET // 2


def pytest_runtest_teardown(item, nextitem):
    """After a test file's last test: clear JAX's caches if this process holds more than MAPPING_BUDGET mappings;
    after any test, if it holds more than MAPPING_CEILING."""
    last_of_file = nextitem is None or nextitem.path != item.path
    if _mappings() > (MAPPING_BUDGET if last_of_file else MAPPING_CEILING):
        jaxse3.clear_caches()
        gc.collect()
