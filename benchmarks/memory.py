"""Memory per rod of a batch: XLA's memory analysis of the compiled batch programs at two batch sizes, for statics,
Kvaerno5 and Newmark-β on the CDM (24 DoF), so that a batch's footprint is fixed part + members × per-rod part.

The analysis is XLA's own account of a program's device buffers (arguments, outputs and temporaries, less the outputs
that reuse argument buffers): what ``simulate_batch``'s memory budget compares against (``memory_budget=``), not the
process's resident size. Compiles each program twice (about 15 s each on a CPU).

    python benchmarks/memory.py [--small 8] [--large 32] [--t-final 1.0] [--n-save 101]
"""

from __future__ import annotations

import argparse
import datetime

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from jaxse3.sim import scenarios, simulate_batch, solve_statics_batch  # noqa: E402


def device_bytes(fn, *args) -> int:
    m = jax.jit(fn).lower(*args).compile().memory_analysis()
    return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--small", type=int, default=8)
    p.add_argument("--large", type=int, default=32)
    p.add_argument("--t-final", type=float, default=1.0)
    p.add_argument("--n-save", type=int, default=101)
    a = p.parse_args()
    system = scenarios.cdm_system()
    kw = dict(t_final=a.t_final, n_save=a.n_save, throw=False)
    entries = {
        "statics (solve_statics_batch)": lambda u: solve_statics_batch(system, u, throw=False),
        "Kvaerno5 (simulate_batch)": lambda u: simulate_batch(system, u, **kw),
        "Newmark-β, 2 ms (simulate_batch)": lambda u: simulate_batch(system, u, solver="newmark", dt=2e-3, **kw),
    }
    print(f"CDM (24 DoF, 7 points), {a.t_final:g} s, {a.n_save} samples; {datetime.date.today()}, {jax.devices()[0]}")
    print(f"| entry point | batch {a.small} | batch {a.large} | per rod | fixed | rods per GiB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, fn in entries.items():
        small, large = (device_bytes(fn, jnp.ones((b, 5))) for b in (a.small, a.large))
        per_rod = (large - small) / (a.large - a.small)
        fixed = small - a.small * per_rod
        print(
            f"| {name} | {small / 2**20:.2f} MiB | {large / 2**20:.2f} MiB | {per_rod / 2**10:.0f} KiB "
            f"| {fixed / 2**10:.0f} KiB | {np.floor(2**30 / per_rod):.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
