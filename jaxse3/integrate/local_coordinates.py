"""Integration of Lie-group ODEs on the local-coordinate ODE, with any diffrax solver (implicit ones included).

Around a reference state ``C_ref`` (every group node; seed 001 eqs. (1.2), (1.5), (1.7), digest §7.2):

    spatial (``C' = V̂(t, C) C``):  C(t) = ψ(Θ(t)) C_ref,   Θ' = dψ⁻¹_{Θ} V(t, ψ(Θ) C_ref),     Θ(t_ref) = 0
    body    (``C' = C V̂(t, C)``):  C(t) = C_ref ψ(Θ(t)),   Θ' = dψ⁻¹_{−Θ} V(t, C_ref ψ(Θ)),    Θ(t_ref) = 0

with ``ψ = exp`` (``dψ⁻¹ = dexp⁻¹``) or ``ψ = cay_half`` (``dψ⁻¹ = dcay_half⁻¹``). Vector nodes use ``y = y_ref + Θ``
(``Θ' = f``). The local state ``Θ`` is a pytree of plain arrays (each group node replaced by its twist array), so
:class:`diffrax.ODETerm` and every diffrax solver apply. An implicit solver's Newton Jacobian
``∂/∂Θ [dexp⁻¹_{±Θ} V]`` is formed by JAX autodiff, which runs the custom_jvp rule of ``dexp_inv_apply``, i.e. the
closed-form directional derivative ``(D_Θ dexp⁻¹)(U) V`` (seed 001 eq. (2.51); Cayley: eq. (3.23), plain autodiff of
a rational closed form) — the paper's "Hessian" terms (digest §7.2).

Chart limits (digest pitfall 8): ``dexp⁻¹`` is singular at rotation angle 2π and Cayley coordinates cover angles below
π only, so one chart serves a short time span. :func:`solve_recharted` integrates chart by chart: on each interval it
solves the local ODE from ``Θ = 0`` and re-charts at the end (``C_ref ← C``), and it raises (``eqx.error_if``) when a
chart's rotation angle exceeds ``max_angle`` (default π/2), which means the charts are too long.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
from jaxtyping import Array, ArrayLike, Float, PyTree, Real

from jaxse3.integrate import group_state as gs

__all__ = ["LocalCoordinateField", "zero_coordinates", "from_local", "solve_recharted"]


def zero_coordinates(reference: PyTree[Any]) -> PyTree[Array]:
    """``Θ = 0`` for ``reference``: zeros of twist shape ``matrix.shape[:-2] + (dim,)`` for each group node, zeros of
    the leaf's shape for each vector node."""
    return gs.map_nodes(
        lambda n: jnp.zeros(n.matrix.shape[:-2] + (n.dim,), n.matrix.dtype) if gs.is_group(n) else jnp.zeros_like(n),
        reference,
    )


def from_local(
    reference: PyTree[Any], theta: PyTree[Array], coordinates: gs.Coordinates = "exp", side: gs.Side = "spatial"
) -> PyTree[Any]:
    """The state with local coordinates ``theta`` around ``reference``: ``ψ(Θ) C_ref`` / ``C_ref ψ(Θ)`` / ``y_ref +
    Θ``."""
    gs.check_options(coordinates, side)
    return gs.map_nodes(lambda n, th: gs.retract(n, th, coordinates, side), reference, theta)


class LocalCoordinateField(eqx.Module):
    """Vector field of the local-coordinate ODE, for ``diffrax.ODETerm``: ``(t, Θ, (C_ref, args)) ↦ dψ⁻¹_{±Θ} V``.

    Args:
        vector_field: ``f(t, y, args)`` of the Lie-group ODE, as for :class:`~jaxse3.integrate.group_state.LieODETerm`
            (twists for group nodes, spatial or body according to ``side``).
        coordinates: ``"exp"`` or ``"cayley"`` (half-scaled Cayley map).
        side: ``"spatial"`` (``C = ψ(Θ) C_ref``, ``Θ' = dψ⁻¹_Θ V``) or ``"body"`` (``C = C_ref ψ(Θ)``,
            ``Θ' = dψ⁻¹_{−Θ} V``).

    The reference point travels in ``args = (C_ref, user_args)``, so re-charting does not retrace. Start from
    ``zero_coordinates(C_ref)`` and map back with :func:`from_local`.
    """

    vector_field: Callable
    coordinates: str = eqx.field(static=True, default="exp")
    side: str = eqx.field(static=True, default="spatial")

    def __check_init__(self):
        gs.check_options(self.coordinates, self.side)

    def __call__(
        self, t: Real[ArrayLike, ""], theta: PyTree[Array], args: tuple[PyTree[Any], PyTree[Any]]
    ) -> PyTree[Array]:
        reference, user_args = args
        y = from_local(reference, theta, self.coordinates, self.side)
        v = gs.LieODETerm(self.vector_field).vf(t, y, user_args)
        return gs.map_nodes(
            lambda n, th, vi: gs.local_field(n, th, vi, self.coordinates, self.side), reference, theta, v
        )


def _chart_angle(reference, theta, coordinates: str) -> jax.Array:
    """Largest rotation angle of the chart increments ψ(Θ) over all group nodes (0 if there are none)."""
    angles = [jnp.zeros(())]
    for node, th in zip(jtu.tree_leaves(reference, is_leaf=gs.is_group), jtu.tree_leaves(theta)):
        if gs.is_group(node):
            norm = jnp.sqrt(jnp.sum(th[..., :3] ** 2, axis=-1))
            angles.append(jnp.max(norm if coordinates == "exp" else 2.0 * jnp.arctan(0.5 * norm)))
    return jnp.max(jnp.stack(angles))


def solve_recharted(
    vector_field: Callable[..., PyTree[Array]],
    solver: diffrax.AbstractSolver,
    t0: float,
    t1: float,
    y0: PyTree[Any],
    *,
    num_charts: int,
    steps_per_chart: int = 1,
    args: PyTree[Any] = None,
    coordinates: gs.Coordinates = "exp",
    side: gs.Side = "spatial",
    max_angle: float = 0.5 * math.pi,
    **diffeqsolve_kwargs: Any,
) -> tuple[Float[Array, " k"], PyTree[Any]]:
    """Integrate ``C' = V̂ C`` / ``C V̂`` (and vector leaves) from ``t0`` to ``t1`` on ``num_charts`` equal local charts.

    On chart ``k`` (``[τ_k, τ_{k+1}]``) the local-coordinate ODE of :class:`LocalCoordinateField` is solved by
    ``diffrax.diffeqsolve(ODETerm(...), solver, τ_k, τ_{k+1}, dt0=(τ_{k+1} − τ_k)/steps_per_chart, Θ=0, ...)`` (extra
    keyword arguments such as ``stepsize_controller`` go to ``diffeqsolve``), and the state is re-charted,
    ``y_{k+1} = from_local(y_k, Θ(τ_{k+1}))``. With ``steps_per_chart=1`` and ``diffrax.ImplicitEuler()`` this is the
    Lie-group implicit Euler method; any diffrax solver gives its own order (the chart map is exact).

    Args:
        vector_field: ``f(t, y, args)`` (twists for group nodes).
        solver: any diffrax ODE solver (explicit or implicit, e.g. ``ImplicitEuler``, ``Kvaerno5``).
        t0, t1: time span.
        y0: initial state (a pytree with :class:`~jaxse3.integrate.group_state.SE3Element`/``SO3Element`` nodes).
        num_charts: number of equal charts (static).
        steps_per_chart: initial/fixed number of solver steps per chart.
        max_angle: a chart whose rotation exceeds this angle raises an error (charts too long; the exp chart is
            singular at 2π, Cayley's at π).

    Returns:
        ``(ts, ys)``: the ``num_charts + 1`` chart boundaries and the states there, stacked on a leading axis.
    """
    gs.check_options(coordinates, side)
    if int(num_charts) < 1 or int(steps_per_chart) < 1:
        raise ValueError("arguments 'num_charts' and 'steps_per_chart' must be positive integers")
    term = diffrax.ODETerm(LocalCoordinateField(vector_field, coordinates, side))
    ts = jnp.linspace(t0, t1, int(num_charts) + 1)

    def chart(y, interval):
        a, b = interval
        sol = diffrax.diffeqsolve(
            term,
            solver,
            a,
            b,
            (b - a) / steps_per_chart,
            zero_coordinates(y),
            args=(y, args),
            saveat=diffrax.SaveAt(t1=True),
            **diffeqsolve_kwargs,
        )
        theta = jtu.tree_map(lambda x: x[-1], sol.ys)
        theta = eqx.error_if(
            theta,
            _chart_angle(y, theta, coordinates) > max_angle,
            "solve_recharted: a chart rotated by more than max_angle; use more charts (num_charts)",
        )
        y_next = from_local(y, theta, coordinates, side)
        return y_next, y_next

    _, ys = jax.lax.scan(chart, y0, (ts[:-1], ts[1:]))
    ys = jtu.tree_map(lambda first, rest: jnp.concatenate([first[None], rest]), y0, ys)
    return ts, ys
