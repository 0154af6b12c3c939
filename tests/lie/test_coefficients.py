"""The Taylor-switched scalar coefficients: limits, continuity at the switch, bar/breve = derivatives, finiteness."""

import jax
import jax.numpy as jnp
import mpmath as mp
import numpy as np
import pytest

from jaxse3.lie import coefficients as C

# Limits at φ = 0 (digest 000 §2.5, §2.8, §2.10; ă3(0) = +1/1680 is the corrected sign).
LIMITS = {
    "a1": 1 / 2,
    "a2": 1 / 6,
    "a3": 1 / 24,
    "a4": 1 / 120,
    "b2": 1 / 12,
    "b4": -1 / 720,
    "a1_bar": 0.0,
    "a2_bar": 0.0,
    "a3_bar": -1 / 180,
    "a4_bar": -1 / 1260,
    "b2_bar": 0.0,
    "b4_bar": -1 / 7560,
    "a1_brev": -1 / 90,
    "a2_brev": -1 / 630,
    "a3_brev": 1 / 1680,
    "a4_brev": 1 / 15120,
    "b2_brev": -1 / 3780,
    "b4_brev": -1 / 50400,
}

NAMES = [n for n in C.series if n not in ("b1", "b1_bar", "b1_brev")]


def test_limits():
    vals = C.evaluate(list(LIMITS), jnp.array(0.0))
    np.testing.assert_allclose(vals, list(LIMITS.values()), rtol=1e-15, atol=1e-18)


def _mp_closed(name, phi):
    """The paper's closed forms in 80-digit arithmetic (an oracle independent of the Taylor tables)."""
    mp.mp.dps = 80
    p = mp.mpf(phi)
    t = p * p
    a = mp.sin(p) / p
    b = (mp.sin(p / 2) / (p / 2)) ** 2
    d = (1 - a) / t
    g = a / b
    f = {
        "alpha": a,
        "beta": b,
        "gamma": g,
        "delta": d,
        "so3_b2": (1 - g) / t,
        "a1": b - a / 2,
        "a2": (5 * d - b / 2) / 2,
        "a3": (b - a) / (2 * t),
        "a4": (3 * d - b / 2) / (2 * t),
        "b2": (2 - (1 + 3 * a) / (2 * b)) / t,
        "b4": (1 - (1 + a) / (2 * b)) / t**2,
        "a1_bar": b / 4 + (5 * a / 2 - 2 * b - mp.mpf(1) / 2) / t,
        "a2_bar": (7 * b / 4 - a / 2) / t + mp.mpf(15) / 2 * (a - 1) / t**2,
        "b2_bar": (mp.mpf(3) / 4 - 3 * d / (2 * b)) / t + ((a + 3 * a**2) / b**2 - 4) / t**2,
        "b4_bar": (mp.mpf(1) / 4 - d / (2 * b)) / t**2 + ((1 + a) * (a / b**2 + 1 / b) - 4) / t**3,
        "a1_brev": (a / 2 - 7 * b / 4) / t + (mp.mpf(7) / 2 - 23 * a / 2 + 8 * b) / t**2,
        "a2_brev": b / (4 * t) + (5 * a - 43 * b / 4 - mp.mpf(1) / 2) / t**2 + mp.mpf(75) / 2 * (1 - a) / t**3,
        "a3_brev": (a / 2 - 9 * b / 4) / t**2 + (mp.mpf(9) / 2 - 33 * a / 2 + 12 * b) / t**3,
        "a4_brev": b / (4 * t**2) + (6 * a - mp.mpf(1) / 2 - 57 * b / 4) / t**3 + mp.mpf(105) / 2 * (1 - a) / t**4,
        "b2_brev": (16 + 1 / b**2 + (8 / b - mp.mpf(9) / 2) * g - (9 + 4 / b) * g**2 - 12 * g**3 + 9 / (2 * b)) / t**3
        - (mp.mpf(9) / 4 + 3 * g + 1 / (2 * b)) / t**2,
        "b4_brev": (24 - 2 / b - (mp.mpf(15) / 2 + 4 / b) * g - (mp.mpf(11) / 2 + 3 / b) * g**2 - 2 * g**3) / t**4
        - (mp.mpf(11) / 8 + 1 / (4 * b) + g / 2) / t**3,
    }
    f["a3_bar"], f["a4_bar"] = f["a1_bar"] / t, f["a2_bar"] / t
    return float(f[name])


@pytest.mark.parametrize("phi", [1e-3, 0.1, 0.5, 1.0, 2.0, 3.0, 3.3, 4.0, 5.0, 6.0])
@pytest.mark.parametrize("dtype, rtol", [(jnp.float64, 1e-13), (jnp.float32, 1e-5)])
def test_against_multiprecision_closed_forms(phi, dtype, rtol):
    got = np.asarray(C.evaluate(NAMES, jnp.asarray(phi * phi, dtype)), np.float64)
    want = np.array([_mp_closed(n, np.float64(np.asarray(phi * phi, dtype)) ** 0.5) for n in NAMES])
    err = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
    # near 2π the b-family blows up; relative accuracy is what we promise
    assert err.max() < rtol, dict(zip(NAMES, err))


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_continuous_across_switch(dtype):
    t0 = C.threshold(dtype) ** 2
    eps = float(np.finfo(dtype).eps)
    below = np.asarray(C.evaluate(NAMES, jnp.asarray(t0 * (1 - 4 * eps), dtype)), np.float64)
    above = np.asarray(C.evaluate(NAMES, jnp.asarray(t0, dtype)), np.float64)
    np.testing.assert_allclose(below, above, rtol=2e-13 if dtype == jnp.float64 else 2e-5)


@pytest.mark.parametrize("base", ["a1", "a2", "a3", "a4", "b2", "b4"])
@pytest.mark.parametrize("phi", [0.0, 1e-5, 0.8, 2.5, 3.5])
def test_bar_and_breve_are_derivatives(base, phi):
    """c̄ = 2 dc/dt and c̆ = 2 dc̄/dt (autodiff through the evaluator), finite at t = 0."""
    t = jnp.asarray(phi * phi)
    f = lambda name: lambda t: C.evaluate((name,), t)[0]
    np.testing.assert_allclose(2 * jax.grad(f(base))(t), f(base + "_bar")(t), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(2 * jax.grad(f(base + "_bar"))(t), f(base + "_brev")(t), rtol=1e-9, atol=1e-15)
    assert np.isfinite(jax.grad(jax.grad(f(base + "_brev")))(t))
