"""Cost terms for :class:`~jaxse3.optim.Problem`: plain JAX functions to combine in a running cost
``ℓ(t, q, q̇, u)`` or a terminal cost ``φ(q, q̇)``.

Residuals (vectors, to be squared and weighted) and their halved squared norms:

* :func:`pose_error`: ``log(H_target⁻¹ H)`` (6,), the SE(3) logarithm (twist coordinates, angular first; seed 000
  §3) of the pose relative to its target, zero exactly at the target (Crocoddyl's ``ResidualModelFramePlacement``
  in jaxse3's ordering);
* :func:`tip_position_error`: the tip's world position minus a target (3,);
* :func:`effort`: ½‖u‖²; :func:`state_regularisation`: ½(‖q − q_ref‖² + ‖q̇ − q̇_ref‖²).
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from jaxse3.lie import se3
from jaxse3.sim import System

__all__ = ["pose_error", "tip_position_error", "effort", "state_regularisation"]


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
