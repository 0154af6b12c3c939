"""The ``jaxse3`` command.

``jaxse3`` (or ``jaxse3 demo``) runs the built-in demo of the SE(3) core: it evaluates exp, log, dexp, dexp⁻¹, their
directional derivatives, Jacobians and Hessians on a sweep of rotation angles (including exactly zero), prints their
relative errors against an independent float64 reference (the defining series, differentiated by JAX), checks the
custom_jvp rules against the closed forms, and times batched evaluation. ``--save PATH`` writes the results as JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from typing import Callable

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3 import __version__  # noqa: E402
from jaxse3.lie import se3  # noqa: E402

ANGLES = (0.0, 1e-8, 1e-4, 0.1, 1.0, 2.0, 3.0)


def _series_dexp(X: jnp.ndarray, inverse: bool) -> jnp.ndarray:
    """Independent reference: dexp_X = Σ ad_X^i/(i+1)! (seed 000 eq. (18)); dexp⁻¹ as its matrix inverse."""
    A = se3.ad(X)
    out = P = jnp.eye(6, dtype=X.dtype)
    for i in range(1, 45):
        P = P @ A / (i + 1)
        out = out + P
    return jnp.linalg.inv(out) if inverse else out


def _rel(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def accuracy_table(seed: int = 0) -> list[dict]:
    """Max relative Frobenius error per quantity over :data:`ANGLES` (random axes and translations)."""
    rng = np.random.default_rng(seed)
    rows: dict[str, float] = {}

    def record(name: str, err: float) -> None:
        rows[name] = max(rows.get(name, 0.0), err)

    for phi in ANGLES:
        n = rng.normal(size=3)
        X = jnp.asarray(np.concatenate([phi * n / np.linalg.norm(n), rng.normal(size=3)]))
        U, S, Z, Q = (jnp.asarray(rng.normal(size=6)) for _ in range(4))
        record("exp", _rel(se3.exp(X), jax.scipy.linalg.expm(se3.hat(X))))
        record("log", _rel(se3.log(se3.exp(X)), X))
        for inv in (False, True):
            tag = "dexp_inv" if inv else "dexp"
            F = lambda X, inv=inv: _series_dexp(X, inv)  # noqa: E731
            record(tag, _rel(getattr(se3, tag)(X), F(X)))
            record(f"d_{tag}", _rel(getattr(se3, "d_" + tag)(X, U), jax.jvp(F, (X,), (U,))[1]))
            d2_ref = jax.jvp(lambda X: jax.jvp(F, (X,), (U,))[1], (X,), (S,))[1]
            record(f"d2_{tag}", _rel(getattr(se3, "d2_" + tag)(X, U, S), d2_ref))
            record(f"{tag}_jac", _rel(getattr(se3, tag + "_jac")(X, Z), jax.jacfwd(lambda X: F(X) @ Z)(X)))
            H_ref = jax.hessian(lambda X: Q @ F(X) @ Z)(X)
            record(f"{tag}_hess", _rel(getattr(se3, tag + "_hess")(X, Q, Z), H_ref))
            apply = getattr(se3, tag + "_apply")
            record(f"hessian via custom rules ({tag})", _rel(jax.hessian(lambda X: Q @ apply(X, Z))(X), H_ref))
    return [{"quantity": k, "max_rel_error": v} for k, v in rows.items()]


def _time(fn: Callable, *args, repeats: int = 5) -> float:
    jax.block_until_ready(fn(*args))
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best.append(time.perf_counter() - t0)
    return float(np.median(best))


def speed_table(batch: int, seed: int = 0) -> list[dict]:
    """Time per element of batched (vmapped, jitted) evaluation, float64, CPU."""
    rng = np.random.default_rng(seed)
    X = jnp.asarray(rng.normal(size=(batch, 6)))
    Z, Q = (jnp.asarray(rng.normal(size=(batch, 6))) for _ in range(2))
    cases = {
        "exp": (jax.jit(se3.exp), (X,)),
        "log": (jax.jit(se3.log), (se3.exp(X),)),
        "dexp_inv_apply": (jax.jit(se3.dexp_inv_apply), (X, Z)),
        "jacfwd(dexp_apply) [custom rule]": (jax.jit(jax.vmap(jax.jacfwd(se3.dexp_apply))), (X, Z)),
        "hessian(Q·dexp_apply) [custom rules]": (
            jax.jit(jax.vmap(jax.hessian(lambda X, Q, Z: Q @ se3.dexp_apply(X, Z)))), (X, Q, Z)),
        "dexp_hess [closed form]": (jax.jit(se3.dexp_hess), (X, Q, Z)),
    }  # fmt: skip
    return [{"function": k, "batch": batch, "ns_per_element": 1e9 * _time(f, *a) / batch} for k, (f, a) in cases.items()]


def _print_table(rows: list[dict], title: str) -> None:
    print(f"\n{title}")
    keys = list(rows[0])
    width = [max(len(k), *(len(_fmt(r[k])) for r in rows)) for k in keys]
    print("  ".join(k.ljust(w) for k, w in zip(keys, width)))
    print("  ".join("-" * w for w in width))
    for r in rows:
        print("  ".join(_fmt(r[k]).ljust(w) for k, w in zip(keys, width)))


def _fmt(v) -> str:
    return f"{v:.2e}" if isinstance(v, float) and (v < 1e-2 or v > 1e5) else (f"{v:.1f}" if isinstance(v, float) else str(v))


def demo(batch: int = 10_000, save: str | None = None) -> dict:
    """Run the demo and return (and optionally save) its results."""
    print(f"jaxse3 {__version__} — closed-form SE(3) maps with analytical derivatives (jax {jax.__version__}, "
          f"{jax.default_backend()}, {platform.machine()})")  # fmt: skip
    print(f"angles φ = {ANGLES} (random axes and translations), float64; reference: defining series + JAX autodiff")
    acc = accuracy_table()
    _print_table(acc, "Accuracy (max relative Frobenius error)")
    spd = speed_table(batch)
    _print_table(spd, f"Speed (jit + vmap, batch {batch})")
    worst = max(r["max_rel_error"] for r in acc)
    ok = worst < 1e-10
    print(f"\nworst relative error {worst:.2e}: {'OK' if ok else 'FAILED'}")
    result = {"version": __version__, "accuracy": acc, "speed": spd, "ok": ok}
    if save:
        with open(save, "w") as fh:
            json.dump(result, fh, indent=2)
        print(f"results written to {save}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jaxse3", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    d = sub.add_parser("demo", help="the built-in demo of the SE(3) core (default)")
    for p in (parser, d):
        p.add_argument("--batch", type=int, default=10_000, help="batch size for the timing table (default 10000)")
        p.add_argument("--save", metavar="PATH", help="write the results as JSON")
    args = parser.parse_args(argv)
    if args.batch < 1:
        parser.error("--batch must be a positive integer")
    result = demo(batch=args.batch, save=args.save)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
