"""The SE(3) strain-field rod: strains, strain rates, Hookean energy and its exact gradient and Hessian.

Seed 000 (Müller 2026) §2.3.2 and §7, with the corrections of its digest (``shared/papers/notes/000.md`` §4):

* cross-section poses ``H(τ) = exp(X̂(τ))``, τ ∈ [0, 1] (normalised arc length), ``X = (x, y)`` rotation first;
* strain (body-fixed, ``χ̂ = H⁻¹H′``): ``χ = dexp_{−X} X′`` (eq. (14));
* strain rates, with ``D_{−X}`` throughout (the paper prints ``D_X`` in χ″, digest §8):
  ``χ′ = dexp_{−X} X″ − (D_{−X}dexp)(X′) X′``,
  ``χ″ = dexp_{−X} X‴ − 2 (D_{−X}dexp)(X′) X″ − (D_{−X}dexp)(X″) X′ + (D²_{−X}dexp)(X′)(X′) X′``;
* Hookean energy density ``V̄ = ½ (χ − χ₀)ᵀ K (χ − χ₀)`` and its derivatives (eqs. (15), (16)) with the sign
  bookkeeping of the digest §4.2: ``∂χ/∂X = −J₃₆(−X; X′)`` (``se3.dexp_jac`` at −X), and the Hessian term
  ``∂²(aᵀ dexp_{−X} X′)/∂X² = H₄₇(−X; a, X′)`` (``se3.dexp_hess`` at −X) with **no** sign change, ``a = K(χ − χ₀)``.

Because X′ is a function of X (of the field), the density is treated as a function of both ``(X, X′)``; its stacked
gradient ``[∂V̄/∂X, ∂V̄/∂X′]`` and 12×12 Hessian add to (15)/(16) the ``X′`` terms ``∂χ/∂X′ = dexp_{−X}`` and the mixed
term ``∂²(aᵀ dexp_{−X} X′)/∂X∂X′ = −dexpT_jac(−X, a)ᵀ`` (seed 000 eq. (39)). :func:`energy_density` and
:func:`energy_density_grad` are ``jax.custom_jvp`` functions whose rules evaluate these closed forms, so ``jax.grad``
and ``jax.hessian`` of any energy built from them (e.g. :func:`energy` of the field coefficients, by the chain rule
through the linear field basis) run the closed forms. All coefficients are the Taylor-switched ones of
:mod:`jaxse3.lie.coefficients`: values and derivatives are exact and finite where ``x(τ) = 0``.

Fields: a callable ``τ ↦ X(τ)`` (derivatives by nested forward-mode autodiff, :func:`field_derivatives`), or
:class:`ChebyshevField` coefficients ``(n_basis, 6)``, optionally clamped (``X(0) = 0``, i.e. ``H(0) = I``).
:class:`StrainFieldRod` holds the stiffness, the reference strain, the field basis and a Gauss–Legendre rule.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType, SimpleNamespace

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxse3 import se3, so3
from jaxse3.lie.shapes import as_float, batched
from jaxse3.lie.tangents import accumulate, custom_rule, is_zero

__all__ = [
    "strain",
    "strain_rates",
    "energy_density",
    "energy_density_grad",
    "energy_density_hess",
    "field_derivatives",
    "ChebyshevField",
    "StrainFieldRod",
    "energy",
    "energy_gradient",
    "energy_hessian",
    "field",
    "poses",
    "positions",
]


# --------------------------------------------------------------------------------------------------------------------
# Pointwise kinematics (unbatched cores; the public functions broadcast over leading axes)


def _strain_rates(X, P, P2, P3, maps=se3):
    mX = -X
    D = maps.dexp(mX)
    DP = maps.d_dexp(mX, P)
    chi = D @ P
    chi1 = D @ P2 - DP @ P
    chi2 = D @ P3 - 2.0 * DP @ P2 - maps.d_dexp(mX, P2) @ P + maps.d2_dexp(mX, P, P) @ P
    return jnp.stack([chi, chi1, chi2])


@batched("(6),(6)->(6)", ("X", "dX"), "strain")
def strain(X: Float[ArrayLike, "... 6"], dX: Float[ArrayLike, "... 6"]) -> Float[Array, "... 6"]:
    """Body-fixed strain ``χ = (κ, ρ) = dexp_{−X} X′`` (seed 000 eq. (14)). ``(..., 6), (..., 6) -> (..., 6)``.

    Args:
        X: field value X(τ). dX: its derivative X′(τ) along τ.
    """
    return se3.dexp_apply.core(-X, dX)


def strain_rates(
    X: Float[ArrayLike, "... 6"],
    dX: Float[ArrayLike, "... 6"],
    d2X: Float[ArrayLike, "... 6"],
    d3X: Float[ArrayLike, "... 6"],
    maps: ModuleType | SimpleNamespace = se3,
) -> Float[Array, "... 3 6"]:
    """``(χ, χ′, χ″)`` from ``X, X′, X″, X‴`` (seed 000 §2.3.2, with ``D_{−X}`` in χ″: digest §4.2, §8).

    Args:
        X, dX, d2X, d3X: ``(..., 6)``: the field and its first three τ-derivatives.
        maps: provider of unbatched-compatible ``dexp(X)``, ``d_dexp(X, U)``, ``d2_dexp(X, U, S)``; default
            :mod:`jaxse3.se3` (accurate everywhere). Pass e.g. a namespace of k-th order approximations
            (:mod:`jaxse3.approx`) or of the literal closed forms to reproduce the paper's Figs. 5–6.
    Returns:
        ``(..., 3, 6)``: rows χ, χ′, χ″.
    """
    core = batched("(6),(6),(6),(6)->(3,6)", ("X", "dX", "d2X", "d3X"), "strain_rates")(
        lambda a, b, c, d: _strain_rates(a, b, c, d, maps)
    )
    return core(X, dX, d2X, d3X)


def field_derivatives(
    fn: Callable[[Float[Array, ""]], Float[Array, "6"]], tau: Float[ArrayLike, "..."], order: int = 3
) -> Float[Array, "... k 6"]:
    """``(X, X′, …, X^(order))`` of a callable field ``τ ↦ X(τ) ∈ R⁶`` by nested forward-mode autodiff.

    Args:
        fn: scalar τ -> ``(6,)``; must be differentiable ``order`` times (jaxse3 maps are).
        tau: ``(...)`` parameter values.
    Returns:
        ``(..., order + 1, 6)``.
    """
    (tau,) = as_float(tau)

    def one(t):
        derivs = [fn]
        for _ in range(order):
            g = derivs[-1]
            derivs.append(lambda s, g=g: jax.jvp(g, (s,), (jnp.ones_like(s),))[1])
        return jnp.stack([d(t) for d in derivs])

    flat = jax.vmap(one)(tau.reshape(-1))
    return flat.reshape(tau.shape + flat.shape[1:])


# --------------------------------------------------------------------------------------------------------------------
# Hookean energy density of (X, X′) and its closed-form derivatives, eqs. (15), (16)


def _sym(K):
    return 0.5 * (K + K.T)


def _local(X, P, K, chi0):
    """Shared pieces: D = dexp_{−X}, χ, e = χ − χ₀, a = K e, J = ∂χ/∂X = −dexp_jac(−X, X′) (eq. (15))."""
    D = se3.dexp.core(-X)
    chi = D @ P
    e = chi - chi0
    Ks = _sym(K)
    J = -se3.dexp_jac.core(-X, P)
    return D, e, Ks, Ks @ e, J


def _grad_core(X, P, K, chi0):
    D, _e, _, a, J = _local(X, P, K, chi0)
    return jnp.concatenate([J.T @ a, D.T @ a])


def _hess_core(X, P, K, chi0):
    """12×12 Hessian in (X, X′): eq. (16) for the X-X block, plus the X′ and mixed blocks (module docstring)."""
    D, _e, Ks, a, J = _local(X, P, K, chi0)
    G = jnp.concatenate([J, D], axis=1)  # ∂χ/∂(X, X′), 6×12
    Hxx = se3.dexp_hess.core(-X, a, P)  # H₄₇(−X; a, X′), no sign change (digest §4.2)
    Hxp = -se3.dexpT_jac.core(-X, a).T  # ∂²(aᵀ dexp_{−X} X′)/∂X∂X′, from eq. (39)
    Z = jnp.zeros_like(Hxx)
    return G.T @ Ks @ G + jnp.block([[Hxx, Hxp], [Hxp.T, Z]])


def _parameter_tangent(e, dK, dchi0, Ks):
    """da = dK_s e − K_s dχ₀, the change of a = K(χ − χ₀) with the material data."""
    return accumulate(e, [(lambda t: _sym(t) @ e, dK), (lambda t: -(Ks @ t), dchi0)])


def _state_tangent(X, P, tX, tP):
    """The tangent of the concatenated state (X, P): a symbolic zero when both are, else dense."""
    if is_zero(tX) and is_zero(tP):
        return tX
    return jnp.concatenate([jnp.zeros_like(X) if is_zero(tX) else tX, jnp.zeros_like(P) if is_zero(tP) else tP])


def _density_plain(X, P, K, chi0):
    _D, e, _Ks, a, _ = _local(X, P, K, chi0)
    return 0.5 * jnp.dot(e, a)


def _density_jvp(primals, tangents):
    X, P, K, chi0 = primals
    tX, tP, tK, tc = tangents
    _D, e, _Ks, a, _ = _local(X, P, K, chi0)
    out = 0.5 * jnp.dot(e, a)
    dv = accumulate(
        out,
        [
            (lambda t: jnp.dot(_grad_fn(X, P, K, chi0), t), _state_tangent(X, P, tX, tP)),
            (lambda t: 0.5 * jnp.dot(e, t @ e), tK),
            (lambda t: -jnp.dot(a, t), tc),
        ],
    )
    return out, dv


_density_core = custom_rule("rod.energy_density", _density_plain, _density_jvp)


def _grad_jvp(primals, tangents):
    X, P, K, chi0 = primals
    tX, tP, tK, tc = tangents
    g = _grad_core(X, P, K, chi0)
    rest = None
    if not (is_zero(tK) and is_zero(tc)):
        D, e, Ks, _, J = _local(X, P, K, chi0)
        da = _parameter_tangent(e, tK, tc, Ks)
        rest = jnp.concatenate([J.T @ da, D.T @ da])
    return g, accumulate(g, [(lambda t: _hess_core(X, P, K, chi0) @ t, _state_tangent(X, P, tX, tP))], rest)


_grad_fn = custom_rule("rod.energy_density_grad", _grad_core, _grad_jvp)

_SIG = "(6),(6),(6,6),(6)"
_NAMES = ("X", "dX", "K", "chi0")

energy_density = batched(_SIG + "->()", _NAMES, "energy_density")(_density_core)
energy_density.__doc__ = """Hookean energy density ``V̄ = ½ (χ − χ₀)ᵀ K (χ − χ₀)``, ``χ = dexp_{−X} X′`` (seed 000
§2.3.2).

    Args:
        X, dX: ``(..., 6)`` field value and τ-derivative. K: ``(..., 6, 6)`` stiffness (symmetric part used).
        chi0: ``(..., 6)`` reference strain.
    Returns:
        ``(...)``. Custom_jvp: the tangent is :func:`energy_density_grad` (eq. (15) and its X′ part), whose own rule
        is :func:`energy_density_hess` (eq. (16)), so ``jax.grad``/``jax.hessian`` run the closed forms; tangents in K
        and χ₀ are exact too."""

energy_density_grad = batched(_SIG + "->(12)", _NAMES, "energy_density_grad")(_grad_fn)
energy_density_grad.__doc__ = """Stacked gradient ``[∂V̄/∂X, ∂V̄/∂X′]`` (seed 000 eq. (15): ∂V̄/∂X = (∂χ/∂X)ᵀ K (χ − χ₀)).

    ``∂χ/∂X = −dexp_jac(−X, X′)`` (eq. (36) at −X), ``∂χ/∂X′ = dexp_{−X}``. ``(..., 12)``; custom_jvp with the
    Hessian :func:`energy_density_hess` as tangent."""

energy_density_hess = batched(_SIG + "->(12,12)", _NAMES, "energy_density_hess")(_hess_core)
energy_density_hess.__doc__ = """12×12 Hessian of V̄ in ``(X, X′)`` (seed 000 eq. (16) with eqs. (36), (39), (47)).

    ``[[JᵀKJ + H₄₇(−X; a, X′), JᵀKD − dexpT_jac(−X, a)ᵀ], [·ᵀ, DᵀKD]]`` with ``J = −dexp_jac(−X, X′)``,
    ``D = dexp_{−X}``, ``a = K(χ − χ₀)``. ``(..., 12, 12)``, symmetric."""


# --------------------------------------------------------------------------------------------------------------------
# Parameterised fields and the rod model


def _chebyshev(n: int, tau: Array) -> Array:
    """``T_0 … T_{n−1}`` at ``t = 2τ − 1`` by the three-term recurrence; ``(..., n)``."""
    t = 2.0 * tau - 1.0
    T = [jnp.ones_like(t), t]
    for _ in range(2, n):
        T.append(2.0 * t * T[-1] - T[-2])
    return jnp.stack(T[:n], axis=-1)


class ChebyshevField(eqx.Module):
    """Field ``X(τ) = Σ_k φ_k(τ) c_k``, ``c ∈ R^{n_basis × 6}``, with Chebyshev polynomials φ_k in ``t = 2τ − 1``.

    ``clamped=True`` uses ``φ_k = T_k(t) − T_k(−1)``, k = 1 … degree, so ``X(0) = 0`` (a clamped base ``H(0) = I``)
    for any coefficients; otherwise ``φ_k = T_k``, k = 0 … degree.
    """

    degree: int = eqx.field(static=True)
    clamped: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        if not isinstance(self.degree, int) or self.degree < 1:
            raise ValueError(f"ChebyshevField: 'degree' must be an int ≥ 1, got {self.degree!r}")

    @property
    def n_basis(self) -> int:
        return self.degree if self.clamped else self.degree + 1

    def basis(self, tau: Float[ArrayLike, "..."], order: int = 0) -> Float[Array, "... n_basis"]:
        """``d^order φ_k/dτ^order`` at τ: ``(..., n_basis)`` (derivatives by exact Chebyshev differentiation)."""
        (tau,) = as_float(tau)
        n = self.degree + 1
        D = np.polynomial.chebyshev.chebder(np.eye(n), m=order) if order else np.eye(n)  # (n − order, n)
        D = np.concatenate([D, np.zeros((n - D.shape[0], n))]) * 2.0**order  # dt/dτ = 2
        out = _chebyshev(n, tau) @ jnp.asarray(D, tau.dtype)
        if self.clamped:
            ends = np.array([(-1.0) ** k for k in range(n)]) if order == 0 else np.zeros(n)
            out = (out - jnp.asarray(ends, tau.dtype))[..., 1:]
        return out

    def __call__(
        self, coeffs: Float[ArrayLike, "n_basis 6"], tau: Float[ArrayLike, "..."], order: int = 0
    ) -> Float[Array, "... 6"]:
        """``X^(order)(τ)``: ``(..., 6)`` for coefficients ``(n_basis, 6)``."""
        (coeffs,) = as_float(coeffs)
        if coeffs.shape != (self.n_basis, 6):
            raise ValueError(
                f"ChebyshevField: argument 'coeffs' must have shape ({self.n_basis}, 6), got {coeffs.shape}"
            )
        return self.basis(tau, order) @ coeffs


class StrainFieldRod(eqx.Module):
    """A rod ``H(τ) = exp(X̂(τ))`` with Hookean energy ``∫₀¹ ½ (χ − χ₀)ᵀ K (χ − χ₀) dτ`` (seed 000 §2.3.2, §7).

    ``K`` and ``χ₀`` are per unit τ (strains along normalised arc length): for a rod of length L,
    ``K = diag(GJ, EI_y, EI_z, EA, GA, GA)/L`` and a straight reference ``χ₀ = (0, 0, 0, L, 0, 0)`` (as in the paper's
    §7, ``K = (1/L) diag(…)``); positions are then in the units of L. Build with :meth:`from_material`.

    Fields: ``stiffness`` (6, 6), ``reference_strain`` (6,), ``field`` (:class:`ChebyshevField`), Gauss–Legendre
    ``nodes``/``weights`` on [0, 1] and the basis values ``basis0``/``basis1`` (value, τ-derivative) at the nodes.
    """

    stiffness: Array
    reference_strain: Array
    field: ChebyshevField
    nodes: Array
    weights: Array
    basis0: Array
    basis1: Array

    def __init__(
        self,
        stiffness: Float[ArrayLike, "6 6"],
        reference_strain: Float[ArrayLike, "6"],
        field: ChebyshevField,
        n_quad: int | None = None,
    ):
        K, chi0 = as_float(stiffness, reference_strain)
        if K.shape != (6, 6):
            raise ValueError(f"StrainFieldRod: argument 'stiffness' must have shape (6, 6), got {K.shape}")
        if chi0.shape != (6,):
            raise ValueError(f"StrainFieldRod: argument 'reference_strain' must have shape (6,), got {chi0.shape}")
        n_quad = 2 * field.degree + 4 if n_quad is None else int(n_quad)
        if n_quad < 1:
            raise ValueError(f"StrainFieldRod: 'n_quad' must be ≥ 1, got {n_quad}")
        xg, wg = np.polynomial.legendre.leggauss(n_quad)
        self.stiffness, self.reference_strain, self.field = K, chi0, field
        self.nodes = jnp.asarray(0.5 * (xg + 1.0), K.dtype)
        self.weights = jnp.asarray(0.5 * wg, K.dtype)
        self.basis0 = field.basis(self.nodes, 0)
        self.basis1 = field.basis(self.nodes, 1)

    @classmethod
    def from_material(
        cls,
        length: Float[ArrayLike, ""],
        E: Float[ArrayLike, ""],
        G: Float[ArrayLike, ""],
        area: Float[ArrayLike, ""],
        I_y: Float[ArrayLike, ""],
        I_z: Float[ArrayLike, ""],
        J: Float[ArrayLike, ""],
        degree: int,
        n_quad: int | None = None,
        shear_coefficient: float = 1.0,
    ) -> StrainFieldRod:
        """``K = diag(G J, E I_y, E I_z, E A, k G A, k G A)/L``, ``χ₀ = (0, 0, 0, L, 0, 0)``, clamped Chebyshev
        field."""
        k = shear_coefficient
        K = jnp.diag(jnp.array([G * J, E * I_y, E * I_z, E * area, k * G * area, k * G * area])) / length
        chi0 = jnp.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0]) * length
        return cls(K, chi0, ChebyshevField(degree, clamped=True), n_quad)

    @property
    def n_coeffs(self) -> int:
        return self.field.n_basis

    def straight(self) -> Float[Array, "n_basis 6"]:
        """Coefficients of the reference configuration ``X(τ) = τ χ₀`` (exact for constant χ₀: ``τ = (T₀ + T₁)/2``)."""
        c = jnp.zeros((self.n_coeffs, 6), self.stiffness.dtype)
        rows = (0,) if self.field.clamped else (0, 1)
        return c.at[rows, :].set(0.5 * self.reference_strain)


def _check(rod: StrainFieldRod, coeffs):
    (coeffs,) = as_float(coeffs)
    if coeffs.shape != (rod.n_coeffs, 6):
        raise ValueError(f"argument 'coeffs' must have shape ({rod.n_coeffs}, 6), got {coeffs.shape}")
    return coeffs


def energy(rod: StrainFieldRod, coeffs: Float[ArrayLike, "n_basis 6"]) -> Float[Array, ""]:
    """Total elastic energy ``Σ_q w_q V̄(X(τ_q), X′(τ_q))`` (Gauss–Legendre). ``jax.grad``/``jax.hessian`` of it run
    the closed forms (custom_jvp of :func:`energy_density`) through the chain rule of the linear field basis."""
    c = _check(rod, coeffs)
    dens = energy_density(rod.basis0 @ c, rod.basis1 @ c, rod.stiffness, rod.reference_strain)
    return jnp.dot(rod.weights, dens)


def energy_gradient(rod: StrainFieldRod, coeffs: Float[ArrayLike, "n_basis 6"]) -> Float[Array, "n_basis 6"]:
    """``∂E/∂c``, ``(n_basis, 6)``: ``Σ_q w_q (φ(τ_q) ∂V̄/∂X + φ′(τ_q) ∂V̄/∂X′)`` (eq. (15), chain rule)."""
    c = _check(rod, coeffs)
    g = energy_density_grad(rod.basis0 @ c, rod.basis1 @ c, rod.stiffness, rod.reference_strain)
    return jnp.einsum("q,qi,qa->ia", rod.weights, rod.basis0, g[:, :6]) + jnp.einsum(
        "q,qi,qa->ia", rod.weights, rod.basis1, g[:, 6:]
    )


def energy_hessian(rod: StrainFieldRod, coeffs: Float[ArrayLike, "n_basis 6"]) -> Float[Array, "n_basis 6 n_basis 6"]:
    """``∂²E/∂c∂c``, ``(n_basis, 6, n_basis, 6)`` (the layout of ``jax.hessian``), from eq. (16) by the chain rule."""
    c = _check(rod, coeffs)
    H = energy_density_hess(rod.basis0 @ c, rod.basis1 @ c, rod.stiffness, rod.reference_strain)
    Bs = jnp.stack([rod.basis0, rod.basis1])  # (2, q, n)
    Hb = H.reshape(H.shape[0], 2, 6, 2, 6)
    return jnp.einsum("q,uqi,vqj,quavb->iajb", rod.weights, Bs, Bs, Hb)


def field(
    rod: StrainFieldRod, coeffs: Float[ArrayLike, "n_basis 6"], tau: Float[ArrayLike, "..."], order: int = 0
) -> Float[Array, "... 6"]:
    """``X^(order)(τ)``, ``(..., 6)``."""
    return rod.field(_check(rod, coeffs), tau, order)


def poses(
    rod: StrainFieldRod, coeffs: Float[ArrayLike, "n_basis 6"], tau: Float[ArrayLike, "..."]
) -> Float[Array, "... 4 4"]:
    """Cross-section poses ``H(τ) = exp(X̂(τ))``, ``(..., 4, 4)``."""
    return se3.exp(field(rod, coeffs, tau))


def positions(
    rod: StrainFieldRod, coeffs: Float[ArrayLike, "n_basis 6"], tau: Float[ArrayLike, "..."]
) -> Float[Array, "... 3"]:
    """Centre-line positions ``r(τ) = dexp_x y`` (seed 000 eq. (4)), ``(..., 3)``; differentiable in closed form."""
    X = field(rod, coeffs, tau)
    return so3.dexp_apply(X[..., :3], X[..., 3:])
