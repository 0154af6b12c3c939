"""Benchmark: SE(3) vs SO(3)×R³ as configuration space of the seed 004 examples (CPU, float64).

Seed 004 (Müller & Terze 2013, §6) says the SE(3) formulation is more expensive (the SE(3) exp and dexp⁻¹ with ``ad⁴``
on 6×6 matrices) and recommends SE(3) only where it pays (bodies attached to the ground). Measured here, per example
(heavy top, spherical double pendulum, floating pair, 3-bar linkage; data in :mod:`jaxse3.rigid.absolute.examples`):

1. **Cost per step** of the Munthe-Kaas scheme (37) (classical RK4 tableau, exp coordinates, body form, index-1 KKT,
   ``diffrax.diffeqsolve`` with constant steps): the run over ``--t1`` with h = 1 ms timed as a whole (median of
   repeats, cases interleaved, ``block_until_ready``, compile time separate), divided by the number of steps; and the
   cost of
   one evaluation of the vector field (KKT solve) alone.
2. **Accuracy at equal cost**: final-time error of the configuration (max over bodies of ‖r − r_ref‖ [m] and
   ‖R − R_ref‖ [-]) and max joint violation, for step sizes ``h ∈ {4, 2, 1} ms`` over ``--t1`` seconds, against a
   reference computed with RK4 at h = 0.125 ms in SE(3) (its distance to the SO(3)×R³ reference at the same h is
   printed as the reference uncertainty). The error of SO(3)×R³ at the cost of SE(3) at h = 1 ms (its step
   h = 1 ms × cost ratio) is extrapolated with its observed order (cost ∝ 1/h).

Run from the repository root::

    python benchmarks/bench_absolute_coordinates.py              # ~2 min on 2 idle cores (mostly compilation)
    python benchmarks/bench_absolute_coordinates.py --quick      # fewer repeats, shorter horizon
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import fmt_time, time_group  # noqa: E402

from jaxse3.integrate.rkmk import RKMK4  # noqa: E402
from jaxse3.rigid.absolute import EXAMPLES, SPACES  # noqa: E402
from jaxse3.sim import simulate_multibody  # noqa: E402

LABEL = {"se3": "SE(3)", "so3xr3": "SO(3)×R³"}
STEPS = (4e-3, 2e-3, 1e-3)
H_REF = 1.25e-4


def physical_state(ex):
    """(R, r, ω, ṙ) of an example's initial state (re-expressible in any configuration space)."""
    R, r, V = ex.system.unpack(ex.y0)
    rdot = jnp.stack([b.spatial_linear_velocity(R[i], V[i]) for i, b in enumerate(ex.system.bodies)])
    return R, r, V[:, :3], rdot


def make_run(name: str, space: str, t1: float, h_min: float):
    """Jitted ``dt -> (final R, final r, max joint violation)`` for one example and configuration space."""
    ex = EXAMPLES[name]()
    system = ex.system.with_spaces(space)
    y0 = system.state(*physical_state(ex))
    solver = RKMK4(coordinates="exp", side="body")
    max_steps = int(np.ceil(t1 / h_min)) + 1

    def run(dt):
        tr = simulate_multibody(system, y0, t1, dt, solver, n_save=11, max_steps=max_steps)
        return tr.q[-1, :, :3, :3], tr.points[-1], jnp.max(tr.monitors["joint_violations"])

    def field(y):
        return system.vector_field(0.0, y)

    return jax.jit(run), field, y0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--t1", type=float, default=0.5, help="horizon of the accuracy study [s]")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.t1, args.repeats = 0.2, 3
    print(f"# jax {jax.__version__}, {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, float64")

    cost_rows, acc_rows = [], []
    for name in EXAMPLES:
        runs, fields = {}, {}
        for space in SPACES:
            t0 = time.perf_counter()
            run, field, y0 = make_run(name, space, args.t1, H_REF)
            runs[space] = run
            fields[space] = (field, (y0,))
            jax.block_until_ready(run(jnp.asarray(1e-3)))
            print(f"{name} {space}: compiled + first run in {time.perf_counter() - t0:.1f} s", flush=True)
        # 1. cost per step: the run over t1 with h = 1 ms (n_steps steps), and the vector field alone
        n_steps = round(args.t1 / 1e-3)
        cases = [(runs[s], (jnp.asarray(1e-3),)) for s in SPACES] + [fields[s] for s in SPACES]
        tms = time_group(cases, repeats=args.repeats)
        step = {s: tms[i].median_s / n_steps for i, s in enumerate(SPACES)}
        vf = {s: tms[2 + i].median_s for i, s in enumerate(SPACES)}
        cost_rows.append(
            (
                name,
                fmt_time(step["se3"]),
                fmt_time(step["so3xr3"]),
                f"{step['se3'] / step['so3xr3']:.2f}",
                fmt_time(vf["se3"]),
                fmt_time(vf["so3xr3"]),
                f"{vf['se3'] / vf['so3xr3']:.2f}",
                f"{tms[0].compile_s:.1f} / {tms[1].compile_s:.1f}",
            )
        )
        # 2. accuracy at equal cost
        Rr, rr, _ = runs["se3"](jnp.asarray(H_REF))
        _Rr2, rr2, _ = runs["so3xr3"](jnp.asarray(H_REF))
        ref_unc = float(jnp.max(jnp.abs(rr - rr2)))
        errs = {s: [] for s in SPACES}
        for space in SPACES:
            for h in STEPS:
                R, r, viol = runs[space](jnp.asarray(h))
                e_pos = float(jnp.max(jnp.linalg.norm(r - rr, axis=-1)))
                e_rot = float(jnp.max(jnp.linalg.norm(R - Rr, axis=(-2, -1))))
                errs[space].append(e_pos)
                acc_rows.append(
                    (
                        name,
                        LABEL[space],
                        f"{h * 1e3:g}",
                        f"{e_pos:.2e}",
                        f"{e_rot:.2e}",
                        f"{float(viol):.2e}",
                        fmt_time(step[space] * args.t1 / h),
                        f"{ref_unc:.0e}",
                    )
                )
        # SO(3)×R³ error at the run time of SE(3) with h = 1 ms: step h_eq = 1 ms × c_so3 / c_se3 (smaller, since
        # SO(3)×R³ is cheaper), error extrapolated as e ∝ h^p with p observed between h = 2 ms and 1 ms
        h_eq = 1e-3 * step["so3xr3"] / step["se3"]
        e2, e1 = errs["so3xr3"][-2:]
        p = np.log2(e2 / e1)
        acc_rows.append(
            (
                name,
                f"SO(3)×R³ @ SE(3) cost (p = {p:.2f})",
                f"{h_eq * 1e3:.2f}",
                f"{e1 * (h_eq / 1e-3) ** p:.2e}",
                "",
                "",
                "",
                "",
            )
        )

    def table(head, rows):
        widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
        lines = ["| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |" for r in [head] + rows]
        lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
        return "\n".join(lines)

    print(f"\n## Cost (RKMK4, exp, body form; {round(args.t1 / 1e-3)} steps of 1 ms; median of {args.repeats})\n")
    print(
        table(
            (
                "example",
                "SE(3) /step",
                "SO(3)×R³ /step",
                "ratio",
                "SE(3) field",
                "SO(3)×R³ field",
                "ratio",
                "compile [s] SE(3) / SO(3)×R³",
            ),
            cost_rows,
        )
    )
    print(f"\n## Accuracy at t = {args.t1:g} s vs RK4 reference (h = {H_REF * 1e3:g} ms)\n")
    print(
        table(("example", "space", "h [ms]", "‖Δr‖ [m]", "‖ΔR‖", "max ‖g‖ [m]", "run time", "ref. unc. [m]"), acc_rows)
    )


if __name__ == "__main__":
    main()
