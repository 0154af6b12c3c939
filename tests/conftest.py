"""Tests run in float64; float32 tests request it explicitly with arrays of that dtype.

Two process-wide measures keep a long test run healthy:

* The in-process tests run without jaxse3's persistent compilation cache (``JAXSE3_CACHE=0`` unless the caller sets
  it): a test must not depend on what an earlier run left on the machine. Tests of the cache give it a folder of
  their own.
* Every compiled XLA:CPU program holds memory mappings (about five for a small one, more for a large one) until JAX
  drops it, and a pytest worker compiles thousands: past the kernel's limit (``vm.max_map_count``, 65530 by default)
  the next compile or cache load aborts or segfaults inside XLA. A worker reached 33 000 mappings on the rod and rigid
  tests alone; so between test files, once a worker holds more than half the limit, JAX's caches are cleared
  (``jax.clear_caches()`` returns the mappings; later files recompile what they use).
"""

import gc
import os

os.environ.setdefault("JAXSE3_CACHE", "0")  # before anything imports jaxse3 (which reads it once)

import jax

jax.config.update("jax_enable_x64", True)

#: Per-compilation XLA options for tests dominated by compile time (``jax.jit(f).lower(...).compile(FAST_COMPILE)``):
#: tests check values, not speed, so skip XLA's expensive CPU optimisations. Never set globally.
FAST_COMPILE = {
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_use_fusion_emitters": False,
}


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


def pytest_runtest_teardown(item, nextitem):
    """After a test file's last test: clear JAX's caches if this process holds more than MAPPING_BUDGET mappings."""
    if nextitem is not None and nextitem.path == item.path:
        return
    if _mappings() > MAPPING_BUDGET:
        jax.clear_caches()
        gc.collect()
