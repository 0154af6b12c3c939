"""HyQ IDSVA FO/SO per state: one vmap vs `jax.lax.map` chunks, interleaved with Pinocchio's computeRNEADerivatives
per call.

The row "SO output write floor" only writes SO's four dense (nv, nv, nv) outputs for the batch (no computation): the
memory-bandwidth floor of any batched SO that returns dense tensors on this machine.

Run from the repository root: ``python benchmarks/rigid_chunk_sweep.py`` (~3 min; needs the ``pinocchio`` extra).
"""

import os
import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rigid_derivatives import chunked  # noqa: E402
from rigid_dynamics import _pin_time, benchmark_models  # noqa: E402

from jaxse3.rigid import interop, rnea_derivatives, rnea_second_order_derivatives  # noqa: E402

((label, m, pm),) = benchmark_models(["HyQ"], [])
B = 1000
rng = np.random.default_rng(0)
q_pin = [pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)) for _ in range(B)]
v_pin, a_pin = rng.normal(size=(B, pm.nv)), rng.normal(size=(B, pm.nv))
conv = [interop.from_pinocchio(m, q, v, a) for q, v, a in zip(q_pin, v_pin, a_pin)]
Q, V, A = (jnp.asarray(np.stack(x)) for x in zip(*conv))
pd = pm.createData()
cases = {}
for name, f in (
    ("FO", lambda q, v, a: rnea_derivatives(m, q, v, a)),
    ("SO", lambda q, v, a: rnea_second_order_derivatives(m, q, v, a)),
):
    cases[(name, "vmap")] = jax.jit(jax.vmap(f))
    for c in (4, 8, 16, 32) if name == "FO" else (4, 8, 16):
        cases[(name, c)] = jax.jit(chunked(f, c))
# the memory floor of SO at this batch: only writing its four dense (nv, nv, nv) outputs, nothing computed
n = m.nv
cases[("SO output write floor", "vmap")] = jax.jit(
    lambda q, v, a: tuple(jnp.broadcast_to(x[:, :1, None, None], (B, n, n, n)) * 1.0 for x in (v, a, v + a, v - a))
)
for f in cases.values():
    jax.block_until_ready(f(Q, V, A))
    jax.block_until_ready(f(Q, V, A))
walls = {k: [] for k in cases}
pin_t = []
for r in range(7):
    for k, f in cases.items():
        t0 = time.perf_counter()
        jax.block_until_ready(f(Q, V, A))
        walls[k].append((time.perf_counter() - t0) / B)
    pin_t.append(_pin_time(lambda: pin.computeRNEADerivatives(pm, pd, q_pin[r], v_pin[r], a_pin[r]), 3))
p = statistics.median(pin_t)
print(f"Pinocchio computeRNEADerivatives per call (Python): median {p * 1e6:.1f} us, min {min(pin_t) * 1e6:.1f} us")
for k in cases:
    w = statistics.median(walls[k])
    print(
        f"{k}: median {w * 1e6:.1f} us/state (min {min(walls[k]) * 1e6:.1f})"
        + (f"  ours/Pinocchio {w / p:.2f}" if k[0] == "FO" else "")
    )
