"""Batches under vmap equal loops of single runs (inputs, systems, initial states batched)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3.sim import SampledInput, simulate, simulate_batch, stack
from tests.sim import standin

KW = dict(t_final=1.0, n_save=5, solver="tsit5", rtol=1e-8, atol=1e-10)


def test_batch_of_inputs_and_systems_equals_loop():
    systems = [standin.make(g=g, seed=k) for k, g in enumerate((0.2, 0.9, 1.5))]
    ts = jnp.linspace(0.0, 1.0, 6)
    inputs = [SampledInput(ts, jnp.outer(ts, jnp.array([1.0, -1.0])) * a) for a in (0.5, 1.0, 2.0)]
    batch = simulate_batch(stack(systems), stack(inputs), batch_system=True, **KW)
    assert batch.q.shape == (3, 5, 4) and batch.tip.shape == (3, 5, 3)
    for k in range(3):
        one = simulate(systems[k], inputs[k], **KW)
        np.testing.assert_allclose(batch.q[k], one.q, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(batch.u[k], one.u, rtol=1e-12)
    # constant inputs (B, n_inputs) and batched initial states with a shared system
    q0 = jnp.asarray(np.random.default_rng(0).normal(size=(2, 4)))
    u = jnp.array([[1.0, 0.0], [0.0, 1.0]])
    b2 = simulate_batch(systems[0], u, q0=q0, batch_q0=True, **KW)
    for k in range(2):
        np.testing.assert_allclose(b2.q[k], simulate(systems[0], u[k], q0=q0[k], **KW).q, rtol=1e-10, atol=1e-12)


def test_implicit_batch_equals_loop():
    """Kvaerno5 with its per-step chord iteration (:class:`jaxse3.sim.dynamics.StepChord`) under vmap: each member
    keeps its own
    adaptive steps and Jacobians, so the batch reproduces single runs."""
    s = standin.make(g=1.5)
    u = jnp.array([[1.0, -0.5], [3.0, 2.0]])
    kw = dict(t_final=1.0, n_save=5, solver="kvaerno5", rtol=1e-8, atol=1e-10)
    batch = simulate_batch(s, u, **kw)
    for k in range(2):
        one = simulate(s, u[k], **kw)
        np.testing.assert_allclose(batch.q[k], one.q, rtol=1e-9, atol=1e-11)
        assert int(batch.num_steps[k]) == int(one.num_steps)
    assert int(batch.num_steps[0]) != int(batch.num_steps[1])  # the members did step independently


def test_batch_arguments():
    s = standin.make()
    with pytest.raises(ValueError, match="nothing is batched"):
        simulate_batch(s, None, batch_inputs=False, **KW)
    with pytest.raises(ValueError, match="at least one"):
        stack([])
    with pytest.raises(ValueError, match="t_final must be positive"):
        simulate_batch(s, jnp.ones((2, 2)), **{**KW, "t_final": 0.0})


def test_one_compilation_serves_every_horizon_and_tolerance(monkeypatch):
    """t_final, rtol, atol enter the compiled batch as arrays: changing them must not trace (compile) again."""
    import jaxse3.sim.batch as batch_module

    traces = []
    monkeypatch.setattr(batch_module, "simulate", lambda *a, **k: traces.append(1) or simulate(*a, **k))
    s, u = standin.make(), jnp.array([[1.0, 0.0], [0.0, 1.0]])
    kw = dict(KW, n_save=3)  # a shape of its own, so no earlier test has compiled it
    short = simulate_batch(s, u, **kw)
    longer = simulate_batch(s, u, **{**kw, "t_final": 2.0, "rtol": 1e-7})
    assert len(traces) == 1
    np.testing.assert_allclose(longer.t[:, -1], 2.0)
    np.testing.assert_allclose(longer.q[0, 1], short.q[0, -1], rtol=1e-6, atol=1e-8)  # q(1 s) of both runs


@pytest.mark.parametrize("chunk_size", [None, 2])
def test_chunked_and_single_vmap_batches_agree(chunk_size):
    """``chunk_size`` only changes how the members are scheduled (a remainder chunk included), not the results."""
    s = standin.make(g=0.7)
    u = jnp.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    ref = simulate_batch(s, u, **KW)  # default: one vmap (3 members, fewer than a CPU's chunk of 8)
    other = simulate_batch(s, u, chunk_size=chunk_size, **KW)
    np.testing.assert_allclose(other.q, ref.q, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="chunk_size"):
        simulate_batch(s, u, chunk_size=0, **KW)


def test_a_cpu_runs_a_batch_larger_than_its_systems_cpu_chunk_in_chunks(monkeypatch):
    """Without ``chunk_size``, a CPU runs more than ``System.cpu_chunk`` members in chunks of it (a remainder chunk
    included), and a system without one as one vmap; each member is its own single run. Rods carry 8, rigid trees
    none."""
    import dataclasses

    import jaxse3.sim.batch as batch_module
    from jaxse3 import rigid
    from jaxse3.sim import rigid_system, scenarios

    chunks = []
    over_batch = batch_module._over_batch
    monkeypatch.setattr(batch_module, "_over_batch", lambda *a: chunks.append(a[3]) or over_batch(*a))
    u = jnp.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    kw = dict(KW, n_save=4)  # a shape of its own: traced here
    for cpu_chunk in (2, None):
        s = dataclasses.replace(standin.make(g=0.3), cpu_chunk=cpu_chunk)
        batch = simulate_batch(s, u, **kw)
        for k in range(3):
            np.testing.assert_allclose(batch.q[k], simulate(s, u[k], **kw).q, rtol=1e-9, atol=1e-11)
    assert jax.devices()[0].platform != "cpu" or chunks == [2, None]
    assert scenarios.cdm_system().cpu_chunk == 8
    assert rigid_system(rigid.auto_tree(3, seed=2)).cpu_chunk is None


@pytest.mark.parametrize("chunk_size", [None, 2])
def test_newmark_batch_is_a_stack_equal_to_single_runs(chunk_size):
    """Newmark batches run as stacks of systems on one time grid (the modified Newton loop stays scalar): systems,
    inputs and initial states batched, chunks padded (3 members in chunks of 2), each member equal to its own run."""
    systems = [standin.make(g=g, seed=k) for k, g in enumerate((0.2, 0.9, 1.5))]
    u = jnp.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    q0 = jnp.asarray(np.random.default_rng(1).normal(size=(3, 4))) * 0.3
    kw = dict(t_final=1.0, n_save=5, solver="newmark", dt=0.01)
    batch = simulate_batch(stack(systems), u, batch_system=True, q0=q0, batch_q0=True, chunk_size=chunk_size, **kw)
    assert batch.q.shape == (3, 5, 4) and batch.t.shape == (3, 5) and batch.num_steps.shape == (3,)
    for k in range(3):
        one = simulate(systems[k], u[k], q0=q0[k], **kw)
        np.testing.assert_allclose(batch.q[k], one.q, rtol=0, atol=1e-10)
        np.testing.assert_allclose(batch.u[k], one.u, rtol=1e-12)
        assert int(batch.num_steps[k]) == int(one.num_steps)
    shared = simulate_batch(systems[1], u, chunk_size=chunk_size, **kw)  # only the inputs batched
    np.testing.assert_allclose(shared.q[1], simulate(systems[1], u[1], **kw).q, rtol=0, atol=1e-10)


def test_a_batch_over_its_memory_budget_runs_in_chunks_that_fit(capsys):
    """Without ``chunk_size`` a batch runs as one vmap when XLA's memory analysis of that program fits
    ``memory_budget``, else in chunks sized from it; the results are the same members' (to round-off)."""
    from jaxse3._compile import Compiled
    from jaxse3.sim.batch import _NUMERIC, _SIMULATE_BATCH, memory_budget

    s = standin.make(g=0.4)
    u = jnp.asarray(np.random.default_rng(2).normal(size=(6, 2)))
    whole = simulate_batch(s, u, **KW)
    kwargs = {k: jnp.asarray(v, dtype=float) if k in _NUMERIC else v for k, v in KW.items()} | {"throw": False}
    need = _SIMULATE_BATCH.memory(s, u, jnp.zeros(s.n_dof), (False, True, False), None, kwargs, None)
    half = _SIMULATE_BATCH.memory(s, u[:3], jnp.zeros(s.n_dof), (False, True, False), None, kwargs, None)
    assert need > half > 0  # the memory grows with the members
    capsys.readouterr()
    chunked = simulate_batch(s, u, memory_budget=need // 2, **KW)
    message = capsys.readouterr().err
    assert "more than the budget" in message and "running chunks of" in message
    chunk = int(message.split("running chunks of ")[1].split()[0])
    assert 1 <= chunk < 6
    np.testing.assert_allclose(chunked.q, whole.q, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(simulate_batch(s, u, memory_budget=10 * need, **KW).q, whole.q, rtol=0, atol=0)
    assert memory_budget() > 2**20 and isinstance(Compiled(lambda x: x + 1, "plus one").memory(jnp.ones(3)), int)
    with pytest.raises(ValueError, match="memory_budget must be a positive"):
        simulate_batch(s, u, memory_budget=0, **KW)


def test_vmap_on_one_device_is_vmap_and_names_mismatched_batches():
    from jaxse3.sim import vmap_on_devices

    f = lambda x, y: jnp.sin(x) * y[0] + y[1]
    x, y = jnp.linspace(0.0, 1.0, 5), jnp.arange(10.0).reshape(5, 2)
    np.testing.assert_array_equal(vmap_on_devices(f, x, y, devices=1), jax.vmap(f)(x, y))
    with pytest.raises(ValueError, match="vmap_on_devices: the batched arguments have different batch sizes"):
        vmap_on_devices(f, x, y[:3])
    with pytest.raises(ValueError, match="devices must be"):
        vmap_on_devices(f, x, y, devices=99)
