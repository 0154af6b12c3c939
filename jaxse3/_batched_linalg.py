"""Batched dense factorisations and solves on CPU without jaxlib's parallel LAPACK path.

jaxlib's CPU LAPACK kernels (``getrf``, ``trsm``, ``potrf`` over a batch, as produced by ``vmap`` of a linear solve,
an LU or a Cholesky factorisation) split a large enough batch over XLA's intra-op thread pool and block until the
chunks are done. When XLA runs two such kernels side by side and they hold every pool thread, nobody runs the chunks:
the process hangs at zero CPU, for good (jaxlib 0.10.2; on 2 cores one ``vmap`` over 16 implicit CDM runs, or four
independent batched 24×24 triangular solves with B = 64). No scheduler flag prevents it in every case (with
``--xla_cpu_enable_concurrency_optimized_scheduler=false`` a batch of 256 still hangs).

:func:`install` therefore lowers *batched* ``lu``, ``triangular_solve`` and ``cholesky`` on CPU as a loop over the
members, each calling the unbatched LAPACK kernel (which never splits its work); the results are the single-matrix
results. Derivative and batching rules are untouched (this acts at lowering only). Cost: one loop
iteration per member; XLA's own expanders (JAX's platform-independent rules) were 2× slower on a batch of 32 CDM
simulations. ``import jaxse3`` installs it
(``JAXSE3_BATCHED_LINALG=0`` leaves JAX's lowering alone).

Small matrices (n ≤ :data:`SMALL`, real) need no LAPACK at all: their batched Cholesky factorisation and triangular
solves lower to the textbook recurrences unrolled over the rows, each step one elementwise operation over the whole
batch, which XLA fuses (a loop of LAPACK calls costs about a microsecond per member for a 6×6 matrix; the unrolled
Cholesky and two solves of a batch of 1000 take 0.1 ms against 1.0 ms). A matrix that is not positive definite gives
NaN for that member, as LAPACK's path does.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["install", "SMALL"]

#: The largest matrix order whose batched Cholesky factorisations and triangular solves are unrolled on CPU (at 12 the
#: unrolled program costs a spatial rod's forward-dynamics Jacobians 1.5–2 s more compile time for 4 % less run time).
SMALL = 8


def install() -> bool:
    """Lower batched ``lu``/``triangular_solve``/``cholesky`` on CPU as a loop over the members (idempotent).
    Returns False when this JAX does not expose the registries (nothing is changed then)."""
    try:
        from jax._src.interpreters import mlir
        from jax._src.lax import linalg

        prims = (linalg.lu_p, linalg.triangular_solve_p, linalg.cholesky_p)
        cpu_rules = mlir._platform_specific_lowerings["cpu"]
    except (ImportError, AttributeError):  # pragma: no cover - another JAX layout
        return False
    for prim in prims:
        cpu = cpu_rules.get(prim)
        if cpu is None or getattr(cpu.rule, "jaxse3_batched", False):
            continue

        def rule(ctx, *args, _prim=prim, _cpu=cpu.rule, **params):
            batch = ctx.avals_in[0].shape[:-2]
            if math.prod(batch) <= 1:
                return _cpu(ctx, *args, **params)
            small = _SMALL_RULES.get(_prim.name)
            if small is not None and _unrolled(ctx, params):
                return mlir.lower_fun(partial(small, **params), multiple_results=False)(ctx, *args)
            looped = mlir.lower_fun(partial(_one_at_a_time, _prim, params), multiple_results=True)
            return looped(ctx, *args)

        rule.jaxse3_batched = True
        mlir.register_lowering(prim, rule, platform="cpu")
    return True


def _one_at_a_time(prim, params, *operands):
    """``prim`` over the flattened batch of ``operands``, one member per iteration of a loop (each member lowers to
    the unbatched LAPACK kernel, which never splits work over the thread pool)."""
    batch = operands[0].shape[:-2]
    flat = [x.reshape(-1, *x.shape[len(batch) :]) for x in operands]
    out = jax.lax.map(lambda xs: prim.bind(*xs, **params), flat)
    out = out if prim.multiple_results else [out]
    return [y.reshape(*batch, *y.shape[1:]) for y in out]


def _unrolled(ctx, params: dict) -> bool:
    """A real matrix of order ≤ SMALL (and, for a triangular solve, the matrix on the left)."""
    a = ctx.avals_in[0]
    return a.shape[-1] <= SMALL and np.issubdtype(a.dtype, np.floating) and params.get("left_side", True)


def _small_cholesky(a: jax.Array) -> jax.Array:
    """L with L Lᵀ = a from a's lower triangle, over the leading axes (NaN for a member that is not positive
    definite)."""
    n = a.shape[-1]
    L: list[list] = [[None] * n for _ in range(n)]
    pivots = []
    for j in range(n):
        pivot = a[..., j, j]
        for k in range(j):
            pivot = pivot - L[j][k] * L[j][k]
        pivots.append(pivot)
        L[j][j] = jnp.sqrt(pivot)
        for i in range(j + 1, n):
            x = a[..., i, j]
            for k in range(j):
                x = x - L[i][k] * L[j][k]
            L[i][j] = x / L[j][j]
    zero = jnp.zeros_like(a[..., 0, 0])
    out = jnp.stack([jnp.stack([L[i][j] if j <= i else zero for j in range(n)], -1) for i in range(n)], -2)
    ok = jnp.all(jnp.stack(pivots, -1) > 0, axis=-1)
    return jnp.where(ok[..., None, None], out, jnp.nan)


def _small_triangular_solve(
    a: jax.Array,
    b: jax.Array,
    *,
    left_side: bool,
    lower: bool,
    transpose_a: bool,
    conjugate_a: bool,
    unit_diagonal: bool,
) -> jax.Array:
    """X with op(a) X = b (op: a or aᵀ; a real, so ``conjugate_a`` changes nothing) by forward or backward
    substitution over the rows, over the leading axes; only ``lower``'s triangle of a is read."""
    del left_side, conjugate_a
    n = a.shape[-1]
    entry = (lambda i, k: a[..., k, i]) if transpose_a else (lambda i, k: a[..., i, k])
    forward = lower != transpose_a  # op(a) is lower triangular
    x: list = [None] * n
    for i in range(n) if forward else reversed(range(n)):
        r = b[..., i, :]
        for k in range(i) if forward else range(i + 1, n):
            r = r - entry(i, k)[..., None] * x[k]
        x[i] = r if unit_diagonal else r / entry(i, i)[..., None]
    return jnp.stack(x, -2)


_SMALL_RULES = {"cholesky": _small_cholesky, "triangular_solve": _small_triangular_solve}
