"""Batches that stay in a CPU's caches: a function whose ``vmap`` runs, on a CPU, as a loop over vmapped chunks.

One ``vmap`` over many members evaluates each operation of a program for all of them before the next, so the
intermediates of a large batch (a rod's forward-dynamics Jacobians: hundreds of 6 × 6 and 6 × n blocks per state)
stream through main memory instead of staying in the caches, and a vmapped state costs more than a state alone.
:func:`cache_sized` wraps a function so that ``jax.vmap`` of it runs, on a CPU, as a ``jax.lax.map`` over chunks of
:data:`CPU_CHUNK` members, each vmapped (``jax.custom_batching.custom_vmap``); on other platforms, and for batches of
at most :data:`CPU_CHUNK` members, it is plain ``vmap``. Values are those of ``vmap`` to round-off.

Measured (one core, fresh processes, 2026-12-05): ``jax.vmap(jax.jacfwd(forward_dynamics))`` of the 12-DoF spatial
rod over 1000 states 128–141 → 55–58 µs per state, its forward dynamics 9.7–12.6 → 9.1–9.5 µs, compile unchanged
(6.0–7.1 against 6.9–7.2 s). The same effect in :func:`jaxse3.sim.simulate_batch`, which runs a rod's batch on a
CPU in chunks of :data:`CPU_CHUNK` (``System.cpu_chunk``): 64 CDM rods, one vmap against chunks of 8, Kvaerno5 over
0.2 s 9.6 → 7.0 ms per member; Newmark-β stacks of 64 against 8, 107 → 136 rod-s/s (stacks of 4: 118, of 16: 127).
Small models ``vmap`` better (a 7-DoF rigid arm, module :mod:`jaxse3.sim.system`): the chunking is for large ones.

Only the evaluation is chunked: ``custom_vmap`` has no reverse-mode rule, so the wrapped function is also a
``custom_jvp`` function whose JVP is that of ``fn`` itself (vmapped as usual), and every derivative, forward or
reverse, of any order, is ``fn``'s. :func:`cache_sized` wraps the primal of the rod's and the linkage's forward
dynamics and what their rules compute from the primals alone (the Jacobians), which ``jax.vmap(jax.jacfwd(...))``
evaluates without differentiating.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

__all__ = ["CPU_CHUNK", "cache_sized", "pad_members", "split_chunks", "join_chunks"]

#: The members a CPU evaluates together under ``vmap`` (:func:`cache_sized`) and, for rods and linkages with soft
#: links (``System.cpu_chunk``), simulates together in a batch (:func:`jaxse3.sim.simulate_batch` without
#: ``chunk_size``); chunks of 4 and 16 were slower than 8 (module docstring).
CPU_CHUNK = 8


def cache_sized(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (pytrees of arrays and static leaves in, a pytree of arrays out) whose ``vmap`` on a CPU runs in chunks of
    :data:`CPU_CHUNK` members; its derivatives are ``fn``'s (module docstring)."""

    def call(*args: Any) -> Any:
        arrays, static = eqx.partition(args, eqx.is_array)
        leaves, tree = jax.tree.flatten(arrays)

        def flat_fn(*leaves):
            return fn(*eqx.combine(jax.tree.unflatten(tree, leaves), static))

        chunked = jax.custom_batching.custom_vmap(flat_fn)

        @chunked.def_vmap
        def rule(axis_size: int, in_batched: list[bool], *leaves):
            if axis_size <= CPU_CHUNK or not any(in_batched) or jax.default_backend() != "cpu":
                in_axes = [0 if b else None for b in in_batched]
                out = jax.vmap(flat_fn, in_axes=in_axes, axis_size=axis_size)(*leaves)
            else:
                out = _chunked(flat_fn, axis_size, in_batched, leaves)
            return out, jax.tree.map(lambda _: True, out)

        # derivatives of any order and mode are those of fn itself: custom_vmap alone has no reverse mode
        differentiable = jax.custom_jvp(chunked)
        differentiable.defjvp(lambda primals, tangents: jax.jvp(flat_fn, primals, tangents))
        return differentiable(*leaves)

    return call


def _chunked(fn: Callable[..., Any], size: int, in_batched: list[bool], leaves: list) -> Any:
    """``vmap(fn)`` over the leading axis of the ``in_batched`` leaves as a ``lax.map`` over chunks of
    :data:`CPU_CHUNK` members, the last one padded (:func:`split_chunks`: the program holds one copy of ``fn``, where
    ``lax.map``'s own remainder would add a second)."""
    batched = [i for i, b in enumerate(in_batched) if b]

    def chunk(mapped):
        member_leaves = list(leaves)
        for i, x in zip(batched, mapped):
            member_leaves[i] = x
        return fn(*member_leaves)

    out = jax.lax.map(jax.vmap(chunk), [split_chunks(leaves[i], CPU_CHUNK) for i in batched])
    return jax.tree.map(lambda y: join_chunks(y, size), out)


def pad_members(x: jax.Array, length: int) -> jax.Array:
    """``x`` (B, ...) extended to ``length`` members along its leading axis by repeating its last member."""
    return jnp.concatenate([x, jnp.repeat(x[-1:], length - x.shape[0], axis=0)])


def split_chunks(x: jax.Array, k: int) -> jax.Array:
    """``x`` (B, ...) as (⌈B/k⌉, k, ...), the last chunk padded by repeating the last member (:func:`pad_members`)."""
    n_chunks = -(-x.shape[0] // k)
    return pad_members(x, n_chunks * k).reshape(n_chunks, k, *x.shape[1:])


def join_chunks(y: jax.Array, size: int) -> jax.Array:
    """The inverse of :func:`split_chunks`: (n_chunks, k, ...) back to its first ``size`` members (size, ...)."""
    return y.reshape(y.shape[0] * y.shape[1], *y.shape[2:])[:size]
