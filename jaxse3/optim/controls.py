"""Control parameterisations: a few knots per input, turned into the input ``u(t)`` of a simulation.

A :class:`Controls` is a pytree (the knot values are its array leaf), so ``jax.grad`` of a simulation with respect to
it is the gradient with respect to the knots, and a batch of knot sets vmaps. Three kinds, on ``[0, t_final]``:

* ``"constant"``: ``n`` values, each held on one of ``n`` equal intervals (a zero-order hold, the controls of a
  discrete-time problem);
* ``"linear"``: ``n`` values at ``n`` equally spaced times, 0 and ``t_final`` included, linearly interpolated;
* ``"bspline"``: ``n ≥ 4`` control points of a uniform, clamped cubic B-spline (C², starts at the first point and ends
  at the last; de Boor's recursion, *A Practical Guide to Splines*, 1978, ch. IX).

Outside ``[0, t_final]`` every kind holds its end values.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Real

__all__ = ["KINDS", "MIN_KNOTS", "Controls"]

KINDS = ("constant", "linear", "bspline")
#: the fewest knots of each kind
MIN_KNOTS = {"constant": 1, "linear": 2, "bspline": 4}


def _bspline_weights(n: int, s: jax.Array) -> jax.Array:
    """The n uniform clamped cubic B-spline basis functions at s ∈ [0, 1] (Cox–de Boor), shape (n,)."""
    inner = jnp.linspace(0.0, 1.0, n - 2)
    knots = jnp.concatenate([jnp.zeros(3), inner, jnp.ones(3)])  # n + 4 knots
    s = jnp.clip(s, 0.0, 1.0)
    # degree 0: the half-open knot spans; s = 1 belongs to the last non-empty one, [knots[n − 1], knots[n]]
    span = (knots[:-1] <= s) & (s < knots[1:])
    last = jnp.arange(n + 3) == n - 1
    B = jnp.where(span | (last & (s >= 1.0)), 1.0, 0.0)
    for k in (1, 2, 3):
        left_den = knots[k : k + B.size - 1] - knots[: B.size - 1]
        right_den = knots[k + 1 : k + B.size] - knots[1 : B.size]
        left = jnp.where(left_den > 0, (s - knots[: B.size - 1]) / jnp.where(left_den > 0, left_den, 1.0), 0.0)
        right = jnp.where(
            right_den > 0, (knots[k + 1 : k + B.size] - s) / jnp.where(right_den > 0, right_den, 1.0), 0.0
        )
        B = left * B[:-1] + right * B[1:]
    return B


class Controls(eqx.Module):
    """Inputs ``u(t)`` given by knot ``values`` (n, n_inputs) of a ``kind`` in :data:`KINDS` on ``[0, t_final]``.

    Callable: ``controls(t)`` is u(t), shape (n_inputs,), so a :class:`Controls` is a valid ``inputs`` argument of
    :func:`jaxse3.sim.simulate`.
    """

    values: Float[Array, "n n_inputs"]
    t_final: Float[Array, ""]
    kind: str = eqx.field(static=True)

    def __init__(self, values: Float[ArrayLike, "n n_inputs"], t_final: float, kind: str = "linear"):
        if kind not in KINDS:
            raise ValueError(f"Controls: kind must be one of {KINDS}, got {kind!r}")
        values = jnp.asarray(values, dtype=float)
        smallest = MIN_KNOTS[kind]
        if values.ndim != 2 or values.shape[0] < smallest:
            raise ValueError(
                f"Controls: values must have shape (n, n_inputs) with n >= {smallest} for kind {kind!r}, "
                f"got {values.shape}"
            )
        self.values, self.t_final, self.kind = values, jnp.asarray(t_final, dtype=float), kind

    @property
    def n_knots(self) -> int:
        return self.values.shape[0]

    def __call__(self, t: Real[ArrayLike, ""]) -> Float[Array, " n_inputs"]:
        n = self.n_knots
        s = jnp.clip(jnp.asarray(t) / self.t_final, 0.0, 1.0)
        if self.kind == "constant":
            return self.values[jnp.minimum(jnp.floor(s * n).astype(int), n - 1)]
        if self.kind == "linear":
            x = s * (n - 1)
            i = jnp.minimum(jnp.floor(x).astype(int), n - 2)
            w = x - i
            return (1.0 - w) * self.values[i] + w * self.values[i + 1]
        return _bspline_weights(n, s) @ self.values
