"""Statics of the SE(3) strain-field rod by energy minimisation: Newton's method with the exact energy Hessian.

The rod of :mod:`jaxse3.rod.strain_field` (seed 000 §2.3.2; the paper points to, but does not build, this use of its
exact Hessians, §7.2) is clamped at τ = 0 (its :class:`~jaxse3.rod.strain_field.ChebyshevField` has ``X(0) = 0``) and
loaded by conservative loads (:class:`RodLoads`). The equilibrium minimises the total potential

    ``Π(c) = E(c) − ∫₀¹ f·r(τ) dτ − F·r(1) − Mᵀ x(1)``,    ``r = dexp_x y`` (seed 000 eq. (4)),

over the field coefficients c. :class:`NewtonMinimiser` runs Newton's method with the Hessian of Π given by
``jax.hessian`` — through the custom_jvp rules of :func:`~jaxse3.rod.strain_field.energy_density` (seed 000 eqs. (15),
(16)) and of :mod:`jaxse3.so3` (``dexp_apply``), i.e. the closed forms — solved with lineax (LU), globalised by a
backtracking (Armijo) line search; where the Hessian is indefinite and the Newton direction is not a descent
direction, the step uses the eigenvalue-modified Hessian ``Q|Λ|Qᵀ``. The gradient norm of every iterate is returned,
which shows the quadratic convergence. The solve returns the package's one
:class:`~jaxse3.integrate.newton.NewtonResult`; failures (iteration limit, line search, non-finite values) are
reported in its ``result`` (:class:`~jaxse3.integrate.newton.NewtonResults`) and, with ``throw=True``, raised as
runtime errors.

The tip moment M is applied with the potential ``−Mᵀx(1)`` (a conservative load; its generalised force is M on the
tip rotation vector x(1)). For planar bending (x(1) ∥ M) it equals the spatial tip moment M; in general it is the
spatial moment ``dexp_{x(1)}⁻ᵀ M`` — a fixed spatial moment is not conservative for finite 3D rotations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
from jaxtyping import Array, ArrayLike, Float, PyTree

from jaxse3 import so3
from jaxse3.integrate.newton import NewtonResult, NewtonResults
from jaxse3.lie.shapes import as_float
from jaxse3.rod.strain_field import StrainFieldRod, energy

__all__ = ["RodLoads", "potential", "NewtonMinimiser", "solve_statics"]


class RodLoads(eqx.Module):
    """Conservative loads, in the units of the rod's length and stiffness.

    Attributes:
        tip_force: F, ``(3,)``, spatial dead load at τ = 1.
        tip_moment: M, ``(3,)``, potential ``−Mᵀx(1)`` (module docstring).
        distributed_force: f, ``(3,)``, dead load per unit τ (gravity: ``ρ A L g``).
    """

    tip_force: Array
    tip_moment: Array
    distributed_force: Array

    def __init__(
        self,
        tip_force: Float[ArrayLike, "3"] = (0.0, 0.0, 0.0),
        tip_moment: Float[ArrayLike, "3"] = (0.0, 0.0, 0.0),
        distributed_force: Float[ArrayLike, "3"] = (0.0, 0.0, 0.0),
    ):
        arrs = as_float(tip_force, tip_moment, distributed_force)
        for name, a in zip(("tip_force", "tip_moment", "distributed_force"), arrs):
            if a.shape != (3,):
                raise ValueError(f"RodLoads: argument '{name}' must have shape (3,), got {a.shape}")
        self.tip_force, self.tip_moment, self.distributed_force = arrs


def potential(
    rod: StrainFieldRod,
    loads: RodLoads,
    coeffs: Float[ArrayLike, "n_basis 6"],
    elastic: Callable[[StrainFieldRod, Float[Array, "n_basis 6"]], Float[Array, ""]] = energy,
) -> Float[Array, ""]:
    """Total potential ``Π(c) = E(c) − Σ_q w_q f·r(τ_q) − F·r(1) − Mᵀx(1)``.

    ``elastic(rod, coeffs)`` is the elastic energy (default :func:`~jaxse3.rod.strain_field.energy`, with closed-form
    derivatives); the benchmark passes a plain implementation to compare with autodiff Hessians.
    """
    c = jnp.asarray(coeffs)
    Xq = rod.basis0 @ c
    Xtip = rod.field(c, jnp.ones((), c.dtype))
    r_q = so3.dexp_apply(Xq[:, :3], Xq[:, 3:])
    r_tip = so3.dexp_apply(Xtip[:3], Xtip[3:])
    work = jnp.dot(rod.weights, r_q @ loads.distributed_force) + jnp.dot(loads.tip_force, r_tip)
    return elastic(rod, c) - work - jnp.dot(loads.tip_moment, Xtip[:3])


class NewtonMinimiser(eqx.Module):
    """Newton's method for ``min_y fn(y, args)`` with the Hessian ``jax.hessian(fn)`` and an Armijo line search.

    Stops when ``‖∇fn‖₂ ≤ atol + rtol·‖∇fn(y₀)‖₂``. A step is accepted when the Armijo condition holds, or — at the
    round-off level of fn near convergence, where energy decreases are invisible — when fn does not increase by more
    than ``64 eps |fn|`` and the gradient norm decreases.

    Returns a :class:`~jaxse3.integrate.newton.NewtonResult` whose ``stats`` hold, for iterates 0, 1, …
    (``max_steps + 1`` entries, NaN after the last): ``"residuals"`` (gradient 2-norms ‖∇fn‖), ``"energies"`` (fn)
    and ``"step_sizes"`` (the line-search step that produced the iterate; entry 0 is NaN).
    """

    rtol: float = 1e-12
    atol: float = 1e-12
    max_steps: int = eqx.field(static=True, default=50)
    max_backtracks: int = eqx.field(static=True, default=40)
    armijo: float = 1e-4

    def __call__(
        self,
        fn: Callable[[Float[Array, "..."], PyTree[Any]], Float[Array, ""]],
        y0: Float[ArrayLike, "..."],
        args: PyTree[Any] = None,
        throw: bool = True,
    ) -> NewtonResult:
        """Minimise ``fn(y, args)`` from ``y0`` (an array of any shape)."""
        y0 = jnp.asarray(y0)
        shape = y0.shape
        f = lambda v: fn(v.reshape(shape), args)
        vg = jax.value_and_grad(f)
        hess = jax.hessian(f)
        dtype = y0.dtype
        eps = jnp.finfo(dtype).eps
        nan = jnp.full((self.max_steps + 1,), jnp.nan, dtype)

        v0 = y0.reshape(-1)
        f0, g0 = vg(v0)
        r0 = jnp.linalg.norm(g0)
        tol = self.atol + self.rtol * r0

        def direction(v, g):
            H = hess(v)
            sol = lx.linear_solve(lx.MatrixLinearOperator(H, lx.symmetric_tag), -g, lx.LU(), throw=False)
            d = sol.value
            ok = (sol.result == lx.RESULTS.successful) & jnp.all(jnp.isfinite(d)) & (jnp.dot(g, d) < 0)

            def modified(_):  # eigenvalue-modified Newton: |λ| keeps the curvature scale, gives descent
                lam, Q = jnp.linalg.eigh(H)
                lam = jnp.maximum(jnp.abs(lam), 1e-8 * jnp.max(jnp.abs(lam)))
                return -Q @ ((Q.T @ g) / lam)

            return jax.lax.cond(ok, lambda _: d, modified, None), jnp.all(jnp.isfinite(H))

        def search(v, fv, g, d):
            gd, rg = jnp.dot(g, d), jnp.linalg.norm(g)

            def accept(alpha, fn_, gn):
                armijo = fn_ <= fv + self.armijo * alpha * gd
                flat = (fn_ <= fv + 64 * eps * jnp.abs(fv)) & (jnp.linalg.norm(gn) < rg)
                return jnp.isfinite(fn_) & (armijo | flat)

            def cond(s):
                k, alpha, fn_, gn = s
                return (k < self.max_backtracks) & ~accept(alpha, fn_, gn)

            def body(s):
                k, alpha, _, _ = s
                alpha = 0.5 * alpha
                fn_, gn = vg(v + alpha * d)
                return k + 1, alpha, fn_, gn

            fn1, g1 = vg(v + d)
            _k, alpha, fn_, gn = jax.lax.while_loop(cond, body, (0, jnp.ones((), dtype), fn1, g1))
            return alpha, fn_, gn, accept(alpha, fn_, gn)

        def cond(s):
            return s["result"] < 0

        def body(s):
            d, finite_h = direction(s["v"], s["g"])
            alpha, fn_, gn, ok = search(s["v"], s["f"], s["g"], d)
            k = s["k"] + 1
            v = jnp.where(ok, s["v"] + alpha * d, s["v"])
            rn = jnp.linalg.norm(gn)
            result = jnp.where(
                ~finite_h | ~jnp.all(jnp.isfinite(d)),
                3,
                jnp.where(~ok, 2, jnp.where(rn <= tol, 0, jnp.where(k >= self.max_steps, 1, -1))),
            )
            return dict(
                v=v,
                f=jnp.where(ok, fn_, s["f"]),
                g=jnp.where(ok, gn, s["g"]),
                k=k,
                result=result,
                res=s["res"].at[k].set(jnp.where(ok, rn, jnp.nan)),
                en=s["en"].at[k].set(jnp.where(ok, fn_, jnp.nan)),
                steps=s["steps"].at[k].set(alpha),
            )

        start = jnp.where(~jnp.isfinite(f0) | ~jnp.all(jnp.isfinite(g0)), 3, jnp.where(r0 <= tol, 0, -1))
        if self.max_steps == 0:
            start = jnp.where(start < 0, 1, start)
        s = dict(v=v0, f=f0, g=g0, k=jnp.array(0), result=start, res=nan.at[0].set(r0), en=nan.at[0].set(f0), steps=nan)
        s = jax.lax.while_loop(cond, body, s)
        value = s["v"].reshape(shape)
        code = s["result"]  # 0 successful, 1 steps exhausted, 2 line search failed, 3 non-finite
        result = NewtonResults.where(
            code == 0,
            NewtonResults.successful,
            NewtonResults.where(
                code == 1,
                NewtonResults.nonlinear_max_steps_reached,
                NewtonResults.where(code == 2, NewtonResults.line_search_failed, NewtonResults.nonfinite),
            ),
        )
        if throw:
            value = result.error_if(value, code > 0)
        stats = {"residuals": s["res"], "energies": s["en"], "step_sizes": s["steps"]}
        return NewtonResult(value, result, s["k"], stats)


def solve_statics(
    rod: StrainFieldRod,
    loads: RodLoads,
    coeffs0: Float[ArrayLike, "n_basis 6"] | None = None,
    solver: NewtonMinimiser = NewtonMinimiser(),
    throw: bool = True,
    elastic: Callable[[StrainFieldRod, Float[Array, "n_basis 6"]], Float[Array, ""]] = energy,
) -> NewtonResult:
    """Static equilibrium of the clamped strain-field rod under ``loads``: ``argmin_c Π(c)`` by Newton's method with
    the exact (closed-form) Hessian.

    Args:
        rod: the rod (its field should be clamped, ``X(0) = 0``).
        loads: :class:`RodLoads`.
        coeffs0: initial field coefficients ``(n_basis, 6)``; default the straight reference configuration.
        solver: a :class:`NewtonMinimiser` (tolerances, step limits).
        throw: raise a runtime error (surviving ``jit``) if the solver fails; otherwise inspect ``result``.
        elastic: elastic energy function (default the closed-form one).
    Returns:
        a :class:`~jaxse3.integrate.newton.NewtonResult` with ``value`` the equilibrium coefficients and the
        gradient norms, energies and step sizes of the iterates in ``stats``.
    """
    if not rod.field.clamped:
        raise ValueError("solve_statics: argument 'rod' must have a clamped field (ChebyshevField(clamped=True))")
    c0 = rod.straight() if coeffs0 is None else jnp.asarray(coeffs0)
    if c0.shape != (rod.n_coeffs, 6):
        raise ValueError(f"solve_statics: argument 'coeffs0' must have shape ({rod.n_coeffs}, 6), got {c0.shape}")
    return solver(lambda c, a: potential(a[0], a[1], c, elastic), c0, (rod, loads), throw=throw)
