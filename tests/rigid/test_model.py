"""Model construction, builders (fixed-joint merging, autoTree), configuration ⊕/⊖ and kinematics."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rigid
from tests.rigid import reference
from tests.rigid.conftest import jit, model, random_state


def test_auto_tree_featherstone_rules():
    m = rigid.auto_tree(7, bf=2, taper=0.9)
    assert m.parents == (-1, 0, 0, 1, 1, 2, 2)
    assert rigid.auto_tree(4).parents == (-1, 0, 1, 2)
    np.testing.assert_allclose(m.inertias[:, 5, 5], 0.9 ** (3 * np.arange(7)))  # masses taper^(3(i−1))
    np.testing.assert_allclose(m.joint_placements[3, :3, 3], [0.9, 0.0, 0.0])  # xlt(len(parent))
    np.testing.assert_allclose(m.joint_axes, np.tile([0.0, 0, 1, 0, 0, 0], (7, 1)))
    fb = rigid.auto_tree(5, bf=3, joint_types="mixed", floating_base=True, seed=0)
    assert fb.joint_types[0] == "free" and fb.nv == 6 + sum(rigid.joints.NV[t] for t in fb.joint_types[1:])


def test_model_and_builder_errors():
    with pytest.raises(ValueError, match="topological"):
        rigid.Model((-1, 2, 1), ("revolute",) * 3, np.tile(np.eye(4), (3, 1, 1)), np.zeros((3, 6)), np.zeros((3, 6, 6)))
    with pytest.raises(ValueError, match="unknown type 'planar'"):
        rigid.Model((-1,), ("planar",), np.eye(4)[None], np.zeros((1, 6)), np.zeros((1, 6, 6)))
    I = np.array(rigid.spatial_inertia(2.0, np.array([0.1, 0.2, 0.3]), np.eye(3)))
    rigid.Model((-1,), ("revolute",), np.eye(4)[None], np.zeros((1, 6)), I[None])  # accepted
    for broken in (I + np.diag([0, 0, 0, 0, 0, 1e-3]), I + np.eye(6, k=3) * 1e-3, I + np.eye(6, k=1) * 1e-3):
        with pytest.raises(ValueError, match=r"inertias\[0\] \(body 'joint0'\) is not a spatial inertia"):
            rigid.Model((-1,), ("revolute",), np.eye(4)[None], np.zeros((1, 6)), broken[None])
    b = rigid.ModelBuilder()
    b.add_body("a", None, "revolute", mass=1.0)
    with pytest.raises(ValueError, match="unknown parent 'x'"):
        b.add_body("b", "x", "revolute")
    with pytest.raises(ValueError, match="body 'a' added twice"):
        b.add_body("a", None, "revolute")
    with pytest.raises(ValueError, match="joint of body 'c': unsupported joint type 'cylindrical'"):
        b.add_body("c", "a", "cylindrical")


def test_fixed_body_is_merged():
    """A body on a fixed joint weighs exactly like the same body on a revolute joint held at q = v = a = 0."""
    rng = np.random.default_rng(0)
    place = np.eye(4)
    place[:3, 3] = [0.2, -0.1, 0.3]
    place[:3, :3] = np.asarray(
        rigid.joints.quat_to_rotation(np.array([0.8, 0.2, -0.5, 0.3]) / np.linalg.norm([0.8, 0.2, -0.5, 0.3]))
    )
    models = []
    for jtype in ("fixed", "revolute"):
        b = rigid.ModelBuilder()
        b.add_body("base", None, "spherical", mass=2.0, com=(0.1, 0, 0), inertia=np.diag([0.1, 0.2, 0.3]))
        b.add_body(
            "tip",
            "base",
            jtype,
            axis=(0, 1, 0),
            placement=place,
            mass=0.7,
            com=(0.0, 0.1, 0.05),
            inertia=np.diag([0.01, 0.02, 0.015]),
        )
        b.add_body(
            "child",
            "tip",
            "revolute",
            axis=(1, 0, 0),
            placement=place,
            mass=0.3,
            com=(0.1, 0, 0),
            inertia=np.diag([0.01, 0.01, 0.01]),
        )
        models.append(b.build())
    merged, full = models
    assert merged.nb == 2 and full.nb == 3
    q = jnp.concatenate(
        [jnp.array([0.9, 0.1, -0.3, 0.2]) / jnp.linalg.norm(jnp.array([0.9, 0.1, -0.3, 0.2])), jnp.array([0.4])]
    )
    v, a = jnp.asarray(rng.normal(size=4)), jnp.asarray(rng.normal(size=4))
    tau_merged = jit["rnea"](merged, q, v, a)
    insert = lambda x, val: jnp.concatenate([x[:3], jnp.array([val]), x[3:]])
    tau_full = jit["rnea"](full, jnp.concatenate([q[:4], jnp.array([0.0]), q[4:]]), insert(v, 0.0), insert(a, 0.0))
    np.testing.assert_allclose(tau_merged, jnp.concatenate([tau_full[:3], tau_full[4:]]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["spherical", "floating"])
def test_integrate_difference_and_kinematics(name):
    """⊕/⊖ round trip; d/dt of the world poses along q ⊕ t v is the body twist J v (right perturbation); forward
    kinematics equals the reference's 4×4 products; derivatives finite at exactly zero rotation."""
    m = model(name)
    q, v, _, _ = random_state(m, seed=7)
    q1 = jit["integrate"](m, q, v, 0.7)
    np.testing.assert_allclose(jit["difference"](m, q, q1), 0.7 * v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jit["integrate"](m, q, jit["difference"](m, q, q1)), q1, atol=1e-12)
    quats = [q1[m.q_slice(i)][-4:] for i, t in enumerate(m.joint_types) if t in ("spherical", "free")]
    np.testing.assert_allclose([jnp.linalg.norm(x) for x in quats], 1.0, atol=1e-14)

    @jax.jit
    def kin(q, v):
        H, Hdot = jax.jvp(lambda t: rigid.forward_kinematics(m, rigid.integrate(m, q, v, t)), (0.0,), (1.0,))
        twists = jax.vmap(lambda h, hd: jnp.linalg.solve(h, hd))(H, Hdot)
        J = rigid.body_jacobians(m, q)
        jac_int = jax.jacfwd(lambda d: rigid.integrate(m, q, d))(jnp.zeros(m.nv))
        jac_diff = jax.jacfwd(lambda q1: rigid.difference(m, q, q1))(q)
        return H, twists, J, jac_int, jac_diff

    for qq in (q, jit["neutral_configuration"](m)):
        H, twists, J, jac_int, jac_diff = kin(qq, v)
        V = jnp.einsum("bin,n->bi", J, v)
        np.testing.assert_allclose(twists[:, :3, 3], V[:, 3:], atol=1e-12)
        np.testing.assert_allclose(twists[:, 2, 1], V[:, 0], atol=1e-12)
        np.testing.assert_allclose(H, jax.jit(reference.world_poses)(m, qq, jnp.zeros(m.nv)), atol=1e-12)
        # central differences of the configuration along v
        h = 1e-6
        fd = (jit["integrate"](m, qq, v, h) - jit["integrate"](m, qq, v, -h)) / (2 * h)
        np.testing.assert_allclose(jac_int @ v, fd, atol=1e-8)
        assert bool(jnp.all(jnp.isfinite(jac_int))) and bool(jnp.all(jnp.isfinite(jac_diff)))


def test_neutral_and_vmap_batches():
    m = model("floating")
    assert jit["neutral_configuration"](m).shape == (m.nq,)
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    qs = jax.jit(jax.vmap(lambda k: rigid.random_configuration(m, k)))(keys)
    H = jax.jit(jax.vmap(lambda q: rigid.forward_kinematics(m, q)))(qs)
    assert H.shape == (4, m.nb, 4, 4)
    np.testing.assert_allclose(H[2], jit["forward_kinematics"](m, qs[2]), atol=1e-14)
