"""Batches over devices: ``simulate_batch(..., devices=)`` sharded against one device, side by side, same process.

CDM rods (24 DoF, 0.2 s each from rest, different constant cable tensions), Kvaerno5 with the analytic Jacobian.
The process forces ``--devices`` CPU devices (``XLA_FLAGS=--xla_force_host_platform_device_count``, set before JAX
starts), so on a CPU this measures the cost of sharding (padding, partitioned loops) rather than a speed-up: the
devices share the machine's cores. On a multi-GPU node the same command splits the batch over the GPUs.

    python benchmarks/scale.py [--batch 16] [--devices 4] [--chunk 4]

``--chunks 0 8 64`` instead compares, on one device, one ``vmap`` over the whole batch (0) with chunks of the given
sizes (``--t-final`` simulated per rod), the issue's "one vmap of 1024 implicit CDM runs":

    python benchmarks/scale.py --batch 1024 --chunks 0 8 64 --t-final 1

``--throughput`` runs each (solver, dtype) pair in a fresh process (JAX's dtype switch is process-wide) on the
default device (a GPU where there is one), ``--t-final`` simulated per rod, one ``simulate_batch`` (one ``vmap``;
Newmark-β as one stack) timed after its first, compiling call: rods per second, the device's peak memory per rod, and
float32's largest tip deviation from float64 over the members' saved samples:

    python benchmarks/scale.py --throughput --batch 10000 --t-final 1 --dtypes float32 float64
"""

from __future__ import annotations

import argparse
import os
import sys


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--devices", type=int, default=4)
    p.add_argument("--chunk", type=int, default=4, help="members per chunk for the chunked rows (default 4)")
    p.add_argument("--chunks", type=int, nargs="*", help="one device: one vmap (0) against these chunk sizes")
    p.add_argument("--t-final", type=float, default=0.2, help="simulated time per rod in s (default 0.2)")
    p.add_argument("--throughput", action="store_true", help="rods per second by solver and dtype, default device")
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    p.add_argument("--solvers", nargs="+", default=["kvaerno5", "newmark"], choices=["kvaerno5", "newmark"])
    p.add_argument("--newmark-dt", type=float, default=2e-3, help="Newmark-β's step in s (default 2e-3)")
    p.add_argument("--timeout", type=float, help="seconds a (solver, dtype) run may take, compilation included")
    p.add_argument("--member", help=argparse.SUPPRESS)  # a child process of --throughput: "solver,dtype,npz path"
    a = p.parse_args()
    if a.member:
        return throughput_member(a)
    if a.throughput:
        return throughput(a)
    if a.chunks:
        a.devices = 1
    if "jax" in sys.modules:
        raise RuntimeError("benchmarks/scale.py must set XLA_FLAGS before JAX is imported")
    flag = f"--xla_force_host_platform_device_count={a.devices}"
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()

    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    from _timing import first_and_median

    from jaxse3.sim import scenarios, simulate_batch

    system = scenarios.cdm_system()
    u = jnp.asarray(np.abs(np.random.default_rng(0).normal(size=(a.batch, 5))) * 3.0)
    kw = dict(t_final=a.t_final, n_save=3)
    if a.chunks:
        compare_chunks(system, u, a.chunks, kw, first_and_median)
        return
    rows, results = [], {}
    for chunk in (None, a.chunk):
        for devices in (1, a.devices):
            run = lambda: simulate_batch(system, u, devices=devices, chunk_size=chunk, **kw)
            traj, first, median = first_and_median(run)
            results[chunk, devices] = traj.q
            rows.append((chunk, devices, first, median))
    print(f"CDM, batch {a.batch}, 0.2 s Kvaerno5; {jax.device_count()} CPU devices forced on {os.cpu_count()} cores")
    print("| chunk | devices | first call (compile) | run (median of 3) | ÷ one device | max |Δq| vs one device |")
    print("|---|---:|---:|---:|---:|---:|")
    for chunk, devices, first, run_s in rows:
        base = next(r[3] for r in rows if r[0] == chunk and r[1] == 1)
        diff = float(np.max(np.abs(np.asarray(results[chunk, devices]) - np.asarray(results[chunk, 1]))))
        label = chunk or "default (chunks of 8 on a CPU)"
        print(f"| {label} | {devices} | {first:.1f} s | {run_s:.3f} s | {run_s / base:.2f} | {diff:.1e} |")


def compare_chunks(system, u, chunks, kw, first_and_median) -> None:
    """One vmap over the batch (chunk 0) and the given chunk sizes, on one device: time and rods per second."""
    import numpy as np

    from jaxse3.sim import simulate_batch

    B, rows, ref = u.shape[0], [], None
    for chunk in chunks:
        run = lambda: simulate_batch(system, u, chunk_size=chunk or B, devices=1, **kw)  # 0: one chunk of B
        traj, first, median = first_and_median(run, repeats=1)
        ref = traj.q if ref is None else ref
        rows.append((chunk, first, median, float(np.max(np.abs(np.asarray(traj.q) - np.asarray(ref))))))
    best = min(r[2] for r in rows)
    print(f"CDM, batch {B}, {kw['t_final']:g} s Kvaerno5 each, one device")
    print("| chunk | first call (compile + run) | run | rod-s per wall-s | ÷ best | max |Δq| vs the first row |")
    print("|---|---:|---:|---:|---:|---:|")
    for chunk, first, run_s, diff in rows:
        rate, label = B * kw["t_final"] / run_s, chunk or "one vmap"
        print(f"| {label} | {first:.1f} s | {run_s:.1f} s | {rate:.1f} | {run_s / best:.2f} | {diff:.1e} |")


#: samples saved per rod in the throughput runs (the float32/float64 comparison's times)
N_SAVE = 11


def throughput_member(a) -> None:
    """One (solver, dtype) run of :func:`throughput` in this process: prints one JSON line, saves the tips."""
    import json
    import time

    solver, dtype, path = a.member.split(",", 2)
    import jax

    jax.config.update("jax_enable_x64", dtype == "float64")
    import numpy as np

    from jaxse3.sim import scenarios, simulate_batch

    system = scenarios.cdm_system()
    u = np.abs(np.random.default_rng(0).normal(size=(a.batch, 5))) * 3.0
    kw = dict(t_final=a.t_final, n_save=N_SAVE, solver=solver, progress=False, throw=False)
    if solver == "newmark":
        kw["dt"] = a.newmark_dt
    times = []
    for _ in range(2):  # the first call compiles
        t0 = time.perf_counter()
        traj = jax.block_until_ready(simulate_batch(system, u, devices=1, **kw))
        times.append(time.perf_counter() - t0)
    stats = jax.local_devices()[0].memory_stats() or {}
    np.save(path, np.asarray(traj.tip, dtype=np.float64))
    out = dict(
        first=times[0],
        run=times[1],
        peak=stats.get("peak_bytes_in_use"),
        ok=int(np.sum(np.asarray(traj.result) == 0)),
        message=traj.message,
        steps=int(np.max(np.asarray(traj.num_steps))),
        device=str(jax.local_devices()[0].device_kind),
    )
    print("RESULT " + json.dumps(out), flush=True)


def throughput(a) -> None:
    """Rods per wall-second of ``simulate_batch`` by solver and dtype, each pair in its own process."""
    import datetime
    import json
    import subprocess
    import tempfile

    import numpy as np

    rows, tips = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for solver in a.solvers:
            for dtype in a.dtypes:
                path = os.path.join(tmp, f"{solver}-{dtype}.npy")
                cmd = [sys.executable, __file__, "--member", f"{solver},{dtype},{path}", "--batch", str(a.batch)]
                cmd += ["--t-final", str(a.t_final), "--newmark-dt", str(a.newmark_dt)]
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
                except subprocess.TimeoutExpired:
                    print(f"{solver} {dtype}: did not finish within {a.timeout:g} s (compilation included)", flush=True)
                    continue
                line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
                if r.returncode or not line:
                    print(f"{solver} {dtype}: failed\n{r.stderr[-2000:]}", flush=True)
                    continue
                res = json.loads(line[0][7:])
                tips[solver, dtype] = np.load(path)
                rows.append((solver, dtype, res))
                print(f"{solver} {dtype}: {res}", flush=True)
    if not rows:
        return
    print(
        f"\nCDM, {a.batch} rods × {a.t_final:g} s, one simulate_batch; {rows[0][2]['device']}, {datetime.date.today()}"
    )
    print(
        "| solver | dtype | first call (compile + run) | run | rod-s per wall-s | peak memory per rod "
        "| max steps | ok | max \\|tip − float64 tip\\| |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for solver, dtype, res in rows:
        rate = a.batch * a.t_final / res["run"]
        peak = f"{res['peak'] / a.batch / 2**10:.0f} KiB" if res["peak"] else "—"
        ref = tips.get((solver, "float64"))
        gap = f"{np.max(np.abs(tips[solver, dtype] - ref)):.1e} m" if ref is not None and dtype != "float64" else "—"
        print(
            f"| {solver} | {dtype} | {res['first']:.1f} s | {res['run']:.2f} s | {rate:.0f} | {peak} "
            f"| {res['steps']} | {res['ok']}/{a.batch} | {gap} |"
        )


if __name__ == "__main__":
    main()
