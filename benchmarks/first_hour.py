"""What a new user waits for: the main job cold and warm, and one vmap over many implicit CDM runs.

1. ``jaxse3 run cdm`` as a user runs it (a subprocess), first with an empty compilation cache, then again with the
   cache it left: the whole command's wall time, the compile time it reports and the simulation time it reports.
   The same command with the persistent cache off (``JAXSE3_CACHE=0``) is the baseline of every run before caching.
2. The compile modes of ``jaxse3 run`` (``--compile fast``, its default, against ``--compile optimized``: XLA's
   full optimisation) on every built-in simulation example at its default 10 s, each run a fresh subprocess with
   the persistent cache off: the whole command, its compile and simulation times, and the ratios.
3. ``simulate_batch`` of B CDM runs (0.2 s each, different cable tensions): one ``vmap`` (``chunk_size=None``, which
   hung in jaxlib's batched LAPACK kernels before they were routed around) against chunks of 8; both compiled first,
   then timed (median of 3), results compared.

Run on a quiet machine (``uptime`` load < 1.5): ``python benchmarks/first_hour.py [--batch 32] [--examples cdm
fin-ray ...]``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time


def _main_job(env_extra: dict[str, str], out: str, example: str = "cdm", *flags: str) -> dict[str, float]:
    """``jaxse3 run <example> <flags>`` in a subprocess: the command's wall time, its compile and simulation times."""
    env = {**os.environ, **env_extra}
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "jaxse3.cli", "run", example, "--out", out, "--no-progress", *flags],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall = time.perf_counter() - t0
    compile_s = float(re.search(r"compile: ([\d.]+) s", r.stdout).group(1))
    sim_s = float(re.search(r"simulated in ([\d.]+) s wall", r.stdout).group(1))
    return {"command": wall, "compile": compile_s, "simulation": sim_s}


def main_job_table() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache, out = os.path.join(tmp, "cache"), os.path.join(tmp, "out")
        rows = [
            ("no cache (JAXSE3_CACHE=0)", _main_job({"JAXSE3_CACHE": "0"}, out)),
            ("first run, empty cache", _main_job({"JAXSE3_CACHE": cache}, out)),
            ("second run, warm cache", _main_job({"JAXSE3_CACHE": cache}, out)),
        ]
    print("\njaxse3 run cdm (10 s of the CDM, Kvaerno5, rtol 1e-3), wall seconds")
    print(f"{'run':28s} {'command':>8s} {'compile':>8s} {'simulation':>11s}")
    for label, r in rows:
        print(f"{label:28s} {r['command']:8.1f} {r['compile']:8.1f} {r['simulation']:11.2f}")
    print(f"warm / cold command: {rows[2][1]['command'] / rows[1][1]['command']:.2f}")


#: the compile modes of ``jaxse3 run`` and the built-in simulation examples timed in both
MODES = ("fast", "optimized")
EXAMPLES = ("cdm", "cdm-contact", "serial-robot", "flagellated", "parallel-robot", "fin-ray")


def compile_mode_table(examples: list[str]) -> None:
    rows = {}
    with tempfile.TemporaryDirectory() as out:
        for example in examples:
            rows[example] = [_main_job({"JAXSE3_CACHE": "0"}, out, example, "--compile", m) for m in MODES]
    print("\njaxse3 run EXAMPLE (10 s), --compile fast against optimized, wall seconds, persistent cache off")
    print(f"{'example':15s} {'command f/o':>13s} {'compile f/o':>13s} {'simulation f/o':>15s} {'command o÷f':>12s}")
    for example, (fast, opt) in rows.items():
        cells = [f"{fast[k]:.1f} / {opt[k]:.1f}" for k in ("command", "compile", "simulation")]
        print(f"{example:15s} {cells[0]:>13s} {cells[1]:>13s} {cells[2]:>15s} {opt['command'] / fast['command']:12.2f}")


def batch_table(batch: int) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    from _timing import first_and_median

    from jaxse3.sim import scenarios, simulate_batch

    system = scenarios.cdm_system()
    u = jnp.asarray(np.random.default_rng(0).uniform(0.0, 20.0, size=(batch, system.n_inputs)))
    results, times = {}, {}
    for label, chunk in (("one vmap (chunk_size=None)", None), ("chunks of 8", 8)):
        results[label], first, median = first_and_median(
            lambda: simulate_batch(system, u, t_final=0.2, chunk_size=chunk)
        )
        times[label] = (first, median)
    a, b = results.values()
    print(f"\nsimulate_batch: {batch} CDM runs of 0.2 s (Kvaerno5), wall seconds")
    print(f"{'mode':28s} {'compile+1st':>11s} {'run':>7s}")
    for label, (first, run_s) in times.items():
        print(f"{label:28s} {first:11.1f} {run_s:7.2f}")
    vmap_s, chunk_s = (t[1] for t in times.values())
    print(f"one vmap / chunks: {vmap_s / chunk_s:.2f}; max |Δ tip| {float(jnp.max(jnp.abs(a.tip - b.tip))):.1e} m")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--skip-main-job", action="store_true")
    p.add_argument("--examples", nargs="*", default=list(EXAMPLES), help="examples of the compile-mode table")
    a = p.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    if not a.skip_main_job:
        main_job_table()
    if a.examples:
        compile_mode_table(a.examples)
    batch_table(a.batch)
