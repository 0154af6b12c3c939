"""The package's one Newton (:mod:`jaxse3.integrate.newton`): result codes, termination, the continuation predictor,
and the implicit-function derivative of the root.

Oracles: closed-form roots (x² = a: x = √a, dx/da = 1/(2√a)), central finite differences of the root, and problems
built to fail in each way (no root, a singular matrix, a start outside the region of quadratic convergence).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3.integrate.newton import (
    STALL_FACTOR,
    NewtonResults,
    invert,
    modified_newton,
    newton,
    newton_iterations,
)


def _square(x, a):
    """R = x² − a (elementwise), S = diag(2x)."""
    return x**2 - a, jnp.diag(2 * x)


def _residual_test(tol):
    return lambda x, dx, R: jnp.max(jnp.abs(R)) <= tol


def test_root_first_iterate_and_matrix():
    a = jnp.array([2.0, 9.0])
    sol = newton_iterations(lambda x: _square(x, a), jnp.array([1.0, 1.0]), _residual_test(1e-14), 50)
    assert bool(sol.converged) and sol.result == NewtonResults.successful
    np.testing.assert_allclose(sol.value, jnp.sqrt(a), rtol=1e-15)
    np.testing.assert_allclose(sol.stats["first"], (1.0 + a) / 2, rtol=1e-15)  # x₁ = (x₀ + a/x₀)/2 from x₀ = 1
    # the matrix of the last step was evaluated at the iterate before the returned one, which is √a to round-off
    np.testing.assert_allclose(jnp.diag(sol.stats["matrix"]), 2 * jnp.sqrt(a), rtol=1e-7)


def test_failures_have_their_codes():
    no_root = newton_iterations(lambda x: _square(x, -1.0), jnp.array([0.5]), _residual_test(1e-12), 30)
    assert no_root.result == NewtonResults.nonlinear_max_steps_reached and not bool(no_root.converged)
    assert int(no_root.num_steps) == 30
    singular = newton_iterations(lambda x: _square(x, 1.0), jnp.array([0.0]), _residual_test(1e-12), 30)
    assert singular.result == NewtonResults.singular
    nonfinite = newton_iterations(
        lambda x: (jnp.log(x - 2.0), jnp.ones((1, 1))), jnp.array([1.0]), _residual_test(0), 5
    )
    assert nonfinite.result == NewtonResults.nonfinite
    # x³ − 2x + 2 from x₀ = 0 cycles 0 → 1 → 0: the second update is not shorter than the first
    cubic = lambda x: (x**3 - 2 * x + 2, (3 * x**2 - 2)[..., None])
    cycle = newton_iterations(cubic, jnp.array([0.0]), _residual_test(1e-12), 30, contractive=True)
    assert cycle.result == NewtonResults.nonlinear_divergence and int(cycle.num_steps) == 2
    plain = newton_iterations(cubic, jnp.array([0.0]), _residual_test(1e-12), 30)
    assert plain.result == NewtonResults.nonlinear_max_steps_reached


def test_differentiable_root_matches_closed_form_and_finite_differences():
    def root(a):
        return newton(_square, jnp.ones(2), a, 1e-13, 30).value

    a = jnp.array([2.0, 9.0])
    np.testing.assert_allclose(root(a), jnp.sqrt(a), rtol=1e-15)
    J = jax.jacfwd(root)(a)
    np.testing.assert_allclose(J, jnp.diag(0.5 / jnp.sqrt(a)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(jax.jacrev(root)(a), J, rtol=1e-14)
    eps = 1e-6
    fd = (root(a + eps * jnp.eye(2)[0]) - root(a - eps * jnp.eye(2)[0])) / (2 * eps)
    np.testing.assert_allclose(J[:, 0], fd, rtol=1e-8, atol=1e-12)


def test_newton_counts_updates_before_the_test_and_polishes():
    sol = newton(_square, jnp.array([3.0]), jnp.array([9.0]), 1e-12, 30)
    assert int(sol.num_steps) == 0 and bool(sol.converged)  # the guess is the root: no update was asked for
    failed = newton(_square, jnp.array([0.5]), jnp.array([-1.0]), 1e-12, 7)
    assert int(failed.num_steps) == 7 and failed.result == NewtonResults.nonlinear_max_steps_reached


def test_modified_newton_keeps_and_refreshes_its_inverse():
    a = jnp.array([2.0])
    residual = lambda x, p: x**2 - p
    matrix = lambda x, p: (2 * x)[..., None]
    stale = invert(jnp.array([[2.0]]))  # the matrix at x = 1
    sol = modified_newton(residual, matrix, jnp.array([1.0]), a, stale, 1e-14, 50)
    assert bool(sol.converged)
    np.testing.assert_allclose(sol.value, jnp.sqrt(a), rtol=1e-15)
    assert int(sol.stats["refreshes"]) >= 1  # the chord contracts too slowly from the start: refreshed
    fail = modified_newton(residual, matrix, jnp.array([0.5]), -a, invert(jnp.array([[1.0]])), 1e-12, 5)
    assert fail.result == NewtonResults.nonlinear_max_steps_reached


def test_modified_newton_refresh_evaluates_the_matrix_before_the_first_update():
    """``refresh``: the given inverse only stands in (here of a quarter of the exact matrix of a linear system, whose
    chord iteration converges slowly): the matrix is evaluated at x0 first, so one exact update solves it; without
    ``refresh`` the stand-in's first update is slow and is refreshed only after it; a root at x0 needs neither."""
    A = jnp.array([[4.0, 1.0], [1.0, 3.0]])
    b = jnp.array([1.0, 2.0])
    residual = lambda x, p: A @ x - p
    matrix = lambda x, p: A
    stand_in = invert(A / 4)
    fresh = modified_newton(residual, matrix, jnp.zeros(2), b, stand_in, 1e-13, 20, refresh=jnp.asarray(True))
    assert bool(fresh.converged) and int(fresh.num_steps) == 1 and int(fresh.stats["refreshes"]) == 1
    np.testing.assert_allclose(fresh.value, jnp.linalg.solve(A, b), rtol=1e-14)
    late = modified_newton(residual, matrix, jnp.zeros(2), b, stand_in, 1e-13, 20)
    assert bool(late.converged) and int(late.num_steps) == 2 and int(late.stats["refreshes"]) == 1
    at_root = modified_newton(residual, matrix, jnp.linalg.solve(A, b), b, stand_in, 1e-13, 20, refresh=True)
    assert int(at_root.num_steps) == 0 and int(at_root.stats["refreshes"]) == 0


@pytest.mark.parametrize("rate", [0.3, None])
@pytest.mark.parametrize("tol, converged", [(1e-6, True), (4e-8, True), (1e-8, False)])
def test_modified_newton_accepts_a_stall_at_round_off_within_its_factor(tol, converged, rate):
    """x² − 2 = 0 in float32, where no float32 x gives a residual below 1.19e−7 (at x = fl(√2); its neighbours give
    2.4e−7 and 3.6e−7): at tol = 4e−8 the exact Newton updates (``rate`` 0.3: a refreshed inverse) or the chord
    updates (``rate=None``: the start's inverse throughout) stall at 3 × tol and have converged (STALL_FACTOR = 10);
    at tol = 1e−8 (12 × tol) they run out of updates."""
    assert STALL_FACTOR == 10.0
    f32 = lambda v: jnp.asarray(v, dtype=jnp.float32)
    residual = lambda x, p: x * x - p
    matrix = lambda x, p: jnp.diag(2 * x)
    x0, stale = f32([1.5, 1.3]), invert(f32([[3.0, 0.0], [0.0, 2.6]]))
    sol = modified_newton(residual, matrix, x0, f32([2.0, 2.0]), stale, tol, 30, rate)
    assert sol.value.dtype == jnp.float32 and bool(sol.converged) is converged
    if converged:
        np.testing.assert_array_equal(sol.value, f32(np.sqrt(np.float32(2.0))))  # fl(√2), the best there is
    else:
        assert sol.result == NewtonResults.nonlinear_max_steps_reached and int(sol.num_steps) == 30
