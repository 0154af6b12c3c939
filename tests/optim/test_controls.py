"""Control parameterisations: each kind against its definition (the B-spline against scipy's), end values held
outside the horizon, convex combinations of the knots (bounds on knots bound u), shape errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.interpolate import BSpline

from jaxse3.optim import Controls

RNG = np.random.default_rng(0)
V = RNG.normal(size=(6, 2))
T = 2.0
TIMES = np.concatenate([[0.0, 1e-12, 0.5, 0.6667, 1.0, 1.999, T], RNG.uniform(0, T, 20)])


def test_piecewise_constant_holds_each_knot_on_its_interval():
    c = Controls(V, T, "constant")
    for t in TIMES:
        np.testing.assert_array_equal(c(t), V[min(int(t / T * 6), 5)])


def test_piecewise_linear_interpolates_the_knots():
    c = Controls(V, T, "linear")
    grid = np.linspace(0, T, 6)
    for t in TIMES:
        ref = [np.interp(t, grid, V[:, j]) for j in range(2)]
        np.testing.assert_allclose(c(t), ref, rtol=1e-13, atol=1e-14)


def test_cubic_bspline_equals_scipy_and_is_clamped():
    c = Controls(V, T, "bspline")
    knots = np.concatenate([np.zeros(3), np.linspace(0, T, 4), np.full(3, T)])
    spline = BSpline(knots, V, 3)
    for t in TIMES:
        np.testing.assert_allclose(c(t), spline(min(t, T - 1e-15)), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(c(0.0), V[0], atol=1e-14)
    np.testing.assert_allclose(c(T), V[-1], atol=1e-14)


@pytest.mark.parametrize("kind", ["constant", "linear", "bspline"])
def test_every_kind_is_a_convex_combination_of_the_knots_and_holds_its_ends(kind):
    c = Controls(V, T, kind)
    w = jax.vmap(lambda t: jax.jacfwd(lambda v: Controls(v, T, kind)(t)[0])(jnp.asarray(V))[:, 0])(jnp.asarray(TIMES))
    assert np.all(np.asarray(w) >= -1e-14)
    np.testing.assert_allclose(np.sum(w, axis=1), 1.0, atol=1e-13)
    np.testing.assert_allclose(c(-1.0), c(0.0))
    np.testing.assert_allclose(c(T + 1.0), c(T))
    assert jax.jit(lambda c, t: c(t))(c, 0.3).shape == (2,)  # a pytree: traced through jit


def test_bad_controls_are_named():
    with pytest.raises(ValueError, match="kind must be one of"):
        Controls(V, T, "cubic")
    with pytest.raises(ValueError, match=r"values must have shape \(n, n_inputs\) with n >= 4 for kind 'bspline'"):
        Controls(V[:3], T, "bspline")
    with pytest.raises(ValueError, match="values must have shape"):
        Controls(V[:, 0], T, "linear")
