"""Newmark-β for second-order systems given as a residual, as a diffrax solver.

Seed 003 (Mathew et al., GVS rods), §3.2, eqs. (10)–(12). The model is an implicit second-order ODE in vector
coordinates ``q ∈ Rⁿ``:

    r(t, q, q̇, q̈, args) = 0          e.g.  r = ID(q, q̇, q̈) − τ(t, q, q̇)   (inverse dynamics minus applied forces).

Step n → n+1 with h = t_{n+1} − t_n (the standard Newmark update, which eq. (10) writes solved for q̇, q̈):

    q_{n+1} = q_n + h q̇_n + h²(½ − β) q̈_n + h²β q̈_{n+1},      q̇_{n+1} = q̇_n + h(1 − γ) q̈_n + hγ q̈_{n+1},

and Newton on q̈_{n+1} (guess q̈_n) for ``r(t_{n+1}, q_{n+1}, q̇_{n+1}, q̈_{n+1}) = 0`` with the Jacobian (eq. (12),
divided by 1/(βh²) because the unknown is q̈ instead of q):

    J = ∂r/∂q̈ + γh ∂r/∂q̇ + βh² ∂r/∂q.

The partial Jacobians come from the term's ``jacobian`` function when given (e.g. analytical ID derivatives), otherwise
from ``jax.jacfwd`` of r (which runs the custom_jvp rules of whatever r calls). β = ¼, γ = ½ (the default) is the
trapezoidal rule: second order, no numerical damping, energy-conserving for linear undamped systems.

**Generalised-α** (Chung & Hulbert 1993, in the form of Arnold & Brüls 2007: the equations hold at t_{n+1}) is the
same step with pseudo-accelerations a_n in the update (a = q̈ for Newmark-β):

    (1 − α_m) a_{n+1} + α_m a_n = (1 − α_f) q̈_{n+1} + α_f q̈_n,   a_0 = q̈_0,
    q_{n+1} = q_n + h q̇_n + h²(½ − β) a_n + h²β a_{n+1},      q̇_{n+1} = q̇_n + h(1 − γ) a_n + hγ a_{n+1},

so the unknown stays q̈_{n+1} and J has β' = β(1 − α_f)/(1 − α_m), γ' = γ(1 − α_f)/(1 − α_m) in place of β, γ.
``Newmark.generalized_alpha(rho_inf)`` takes (α_m, α_f, γ, β) from the spectral radius at infinity
(:func:`chung_hulbert`): second order, with the high frequencies (stiff modes, and the (−1)ⁿ oscillation that the
trapezoidal rule leaves in the accelerations and multipliers of an index-3 system) damped to ρ∞ per step.

Newton convergence: ``β'h² ‖r‖_∞ ≤ tol`` (β' = β for Newmark-β; r converted to ``∂r/∂q̈ × displacement`` units, e.g.
mass × length for mechanics), checked before each update. ``iteration="newton"`` (default) evaluates J at every
iterate; ``iteration="modified"`` keeps the inverse of J in the solver state across steps and re-evaluates J only
when an update reduces the residual by less than the factor ``rate``
(:func:`~jaxse3.integrate.newton.modified_newton`): for a mass-dominated J (small h, e.g. a soft rod), most steps cost
a few residuals and no Jacobian. Iterations and Jacobian evaluations are counted in the solver state
(:func:`jaxse3.integrate.newton_statistics` reads them); a step that does not converge within ``max_iters`` returns
``RESULTS.nonlinear_max_steps_reached`` and ``diffeqsolve`` raises (or reports it with ``throw=False``). The initial
acceleration q̈_0 solves ``r(t_0, q_0, q̇_0, q̈_0) = 0`` by a chord iteration with ∂r/∂q̈ at q̈ = 0 (one update for the
residuals of mechanics, linear in q̈), whose partials also give the first iteration matrix of ``iteration="modified"``
(when it does not converge, q̈_0 is NaN and the first step fails with a result code, so that ``throw=False`` reports
the failure instead of raising).

**Block systems.** ``q`` may also be a stack ``(B, n)`` of B independent systems on one time grid (e.g. a batch of
rods): the residual maps ``(B, n)`` arrays to ``(B, n)``, the term's ``jacobian`` (required then) returns blocks
``(B, n, n)``, and one convergence test covers the whole stack. Unlike a ``vmap`` over solves, the Newton loop and the
Jacobian-refresh decision stay scalar, so ``iteration="modified"`` saves its Jacobians for the whole batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from diffrax import RESULTS, AbstractSolver, AbstractTerm, LocalLinearInterpolation
from jaxtyping import Array, ArrayLike, Bool, Float, PyTree, Real

from jaxse3.integrate.newton import Inverse, NewtonResult, invert, modified_newton, newton, round_off_floor, unwrap_term
from jaxse3.lie.tangents import dense, jvp_moving

__all__ = [
    "SecondOrderResidualTerm",
    "Newmark",
    "NewmarkState",
    "ConstrainedResidualTerm",
    "ConstrainedNewmark",
    "chung_hulbert",
]


def chung_hulbert(rho_inf: float | jax.Array) -> tuple[Any, Any, Any, Any]:
    """(α_m, α_f, γ, β) of generalised-α from the spectral radius at infinite frequency ρ∞ ∈ [0, 1] (Chung & Hulbert
    1993): α_m = (2ρ∞ − 1)/(ρ∞ + 1), α_f = ρ∞/(ρ∞ + 1), γ = ½ + α_f − α_m, β = ¼(γ + ½)² — second order, the high
    frequencies damped to ρ∞ per step and the low ones least (ρ∞ = 1: α_m = α_f = ½, no damping)."""
    if isinstance(rho_inf, (int, float)) and not 0.0 <= rho_inf <= 1.0:
        raise ValueError(f"generalised-α: 'rho_inf' must lie in [0, 1], got {rho_inf}")
    alpha_m = (2.0 * rho_inf - 1.0) / (rho_inf + 1.0)
    alpha_f = rho_inf / (rho_inf + 1.0)
    gamma = 0.5 + alpha_f - alpha_m
    return alpha_m, alpha_f, gamma, 0.25 * (gamma + 0.5) ** 2


def _check_vector(y0, jacobian):
    q0, qd0 = y0
    if jnp.ndim(q0) not in (1, 2) or jnp.shape(q0) != jnp.shape(qd0):
        raise ValueError(
            f"Newmark: y0 must be (q, qd), two vectors of the same shape (n,) (or stacks (B, n) of "
            f"independent systems), got {jnp.shape(q0)} and {jnp.shape(qd0)}"
        )
    if jnp.ndim(q0) == 2 and jacobian is None:
        raise ValueError("Newmark: a stack y0 of shape (B, n) needs the term's jacobian, returning (B, n, n) blocks")


def _matvec(A: Float[Array, "*b n n"], v: Float[Array, "*b n"]) -> Float[Array, "*b n"]:
    return jnp.einsum("...ij,...j->...i", A, v)


def _jvp_in_time_and_args(term, t, q, qd, qdd, args, dt, dargs) -> Float[Array, "*b n"]:
    """∂r/∂(t, args) · (dt, dargs) at fixed (q, q̇, q̈), along only the time and the arrays of ``args`` that move (the
    tangents may be None or symbolic zeros)."""
    dyn, static = eqx.partition(args, eqx.is_inexact_array)
    dr = jvp_moving(lambda t_, a: term.residual(t_, q, qd, qdd, eqx.combine(a, static)), (t, dyn), (dt, dargs))
    return jnp.zeros_like(q) if dr is None else dr


@eqx.filter_jit
def _partials(residual, jacobian, t, q, qd, qdd, args):
    """:meth:`SecondOrderResidualTerm.partials`."""
    if jacobian is not None:
        return (residual(t, q, qd, qdd, args), *jacobian(t, q, qd, qdd, args))
    twice = lambda *a: (residual(*a),) * 2  # r as the JVP's primal: one evaluation of r, not two
    jacobians, r = jax.jacfwd(twice, argnums=(1, 2, 3), has_aux=True)(t, q, qd, qdd, args)
    return (r, *jacobians)


@eqx.filter_jit
def _acceleration_matrix(residual, jacobian, t, q, qd, qdd, args):
    """∂r/∂q̈ alone (:meth:`SecondOrderResidualTerm.solve_acceleration`): through the derivative rules of the
    model, one direction per acceleration and none in q or q̇, a small part of the program of :func:`_partials`."""
    if jacobian is not None:
        return jacobian(t, q, qd, qdd, args)[2]
    return jax.jacfwd(residual, argnums=3)(t, q, qd, qdd, args)


class SecondOrderResidualTerm(AbstractTerm):
    """The implicit second-order system ``r(t, q, q̇, q̈, args) = 0`` with ``q`` a vector ``(n,)``.

    Attributes:
        residual: ``residual(t, q, qd, qdd, args) -> (n,)``.
        jacobian: optional ``jacobian(t, q, qd, qdd, args) -> (∂r/∂q, ∂r/∂q̇, ∂r/∂q̈)``, each ``(n, n)`` (blocks
            ``(B, n, n)`` for a stack ``q`` ``(B, n)``); when None, ``jax.jacfwd`` of ``residual`` (vectors only).

    As a diffrax term, ``vf(t, (q, q̇), args)`` returns ``(q̇, q̈)`` with q̈ solving r = 0 (Newton from q̈ = 0).
    """

    residual: Callable[..., jax.Array]
    jacobian: Callable[..., tuple[jax.Array, jax.Array, jax.Array]] | None = None

    def partials(
        self,
        t: Real[ArrayLike, ""],
        q: Float[Array, "*b n"],
        qd: Float[Array, "*b n"],
        qdd: Float[Array, "*b n"],
        args: PyTree[Any],
    ) -> tuple[Float[Array, "*b n"], Float[Array, "*b n n"], Float[Array, "*b n n"], Float[Array, "*b n n"]]:
        """``(r, ∂r/∂q, ∂r/∂q̇, ∂r/∂q̈)`` at one point (a jitted function of the term's functions: diffrax traces a
        step three times, and one trace of the Jacobians serves them all)."""
        return _partials(self.residual, self.jacobian, t, q, qd, qdd, args)

    def solve_acceleration(
        self,
        t: Real[ArrayLike, ""],
        q: Float[Array, "*b n"],
        qd: Float[Array, "*b n"],
        args: PyTree[Any],
        tol: float,
        max_iters: int,
        scale: Float[ArrayLike, ""] = 1.0,
    ) -> NewtonResult:
        """q̈ with ``r(t, q, q̇, q̈) = 0`` (test ``scale ‖r‖_∞ ≤ tol``) by a chord iteration from q̈ = 0 with the
        inverse of ∂r/∂q̈ there (exact for the residuals of mechanics, linear in q̈: one update; the inverse is in
        ``stats["inverse"]``). Without a ``jacobian`` only ∂r/∂q̈ is evaluated, not ∂r/∂q and ∂r/∂q̇ (with one, its
        ∂r/∂q̈ block is used); the whole Jacobian only when the result is differentiated."""
        _check_vector((q, qd), self.jacobian)
        zero = jnp.zeros_like(qd)
        dyn, static = eqx.partition((t, q, qd, args), eqx.is_inexact_array)
        t_, q_, qd_, args_ = eqx.combine(jax.lax.stop_gradient(dyn), static)

        def residual(x, p):  # closes over nothing traced: the root's derivative rule runs outside this trace
            term, t_, q_, qd_, args_, scale_ = p
            return scale_ * term.residual(t_, q_, qd_, x, args_)

        def matrix(x, p):
            term, t_, q_, qd_, args_, scale_ = p
            return scale_ * term.partials(t_, q_, qd_, x, args_)[3]

        def linearised(x, p, dp):
            """(∂R/∂q̈, ∂R/∂p · dp) from one evaluation of the partials at the root (a JVP of r in t and args only)."""
            term, t_, q_, qd_, args_, scale_ = p
            _, dt_, dq_, dqd_, dargs, _ = dp  # the scale's tangent multiplies r = 0 (the root)
            _, A_q, A_qd, A_qdd = term.partials(t_, q_, qd_, x, args_)
            dr = _jvp_in_time_and_args(term, t_, q_, qd_, x, args_, dt_, dargs)
            dr = dr + _matvec(A_q, dense(q_, dq_)) + _matvec(A_qd, dense(qd_, dqd_))
            return scale_ * A_qdd, scale_ * dr

        A_qdd = _acceleration_matrix(self.residual, self.jacobian, t_, q_, qd_, zero, args_)
        first = invert(jax.lax.stop_gradient(scale) * A_qdd)
        params = (self, t, q, qd, args, scale)
        return modified_newton(residual, matrix, zero, params, first, tol, max_iters, None, linearised)

    def vf(
        self, t: Real[ArrayLike, ""], y: tuple[Float[Array, "*b n"], Float[Array, "*b n"]], args: PyTree[Any]
    ) -> tuple[Float[Array, "*b n"], Float[Array, "*b n"]]:
        q, qd = y
        sol = self.solve_acceleration(t, q, qd, args, 1e-12, 20)
        return qd, eqx.error_if(sol.value, ~sol.converged, "SecondOrderResidualTerm.vf: Newton did not converge")

    def contr(self, t0: Real[ArrayLike, ""], t1: Real[ArrayLike, ""], **kwargs: Any) -> Real[ArrayLike, ""]:
        return t1 - t0

    def prod(self, vf: PyTree[Array], control: Real[ArrayLike, ""]) -> PyTree[Array]:
        return jax.tree_util.tree_map(lambda x: x * control, vf)


class NewmarkState(eqx.Module):
    """Solver state carried between steps."""

    acceleration: jax.Array  # q̈_n (and, for ConstrainedNewmark, λ_n after it)
    pseudo_acceleration: jax.Array  # a_n of generalised-α (= q̈_n for Newmark-β, α_m = α_f = 0)
    newton_iterations: jax.Array  # total Newton updates since t0 (int32)
    max_newton_iterations: jax.Array  # largest number of updates in one step (int32)
    jacobian_evaluations: jax.Array  # iteration matrices evaluated since t0 (int32)
    inverse: Inverse | None  # iteration="modified": the inverse of the matrix in use


class Newmark(AbstractSolver):
    """Newmark-β (seed 003 eqs. (10)–(12)), fixed step, implicit; order 2 for γ = ½ (order 1 otherwise).

    Use with :class:`SecondOrderResidualTerm`, ``y0 = (q0, qd0)`` (vectors) and a fixed ``dt0``. Dense output is
    linear between steps.

    Attributes:
        beta, gamma: Newmark parameters (default ¼, ½: trapezoidal, unconditionally stable, no damping).
        tol: Newton tolerance on ``βh² ‖r‖_∞``.
        max_iters: Newton updates allowed per step before the step is reported as failed.
        iteration: ``"newton"`` (J at every iterate) or ``"modified"`` (J kept across steps, refreshed when an update
            reduces the residual by less than ``rate``).
        rate: the refresh threshold of ``"modified"`` (0.3: the cheapest of 0.1, 0.3, 0.5 for the CDM rod, whose
            Jacobian costs ≈ 10 residuals; a linear extrapolation of q̈ as the Newton guess did not pay either).
    """

    term_structure: ClassVar = SecondOrderResidualTerm
    interpolation_cls: ClassVar[Callable[..., LocalLinearInterpolation]] = LocalLinearInterpolation

    beta: float | jax.Array = 0.25
    gamma: float | jax.Array = 0.5
    alpha_m: float | jax.Array = 0.0
    alpha_f: float | jax.Array = 0.0
    tol: float = 1e-10
    max_iters: int = eqx.field(static=True, default=20)
    iteration: str = eqx.field(static=True, default="newton")
    rate: float = 0.3

    def __check_init__(self):
        if self.iteration not in ("newton", "modified"):
            raise ValueError(f"Newmark: iteration must be 'newton' or 'modified', got {self.iteration!r}")
        if isinstance(self.alpha_m, (int, float)) and not self.alpha_m < 1.0:
            raise ValueError(f"Newmark: alpha_m must be below 1, got {self.alpha_m}")

    @classmethod
    def generalized_alpha(cls, rho_inf: float = 0.9, **options: Any) -> Newmark:
        """Generalised-α (Chung & Hulbert 1993) with the parameters of :func:`chung_hulbert` from the spectral radius
        at infinite frequency ``rho_inf`` ∈ [0, 1]: second order, with numerical damping of the high frequencies
        (ρ∞ = 1: none; 0: asymptotic annihilation). The equations hold at t_{n+1} (the form of Arnold & Brüls 2007,
        which stays second order on index-3 systems, :class:`ConstrainedNewmark`). Other options as the class's
        attributes."""
        return cls(**dict(zip(("alpha_m", "alpha_f", "gamma", "beta"), chung_hulbert(rho_inf))), **options)

    @property
    def _weights(self) -> tuple[Any, Any]:
        """(β', γ') = (β, γ)(1 − α_f)/(1 − α_m): the derivatives of (q_{n+1}, q̇_{n+1}) in q̈_{n+1}, in units of h²
        and h (β, γ for Newmark-β)."""
        c = (1.0 - self.alpha_f) / (1.0 - self.alpha_m)
        return self.beta * c, self.gamma * c

    def order(self, terms: PyTree[AbstractTerm]) -> int:
        return 2

    def init(
        self,
        terms: PyTree[AbstractTerm],
        t0: Real[ArrayLike, ""],
        t1: Real[ArrayLike, ""],
        y0: tuple[Float[Array, "*b n"], Float[Array, "*b n"]],
        args: PyTree[Any],
    ) -> NewmarkState:
        term = unwrap_term(terms, self.term_structure)
        q0, qd0 = y0
        h = t1 - t0
        scale = self._weights[0] * h * h
        sol = term.solve_acceleration(t0, q0, qd0, args, self.tol, self.max_iters, scale)
        x0 = jnp.where(sol.converged, sol.value, jnp.nan)  # a failed start fails the first step (a result code)
        a0 = x0[..., : q0.shape[-1]]  # a_0 = q̈_0
        zero = jnp.asarray(0, jnp.int32)
        if self.iteration == "newton":
            return NewmarkState(x0, a0, zero, zero, zero, None)
        # no iteration matrix of the steps here: the start's inverse (of β'h² ∂r/∂q̈ alone) stands in until the
        # first step evaluates its matrix at its first iterate (jacobian_evaluations = 0 asks for it), so that the
        # program of the start holds ∂r/∂q̈ alone and the Jacobians of eq. (12) live in the steps' program only
        return NewmarkState(x0, a0, zero, zero, zero, sol.stats["inverse"])

    def pseudo_acceleration(
        self, a0: Float[Array, "*b n"], qdd0: Float[Array, "*b n"], qdd1: Float[Array, "*b n"]
    ) -> Float[Array, "*b n"]:
        """a_{n+1} from (1 − α_m) a_{n+1} + α_m a_n = (1 − α_f) q̈_{n+1} + α_f q̈_n (q̈_{n+1} for Newmark-β)."""
        return (self.alpha_f * qdd0 - self.alpha_m * a0 + (1.0 - self.alpha_f) * qdd1) / (1.0 - self.alpha_m)

    def predict(
        self,
        h: Real[ArrayLike, ""],
        y0: tuple[Float[Array, "*b n"], Float[Array, "*b n"]],
        a0: Float[Array, "*b n"],
        qdd0: Float[Array, "*b n"],
        qdd1: Float[Array, "*b n"],
    ) -> tuple[Float[Array, "*b n"], Float[Array, "*b n"]]:
        """(q_{n+1}, q̇_{n+1}) from the Newmark update with the pseudo-accelerations a_n, a_{n+1} (:meth:`pseudo_
        acceleration`; a = q̈ for Newmark-β) for a given q̈_{n+1}."""
        q0, qd0 = y0
        beta, gamma = self.beta, self.gamma
        a1 = self.pseudo_acceleration(a0, qdd0, qdd1)
        q1 = q0 + h * qd0 + h * h * (0.5 - beta) * a0 + h * h * beta * a1
        qd1 = qd0 + h * (1.0 - gamma) * a0 + h * gamma * a1
        return q1, qd1

    @staticmethod
    def _residual(x, p):
        """β'h² r(t_{n+1}, q_{n+1}(x), q̇_{n+1}(x), x) for the unknown x = q̈_{n+1}."""
        solver, term, t1, h, y0, qdd0, a0, args = p
        q, qd = solver.predict(h, y0, a0, qdd0, x)
        return solver._weights[0] * h * h * term.residual(t1, q, qd, x, args)

    @staticmethod
    def _system(x, p):
        """(β'h² r, β'h² J) with J of eq. (12) (divided by 1/(β'h²)); blocks for a stack."""
        solver, term, t1, h, y0, qdd0, a0, args = p
        q, qd = solver.predict(h, y0, a0, qdd0, x)
        r, dq, dqd, dqdd = term.partials(t1, q, qd, x, args)
        beta_w, gamma_w = solver._weights
        scale = beta_w * h * h
        return scale * r, scale * (dqdd + gamma_w * h * dqd + scale * dq)

    @staticmethod
    def _linearised(x, p, dp):
        """(β'h² J, the tangent of β'h² r along dp) from one evaluation of the partials at the root x: the tangents
        of the previous state (q_n, q̇_n, q̈_n, a_n) and of h enter through the Newmark update, whose derivatives are
        known, so only the arguments (inputs, model parameters) and t_{n+1} need a JVP of r, at fixed (q, q̇, q̈)."""
        solver, term, t1, h, y0, qdd0, a0, args = p
        _, _, dt1, dh, (dq0, dqd0), dqdd0, da0, dargs = dp
        pairs = ((h, dh), (y0[0], dq0), (y0[1], dqd0), (qdd0, dqdd0), (a0, da0))
        dh, dq0, dqd0, dqdd0, da0 = (dense(a, d) for a, d in pairs)
        beta, gamma = solver.beta, solver.gamma
        q, qd = solver.predict(h, y0, a0, qdd0, x)
        _, A_q, A_qd, A_qdd = term.partials(t1, q, qd, x, args)
        beta_w, gamma_w = solver._weights
        scale = beta_w * h * h
        S = scale * (A_qdd + gamma_w * h * A_qd + scale * A_q)
        # the update's tangents in (q_n, q̇_n, q̈_n, a_n, h) at fixed x = q̈_{n+1}
        a1 = solver.pseudo_acceleration(a0, qdd0, x)
        da1 = (solver.alpha_f * dqdd0 - solver.alpha_m * da0) / (1.0 - solver.alpha_m)
        qd0 = y0[1]
        dq = (
            dq0
            + h * dqd0
            + h * h * ((0.5 - beta) * da0 + beta * da1)
            + dh * (qd0 + 2 * h * ((0.5 - beta) * a0 + beta * a1))
        )
        dqd = dqd0 + h * ((1.0 - gamma) * da0 + gamma * da1) + dh * ((1.0 - gamma) * a0 + gamma * a1)
        dr = _matvec(A_q, dq) + _matvec(A_qd, dqd) + _jvp_in_time_and_args(term, t1, q, qd, x, args, dt1, dargs)
        return S, scale * dr  # the scale's own derivative multiplies r = 0 (the root)

    def step(
        self,
        terms: PyTree[AbstractTerm],
        t0: Real[ArrayLike, ""],
        t1: Real[ArrayLike, ""],
        y0: tuple[Float[Array, "*b n"], Float[Array, "*b n"]],
        args: PyTree[Any],
        solver_state: NewmarkState,
        made_jump: Bool[ArrayLike, ""],
    ) -> tuple[tuple[Float[Array, "*b n"], Float[Array, "*b n"]], None, dict[str, Any], NewmarkState, RESULTS]:
        del made_jump
        term = unwrap_term(terms, self.term_structure)
        h = t1 - t0
        x0 = solver_state.acceleration  # q̈_n (and, for ConstrainedNewmark, λ_n after it)
        n = y0[0].shape[-1]
        a0 = solver_state.pseudo_acceleration
        params = (self, term, t1, h, y0, x0[..., :n], a0, args)
        linearised = self._linearisation()
        if self.iteration == "newton":
            sol = newton(self._system, x0, params, self.tol, self.max_iters, linearised=linearised)
            inverse, jacobians = None, sol.num_steps + 1
        else:
            sol = modified_newton(
                self._residual,
                lambda x, p: self._system(x, p)[1],
                x0,
                params,
                solver_state.inverse,
                self.tol,
                self.max_iters,
                self.rate,
                linearised,
                refresh=solver_state.jacobian_evaluations == 0,  # the start's stand-in inverse (init)
            )
            inverse, jacobians = sol.stats["inverse"], sol.stats["refreshes"]
        qdd0, qdd1 = x0[..., :n], sol.value[..., :n]
        y1 = self.predict(h, y0, a0, qdd0, qdd1)
        state = NewmarkState(
            sol.value,
            self.pseudo_acceleration(a0, qdd0, qdd1),
            solver_state.newton_iterations + sol.num_steps,
            jnp.maximum(solver_state.max_newton_iterations, sol.num_steps),
            solver_state.jacobian_evaluations + jacobians,
            inverse,
        )
        result = RESULTS.where(sol.converged, RESULTS.successful, RESULTS.nonlinear_max_steps_reached)
        return y1, None, dict(y0=y0, y1=y1), state, result

    def func(
        self,
        terms: PyTree[AbstractTerm],
        t0: Real[ArrayLike, ""],
        y0: tuple[Float[Array, "*b n"], Float[Array, "*b n"]],
        args: PyTree[Any],
    ) -> tuple[Float[Array, "*b n"], Float[Array, "*b n"]]:
        return unwrap_term(terms, self.term_structure).vf(t0, y0, args)

    def _linearisation(self) -> Callable | None:
        """The ``linearised`` of the steps' implicit-function rule (:func:`~jaxse3.integrate.newton.newton`)."""
        return self._linearised


@eqx.filter_jit
def _constrained_acceleration_matrix(residual, constraint, jacobian, t, q, qd, qdd, lam, args):
    """``[[∂r/∂q̈, ∂r/∂λ], [∂e/∂q, 0]]`` alone (:meth:`ConstrainedResidualTerm.solve_acceleration`; as
    :func:`_acceleration_matrix`, without ∂r/∂q and ∂r/∂q̇)."""
    if jacobian is not None:
        _, _, r_qdd, r_lam, e_q = jacobian(t, q, qd, qdd, lam, args)
    else:
        r_qdd, r_lam = jax.jacfwd(lambda a, b: residual(t, q, qd, a, b, args), argnums=(0, 1))(qdd, lam)
        e_q = jax.jacfwd(lambda q_: constraint(t, q_, args))(q)
    return _bordered(r_qdd, r_lam, e_q)


@eqx.filter_jit
def _constrained_partials(residual, constraint, jacobian, t, q, qd, qdd, lam, args):
    """:meth:`ConstrainedResidualTerm.partials`."""
    if jacobian is not None:
        r, e = residual(t, q, qd, qdd, lam, args), constraint(t, q, args)
        return (r, e, *jacobian(t, q, qd, qdd, lam, args))
    twice = lambda *a: (residual(t, *a, args),) * 2  # r as the JVP's primal: one evaluation of r
    (r_q, r_qd, r_qdd, r_lam), r = jax.jacfwd(twice, argnums=(0, 1, 2, 3), has_aux=True)(q, qd, qdd, lam)
    e_q, e = jax.jacfwd(lambda q_: (constraint(t, q_, args),) * 2, has_aux=True)(q)
    return r, e, r_q, r_qd, r_qdd, r_lam, e_q


class ConstrainedResidualTerm(AbstractTerm):
    """The index-3 system ``r(t, q, q̇, q̈, λ, args) = 0``, ``e(t, q, args) = 0``: a second-order residual with m
    holonomic constraints e whose multipliers λ enter r (e.g. ``r = τ − ID(q, q̇, q̈) + A(q)ᵀλ``, seed 003 eq. (52a)).

    Attributes:
        residual: ``residual(t, q, qd, qdd, lam, args) -> (n,)``.
        constraint: ``constraint(t, q, args) -> (m,)``.
        jacobian: optional ``jacobian(t, q, qd, qdd, lam, args) -> (∂r/∂q, ∂r/∂q̇, ∂r/∂q̈, ∂r/∂λ, ∂e/∂q)``, shapes
            ``(n, n)`` three times, ``(n, m)``, ``(m, n)`` (blocks with a leading ``B`` for a stack ``q`` ``(B, n)``,
            ``λ`` ``(B, m)``); when None, ``jax.jacfwd`` of ``residual`` and ``constraint`` (vectors only).
        bias: optional ``bias(t, q, qd, args) -> ë − (∂e/∂q) q̈`` (m,) (:meth:`constraint_bias`) in closed form; when
            None, nested JVPs of ``constraint``.

    Integrated by :class:`ConstrainedNewmark`. As a diffrax term, ``vf(t, (q, q̇), args)`` returns ``(q̇, q̈)`` with
    ``(q̈, λ)`` solving r = 0 and ë = 0 (:meth:`solve_acceleration`).
    """

    residual: Callable[..., jax.Array]
    constraint: Callable[..., jax.Array]
    jacobian: Callable[..., tuple[jax.Array, ...]] | None = None
    bias: Callable[..., jax.Array] | None = None

    def partials(
        self,
        t: Real[ArrayLike, ""],
        q: Float[Array, "*b n"],
        qd: Float[Array, "*b n"],
        qdd: Float[Array, "*b n"],
        lam: Float[Array, "*b m"],
        args: PyTree[Any],
    ) -> tuple[Array, Array, Array, Array, Array, Array, Array]:
        """``(r, e, ∂r/∂q, ∂r/∂q̇, ∂r/∂q̈, ∂r/∂λ, ∂e/∂q)`` at one point (jitted as
        :meth:`SecondOrderResidualTerm.partials`)."""
        return _constrained_partials(self.residual, self.constraint, self.jacobian, t, q, qd, qdd, lam, args)

    def constraint_bias(
        self, t: Real[ArrayLike, ""], q: Float[Array, "*b n"], qd: Float[Array, "*b n"], args: PyTree[Any]
    ) -> Float[Array, "*b m"]:
        """``ë − (∂e/∂q) q̈``: the second derivative of ``s ↦ e(t + s, q + s q̇)`` at s = 0 (``bias``, or by nested
        JVPs of ``constraint``)."""
        if self.bias is not None:
            return self.bias(t, q, qd, args)
        one = jnp.ones_like(jnp.asarray(t, dtype=q.dtype))
        path = lambda s: self.constraint(t + s, q + s * qd, args)
        rate = lambda s: jax.jvp(path, (s,), (one,))[1]
        return jax.jvp(rate, (jnp.zeros_like(one),), (one,))[1]

    def solve_acceleration(
        self,
        t: Real[ArrayLike, ""],
        q: Float[Array, "*b n"],
        qd: Float[Array, "*b n"],
        args: PyTree[Any],
        tol: float,
        max_iters: int,
        scale: Float[ArrayLike, ""] = 1.0,
    ) -> NewtonResult:
        """``x = (q̈, λ)`` (concatenated, ``(*b, n + m)``) with ``r(t, q, q̇, q̈, λ) = 0`` and the constraints'
        second derivative ``ë = (∂e/∂q) q̈ + b = 0`` (b: :meth:`constraint_bias`), by a chord iteration from x = 0 with
        the inverse of ``[[∂r/∂q̈, ∂r/∂λ], [∂e/∂q, 0]]`` there (exact for a residual affine in (q̈, λ), as in
        mechanics: one update; the inverse is in ``stats["inverse"]``); test ``scale ‖(r, ë)‖_∞ ≤ tol``. Without a
        ``jacobian`` only those blocks are evaluated, not ∂r/∂q and ∂r/∂q̇ (with one, its blocks are used); the whole
        Jacobian only when the result is differentiated."""
        _check_vector((q, qd), self.jacobian)
        n, zero = q.shape[-1], jnp.zeros_like(qd)
        dyn, static = eqx.partition((t, q, qd, args), eqx.is_inexact_array)
        t_, q_, qd_, args_ = eqx.combine(jax.lax.stop_gradient(dyn), static)
        m = jax.eval_shape(lambda: self.constraint(t_, q_, args_)).shape[-1]
        lam0 = jnp.zeros((*q.shape[:-1], m), q.dtype)

        def residual(x, p):
            term, t_, q_, qd_, args_, scale_ = p
            r = term.residual(t_, q_, qd_, x[..., :n], x[..., n:], args_)
            e_qdd = jax.jvp(lambda q: term.constraint(t_, q, args_), (q_,), (x[..., :n],))[1]
            edd = e_qdd + term.constraint_bias(t_, q_, qd_, args_)
            return scale_ * jnp.concatenate([r, edd], axis=-1)

        def matrix(x, p):
            term, t_, q_, qd_, args_, scale_ = p
            _, _, _, _, r_qdd, r_lam, e_q = term.partials(t_, q_, qd_, x[..., :n], x[..., n:], args_)
            return scale_ * _bordered(r_qdd, r_lam, e_q)

        x0 = jnp.concatenate([zero, lam0], axis=-1)
        blocks = (self.residual, self.constraint, self.jacobian)
        first = invert(
            jax.lax.stop_gradient(scale) * _constrained_acceleration_matrix(*blocks, t_, q_, qd_, zero, lam0, args_)
        )
        return modified_newton(residual, matrix, x0, (self, t, q, qd, args, scale), first, tol, max_iters, None)

    def vf(
        self, t: Real[ArrayLike, ""], y: tuple[Float[Array, "*b n"], Float[Array, "*b n"]], args: PyTree[Any]
    ) -> tuple[Float[Array, "*b n"], Float[Array, "*b n"]]:
        q, qd = y
        sol = self.solve_acceleration(t, q, qd, args, 1e-12, 20)
        qdd = sol.value[..., : q.shape[-1]]
        return qd, eqx.error_if(qdd, ~sol.converged, "ConstrainedResidualTerm.vf: Newton did not converge")

    def contr(self, t0: Real[ArrayLike, ""], t1: Real[ArrayLike, ""], **kwargs: Any) -> Real[ArrayLike, ""]:
        return t1 - t0

    def prod(self, vf: PyTree[Array], control: Real[ArrayLike, ""]) -> PyTree[Array]:
        return jax.tree_util.tree_map(lambda x: x * control, vf)


def _bordered(top_left: Array, top_right: Array, bottom_left: Array) -> Array:
    """``[[top_left, top_right], [bottom_left, 0]]`` (blocks with leading batch axes)."""
    m = bottom_left.shape[-2]
    zero = jnp.zeros((*bottom_left.shape[:-1], m), bottom_left.dtype)
    top = jnp.concatenate([top_left, top_right], axis=-1)
    return jnp.concatenate([top, jnp.concatenate([bottom_left, zero], axis=-1)], axis=-2)


class ConstrainedNewmark(Newmark):
    """Newmark-β on an index-3 system (:class:`ConstrainedResidualTerm`; seed 003 eqs. (52a), (52b) with the
    chain factors of eq. (12), which the paper leaves out): per step, Newton on x = (q̈_{n+1}, λ_{n+1}) for

        R(x) = [βh² r(t_{n+1}, q_{n+1}, q̇_{n+1}, q̈_{n+1}, λ_{n+1});  e(t_{n+1}, q_{n+1})] = 0,
        ∂R/∂x = βh² [[∂r/∂q̈ + γh ∂r/∂q̇ + βh² ∂r/∂q,  ∂r/∂λ],  [∂e/∂q,  0]],

    with q_{n+1}, q̇_{n+1} from the Newmark update of :class:`Newmark`. The constraints hold at every step to the
    Newton tolerance (``‖e‖_∞ ≤ tol``, beside ``βh² ‖r‖_∞ ≤ tol``; in float32 ``‖e‖_∞ ≤ 100 ε``, its round-off's reach:
    :meth:`_constraint_weight`): no drift in e, whatever the step. Their rates are not imposed: A q̇ is O(h²) small,
    without drift. The common factor βh² keeps the matrix's condition independent
    of h (the classical scaling of index-3 Newmark). The state carries ``x = (q̈, λ)`` concatenated in
    ``NewmarkState.acceleration``; the start solves r = 0 with ë = 0
    (:meth:`ConstrainedResidualTerm.solve_acceleration`), so (q0, q̇0) should satisfy e = 0 and ė = 0. Steps are
    differentiable by the implicit function theorem (the JVP of R in the previous state and the parameters by autodiff).
    Attributes and options as :class:`Newmark`.
    """

    term_structure: ClassVar = ConstrainedResidualTerm

    @staticmethod
    def _constraint_weight(tol: float | jax.Array, dtype: Any) -> float | jax.Array:
        """The weight of the constraint rows in R and ∂R/∂x: tol / max(tol, 100 ε), so that the Newton test
        ``‖R‖_∞ ≤ tol`` asks ``‖e‖_∞ ≤ max(tol, 100 ε)``: ``tol`` in float64 (weight 1), 1.2e−5 in float32, whose
        round-off in e (positions of links 0.1–1 m long) lies near 1e−7, far above the default tol. Rows of R and ∂R/∂x
        scaled together leave the Newton updates unchanged."""
        floor = round_off_floor(dtype)
        return tol / max(tol, floor) if isinstance(tol, float) else tol / jnp.maximum(tol, floor)

    @staticmethod
    def _residual(x, p):
        solver, term, t1, h, y0, qdd0, a0, args = p
        n = y0[0].shape[-1]
        q, qd = solver.predict(h, y0, a0, qdd0, x[..., :n])
        r = solver._weights[0] * h * h * term.residual(t1, q, qd, x[..., :n], x[..., n:], args)
        w = solver._constraint_weight(solver.tol, x.dtype)
        return jnp.concatenate([r, w * term.constraint(t1, q, args)], axis=-1)

    @staticmethod
    def _system(x, p):
        solver, term, t1, h, y0, qdd0, a0, args = p
        n = y0[0].shape[-1]
        q, qd = solver.predict(h, y0, a0, qdd0, x[..., :n])
        r, e, r_q, r_qd, r_qdd, r_lam, e_q = term.partials(t1, q, qd, x[..., :n], x[..., n:], args)
        beta_w, gamma_w = solver._weights
        scale = beta_w * h * h
        w = solver._constraint_weight(solver.tol, x.dtype)
        S = scale * _bordered(r_qdd + gamma_w * h * r_qd + scale * r_q, r_lam, w * e_q)
        return jnp.concatenate([scale * r, w * e], axis=-1), S

    def _linearisation(self) -> None:
        return None  # the JVP of R in the previous state and the parameters by autodiff
