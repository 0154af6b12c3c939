"""``costs.frame_pose_cost``: its closed-form gradient and Hessian rules against central differences and against
autodiff of a plain reference (forward kinematics and the SE(3) log), at random configurations, at zero residual and
at residual rotations from 1e−6 rad to near π, on a serial chain, a branched tree (the other branch's joints do not
move the frame) and a chain of revolute, prismatic and helical joints; under jit and vmap; the rules are what
``jax.hessian`` runs; a floating base falls back to autodiff; bad input is refused by name."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rigid
from jaxse3.lie import se3
from jaxse3.lie.tangents import RULE_CALLS
from jaxse3.optim import costs

MODELS = {
    "chain": rigid.auto_tree(5, seed=1),
    "branched": rigid.auto_tree(7, bf=2, seed=2),
    "prismatic-helical": rigid.auto_tree(6, joint_types=("revolute", "prismatic", "helical"), seed=3),
}
#: rotation angle of the residual log(target⁻¹ H): exactly zero, tiny, moderate, near π
ANGLES = (0.0, 1e-6, 1.0, 3.0)


def reference(model, q, body, target):
    """½‖log(target⁻¹ H_body(q))‖² through forward kinematics and the SE(3) log (no cost rule)."""
    r = se3.log(se3.inv(target) @ rigid.forward_kinematics(model, q)[body])
    return 0.5 * r @ r


def target_at(model, q, body, angle, rng):
    """A target whose residual at q has rotation angle ``angle`` (and a translation unless the angle is zero)."""
    axis = rng.normal(size=3)
    twist = np.concatenate([angle * axis / np.linalg.norm(axis), 0.1 * rng.normal(size=3) if angle else np.zeros(3)])
    return _target(model, q, body, jnp.asarray(twist))


@jax.jit(static_argnums=2)
def _target(model, q, body, twist):
    return rigid.forward_kinematics(model, q)[body] @ se3.exp(-twist)


def central_jacobian(f, q, eps=1e-6):
    cols = [(f(q + eps * e) - f(q - eps * e)) / (2 * eps) for e in np.eye(q.shape[0])]
    return np.stack([np.asarray(c) for c in cols], axis=-1)


@pytest.mark.parametrize("name", MODELS)
def test_gradient_and_hessian_against_autodiff_and_central_differences(name):
    model = MODELS[name]
    body = model.nb - 1  # a leaf (in the branched tree: one branch)
    rng = np.random.default_rng(7)
    cost = jax.jit(lambda q, T: costs.frame_pose_cost(model, q, body, T))
    grad = jax.jit(jax.grad(lambda q, T: costs.frame_pose_cost(model, q, body, T)))
    hess = jax.jit(jax.hessian(lambda q, T: costs.frame_pose_cost(model, q, body, T)))
    ref_grad = jax.jit(jax.grad(lambda q, T: reference(model, q, body, T)))
    ref_hess = jax.jit(jax.hessian(lambda q, T: reference(model, q, body, T)))
    ref = jax.jit(lambda q, T: reference(model, q, body, T))
    for angle in ANGLES:
        q = jnp.asarray(rng.normal(size=model.nq))
        T = target_at(model, q, body, angle, rng)
        assert abs(float(cost(q, T) - ref(q, T))) <= 1e-14 * (1 + float(cost(q, T)))
        g, H = grad(q, T), hess(q, T)
        scale = 1.0 + float(jnp.max(jnp.abs(ref_hess(q, T))))
        np.testing.assert_allclose(g, ref_grad(q, T), atol=1e-13 * scale)
        np.testing.assert_allclose(H, ref_hess(q, T), atol=1e-12 * scale)
        np.testing.assert_allclose(H, central_jacobian(lambda x: grad(x, T), q), atol=1e-7 * scale)
        np.testing.assert_allclose(g, central_jacobian(lambda x: cost(x, T)[None], q)[0], atol=1e-7 * scale)
        if angle == 0.0:
            assert float(jnp.max(jnp.abs(g))) < 1e-12  # a minimum: J^T W A J is the Gauss–Newton term alone
    if name == "branched":  # the joints off the frame's path do not move it: zero rows and columns
        path, i = set(), body
        while i >= 0:
            path.add(i)
            i = model.parents[i]
        off = [model.v_index[i] for i in range(model.nb) if i not in path]
        assert off and float(jnp.max(jnp.abs(H[np.array(off)]))) == 0.0


def test_rules_run_under_hessian_jit_and_vmap():
    model = MODELS["chain"]
    body = 3
    rng = np.random.default_rng(3)
    qs = jnp.asarray(rng.normal(size=(4, model.nq)))
    T = target_at(model, qs[0], body, 0.5, rng)
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = RULE_CALLS["frame_pose_cost.gradient"]
    H = jax.jit(jax.vmap(jax.hessian(lambda q: costs.frame_pose_cost(model, q, body, T))))(qs)
    assert RULE_CALLS["frame_pose_cost.gradient"] > before  # the closed-form Hessian rule was traced
    ref = jax.jit(jax.vmap(jax.hessian(lambda q: reference(model, q, body, T))))(qs)
    np.testing.assert_allclose(H, ref, atol=1e-12 * (1 + float(jnp.max(jnp.abs(ref)))))
    # derivatives along the target (autodiff of the rest) agree too
    dT = jax.jit(jax.grad(lambda T: costs.frame_pose_cost(model, qs[1], body, T)))(T)
    np.testing.assert_allclose(dT, jax.jit(jax.grad(lambda T: reference(model, qs[1], body, T)))(T), atol=1e-13)


def test_floating_base_falls_back_to_autodiff_and_names_work():
    model = rigid.auto_tree(3, floating_base=True, seed=1)
    q = rigid.neutral_configuration(model)
    T = jnp.eye(4).at[:3, 3].set(jnp.array([0.3, -0.2, 0.1]))
    H = jax.jit(jax.hessian(lambda q: costs.frame_pose_cost(model, q, 2, T)))(q)
    np.testing.assert_allclose(H, jax.jit(jax.hessian(lambda q: reference(model, q, 2, T)))(q), atol=1e-12)
    chain = MODELS["chain"]
    q = jnp.zeros(chain.nq)
    cost = jax.jit(costs.frame_pose_cost, static_argnums=2)
    assert float(cost(chain, q, chain.names[2], T)) == float(cost(chain, q, 2, T))


@pytest.mark.parametrize(
    "body, target, match",
    [
        ("nowhere", np.eye(4), "'body' 'nowhere' is not a joint"),
        (9, np.eye(4), r"'body' must be in \[0, 5\)"),
        (1, np.eye(3), r"'target' must be a pose \(4, 4\)"),
    ],
)
def test_bad_input(body, target, match):
    model = MODELS["chain"]
    with pytest.raises(ValueError, match=match):
        costs.frame_pose_cost(model, jnp.zeros(model.nq), body, target)
