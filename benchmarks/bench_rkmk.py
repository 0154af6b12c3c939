"""Benchmark: RKMK4 with exp vs Cayley coordinates, spatial vs body, one body and a batch (CPU, float64).

Run from the repository root::

    python benchmarks/bench_rkmk.py                       # batch 1 and 1000 bodies
    python benchmarks/bench_rkmk.py --quick               # smoke test: batch 100, fewer repeats
    python benchmarks/bench_rkmk.py --markdown rkmk.md

Problem: kinematic reconstruction of seed 001 digest §8.2a, ``V(t) = (sin t, cos 2t, 0.5+0.3t, t, 1, −cos t)``
(spatial ``Ċ = V̂ C`` or body ``Ċ = C V̂``), ``C0 = exp((0.3,−0.2,0.1,1,2,3)^)``, T = 2; for a batch of B bodies each
body b has ``V_b(t) = s_b V(t)`` (s_b ∈ [0.5, 1.5]) and its own random C0 (one ``SE3Element`` of shape (B, 4, 4)).

1. Cost per step: the median time of a jitted ``diffeqsolve`` with N = 100 fixed steps divided by N, the four
   variants timed round-robin (``benchmarks/_timing.time_group``), plus XLA's flop count of ONE jitted solver step
   (load-independent). The seed 001 claim under test: "the Cayley map is computationally more efficient".
2. Accuracy at equal cost (one body): max-abs error against scipy DOP853 (rtol = atol = 1e-13) at N = 20, 40, 80, and
   the cost to reach an error of 1e-8, ``N_needed × time per step`` with ``N_needed = 80 (e_80/1e-8)^{1/4}``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import diffrax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.integrate  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import fmt_time, time_group  # noqa: E402

from jaxse3 import se3  # noqa: E402
from jaxse3.integrate.group_state import LieODETerm, SE3Element  # noqa: E402
from jaxse3.integrate.rkmk import RKMK4  # noqa: E402

T, N_STEPS = 2.0, 100
VARIANTS = [("exp", "spatial"), ("cayley", "spatial"), ("exp", "body"), ("cayley", "body")]


def twist(t):
    return jnp.stack([jnp.sin(t), jnp.cos(2 * t), 0.5 + 0.3 * t, t, jnp.ones_like(t), -jnp.cos(t)])


def field(t, y, scales):
    return scales[:, None] * twist(t)[None, :] if scales.ndim else twist(t)


def solve_fn(coordinates, side, n):
    solver = RKMK4(coordinates, side)

    def run(C0, scales):
        sol = diffrax.diffeqsolve(
            LieODETerm(field), solver, 0.0, T, T / n, SE3Element(C0), args=scales, max_steps=n + 1
        )
        return sol.ys.matrix[-1]

    return run


def step_flops(coordinates, side, C0, scales) -> float:
    """XLA cost analysis (flops) of one RKMK4 step, initial field evaluation excluded."""
    solver, term = RKMK4(coordinates, side), LieODETerm(field)
    y0 = SE3Element(C0)
    state = solver.init(term, 0.0, 0.02, y0, scales)
    fn = lambda y, s: solver.step(term, 0.0, 0.02, y, scales, s, False)[0].matrix
    cost = jax.jit(fn).lower(y0, state).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return float(cost.get("flops", float("nan")))


def reference(side):
    def hat(X):
        M = np.zeros((4, 4))
        M[:3, :3] = [[0, -X[2], X[1]], [X[2], 0, -X[0]], [-X[1], X[0], 0]]
        M[:3, 3] = X[3:]
        return M

    def rhs(t, c):
        C, V = c.reshape(4, 4), hat(np.asarray(twist(t)))
        return (V @ C if side == "spatial" else C @ V).ravel()

    C0 = np.asarray(se3.exp(jnp.array([0.3, -0.2, 0.1, 1.0, 2.0, 3.0])))
    sol = scipy.integrate.solve_ivp(rhs, (0, T), C0.ravel(), method="DOP853", rtol=1e-13, atol=1e-13)
    return C0, sol.y[:, -1].reshape(4, 4)


class Report:
    """Prints lines as they come and keeps them for the markdown file."""

    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, line: str = ""):
        print(line, flush=True)
        self.lines.append(line)


def cost_table(out: Report, batch: int, repeats: int):
    rng = np.random.default_rng(0)
    if batch == 1:
        C0, scales = se3.exp(jnp.array([0.3, -0.2, 0.1, 1.0, 2.0, 3.0])), jnp.asarray(1.0)
    else:
        C0 = se3.exp(jnp.asarray(rng.normal(size=(batch, 6))))
        scales = jnp.asarray(rng.uniform(0.5, 1.5, size=batch))
    timings = time_group([(solve_fn(c, s, N_STEPS), (C0, scales)) for c, s in VARIANTS], repeats=repeats)
    flops = [step_flops(c, s, C0, scales) for c, s in VARIANTS]
    base = timings[0].median_s
    out(f"\n### Cost per step, batch B = {batch} (N = {N_STEPS} steps per solve)\n")
    out("| variant | time / step | ratio to exp-spatial | flops / step (XLA) | flops ratio | compile |")
    out("|---|---|---|---|---|---|")
    for (c, s), tm, fl in zip(VARIANTS, timings, flops):
        out(
            f"| {c}-{s} | {fmt_time(tm.median_s / N_STEPS)} | {tm.median_s / base:.2f} | {fl:.3g} "
            f"| {fl / flops[0]:.2f} | {tm.compile_s:.1f} s |"
        )
    return {v: tm.median_s / N_STEPS for v, tm in zip(VARIANTS, timings)}


def accuracy_table(out: Report, per_step: dict):
    out("\n### Accuracy at equal cost (one body)\n")
    out("| variant | err N=20 | err N=40 | err N=80 | order | N for 1e-8 | cost for 1e-8 | cost ratio to exp |")
    out("|---|---|---|---|---|---|---|---|")
    costs = {}
    for c, s in VARIANTS:
        C0, ref = reference(s)
        solver, term = RKMK4(c, s), LieODETerm(field)
        runs = jax.jit(
            jax.vmap(
                lambda n: diffrax.diffeqsolve(
                    term, solver, 0.0, T, T / n, SE3Element(C0), args=jnp.asarray(1.0), max_steps=81
                ).ys.matrix[-1]
            )
        )
        errs = list(np.max(np.abs(np.asarray(runs(jnp.array([20.0, 40.0, 80.0]))) - ref), axis=(1, 2)))
        n_needed = 80 * (errs[-1] / 1e-8) ** 0.25
        costs[c, s] = n_needed * per_step[c, s]
        ratio = costs[c, s] / costs["exp", s]
        out(
            f"| {c}-{s} | {errs[0]:.2e} | {errs[1]:.2e} | {errs[2]:.2e} | {np.log2(errs[1] / errs[2]):.2f} "
            f"| {n_needed:.0f} | {fmt_time(costs[c, s])} | {ratio:.2f} |"
        )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--markdown", metavar="PATH", help="also write the tables to this markdown file")
    a = p.parse_args(argv)
    batch, repeats = (100, 3) if a.quick else (a.batch, a.repeats)
    out = Report()
    out(
        f"jax {jax.__version__}, diffrax {diffrax.__version__}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, float64"
    )
    per_step = cost_table(out, 1, repeats)
    cost_table(out, batch, repeats)
    accuracy_table(out, per_step)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(out.lines) + "\n")
        print(f"\n(markdown written to {a.markdown})")


if __name__ == "__main__":
    main()
