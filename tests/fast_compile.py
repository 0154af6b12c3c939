"""The XLA options of every program the tests compile, and of the notebooks that CI executes after them (so that the
notebooks load what the tests compiled from the shared cache: the cache key includes the options). Values, not speed,
are tested, so XLA's expensive CPU optimisations are skipped; the program and its arithmetic are the same, only
fusion, loop simplification, LLVM's optimisation passes and code splitting differ, so results agree to round-off.

``python -m tests.fast_compile`` prints them as ``XLA_FLAGS`` (.ci/run). This module imports nothing: it is read
before JAX starts its backend, which reads ``XLA_FLAGS`` once.
"""

FAST_COMPILE = {
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_use_fusion_emitters": False,
    # the while-loop simplifier and loop-invariant code motion: half of XLA's compile of a program of nested loops
    # (a DDP solve through implicit steps: 36 → 16 s), nothing for straight-line ones
    "xla_disable_hlo_passes": "simplify-while-loops,while-loop-invariant-code-motion",
    # XLA:CPU's own fast-compile preset, and one LLVM module instead of 32 parts compiled on threads (a test worker
    # has one core): compile 69 → 56 s on three compile-bound tests, one core each (2026-12-03)
    "xla_cpu_opt_preset": "CPU_OPT_PRESET_FAST_COMPILE",
    "xla_cpu_parallel_codegen_split_count": 1,
}


def xla_flags() -> str:
    """FAST_COMPILE as command-line flags."""
    return " ".join(f"--{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in FAST_COMPILE.items())


if __name__ == "__main__":
    print(xla_flags())
