"""Munthe-Kaas Runge–Kutta (RKMK) methods as diffrax solvers, for states that mix Lie-group and vector leaves.

Seed 001 (Müller 2021), local reconstruction eqs. (1.2)/(1.5) solved as the explicit local-coordinate ODE (1.7); the
algorithm is the digest's §7.2 (Munthe-Kaas 1998; Iserles et al. 2000; Hairer–Lubich–Wanner IV.8). One explicit step
of an ``s``-stage tableau ``(A, b, c)`` from ``C_n`` (every :class:`~jaxse3.integrate.group_state.SE3Element` /
``SO3Element`` node; ``ψ`` = exp or the half-scaled Cayley map):

    spatial (``C' = V̂(t, C) C``):  C_i = ψ(Θ_i) C_n,  K_i = dψ⁻¹_{Θ_i} V(t_n + c_i h, C_i),   C_{n+1} = ψ(Θ) C_n
    body    (``C' = C V̂(t, C)``):  C_i = C_n ψ(Θ_i),  K_i = dψ⁻¹_{−Θ_i} V(t_n + c_i h, C_i),  C_{n+1} = C_n ψ(Θ)

with ``Θ_i = h Σ_{j<i} a_ij K_j`` and ``Θ = h Σ b_i K_i``. Vector leaves take the ordinary RK step with the same
tableau (``Θ`` is then the increment ``y_{n+1} − y_n``). The first stage is at ``Θ_1 = 0`` exactly, where
``dψ⁻¹_0 = I``: it is not evaluated at all (``K_1 = V_1``). With the exact closed-form ``dψ⁻¹`` the method has the
classical order of the tableau (seed 001 digest §7.2, §8.2a).

diffrax integration details:

* Term: a :class:`~jaxse3.integrate.group_state.LieODETerm` (a :class:`diffrax.ODETerm` whose vector field
  ``f(t, y, args)`` returns ``y``'s pytree with each group node replaced by its twist array ``(..., 6)``/``(..., 3)``,
  spatial or body according to ``side``). diffrax's own ``ODETerm`` rejects such a field (it requires ``y``'s exact
  structure); it still works for purely vector states.
* The vector field at the end of a step is carried to the next step as the solver state (first-same-as-last), so it
  costs no extra evaluation and gives a cubic Hermite dense output (:class:`LieHermiteInterpolation`). For FSAL tableaux
  (Bogacki–Shampine, Dormand–Prince) it is the last stage; otherwise one extra evaluation per step replaces the next
  step's first one, so the evaluation count per step equals the number of stages either way.
* Error estimate of an embedded pair: ``E = h Σ (b_i − b̂_i) K_i`` in local coordinates; a group node of ``y_error``
holds
  ``Ê`` (its algebra matrix, wrapped in the node's type) so that the step-size controller compares it entrywise with
  ``atol + rtol |C|``.
* :meth:`RKMK.func` returns the time derivative in the matrix embedding (``V̂ C`` or ``C V̂``), with ``y``'s structure;
  diffrax uses it to pick an initial step when ``dt0=None``.

Singularities: exp coordinates need ``|Θ_rot| < 2π`` per step, Cayley ``|Θ_rot| < π``-equivalent (``cay_half`` covers
rotations below a half turn); both are increments of one step, far from the limits at reasonable step sizes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
from diffrax import RESULTS, AbstractLocalInterpolation
from jaxtyping import Array, ArrayLike, Bool, PyTree, Real

from jaxse3.integrate import group_state as gs
from jaxse3.integrate.tableaux import BOSH3, DOPRI5, EULER, HEUN, RK4, ButcherTableau

__all__ = ["RKMK", "LieEuler", "RKMKHeun", "RKMK4", "RKMKBosh3", "RKMKDopri5", "LieHermiteInterpolation"]


def _combine(h, coeffs, ks):
    """``h Σ_j coeffs_j K_j`` over pytrees of arrays, skipping zero (static) coefficients."""
    terms = [(a, k) for a, k in zip(coeffs, ks) if a != 0.0]
    if not terms:
        return jtu.tree_map(jnp.zeros_like, ks[0])
    return jtu.tree_map(
        lambda *leaves: h * sum(a * leaf for (a, _), leaf in zip(terms, leaves)), *[k for _, k in terms]
    )


class LieHermiteInterpolation(AbstractLocalInterpolation):
    """Dense output of an RKMK step that stays on the group: a cubic Hermite curve in local coordinates.

    With ``s = (t − t_n)/h``: ``Θ(s) = h₁₀(s) m₀ + h₀₁(s) Θ + h₁₁(s) m₁`` (Hermite basis ``h₁₀ = s(1−s)²``,
    ``h₀₁ = s²(3−2s)``, ``h₁₁ = s²(s−1)``), where ``m₀ = h V_n`` (since ``dψ⁻¹_0 = I``) and
    ``m₁ = h dψ⁻¹_{±Θ} V(t_{n+1}, C_{n+1})`` are the exact local-coordinate slopes at both ends; the point is
    ``ψ(Θ(s)) C_n`` (spatial) or ``C_n ψ(Θ(s))`` (body), on the group to round-off. Vector leaves get the ordinary cubic
    Hermite interpolant. Local interpolation error O(h⁴) (third-order dense output), like diffrax's Bosh3.
    """

    t0: jax.Array
    t1: jax.Array
    y0: object
    theta: object
    m0: object
    m1: object
    coordinates: str = eqx.field(static=True, default="exp")
    side: str = eqx.field(static=True, default="spatial")

    def evaluate(
        self, t0: Real[ArrayLike, ""], t1: Real[ArrayLike, ""] | None = None, left: bool = True
    ) -> PyTree[Any]:
        del left
        if t1 is not None:
            raise NotImplementedError(
                "LieHermiteInterpolation.evaluate(t0, t1): increments between two times are not defined for "
                "Lie-group states; evaluate each time separately"
            )
        span = self.t1 - self.t0
        s = jnp.where(span == 0, 0.0, (t0 - self.t0) / jnp.where(span == 0, 1.0, span))
        h10, h01, h11 = s * (1 - s) ** 2, s * s * (3 - 2 * s), s * s * (s - 1)
        inc = jtu.tree_map(lambda m0, th, m1: h10 * m0 + h01 * th + h11 * m1, self.m0, self.theta, self.m1)
        return gs.map_nodes(lambda n, d: gs.retract(n, d, self.coordinates, self.side), self.y0, inc)


class RKMK(diffrax.AbstractAdaptiveSolver):
    """Munthe-Kaas Runge–Kutta method with any explicit Butcher tableau (seed 001 digest §7.2).

    Args:
        tableau: an explicit :class:`~jaxse3.integrate.tableaux.ButcherTableau` (validated at its construction);
            with ``b_error`` it provides error estimates for :class:`diffrax.PIDController`.
        coordinates: ``"exp"`` (``ψ = exp``, ``dψ⁻¹ = dexp⁻¹`` through the custom_jvp ``dexp_inv_apply``) or
            ``"cayley"`` (``ψ = cay_half``, ``dψ⁻¹ = dcay_half⁻¹``; the half-scaled map, digest pitfall 4).
        side: ``"spatial"`` (``C' = V̂ C``, the vector field returns spatial twists) or ``"body"`` (``C' = C V̂``, body
            twists).

    Order: the tableau's classical order, for both coordinate maps and both sides. Works with ``SaveAt(ts=…)``
    (:class:`LieHermiteInterpolation`), ``SaveAt(steps=True)``, fixed steps, ``PIDController`` (embedded pairs),
    ``jit``, ``vmap``, ``RecursiveCheckpointAdjoint`` and ``ForwardMode``. Not for SDEs.
    """

    tableau: ButcherTableau = eqx.field(static=True)
    coordinates: str = eqx.field(static=True, default="exp")
    side: str = eqx.field(static=True, default="spatial")

    term_structure: ClassVar = diffrax.ODETerm  # a LieODETerm for states with group nodes

    def __check_init__(self):
        if not isinstance(self.tableau, ButcherTableau):
            raise TypeError(f"argument 'tableau' must be a ButcherTableau, got {type(self.tableau).__name__}")
        gs.check_options(self.coordinates, self.side)

    @property
    def interpolation_cls(self) -> Callable[..., LieHermiteInterpolation]:  # type: ignore[override]
        return functools.partial(LieHermiteInterpolation, coordinates=self.coordinates, side=self.side)

    def order(self, terms: PyTree[diffrax.AbstractTerm]) -> int:
        return self.tableau.order

    def init(
        self,
        terms: diffrax.AbstractTerm,
        t0: Real[ArrayLike, ""],
        t1: Real[ArrayLike, ""],
        y0: PyTree[Any],
        args: PyTree[Any],
    ) -> PyTree[Array]:
        return terms.vf(t0, y0, args)

    def _local(self, y0, theta, v):
        return gs.map_nodes(lambda n, th, vi: gs.local_field(n, th, vi, self.coordinates, self.side), y0, theta, v)

    def _retract(self, y0, theta):
        return gs.map_nodes(lambda n, th: gs.retract(n, th, self.coordinates, self.side), y0, theta)

    def step(
        self,
        terms: diffrax.AbstractTerm,
        t0: Real[ArrayLike, ""],
        t1: Real[ArrayLike, ""],
        y0: PyTree[Any],
        args: PyTree[Any],
        solver_state: PyTree[Array],
        made_jump: Bool[ArrayLike, ""],
    ) -> tuple[PyTree[Any], PyTree[Any] | None, dict[str, Any], PyTree[Array], RESULTS]:
        tab, f = self.tableau, terms.vf
        h = t1 - t0
        if isinstance(made_jump, bool) and not made_jump:
            v0 = solver_state
        else:
            v0 = jax.lax.cond(made_jump, lambda: f(t0, y0, args), lambda: solver_state)
        ks = [v0]  # K_1 = dψ⁻¹_0 V_1 = V_1 exactly: the first stage is never evaluated at Θ = 0
        for i in range(1, tab.stages):
            theta_i = _combine(h, tab.a[i], ks)
            y_i = self._retract(y0, theta_i)
            v_i = f(t0 + tab.c[i] * h, y_i, args)
            ks.append(self._local(y0, theta_i, v_i))
        if tab.fsal:  # last stage is at Θ_s = Θ: it already holds V(t_{n+1}, y_{n+1}) and its local slope
            theta, y1, v1, k1 = theta_i, y_i, v_i, ks[-1]
        else:
            theta = _combine(h, tab.b, ks)
            y1 = self._retract(y0, theta)
            v1 = f(t1, y1, args)
            k1 = self._local(y0, theta, v1)
        if tab.b_error is None:
            y_error = None
        else:
            diff = [b - be for b, be in zip(tab.b, tab.b_error)]
            y_error = gs.map_nodes(gs.algebra_matrix, y0, _combine(h, diff, ks))
        scale = lambda tree: jtu.tree_map(lambda x: h * x, tree)
        dense_info = dict(y0=y0, theta=theta, m0=scale(v0), m1=scale(k1))
        return y1, y_error, dense_info, v1, RESULTS.successful

    def func(
        self, terms: diffrax.AbstractTerm, t0: Real[ArrayLike, ""], y0: PyTree[Any], args: PyTree[Any]
    ) -> PyTree[Any]:
        v = terms.vf(t0, y0, args)
        return gs.map_nodes(lambda n, vi: gs.ambient_derivative(n, vi, self.side), y0, v)


def _preset(tableau: ButcherTableau, name: str, doc: str):
    def __init__(self, coordinates: gs.Coordinates = "exp", side: gs.Side = "spatial"):
        self.tableau = tableau
        self.coordinates = coordinates
        self.side = side

    __init__.__doc__ = "Args: coordinates ('exp' | 'cayley'), side ('spatial' | 'body'); see :class:`RKMK`."
    return type(name, (RKMK,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


LieEuler = _preset(
    EULER, "LieEuler", "Lie–Euler: ``C_{n+1} = ψ(h V(t_n, C_n)) C_n`` (spatial) / ``C_n ψ(h V)`` (body). Order 1."
)
RKMKHeun = _preset(HEUN, "RKMKHeun", "RKMK with Heun's tableau (explicit trapezoidal rule). Order 2.")
RKMK4 = _preset(RK4, "RKMK4", "RKMK with the classical 4-stage Runge–Kutta tableau. Order 4 (seed 001 digest §8.2a).")
RKMKBosh3 = _preset(
    BOSH3,
    "RKMKBosh3",
    "RKMK with the Bogacki–Shampine 3(2) pair (FSAL, 3 new evaluations per step). Order 3, adaptive.",
)
RKMKDopri5 = _preset(
    DOPRI5,
    "RKMKDopri5",
    "RKMK with the Dormand–Prince 5(4) pair (FSAL, 6 new evaluations per step). Order 5, adaptive.",
)
