"""Batches of simulations and static solves under ``vmap``: one compilation for many rods of the same topology.

A batch varies any of: the inputs (a :class:`~jaxse3.sim.system.SampledInput` or any pytree-callable whose arrays have a
leading batch axis, or an (B, n_inputs) array of constant inputs), the system parameters (a :class:`System` whose
parameter arrays have a leading batch axis — build it with :func:`stack`), the initial state. Arguments given
unbatched are shared. The results carry the batch axis in front of every field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PyTree

from jaxse3._compile import Compiled
from jaxse3.sim.dynamics import FIXED_STEP, batch_axes, simulate, simulate_stack
from jaxse3.sim.statics import StaticsSolution, check_finite, solve_statics
from jaxse3.sim.system import System
from jaxse3.sim.trajectory import Trajectory

__all__ = ["stack", "simulate_batch", "solve_statics_batch"]


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
    **kwargs: Any,
) -> Trajectory:
    """:func:`~jaxse3.sim.dynamics.simulate` over a batch, vmapped and compiled once.

    Args:
        system: a system; its parameter arrays carry a leading batch axis iff ``batch_system``.
        inputs: inputs with a leading batch axis on their arrays iff ``batch_inputs`` (a (B, n_inputs) array means
            B constant inputs).
        q0: initial coordinates, (B, n_dof) iff ``batch_q0``.
        chunk_size: members simulated together: the batch runs as ``jax.lax.map(..., batch_size=chunk_size)``, a
            loop over vmapped chunks (default ``None``: one vmap over the whole batch). Chunks bound the memory of
            the intermediates; they are not needed for correctness (batched factorisations never reach jaxlib's
            blocking LAPACK batch kernels, see :mod:`jaxse3._batched_linalg`).
            With a fixed-step solver (``"newmark"``, ``"generalized-alpha"`` or their index-3 forms) the members of
            a chunk (``None``: of the whole batch) are integrated as one stack of systems on the shared fixed time
            grid (:func:`~jaxse3.sim.dynamics.simulate_stack`), not under ``vmap``, so that the modified Newton
            iteration keeps one scalar Jacobian-refresh decision per chunk.
        **kwargs: passed to :func:`simulate` (``t_final``, ``solver``, ...).
    """
    _check_chunk_size("simulate_batch", chunk_size)
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
    traj = run(system, inputs, q0, batched, chunk_size, kwargs)
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


def _check_chunk_size(who: str, chunk_size) -> None:
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size >= 1):
        raise ValueError(f"{who}: chunk_size must be a positive int or None, got {chunk_size!r}")


def _simulate_batch(system, inputs, q0, batched, chunk_size, kwargs) -> Trajectory:
    one = lambda system, inputs, q0: simulate(system, inputs, q0=q0, **kwargs)
    return _over_batch(one, (system, inputs, q0), batched, chunk_size)


def _simulate_stacks(system, inputs, q0, batched, chunk_size, kwargs) -> Trajectory:
    """Newmark: chunks of ``chunk_size`` members (the last one padded by repeating the last member), each integrated
    as one stack, one chunk after the other."""
    sizes = {
        leaf.shape[0]
        for x, b in zip((system, inputs, q0), batched)
        if b
        for leaf in jax.tree.leaves(eqx.filter(x, eqx.is_array))
    }
    if len(sizes) != 1:
        raise ValueError(f"simulate_batch: the batched arguments have different batch sizes {sorted(sizes)}")
    (B,) = sizes
    q0 = q0 if batched[2] else jnp.broadcast_to(q0, (B, system.n_dof))
    mapped, rebuild = _split((system, inputs, q0), (*batched[:2], True))

    def run(mapped):
        system, inputs, q0 = rebuild(mapped)
        return simulate_stack(system, inputs, batched[:2], q0=q0, **kwargs)

    k = B if chunk_size is None else min(chunk_size, B)
    if k == B:
        return run(mapped)
    n_chunks = -(-B // k)

    def split(x):  # (B, ...) -> (n_chunks, k, ...)
        x = jnp.concatenate([x, jnp.repeat(x[-1:], n_chunks * k - B, axis=0)])
        return x.reshape(n_chunks, k, *x.shape[1:])

    out = jax.lax.map(run, jax.tree.map(split, mapped))
    return jax.tree.map(lambda y: y.reshape(n_chunks * k, *y.shape[2:])[:B], out)


def solve_statics_batch(
    system: System,
    u: Float[ArrayLike, "b n_inputs"] | None = None,
    *,
    batch_system: bool = False,
    chunk_size: int | None = None,
    **kwargs: Any,
) -> StaticsSolution:
    """:func:`~jaxse3.sim.statics.solve_statics` for a (B, n_inputs) batch of inputs and/or a batch of systems.

    ``u=None`` gives every member zero inputs (e.g. a batch of rods without tendons, ``batch_system=True``).
    ``chunk_size``: members solved together, as in :func:`simulate_batch` (default ``None``: one ``vmap`` over the
    batch). Newton's loop under ``vmap`` runs until its slowest member has converged, every member paying each
    iteration; smaller chunks (down to 1, one member after the other) pay only their own members' iterations, at a
    smaller vectorisation gain per iteration. When the members need very different numbers of Newton iterations (the
    adaptive load continuation rejects steps for some), chunks are faster.
    """
    _check_chunk_size("solve_statics_batch", chunk_size)
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
    sol = _SOLVE_STATICS_BATCH(system, u, batch_system, chunk_size, kwargs)
    if throw and not isinstance(sol.converged, jax.core.Tracer) and not bool(jnp.all(sol.converged)):
        failed = int(jnp.sum(~sol.converged))
        raise RuntimeError(
            f"solve_statics_batch: {failed} of {sol.converged.shape[0]} members did not converge; "
            "pass throw=False to inspect each member's result"
        )
    return sol


def _solve_statics_batch(system, u, batch_system, chunk_size, kwargs) -> StaticsSolution:
    one = lambda system, u: solve_statics(system, u, **kwargs)
    return _over_batch(one, (system, u), (batch_system, u is not None), chunk_size)


def _describe(system, inputs, q0, batched, chunk_size, kwargs) -> str:
    return f"{kwargs.get('solver', 'kvaerno5')}, {system.n_dof} DoF"


_SIMULATE_BATCH = Compiled(_simulate_batch, "simulate_batch", _describe, cacheable=True)
_SIMULATE_STACKS = Compiled(_simulate_stacks, "simulate_batch", _describe, cacheable=True)
_SOLVE_STATICS_BATCH = Compiled(
    _solve_statics_batch, "solve_statics_batch", lambda system, *rest: f"{system.n_dof} DoF", cacheable=True
)
