"""Linkages of rigid and soft links (seed 003 §5): one vocabulary for both.

Oracles: a rigid-only linkage against :mod:`jaxse3.rigid` (RNEA, CRBA; a mixed tree with a floating base), a one-rod
linkage against :mod:`jaxse3.rod` (ID, M, forward dynamics of the CDM), and a branched hybrid linkage (rods on moving
rigid links, rigid links on a rod's tip) against Lagrange's equations written here from its forward kinematics alone:
T = ½ Σ_k η_kᵀ𝓜_kη_k with η_k = (g_k⁻¹ġ_k)^∨ by autodiff of the poses, V = −Σ_k m_k a_g · c_k, ID = d/dt ∂L/∂q̇ −
∂L/∂q. Derivatives of the plain recursion against central differences, at the straight rest state and at random
states.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk, rigid, rod, se3
from jaxse3.lie.tangents import RULE_CALLS
from jaxse3.linkage._dynamics import inverse_dynamics_and_mass
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material


def _pose(R=None, p=(0.0, 0.0, 0.0)):
    return se3.from_rotation_translation(jnp.eye(3) if R is None else jnp.asarray(R), jnp.asarray(p, float))


def _rot(axis, angle):
    return se3.exp(jnp.concatenate([angle * jnp.asarray(axis, float), jnp.zeros(3)]))[:3, :3]


def _rod(length, orders=(1, 1, 1, None, None, None)):
    return rod.Rod(
        length=length,
        section=CircularSection(0.02, 0.012),
        material=Material(E=2e5, rho=1000.0, nu=0.5, damping=50.0),
        basis=LegendreBasis(orders),
        n_gauss=3,
    )


def _hybrid():
    """A branched hybrid linkage: two revolute links, a rod on each (one branching off the base link), a fixed rigid
    hook and a revolute finger on the first rod's tip."""
    body = lambda m, c: rigid.spatial_inertia(m, c, np.diag([2e-3, 3e-3, 1.5e-3]) * m)
    links = [
        lk.Link.rigid("shoulder", None, "revolute", body(1.2, (0.02, 0.01, 0.1)), axis=(0, 0, 1, 0, 0, 0)),
        lk.Link.rigid(
            "elbow", "shoulder", "revolute", body(0.8, (0.1, 0, 0.01)), _pose(p=(0, 0, 0.2)), (0, 1, 0, 0, 0, 0)
        ),
        lk.Link.soft("arm", "elbow", _rod(0.3), _pose(_rot((0, 1, 0), 0.4), (0.15, 0, 0))),
        lk.Link.rigid("hook", "arm", "fixed", body(0.1, (0.01, 0, 0)), _pose(p=(0.01, 0, 0))),
        lk.Link.rigid(
            "finger", "hook", "revolute", body(0.05, (0.03, 0, 0)), _pose(_rot((1, 0, 0), 0.3)), (0, 0, 1, 0, 0, 0)
        ),
        lk.Link.soft(
            "branch", "shoulder", _rod(0.2, (1, None, 1, None, None, None)), _pose(_rot((0, 0, 1), 2.0), (0, 0, 0.05))
        ),
    ]
    return lk.Linkage(links, gravity=(0.3, -0.2, -9.81), armature=np.linspace(0.0, 0.01, 2 + 6 + 1 + 4))


HYBRID = _hybrid()


def _lagrangian_id(linkage, q, qd, qdd):
    """Lagrange's equations from the forward kinematics alone (module docstring)."""
    M = lk.point_states(linkage, q).M  # constant screw inertias of the points
    mass = M[:, 3, 3]
    com = jnp.stack([M[:, 2, 4], M[:, 0, 5], M[:, 1, 3]], axis=-1) / jnp.maximum(mass, 1e-300)[:, None]

    def kinetic(q, qd):
        g, gd = jax.jvp(lambda q: lk.forward_kinematics(linkage, q), (q,), (qd,))
        eta = jax.vmap(lambda g, gd: se3.vee(se3.inv(g) @ gd))(g, gd)
        return 0.5 * jnp.einsum("ki,kij,kj->", eta, M, eta) + 0.5 * jnp.sum(linkage.armature * qd**2)

    def potential(q):
        g = lk.forward_kinematics(linkage, q)
        c = jnp.einsum("kij,kj->ki", g[:, :3, :3], com) + g[:, :3, 3]
        return -jnp.sum(mass * (c @ linkage.gravity))

    p = lambda q, qd: jax.grad(kinetic, argnums=1)(q, qd)
    H = jax.jacfwd(p, argnums=1)(q, qd)
    C = jax.jacfwd(p, argnums=0)(q, qd)
    return H @ qdd + C @ qd - jax.grad(kinetic)(q, qd) + jax.grad(potential)(q)


def _random_state(linkage, seed, scale=0.6):
    k = jax.random.split(jax.random.PRNGKey(seed), 3)
    return tuple(scale * jax.random.normal(key, (n,)) for key, n in zip(k, (linkage.nq, linkage.nv, linkage.nv)))


def test_rigid_only_linkage_equals_rigid_rnea_and_crba_on_a_floating_mixed_tree():
    """Free base, prismatic, helical, spherical and revolute joints, armature: the linkage's own recursions (the plain
    pass and the derivative pass, which hybrid linkages run) give τ, M, ∂τ/∂q and ∂τ/∂q̇ equal to jaxse3.rigid's (RNEA,
    CRBA, IDSVA)."""
    types = ("free", "prismatic", "helical", "spherical", "revolute", "revolute", "revolute")
    model = rigid.auto_tree(7, bf=1.5, joint_types=types, floating_base=True, seed=1)
    model = model.with_armature(np.linspace(0.0, 0.1, model.nv))
    linkage = lk.Linkage.from_rigid(model)
    assert (linkage.nq, linkage.nv, linkage.n_inputs) == (model.nq, model.nv, 5)  # the 1-DoF joints are actuated
    fn = jax.jit(
        lambda q, v, a: (
            lk.inverse_dynamics_autodiff(linkage, q, v, a),
            lk.mass_matrix(linkage, q),
            lk.tree_derivatives(linkage, q, v, a),
        )
    )
    reference = jax.jit(
        lambda q, v, a: (rigid.rnea(model, q, v, a), rigid.crba(model, q), *rigid.rnea_derivatives(model, q, v, a)[:2])
    )
    for seed in range(3):
        q = rigid.random_configuration(model, jax.random.PRNGKey(seed))
        _, v, a = _random_state(linkage, seed, 1.0)
        (tau, M, r), (tau_ref, M_ref, dq, dv) = fn(q, v, a), reference(q, v, a)
        np.testing.assert_allclose(tau, tau_ref, rtol=1e-12, atol=1e-11)
        np.testing.assert_allclose(M, M_ref, rtol=1e-12, atol=1e-13)
        # free and spherical joints: tangent-space derivatives at fixed body velocities, as IDSVA's
        np.testing.assert_allclose(r.dq, dq, rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(r.dqd, dv, rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(r.tau, tau, rtol=1e-12, atol=1e-11)


def test_a_rigid_only_linkage_runs_on_jaxse3_rigid():
    """A rigid tree with a fixed root (welded off the world origin), a fixed tool link mid-chain carrying mass and a
    child, and a spherical joint in quaternions: ``to_rigid`` merges the fixed links, and the public ID, its
    derivatives, FD and FD's Jacobians run jaxse3.rigid's rules and equal the linkage's own recursions (the plain pass
    and the derivative pass); FD's Jacobians equal central differences in the tangent space (``lk.integrate``)."""
    body = lambda m, c: rigid.spatial_inertia(m, c, np.diag([2e-3, 3e-3, 1.5e-3]) * m)
    links = [
        lk.Link.rigid("stand", None, "fixed", body(5.0, (0, 0, 0.1)), _pose(_rot((1, 0, 0), 0.3), (0.1, 0, 0.2))),
        lk.Link.rigid("shoulder", "stand", "revolute", body(1.2, (0.02, 0.01, 0.1)), axis=(0, 0, 1, 0, 0, 0)),
        lk.Link.rigid("tool", "shoulder", "fixed", body(0.4, (0.05, 0, 0)), _pose(_rot((0, 1, 0), 0.5), (0, 0, 0.2))),
        lk.Link.rigid("slide", "tool", "prismatic", body(0.3, (0, 0.02, 0)), _pose(p=(0.1, 0, 0)), (0, 0, 0, 1, 0, 0)),
        lk.Link.rigid("wrist", "slide", "spherical", body(0.2, (0, 0, 0.03)), _pose(p=(0, 0, 0.05))),
    ]
    linkage = lk.Linkage(links, gravity=(0.3, -0.2, -9.81), armature=np.array([0.01, 0.02, 0.0, 0.0, 0.0]))
    assert linkage.rigid_obstacle is None
    model = linkage.to_rigid()
    assert model.names == ("shoulder", "slide", "wrist") and (model.nq, model.nv) == (linkage.nq, linkage.nv)
    k = jax.random.split(jax.random.PRNGKey(13), 4)
    q = lk.integrate(linkage, jnp.array([0.3, 0.05, 1.0, 0, 0, 0]), jax.random.normal(k[0], (5,)))
    v, a, u = jax.random.normal(k[1], (5,)), jax.random.normal(k[2], (5,)), jax.random.normal(k[3], (2,))

    def both(q, v, a, u):
        bias, M = inverse_dynamics_and_mass(linkage, q, v)
        fd = jnp.linalg.solve(M, lk.generalized_forces(linkage, q, v, u) - bias)
        public = (lk.inverse_dynamics(linkage, q, v, a), lk.inverse_dynamics_derivatives(linkage, q, v, a))
        return public, (lk.inverse_dynamics_autodiff(linkage, q, v, a), lk.tree_derivatives(linkage, q, v, a)), fd

    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = RULE_CALLS["rigid.rnea"], RULE_CALLS["rigid.forward_dynamics"]
    (tau, r), (tau_tree, r_tree), fd_tree = jax.jit(both)(q, v, a, u)
    np.testing.assert_allclose(tau, tau_tree, rtol=1e-12, atol=1e-12)
    for got, want in zip(r, r_tree):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11 * np.abs(want).max())
    fd = jax.jit(lambda q, v, u: lk.forward_dynamics(linkage, q, v, u))
    np.testing.assert_allclose(fd(q, v, u), fd_tree, rtol=1e-11, atol=1e-11)
    Jq, Jv, Ju = jax.jit(lambda q, v, u: lk.forward_dynamics_jacobians(linkage, q, v, u))(q, v, u)
    eps = 1e-6
    central = lambda f, n: np.stack([f(e) - f(-e) for e in np.eye(n) * eps], axis=1) / (2 * eps)
    np.testing.assert_allclose(Jq, central(lambda d: fd(lk.integrate(linkage, q, d), v, u), 5), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(Jv, central(lambda d: fd(q, v + d, u), 5), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(Ju, central(lambda d: fd(q, v, u + d), 2), rtol=1e-6, atol=1e-6)
    jax.jit(jax.jacfwd(lambda v: lk.inverse_dynamics(linkage, q, v, a) + lk.forward_dynamics(linkage, q, v, u)))(v)
    assert RULE_CALLS["rigid.rnea"] > before[0] and RULE_CALLS["rigid.forward_dynamics"] > before[1]


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda m: m.attach(lk.Link.soft("rod", "shoulder", _rod(0.2))), "link 'rod' is soft"),
        (lambda m: lk.Linkage(m.links, fluid=lk.Fluid()), "fluid"),
        (lambda m: lk.Linkage(m.links, loads=[lk.PointLoad("shoulder", np.ones(6))]), "point loads"),
        (
            lambda m: m.attach(lk.Link.rigid("ball", "shoulder", "spherical", np.eye(6), coordinates="exponential")),
            "link 'ball' has a spherical joint in exponential coordinates",
        ),
    ],
)
def test_what_keeps_a_linkage_off_jaxse3_rigid_is_named(change, match):
    linkage = change(lk.Linkage([lk.Link.rigid("shoulder", None, "revolute", np.eye(6), axis=(0, 0, 1, 0, 0, 0))]))
    assert match in linkage.rigid_obstacle
    with pytest.raises(ValueError, match=r"Linkage\.to_rigid: not a rigid tree"):
        linkage.to_rigid()


@pytest.fixture(scope="module")
def cdm():
    r = rod.cdm_rod(n_gauss=5)
    return r, lk.Linkage.from_rod(r)


def test_one_rod_linkage_equals_the_rod(cdm):
    """The CDM as a one-link linkage: ID, M, τ and q̈ equal jaxse3.rod's, at rest, straight (q = 0) and moving."""
    r, linkage = cdm
    assert (linkage.nv, linkage.n_inputs, linkage.n_points) == (r.n_dof, r.n_tendons, r.n_points)

    def parts(package, model):  # ID, M, τ and q̈ by one package's functions, as one program
        return jax.jit(
            lambda q, v, a, u: (
                package.inverse_dynamics(model, q, v, a),
                package.mass_matrix(model, q),
                package.generalized_forces(model, q, v, u),
                package.forward_dynamics(model, q, v, u),
            )
        )

    fn, reference = parts(lk, linkage), parts(rod, r)
    u = jnp.array([1.0, 2.0, 0.0, 3.0, 0.5])
    zero = jnp.zeros(r.n_dof)
    for q, v, a in [(zero, zero, zero), *(_random_state(linkage, s, 0.5) for s in range(2))]:
        (tau, M, f, acc), (tau_r, M_r, f_r, want) = fn(q, v, a, u), reference(q, v, a, u)
        np.testing.assert_allclose(tau, tau_r, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(M, M_r, rtol=1e-11, atol=1e-16)
        np.testing.assert_allclose(f, f_r, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(acc, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    kinematics = jax.jit(lambda q: (lk.forward_kinematics(linkage, q), rod.kinematics.forward_kinematics(r, q)))
    np.testing.assert_allclose(*kinematics(zero))


@pytest.fixture(scope="module")
def hybrid_id():
    return jax.jit(lambda q, v, a: lk.inverse_dynamics(HYBRID, q, v, a))


@pytest.fixture(scope="module")
def lagrange():
    return jax.jit(lambda q, v, a: (_lagrangian_id(HYBRID, q, v, a), lk.mass_matrix(HYBRID, q)))


def test_hybrid_linkage_sizes_and_points():
    assert HYBRID.names == ("shoulder", "elbow", "arm", "hook", "finger", "branch")
    assert HYBRID.parents == (-1, 0, 1, 2, 3, 0)
    assert (HYBRID.nq, HYBRID.nv, HYBRID.n_inputs) == (13, 13, 3)  # 2 + 6 + 1 + 4 DoF; 3 actuated joints
    assert HYBRID.points_of("finger") == slice(2 + 5 + 1, 2 + 5 + 2)
    assert lk._dynamics.rod_groups(HYBRID) == ((2,), (5,))  # rods of different bases: evaluated one by one
    g = jax.jit(lambda q: lk.forward_kinematics(HYBRID, q))(jnp.zeros(HYBRID.nq))
    # the straight rod's tip is its length along the base frame's x axis; the hook hangs 1 cm further
    base, tip = g[HYBRID.points_of("arm")][np.array([0, -1])]
    np.testing.assert_allclose(tip, base @ _pose(p=(0.3, 0, 0)), atol=1e-15)
    np.testing.assert_allclose(g[HYBRID.points_of("hook")][0], tip @ _pose(p=(0.01, 0, 0)), atol=1e-15)


@pytest.mark.parametrize("seed", [None, 0, 1])
def test_hybrid_inverse_dynamics_and_mass_matrix_follow_lagranges_equations(hybrid_id, lagrange, seed):
    """A branched hybrid linkage (rods on moving links, a revolute joint past a rod's tip): ID equals Lagrange's
    equations of its forward kinematics, M their Hessian, at the straight rest state and at random states."""
    if seed is None:
        q = v = a = jnp.zeros(HYBRID.nq)
    else:
        q, v, a = _random_state(HYBRID, seed)
    want, M = lagrange(q, v, a)
    np.testing.assert_allclose(hybrid_id(q, v, a), want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
    cols = jax.vmap(lambda e: hybrid_id(q, v, e) - hybrid_id(q, v, jnp.zeros_like(e)))(jnp.eye(HYBRID.nv))
    np.testing.assert_allclose(M, cols.T, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(M, M.T, atol=1e-15)
    assert np.linalg.eigvalsh(np.asarray(M)).min() > 0


@pytest.fixture(scope="module")
def hybrid_derivatives():
    analytic = jax.jit(lambda q, v, a: lk.inverse_dynamics_derivatives(HYBRID, q, v, a))
    plain = jax.jit(jax.jacfwd(lambda q, v, a: lk.inverse_dynamics_autodiff(HYBRID, q, v, a), argnums=(0, 1, 2)))
    return analytic, plain


@pytest.mark.parametrize("seed", [None, 2])
def test_hybrid_inverse_dynamics_derivatives_match_autodiff_and_central_differences(
    hybrid_id, hybrid_derivatives, seed
):
    """∂ID/∂q, ∂ID/∂q̇ and M of the recursions over the tree (eqs. (21), (27), (32), (39)–(42)) against autodiff of the
    plain recursion and central differences, at the straight rest state (exactly zero rotation everywhere) and at a
    random state; jax.jacfwd of the public ID runs the analytical rule."""
    q, v, a = (jnp.zeros(HYBRID.nq),) * 3 if seed is None else _random_state(HYBRID, seed)
    analytic, plain = hybrid_derivatives
    r = analytic(q, v, a)
    for got, want in zip((r.dq, r.dqd, r.M), plain(q, v, a)):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-13 * max(np.abs(want).max(), 1.0))
    np.testing.assert_allclose(r.tau, hybrid_id(q, v, a), rtol=1e-12, atol=1e-14)
    eps = 1e-6
    E = np.eye(HYBRID.nv) * eps
    fd_q = np.stack([(hybrid_id(q + e, v, a) - hybrid_id(q - e, v, a)) / (2 * eps) for e in E], axis=1)
    fd_v = np.stack([(hybrid_id(q, v + e, a) - hybrid_id(q, v - e, a)) / (2 * eps) for e in E], axis=1)
    for got, want in ((r.dq, fd_q), (r.dqd, fd_v)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7 * max(np.abs(want).max(), 1.0))
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = RULE_CALLS["linkage.inverse_dynamics"]
    dq = jax.jacfwd(lambda q: lk.inverse_dynamics(HYBRID, q, v, a))(q)
    assert RULE_CALLS["linkage.inverse_dynamics"] > before
    np.testing.assert_allclose(dq, r.dq, rtol=1e-12, atol=1e-14)


def test_rigid_and_rod_derivatives_equal_their_packages():
    """A rigid-only linkage's ∂ID/∂q, ∂ID/∂q̇ equal jaxse3.rigid's (IDSVA), a one-rod linkage's equal jaxse3.rod's."""
    types = ("revolute", "prismatic", "helical", "revolute", "revolute")
    model = rigid.auto_tree(5, bf=1.5, joint_types=types, seed=2).with_armature(np.linspace(0.0, 0.1, 5))
    linkage = lk.Linkage.from_rigid(model)
    q, v, a = _random_state(linkage, 4, 1.0)
    r = lk.tree_derivatives(linkage, q, v, a)  # the linkage's recursion (the public function runs jaxse3.rigid here)
    dq, dv = rigid.rnea_derivatives(model, q, v, a)[:2]
    np.testing.assert_allclose(r.dq, dq, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(r.dqd, dv, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(r.M, rigid.crba(model, q), rtol=1e-12, atol=1e-13)
    cdm = rod.cdm_rod(n_gauss=3, orders=(2, 2, 2, 1, 1, 1))
    linkage = lk.Linkage.from_rod(cdm)
    q, v, a = _random_state(linkage, 5, 0.5)
    r = lk.inverse_dynamics_derivatives(linkage, q, v, a)
    for got, want in zip((r.dq, r.dqd, r.M), rod.inverse_dynamics_derivatives(cdm, q, v, a)):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12 * np.abs(want).max())


def test_each_link_of_the_derivative_pass_carries_its_path_and_subtree_columns():
    """The columns of the derivative pass (where J, R^B, Q^B, Y^B and the backward sums can be nonzero, rule 5):
    shoulder 0, elbow 1, arm 2–7, finger 8, branch 9–12; a closure coupling (a wrench at the finger whose derivative
    reaches the branch's path) adds the branch's columns along the finger's path. The derivative tests above check the
    values; this one that the blocks are used at all."""
    from jaxse3.linkage._derivatives import _column_blocks

    want = [range(13), range(9), range(9), range(9), range(9), [0, 9, 10, 11, 12]]
    assert [list(c) for c in _column_blocks(HYBRID, ())] == [list(w) for w in want]
    coupled = [range(13), range(13), range(13), range(13), range(13), [0, 9, 10, 11, 12]]
    assert [list(c) for c in _column_blocks(HYBRID, ((4, 5),))] == [list(w) for w in coupled]
    assert [list(c) for c in _column_blocks(HYBRID, ((4, None),))] == [list(w) for w in want]
    assert all(list(c) == list(range(13)) for c in _column_blocks(HYBRID, None))


@pytest.mark.parametrize(
    "rows, columns",
    [
        ((7, 3, 2, 4, 5, 6, 8), (9, 10, 2, 3, 4, 5, 6, 7, 0)),  # the arm and finger (no backward pass ahead of them)
        ((9, 10, 11, 12), (1, 9, 11)),  # the branch's rows; a column of the elbow, part of the branch's own
        (None, (8, 0)),
        ((0, 12), None),
    ],
)
def test_derivative_pass_on_some_rows_and_columns_equals_the_full_one(rows, columns):
    """tree_derivatives(rows=…, columns=…), whose passes skip the columns and backward passes these do not need, equals
    the full matrices' rows and columns in the order asked for (armature included), in motion and at rest."""
    q, v, a = _random_state(HYBRID, 6)
    full = _tree_derivatives_jit(q, v, a)
    got = jax.jit(lambda *x: lk.tree_derivatives(HYBRID, *x, rows=rows, columns=columns))(q, v, a)
    r, c = (
        np.arange(13) if rows is None else np.asarray(rows),
        np.arange(13) if columns is None else np.asarray(columns),
    )
    np.testing.assert_allclose(got.tau, full.tau[r], rtol=1e-13, atol=1e-13)
    for x, want in zip(got[1:], full[1:]):
        np.testing.assert_allclose(x, want[r][:, c], rtol=1e-12, atol=1e-12 * np.abs(want).max())
    at_rest = jax.jit(lambda q: lk.tree_derivatives(HYBRID, q, None, None, rows=rows, columns=columns))(q)
    full = _tree_derivatives_jit(q, jnp.zeros_like(v), jnp.zeros_like(a))
    assert at_rest.dqd is None and at_rest.M is None
    np.testing.assert_allclose(at_rest.tau, full.tau[r], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(at_rest.dq, full.dq[r][:, c], rtol=1e-12, atol=1e-12 * np.abs(full.dq).max())


_tree_derivatives_jit = jax.jit(lambda *x: lk.tree_derivatives(HYBRID, *x))


def test_derivative_pass_rejects_bad_rows_and_columns():
    q, v, a = _random_state(HYBRID, 6)
    with pytest.raises(ValueError, match=r"rows must be distinct coordinates in 0 … 12"):
        lk.tree_derivatives(HYBRID, q, v, a, rows=(0, 13))
    with pytest.raises(ValueError, match=r"columns must be distinct coordinates"):
        lk.tree_derivatives(HYBRID, q, v, a, columns=(2, 2))
    with pytest.raises(ValueError, match=r"columns must be a 1-D sequence of integer"):
        lk.tree_derivatives(HYBRID, q, v, a, columns=(0.5,))
    with pytest.raises(TypeError, match=r"rows must be a sequence of Python or NumPy integers"):
        lk.tree_derivatives(HYBRID, q, v, a, rows=jnp.arange(3))


def test_hybrid_forward_dynamics_jacobians_match_central_differences():
    """∂FD/∂q, ∂FD/∂q̇, ∂FD/∂u (eqs. (7), (9)) against central differences of the forward dynamics, and jax.jacfwd of
    the public FD runs them."""
    q, v, _ = _random_state(HYBRID, 6)
    u = jnp.array([0.5, -1.0, 0.2])
    fd = jax.jit(lambda q, v, u: lk.forward_dynamics(HYBRID, q, v, u))
    Jq, Jv, Ju = jax.jit(lambda q, v, u: lk.forward_dynamics_jacobians(HYBRID, q, v, u))(q, v, u)
    eps = 1e-6
    central = lambda f, x: np.stack([(f(x + e) - f(x - e)) / (2 * eps) for e in np.eye(x.shape[0]) * eps], axis=1)
    for got, want in (
        (Jq, central(lambda x: fd(x, v, u), q)),
        (Jv, central(lambda x: fd(q, x, u), v)),
        (Ju, central(lambda x: fd(q, v, x), u)),
    ):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7 * np.abs(want).max())
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = RULE_CALLS["linkage.forward_dynamics"]
    np.testing.assert_allclose(jax.jacfwd(fd, argnums=2)(q, v, u), Ju, rtol=1e-12, atol=1e-12)
    assert RULE_CALLS["linkage.forward_dynamics"] > before


def test_hybrid_forward_dynamics_inverts_inverse_dynamics():
    q, v, _ = _random_state(HYBRID, 3)
    u = jnp.array([0.5, -1.0, 0.2])
    acc = lk.forward_dynamics(HYBRID, q, v, u)
    np.testing.assert_allclose(
        lk.inverse_dynamics(HYBRID, q, v, acc), lk.generalized_forces(HYBRID, q, v, u), rtol=1e-9, atol=1e-9
    )
    tau = lk.generalized_forces(HYBRID, q, v, u)
    assert tau[HYBRID.v_slice(0)] == 0.5 and tau[HYBRID.v_slice(4)] == 0.2  # the joints' efforts
    r = HYBRID.links[2].body
    s = HYBRID.v_slice(2)
    np.testing.assert_allclose(tau[s], rod.forces.internal_forces(r, q[s], v[s]))  # a rod without tendons


def _fixed(name, parent):
    return lk.Link.rigid(name, parent, "fixed", np.eye(6))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: lk.Link.rigid("a", None, "ball", np.eye(6)), "joint must be one of"),
        (lambda: lk.Link.rigid("a", None, "revolute", np.eye(6)), "needs its 'axis'"),
        (lambda: lk.Link.rigid("a", None, "free", np.eye(6), actuated=True), "cannot be actuated"),
        (lambda: lk.Link.rigid("a", None, "fixed", -np.eye(6)), "positive semi-definite"),
        (lambda: lk.Link.rigid("a", None, "fixed", np.eye(3)), r"'inertia' must have shape \(6, 6\)"),
        (lambda: lk.Link.rigid("a", None, "fixed", np.eye(6), placement=2 * np.eye(4)), "with R a rotation"),
        (lambda: lk.Link.soft("a", None, np.eye(6)), "must be a jaxse3.rod.Rod"),
        (lambda: lk.Linkage([]), "'links' is empty"),
        (lambda: lk.Linkage([lk.Link.rigid("a", "b", "fixed", np.eye(6))]), "parent 'b', which is not a link"),
        (
            lambda: lk.Linkage([_fixed("a", "b"), _fixed("b", None)]),
            "which comes after it",
        ),
        (
            lambda: lk.Linkage([_fixed("a", None), _fixed("a", "a")]),
            "two links are named 'a'",
        ),
        (lambda: lk.Linkage([lk.Link.rigid("a", None, "fixed", np.eye(6))], armature=[1.0]), "'armature' must have"),
        (lambda: HYBRID.index("wrist"), "no link named 'wrist'"),
        (lambda: lk.inverse_dynamics(HYBRID, jnp.zeros(3), jnp.zeros(13), jnp.zeros(13)), r"q must have shape \(nq,\)"),
        (lambda: lk.forward_dynamics(HYBRID, jnp.zeros(13), jnp.zeros(13), jnp.zeros(2)), r"u must have shape"),
    ],
)
def test_bad_models_and_states_are_named(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_a_floating_hybrid_linkage_has_tangent_space_derivatives():
    """A free-floating rigid body with the hybrid linkage hung on it through a spherical joint: the analytical ∂ID/∂q
    (tangent space, fixed body velocities) against central differences of ID(q ⊕ δ) in δ."""
    body = rigid.spatial_inertia(2.0, (0.01, 0.02, -0.03), np.diag([0.02, 0.03, 0.04]))
    links = [lk.Link.rigid("base", None, "free", body), lk.Link.rigid("ball", "base", "spherical", 0.1 * body)]
    for link in HYBRID.links:
        parent = "ball" if link.parent is None else link.parent
        links.append(dataclasses.replace(link, parent=parent))
    floating = lk.Linkage(links, gravity=(0.3, -0.2, -9.81))
    k = jax.random.split(jax.random.PRNGKey(8), 3)
    q = lk.integrate(floating, jnp.zeros(floating.nq).at[3].set(1.0).at[7].set(1.0), jax.random.normal(k[0], (22,)))
    v, a = jax.random.normal(k[1], (22,)), jax.random.normal(k[2], (22,))
    r = jax.jit(lambda q, v, a: lk.inverse_dynamics_derivatives(floating, q, v, a))(q, v, a)
    f = jax.jit(lambda d: lk.inverse_dynamics_autodiff(floating, lk.integrate(floating, q, d), v, a))
    eps = 1e-6
    central = np.stack([(f(e) - f(-e)) / (2 * eps) for e in np.eye(22) * eps], axis=1)
    np.testing.assert_allclose(r.dq, central, rtol=1e-6, atol=1e-6)


def test_attach_hangs_a_rod_on_a_named_frame():
    """``Linkage.from_rigid(model).attach(Link.soft(...))`` is the linkage written link by link."""
    model = rigid.auto_tree(3, joint_types="revolute", seed=3)
    rod_link = lk.Link.soft("tail", model.names[-1], _rod(0.2), _pose(p=(0.1, 0.0, 0.0)))
    attached = lk.Linkage.from_rigid(model).attach(rod_link)
    written = lk.Linkage([*lk.Linkage.from_rigid(model).links, rod_link], model.gravity, jnp.zeros(3 + 6))
    assert attached.names == (*model.names, "tail") and attached.parents == (-1, 0, 1, 2)
    assert attached.points_of("tail") == slice(3, 3 + rod_link.n_points)
    jax.tree.map(np.testing.assert_array_equal, attached, written)


def _exponential():
    """A floating base in exponential coordinates carrying a spherical (exponential), a cylindrical and a planar joint
    and a revolute joint past the planar one: every joint of seed 003's exp(Φq̂) family, nq = nv (rods on moving
    joints are :data:`HYBRID`'s)."""
    body = lambda m, c: rigid.spatial_inertia(m, c, np.diag([2e-3, 3e-3, 1.5e-3]) * m)
    links = [
        lk.Link.rigid("base", None, "free", body(2.0, (0.02, -0.01, 0.03)), coordinates="exponential"),
        lk.Link.rigid(
            "ball", "base", "spherical", body(0.5, (0.05, 0, 0)), _pose(p=(0.1, 0, 0)), coordinates="exponential"
        ),
        lk.Link.rigid(
            "sleeve",
            "ball",
            "cylindrical",
            body(0.3, (0, 0.02, 0.04)),
            _pose(p=(0.1, 0, 0)),
            (0, 0, 1, 0, 0, 0),
            actuated=True,
        ),
        lk.Link.rigid(
            "slider", "base", "planar", body(0.4, (0.01, 0.03, 0)), _pose(_rot((1, 0, 0), 0.3)), (0.6, 0, 0.8, 0, 0, 0)
        ),
        lk.Link.rigid(
            "tail", "slider", "revolute", body(0.2, (0.05, 0, 0)), _pose(p=(0.05, 0, 0)), (0, 0.6, 0.8, 0, 0, 0)
        ),
    ]
    return lk.Linkage(links, gravity=(0.3, -0.2, -9.81))


EXPONENTIAL = _exponential()


def test_exponential_joints_follow_lagranges_equations_and_have_exact_derivatives():
    """Joints in exponential coordinates (free and spherical on request, cylindrical and planar always): sizes; the
    point twists equal (g⁻¹ġ)^∨ of the forward kinematics by central differences; ID equals Lagrange's equations; the
    tree's ∂ID/∂q, ∂ID/∂q̇ and M equal central differences of ID — at q = 0 (exactly zero rotation) and at a random
    state; jax.jacfwd of the public ID runs its rule (nq = nv: no quaternion)."""
    linkage = EXPONENTIAL
    assert (linkage.nq, linkage.nv, linkage.n_inputs) == (6 + 3 + 2 + 3 + 1,) * 2 + (3,)
    analytic = jax.jit(lambda q, v, a: lk.inverse_dynamics_derivatives(linkage, q, v, a))
    lagrange = jax.jit(lambda q, v, a: _lagrangian_id(linkage, q, v, a))
    kinematics = jax.jit(lambda q, v: (lk.forward_kinematics(linkage, q), lk.point_states(linkage, q, v).eta))
    eps = 1e-6
    for seed in (None, 9):
        q, v, a = (jnp.zeros(linkage.nq),) * 3 if seed is None else _random_state(linkage, seed)
        if seed is None:
            v, a = _random_state(linkage, 10)[1:]
        (g, eta), (g1, _), (g2, _) = (kinematics(x, v) for x in (q, q + eps * v, q - eps * v))
        fd_twist = jax.vmap(lambda g, d: se3.vee(se3.inv(g) @ d))(g, (g1 - g2) / (2 * eps))
        np.testing.assert_allclose(eta, fd_twist, rtol=1e-7, atol=1e-8)
        r = analytic(q, v, a)
        want = lagrange(q, v, a)
        np.testing.assert_allclose(r.tau, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
        tau = lambda q, v, a: analytic(q, v, a).tau
        E = np.eye(linkage.nv) * eps
        for got, fd in (
            (r.dq, [tau(q + e, v, a) - tau(q - e, v, a) for e in E]),
            (r.dqd, [tau(q, v + e, a) - tau(q, v - e, a) for e in E]),
            (r.M, [tau(q, v, a + e) - tau(q, v, a - e) for e in E]),
        ):
            fd = np.stack(fd, axis=1) / (2 * eps)
            np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7 * np.abs(fd).max())
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = RULE_CALLS["linkage.inverse_dynamics"]
    dq = jax.jit(jax.jacfwd(lambda q: lk.inverse_dynamics(linkage, q, v, a)))(q)
    assert RULE_CALLS["linkage.inverse_dynamics"] > before
    np.testing.assert_allclose(dq, r.dq, rtol=1e-12, atol=1e-13 * np.abs(r.dq).max())


def test_exponential_coordinates_place_the_bodies_as_quaternions_do():
    """The same floating tree in quaternion coordinates at the configuration exp(Φq̂) (free: position and
    quaternion of exp(q̂), spherical: quaternion of exp(ω̃)) puts every point at the same pose."""
    links = [dataclasses.replace(link, coordinates="quaternion") for link in EXPONENTIAL.links[:2]]
    quaternion = lk.Linkage(links, gravity=EXPONENTIAL.gravity)
    exponential = lk.Linkage(EXPONENTIAL.links[:2], gravity=EXPONENTIAL.gravity)
    q = jax.random.normal(jax.random.PRNGKey(11), (9,))
    base = se3.exp(q[:6])
    q_quat = jnp.concatenate([base[:3, 3], rigid.joints.quat_exp(q[:3]), rigid.joints.quat_exp(q[6:])])
    np.testing.assert_allclose(
        lk.forward_kinematics(quaternion, q_quat), lk.forward_kinematics(exponential, q), rtol=1e-13, atol=1e-14
    )


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: lk.Link.rigid("a", None, "free", np.eye(6), coordinates="euler"), "'coordinates' must be one of"),
        (lambda: lk.Link.rigid("a", None, "planar", np.eye(6)), "planar joint needs its 'axis'"),
        (lambda: lk.Link.rigid("a", None, "cylindrical", np.eye(6), axis=(0, 0, 2, 0, 0, 0)), "unit vector"),
        (lambda: lk.Link.rigid("a", None, "planar", np.eye(6), axis=(0, 0, 1, 0, 0, 0), actuated=True), "actuated"),
    ],
)
def test_bad_exponential_joints_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_a_free_floating_linkage_conserves_its_momentum():
    """No gravity, no water: the world spatial momentum h = Σ_k Ad_{g_k⁻¹}ᵀ 𝓜_k η_k (from the point states) is
    constant along the forward dynamics — its rate ∂h/∂q q̇ + ∂h/∂q̇ q̈ (autodiff of h) vanishes at q̈ = FD(q, q̇, u),
    joint efforts and the rod's elastic and damping forces being internal — and does not for another q̈."""
    tail = lk.Link.soft("rod", "sleeve", _rod(0.2, (1, None, 1, None, None, None)), _pose(p=(0.02, 0, 0)))
    floating = lk.Linkage((*EXPONENTIAL.links, tail), gravity=(0.0, 0.0, 0.0))

    def momentum(q, v):
        s = lk.point_states(floating, q, v)
        return jnp.einsum("kji,kjl,kl->i", se3.Ad_inv(s.g), s.M, s.eta)

    rate = jax.jit(lambda q, v, a: jax.jvp(momentum, (q, v), (v, a))[1])
    fd = jax.jit(lambda q, v, u: lk.forward_dynamics(floating, q, v, u))
    for seed in (None, 12):
        q, v, a = _random_state(floating, 12 if seed is None else seed)
        q = jnp.zeros_like(q) if seed is None else q
        u = jnp.array([0.4, -0.3, 0.2])
        scale = np.abs(rate(q, v, a)).max()
        assert scale > 0.1
        np.testing.assert_allclose(rate(q, v, fd(q, v, u)), 0.0, atol=1e-11 * scale)
