"""Batches over devices: ``simulate_batch(..., devices=)`` sharded against one device, side by side, same process.

CDM rods (24 DoF, 0.2 s each from rest, different constant cable tensions), Kvaerno5 with the analytic Jacobian.
The process forces ``--devices`` CPU devices (``XLA_FLAGS=--xla_force_host_platform_device_count``, set before JAX
starts), so on a CPU this measures the cost of sharding (padding, partitioned loops) rather than a speed-up: the
devices share the machine's cores. On a multi-GPU node the same command splits the batch over the GPUs.

    python benchmarks/scale.py [--batch 16] [--devices 4] [--chunk 4]
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
    a = p.parse_args()
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
    kw = dict(t_final=0.2, n_save=3)
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
        label = chunk or "one vmap"
        print(f"| {label} | {devices} | {first:.1f} s | {run_s:.3f} s | {run_s / base:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
