"""Lie-group generalised-α on the heavy top: exp vs Cayley, and exact (with T(θ)) vs T ≈ I iteration matrix.

Seed 001 claims (abstract, §4) that the Cayley version is "computationally more efficient" but gives no numbers (digest
§7.1). Measured here, side by side in one run (float64, medians of interleaved repeats, compile time separate):

* time per step of a whole ``diffeqsolve`` (one top, and a vmapped batch of tops, which amortises the loop overhead),
* Newton iterations per step,
* error at t1 at equal h, and at equal cost (error interpolated on log–log to the same wall time),
* the iteration matrix with vs without the tangent operator T(θ).

Usage::

    python benchmarks/bench_generalized_alpha.py [--t1 0.5] [--batch 64] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)

import diffrax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from _timing import time_group  # noqa: E402
from heavy_top import OMEGA0, reference, top_term  # noqa: E402

from jaxse3.integrate import newton_statistics  # noqa: E402
from jaxse3.integrate.generalized_alpha import GeneralizedAlpha  # noqa: E402

CASES = [("exp", True), ("cayley", True), ("exp", False), ("cayley", False)]


def make_run(cm, tangent_operator, t1, tol, h_min):
    """Single-top solve ``(Ω0, h) -> (R(t1), Ω(t1), Newton iterations per step)``; h is traced (one compile)."""
    solver = GeneralizedAlpha(0.9, cm, tangent_operator, tol)

    def run(omega0, h):
        sol = diffrax.diffeqsolve(
            top_term(),
            solver,
            0.0,
            t1,
            h,
            (jnp.eye(3), omega0),
            saveat=diffrax.SaveAt(t1=True, solver_state=True),
            max_steps=round(t1 / h_min) + 1,
        )
        return sol.ys[0][-1], sol.ys[1][-1], newton_statistics(sol)["per_step"]

    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--t1", type=float, default=0.5)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--tol", type=float, default=1e-12)
    args = p.parse_args()
    t1, steps, h_time = args.t1, (1e-3, 5e-4, 2.5e-4, 1.25e-4), 1e-3
    _, R_ref, W_ref = reference(t1)
    R_ref, W_ref = R_ref[-1], W_ref[-1]
    omega0 = jnp.asarray(OMEGA0)
    omegas = omega0 + 0.01 * jnp.asarray(np.random.default_rng(0).normal(size=(args.batch, 3)))
    print(
        f"heavy top, rho_inf = 0.9, t1 = {t1}, Newton tol = {args.tol:g} (scaled residual), float64, "
        f"{jax.devices()[0].platform}"
    )

    runs = {c: make_run(*c, t1, args.tol, min(steps)) for c in CASES}
    cases = []
    for c in CASES:
        cases += [(runs[c], (omega0, h_time)), (jax.vmap(runs[c], in_axes=(0, None)), (omegas, h_time))]
    timings = time_group(cases, repeats=args.repeats)
    n_time = t1 / h_time
    cost = {
        c: dict(
            us_step=1e6 * timings[2 * k].median_s / n_time,
            us_step_top=1e6 * timings[2 * k + 1].median_s / n_time / args.batch,
            compile_s=timings[2 * k].compile_s,
        )
        for k, c in enumerate(CASES)
    }
    rows = {}
    for c in CASES:
        fn = jax.jit(runs[c])
        for h in steps:
            R, W, newton = fn(omega0, h)
            rows[c + (h,)] = dict(
                newton=float(newton),
                err_R=float(np.linalg.norm(np.asarray(R) - R_ref, 2)),
                err_W=float(np.linalg.norm(np.asarray(W) - W_ref) / np.linalg.norm(W_ref)),
            )

    print(f"\ntime per step at h = {h_time:g} ({n_time:.0f} steps, median of {args.repeats} interleaved repeats):")
    print(f"| map | T(θ) in S | µs/step (1 top) | µs/step/top (vmap {args.batch}) | compile s (1 top) |")
    print("|---|---|---|---|---|")
    for c in CASES:
        r = cost[c]
        print(
            f"| {c[0]} | {'T(θ)' if c[1] else 'I'} | {r['us_step']:.1f} | {r['us_step_top']:.2f} | "
            f"{r['compile_s']:.1f} |"
        )
    print("\naccuracy and Newton iterations:")
    print("| map | T(θ) in S | h | Newton/step | ‖R−Rref‖₂ | \\|Ω−Ωref\\|/\\|Ωref\\| |")
    print("|---|---|---|---|---|---|")
    for c in CASES:
        for h in steps:
            r = rows[c + (h,)]
            print(
                f"| {c[0]} | {'T(θ)' if c[1] else 'I'} | {h:g} | {r['newton']:.2f} | {r['err_R']:.3e} | "
                f"{r['err_W']:.3e} |"
            )

    e, y = ("exp", True), ("cayley", True)
    print("\nratios Cayley / exp (exact iteration matrix):")
    print(
        f"  time/step: 1 top {cost[y]['us_step'] / cost[e]['us_step']:.2f}, "
        f"vmap {cost[y]['us_step_top'] / cost[e]['us_step_top']:.2f}"
    )
    for h in steps:
        print(
            f"  h = {h:g}: R-error {rows[y + (h,)]['err_R'] / rows[e + (h,)]['err_R']:.2f}, "
            f"Ω-error {rows[y + (h,)]['err_W'] / rows[e + (h,)]['err_W']:.2f}"
        )
    # equal cost: error ∝ h² at order 2 and cost ∝ (time/step)/h, so at equal cost
    # err_cay/err_exp = (err ratio at equal h) × (time/step ratio)²; evaluated with the fitted error constants.
    for key, label in (("us_step", "1 top"), ("us_step_top", "vmap")):
        const = {c: np.mean([rows[c + (h,)]["err_R"] / h**2 for h in steps]) for c in (e, y)}
        ratio = const[y] / const[e] * (cost[y][key] / cost[e][key]) ** 2
        print(f"  equal cost ({label}): R-error Cayley/exp = {ratio:.2f}")
    print("\nT ≈ I vs exact T(θ) (same map):")
    for m in ("exp", "cayley"):
        print(
            f"  {m}: time/step ratio (I / T) {cost[(m, False)]['us_step'] / cost[(m, True)]['us_step']:.2f}; "
            + ", ".join(
                f"h = {h:g}: {rows[(m, False, h)]['newton']:.2f} vs {rows[(m, True, h)]['newton']:.2f}" for h in steps
            )
            + " Newton/step"
        )


if __name__ == "__main__":
    main()
