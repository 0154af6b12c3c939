"""Small matrix products on CPU as fused elementwise arithmetic.

XLA:CPU never fuses a ``dot_general``: each one becomes a kernel of its own, compiled to its own LLVM module (about
9 ms of compile each with XLA's fast options, 35 ms fully optimised, for a 6×6 by 6×3 product) and called as a
separate step at run time. The linkage engine multiplies hundreds of such small matrices — adjoints, motion
subspaces, closure bases, 4×4 poses — so a closed four-bar's simulation held 426 of them.

:func:`install` lowers a ``dot_general`` on CPU whose operands are both small (every dimension ≤ :data:`SMALL`, batch
dimensions included, so a product batched by ``vmap`` over many members keeps its kernel) and real floating point as
what it is: the operands broadcast against each other, multiplied and summed over the contracted dimensions, which
XLA fuses with their neighbours; results equal the kernel's to round-off. Derivative and batching rules are untouched
(this acts at lowering only). Measured (``benchmarks/README.md``, "Small products fused"): a closed four-bar's 0.1 s
Kvaerno5 and index-3 Newmark-β simulations compile in 27 % less time (21.8 → 15.8 s, 20.6 → 14.9 s) and run twice as
fast; the CDM's Kvaerno5 program compiles in 24 % less. Not everywhere faster to run: the hybrid serial robot (a rod
after seven rigid links) compiles in 12–14 % less time but its simulations run about 30 % longer (the same
benchmark section). ``import jaxse3`` installs it (``JAXSE3_SMALL_PRODUCTS=0`` leaves JAX's lowering alone).

One hazard: XLA may fuse an operand's whole computation into the product's sum and evaluate it once per term of the
contraction. Where an operand is costly to compute and the other is a constant selection, gather instead of
multiplying: the planar rod's statics formed Φᵀ∇²UΦ with Φ a 0/1 selection, and XLA evaluated every Hessian entry
(sines, cosines and all) inside the product's reduction, 9.7 µs against 1.5 µs with gathers
(:func:`jaxse3.rod._gravity._run_rows`).
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np

__all__ = ["install", "SMALL"]

#: The largest dimension of a product lowered as elementwise arithmetic.
SMALL = 8


def install() -> bool:
    """Lower small real ``dot_general`` on CPU as broadcast products and sums (idempotent). Returns False when this JAX
    does not expose the registries (nothing is changed then)."""
    try:
        from jax._src.interpreters import mlir
        from jax._src.lax import lax

        prim = lax.dot_general_p
        default = mlir._platform_specific_lowerings["cpu"].get(prim) or mlir._lowerings[prim]
    except (ImportError, AttributeError, KeyError):  # pragma: no cover - another JAX layout
        return False
    rule_of = getattr(default, "rule", default)
    if getattr(rule_of, "jaxse3_small_products", False):
        return True

    def rule(ctx, lhs, rhs, *, dimension_numbers, preferred_element_type=None, **params):
        a, b = ctx.avals_in
        if not _small(a, b, preferred_element_type):
            return rule_of(
                ctx,
                lhs,
                rhs,
                dimension_numbers=dimension_numbers,
                preferred_element_type=preferred_element_type,
                **params,
            )
        fused = mlir.lower_fun(partial(_product, dimension_numbers=dimension_numbers), multiple_results=False)
        return fused(ctx, lhs, rhs)

    rule.jaxse3_small_products = True
    mlir.register_lowering(prim, rule, platform="cpu")
    return True


def _small(a, b, preferred) -> bool:
    """Both operands real floating point of one dtype, every dimension ≤ SMALL, no other result dtype asked for."""
    dtype = a.dtype
    return (
        np.issubdtype(dtype, np.floating)
        and b.dtype == dtype
        and (preferred is None or np.dtype(preferred) == dtype)
        and max((*a.shape, *b.shape), default=0) <= SMALL
    )


def _product(lhs: jax.Array, rhs: jax.Array, *, dimension_numbers) -> jax.Array:
    """``lax.dot_general(lhs, rhs, dimension_numbers)`` as one broadcast product and a sum: the result's axes are the
    batch dimensions, then lhs's free ones, then rhs's (``dot_general``'s order)."""
    (lc, rc), (lb, rb) = dimension_numbers
    lf = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    nb, nl, nr, nc = len(lb), len(lf), len(rf), len(lc)
    # (batch, lhs free, ·rhs free·, contracted) and (batch, ·lhs free·, rhs free, contracted)
    x = jax.lax.transpose(lhs, (*lb, *lf, *lc))
    y = jax.lax.transpose(rhs, (*rb, *rf, *rc))
    shape = (*x.shape[: nb + nl], *y.shape[nb : nb + nr], *x.shape[nb + nl :])
    x = jax.lax.broadcast_in_dim(x, shape, (*range(nb + nl), *range(nb + nl + nr, nb + nl + nr + nc)))
    y = jax.lax.broadcast_in_dim(y, shape, (*range(nb), *range(nb + nl, nb + nl + nr + nc)))
    terms = x * y
    return jax.lax.reduce_sum(terms, tuple(range(nb + nl + nr, terms.ndim))) if nc else terms
