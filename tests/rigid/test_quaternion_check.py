"""Configurations whose spherical/free-joint quaternions are not unit are rejected at run time (``eqx.error_if``, so
also under ``jit``, ``vmap`` and autodiff) by every public function that takes q, naming q and the joint; unit
quaternions give the same numbers as the unchecked core."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rigid
from jaxse3.rigid._rules import _rnea_differentiable
from tests.rigid import conftest

ERRORS = Exception  # the type depends on eager/jit and the backend; the messages are matched

ENTRY_POINTS = {
    "rnea": lambda m, q, v, a, f: rigid.rnea(m, q, v, a, f),
    "rnea_derivatives": lambda m, q, v, a, f: rigid.rnea_derivatives(m, q, v, a, f),
    "rnea_second_order_derivatives": lambda m, q, v, a, f: rigid.rnea_second_order_derivatives(m, q, v, a),
    "crba": lambda m, q, v, a, f: rigid.crba(m, q),
    "nonlinear_effects": lambda m, q, v, a, f: rigid.nonlinear_effects(m, q, v),
    "forward_dynamics": lambda m, q, v, a, f: rigid.forward_dynamics(m, q, v, a, f),
    "forward_dynamics_derivatives": lambda m, q, v, a, f: rigid.forward_dynamics_derivatives(m, q, v, a, f),
    "forward_kinematics": lambda m, q, v, a, f: rigid.forward_kinematics(m, q),
    "body_jacobians": lambda m, q, v, a, f: rigid.body_jacobians(m, q),
    "integrate": lambda m, q, v, a, f: rigid.integrate(m, q, v),
}


@functools.cache
def _model() -> rigid.Model:
    """A free joint 'torso' (q[3:7]), a spherical joint 'b0' (q[7:11]) and a revolute joint: small, quick to compile."""
    b = rigid.ModelBuilder()
    pose = np.eye(4)
    pose[:3, 3] = (0.1, 0.2, 0.3)
    inertia = {"mass": 1.0, "com": (0.05, 0.0, 0.1), "inertia": np.diag([0.1, 0.2, 0.3])}
    b.add_body("torso", None, "free", **inertia)
    b.add_body("b0", "torso", "spherical", placement=pose, **inertia)
    b.add_body("b1", "b0", "revolute", axis=(0.0, 1.0, 0.0), placement=pose, **inertia)
    return b.build()


def _state():
    m = _model()
    return m, conftest.random_state(m, seed=2)


def _compiled(f, *args):
    """``jax.jit(f)`` compiled for ``args`` with XLA's cheap CPU options (these tests check values, not speed)."""
    return jax.jit(f).lower(*args).compile()


def _quaternion(m, joint):
    i = m.names.index(joint)
    start = m.q_index[i] + (3 if m.joint_types[i] == "free" else 0)
    return slice(start, start + 4)


@pytest.mark.parametrize("fname", list(ENTRY_POINTS))
def test_zero_quaternion_is_rejected_under_jit(fname):
    m, (q, v, a, f) = _state()
    s = _quaternion(m, "torso")
    f_jit = _compiled(ENTRY_POINTS[fname], m, q, v, a, f)
    jax.block_until_ready(f_jit(m, q, v, a, f))  # unit quaternions: fine
    message = f"{fname}: q[{s.start}:{s.stop}], the quaternion (w, x, y, z) of free joint 'torso'"
    with pytest.raises(ERRORS, match=re.escape(message)):
        jax.block_until_ready(f_jit(m, q.at[s].set(0.0), v, a, f))


def test_spherical_joint_eager_vmap_and_tolerance():
    m, (q, v, a, f) = _state()
    s = _quaternion(m, "b0")
    with pytest.raises(
        ERRORS,
        match=re.escape(
            f"rnea: q[{s.start}:{s.stop}], the quaternion (w, x, y, z) of spherical joint 'b0', does not have unit norm"
        ),
    ):
        rigid.rnea(m, q.at[s].multiply(1.001), v, a, f)
    batched = _compiled(jax.vmap(lambda q: rigid.rnea(m, q, v, a, f)), jnp.stack([q, q]))
    with pytest.raises(ERRORS, match="quaternion"):  # one bad configuration in a batch
        jax.block_until_ready(batched(jnp.stack([q, q.at[s].set(jnp.nan)])))
    # float64 tolerance 1e-6 on the norm
    jax.block_until_ready(batched(jnp.stack([q, q.at[s].multiply(1 + 1e-7)])))
    with pytest.raises(ERRORS, match="quaternion"):
        jax.block_until_ready(batched(jnp.stack([q, q.at[s].multiply(1 + 1e-5)])))


def test_difference_names_its_argument():
    m, (q, *_) = _state()
    s = _quaternion(m, "torso")
    with pytest.raises(ERRORS, match=re.escape(f"difference: q1[{s.start}:{s.stop}], the quaternion")):
        jax.block_until_ready(_compiled(rigid.difference, m, q, q)(m, q, q.at[s].set(0.0)))


def test_check_changes_no_number_nor_derivative():
    m, (q, v, a, f) = _state()
    unchecked = _rnea_differentiable  # rigid.rnea without the checks (same custom_jvp rule)
    np.testing.assert_array_equal(
        _compiled(rigid.rnea, m, q, v, a, f)(m, q, v, a, f), _compiled(unchecked, m, q, v, a, f)(m, q, v, a, f)
    )
    grad = _compiled(jax.grad(lambda q: rigid.rnea(m, q, v, a, f) @ v), q)(q)
    ref = _compiled(jax.grad(lambda q: unchecked(m, q, v, a, f) @ v), q)(q)
    np.testing.assert_allclose(grad, ref, rtol=1e-12, atol=1e-12 * float(jnp.abs(ref).max()))
    jac = _compiled(jax.jacfwd(lambda q: rigid.forward_kinematics(m, q)), q)(q)
    assert jac.shape == (m.nb, 4, 4, m.nq) and bool(jnp.all(jnp.isfinite(jac)))
