"""Ahead-of-time compilation with a visible first call.

:class:`Compiled` wraps a function for ``eqx.filter_jit`` and compiles it once per argument signature (tree
structure, array shapes and dtypes, static values); the first compile is announced on stderr — "compiling …", then
the seconds it took and whether JAX's persistent cache served it — so a user never waits on a silent compile. Inside
:func:`compile_report` several programs (e.g. the parts of one simulation) are announced as one. Inside a caller's
trace (``jit``, ``vmap``, ``grad``) a :class:`Compiled` simply calls its function.

``JAXSE3_VERBOSE=0`` silences the messages. :data:`STATS` counts compilations, their seconds and persistent-cache hits
(the CLI reports them; tests use them to show that a second run is served from the cache).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import equinox as eqx
import jax
import numpy as np

__all__ = ["Compiled", "compile_report", "STATS", "CompileStats"]


@dataclass
class CompileStats:
    """Counters since the process started."""

    compilations: int = 0  #: programs compiled (or loaded from the persistent cache) by :class:`Compiled`
    seconds: float = 0.0  #: wall time spent in those compilations
    cache_hits: int = 0  #: programs JAX loaded from its persistent cache (any caller)


STATS = CompileStats()


def _on_event(event: str, **kwargs: Any) -> None:
    if event == "/jax/compilation_cache/cache_hits":
        STATS.cache_hits += 1


jax.monitoring.register_event_listener(_on_event)


def _verbose() -> bool:
    return os.environ.get("JAXSE3_VERBOSE", "1").strip().lower() not in ("0", "false", "no", "off")


def _say(text: str) -> None:
    if _verbose():
        print(f"jaxse3: {text}", file=sys.stderr, flush=True)


@dataclass
class _Report:
    name: str
    announced: bool = False
    seconds: float = 0.0
    programs: int = 0
    hits: int = 0


_REPORT: list[_Report] = []


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
            _say(f"{report.name} compiled in {report.seconds:.1f} s{cached}")


@contextlib.contextmanager
def _checks_as_nan() -> Iterator[None]:
    """While tracing, equinox's runtime checks (``eqx.error_if``, which diffrax, optimistix and lineax use, e.g. for
    ``saveat.ts`` and ``dt0``) substitute NaN instead of raising through a host callback: JAX's persistent cache
    refuses programs with host callbacks. A failing check then shows up as NaN and a failed solve (a result code)
    that the caller reports. Relies on equinox's private ``_errors`` module; without it nothing changes (the program
    is then compiled on every run, but correct)."""
    from equinox import _errors  # noqa: PLC0415

    impl, jitted = getattr(_errors, "branched_error_if_impl", None), getattr(_errors, "branched_error_if_impl_jit", None)
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

    def compiled(self, *args) -> Callable:
        """The executable for ``args``, compiled (and announced) on first use."""
        try:
            key = _signature(args)
            hash(key)
        except TypeError:  # an unhashable static leaf: plain filter_jit, which compiles silently
            return self._jit
        exe = self._cache.get(key)
        if exe is None:
            report = _REPORT[-1] if _REPORT else None
            if report is None:
                what = f" ({self.describe(*args)})" if self.describe is not None else ""
                _say(f"compiling {self.name}{what} ...")
            elif not report.announced:
                _say(f"compiling {report.name} ...")
                report.announced = True
            hits, t0 = STATS.cache_hits, time.perf_counter()
            with _checks_as_nan() if self.cacheable else contextlib.nullcontext():
                lowered = self._jit.lower(*args)
            exe = lowered.compile()
            dt, hit = time.perf_counter() - t0, STATS.cache_hits > hits
            STATS.compilations += 1
            STATS.seconds += dt
            if report is None:
                _say(f"{self.name} {'loaded from the persistent cache' if hit else 'compiled'} in {dt:.1f} s")
            else:
                report.seconds += dt
                report.programs += 1
                report.hits += hit
            self._cache[key] = exe
        return exe

    def __call__(self, *args):
        if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(args)):
            return self.fn(*args)
        return self.compiled(*args)(*args)
