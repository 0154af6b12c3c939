"""Small timing helper shared by the benchmarks: compile once (timed separately), then the median of repeated calls.

Every measured call is followed by ``jax.block_until_ready``, so the numbers are latencies of finished computations,
not of asynchronous dispatch. Very short calls (batch 1) are looped ``number`` times per sample, with ``number``
chosen so that one sample lasts at least ``min_sample_s``; the reported time is per call.

:func:`time_group` times several cases *interleaved* (round-robin: one sample of each case, then the next round), so
that slow drifts in machine load hit all cases of a comparison alike and their ratios stay meaningful on a shared
machine. :func:`time_jit` times one function on its own.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp


@dataclass
class Timing:
    compile_s: float  # trace + lower + XLA compile of the jitted function
    flops: float  # XLA cost analysis of the compiled executable (load-independent); nan if unavailable
    bytes_accessed: float
    number: int = 1  # calls per sample
    samples: list = field(default_factory=list)  # seconds per call, one entry per sample
    out: Any = None  # the result of the last call (for correctness checks)

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples)

    @property
    def min_s(self) -> float:
        return min(self.samples)


def _compile(fn: Callable, args: Sequence) -> tuple[Callable, Timing]:
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    try:
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost
        flops, nbytes = float(cost.get("flops", "nan")), float(cost.get("bytes accessed", "nan"))
    except Exception:
        flops = nbytes = float("nan")
    return compiled, Timing(compile_s, flops, nbytes)


def _sample(compiled: Callable, args: Sequence, number: int):
    t0 = time.perf_counter()
    for _ in range(number):
        out = jax.block_until_ready(compiled(*args))
    return (time.perf_counter() - t0) / number, out


def time_group(
    cases: Sequence[tuple[Callable, Sequence]], repeats: int = 7, min_sample_s: float = 0.02, max_number: int = 2000
) -> list[Timing]:
    """Jit-compile every ``(fn, args)`` (timed), then time them one after the other; one :class:`Timing` per case.

    Each case's samples run in a row after an untimed call, so they measure the steady state of repeated calls (as
    in a solver's loop). Samples taken round-robin across the cases (before 2026-11-28) let a program start after
    another large one, on cold caches and memory that program's buffers took: the fin-ray's closed-chain Jacobian
    measured 17 ms so, against 5 ms alone. Time on a quiet machine: the cases no longer share the load's drift."""
    compiled, timings = zip(*(_compile(fn, args) for fn, args in cases))
    for c, tm, (_, args) in zip(compiled, timings, cases):
        _sample(c, args, 1)  # warm-up (first-call allocations)
        one, tm.out = _sample(c, args, 1)
        tm.number = int(min(max_number, max(1, min_sample_s / max(one, 1e-7))))
    for c, tm, (_, args) in zip(compiled, timings, cases):
        _sample(c, args, 1)
        for _ in range(repeats):
            s, tm.out = _sample(c, args, tm.number)
            tm.samples.append(s)
    return list(timings)


def time_jit(fn: Callable, *args, repeats: int = 7, min_sample_s: float = 0.02, max_number: int = 2000) -> Timing:
    """Jit-compile ``fn`` for ``args`` (timed), then time it: median over ``repeats`` samples, per call."""
    return time_group([(fn, args)], repeats, min_sample_s, max_number)[0]


def in_a_loop(fn: Callable, number: int) -> Callable:
    """``fn`` evaluated ``number`` times in one compiled loop (``lax.fori_loop``): each evaluation's first argument is
    the last one's plus 1e−300 × the sum of its outputs (below the argument's last bit, so the values stay; but XLA
    can neither hoist nor drop an evaluation). Its time ÷ ``number`` is the cost of one evaluation inside a program, as
    in a solver's loop, without the fixed cost of launching a program from Python: XLA:CPU's thunk executor spends
    60–90 µs per launch of the hybrid serial robot's programs on this machine (2026-12-05), more than a third of its
    Jacobian's evaluation. Returns ``fn``'s output of the last evaluation."""

    def loop(*args):
        def body(_, carry):
            x, _ = carry
            out = fn(*x)
            total = sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(out))
            return (x[0] + 1e-300 * total, *x[1:]), out

        out = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(fn, *args))
        return jax.lax.fori_loop(0, number, body, (args, out))[1]

    return loop


def fmt_time(seconds: float) -> str:
    """Human-readable duration: ns, µs, ms or s with three significant digits."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if seconds >= scale or unit == "ns":
            v = seconds / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    raise AssertionError


def timed(fn: Callable) -> tuple[Any, float, float]:
    """(result, wall s, process CPU s) of ``fn()`` run to completion (``block_until_ready``). On a shared machine the
    CPU time (all threads of this process) is a load-robust upper estimate of the wall time on an idle one."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - t0, time.process_time() - c0


def first_and_median(run: Callable[[], Any], repeats: int = 3) -> tuple[Any, float, float]:
    """(result, seconds of the first call (compilation included), median seconds of ``repeats`` more) of ``run()``,
    each call run to completion (``block_until_ready``)."""
    t0 = time.perf_counter()
    out = jax.block_until_ready(run())
    first = time.perf_counter() - t0
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(run())
        samples.append(time.perf_counter() - t0)
    return out, first, float(statistics.median(samples))


def jacobian_by_columns(fd: Callable, q: Any, qd: Any, eps: float = 1e-6) -> tuple[Any, Any]:
    """(∂fd/∂q, ∂fd/∂q̇) by forward differences, one column after the other (``lax.map``, no vmap): the loop of seed
    003 eq. (38), the paper's finite-difference baseline."""
    import jax.numpy as jnp

    n = q.shape[0]
    y, x = fd(q, qd), jnp.concatenate([q, qd])
    cols = jax.lax.map(lambda e: (fd(*jnp.split(x + eps * e, 2)) - y) / eps, jnp.eye(2 * n))
    return cols[:n].T, cols[n:].T
