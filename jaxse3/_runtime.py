"""Process-wide JAX settings that ``import jaxse3`` applies: the persistent compilation cache, batched linear algebra
on CPU that cannot deadlock (:mod:`jaxse3._batched_linalg`), small matrix products on CPU as fused arithmetic
(:mod:`jaxse3._small_products`), float32 matrix products in full float32 precision on GPUs, and a C heap that keeps
freed memory for the next program (glibc).

**Compilation cache.** Compiled programs are written to ``$JAXSE3_CACHE`` (default: ``$XDG_CACHE_HOME/jaxse3``, i.e.
``~/.cache/jaxse3``), so a second run of the same model skips XLA compilation. ``JAXSE3_CACHE=0`` (or an empty value)
leaves JAX's settings alone; a cache directory the user set through JAX (``jax_compilation_cache_dir``) is kept.
JAX writes no entry for a program that holds a host callback (``jax.debug.print``, ``eqx.error_if``, diffrax's progress
meters), which is why :func:`jaxse3.sim.simulate` compiles programs without them and reports progress and failures
from Python.

**Batched solves.** ``JAXSE3_BATCHED_LINALG=0`` keeps jaxlib's LAPACK kernels for batched factorisations (they can
hang the process for good; see :mod:`jaxse3._batched_linalg`).

**Small products.** ``JAXSE3_SMALL_PRODUCTS=0`` keeps XLA's kernel for every matrix product; by default a product of
small matrices is lowered as elementwise arithmetic that XLA fuses (:mod:`jaxse3._small_products`).

**Full-precision products.** Unless the user chose (``JAX_DEFAULT_MATMUL_PRECISION``, or
``jax_default_matmul_precision`` set before ``import jaxse3``), JAX's default matrix-product precision becomes
``"highest"``. On a CPU this changes nothing; on NVIDIA GPUs since Ampere JAX's default runs float32 products in TF32
(a 10-bit mantissa, relative error ~1e−3), which a Newton solve cannot converge through: on an H200 every float32
Newmark-β step of the CDM failed, and Kvaerno5's step size collapsed (``benchmarks/README.md``, "CDM rods on a GPU").
Float64 products are unaffected. ``JAX_DEFAULT_MATMUL_PRECISION=default`` brings TF32 back.

**Freed memory kept (Linux, glibc).** XLA:CPU takes each program's temporary buffers from the C heap at every call
and frees them after it. glibc serves a request above its mmap threshold (128 KiB, adapting up to 32 MiB) by a fresh
``mmap`` and returns it at ``free``, and trims the heap's free top beyond 128 KiB, so a program with large buffers —
a batch under ``vmap`` — has the kernel zero and map those pages again at every call: a vmapped derivative pass over
1000 planar rods ran at 28–34 µs per state instead of 16–17 µs (one core of the development machine, a virtual
machine whose page faults are dear; ``benchmarks/README.md``, "Freed memory kept"). ``import jaxse3`` therefore
sets glibc's ``M_MMAP_THRESHOLD`` to 1 GiB (32 MiB where glibc refuses more) and ``M_TOP_PAD`` to 256 MiB
(:data:`MALLOC_OPTIONS`): requests up to that size come from the heap, and up to 256 MiB of freed memory stays with
the process for the next call instead of going back to the system. The process's resident memory then stays near its
peak. ``JAXSE3_MALLOC=0`` leaves the C library alone, as does a malloc setting of the user's own
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TOP_PAD_``, ``MALLOC_TRIM_THRESHOLD_``, or ``glibc.malloc`` in
``GLIBC_TUNABLES``); other C libraries are left alone.

**XLA's CPU code generator.** Unless ``XLA_FLAGS`` already names them, three options are added to ``XLA_FLAGS``
(:data:`XLA_CPU_FLAGS`): ``--xla_cpu_use_fusion_emitters=false`` (XLA:CPU's earlier loop emitters instead of its MLIR
fusion emitters: on jaxse3's programs it cuts XLA's compile time by 30–45 % and runs as fast or faster;
``benchmarks/README.md``, "XLA's CPU fusion emitters"), ``--xla_cpu_multi_thread_eigen=false`` (XLA's matrix
products run on the calling thread instead of being handed to the intra-op thread pool one by one: a stack of twelve
4×4 float64 products costs 0.4 instead of 3.0 µs, seven 6×6 ones 0.5 instead of 2.6 µs; large products then use one
thread, and results change at round-off, as the products sum in another order; "Matrix products on the calling
thread") and ``--xla_cpu_experimental_ynn_fusion_type=`` (no matrix product handed to the YNNPACK library, which
XLA:CPU does by default for products too large for its fused arithmetic: for the few-by-24 products of a rod each
call's set-up outweighs the arithmetic — the CDM's analytic FD Jacobian 154 → 111 µs, the hybrid serial robot's
161 → 134 µs; models with larger products can lose: the 80-coordinate flagellated robot's forward dynamics runs 20 %
slower; programs compile up to 1–5 s longer on one core; "Matrix products without YNNPACK"). They reach every program
of the process when jaxse3 is imported before JAX starts its backend (before the first computation);
``JAXSE3_XLA_DEFAULTS=1`` leaves XLA's defaults. GPU backends are unaffected. Each option goes only to the jaxlib
versions whose XLA knows it (:data:`XLA_CPU_FLAGS`): XLA aborts the process on an option it does not know (jaxlib
0.4.38, 0.5.0 and 0.11.2 do on the first, 0.8.0 on the third).
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import sys
from importlib import metadata

import jax

from jaxse3._batched_linalg import install as _install_batched_linalg
from jaxse3._small_products import install as _install_small_products

__all__ = ["cache_dir", "configure", "LOWERINGS", "MALLOC_OPTIONS", "XLA_CPU_FLAGS", "xla_cpu_flags"]

#: the lowerings :func:`configure` installed ("batched linalg", "small products"): they shape the programs jaxse3
#: exports to its cache, so they are part of the cache's key (:mod:`jaxse3._compile`)
LOWERINGS: list[str] = []


def _off(name: str, default: str = "1") -> bool:
    """Whether the environment variable ``name`` (``default`` when unset) says off: empty, 0, false, no or off."""
    return os.environ.get(name, default).strip().lower() in ("", "0", "false", "no", "off")


def cache_dir() -> str | None:
    """The directory of jaxse3's persistent compilation cache, or None when ``JAXSE3_CACHE`` turns it off."""
    if _off("JAXSE3_CACHE"):
        return None
    path = os.environ.get("JAXSE3_CACHE", "1")
    if path.strip().lower() in ("1", "true", "yes", "on"):
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = os.path.join(base, "jaxse3")
    return path


#: the XLA options jaxse3 sets unless the user named them (module docstring), each with the jaxlib versions
#: [first, last) whose XLA knows it: 0.5.3, 0.6.2, 0.8.0, 0.10.2 take the fusion-emitter option, 0.4.38, 0.5.0 and
#: 0.11.2 abort on it; the Eigen option is older than all of them; the YNNPACK option is in the binaries of 0.8.1,
#: 0.8.2, 0.9.0, 0.9.1, 0.10.0 and 0.10.2, not in 0.8.0's
XLA_CPU_FLAGS: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = (
    ("--xla_cpu_use_fusion_emitters=false", (0, 5, 3), (0, 11, 0)),
    ("--xla_cpu_multi_thread_eigen=false", (0, 5, 3), (0, 11, 0)),
    ("--xla_cpu_experimental_ynn_fusion_type=", (0, 8, 1), (0, 11, 0)),
)


def _jaxlib_version(version: str | None = None) -> tuple[int, ...]:
    """jaxlib's version (or ``version``) as a tuple of its leading numbers; () when it cannot be read."""
    try:
        version = metadata.version("jaxlib") if version is None else version
    except metadata.PackageNotFoundError:
        return ()
    return tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0])[:3])


def xla_cpu_flags(jaxlib: tuple[int, ...] | None = None) -> list[str]:
    """The options of :data:`XLA_CPU_FLAGS` that ``jaxlib`` (default: the installed version) knows."""
    version = _jaxlib_version() if jaxlib is None else jaxlib
    return [flag for flag, first, last in XLA_CPU_FLAGS if version and first <= version < last]


def _set_xla_flags(jaxlib: tuple[int, ...] | None = None) -> None:
    if not _off("JAXSE3_XLA_DEFAULTS", default="0"):
        return
    current = os.environ.get("XLA_FLAGS", "")
    added = [flag for flag in xla_cpu_flags(jaxlib) if flag.split("=")[0].lstrip("-") not in current]
    if added:
        os.environ["XLA_FLAGS"] = " ".join([current, *added]).strip()


_M_TOP_PAD, _M_MMAP_THRESHOLD = -2, -3  # glibc's mallopt parameters (<malloc.h>)
#: what :func:`_keep_freed_memory` sets glibc's malloc parameters to, in order; a parameter with several values takes
#: the first that glibc accepts
MALLOC_OPTIONS = ((_M_MMAP_THRESHOLD, (1 << 30, 32 << 20)), (_M_TOP_PAD, (256 << 20,)))
#: the environment variables by which a user chooses glibc's malloc settings (module docstring)
_USER_MALLOC = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_")


def _keep_freed_memory() -> bool:
    """Set :data:`MALLOC_OPTIONS` with glibc's ``mallopt`` (module docstring); False where it does not apply (not
    glibc, ``JAXSE3_MALLOC=0``, the user's own malloc settings) or glibc refused."""
    if _off("JAXSE3_MALLOC") or sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        return False
    if any(name in os.environ for name in _USER_MALLOC) or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - a glibc without mallopt
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all(any(mallopt(param, value) == 1 for value in values) for param, values in MALLOC_OPTIONS)


def configure() -> None:
    """Apply the settings (idempotent). Called once by ``import jaxse3``."""
    _set_xla_flags()  # before anything starts JAX's backend, which reads XLA_FLAGS once
    _keep_freed_memory()
    for name, switch, install in (
        ("batched linalg", "JAXSE3_BATCHED_LINALG", _install_batched_linalg),
        ("small products", "JAXSE3_SMALL_PRODUCTS", _install_small_products),
    ):
        if not _off(switch) and install() and name not in LOWERINGS:
            LOWERINGS.append(name)
    if "JAX_DEFAULT_MATMUL_PRECISION" not in os.environ and jax.config.jax_default_matmul_precision is None:
        jax.config.update("jax_default_matmul_precision", "highest")
    path = cache_dir()
    if path is not None and not jax.config.jax_compilation_cache_dir:
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # small eager ops too: they add up
