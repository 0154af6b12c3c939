"""Shared test models and states for jaxse3.rigid (plain functions, cached, so that jitted code is reused)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxse3 import rigid

MODEL_NAMES = ("serial", "branched", "mixed", "spherical", "floating")

# jitted entry points shared by the tests (eager op-by-op dispatch compiles every primitive separately: slow)
jit = {
    name: jax.jit(getattr(rigid, name))
    for name in (
        "rnea",
        "crba",
        "nonlinear_effects",
        "forward_dynamics",
        "integrate",
        "difference",
        "forward_kinematics",
        "body_jacobians",
        "random_configuration",
        "neutral_configuration",
    )
}


def _floating_with_limbs(seed: int = 5) -> rigid.Model:
    """A free-floating torso with three limbs covering every joint type (revolute, prismatic, helical, spherical)."""
    rng = np.random.default_rng(seed)

    def pose():
        quat = rng.normal(size=4)
        H = np.eye(4)
        H[:3, :3] = np.asarray(rigid.joints.quat_to_rotation(quat / np.linalg.norm(quat)))
        H[:3, 3] = 0.3 * rng.normal(size=3)
        return H

    def inertia():
        A = rng.normal(size=(3, 3))
        return {"mass": rng.uniform(0.5, 2.0), "com": 0.1 * rng.normal(size=3), "inertia": 0.05 * (A @ A.T + np.eye(3))}

    b = rigid.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("torso", None, "free", **inertia())
    limbs = [
        ("a", ["revolute", "revolute", "prismatic"]),
        ("b", ["spherical", "revolute"]),
        ("c", ["helical", "revolute"]),
    ]
    for name, types in limbs:
        parent = "torso"
        for k, jtype in enumerate(types):
            child = f"{name}{k}"
            b.add_body(child, parent, jtype, axis=rng.normal(size=3), pitch=0.05, placement=pose(), **inertia())
            parent = child
    b.add_body("a_tool", "a2", "fixed", placement=pose(), **inertia())  # merged into a2
    return b.build()


@functools.cache
def model(name: str) -> rigid.Model:
    """The named test model: serial chain, bf = 2 tree, mixed 1-DoF chain, spherical chain, floating base with limbs."""
    if name == "serial":
        return rigid.auto_tree(5, seed=1)
    if name == "branched":
        return rigid.auto_tree(7, bf=2, seed=2)
    if name == "mixed":
        return rigid.auto_tree(6, joint_types=("revolute", "prismatic", "helical"), seed=3)
    if name == "spherical":
        return rigid.auto_tree(5, bf=1.5, joint_types=("spherical", "revolute"), seed=4)
    if name == "floating":
        return _floating_with_limbs()
    raise KeyError(name)


def random_state(m: rigid.Model, seed: int = 0, batch: int | None = None):
    """Random (q, v, a, f_ext) (q on the manifold, O(1) entries); with ``batch``, stacked along a leading axis."""
    if batch is not None:
        states = [random_state(m, seed + k) for k in range(batch)]
        return tuple(jnp.stack(x) for x in zip(*states))
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    q = jit["random_configuration"](m, k[0], scale=1.5)
    v = jax.random.normal(k[1], (m.nv,))
    a = jax.random.normal(k[2], (m.nv,))
    f = jax.random.normal(k[3], (m.nb, 6))
    return q, v, a, f
