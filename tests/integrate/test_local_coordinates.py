"""Local-coordinate integration (jaxse3.integrate.local_coordinates) with diffrax's implicit solvers.

Oracles: scipy DOP853 on the plain 4×4 matrix ODE (reference solutions of test_rkmk), central finite differences
of the local vector field, and the trace-time rule counter ``jaxse3.lie.rules.RULE_CALLS`` to show that the Newton
Jacobian of the implicit solver runs the custom_jvp rule of ``dexp_inv_apply`` (the closed-form ``D dexp⁻¹``).
"""

from __future__ import annotations

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import pytest

from jaxse3.integrate.group_state import SE3Element, SO3Element
from jaxse3.integrate.local_coordinates import LocalCoordinateField, from_local, solve_recharted, zero_coordinates
from jaxse3.lie.rules import RULE_CALLS
from tests.integrate.test_rkmk import C0, T, orders, reference, twist


def kinematic(t, y, args):
    return twist(t)


def newton_implicit_euler():
    return diffrax.ImplicitEuler(root_finder=optx.Newton(rtol=1e-11, atol=1e-11))


@pytest.mark.parametrize("side", ["spatial", "body"])
def test_local_field_jacobian_matches_finite_differences_and_is_finite_at_zero(side):
    field = LocalCoordinateField(kinematic, "exp", side)
    args = (SE3Element(jnp.asarray(C0)), None)
    jac = jax.jit(jax.jacfwd(lambda th: field(0.3, th, args)))
    theta = np.array([0.4, -0.3, 0.2, 0.1, 0.5, -0.2])
    eps = 1e-6
    fd = np.stack(
        [(field(0.3, theta + eps * e, args) - field(0.3, theta - eps * e, args)) / (2 * eps) for e in np.eye(6)], 1
    )
    np.testing.assert_allclose(jac(jnp.asarray(theta)), fd, atol=1e-8)
    # at Θ = 0 (the start of every chart): D(dexp⁻¹_{±Θ} V)|₀ U = ∓½ ad_U V = ±½ ad_V U
    V = np.asarray(twist(0.3))
    ad_V = np.zeros((6, 6))
    skew = lambda x: np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])
    ad_V[:3, :3] = ad_V[3:, 3:] = skew(V[:3])
    ad_V[3:, :3] = skew(V[3:])
    np.testing.assert_allclose(jac(jnp.zeros(6)), (0.5 if side == "spatial" else -0.5) * ad_V, atol=1e-14)


def test_implicit_newton_jacobian_runs_custom_dexp_inv_rule():
    run = lambda solver: jax.jit(
        lambda C: solve_recharted(kinematic, solver, 0.0, T, SE3Element(C), num_charts=4, steps_per_chart=10)[1].matrix[
            -1
        ]
    )
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    RULE_CALLS.clear()
    explicit = run(diffrax.Euler())(jnp.asarray(C0))
    assert RULE_CALLS["se3.dexp_inv.apply"] == 0  # no differentiation: the rule is not needed
    C_implicit = run(newton_implicit_euler())(jnp.asarray(C0))
    assert RULE_CALLS["se3.dexp_inv.apply"] >= 1  # Newton's Jacobian went through the custom_jvp rule
    ref = reference("spatial")[-1]
    err_implicit = np.max(np.abs(np.asarray(C_implicit) - ref))
    err_explicit = np.max(np.abs(np.asarray(explicit) - ref))
    assert 1e-4 < err_implicit < 0.2 and 1e-4 < err_explicit < 0.2  # both first order at h = 0.05
    # implicit Euler at twice the steps: first order
    C_fine = jax.jit(
        lambda C: solve_recharted(
            kinematic, newton_implicit_euler(), 0.0, T, SE3Element(C), num_charts=4, steps_per_chart=20
        )[1].matrix[-1]
    )(jnp.asarray(C0))
    order = orders(np.array([err_implicit, np.max(np.abs(np.asarray(C_fine) - ref))]))
    assert abs(order[0] - 1) < 0.15, order


def test_kvaerno_adaptive_recharted_cayley_body():
    ts, ys = jax.jit(
        lambda C: solve_recharted(
            kinematic,
            diffrax.Kvaerno3(),
            0.0,
            T,
            SE3Element(C),
            num_charts=4,
            coordinates="cayley",
            side="body",
            stepsize_controller=diffrax.PIDController(rtol=1e-9, atol=1e-9),
        )
    )(jnp.asarray(C0))
    np.testing.assert_allclose(ts, np.linspace(0, T, 5))
    ref = reference("body", tuple(np.linspace(0, T, 5)[1:]))
    np.testing.assert_allclose(ys.matrix[1:], ref, atol=1e-7)
    R = np.asarray(ys.matrix[:, :3, :3])
    np.testing.assert_allclose(np.swapaxes(R, -1, -2) @ R, np.broadcast_to(np.eye(3), R.shape), atol=1e-14)


def test_chart_too_long_raises():
    with pytest.raises(Exception, match="max_angle"):
        jax.block_until_ready(
            solve_recharted(
                kinematic, diffrax.Euler(), 0.0, T, SE3Element(jnp.asarray(C0)), num_charts=1, steps_per_chart=10
            )
        )


def test_zero_coordinates_and_from_local_mixed_state():
    ref = {"a": SE3Element(jnp.broadcast_to(jnp.asarray(C0), (2, 4, 4))), "b": SO3Element(jnp.eye(3)), "v": jnp.ones(4)}
    zero = zero_coordinates(ref)
    assert zero["a"].shape == (2, 6) and zero["b"].shape == (3,) and zero["v"].shape == (4,)
    for side in ("spatial", "body"):
        back = from_local(ref, zero, "cayley", side)
        np.testing.assert_array_equal(back["a"].matrix, ref["a"].matrix)
        np.testing.assert_array_equal(back["v"], ref["v"])
        theta = {"a": jnp.ones((2, 6)) * 0.1, "b": jnp.array([0.0, 0.0, 0.2]), "v": jnp.ones(4)}
        moved = from_local(ref, theta, "exp", side)
        Rz = np.array([[np.cos(0.2), -np.sin(0.2), 0], [np.sin(0.2), np.cos(0.2), 0], [0, 0, 1]])
        np.testing.assert_allclose(moved["b"].matrix, Rz, atol=1e-15)
        np.testing.assert_allclose(moved["v"], 2.0 * np.ones(4))
    with pytest.raises(ValueError, match="side"):
        from_local(ref, zero, "exp", "left")
