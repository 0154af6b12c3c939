"""Benchmark: analytical first/second-order derivatives of inverse dynamics (IDSVA FO/SO) vs autodiff and Pinocchio.

Run from the repository root::

    python benchmarks/rigid_derivatives.py                   # UR5, Panda, HyQ, Talos + autoTree N = 6, 12, 24, 48
    python benchmarks/rigid_derivatives.py --quick           # HyQ and autoTree N = 12, batch 100, fewer repeats
    python benchmarks/rigid_derivatives.py --markdown rigid_derivatives.md

Per model: jaxse3 per call (batch 1, ``jax.jit``) and per state under ``jax.vmap`` (batch B, default 1000; the
autodiff reference at ``--ad-batch``, default B, since nested autodiff needs far more memory per state), CPU,
float64, medians of interleaved repeats (``benchmarks/_timing.py``), compile time separate:

* FO: ``rnea_derivatives`` (IDSVA FO) vs ``jax.jacfwd`` of the plain RNEA in (tangent q, v, a);
* SO: ``rnea_second_order_derivatives`` (IDSVA SO, all four n³ tensors) vs nested ``jax.jacfwd`` of the plain RNEA;
* Pinocchio ``computeRNEADerivatives`` per call from Python (its SO routine is C++ only; digest 002 §5 measured
  ≈ 37 µs for HyQ on this machine type).

Ratios "autodiff / ours" > 1 mean ours is faster. Outputs are cross-checked (max relative difference to autodiff).
"""

from __future__ import annotations

import argparse
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import fmt_time, time_group  # noqa: E402
from rigid_dynamics import ROBOTS, _pin_time, benchmark_models  # noqa: E402

from jaxse3 import rigid  # noqa: E402
from jaxse3.rigid import (  # noqa: E402
    integrate,
    interop,
    rnea_autodiff,
    rnea_derivatives,
    rnea_second_order_derivatives,
)


def autodiff_first_order(m, q, v, a):
    z = jnp.zeros(m.nv)
    return jax.jacfwd(lambda d, v, a: rnea_autodiff(m, integrate(m, q, d), v, a), (0, 1, 2))(z, v, a)


def autodiff_second_order(m, q, v, a):
    z = jnp.zeros(m.nv)

    def dtau_dq(d, v, a):
        return jax.jacfwd(lambda e: rnea_autodiff(m, integrate(m, integrate(m, q, d), e), v, a))(z)

    Hqq, Hqv, dMT = jax.jacfwd(dtau_dq, (0, 1, 2))(z, v, a)
    Hvv = jax.jacfwd(jax.jacfwd(lambda x: rnea_autodiff(m, q, x, a)))(v)
    return Hqq, Hvv, Hqv, jnp.swapaxes(dMT, 1, 2)  # ∂/∂a (∂τ/∂q) = dM[:, l, j] -> [row, col, q]


def chunked(fn, chunk):
    """``fn`` over a batch as ``jax.lax.map(..., batch_size=chunk)``: vmapped chunks of ``chunk`` states in a loop.

    At batch 1000 the plain vmap streams every intermediate of all states through memory (the SO kernel is
    memory-bound on CPU); chunks of a few states stay in cache (measured 1.6× for FO, 2.6× for SO on HyQ)."""
    return lambda *xs: jax.lax.map(lambda x: fn(*x), xs, batch_size=chunk)


def bench_model(label, m, pm, batch, repeats, ad_batch=None, chunk=8, vmap_column=True):
    import pinocchio as pin

    rng = np.random.default_rng(0)
    keys = jax.random.split(jax.random.PRNGKey(0), batch)
    Q = jax.vmap(lambda k: rigid.random_configuration(m, k))(keys)
    V, A = (jnp.asarray(rng.normal(size=(batch, m.nv))) for _ in range(2))
    algos = {
        "FO": (lambda q, v, a: rnea_derivatives(m, q, v, a), lambda q, v, a: autodiff_first_order(m, q, v, a)),
        "SO": (
            lambda q, v, a: rnea_second_order_derivatives(m, q, v, a),
            lambda q, v, a: autodiff_second_order(m, q, v, a),
        ),
    }
    ad_batch = ad_batch or batch
    cases = []
    for ours, ad in algos.values():
        # without the single-vmap column (too much memory: its intermediates scale with the batch), the slot times the
        # chunked kernel twice and is reported as "—"
        whole = jax.vmap(ours) if vmap_column else chunked(ours, chunk)
        cases += [(ours, (Q[0], V[0], A[0])), (whole, (Q, V, A)), (chunked(ours, chunk), (Q, V, A))]
        cases += [(ad, (Q[0], V[0], A[0])), (jax.vmap(ad), (Q[:ad_batch], V[:ad_batch], A[:ad_batch]))]
    t = time_group(cases, repeats=repeats)
    pd = pm.createData()
    qp, vp, ap = interop.to_pinocchio(m, np.asarray(Q[0]), np.asarray(V[0]), np.asarray(A[0]))
    t_pin = _pin_time(lambda: pin.computeRNEADerivatives(pm, pd, qp, vp, ap), repeats)
    rows = []
    for k, name in enumerate(algos):
        o1, ob, oc, a1, ab = t[5 * k : 5 * k + 5]
        err = max(float(jnp.max(jnp.abs(x - y)) / jnp.max(jnp.abs(y))) for x, y in zip(o1.out, a1.out))
        rows.append(
            (
                label,
                m.nv,
                name,
                o1.median_s,
                ob.median_s / batch if vmap_column else float("nan"),
                oc.median_s / batch,
                a1.median_s,
                ab.median_s / ad_batch,
                t_pin if name == "FO" else float("nan"),
                o1.compile_s + ob.compile_s,
                a1.compile_s + ab.compile_s,
                err,
            )
        )
    return rows


def _table(rows, batch, ad_batch=None, chunk=8):
    head = (
        f"| model | nv | order | ours batch 1 | ours per state (vmap {batch}) | "
        f"ours per state (chunks of {chunk}) | autodiff batch 1 | autodiff per state (vmap {ad_batch or batch}) | "
        f"autodiff/ours batch 1 | autodiff/ours per state | Pinocchio FO per call | "
        f"ours per state (best) / Pinocchio | "
        f"compile ours / autodiff | max rel diff |\n|" + "---|" * 14
    )
    out = [head]
    for lab, nv, name, o1, ob, oc, a1, ab, tp, co, ca, e in rows:
        best = oc if ob != ob else min(ob, oc)  # ob is NaN without the single-vmap column
        pin_cols = f"{fmt_time(tp)} | {best / tp:.2f}" if tp == tp else "— | —"
        whole = fmt_time(ob) if ob == ob else "—"
        out.append(
            f"| {lab} | {nv} | {name} | {fmt_time(o1)} | {whole} | {fmt_time(oc)} | "
            f"{fmt_time(a1)} | {fmt_time(ab)} | {a1 / o1:.1f} | {ab / best:.1f} | {pin_cols} | "
            f"{co:.0f} s / {ca:.0f} s | {e:.0e} |"
        )
    return "\n".join(out)


def main(argv=None):

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument(
        "--ad-batch",
        type=int,
        default=None,
        help="batch of the vmapped autodiff reference (default: --batch); the nested-autodiff SO needs "
        "~30 GB at batch 1000 for HyQ, so use e.g. 100 there",
    )
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--chunk", type=int, default=8, help="chunk size of the lax.map(batch_size=...) column")
    ap.add_argument("--robots", default=None, help="comma-separated subset of " + ",".join(ROBOTS))
    ap.add_argument("--sizes", default=None, help="comma-separated autoTree sizes (default 6,12,24,48)")
    ap.add_argument(
        "--vmap-max-nv",
        type=int,
        default=None,
        help="skip the single-vmap column for models with more DoFs (its memory grows with the batch: "
        "Talos, nv = 38, needs ~27 GB at batch 1000); the chunked column still runs",
    )
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args(argv)
    batch = args.batch or (100 if args.quick else 1000)
    repeats = 3 if args.quick else args.repeats
    robots = args.robots.split(",") if args.robots else (["HyQ"] if args.quick else list(ROBOTS))
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([12] if args.quick else [6, 12, 24, 48])
    models = benchmark_models(robots, sizes)
    rows = []
    for label, m, pm in models:
        rows += bench_model(
            label,
            m,
            pm,
            batch,
            repeats,
            args.ad_batch,
            args.chunk,
            vmap_column=args.vmap_max_nv is None or m.nv <= args.vmap_max_nv,
        )
        table = _table(rows, batch, args.ad_batch, args.chunk)
        print("\n".join(table.splitlines()[-2:]), flush=True)
        if args.markdown:  # rewritten after every model: an interrupted run keeps what it measured
            with open(args.markdown, "w") as fh:
                fh.write(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
