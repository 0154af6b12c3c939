"""The one way to register an analytical derivative in jaxse3, and the shared pieces of every rule.

:func:`custom_rule` turns a plain function and its analytical JVP into a ``jax.custom_jvp`` function (with symbolic
zeros) whose rule invocations are counted in :data:`RULE_CALLS` at trace time, so tests can show that autodiff runs the
hand-derived formulas. Every analytical rule in :mod:`jaxse3` has the same shape: the output tangent is a sum of
analytical terms, one per
argument whose tangent is not a symbolic zero (``J_q @ dq + J_v @ dv + …``), plus, for the arguments the analytical
formulas do not cover (model parameters, loads, external forces), the plain autodiff JVP. These helpers write that
once:

- :func:`is_zero`: is a tangent a symbolic zero;
- :func:`accumulate`: the sum of the analytical terms, skipping zero tangents at trace time;
- :func:`jvp_of_rest`: the autodiff JVP with respect to the remaining arguments, or ``None`` when all their tangents
  are symbolic zeros (the usual case), so that it costs nothing then; :func:`jvp_moving` is that JVP for any function,
  along only the leaves that move;
- :func:`dense`: a tangent with its symbolic zeros made arrays.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero

__all__ = ["custom_rule", "RULE_CALLS", "is_zero", "dense", "accumulate", "jvp_moving", "jvp_of_rest"]

#: Trace-time counter of analytical rule invocations, keyed by the rule's name (e.g. "se3.exp", "rigid.rnea",
#: "forward_dynamics" for the rod): the one counter of the package.
RULE_CALLS: collections.Counter = collections.Counter()


def custom_rule(name: str, fn: Callable, jvp: Callable, *, symbolic_zeros: bool = True) -> Callable:
    """``fn`` as a ``jax.custom_jvp`` function whose JVP is ``jvp(primals, tangents) -> (primal_out, tangent_out)``.

    Each time JAX traces the rule, ``RULE_CALLS[name]`` grows by one. With ``symbolic_zeros`` (the default), the
    tangents of arguments that are not differentiated arrive as symbolic zeros (:func:`is_zero`): :func:`accumulate`
    skips them and :func:`jvp_of_rest` costs nothing for them.

    ``fn`` and ``jvp`` are traced once per argument structure (shapes, dtypes, static model fields and which tangents
    are zero) and reused: each is a ``jit``-compiled function inside the caller's program, whose jaxpr JAX caches,
    with its transformations (``vmap``, ``jvp``), across the calls. A model evaluation that uses a rule many times
    (a rod's Gauss points, Newton iterations, the knots of a trajectory) thus traces it once instead of once per use
    (iLQR through implicit Euler on a 4-DoF linkage, 2026-12-02: tracing 29 s → 16 s, XLA 37 s → 30 s). XLA inlines
    the calls. Cached traces are not counted again: tests of ``RULE_CALLS`` clear JAX's caches first
    (``jax.clear_caches()``).
    """
    fn_once = eqx.filter_jit(fn)
    jvp_once = eqx.filter_jit(_with_zeros_restored(jvp))
    rule = jax.custom_jvp(fn_once)

    def counted(primals, tangents):
        RULE_CALLS[name] += 1
        return jvp_once(primals, jax.tree.map(lambda t: _ZERO if is_zero(t) else t, tangents, is_leaf=is_zero))

    rule.defjvp(counted, symbolic_zeros=symbolic_zeros)
    return rule


#: a symbolic-zero tangent on its way into a compiled rule (a static marker: ``SymbolicZero`` is not hashable)
_ZERO = object()


def _with_zeros_restored(jvp: Callable) -> Callable:
    def run(primals, marked):
        tangents = jax.tree.map(
            lambda p, t: SymbolicZero.from_primal_value(p) if t is _ZERO else t, list(primals), list(marked)
        )
        return jvp(tuple(primals), tuple(tangents))

    return run


def is_zero(tangent: Any) -> bool:
    """True for a symbolic-zero tangent (``custom_jvp(..., symbolic_zeros=True)``)."""
    return isinstance(tangent, SymbolicZero)


def accumulate(primal_out: jax.Array, terms: Iterable[tuple[Any, Any]], rest: jax.Array | None = None) -> jax.Array:
    """``Σ apply(t) over (apply, t) in terms`` for the tangents ``t`` that are not symbolic zeros, plus ``rest``.

    ``apply`` is a matrix (applied as ``apply @ t``) or a callable of ``t``. The result has ``primal_out``'s shape; it
    is an array of zeros when every tangent is a symbolic zero and ``rest`` is None.
    """
    out = None
    for apply, t in terms:
        if is_zero(t):
            continue
        term = apply(t) if callable(apply) else apply @ t
        out = term if out is None else out + term
    if rest is not None:
        out = rest if out is None else out + rest
    return jnp.zeros_like(primal_out) if out is None else out


def dense(primal: Any, tangent: Any) -> Any:
    """``tangent`` with its symbolic-zero leaves made arrays of zeros shaped like ``primal``'s."""
    return jax.tree.map(lambda p, t: jnp.zeros_like(p) if is_zero(t) else t, primal, tangent, is_leaf=is_zero)


def jvp_moving(fn: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """JVP of ``fn(*primals)`` by plain autodiff along only the array leaves whose tangents are not symbolic zeros (a
    model whose stiffness alone moves costs the JVP in its stiffness, not in every array of the model); None when all
    tangents are symbolic zeros (or None)."""
    leaves, treedef = jax.tree.flatten(list(primals))
    tangent_leaves = treedef.flatten_up_to(list(tangents))
    moving = [k for k, t in enumerate(tangent_leaves) if t is not None and not is_zero(t)]
    if not moving:
        return None

    def of_moving(*values):
        new = list(leaves)
        for k, value in zip(moving, values):
            new[k] = value
        return fn(*jax.tree.unflatten(treedef, new))

    return jax.jvp(of_moving, tuple(leaves[k] for k in moving), tuple(tangent_leaves[k] for k in moving))[1]


def jvp_of_rest(fn: Callable, primals: Sequence[Any], tangents: Sequence[Any], analytic: Sequence[int]) -> Any:
    """JVP of ``fn(*primals)`` along the tangents of the arguments *not* in ``analytic``, by plain autodiff
    (:func:`jvp_moving`: only along the leaves that move).

    Returns None when all of those tangents are symbolic zeros (derivatives in the state only), so a rule pays for
    the autodiff path only when a caller differentiates with respect to parameters.
    """
    rest = [i for i in range(len(primals)) if i not in analytic]

    def of_rest(*free):
        args = list(primals)
        for i, value in zip(rest, free):
            args[i] = value
        return fn(*args)

    return jvp_moving(of_rest, [primals[i] for i in rest], [tangents[i] for i in rest])
