"""Trace-time argument checking and batching of the unbatched core functions over leading axes."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike

__all__ = ["batched", "as_float"]


def as_float(*args: ArrayLike) -> list[Array]:
    """Convert to JAX arrays of one common floating dtype (integers become the default float)."""
    arrs = [jnp.asarray(a) for a in args]
    dtype = jnp.result_type(*arrs)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)
    return [a.astype(dtype) for a in arrs]


def _core_shapes(signature: str) -> tuple[list[tuple[int, ...]], str]:
    ins, out = signature.split("->")
    shapes = [tuple(int(d) for d in grp.split(",") if d) for grp in re.findall(r"\(([^)]*)\)", ins)]
    return shapes, out


def batched(signature: str, names: tuple[str, ...], name: str | None = None) -> Callable:
    """Decorate an unbatched core function so that it broadcasts over leading batch axes.

    ``signature`` uses literal sizes, e.g. ``"(6),(6)->(6,6)"``; ``names`` are the argument names used in error
    messages. Wrong trailing shapes raise ``ValueError`` at trace time naming the function, the argument and the
    expected shape. Inputs are promoted to one floating dtype.
    """
    shapes, _ = _core_shapes(signature)
    assert len(shapes) == len(names)

    def deco(core: Callable) -> Callable:
        vec = jnp.vectorize(core, signature=re.sub(r"\d+", lambda m: "n" + m.group(0), signature))

        fname = name or core.__name__

        @functools.wraps(core)
        def wrapper(*args):
            if len(args) != len(names):
                raise TypeError(f"{fname}() takes {len(names)} arguments ({', '.join(names)}), got {len(args)}")
            args = as_float(*args)
            for a, name, shape in zip(args, names, shapes):
                if a.ndim < len(shape) or tuple(a.shape[a.ndim - len(shape) :]) != shape:
                    want = "(..., " + ", ".join(map(str, shape)) + ")"
                    raise ValueError(f"{fname}: argument '{name}' must have shape {want}, got {tuple(a.shape)}")
            return vec(*args)

        wrapper.__name__ = wrapper.__qualname__ = fname
        wrapper.core = core  # the unbatched function, for composition inside other cores
        return wrapper

    return deco
