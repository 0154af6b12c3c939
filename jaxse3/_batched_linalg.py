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
"""

from __future__ import annotations

import math
from functools import partial

import jax

__all__ = ["install"]


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
