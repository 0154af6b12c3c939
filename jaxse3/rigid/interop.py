"""Conversions between jaxse3 and Pinocchio state conventions (pure numpy; the only place that knows Pinocchio's).

| joint | jaxse3 | Pinocchio |
|---|---|---|
| free, q | position (3), quaternion (w, x, y, z) | position (3), quaternion (x, y, z, w) |
| free, v / a / τ | body twist (ω, v) / wrench (moment, force), child frame | (v, ω) / (force, moment), local frame |
| spherical, q | quaternion (w, x, y, z) | quaternion (x, y, z, w) |
| spherical, v / a / τ, and 1-DoF joints | identical | identical |

Both libraries retract free and spherical joints by the right perturbation ``q·exp(δ̂)`` (Pinocchio's ``integrate``
uses exp6 on the free flyer), so tangent-space quantities differ only by the permutation :func:`velocity_permutation`:
``M_pin = M[p][:, p]``, ``dtau_dq_pin = dtau_dq[p][:, p]``. Joint order: :func:`jaxse3.rigid.from_urdf` numbers bodies
as Pinocchio does (depth-first, children by joint name); the continuous joints of Pinocchio (``JointModelRUB*``, two
entries cos/sin in q) are not covered here: models with them need their q converted by angle. External wrenches:
``f_ext`` (nb, 6) (moment, force) in each body frame ↔ Pinocchio's per-joint local ``Force`` (linear, angular).
"""

from __future__ import annotations

import numpy as np
from jaxtyping import ArrayLike, Float, Int

from jaxse3.rigid._model import Model

__all__ = ["to_pinocchio", "from_pinocchio", "velocity_permutation", "wrenches_to_pinocchio"]


def velocity_permutation(model: Model) -> Int[np.ndarray, " nv"]:
    """Index array p with ``x_pin = x[p]`` for any tangent/velocity/force vector x (nv,) of ``model``."""
    perm = np.arange(model.nv)
    for i, t in enumerate(model.joint_types):
        if t == "free":
            s = model.v_index[i]
            perm[s : s + 6] = np.r_[s + 3 : s + 6, s : s + 3]
    return perm


def _config_permutation(model, to_pin: bool) -> np.ndarray:
    perm = np.arange(model.nq)
    for i, t in enumerate(model.joint_types):
        if t in ("spherical", "free"):
            s = model.q_index[i] + (3 if t == "free" else 0)  # start of the quaternion
            perm[s : s + 4] = np.r_[s + 1 : s + 4, s] if to_pin else np.r_[s + 3, s : s + 3]
    return perm


def _convert(model, q, v, a, to_pin: bool):
    q = np.asarray(q, dtype=float)[..., _config_permutation(model, to_pin)]
    p = velocity_permutation(model)
    if not to_pin:
        p = np.argsort(p)
    conv = [None if x is None else np.asarray(x, dtype=float)[..., p] for x in (v, a)]
    return q, conv[0], conv[1]


def to_pinocchio(
    model: Model,
    q: Float[ArrayLike, "... nq"],
    v: Float[ArrayLike, "... nv"] | None = None,
    a: Float[ArrayLike, "... nv"] | None = None,
) -> tuple[Float[np.ndarray, "... nq"], Float[np.ndarray, "... nv"] | None, Float[np.ndarray, "... nv"] | None]:
    """(q, v, a) in Pinocchio's conventions (None stays None); also converts τ passed as ``v`` or ``a``."""
    return _convert(model, q, v, a, True)


def from_pinocchio(
    model: Model,
    q: Float[ArrayLike, "... nq"],
    v: Float[ArrayLike, "... nv"] | None = None,
    a: Float[ArrayLike, "... nv"] | None = None,
) -> tuple[Float[np.ndarray, "... nq"], Float[np.ndarray, "... nv"] | None, Float[np.ndarray, "... nv"] | None]:
    """(q, v, a) from Pinocchio's conventions to jaxse3's (None stays None); also converts τ passed as ``v``/``a``."""
    return _convert(model, q, v, a, False)


def wrenches_to_pinocchio(f_ext: Float[ArrayLike, "... 6"]) -> Float[np.ndarray, "... 6"]:
    """(nb, 6) wrenches (moment, force) → (nb, 6) rows (linear, angular), one ``pin.Force`` per joint after index 0."""
    f_ext = np.asarray(f_ext, dtype=float)
    return np.concatenate([f_ext[..., 3:], f_ext[..., :3]], axis=-1)
