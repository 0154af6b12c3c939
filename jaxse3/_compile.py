"""Ahead-of-time compilation with a visible first call.

:class:`Compiled` wraps a function for ``eqx.filter_jit`` and compiles it once per argument signature (tree
structure, array shapes and dtypes, static values); the first compile is announced on stderr — "compiling …", then
the seconds it took and whether JAX's persistent cache served it — so a user never waits on a silent compile. Inside
:func:`compile_report` several programs (e.g. the parts of one simulation) are announced as one. Inside a caller's
trace (``jit``, ``vmap``, ``grad``) a :class:`Compiled` simply calls its function.

**Across processes.** JAX's persistent cache saves XLA's work but not the tracing of the Python model (seconds for a
rod). A ``cacheable`` :class:`Compiled` therefore also keeps its traced program, exported with :mod:`jax.export`, in
``<cache>/exported/`` under a key of everything it depends on: jaxse3's source, the versions of JAX and its
libraries, the array shapes and dtypes, and the static values (functions and classes by their qualified names,
only those of jaxse3 and of those libraries). Arguments with any other static value (a lambda, a local function, a
function or model class of the user's, whose code may change under the same name, an unknown object) are traced as
usual.

**Compile modes.** XLA optimises a program fully by default ("optimized"). In the "fast" mode
(:func:`set_compile_mode`, or ``JAXSE3_COMPILE=fast``) the programs of :class:`Compiled` are compiled with XLA:CPU's
LLVM back end at -O0 without its expensive passes (:data:`FAST_OPTIONS`): about half the compile time, two to three
times the run time — for short, interactive runs (``jaxse3 run`` uses it by default), not for long runs, batches or
timings. Programs that a caller jits (a :class:`Compiled` inside a trace) keep the caller's options. Other backends
than the CPU compile as usual in both modes.

``JAXSE3_VERBOSE=0`` silences the messages. :data:`STATS` counts compilations, their seconds and persistent-cache hits
(the CLI reports them; tests use them to show that a second run is served from the cache).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.metadata
import io
import os
import pickle
import sys
import tempfile
import time
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax
import numpy as np

from jaxse3 import _runtime

__all__ = [
    "Compiled",
    "clear_caches",
    "compile_report",
    "announce_trace",
    "say",
    "STATS",
    "CompileStats",
    "COMPILE_MODES",
    "FAST_OPTIONS",
    "set_compile_mode",
    "compile_mode",
]

#: Every :class:`Compiled` of the process, for :func:`clear_caches`.
_INSTANCES: weakref.WeakSet = weakref.WeakSet()


@dataclass
class CompileStats:
    """Counters since the process started."""

    compilations: int = 0  #: programs compiled (or loaded from the persistent cache) by :class:`Compiled`
    loaded: int = 0  #: of those, the ones served by the persistent cache
    seconds: float = 0.0  #: wall time spent in those compilations
    cache_hits: int = 0  #: programs JAX loaded from its persistent cache (any caller, small eager operations included)


STATS = CompileStats()

#: the compile modes (module docstring)
COMPILE_MODES = ("optimized", "fast")
#: XLA options of the "fast" mode. Measured on the CDM (one core, 2026-12-02): a Kvaerno5 simulation compiles in
#: 9.5–12 s instead of 17–21 s and takes 3.7 instead of 1.6 ms per step; Newmark-β compiles in 9.8 instead of 17.1 s
#: and takes 1.36 instead of 0.64 s per 10 s of motion.
FAST_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def _mode_from(value: str) -> str:
    """The compile mode named by ``JAXSE3_COMPILE`` (empty: "optimized")."""
    mode = value.strip().lower() or "optimized"
    if mode not in COMPILE_MODES:
        raise ValueError(f"JAXSE3_COMPILE must be one of {', '.join(COMPILE_MODES)} (or empty), got {value!r}")
    return mode


_MODE = [_mode_from(os.environ.get("JAXSE3_COMPILE", ""))]


def compile_mode() -> str:
    """The current compile mode, one of :data:`COMPILE_MODES`."""
    return _MODE[0]


def set_compile_mode(mode: str) -> str:
    """Compile the programs of :class:`Compiled` (simulations, statics, their batches) from now on in ``mode``:
    ``"optimized"`` (XLA's full optimisation, the default) or ``"fast"`` (about half the compile time, two to three
    times the run time; see the module docstring). Programs compiled before keep their mode. Returns the previous mode.
    """
    if mode not in COMPILE_MODES:
        raise ValueError(f"set_compile_mode: mode must be one of {', '.join(COMPILE_MODES)}, got {mode!r}")
    previous, _MODE[0] = _MODE[0], mode
    return previous


def _options() -> dict[str, Any] | None:
    """The XLA options of the current mode on this backend (None: XLA's defaults)."""
    return dict(FAST_OPTIONS) if _MODE[0] == "fast" and jax.default_backend() == "cpu" else None


def _on_event(event: str, **kwargs: Any) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        STATS.cache_hits += 1


jax.monitoring.register_event_listener(_on_event)


def _verbose() -> bool:
    return os.environ.get("JAXSE3_VERBOSE", "1").strip().lower() not in ("0", "false", "no", "off")


def say(text: str) -> None:
    if _verbose():
        print(f"jaxse3: {text}", file=sys.stderr, flush=True)


def announce_trace(name: str, what: str = "") -> None:
    """Say that ``name`` is being traced inside a caller's ``jit``/``vmap``/``grad`` (it then compiles with the
    caller's program, which can take a while, and the caller's compile is not announced). Silent while a
    :class:`Compiled` traces (that compile is announced already)."""
    if _LOWERING:
        return
    say(f"tracing {name}{f' ({what})' if what else ''} inside a jit/vmap/grad; it compiles with the enclosing program")


@dataclass
class _Report:
    name: str
    announced: bool = False
    seconds: float = 0.0
    programs: int = 0
    hits: int = 0


_REPORT: list[_Report] = []
_LOWERING: list[str] = []  # names of the Compiled functions being traced now


@contextlib.contextmanager
def compile_report(name: str, what: str = "") -> Iterator[None]:
    """Announce the compilations of the :class:`Compiled` functions called inside as one: "compiling NAME (WHAT)"
    before the first, "NAME compiled in X s" at the end (nothing when everything was compiled before)."""
    report = _Report(f"{name} ({what})" if what else name)
    _REPORT.append(report)
    try:
        yield
    finally:
        _REPORT.pop()
        if report.announced:
            cached = "" if report.hits < report.programs else " (from the persistent cache)"
            say(f"{report.name} compiled in {report.seconds:.1f} s{cached}")


@contextlib.contextmanager
def _checks_as_nan() -> Iterator[None]:
    """While tracing, equinox's runtime checks (``eqx.error_if``, which diffrax, optimistix and lineax use, e.g. for
    ``saveat.ts`` and ``dt0``) substitute NaN instead of raising through a host callback: JAX's persistent cache
    refuses programs with host callbacks. A failing check then shows up as NaN and a failed solve (a result code)
    that the caller reports. Relies on equinox's private ``_errors`` module; without it nothing changes (the program
    is then compiled on every run, but correct)."""
    from equinox import _errors

    impl = getattr(_errors, "branched_error_if_impl", None)
    jitted = getattr(_errors, "branched_error_if_impl_jit", None)
    if impl is None or jitted is None:
        yield
        return

    def as_nan(x, pred, index, msgs, *, on_error):
        return impl(x, pred, index, msgs, on_error="nan" if on_error in ("default", "raise") else on_error)

    _errors.branched_error_if_impl_jit = as_nan
    try:
        yield
    finally:
        _errors.branched_error_if_impl_jit = jitted


def _signature(args: tuple) -> Any:
    leaves, treedef = jax.tree.flatten(args)
    key = [(np.shape(x), str(x.dtype), bool(getattr(x, "weak_type", False))) if eqx.is_array(x) else x for x in leaves]
    return treedef, tuple(key)


_KEYED_PACKAGES = ("jaxse3", "jax", "jaxlib", "equinox", "diffrax", "optimistix", "lineax", "numpy", "builtins")


class _Unstable(Exception):
    """A static value without a name that is the same in every process."""


def _stable(obj: Any) -> str:
    """A description of ``obj`` that is equal in two processes iff the traced program would be (or raise)."""
    if eqx.is_array(obj):
        return f"A{tuple(np.shape(obj))}{obj.dtype}{'w' if getattr(obj, 'weak_type', False) else ''}"
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return f"{type(obj).__name__}:{obj!r}"
    if isinstance(obj, (tuple, list)):
        return f"{type(obj).__name__}(" + ",".join(map(_stable, obj)) + ")"
    if isinstance(obj, dict):
        return "dict(" + ",".join(f"{_stable(k)}:{_stable(v)}" for k, v in sorted(obj.items(), key=repr)) + ")"
    if isinstance(obj, (types.FunctionType, type)):
        # a name stands for the code only where the key covers that code: jaxse3's source (hashed) and the libraries
        # whose versions are in the key; a user's function may change between runs under the same name
        if "<" in obj.__qualname__ or obj.__module__.split(".")[0] not in _KEYED_PACKAGES:
            raise _Unstable(obj)
        return f"{obj.__module__}.{obj.__qualname__}"
    if isinstance(obj, eqx.Module):
        fields = ",".join(f"{f.name}={_stable(getattr(obj, f.name))}" for f in dataclasses.fields(obj))
        return f"{_stable(type(obj))}({fields})"
    raise _Unstable(obj)


@functools.lru_cache(maxsize=1)
def _environment() -> str:
    """jaxse3's source, the versions of what it traces through, the lowerings jaxse3 installed and the default
    precision of matrix products."""
    digest = hashlib.sha256()
    root = os.path.dirname(os.path.abspath(__file__))
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(f for f in files if f.endswith(".py")):
            with open(os.path.join(folder, name), "rb") as fh:
                digest.update(name.encode() + fh.read())
    versions = []
    for package in ("jax", "jaxlib", "equinox", "diffrax", "optimistix", "lineax", "numpy"):
        try:
            versions.append(f"{package}={importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover
            versions.append(f"{package}=?")
    key = digest.hexdigest() + ";".join(versions) + jax.default_backend() + "+".join(_runtime.LOWERINGS)
    return key + f";precision={jax.config.jax_default_matmul_precision}"


def _export_folder() -> str | None:
    folder = _runtime.cache_dir()
    return None if folder is None else os.path.join(folder, "exported")


class _Pickler(pickle.Pickler):
    """Pickles tree structures: equinox's sentinel for absent fields is matched by identity, so it travels by name."""

    def persistent_id(self, obj):
        from equinox._module._flatten import MISSING

        return "equinox-missing" if obj is MISSING else None


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        from equinox._module._flatten import MISSING

        return MISSING


def _bytes(exe: Any) -> int | None:
    """Device bytes of an executable (an equinox ``Compiled`` or an exported program's runner), or None."""
    analyse = getattr(exe, "memory_analysis", None) or getattr(getattr(exe, "compiled", None), "memory_analysis", None)
    try:
        m = analyse()
        return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes)
    except Exception:  # no analysis on this backend
        return None


def _write_atomic(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def clear_caches() -> None:
    """Drop every compiled program this process holds: JAX's caches (``jax.clear_caches()``) and the executables of
    every :class:`Compiled` (which JAX's call does not reach). Each compiled XLA:CPU program holds memory mappings
    until it is dropped; a long job that compiles many programs calls this between its parts so that the process
    stays below the kernel's limit (``vm.max_map_count``), past which XLA aborts or segfaults."""
    for compiled in list(_INSTANCES):
        compiled.clear()
    jax.clear_caches()


class Compiled:
    """``fn`` under ``eqx.filter_jit``, compiled ahead of time once per signature, the first compile announced.

    Args:
        fn: the function.
        name: its name in the messages.
        describe: optional ``describe(*args) -> str``, the words after the name (e.g. "kvaerno5, 24 DoF").
        cacheable: trace equinox runtime checks as NaN substitution (see :func:`_checks_as_nan`), so that the
            program holds no host callback and JAX's persistent cache can keep it; the caller reports failures.
    """

    def __init__(self, fn: Callable, name: str, describe: Callable[..., str] | None = None, cacheable: bool = False):
        self.fn, self.name, self.describe, self.cacheable = fn, name, describe, cacheable
        self._jit = eqx.filter_jit(fn)
        self._cache: dict[Any, Any] = {}
        self._memory: dict[Any, int | None] = {}
        _INSTANCES.add(self)

    def clear(self) -> None:
        """Drop the executables compiled so far (the next call compiles again)."""
        self._cache.clear()
        self._memory.clear()

    def compiled(self, *args: Any) -> Callable:
        """The executable for ``args``, compiled (and announced) on first use."""
        try:
            key = self._key(args)
            hash(key)
        except TypeError:  # an unhashable static leaf: plain filter_jit, which compiles silently
            return self._jit
        exe = self._cache.get(key)
        if exe is None:
            report = _REPORT[-1] if _REPORT else None
            if report is None:
                what = f" ({self.describe(*args)})" if self.describe is not None else ""
                say(f"compiling {self.name}{what} ...")
            elif not report.announced:
                say(f"compiling {report.name} ...")
                report.announced = True
            hits, t0 = STATS.cache_hits, time.perf_counter()
            _LOWERING.append(self.name)
            try:
                exe, hit = self._exported(args) if self.cacheable else (None, False)
                if exe is None:
                    with _checks_as_nan() if self.cacheable else contextlib.nullcontext():
                        lowered = self._jit.lower(*args)
                    exe = lowered.compile(compiler_options=_options())
                    hit = STATS.cache_hits > hits  # XLA's cache served it
            finally:
                _LOWERING.pop()
            dt = time.perf_counter() - t0
            STATS.compilations += 1
            STATS.loaded += hit
            STATS.seconds += dt
            if report is None:
                say(f"{self.name} {'loaded from the persistent cache' if hit else 'compiled'} in {dt:.1f} s")
            else:
                report.seconds += dt
                report.programs += 1
                report.hits += hit
            self._cache[key] = exe
            self._memory[key] = _bytes(exe)
        return exe

    @staticmethod
    def _key(args: tuple) -> tuple:
        """The executable's key: the arguments' signature and the compile mode."""
        return _signature(args), _MODE[0]

    def memory(self, *args: Any) -> int | None:
        """The bytes the executable for ``args`` needs on its device (XLA's memory analysis: arguments, outputs and
        temporaries, less the outputs that reuse argument buffers), compiling it on first use; None where XLA does
        not say."""
        self.compiled(*args)
        try:
            return self._memory.get(self._key(args))
        except TypeError:
            return None

    def _exported(self, args: tuple) -> tuple[Callable | None, bool]:
        """The executable through the exported-program cache: (executable, loaded from disk), or (None, False)
        when the arguments have no stable key or exporting fails (the caller then traces as usual)."""
        folder = _export_folder()
        if folder is None:
            return None, False
        dynamic, static = eqx.partition(args, eqx.is_array)
        leaves, dynamic_def = jax.tree.flatten(dynamic)
        try:
            key = hashlib.sha256((self.name + _environment() + _stable(args)).encode()).hexdigest()[:32]
        except _Unstable:
            return None, False
        path = os.path.join(folder, key)
        exported = out_def = None
        if os.path.exists(path + ".exported") and os.path.exists(path + ".tree"):
            try:
                with open(path + ".exported", "rb") as fh:
                    exported = jax.export.deserialize(bytearray(fh.read()))
                with open(path + ".tree", "rb") as fh:
                    out_def = _Unpickler(fh).load()
            except Exception:  # a damaged or foreign entry: trace again and overwrite it
                exported = None
        loaded = exported is not None
        if not loaded:
            structure: list = []

            def flat(*leaves):
                out = self.fn(*eqx.combine(jax.tree.unflatten(dynamic_def, leaves), static))
                out_leaves, out_structure = jax.tree.flatten(out)
                structure.append(out_structure)
                return out_leaves

            specs = [
                jax.ShapeDtypeStruct(np.shape(x), x.dtype, weak_type=getattr(x, "weak_type", False)) for x in leaves
            ]
            try:
                with _checks_as_nan():
                    exported = jax.export.export(jax.jit(flat))(*specs)
                out_def = structure[0]
                tree = io.BytesIO()
                _Pickler(tree).dump(out_def)
                serialized = exported.serialize()
                os.makedirs(folder, exist_ok=True)
                _write_atomic(path + ".exported", bytes(serialized))
                _write_atomic(path + ".tree", tree.getvalue())
                exported = jax.export.deserialize(serialized)  # run what later runs load: one XLA cache entry
            except Exception:  # not exportable (e.g. a host callback): trace as usual
                return None, False
        runner = jax.jit(exported.call).lower(*leaves).compile(compiler_options=_options())

        def call(*args):
            return jax.tree.unflatten(out_def, runner(*jax.tree.leaves(eqx.filter(args, eqx.is_array))))

        call.memory_analysis = runner.memory_analysis  # type: ignore[attr-defined]  # read by _bytes
        return call, loaded

    def __call__(self, *args: Any) -> Any:
        if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(args)):
            return self.fn(*args)
        return self.compiled(*args)(*args)
