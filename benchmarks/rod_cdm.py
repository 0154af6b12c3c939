"""Seed 003 Table 3 for the cable-driven manipulator (CDM) and its contact scenario, side by side in one run.

Measures, float64 on CPU:
1. Jacobians of forward dynamics ∂FD/∂(q, q̇) at a bent, moving state: analytic (the rod's custom_jvp rules, eqs. (7),
   (9)) vs forward differences (ε = 1e−6, the paper's eq. (38)) vs autodiff through the plain RNEA (jacfwd of the rule-
   free forward dynamics): relative agreement and time per Jacobian (interleaved medians; compile separate).
2. Simulations of ``--t-final`` s (default 10): Kvaerno5 with the analytic Jacobian vs with the finite-difference
   Jacobian (both with the per-step chord iteration :class:`jaxse3.sim.dynamics.StepChord`) vs Kvaerno3 vs Newmark-β
   (h = 2 ms) vs the previous setup (Kvaerno5 with optimistix Newton: a Jacobian at every stage iterate): wall and
   process-CPU time after compilation, steps, max tip mismatch against the first run.
3. Statics: ``--n-statics`` solves (default 1000) with random tensions in [0, 100] N, batched (vmap), analytic vs
   finite-difference Newton Jacobian, ``--statics-load-steps`` load steps of at most ``--statics-max-steps`` Newton
   iterations (a vmapped Newton loop runs until its slowest member stops, so the cap bounds the batch's cost; members
   that do not converge are flagged): time per solve, convergence, iterations, max tip mismatch.
4. Batched throughput: the CDM with 1, 64, 1024 random input sets in one vmap (``--t-batch`` s each), and the first set
   unbatched: rod-seconds per wall second and per CPU second.

Wall times on the shared machine are inflated by other processes; the process CPU time (all threads) is reported
next to them as a load-robust estimate of the wall time on an idle machine.

    python benchmarks/rod_cdm.py [--t-final 10] [--n-statics 1000] [--batches 1 64 1024] [--t-batch 1]
        [--statics-max-steps 7] [--statics-load-steps 2] [--skip jacobians simulations statics throughput contact]
"""

from __future__ import annotations

import argparse
import os
import sys
from types import SimpleNamespace

import jax

jax.config.update("jax_enable_x64", True)

import diffrax  # noqa: E402
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optimistix as optx  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _timing import fmt_time, jacobian_by_columns, time_group, timed  # noqa: E402

from jaxse3.rod import dynamics as rod_dynamics  # noqa: E402
from jaxse3.sim import finite_difference, scenarios, simulate, simulate_batch, solve_statics_batch, stack  # noqa: E402
from jaxse3.sim.dynamics import _vector_field  # noqa: E402


def _rel(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(np.asarray(b)))


def jacobian_table(name, system, inputs, t_state=3.0):
    """Agreement and cost of the three Jacobians of FD at the state of a short analytic run at t_state."""
    tr = simulate(system, inputs, t_final=t_state, n_save=2)
    q, qd, u = tr.q[-1], tr.qd[-1], tr.u[-1]
    rod, loads = system.params
    fd = lambda q, qd: rod_dynamics.forward_dynamics(rod, q, qd, u, loads)
    plain = lambda q, qd: rod_dynamics._fd_plain(rod, q, qd, u, loads)
    cases = {
        "analytic (custom_jvp)": lambda q, qd: jax.jacfwd(fd, argnums=(0, 1))(q, qd),
        "finite differences (ε=1e-6)": lambda q, qd: jax.jacfwd(finite_difference(fd), argnums=(0, 1))(q, qd),
        "FD column by column": lambda q, qd: jacobian_by_columns(fd, q, qd),
        "autodiff through RNEA": lambda q, qd: jax.jacfwd(plain, argnums=(0, 1))(q, qd),
    }
    tms = time_group([(f, (q, qd)) for f in cases.values()], repeats=7)
    ref = tms[0].out
    print(f"\n[{name}] Jacobians of FD at t = {t_state} s (|q| = {float(jnp.linalg.norm(q)):.2f})")
    print(
        f"{'method':30s} {'time':>10s} {'ratio':>7s} {'rel err dFD/dq':>15s} {'rel err dFD/dqd':>16s} {'compile':>8s}"
    )
    for (label, _), tm in zip(cases.items(), tms):
        print(
            f"{label:30s} {fmt_time(tm.median_s):>10s} {tm.median_s / tms[0].median_s:7.1f} "
            f"{_rel(tm.out[0], ref[0]):15.1e} {_rel(tm.out[1], ref[1]):16.1e} {tm.compile_s:7.1f}s"
        )


def _newton_simulate(system, inputs, t_final):
    """The previous Kvaerno5 setup, for comparison: optimistix Newton (a new Jacobian at every stage iterate)."""
    solver = diffrax.Kvaerno5(root_finder=diffrax.with_stepsize_controller_tols(optx.Newton)())
    n = system.n_dof

    @eqx.filter_jit
    def run(t_final):
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(_vector_field),
            solver,
            0.0,
            t_final,
            None,
            (jnp.zeros(n),) * 2,
            args=(system, inputs, system.forward_dynamics),
            saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, t_final, 201)),
            stepsize_controller=diffrax.PIDController(rtol=1e-3, atol=1e-6),
            max_steps=100_000,
        )
        return jax.vmap(system.tip)(sol.ys[0]), sol.stats["num_steps"]

    tip, num_steps = run(jnp.asarray(t_final, dtype=float))
    return SimpleNamespace(tip=tip, num_steps=num_steps)


def simulation_table(name, system, inputs, t_final, newton=True):
    print(
        f"\n[{name}] {t_final} s simulations (wall and process CPU after compilation; compile = first call incl. a "
        "1 ms run)"
    )
    print(f"{'method':40s} {'wall':>8s} {'CPU':>8s} {'steps':>7s} {'max tip mismatch':>17s} {'compile':>8s}")
    runs = {
        "Kvaerno5 + analytic Jacobian (chord)": lambda t: simulate(system, inputs, t_final=t),
        "Kvaerno5 + finite-diff. Jacobian": lambda t: simulate(system, inputs, t_final=t, jacobian="finite-difference"),
        "Kvaerno3 + analytic Jacobian (chord)": lambda t: simulate(system, inputs, t_final=t, solver="kvaerno3"),
        "Newmark-β h = 2 ms (analytic)": lambda t: simulate(system, inputs, t_final=t, solver="newmark", dt=2e-3),
    }
    if newton:
        runs["Kvaerno5 + analytic, Newton (previous)"] = lambda t: _newton_simulate(system, inputs, t)
    ref = None
    for label, run in runs.items():
        c = timed(lambda: run(1e-3))[1]
        tr, wall, cpu = timed(lambda: run(t_final))
        ref = tr if ref is None else ref
        mism = float(jnp.linalg.norm(tr.tip - ref.tip, axis=-1).max())
        print(f"{label:40s} {wall:7.2f}s {cpu:7.2f}s {int(tr.num_steps):7d} {mism:16.1e}m {c:7.1f}s", flush=True)


def statics_table(system, n, max_steps, load_steps, seed=0):
    u = jnp.asarray(np.random.default_rng(seed).uniform(0.0, 100.0, size=(n, 5)))
    print(
        f"\n[CDM] statics: {n} random tension sets in [0, 100] N, batched (vmap), Newton from straight, "
        f"{load_steps} load steps, max {max_steps} Newton iterations each"
    )
    print(
        f"{'Newton Jacobian':20s} {'per solve':>10s} {'CPU/solve':>10s} {'total':>8s} {'converged':>10s} "
        f"{'iterations (median/max of converged)':>20s} {'max tip mismatch':>17s} {'compile+1st':>8s}"
    )
    ref = None
    kw = dict(load_steps=load_steps, max_steps=max_steps, throw=False)
    for label, jac in (("analytic", "analytic"), ("finite differences", "finite-difference")):
        c = timed(lambda: solve_statics_batch(system, u, jacobian=jac, **kw))[1]  # compile + one run
        sol, wall, cpu = timed(lambda: solve_statics_batch(system, u, jacobian=jac, **kw))
        ref = sol if ref is None else ref
        ok = np.asarray(sol.converged & ref.converged)
        mism = float(jnp.linalg.norm(sol.tip - ref.tip, axis=-1)[ok].max())
        steps = np.asarray(sol.num_steps)[np.asarray(sol.converged)]
        print(
            f"{label:20s} {fmt_time(wall / n):>10s} {fmt_time(cpu / n):>10s} {wall:7.2f}s "
            f"{int(sol.converged.sum()):6d}/{n} {int(np.median(steps)):>10d}/{steps.max()} {mism:16.1e}m {c:7.1f}s",
            flush=True,
        )


def throughput_table(system, batches, t_final, seed=0):
    rng = np.random.default_rng(seed)
    print(
        f"\n[CDM] batched throughput: B random input sets (pulse peaks ×U[0.5, 1.5], starts ±0.5 s), {t_final} s each, "
        "Kvaerno5 + analytic Jacobian, one vmap"
    )
    print(f"{'B':>6s} {'wall':>9s} {'CPU':>9s} {'rod-s per wall-s':>17s} {'rod-s per CPU-s':>16s} {'compile':>8s}")
    base = scenarios.cdm_tensions()
    for B in batches:
        inputs = stack(
            [
                type(base)(base.start + rng.uniform(-0.5, 0.5, 5), base.width, base.peak * rng.uniform(0.5, 1.5, 5))
                for _ in range(B)
            ]
        )
        c = timed(lambda: simulate_batch(system, inputs, t_final=1e-3, n_save=11))[1]
        _, wall, cpu = timed(lambda: simulate_batch(system, inputs, t_final=t_final, n_save=11))
        print(
            f"{B:6d} {wall:8.2f}s {cpu:8.2f}s {B * t_final / wall:17.2f} {B * t_final / cpu:16.2f} {c:7.1f}s",
            flush=True,
        )
        if B == 1:  # the same input set unbatched
            one = jax.tree.map(lambda x: x[0], inputs)
            c = timed(lambda: simulate(system, one, t_final=1e-3, n_save=11))[1]
            _, wall, cpu = timed(lambda: simulate(system, one, t_final=t_final, n_save=11))
            print(
                f"{'1 (no vmap)':>6s} {wall:8.2f}s {cpu:8.2f}s {t_final / wall:17.2f} {t_final / cpu:16.2f} {c:7.1f}s",
                flush=True,
            )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--t-final", type=float, default=10.0)
    p.add_argument("--n-statics", type=int, default=1000)
    p.add_argument("--batches", type=int, nargs="*", default=[1, 64, 1024])
    p.add_argument("--t-batch", type=float, default=1.0)
    p.add_argument("--statics-max-steps", type=int, default=7, help="Newton iterations per load step")
    p.add_argument("--statics-load-steps", type=int, default=2)
    p.add_argument(
        "--skip", nargs="*", default=[], choices=["jacobians", "simulations", "statics", "throughput", "contact"]
    )
    a = p.parse_args(argv)
    print(f"jax {jax.__version__} {jax.default_backend()}, float64, {os.cpu_count()} CPUs")
    cdm, tensions = scenarios.cdm_system(), scenarios.cdm_tensions()
    contact, contact_tensions = scenarios.cdm_contact_system(), scenarios.cdm_tensions(2.0)
    if "jacobians" not in a.skip:
        jacobian_table("CDM", cdm, tensions)
        if "contact" not in a.skip:
            jacobian_table("contact", contact, contact_tensions, t_state=4.0)
    if "simulations" not in a.skip:
        simulation_table("CDM", cdm, tensions, a.t_final)
        if "contact" not in a.skip:
            simulation_table("contact", contact, contact_tensions, a.t_final, newton=False)
    if "statics" not in a.skip:
        statics_table(cdm, a.n_statics, a.statics_max_steps, a.statics_load_steps)
    if "throughput" not in a.skip:
        throughput_table(cdm, a.batches, a.t_batch)


if __name__ == "__main__":
    main()
