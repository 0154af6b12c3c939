"""Lie-group generalised-α (Arnold, Brüls & Cardona) for constrained mechanical systems, as a diffrax solver.

Seed 001 digest §7.3 [EXT] (refs [30]–[33] of Müller 2021). Equations of motion on a Lie group G (times vector spaces):

    M(q) v̇ + g(t, q, v) + B(q)ᵀ λ = 0,      Φ(q) = 0,      q̇ = q ṽ   (v: body / left-trivialised velocity),

where ``B(q)`` is the body-frame (right-perturbation) gradient of Φ: ``Φ(q·exp(δ̂)) = Φ(q) + B δ + O(δ²)``.

Configuration. ``q`` is a pytree; :class:`LieGroupMechanicalTerm` names the space of each leaf (in
``jax.tree_util.tree_leaves`` order): ``"SO3"`` (a 3×3 rotation matrix, tangent dimension 3), ``"SE3"`` (a 4×4 pose,
tangent dimension 6, twist order (ω, v) as everywhere in jaxse3) or ``"R"`` (an array of any shape, tangent dimension
its size, q̇ = v). The velocity ``v`` is ONE flat vector: the per-leaf tangent velocities concatenated in leaf order
(body angular velocity for SO3, body twist for SE3, the time derivative for R), so ``M`` is one ``(n, n)`` matrix that
can couple the leaves. State ``y = (q, v)``.

Step n → n+1 (h = t_{n+1} − t_n; digest §7.3 with the Chung–Hulbert parameters from ρ∞):

    α_m = (2ρ∞ − 1)/(ρ∞ + 1),  α_f = ρ∞/(ρ∞ + 1),  γ = ½ + α_f − α_m,  β = ¼(γ + ½)²,
    β' = (1 − α_m)/(h²β(1 − α_f)),  γ' = γ/(hβ),
    ã = (α_f v̇_n − α_m a_n)/(1 − α_m),  ṽ = v_n + h(1−γ)a_n + hγ ã,  θ̃ = h v_n + h²(½−β)a_n + h²β ã,

and Newton on the increment θ (Lie-algebra coordinates, θ ≈ h v) with ``v̇ = β'(θ − θ̃)``, ``v = ṽ + γ'(θ − θ̃)``,
``q_{n+1} = q_n ψ(θ)`` where ψ = exp or, for ``coordinate_map="cayley"``, ``ψ(θ) = cay(θ/2)`` (the ``cay_half``
family: dψ_0 = I; the unscaled ``cay(θ)`` is inconsistent, digest §10 pitfall 4). Finally
``a_{n+1} = ã + (1−α_f)/(1−α_m) v̇_{n+1}``. Second order for every ρ∞ ∈ [0, 1].

Newton iteration matrix (digest §7.3), with the index-3 constraint rows scaled for conditioning:

    S = [[ M + (C_t γ' + K_t T(θ))/β',  Bᵀ ],      unknowns (θ, λ/β'),  residual [ r/β' ; Φ(q) ],
         [ B T(θ),                       0  ]]

i.e. the unscaled matrix ``[[Mβ' + C_tγ' + K_t T, Bᵀ], [B T, 0]]`` with its first row divided by β' and λ replaced by
λ/β' (Bottasso et al. / Arnold–Brüls scaling): every block is O(1) as h → 0 instead of a condition number O(h⁻⁴).
``K_t = ∂r/∂δ`` (right perturbation ``q·exp(δ̂)``) and ``C_t = ∂r/∂v`` come from ``jax.jacfwd`` of the full residual
``r = M(q)v̇ + g + Bᵀλ`` (so K_t contains ∂M/∂q·v̇ and the constraint-force stiffness ∂(Bᵀλ)/∂q; jacfwd runs the
custom_jvp rules of whatever the user functions call, e.g. ``d_dexp`` for residuals written with dexp). ``T(θ)`` is the
left-trivialised tangent operator of ψ: ``dexp_{−θ}`` (``so3.dexp``/``se3.dexp`` at −θ) or ``dcay_half_{−θ}``
(= ½ dcay_{−θ/2}); the identity for vector leaves. With these, S is the exact Jacobian of the scaled residual
w.r.t. (θ, λ/β') (checked against ``jax.jacfwd`` of the whole step residual in the tests). ``tangent_operator=False``
replaces T(θ) by I (the common simplification), which costs Newton iterations.

Where the directional derivatives of T (``d_dexp``, ``d_dcay_half``; digest §7.3, seed 001 §4.4/§5.4) enter: in this
formulation v and v̇ are affine in θ and θ enters the residual only through ``q_n ψ(θ)``, so the exact first derivative
needs T(θ) but no derivative of T. D T appears when a residual itself contains T or T⁻¹ of an unknown-dependent
argument (e.g. SE(3) beam elements whose strains use ``dexp⁻¹`` of relative configurations, or a user force written
with ``dexp``); then ``jax.jacfwd`` of that residual, which builds K_t, runs the core's custom_jvp rules, i.e. exactly
those closed-form ``d_dexp``/``d_dexp_inv`` terms.

Newton convergence: ``‖[r/β'; Φ]‖_∞ ≤ tol`` (dynamic rows in mass × displacement units: ``r/β' ≈ M Δθ``; constraint rows
in the units of Φ). Iterations are counted in the solver state (:func:`newton_statistics`); a step that does not
converge within ``max_iters`` returns ``RESULTS.nonlinear_max_steps_reached`` and ``diffeqsolve`` raises (or, with
``throw=False``, reports it in ``sol.result``).

Initial accelerations are consistent: ``a_0 = v̇_0`` and ``λ_0`` solve the index-1 system
``[[M, Bᵀ], [B, 0]] [v̇; λ] = [−g; −(∂(Bv)/∂q)(q ṽ)]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from diffrax import RESULTS, AbstractSolver, AbstractTerm, LocalLinearInterpolation
from jaxtyping import Array, ArrayLike, Bool, Float, PyTree, Real

from jaxse3.integrate.newmark import chung_hulbert
from jaxse3.integrate.newton import newton, newton_statistics, unwrap_term
from jaxse3.lie import se3, so3

__all__ = ["LieGroupMechanicalTerm", "GeneralizedAlpha", "GeneralizedAlphaState", "newton_statistics"]

_GROUP_DIM = {"SO3": 3, "SE3": 6}
_GROUP_SHAPE = {"SO3": (3, 3), "SE3": (4, 4)}


def _value_and_jacfwd(f: Callable, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(f(x), ∂f/∂x) with one forward-mode pass (f traced once)."""

    def both(z):
        y = f(z)
        return y, y

    jac, value = jax.jacfwd(both, has_aux=True)(x)
    return value, jac


class LieGroupMechanicalTerm(AbstractTerm):
    """The model ``M(q) v̇ + g(t, q, v) + B(q)ᵀλ = 0``, ``Φ(q) = 0`` on a product of SO(3), SE(3) and vector spaces.

    Attributes:
        mass: ``mass(q, args) -> (n, n)``, the mass matrix for the flat velocity v.
        force: ``force(t, q, v, args) -> (n,)``, g: every force term except M v̇ (gyroscopic, elastic, minus applied).
        spaces: one of ``"SO3"``, ``"SE3"``, ``"R"`` per leaf of q (``jax.tree_util.tree_leaves`` order). Static.
        constraint: optional ``constraint(q, args) -> (m,)``, the holonomic constraint Φ (index 3, enforced at position
            level); B is its right-perturbation Jacobian, computed by ``jax.jacfwd``.

    As a diffrax term, ``vf(t, (q, v), args)`` returns the tangent vector field ``(v, v̇)`` of the index-1 system.
    """

    mass: Callable[..., jax.Array]
    force: Callable[..., jax.Array]
    spaces: tuple[str, ...] = eqx.field(static=True)
    constraint: Callable[..., jax.Array] | None = None

    def __check_init__(self):
        bad = [s for s in self.spaces if s not in ("SO3", "SE3", "R")]
        if bad:
            raise ValueError(f"LieGroupMechanicalTerm: 'spaces' entries must be 'SO3', 'SE3' or 'R', got {bad}")

    # --- configuration-space helpers -----------------------------------------------------------------------------

    def _leaves(self, q):
        leaves, treedef = jax.tree_util.tree_flatten(q)
        if len(leaves) != len(self.spaces):
            raise ValueError(f"q has {len(leaves)} leaves but 'spaces' names {len(self.spaces)}: {self.spaces}")
        for i, (leaf, s) in enumerate(zip(leaves, self.spaces)):
            if s in _GROUP_SHAPE and jnp.shape(leaf) != _GROUP_SHAPE[s]:
                raise ValueError(f"q leaf {i} ({s}) must have shape {_GROUP_SHAPE[s]}, got {jnp.shape(leaf)}")
        return leaves, treedef

    def tangent_sizes(self, q: PyTree[Array]) -> tuple[int, ...]:
        """Tangent dimension of each leaf of q (3, 6 or the leaf size)."""
        leaves, _ = self._leaves(q)
        return tuple(_GROUP_DIM.get(s, int(np.prod(jnp.shape(x)))) for x, s in zip(leaves, self.spaces))

    def _split(self, q, w):
        sizes = self.tangent_sizes(q)
        if w.shape != (sum(sizes),):
            raise ValueError(f"tangent vector must have shape ({sum(sizes)},), got {w.shape}")
        return jnp.split(w, np.cumsum(sizes)[:-1])

    def retract(self, q: PyTree[Array], theta: Float[Array, " n"], coordinate_map: str = "exp") -> PyTree[Array]:
        """``q ψ(θ)`` leaf by leaf: ``q_i exp(θ_i)`` / ``q_i cay_half(θ_i)`` on groups, ``q_i + θ_i`` on vectors."""
        leaves, treedef = self._leaves(q)
        out = []
        for x, s, th in zip(leaves, self.spaces, self._split(q, theta)):
            if s == "R":
                out.append(x + th.reshape(jnp.shape(x)))
            else:
                lie = so3 if s == "SO3" else se3
                out.append(x @ (lie.exp(th) if coordinate_map == "exp" else lie.cay_half(th)))
        return jax.tree_util.tree_unflatten(treedef, out)

    def tangent_blocks(
        self, q: PyTree[Array], theta: Float[Array, " n"], coordinate_map: str = "exp"
    ) -> list[Float[Array, "_ _"]]:
        """Diagonal blocks of the left-trivialised tangent operator T(θ): ``q ψ(θ)``'s body velocity is ``T(θ) θ̇``."""
        _leaves, _ = self._leaves(q)
        blocks = []
        for s, th in zip(self.spaces, self._split(q, theta)):
            if s == "R":
                blocks.append(jnp.eye(th.shape[0], dtype=th.dtype))
            else:
                lie = so3 if s == "SO3" else se3
                blocks.append(lie.dexp(-th) if coordinate_map == "exp" else lie.dcay_half(-th))
        return blocks

    def right_jacobian(
        self, fn: Callable[[PyTree[Array]], Float[Array, " m"]], q: PyTree[Array]
    ) -> tuple[Float[Array, " m"], Float[Array, "m n"]]:
        """``(fn(q), ∂fn(q·exp(δ̂))/∂δ at δ = 0)``: value and body-frame Jacobian of a vector function of q."""
        n = sum(self.tangent_sizes(q))
        dtype = jnp.result_type(*jax.tree_util.tree_leaves(q), float)
        return _value_and_jacfwd(lambda d: fn(self.retract(q, d)), jnp.zeros(n, dtype))

    # --- model pieces --------------------------------------------------------------------------------------------

    def constraint_jacobian(self, q: PyTree[Array], args: PyTree[Any]) -> Float[Array, "m n"]:
        """B(q), the right-perturbation Jacobian of Φ, ``(m, n)``."""
        return self.right_jacobian(lambda qq: self.constraint(qq, args), q)[1]

    def residual(
        self,
        t: Real[ArrayLike, ""],
        q: PyTree[Array],
        v: Float[Array, " n"],
        vdot: Float[Array, " n"],
        lam: Float[Array, " m"],
        args: PyTree[Any],
    ) -> Float[Array, " n"]:
        """``r = M(q) v̇ + g(t, q, v) + B(q)ᵀ λ`` (λ ignored without constraint)."""
        r = self.mass(q, args) @ vdot + self.force(t, q, v, args)
        if self.constraint is not None:
            r = r + self.constraint_jacobian(q, args).T @ lam
        return r

    def accelerations(
        self, t: Real[ArrayLike, ""], q: PyTree[Array], v: Float[Array, " n"], args: PyTree[Any]
    ) -> tuple[Float[Array, " n"], Float[Array, " m"]]:
        """Consistent ``(v̇, λ)`` from the index-1 system (constraint differentiated twice)."""
        M, g = self.mass(q, args), self.force(t, q, v, args)
        if self.constraint is None:
            return jnp.linalg.solve(M, -g), jnp.zeros((0,), g.dtype)
        n = v.shape[0]
        B = self.constraint_jacobian(q, args)
        # d/dt (B(q) v) at fixed v along q̇ = q ṽ: the curvature term of Φ̈ = B v̇ + (∂(Bv)/∂q)(v)
        zero = jnp.zeros(n, v.dtype)
        curv = jax.jvp(lambda d: self.constraint_jacobian(self.retract(q, d), args) @ v, (zero,), (v,))[1]
        m = B.shape[0]
        K = jnp.block([[M, B.T], [B, jnp.zeros((m, m), M.dtype)]])
        sol = jnp.linalg.solve(K, jnp.concatenate([-g, -curv]))
        return sol[:n], sol[n:]

    def vf(
        self, t: Real[ArrayLike, ""], y: tuple[PyTree[Array], Float[Array, " n"]], args: PyTree[Any]
    ) -> tuple[Float[Array, " n"], Float[Array, " n"]]:
        q, v = y
        return v, self.accelerations(t, q, v, args)[0]

    def contr(self, t0: Real[ArrayLike, ""], t1: Real[ArrayLike, ""], **kwargs: Any) -> Real[ArrayLike, ""]:
        return t1 - t0

    def prod(self, vf: PyTree[Array], control: Real[ArrayLike, ""]) -> PyTree[Array]:
        return jax.tree_util.tree_map(lambda x: x * control, vf)


class GeneralizedAlphaState(eqx.Module):
    """Solver state carried between steps (read the final one with ``SaveAt(..., solver_state=True)``)."""

    acceleration: jax.Array  # v̇_n
    pseudo_acceleration: jax.Array  # a_n
    multiplier: jax.Array  # λ_n (empty without constraint)
    newton_iterations: jax.Array  # total Newton updates since t0 (int32)
    max_newton_iterations: jax.Array  # largest number of updates in one step (int32)


class GeneralizedAlpha(AbstractSolver):
    """Lie-group generalised-α (Arnold, Brüls & Cardona; seed 001 digest §7.3), fixed step, order 2.

    Use with :class:`LieGroupMechanicalTerm`, ``y0 = (q0, v0)`` and ``diffrax.ConstantStepSize()`` (the default when
    ``dt0`` is given and no controller is passed). Dense output / ``SaveAt(ts=...)`` between steps interpolates the
    matrices linearly (not on the group): save at step times (``SaveAt(steps=True)`` or ts on the step grid).

    Attributes:
        rho_inf: spectral radius at infinity ρ∞ ∈ [0, 1] (1: no numerical damping; 0: asymptotic annihilation).
        coordinate_map: ``"exp"`` or ``"cayley"`` (ψ(θ) = cay(θ/2)).
        tangent_operator: use T(θ) in the iteration matrix (exact Newton); False: T ≈ I (more iterations; the
            gradients then use the exact matrix at the root, evaluated once per step).
        tol: Newton tolerance on the scaled residual ``‖[r/β'; Φ]‖_∞``.
        max_iters: Newton updates allowed per step before the step is reported as failed.
    """

    term_structure: ClassVar = LieGroupMechanicalTerm
    interpolation_cls: ClassVar[Callable[..., LocalLinearInterpolation]] = LocalLinearInterpolation

    rho_inf: float | jax.Array = 0.9
    coordinate_map: Literal["exp", "cayley"] = eqx.field(static=True, default="exp")
    tangent_operator: bool = eqx.field(static=True, default=True)
    tol: float = 1e-10
    max_iters: int = eqx.field(static=True, default=20)

    def __check_init__(self):
        if self.coordinate_map not in ("exp", "cayley"):
            raise ValueError(
                f"GeneralizedAlpha: 'coordinate_map' must be 'exp' or 'cayley', got {self.coordinate_map!r}"
            )
        if isinstance(self.rho_inf, (int, float)) and not 0.0 <= self.rho_inf <= 1.0:
            raise ValueError(f"GeneralizedAlpha: 'rho_inf' must lie in [0, 1], got {self.rho_inf}")

    def order(self, terms: PyTree[AbstractTerm]) -> int:
        return 2

    def coefficients(self) -> tuple[Any, Any, Any, Any]:
        """(α_m, α_f, γ, β) from ρ∞ (Chung–Hulbert; digest §7.3)."""
        return chung_hulbert(self.rho_inf)

    def init(
        self,
        terms: PyTree[AbstractTerm],
        t0: Real[ArrayLike, ""],
        t1: Real[ArrayLike, ""],
        y0: tuple[PyTree[Array], Float[Array, " n"]],
        args: PyTree[Any],
    ) -> GeneralizedAlphaState:
        terms = unwrap_term(terms, LieGroupMechanicalTerm)
        q0, v0 = y0
        vdot0, lam0 = terms.accelerations(t0, q0, v0, args)
        zero = jnp.asarray(0, jnp.int32)
        return GeneralizedAlphaState(vdot0, vdot0, lam0, zero, zero)

    def step_residual(
        self,
        terms: LieGroupMechanicalTerm,
        t1: Real[ArrayLike, ""],
        h: Real[ArrayLike, ""],
        y0: tuple[PyTree[Array], Float[Array, " n"]],
        state: GeneralizedAlphaState,
        args: PyTree[Any],
        tangent_operator: bool = True,
    ) -> tuple[
        Callable[[Float[Array, " k"]], tuple[Float[Array, " k"], Float[Array, "k k"]]],
        Float[Array, " k"],
        tuple[Float[ArrayLike, ""], Float[ArrayLike, ""], Float[Array, " n"], Float[Array, " n"], Float[Array, " n"]],
    ]:
        """The step's Newton system as a function of x = (θ, λ/β'): returns ``fun(x) -> (R, S)`` and the guess.

        Exposed for tests (S is checked against ``jax.jacfwd`` of R)."""
        q0, v0 = y0
        alpha_m, alpha_f, gamma, beta = self.coefficients()
        beta_p = (1.0 - alpha_m) / (h * h * beta * (1.0 - alpha_f))
        gamma_p = gamma / (h * beta)
        a_pred = (alpha_f * state.acceleration - alpha_m * state.pseudo_acceleration) / (1.0 - alpha_m)
        v_pred = v0 + h * (1.0 - gamma) * state.pseudo_acceleration + h * gamma * a_pred
        th_pred = h * v0 + h * h * (0.5 - beta) * state.pseudo_acceleration + h * h * beta * a_pred
        n = v0.shape[0]
        sizes = np.cumsum(terms.tangent_sizes(q0))[:-1]

        def times_T(A, theta):  # A @ blockdiag(T(θ)) (columns of A split by leaf)
            if not tangent_operator:
                return A
            blocks = terms.tangent_blocks(q0, theta, self.coordinate_map)
            return jnp.concatenate([a @ T for a, T in zip(jnp.split(A, sizes, axis=1), blocks)], axis=1)

        def fun(x):
            theta, lam = x[:n], beta_p * x[n:]
            q = terms.retract(q0, theta, self.coordinate_map)
            vdot = beta_p * (theta - th_pred)
            v = v_pred + gamma_p * (theta - th_pred)
            zero = jnp.zeros(n, theta.dtype)
            r_of = lambda w: terms.residual(t1, terms.retract(q, w[:n]), v + w[n:], vdot, lam, args)
            r, KC = _value_and_jacfwd(r_of, jnp.concatenate([zero, zero]))
            top = terms.mass(q, args) + (gamma_p * KC[:, n:] + times_T(KC[:, :n], theta)) / beta_p
            if terms.constraint is None:
                return r / beta_p, top
            phi, B = terms.right_jacobian(lambda qq: terms.constraint(qq, args), q)
            m = phi.shape[0]
            S = jnp.block([[top, B.T], [times_T(B, theta), jnp.zeros((m, m), top.dtype)]])
            return jnp.concatenate([r / beta_p, phi]), S

        x0 = jnp.concatenate([th_pred, jnp.zeros_like(state.multiplier)])  # digest: v̇ := 0, λ := 0
        return fun, x0, (beta_p, gamma_p, th_pred, v_pred, a_pred)

    def step(
        self,
        terms: PyTree[AbstractTerm],
        t0: Real[ArrayLike, ""],
        t1: Real[ArrayLike, ""],
        y0: tuple[PyTree[Array], Float[Array, " n"]],
        args: PyTree[Any],
        solver_state: GeneralizedAlphaState,
        made_jump: Bool[ArrayLike, ""],
    ) -> tuple[tuple[PyTree[Array], Float[Array, " n"]], None, dict[str, Any], GeneralizedAlphaState, RESULTS]:
        del made_jump
        terms = unwrap_term(terms, LieGroupMechanicalTerm)
        q0, v0 = y0
        n = v0.shape[0]
        alpha_m, alpha_f, _, _ = self.coefficients()

        def system(x, p, tangent_operator):
            solver, terms_, t1_, h_, y0_, state_, args_ = p
            fun, _, _ = solver.step_residual(terms_, t1_, h_, y0_, state_, args_, tangent_operator)
            return fun(x)

        params = (self, terms, t1, t1 - t0, y0, solver_state, args)
        _, x0, (beta_p, gamma_p, th_pred, v_pred, a_pred) = self.step_residual(
            terms, t1, t1 - t0, y0, solver_state, args
        )
        exact = None if self.tangent_operator else (lambda x, p: system(x, p, True)[1])
        sol = newton(lambda x, p: system(x, p, self.tangent_operator), x0, params, self.tol, self.max_iters, exact)
        theta, lam = sol.value[:n], beta_p * sol.value[n:]
        vdot = beta_p * (theta - th_pred)
        v1 = v_pred + gamma_p * (theta - th_pred)
        q1 = terms.retract(q0, theta, self.coordinate_map)
        a1 = a_pred + (1.0 - alpha_f) / (1.0 - alpha_m) * vdot
        state = GeneralizedAlphaState(
            vdot,
            a1,
            lam,
            solver_state.newton_iterations + sol.num_steps,
            jnp.maximum(solver_state.max_newton_iterations, sol.num_steps),
        )
        result = RESULTS.where(sol.converged, RESULTS.successful, RESULTS.nonlinear_max_steps_reached)
        y1 = (q1, v1)
        return y1, None, dict(y0=y0, y1=y1), state, result

    def func(
        self,
        terms: PyTree[AbstractTerm],
        t0: Real[ArrayLike, ""],
        y0: tuple[PyTree[Array], Float[Array, " n"]],
        args: PyTree[Any],
    ) -> tuple[Float[Array, " n"], Float[Array, " n"]]:
        return unwrap_term(terms, LieGroupMechanicalTerm).vf(t0, y0, args)
