"""Tests run in float64; float32 tests request it explicitly with arrays of that dtype."""

import jax

jax.config.update("jax_enable_x64", True)

#: Per-compilation XLA options for tests dominated by compile time (``jax.jit(f).lower(...).compile(FAST_COMPILE)``):
#: tests check values, not speed, so skip XLA's expensive CPU optimisations. Never set globally.
FAST_COMPILE = {
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_use_fusion_emitters": False,
}
