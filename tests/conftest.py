"""Tests run in float64; float32 tests request it explicitly with arrays of that dtype.

The in-process tests run without jaxse3's persistent compilation cache (``JAXSE3_CACHE=0`` unless the caller sets it):
jaxlib 0.10.2 can crash the process, rarely and at random, while it deserialises a cached XLA:CPU executable (seen
once or twice in a full run over a warm cache, never with the cache off), and a test must not depend on what an
earlier run left on the machine. Tests of the cache itself give it a folder of their own.
"""

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
