"""Batches of simulations and static solves under ``vmap``: one compilation for many rods of the same topology.

A batch varies any of: the inputs (a :class:`~jaxse3.sim.system.SampledInput` or any pytree-callable whose arrays have a
leading batch axis, or an (B, n_inputs) array of constant inputs), the system parameters (a :class:`System` whose
parameter arrays have a leading batch axis — build it with :func:`stack`), the initial state. Arguments given
unbatched are shared. The results carry the batch axis in front of every field.

**Devices.** With several devices (GPUs, or CPU devices forced by ``XLA_FLAGS=--xla_force_host_platform_device_count``)
a batch is split over them (``devices``; by default every local device): the batch, padded by repeating its last
member to a multiple of the device count, is sharded along its batch axis over a one-axis mesh, and XLA partitions
the vmapped or chunked program member-wise (``jax.sharding``: computation follows the data). Under one ``vmap`` an
adaptive solver's step loop runs until the slowest member is done, on every device (its exit test is reduced over
the devices); chunks (``chunk_size``) keep a device's loops to its own members. Results are those of one device, to
round-off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import Array, ArrayLike, Float, PyTree

from jaxse3._chunks import join_chunks, pad_members, split_chunks
from jaxse3._compile import Compiled, say
from jaxse3.sim.dynamics import FIXED_STEP, batch_axes, simulate, simulate_stack
from jaxse3.sim.statics import StaticsSolution, check_finite, solve_statics
from jaxse3.sim.system import System
from jaxse3.sim.trajectory import Trajectory

__all__ = ["stack", "simulate_batch", "solve_statics_batch", "vmap_on_devices", "memory_budget"]


def stack(items: Sequence[PyTree[ArrayLike]]) -> PyTree[Array]:
    """Stack pytrees of the same structure (e.g. rods of one topology) along a new leading batch axis."""
    if not items:
        raise ValueError("stack: need at least one item")
    return jax.tree.map(lambda *xs: jnp.stack(xs), *items)


#: the keyword arguments of :func:`simulate` that are numbers (traced, not compile-time constants)
_NUMERIC = ("t_final", "rtol", "atol", "dt0", "dt")


def simulate_batch(
    system: System,
    inputs: Any = None,
    *,
    batch_system: bool = False,
    batch_inputs: bool = True,
    q0: Float[ArrayLike, "*b n_dof"] | None = None,
    batch_q0: bool = False,
    chunk_size: int | None = None,
    devices: int | Sequence[jax.Device] | None = None,
    memory_budget: float | None = None,
    **kwargs: Any,
) -> Trajectory:
    """:func:`~jaxse3.sim.dynamics.simulate` over a batch, vmapped and compiled once.

    Args:
        system: a system; its parameter arrays carry a leading batch axis iff ``batch_system``.
        inputs: inputs with a leading batch axis on their arrays iff ``batch_inputs`` (a (B, n_inputs) array means
            B constant inputs).
        q0: initial coordinates, (B, n_dof) iff ``batch_q0``.
        chunk_size: members simulated together: the batch runs as ``jax.lax.map(..., batch_size=chunk_size)``, a
            loop over vmapped chunks (default ``None``: on a CPU, chunks of the system's
            :attr:`~jaxse3.sim.System.cpu_chunk` members (8 for rods and linkages with soft links, whose
            intermediates then stay in the caches); otherwise one vmap over the whole batch if it fits
            ``memory_budget``, else chunks as large as fit). Chunks bound the memory of the intermediates; they are
            not needed for correctness (batched factorisations never reach jaxlib's blocking LAPACK batch kernels, see
            :mod:`jaxse3._batched_linalg`).
            With a fixed-step solver (``"newmark"``, ``"generalized-alpha"`` or their index-3 forms) the members of
            a chunk (``None``: of the whole batch) are integrated as one stack of systems on the shared fixed time
            grid (:func:`~jaxse3.sim.dynamics.simulate_stack`), not under ``vmap``, so that the modified Newton
            iteration keeps one scalar Jacobian-refresh decision per chunk.
        devices: the devices to split the batch over (module docstring): a number (the first ones of
            ``jax.local_devices()``), a sequence of devices, or None for every local device; ``chunk_size`` then
            applies on each device.
        memory_budget: bytes a device may give a batch that would run as one vmap (``chunk_size`` None and no CPU
            chunks; default :func:`memory_budget`: half its memory). The one-vmap program is compiled first; if XLA's
            memory analysis of it exceeds the budget, the batch runs in chunks sized from it (the memory grows in
            proportion to the members), at the cost of a second compilation.
        **kwargs: passed to :func:`simulate` (``t_final``, ``solver``, ...).
    """
    _check_chunk_size("simulate_batch", chunk_size)
    mesh = _mesh("simulate_batch", devices)
    if not (batch_system or batch_inputs or batch_q0):
        raise ValueError("simulate_batch: nothing is batched; set batch_system, batch_inputs or batch_q0")
    q0 = jnp.zeros(system.n_dof) if q0 is None else jnp.asarray(q0, dtype=float)
    if "t_final" in kwargs and not kwargs["t_final"] > 0:
        raise ValueError(f"simulate_batch: t_final must be positive, got {kwargs['t_final']}")
    # numbers enter the compiled function as arrays, so one compilation serves every t_final, tolerance and step
    kwargs = {k: jnp.asarray(v, dtype=float) if k in _NUMERIC and v is not None else v for k, v in kwargs.items()}
    batched = (batch_system, batch_inputs, batch_q0)
    throw, kwargs = kwargs.pop("throw", True), {**kwargs, "throw": False}  # raised here, not from the program
    run = _SIMULATE_STACKS if kwargs.get("solver") in FIXED_STEP else _SIMULATE_BATCH
    size = _batch_size((system, inputs, q0), batched, "simulate_batch")
    args = lambda chunk: (system, inputs, q0, batched, chunk, kwargs, mesh)
    traj = _within_budget("simulate_batch", run, args, size, chunk_size, memory_budget, mesh, system.cpu_chunk)
    if throw and not isinstance(traj.result, jax.core.Tracer) and not traj.ok:
        failed = int(jnp.sum(traj.result != 0))
        raise RuntimeError(
            f"simulate_batch: {failed} of {traj.result.shape[0]} members failed ({traj.message}); "
            "pass throw=False to get the batch with each member's result code"
        )
    return traj


def _split(args: tuple, batched: tuple[bool, ...]):
    """The batched arrays of ``args`` (to map over) and a function rebuilding ``args`` from them: unbatched arguments
    and static fields are closed over."""
    parts = [eqx.partition(x, eqx.is_array) if b else (None, x) for x, b in zip(args, batched)]

    def rebuild(mapped):
        return tuple(rest if m is None else eqx.combine(m, rest) for m, (_, rest) in zip(mapped, parts))

    return tuple(m for m, _ in parts), rebuild


def _over_batch(fn, args: tuple, batched: tuple[bool, ...], chunk_size: int | None):
    """``fn(*args)`` for every member: one ``vmap`` over the batched arguments (``chunk_size`` None), or
    ``jax.lax.map`` over vmapped chunks of ``chunk_size`` members, one chunk after the other."""
    if chunk_size is None:
        in_axes = tuple(batch_axes(x, b) for x, b in zip(args, batched))
        return eqx.filter_vmap(fn, in_axes=in_axes)(*args)
    mapped, rebuild = _split(args, batched)
    return jax.lax.map(lambda m: fn(*rebuild(m)), mapped, batch_size=chunk_size)


def _mesh(who: str, devices: int | Sequence[jax.Device] | None) -> Mesh | None:
    """A one-axis ("batch") mesh of ``devices`` (a count of local devices, the devices, or None for all local ones),
    or None for one device."""
    local = jax.local_devices()
    if devices is None:
        devices = local
    elif isinstance(devices, int) and not isinstance(devices, bool):
        if not 1 <= devices <= len(local):
            raise ValueError(f"{who}: devices must be between 1 and the {len(local)} local devices, got {devices}")
        devices = local[:devices]
    else:
        devices = list(devices)
        if not devices or not all(isinstance(d, jax.Device) for d in devices):
            raise ValueError(f"{who}: devices must be a count, a non-empty sequence of jax devices or None")
    return None if len(devices) == 1 else Mesh(np.asarray(devices), ("batch",))


def _on_devices(run: Callable[..., Any], args: tuple, batched: tuple[bool, ...], mesh: Mesh | None) -> Any:
    """``run(*args)`` (a function of a batch returning a batch) with the batch split over ``mesh``: the batched arrays
    padded to a multiple of the devices (repeating the last member) and constrained to be sharded along their batch
    axis, the others replicated, so that XLA partitions the program member-wise; the padding is dropped from the
    result."""
    if mesh is None:
        return run(*args)
    n = mesh.devices.size
    size = _batch_size(args, batched)
    padded = -(-size // n) * n
    split = NamedSharding(mesh, PartitionSpec("batch"))
    pad = lambda x: pad_members(x, padded)
    spread = lambda x: jax.lax.with_sharding_constraint(pad(x), split)
    arrays, static = eqx.partition(args, eqx.is_array)
    arrays = tuple(jax.tree.map(spread, a) if b else a for a, b in zip(arrays, batched))
    out = run(*eqx.combine(arrays, static))
    return jax.tree.map(lambda y: jax.lax.with_sharding_constraint(y, split)[:size], out)


def _batch_size(args: tuple, batched: tuple[bool, ...], who: str = "") -> int:
    """The common leading size of the batched arguments' arrays; ``who`` names the caller in the error."""
    sizes = {leaf.shape[0] for x, b in zip(args, batched) if b for leaf in jax.tree.leaves(eqx.filter(x, eqx.is_array))}
    if len(sizes) != 1:
        prefix = f"{who}: " if who else ""
        raise ValueError(f"{prefix}the batched arguments have different batch sizes {sorted(sizes)}")
    return sizes.pop()


def memory_budget(devices: Sequence[jax.Device] | None = None) -> int:
    """The default ``memory_budget`` of a batch on ``devices`` (default: the first local device), in bytes: half a
    GPU's memory (its allocator's ``bytes_limit``), or on a CPU half the machine's physical memory shared among its
    CPU devices."""
    device = (devices or jax.local_devices())[0]
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"]) // 2
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return total // (2 * max(1, sum(d.platform == "cpu" for d in jax.local_devices())))


def _within_budget(who, compiled: Compiled, args, size: int, chunk_size, budget, mesh: Mesh | None, cpu_chunk):
    """``compiled(*args(chunk_size))``; with ``chunk_size`` None chunks of ``cpu_chunk`` (the system's
    :attr:`~jaxse3.sim.System.cpu_chunk`, if not None) on CPU devices, else the one-vmap program when XLA's memory
    analysis of it fits ``budget`` (bytes per device), else chunks as large as fit."""
    per_device = -(-size // (1 if mesh is None else mesh.devices.size))
    devices = jax.local_devices()[:1] if mesh is None else list(mesh.devices.flat)
    if chunk_size is None and cpu_chunk is not None and per_device > cpu_chunk and devices[0].platform == "cpu":
        chunk_size = cpu_chunk
    whole = args(chunk_size)
    if chunk_size is not None or any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(whole)):
        return compiled(*whole)
    if budget is None:
        budget = memory_budget(devices)
    elif not budget > 0:
        raise ValueError(f"{who}: memory_budget must be a positive number of bytes, got {budget!r}")
    need = compiled.memory(*whole)
    if need is None or need <= budget:
        return compiled(*whole)
    chunk = max(1, int(per_device * budget / need))
    say(
        f"{who}: one vmap over {per_device} members would need {need / 2**20:.0f} MiB per device, more than the "
        f"budget of {budget / 2**20:.0f} MiB; running chunks of {chunk}"
    )
    return compiled(*args(chunk))


def _check_chunk_size(who: str, chunk_size) -> None:
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size >= 1):
        raise ValueError(f"{who}: chunk_size must be a positive int or None, got {chunk_size!r}")


def _simulate_batch(system, inputs, q0, batched, chunk_size, kwargs, mesh) -> Trajectory:
    one = lambda system, inputs, q0: simulate(system, inputs, q0=q0, **kwargs)
    run = lambda *args: _over_batch(one, args, batched, chunk_size)
    return _on_devices(run, (system, inputs, q0), batched, mesh)


def _simulate_stacks(system, inputs, q0, batched, chunk_size, kwargs, mesh) -> Trajectory:
    """Newmark: chunks of ``chunk_size`` members (the last one padded by repeating the last member), each integrated
    as one stack, one chunk after the other (on each device of ``mesh``)."""
    B = _batch_size((system, inputs, q0), batched)  # checked by simulate_batch
    q0 = q0 if batched[2] else jnp.broadcast_to(q0, (B, system.n_dof))
    batched = (*batched[:2], True)
    run = lambda *args: _stacks(*args, batched, chunk_size, kwargs)
    return _on_devices(run, (system, inputs, q0), batched, mesh)


def _stacks(system, inputs, q0, batched, chunk_size, kwargs) -> Trajectory:
    """The stacks of :func:`_simulate_stacks` on one device (``q0`` batched)."""
    B = q0.shape[0]
    mapped, rebuild = _split((system, inputs, q0), batched)

    def run(mapped):
        system, inputs, q0 = rebuild(mapped)
        return simulate_stack(system, inputs, batched[:2], q0=q0, **kwargs)

    k = B if chunk_size is None else min(chunk_size, B)
    if k == B:
        return run(mapped)
    out = jax.lax.map(run, jax.tree.map(lambda x: split_chunks(x, k), mapped))
    return jax.tree.map(lambda y: join_chunks(y, B), out)


def solve_statics_batch(
    system: System,
    u: Float[ArrayLike, "b n_inputs"] | None = None,
    *,
    batch_system: bool = False,
    chunk_size: int | None = None,
    devices: int | Sequence[jax.Device] | None = None,
    memory_budget: float | None = None,
    **kwargs: Any,
) -> StaticsSolution:
    """:func:`~jaxse3.sim.statics.solve_statics` for a (B, n_inputs) batch of inputs and/or a batch of systems.

    ``u=None`` gives every member zero inputs (e.g. a batch of rods without tendons, ``batch_system=True``).
    ``chunk_size``: members solved together, as in :func:`simulate_batch` (default ``None``: on a CPU chunks of the
    system's ``cpu_chunk``, 8 for rods, else one ``vmap`` over the batch). Newton's loop under ``vmap`` runs until its
    slowest member has converged, every member paying each iteration; smaller chunks (down to 1, one member after the
    other) pay only their own members' iterations, at a smaller vectorisation gain per iteration. When the members need
    very different numbers of Newton iterations (the adaptive load continuation rejects steps for some), chunks are
    faster. ``devices`` and ``memory_budget``: as for :func:`simulate_batch`.
    """
    _check_chunk_size("solve_statics_batch", chunk_size)
    mesh = _mesh("solve_statics_batch", devices)
    if u is not None:
        u = jnp.asarray(u, dtype=float)
        if u.ndim != 2 or u.shape[1] != system.n_inputs:
            raise ValueError(f"solve_statics_batch: u must have shape (B, {system.n_inputs}), got {u.shape}")
        check_finite("solve_statics_batch", "u", u)
    elif not batch_system:
        raise ValueError("solve_statics_batch: nothing is batched; give a (B, n_inputs) u or set batch_system")
    if kwargs.get("q0") is not None:
        check_finite("solve_statics_batch", "q0", jnp.asarray(kwargs["q0"], dtype=float))
    throw, kwargs = kwargs.pop("throw", True), {**kwargs, "throw": False}  # raised here, not from the program
    batched = (batch_system, u is not None)
    size = _batch_size((system, u), batched, "solve_statics_batch")
    args = lambda chunk: (system, u, batch_system, chunk, kwargs, mesh)
    sol = _within_budget(
        "solve_statics_batch", _SOLVE_STATICS_BATCH, args, size, chunk_size, memory_budget, mesh, system.cpu_chunk
    )
    if throw and not isinstance(sol.converged, jax.core.Tracer) and not bool(jnp.all(sol.converged)):
        failed = int(jnp.sum(~sol.converged))
        raise RuntimeError(
            f"solve_statics_batch: {failed} of {sol.converged.shape[0]} members did not converge; "
            "pass throw=False to inspect each member's result"
        )
    return sol


def _solve_statics_batch(system, u, batch_system, chunk_size, kwargs, mesh) -> StaticsSolution:
    one = lambda system, u: solve_statics(system, u, **kwargs)
    batched = (batch_system, u is not None)
    run = lambda *args: _over_batch(one, args, batched, chunk_size)
    return _on_devices(run, (system, u), batched, mesh)


def vmap_on_devices(fn: Callable[..., Any], *args: Any, devices: int | Sequence[jax.Device] | None = None) -> Any:
    """``jax.vmap(fn)(*args)``, compiled, with the batch (the leading axis of every array leaf of ``args``) split over
    ``devices`` as :func:`simulate_batch` splits its batch (module docstring): any batched computation, e.g. a batch
    of trajectory optimisations, ``vmap_on_devices(lambda target: optim.solve_ddp(*arm_reach(target)), targets)``.
    ``fn`` is compile-time structure: pass the same function object to reuse the compilation."""
    mesh = _mesh("vmap_on_devices", devices)
    _batch_size(args, (True,) * len(args), "vmap_on_devices")
    return _VMAP_ON_DEVICES(fn, args, mesh)


def _vmap_on_devices(fn, args, mesh):
    return _on_devices(jax.vmap(fn), args, (True,) * len(args), mesh)


def _on(mesh: Mesh | None) -> str:
    return "" if mesh is None else f", on {mesh.devices.size} devices"


def _describe(system, inputs, q0, batched, chunk_size, kwargs, mesh) -> str:
    return f"{kwargs.get('solver', 'kvaerno5')}, {system.n_dof} DoF{_on(mesh)}"


_SIMULATE_BATCH = Compiled(_simulate_batch, "simulate_batch", _describe, cacheable=True)
_VMAP_ON_DEVICES = Compiled(
    _vmap_on_devices, "vmap_on_devices", lambda fn, args, mesh: f"{len(args)} arguments{_on(mesh)}"
)
_SIMULATE_STACKS = Compiled(_simulate_stacks, "simulate_batch", _describe, cacheable=True)
_SOLVE_STATICS_BATCH = Compiled(
    _solve_statics_batch,
    "solve_statics_batch",
    lambda system, *rest: f"{system.n_dof} DoF{_on(rest[-1])}",
    cacheable=True,
)
