"""Rotor inertias (``Model.armature``): they add ``diag(armature)`` to M and ``armature · q̈`` to τ, and every
algorithm and derivative rule sees them. Oracles: the model without armature plus the closed-form terms, autodiff of
the plain forward dynamics (no rules), and central differences in the armature itself. Pinocchio's ``model.armature``
is compared in ``test_pinocchio.py``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rigid
from jaxse3.rigid._forward_dynamics import forward_dynamics as forward_dynamics_plain

BASE = rigid.auto_tree(4, bf=1.5, seed=3)
ARMATURE = np.array([0.3, 0.0, 0.7, 0.2])
MODEL = BASE.with_armature(ARMATURE)


def _state(seed=0):
    rng = np.random.default_rng(seed)
    return (jnp.asarray(rng.normal(size=4)) for _ in range(4))


@jax.jit
def _all(model, q, v, a):
    return (
        rigid.rnea(model, q, v, a),
        rigid.crba(model, q),
        rigid.rnea_derivatives(model, q, v, a),
        rigid.forward_dynamics(model, q, v, a),
        rigid.forward_dynamics_derivatives(model, q, v, a),
    )


def test_armature_adds_to_mass_matrix_and_joint_forces():
    q, v, a, _ = _state()
    tau0, M0, (dq0, dv0, _), _, _ = _all(BASE, q, v, a)
    tau, M, (dq, dv, Md), acc, (fq, _, ftau) = _all(MODEL, q, v, a)
    np.testing.assert_allclose(tau, tau0 + ARMATURE * a, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(M, M0 + np.diag(ARMATURE), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(Md, M, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(dq, dq0, rtol=1e-13, atol=1e-13)  # constant rotor inertias: no q or v terms
    np.testing.assert_allclose(dv, dv0, rtol=1e-13, atol=1e-13)
    # forward dynamics inverts inverse dynamics with the rotor inertias, and its derivatives use the same M
    np.testing.assert_allclose(rigid.rnea(MODEL, q, v, acc), a, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ftau, np.linalg.inv(M), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(fq, -np.linalg.solve(M, rigid.rnea_derivatives(MODEL, q, v, acc)[0]), atol=1e-11)


def test_forward_dynamics_rules_with_armature_match_autodiff():
    """First and second derivatives through the custom rules (IDSVA FO/SO) equal autodiff of the plain map."""
    q, v, tau, w = _state(1)

    def first(fd):
        return jax.jacfwd(lambda x: fd(MODEL, x[:4], x[4:8], x[8:]))(jnp.concatenate([q, v, tau]))

    def second(fd):
        return jax.hessian(lambda x: w @ fd(MODEL, x[:4], x[4:8], x[8:]))(jnp.concatenate([q, v, tau]))

    for order in (first, second):
        ours, ref = jax.jit(lambda: order(rigid.forward_dynamics))(), jax.jit(lambda: order(forward_dynamics_plain))()
        np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())


def test_gradient_with_respect_to_armature_matches_central_differences():
    q, v, tau, w = _state(2)

    @jax.jit
    def f(arm):
        return w @ rigid.forward_dynamics(BASE.with_armature(arm), q, v, tau)

    g = jax.jit(jax.grad(f))(jnp.asarray(ARMATURE))
    h = 1e-6
    fd = [(f(ARMATURE + h * e) - f(ARMATURE - h * e)) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-9)
    assert np.all(np.abs(g) > 1e-6)  # every rotor inertia matters


def test_bad_armature():
    with pytest.raises(ValueError, match=r"armature must have shape \(nv,\) = \(4,\)"):
        BASE.with_armature(np.ones(3))
    with pytest.raises(ValueError, match="armature must be finite and non-negative"):
        BASE.with_armature(-np.ones(4))
