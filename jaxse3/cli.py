"""The ``jaxse3`` command: built-in examples.

``jaxse3 run cdm`` (the main job) simulates the cable-driven soft manipulator of seed 003 for 10 s with a progress
bar, prints a timing summary (compilation separately from the simulation's wall time) and writes the trajectory
(``cdm.npz``: ``t``, ``q``, ``qd``, ``u``, ``points``, ``tip`` world positions) and a figure (``cdm.png``: shape
snapshots, tip path) to ``--out`` (default ``./jaxse3-out``). ``jaxse3 list`` lists the examples. ``jaxse3 run
lie-demo`` (also plain ``jaxse3`` or ``jaxse3 demo``) runs the demo of the SE(3) core: accuracy of exp, log, dexp,
dexp⁻¹ and their derivatives against an independent float64 reference, and batched timings (``--batch``, ``--save``).
"""

from __future__ import annotations

import argparse
import json
import os
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


def run_rod_example(name: str, args: argparse.Namespace) -> int:
    """Simulate a built-in rod scenario; print the timing summary (compilation apart from the simulation); write
    ``<name>.npz`` (with units and the run's parameters) and ``<name>.png``."""
    from jaxse3._compile import STATS  # noqa: PLC0415 - heavy imports only for this command
    from jaxse3.sim import scenarios, simulate  # noqa: PLC0415

    if args.contact:
        system, inputs, what = scenarios.cdm_contact_system(), scenarios.cdm_tensions(2.0), (
            "the seed 003 CDM inside a cylinder (r = 0.15 m, k_c = 1e5 N/m, p = 1.5)")
    else:
        system, inputs, what = scenarios.cdm_system(), scenarios.cdm_tensions(), "the seed 003 cable-driven manipulator"
    rod = system.params[0]
    kw = dict(solver=args.solver, rtol=args.rtol, atol=args.atol, dt=args.dt, n_save=args.n_save,
              max_steps=args.max_steps)  # fmt: skip
    print(f"jaxse3 run {name}: {what}; {rod.n_dof} DoF, {rod.n_points} points, {rod.n_tendons} cables; "
          f"{args.t_final:g} s with {args.solver} (analytic Jacobian)"
          + (f", dt = {args.dt:g} s" if args.solver == "newmark" else f", rtol {args.rtol:g}, atol {args.atol:g}"),
          flush=True)
    compiled, seconds, hits = STATS.compilations, STATS.seconds, STATS.cache_hits
    t0 = time.perf_counter()
    traj = jax.block_until_ready(simulate(system, inputs, t_final=args.t_final, progress=args.progress, **kw))
    wall = time.perf_counter() - t0
    compile_s = STATS.seconds - seconds
    sim_s = wall - compile_s
    cache = (f"{STATS.cache_hits - hits} of {STATS.compilations - compiled} programs from the persistent cache"
             if STATS.compilations > compiled else "already compiled in this process")
    print(f"compile: {compile_s:.1f} s ({cache})")
    print(f"simulation: {args.t_final:g} s simulated in {sim_s:.2f} s wall ({args.t_final / sim_s:.2f} rod-s per "
          f"wall-s), {int(traj.num_steps)} solver steps")
    tip = np.asarray(traj.tip)
    print(f"tip (world, m): start {np.array2string(tip[0], precision=4)}, end {np.array2string(tip[-1], precision=4)}, "
          f"max horizontal excursion {np.max(np.linalg.norm(tip[:, :2], axis=1)):.4f}")
    npz, png = os.path.join(args.out, f"{name}.npz"), os.path.join(args.out, f"{name}.png")
    params = {"example": name, "t_final": args.t_final, "jaxse3": __version__, **kw, "atol": args.atol}
    traj.save(npz, metadata={"run": params})
    from jaxse3.viz import plot_trajectory  # noqa: PLC0415

    plot_trajectory(traj, png, title=f"jaxse3 run {name}")
    print(f"wrote {npz} (t, q, qd, u, points, tip, with units and run parameters) and {png}")
    return 0


def _writable_folder(parser: argparse.ArgumentParser, option: str, folder: str) -> None:
    """Create ``folder`` (for ``option``) now, before any work, or stop with a clear message."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        parser.error(f"{option}: cannot create the folder {folder!r}: {e.strerror}")
    if not os.access(folder, os.W_OK):
        parser.error(f"{option}: the folder {folder!r} is not writable")


EXAMPLES = {
    "cdm": "seed 003 cable-driven soft manipulator, 10 s dynamics (the main job)",
    "cdm-contact": "the CDM inside a hollow cylinder with Hertz-type contact (seed 003 §6.2)",
    "lie-demo": "accuracy and speed of the SE(3) core's closed forms (exp, log, dexp, derivatives)",
}


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {kind.__name__}, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxse3", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("list", help="list the built-in examples")
    d = sub.add_parser("demo", help="the demo of the SE(3) core (same as 'run lie-demo'; the default)")
    r = sub.add_parser("run", help="run a built-in example (see 'jaxse3 list')")
    r.add_argument("example", choices=list(EXAMPLES), metavar="EXAMPLE", help="one of: " + ", ".join(EXAMPLES))
    r.add_argument("--t-final", type=_positive(float), default=10.0, help="simulated time in s (default 10)")
    r.add_argument("--out", default="jaxse3-out", help="output folder (default ./jaxse3-out)")
    r.add_argument("--solver", choices=("kvaerno5", "kvaerno3", "newmark", "tsit5", "dopri5"), default="kvaerno5")
    r.add_argument("--rtol", type=_positive(float), default=1e-3, help="relative tolerance (default 1e-3)")
    r.add_argument("--atol", type=_positive(float), default=1e-6, help="absolute tolerance (default 1e-6)")
    r.add_argument("--dt", type=_positive(float), default=2e-3, help="Newmark-β step in s (default 2e-3)")
    r.add_argument("--n-save", type=_positive(int), default=201, help="saved time samples (default 201)")
    r.add_argument("--max-steps", type=_positive(int), default=100_000, help="solver step limit (default 100000)")
    r.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    parser.run_parser = r  # type: ignore[attr-defined]  # main() reads its defaults
    for p in (parser, d, r):
        p.add_argument("--batch", type=_positive(int), default=10_000, help="lie-demo: timing batch size (10000)")
        p.add_argument("--save", metavar="PATH", help="lie-demo: write the results as JSON")
    return parser


#: options of ``run`` that only rod examples use, and those only lie-demo uses (argument name: flag)
_ROD_OPTIONS = {"t_final": "--t-final", "out": "--out", "solver": "--solver", "rtol": "--rtol", "atol": "--atol",
                "dt": "--dt", "n_save": "--n-save", "max_steps": "--max-steps", "progress": "--no-progress"}
_DEMO_OPTIONS = {"batch": "--batch", "save": "--save"}


def _unused(parser: argparse.ArgumentParser, args: argparse.Namespace, options: dict[str, str]) -> list[str]:
    return [flag for key, flag in options.items() if getattr(args, key) != parser.get_default(key)]


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "list":
        for name, text in EXAMPLES.items():
            print(f"{name:12s} {text}")
        return 0
    run = parser.run_parser  # type: ignore[attr-defined]
    if args.command == "run" and args.example != "lie-demo":
        if args.n_save < 2:
            parser.error("--n-save must be at least 2")
        unused = _unused(run, args, _DEMO_OPTIONS)
        if unused:
            parser.error(f"{', '.join(unused)}: only for lie-demo, not for {args.example}")
        _writable_folder(parser, "--out", args.out)
        args.contact = args.example == "cdm-contact"
        return run_rod_example(args.example, args)
    if args.command == "run":
        unused = _unused(run, args, _ROD_OPTIONS)
        if unused:
            parser.error(f"{', '.join(unused)}: not used by lie-demo (only --batch and --save are)")
    if args.save:
        _writable_folder(parser, "--save", os.path.dirname(os.path.abspath(args.save)))
    result = demo(batch=args.batch, save=args.save)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
