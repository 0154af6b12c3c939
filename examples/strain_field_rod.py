"""The strain-field rod of seed 000 §7 (Müller 2026): strains, strain rates, switching error, energy derivatives.

Usage::

    python examples/strain_field_rod.py [--out DIR] [--n N]

prints the golden-value comparison, the switching-error study and the energy-derivative checks, and writes
``DIR/strain_rates_literal.png``, ``DIR/strain_rates_robust.png`` and ``DIR/switching_error.png`` (default DIR:
``./jaxse3-out/strain_field``).

Set-up (the paper's §7 as quoted in the seed 000 digest §4.3): the rubber rod (8 × 8 mm², L = 100 mm, E = 10 MPa,
G = 0.3 MPa as printed) with the prescribed fields

    x(τ) = ½ (sin 2πτ, cos πτ, sin 2πτ),   ρ(τ) = (cos(s/10), sin(s/10) cos s, sin(s/10) sin s),  s = sin 2πτ,

``R = exp x̃``, ``r′ = R ρ`` with ``r(0) = 0`` (the digest's assumption), and ``X = log H = (x, dexp_x⁻¹ r)``; x(0.5) = 0
is the singular point of the literal closed forms. Energy (digest §4.4, assumptions not in the paper): N–mm units,
A = 64, I = 341.33, J = 2I, ``K = (1/L) diag(GJ, EI, EI, EA, GA, GA)``, ``χ₀ = (0, 0, 0, 1, 0, 0)``.

The golden values are **the digest's** (40-digit arithmetic), not numbers from the paper (its figures are images).
"(a) literal" evaluates the paper's closed forms (23), (31), (44) as printed (dividing by powers of φ); "(b) robust" is
:mod:`jaxse3.se3` (Taylor-switched coefficients). The switching study uses the k-th order approximations of
:mod:`jaxse3.approx` (for k = 4 the same truncated series, one order beyond the tables).

The computations are functions (:func:`paper_field`, :func:`golden_errors`, :func:`switching_study`,
:func:`energy_check`, :func:`plot_strain_rates`) that the notebook and the tests reuse.
"""

from __future__ import annotations

import argparse
import functools
import os
from types import SimpleNamespace

import jax

jax.config.update("jax_enable_x64", True)  # golden values to 1e-9 and switching errors down to 1e-15

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3 import approx, se3, so3  # noqa: E402
from jaxse3.lie import (  # noqa: E402
    SE3,
    adpoly,
    coefficients,
)
from jaxse3.rod import strain_field as sf  # noqa: E402

L, E, G, AREA, I_SEC = 100.0, 10.0, 0.3, 64.0, 8.0**4 / 12.0  # I = 341.33… mm⁴
#: digest §4.4 stiffness (per unit τ) and reference strain
K_PAPER = np.diag([G * 2 * I_SEC, E * I_SEC, E * I_SEC, E * AREA, G * AREA, G * AREA]) / L
CHI0_PAPER = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0])

#: digest §4.4 golden values: τ -> (X, χ, χ′, χ″)
GOLDEN = {
    0.25: (
        (0.5, 0.353553390593, 0.5, 0.2424864818, 0.0211087052972, -0.0537169409847),
        (-0.295232993173, -1.02101050358, 0.231798280521, 0.995004165278, 0.053940225217, 0.0840069234225),
        (-16.87573716, -4.331403064, -21.80803104, 0.0, 0.0, 0.0),
        (-10.88656543, 10.18793896, 5.815168887, 0.3941265313, 1.194088654, -5.434872896),
    ),
    0.4: (
        (0.293892626146, 0.154508497187, 0.293892626146, 0.371552073632, 0.101302669895, -0.079631853389),
        (-2.56558245674, -1.48941969323, -2.51998512724, 0.99827303978, 0.0488856140585, 0.0325750638685),
        (-10.90217375, -1.693471368, -12.21164155, 0.02986112011, -0.2566931831, -0.5298822232),
        (87.37350024, 19.14971363, 110.7781635, -0.121627316, -5.30828139, 1.024023122),
    ),
    0.5: (
        (0.0, 0.0, 0.0, 0.441417235886, 0.183940261013, -0.0901696020952),
        (-np.pi, -np.pi / 2, -np.pi, 1.0, 0.0, 0.0),
        (0.0, 0.0, 0.0, 0.0, -np.pi / 5, 0.0),
        (124.0251067, 15.50313834, 124.0251067, -0.394784176, 0.0, 7.895683521),
    ),
}
#: digest §4.4: V̄, ∂V̄/∂X (15), ‖∂²V̄/∂X²‖_F, ‖·‖₂ and its diagonal (16) at τ = 0.4
ENERGY_GOLDEN = dict(
    value=152.97960679,
    gradient=(-13.38343762, 108.3298838, -50.44615424, -0.003852235247, -0.02423500595, 0.01821436572),
    hessian_fro=76.00911708,
    hessian_2=55.80499735,
    hessian_diag=(-24.273882, -27.418758, 38.308635, 0.56817928, 11.232736, 2.729066),
)
#: digest §4.4 switching errors ‖χ′ − χ′^[k]‖ at ‖x(τ)‖ = ε, k = 0 … 4
SWITCH_GOLDEN = {1e-2: (1.44, 7.24e-3, 2.18e-5, 4.86e-8, 8.70e-11), 1e-3: (1.43, 7.16e-4, 2.15e-7, 4.78e-11, 8.54e-15)}

# --------------------------------------------------------------------------------------------------------------------
# The prescribed fields


def rotation_vector(tau):
    """x(τ) = ½ (sin 2πτ, cos πτ, sin 2πτ)."""
    s2 = jnp.sin(2 * jnp.pi * tau)
    return 0.5 * jnp.stack([s2, jnp.cos(jnp.pi * tau), s2])


def shear_extension(tau):
    """ρ(τ) = (cos(s/10), sin(s/10) cos s, sin(s/10) sin s), s = sin 2πτ (‖ρ‖ = 1)."""
    s = jnp.sin(2 * jnp.pi * tau)
    return jnp.stack([jnp.cos(s / 10), jnp.sin(s / 10) * jnp.cos(s), jnp.sin(s / 10) * jnp.sin(s)])


_GL = np.polynomial.legendre.leggauss(48)  # r(τ) = ∫₀^τ Rρ: smooth integrand, 48 nodes reach round-off


def _tangent(tau):
    return so3.exp(rotation_vector(tau)) @ shear_extension(tau)


@jax.custom_jvp
def centreline(tau):
    """r(τ) = ∫₀^τ R(s) ρ(s) ds (Gauss–Legendre); custom_jvp r′ = R ρ, so every τ-derivative is exact."""
    s = 0.5 * tau * (jnp.asarray(_GL[0]) + 1.0)
    return 0.5 * tau * jnp.asarray(_GL[1]) @ jax.vmap(_tangent)(s)


@centreline.defjvp
def _centreline_jvp(primals, tangents):
    (tau,), (dtau,) = primals, tangents
    return centreline(tau), _tangent(tau) * dtau


def paper_field(tau):
    """X(τ) = log H(τ) = (x, dexp_x⁻¹ r) (seed 000 §7; x(τ) stays below π, so this is the principal log)."""
    x = rotation_vector(tau)
    return jnp.concatenate([x, so3.dexp_inv_apply(x, centreline(tau))])


def derivatives(tau) -> jnp.ndarray:
    """``(X, X′, X″, X‴)`` at τ, ``(..., 4, 6)``."""
    return sf.field_derivatives(paper_field, tau, 3)


# --------------------------------------------------------------------------------------------------------------------
# Map providers for sf.strain_rates: literal closed forms, k-th order approximations


def _literal_poly(X):
    """The paper's coefficients (23), (31), (44) evaluated literally (dividing by φ², …, φ⁸: 0/0 at x = 0)."""
    b = coefficients._base(jnp.dot(X[:3], X[:3]))
    names = ("a1", "a2", "a3", "a4")
    row = lambda suffix, lead: (lead,) + tuple(coefficients._CLOSED[n + suffix](b) for n in names)
    return adpoly.Poly(row("", 1.0), row("_bar", 0.0), row("_brev", 0.0))


LITERAL = SimpleNamespace(
    dexp=lambda X: adpoly.value(SE3, X, _literal_poly(X)),
    d_dexp=lambda X, U: adpoly.derivative(SE3, X, U, _literal_poly(X)),
    d2_dexp=lambda X, U, S: adpoly.second_derivative(SE3, X, U, S, _literal_poly(X)),
)


def approximation(k: int) -> SimpleNamespace:
    """dexp^[k], D^[k] and D²^[min(k,2)] of seed 000 §6 (Tables 2, 4), for k = 0 … 4 (k = 4 beyond the tables)."""
    if k <= 3:
        return SimpleNamespace(
            dexp=lambda X: approx.dexp(X, k),
            d_dexp=lambda X, U: approx.d_dexp(X, U, k),
            d2_dexp=lambda X, U, S: approx.d2_dexp(X, U, S, min(k, 2)),
        )
    c = approx.DEXP_COEFFICIENTS[: k + 2]
    p = adpoly.Poly(c, (0.0,) * len(c), (0.0,) * len(c))
    return SimpleNamespace(
        dexp=lambda X: approx.dexp(X, k),
        d_dexp=lambda X, U: adpoly.derivative(SE3, X, U, p),
        d2_dexp=lambda X, U, S: approx.d2_dexp(X, U, S, 2),
    )


# --------------------------------------------------------------------------------------------------------------------
# Studies


def rates(tau, maps=se3) -> jnp.ndarray:
    """``(χ, χ′, χ″)`` at τ, ``(..., 3, 6)``."""
    d = derivatives(jnp.asarray(tau, float))
    return sf.strain_rates(d[..., 0, :], d[..., 1, :], d[..., 2, :], d[..., 3, :], maps)


def golden_errors() -> dict:
    """Relative errors ‖computed − golden‖/‖golden‖ of X, χ, χ′, χ″ at τ = 0.25, 0.4, 0.5."""
    taus = np.array(sorted(GOLDEN))
    X, chis = map(np.asarray, jax.jit(lambda t: (jax.vmap(paper_field)(t), rates(t)))(taus))
    out = {}
    for i, tau in enumerate(taus):
        got = [X[i], *chis[i]]
        out[float(tau)] = [float(np.linalg.norm(g - np.array(w)) / np.linalg.norm(w)) for g, w in zip(got, GOLDEN[tau])]
    return out


def switch_point(eps: float, side: float = -1.0) -> float:
    """τ with ‖x(τ)‖ = ε next to τ = 0.5 (bisection in float64 numpy; ``side`` −1: τ < 0.5)."""
    norm = lambda u: 0.5 * np.sqrt(2 * np.sin(2 * np.pi * u) ** 2 + np.sin(np.pi * u) ** 2)  # ‖x(0.5 + u)‖
    lo, hi = 0.0, 0.1
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if norm(mid) > eps else (mid, hi)
    return 0.5 + side * 0.5 * (lo + hi)


@functools.partial(jax.jit, static_argnums=1)
def _switching_errors(tau, orders):
    d = derivatives(tau)
    exact = sf.strain_rates(*d, se3)[1]
    return jnp.stack([jnp.linalg.norm(sf.strain_rates(*d, approximation(k))[1] - exact) for k in orders])


def switching_study(epsilons=(1e-2, 1e-3), orders=(0, 1, 2, 3, 4)) -> dict:
    """‖χ′_exact − χ′^[k]‖ at ‖x(τ)‖ = ε (the paper's Fig. 6 at the switch point), per ε: list over k."""
    return {
        eps: np.asarray(_switching_errors(jnp.asarray(switch_point(eps)), tuple(orders))).tolist() for eps in epsilons
    }


def dexp_series(X, terms: int = 20):
    """Plain dexp_X = Σ ad_X^i/(i+1)! (seed 000 eq. (18)) without custom rules: the autodiff reference."""
    A = SE3.ad(X)
    out = P = jnp.eye(6, dtype=X.dtype)
    for i in range(1, terms):
        P = A @ P / (i + 1)
        out = out + P
    return out


@jax.jit
def _energy_check(tau):
    X, dX = derivatives(tau)[:2]
    K, chi0 = jnp.asarray(K_PAPER), jnp.asarray(CHI0_PAPER)
    v = lambda Y: sf.energy_density(Y, dX, K, chi0)
    plain = lambda Y: 0.5 * (dexp_series(-Y) @ dX - chi0) @ K @ (dexp_series(-Y) @ dX - chi0)
    return dict(
        value=v(X),
        gradient=sf.energy_density_grad(X, dX, K, chi0)[:6],
        hessian=sf.energy_density_hess(X, dX, K, chi0)[:6, :6],
        grad_rules=jax.grad(v)(X),
        hessian_rules=jax.hessian(v)(X),
        grad_plain=jax.grad(plain)(X),
        hessian_plain=jax.hessian(plain)(X),
    )


def energy_check(tau: float = 0.4) -> dict:
    """V̄, ∂V̄/∂X (15) and ∂²V̄/∂X² (16) at τ with X′ fixed: closed forms; ``jax.grad``/``jax.hessian`` of
    :func:`jaxse3.rod.strain_field.energy_density` (through its custom_jvp rules, ``*_rules``) and of the plain energy
    with :func:`dexp_series` (``*_plain``)."""
    out = {k: np.asarray(v) for k, v in _energy_check(jnp.asarray(tau, float)).items()}
    out["value"] = float(out["value"])
    return out


# --------------------------------------------------------------------------------------------------------------------
# Plots


def plot_strain_rates(tau, chis, title, path=None):
    """Six components of χ, χ′, χ″ along τ (``chis``: ``(n, 3, 6)``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 2, figsize=(10, 8), sharex=True)
    labels = ("κ", "ρ")
    for r, name in enumerate(("χ", "χ′", "χ″")):
        for c in range(2):
            ax = axes[r, c]
            for j, comp in enumerate("xyz"):
                ax.plot(tau, chis[:, r, 3 * c + j], lw=1, label=f"{labels[c]}_{comp}")
            ax.set_ylabel(f"{name}: {labels[c]}")
            ax.axvline(0.5, color="grey", lw=0.5, ls=":")
    axes[0, 0].legend(fontsize=7), axes[0, 1].legend(fontsize=7)
    axes[2, 0].set_xlabel("τ"), axes[2, 1].set_xlabel("τ")
    fig.suptitle(title)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig


def plot_switching(study: dict, path=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for eps, errs in study.items():
        ax.semilogy(range(len(errs)), errs, "o-", label=f"ε = {eps:g}")
        ax.semilogy(range(len(errs)), [errs[1] * eps ** (k - 1) for k in range(len(errs))], "k:", lw=0.7)
    ax.set_xlabel("order k"), ax.set_ylabel("‖χ′ − χ′^[k]‖ at ‖x‖ = ε"), ax.legend()
    ax.set_title("switching error ∝ ε^k (dotted)")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(".", "jaxse3-out", "strain_field"))
    ap.add_argument("--n", type=int, default=401, help="uniform τ samples (odd: includes τ = 0.5)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    np.set_printoptions(precision=4, linewidth=140)

    print("golden values (digest §4.4), relative errors of X, χ, χ′, χ″:")
    for tau, errs in golden_errors().items():
        print(f"  τ = {tau:4}: " + "  ".join(f"{e:.1e}" for e in errs))

    print("switching error ‖χ′ − χ′^[k]‖ at ‖x‖ = ε (digest values in brackets):")
    study = switching_study()
    for eps, errs in study.items():
        print(
            f"  ε = {eps:g}: "
            + "  ".join(f"k={k}: {e:.3g} [{g:.3g}]" for k, (e, g) in enumerate(zip(errs, SWITCH_GOLDEN[eps])))
        )
    plot_switching(study, os.path.join(args.out, "switching_error.png"))

    en = energy_check()
    print(f"energy at τ = 0.4: V̄ = {en['value']:.10g} (digest {ENERGY_GOLDEN['value']})")
    print(
        "  ∂V̄/∂X (15):",
        en["gradient"],
        "| rel. err. vs digest",
        f"{np.linalg.norm(en['gradient'] - ENERGY_GOLDEN['gradient']) / np.linalg.norm(ENERGY_GOLDEN['gradient']):.1e}",
        "| vs jax.grad of the plain energy",
        f"{np.abs(en['gradient'] - en['grad_plain']).max():.1e}",
    )
    print(
        f"  ∂²V̄/∂X² (16): ‖·‖_F = {np.linalg.norm(en['hessian']):.10g} (digest {ENERGY_GOLDEN['hessian_fro']}),"
        f" ‖·‖₂ = {np.linalg.norm(en['hessian'], 2):.10g} (digest {ENERGY_GOLDEN['hessian_2']}),"
        f" vs jax.hessian of the plain energy {np.abs(en['hessian'] - en['hessian_plain']).max():.1e}"
    )

    near = 0.5 + np.outer([-1.0, 1.0], np.logspace(-8, -2, 13)).ravel()  # resolve the neighbourhood of x = 0
    tau = np.union1d(np.linspace(0.0, 1.0, args.n), near)
    lit = np.asarray(jax.jit(lambda t: rates(t, LITERAL))(tau))
    rob = np.asarray(jax.jit(rates)(tau))
    bad = ~np.all(np.isfinite(lit), axis=(1, 2)) | (np.abs(lit - rob).max(axis=(1, 2)) > 1e-6 * np.abs(rob).max())
    print(
        f"literal closed forms: {int(bad.sum())} of {tau.size} samples wrong (> 1e-6 relative) or NaN, at τ ∈ "
        f"{np.round(tau[bad], 4).tolist()[:8]}; robust: all finite = {bool(np.isfinite(rob).all())}"
    )
    plot_strain_rates(
        tau,
        lit,
        "(a) literal closed forms (28), (40): artefacts at τ = 0.5",
        os.path.join(args.out, "strain_rates_literal.png"),
    )
    plot_strain_rates(
        tau,
        rob,
        "(b) robust evaluation (Taylor-switched coefficients)",
        os.path.join(args.out, "strain_rates_robust.png"),
    )
    print(f"figures written to {args.out}")


if __name__ == "__main__":
    main()
