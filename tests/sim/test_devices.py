"""Batches split over devices (``simulate_batch(..., devices=)``, ``solve_statics_batch``): four CPU devices forced
by ``XLA_FLAGS=--xla_force_host_platform_device_count=4`` in a fresh process (JAX reads the flag once), the sharded
results against the same batch on one device, for an adaptive implicit solver, the Newmark stacks, statics and any
vmapped function (``vmap_on_devices``); a batch of 6 over 4 devices also exercises the padding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import json
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    from jaxse3.sim import simulate_batch, solve_statics, solve_statics_batch, vmap_on_devices
    from tests.sim import standin

    system = standin.make(g=1.5)
    u = jnp.asarray(np.random.default_rng(0).normal(size=(6, 2)))
    out = {"devices": jax.device_count()}
    for solver in ("kvaerno5", "newmark"):
        kw = dict(t_final=0.5, n_save=4, solver=solver, rtol=1e-8, atol=1e-10, dt=1e-2)
        spread, one = (simulate_batch(system, u, devices=d, **kw) for d in (None, 1))
        out[solver] = float(jnp.max(jnp.abs(spread.q - one.q)))
        out[solver + " steps"] = bool(jnp.all(spread.num_steps == one.num_steps))
        out[solver + " held by"] = len(spread.q.sharding.device_set)
    spread, one = (solve_statics_batch(system, u, devices=d) for d in (None, 1))
    out["statics"] = float(jnp.max(jnp.abs(spread.q - one.q)))
    equilibrium = lambda u: solve_statics(system, u).q  # any vmappable computation
    spread = vmap_on_devices(equilibrium, u)
    out["vmap"] = float(np.max(np.abs(np.asarray(spread) - np.asarray(jax.jit(jax.vmap(equilibrium))(u)))))
    out["vmap held by"] = len(spread.sharding.device_set)
    try:
        simulate_batch(system, u, devices=5, t_final=0.1)
    except ValueError as e:
        out["error"] = str(e)
    print(json.dumps(out))
    """
)


@pytest.mark.slow
def test_a_batch_split_over_four_devices_equals_one_device():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4".strip()
    env = {**os.environ, "XLA_FLAGS": flags, "PYTHONPATH": root}
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=900, env=env, cwd=root)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["devices"] == 4
    for solver in ("kvaerno5", "newmark"):
        assert out[solver] <= 1e-12, out  # the same programs on the members: equal to round-off
        assert out[solver + " steps"]
        assert out[solver + " held by"] == 4
    assert out["statics"] <= 1e-12
    assert out["vmap"] <= 1e-12 and out["vmap held by"] == 4
    assert "devices must be between 1 and the 4 local devices, got 5" in out["error"]
