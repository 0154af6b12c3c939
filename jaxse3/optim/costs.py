"""Cost terms for :class:`~jaxse3.optim.Problem`: plain JAX functions to combine in a running cost
``ℓ(t, q, q̇, u)`` or a terminal cost ``φ(q, q̇)``.

Residuals (vectors, to be squared and weighted) and their halved squared norms:

* :func:`pose_error`: ``log(H_target⁻¹ H)`` (6,), the SE(3) logarithm (twist coordinates, angular first; seed 000
  §3) of the pose relative to its target, zero exactly at the target (Crocoddyl's ``ResidualModelFramePlacement``
  in jaxse3's ordering);
* :func:`tip_position_error`: the tip's world position minus a target (3,);
* :func:`effort`: ½‖u‖²; :func:`state_regularisation`: ½(‖q − q_ref‖² + ‖q̇ − q̇_ref‖²);
* :func:`frame_pose_cost`: ½‖log(H_target⁻¹ H_i(q))‖² of a rigid robot's body frame, with its gradient and Hessian
  in closed form as ``custom_jvp`` rules (what ``jax.hessian`` of a running cost runs in DDP's derivatives).
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from jaxse3 import rigid
from jaxse3.lie import se3
from jaxse3.lie.tangents import accumulate, custom_rule, jvp_of_rest
from jaxse3.sim import System

__all__ = ["pose_error", "tip_position_error", "effort", "state_regularisation", "frame_pose_cost"]


def pose_error(pose: Float[ArrayLike, "4 4"], target: Float[ArrayLike, "4 4"]) -> Float[Array, " 6"]:
    """``log(target⁻¹ · pose)`` (6,): the twist that carries the target onto the pose (zero at the target)."""
    return se3.log(se3.inv(jnp.asarray(target)) @ jnp.asarray(pose))


def tip_position_error(
    system: System, q: Float[ArrayLike, " n_dof"], target: Float[ArrayLike, "3"]
) -> Float[Array, "3"]:
    """World position of ``system``'s tip at ``q`` minus ``target`` (3,)."""
    return system.tip(jnp.asarray(q)) - jnp.asarray(target)


def effort(u: Float[ArrayLike, " n_inputs"]) -> Float[Array, ""]:
    """½‖u‖²."""
    u = jnp.asarray(u)
    return 0.5 * jnp.sum(u * u)


def state_regularisation(
    q: Float[ArrayLike, " n_dof"],
    qd: Float[ArrayLike, " n_dof"],
    q_ref: Float[ArrayLike, " n_dof"] = 0.0,
    qd_ref: Float[ArrayLike, " n_dof"] = 0.0,
) -> Float[Array, ""]:
    """½(‖q − q_ref‖² + ‖q̇ − q̇_ref‖²)."""
    dq, dqd = jnp.asarray(q) - q_ref, jnp.asarray(qd) - qd_ref
    return 0.5 * (jnp.sum(dq * dq) + jnp.sum(dqd * dqd))


def _pose_residual(model: rigid.Model, q: Array, target: Array, body: int) -> Array:
    """r = log(H_target⁻¹ H_body(q)) (6,)."""
    return se3.log(se3.inv(target) @ rigid.forward_kinematics(model, q)[body])


def _cost(model: rigid.Model, q: Array, target: Array, body: int) -> Array:
    """½‖r‖², the value (no rule)."""
    r = _pose_residual(model, q, target, body)
    return 0.5 * r @ r


def _cost_gradient(model: rigid.Model, q: Array, target: Array, body: int) -> Array:
    """∇_q ½‖r‖² = Jᵀ dexp⁻ᵀ_{−r} r: a body twist ε moves r by dexp⁻¹_{−r} ε (the log's rule dX = dexp_X⁻¹ Ad_{exp X}
    ε, and dexp_X⁻¹ Ad_{exp X} = dexp_{−X}⁻¹; seed 000 eqs. (21)–(22))."""
    r, J = _pose_residual(model, q, target, body), rigid.body_jacobians(model, q)[body]
    return J.T @ se3.dexp_invT_apply(-r, r)


def _cost_hessian(model: rigid.Model, q: Array, target: Array, body: int, after: np.ndarray) -> Array:
    """∇²_q ½‖r‖² = Jᵀ W A J + C, A = dexp⁻¹_{−r}, W = Aᵀ − ∂_X(dexp_X⁻ᵀ r)|_{X=−r} (the derivative of w = Aᵀ r along
    dr; seed 000 eq. (39)), and C_ab = wᵀ ad_{J_a} J_b where joint b lies between joint a and the body (``after``):
    the body Jacobian's own derivative ∂J_a/∂q_b = ad_{J_a} J_b."""
    r, J = _pose_residual(model, q, target, body), rigid.body_jacobians(model, q)[body]
    A = se3.dexp_inv(-r)
    w = A.T @ r
    W = A.T - se3.dexp_invT_jac(-r, r)
    C = jnp.einsum("i,aij,jb->ab", w, se3.ad(J.T), J) * after
    H = J.T @ W @ A @ J + C
    return 0.5 * (H + H.T)  # symmetric in exact arithmetic: drop the round-off asymmetry


@functools.cache
def _frame_rules(model_structure: tuple, body: int):
    """The cost and its gradient as custom_jvp functions of (model, q, target) for one body of one tree structure
    (cached: one pair per structure and body): the cost's JVP is ∇·dq, the gradient's ∇²·dq, each in closed form,
    so ``jax.grad`` and ``jax.hessian`` run them; derivatives along the model's or the target's arrays by autodiff."""
    parents, types, v_index = model_structure
    path = [body]
    while parents[path[-1]] >= 0:
        path.append(parents[path[-1]])
    nv = sum(rigid.joints.NV[t] for t in types)
    after = np.zeros((nv, nv))
    for k, a in enumerate(path):  # joint b strictly between joint a and the body: b is a descendant of a on the path
        for b in path[:k]:
            after[v_index[a], v_index[b]] = 1.0

    def cost(model, q, target):
        return _cost(model, q, target, body)

    def grad_plain(model, q, target):
        return _cost_gradient(model, q, target, body)

    def grad_jvp(primals, tangents):
        model, q, target = primals
        rest = jvp_of_rest(grad_plain, primals, tangents, analytic=(1,))
        value = grad_plain(model, q, target)
        return value, accumulate(value, [(_cost_hessian(model, q, target, body, after), tangents[1])], rest)

    grad = custom_rule("frame_pose_cost.gradient", grad_plain, grad_jvp)

    def cost_jvp(primals, tangents):
        rest = jvp_of_rest(cost, primals, tangents, analytic=(1,))
        value = cost(*primals)
        return value, accumulate(value, [(grad(*primals), tangents[1])], rest)

    return custom_rule("frame_pose_cost", cost, cost_jvp)


def frame_pose_cost(
    model: rigid.Model, q: Float[ArrayLike, " nq"], body: int | str, target: Float[ArrayLike, "4 4"]
) -> Float[Array, ""]:
    """½‖log(H_target⁻¹ H_body(q))‖²: the squared SE(3)-log distance of a rigid robot's body frame to its target
    (Crocoddyl's ``ResidualModelFramePlacement`` with a quadratic activation, twist ordering angular first).

    For a path of one-DoF joints (revolute, prismatic, helical) from the root to ``body`` the gradient and the Hessian
    in ``q`` are closed forms registered as ``custom_jvp`` rules (:func:`_cost_hessian`): ``jax.grad``,
    ``jax.hessian`` and DDP's derivatives of a cost that calls this function run them (4× faster than autodiff through
    forward kinematics and the logarithm for the Talos arm, ``benchmarks/optim.py``). Other paths (spherical or free
    joints) are differentiated by autodiff.

    Args:
        model: a :class:`jaxse3.rigid.Model`.
        q: its configuration (nq,).
        body: the body's index or its joint's name (:attr:`jaxse3.rigid.Model.names`).
        target: the target pose (4, 4).
    """
    if isinstance(body, str):
        if body not in model.names:
            raise ValueError(
                f"frame_pose_cost: 'body' {body!r} is not a joint of the model; joints: {list(model.names)}"
            )
        body = model.names.index(body)
    if not 0 <= int(body) < model.nb:
        raise ValueError(f"frame_pose_cost: 'body' must be in [0, {model.nb}), got {body}")
    body = int(body)
    q, target = jnp.asarray(q), jnp.asarray(target, dtype=jnp.result_type(float, q))
    if target.shape != (4, 4):
        raise ValueError(f"frame_pose_cost: 'target' must be a pose (4, 4), got shape {target.shape}")
    path, i = [], body
    while i >= 0:
        path.append(model.joint_types[i])
        i = model.parents[i]
    if any(rigid.joints.NV[t] != 1 for t in path):  # the closed form assumes constant one-DoF joint axes
        return _cost(model, q, target, body)
    return _frame_rules((model.parents, model.joint_types, model.v_index), body)(model, q, target)
