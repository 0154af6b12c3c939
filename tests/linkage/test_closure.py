"""Loop-closure constraints of closed chains (seed 003 §5.2, eqs. (46)–(49), (D77)–(D80)).

Oracles independent of the formulas under test:

* a planar four-bar (:mod:`tests.linkage.four_bar`: crank, coupler and rocker on parallel z axes, the rocker's tip
  closed to the ground pivot by a ``"planar"`` closure): its closed-form position analysis (two-circle intersection)
  gives consistent coordinates q(θ) of the crank angle θ; the one-degree-of-freedom Lagrangian dynamics written there
  from the bodies' planar poses (m(θ)θ̈ + ½m'(θ)θ̇² + V'(θ) = q'(θ)ᵀu) gives q̈ = q'θ̈ + q''θ̇², which the
  constrained forward dynamics must reproduce;
* a spatial hybrid chain (a revolute base, a rod, a revolute hand on the rod's tip, a prismatic branch) with closures
  of every kind: the error's derivatives by ``jax.jacfwd`` and central differences, Ȧq̇ by ``jax.jvp`` of A(q + t q̇)q̇,
  and the residuals of the bordered system;
* a rigid body hanging from a spherical closure, at rest: the multipliers are the pivot's reaction force, from the
  Newton–Euler equations of a body turning about a fixed point.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk, rigid, rod, se3
from jaxse3.lie.tangents import RULE_CALLS
from jaxse3.linkage._closure import _error_plain
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material
from tests.linkage.four_bar import (
    A_,
    B_,
    C_,
    D_,
    FOUR_BAR,
    PLANAR,
    PSI0,
    four_bar_pose as _four_bar_pose,
    reduced as _reduced,
    reduced_acceleration as _reduced_acceleration,
)

Z = (0.0, 0.0, 1.0)


def _pose(p=(0.0, 0.0, 0.0), angle=0.0, axis=Z):
    R = se3.exp(jnp.concatenate([angle * jnp.asarray(axis, float), jnp.zeros(3)]))[:3, :3]
    return se3.from_rotation_translation(R, jnp.asarray(p, float))


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


# ---------------------------------------------------------------------------------------------------------------------
# a planar four-bar


@pytest.fixture(scope="module")
def four_bar():
    def kinematics(theta, theta_d):
        q = _four_bar_pose(theta)[0]
        dq = jax.jacfwd(lambda t: _four_bar_pose(t)[0])(theta)
        ddq = jax.jacfwd(jax.jacfwd(lambda t: _four_bar_pose(t)[0]))(theta)
        return q, dq, ddq, _reduced(theta)[0]

    def closures(q, qd, u):
        return (
            lk.closure_error(FOUR_BAR, PLANAR, q),
            lk.closure_jacobian(FOUR_BAR, PLANAR, q),
            lk.closure_error_jacobian(FOUR_BAR, PLANAR, q),
            jax.jacfwd(lambda q: _error_plain(FOUR_BAR, (PLANAR,), q))(q),
            lk.mass_matrix(FOUR_BAR, q),
            lk.constrained_forward_dynamics(FOUR_BAR, [PLANAR], q, qd, u, 0.05),
        )

    return jax.jit(kinematics), jax.jit(closures), jax.jit(_reduced_acceleration)


@pytest.mark.parametrize("theta", [0.3, 1.9, 4.0])
def test_four_bar_closed_form_satisfies_the_closure_and_its_dynamics_are_lagranges(four_bar, theta):
    """On the closed-form assembly q(θ): e = 0, A q' = 0, ∂e/∂q = G A with G = Φ⊥ᵀ dexp_ε⁻¹ Φ⊥ (the same null
    space, ε ≠ 0: the rocker's free rotation), M(q) reduces to m(θ), and the constrained forward dynamics gives
    q̈ = q'θ̈ + q''θ̇² with θ̈ from the reduced Lagrangian dynamics, with the crank, coupler and rocker efforts u."""
    kinematics, closures, reduced = four_bar
    assert A_ + D_ <= B_ + C_ and min(A_, B_, C_, D_) == A_  # Grashof crank–rocker
    theta_d, u = 2.5, jnp.array([0.4, -0.1, 0.05])
    q, dq, ddq, mass = kinematics(theta, theta_d)
    e, A, de_dq, de_auto, M, (qdd, lam) = closures(q, dq * theta_d, u)
    assert e.shape == (2,) and A.shape == (2, 3)
    np.testing.assert_allclose(e, 0.0, atol=1e-12)
    np.testing.assert_allclose(A @ dq, 0.0, atol=1e-12)
    np.testing.assert_allclose(de_dq, de_auto, rtol=1e-10, atol=1e-12)
    g_ba = jnp.linalg.inv(_pose((D_, 0, 0), PSI0)) @ lk.forward_kinematics(FOUR_BAR, q)[-1] @ _pose((C_, 0, 0))
    eps = se3.log(g_ba)
    assert abs(eps[2]) > 0.1  # the free rotation is not zero: A ≠ ∂e/∂q, the same rows up to G
    Phi = PLANAR.constrained
    np.testing.assert_allclose(de_dq, Phi.T @ se3.dexp_inv(eps) @ Phi @ A, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(dq @ M @ dq, mass, rtol=1e-12)
    want = dq * reduced(theta, theta_d, u) + ddq * theta_d**2
    np.testing.assert_allclose(qdd, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    assert np.isfinite(lam).all() and lam.shape == (2,)


# ---------------------------------------------------------------------------------------------------------------------
# a spatial hybrid chain


def _rod(length):
    return rod.Rod(
        length=length,
        section=CircularSection(0.02, 0.012),
        material=Material(E=2e5, rho=1000.0, nu=0.5, damping=50.0),
        basis=LegendreBasis((1, 1, 1, 0, None, None)),
        n_gauss=2,
    )


def _chain():
    body = lambda m, c: rigid.spatial_inertia(m, c, np.diag([2e-3, 3e-3, 1.5e-3]) * m)
    links = [
        lk.Link.rigid("base", None, "revolute", body(1.2, (0.02, 0.01, 0.1)), axis=(0, 0, 1, 0, 0, 0)),
        lk.Link.soft("arm", "base", _rod(0.3), _pose((0, 0, 0.1), 0.4, (0, 1, 0))),
        lk.Link.rigid(
            "hand", "arm", "revolute", body(0.2, (0.03, 0, 0)), _pose((0.01, 0, 0), 0.3, (1, 0, 0)), (0, 0, 1, 0, 0, 0)
        ),
        lk.Link.rigid(
            "branch", "base", "prismatic", body(0.3, (0, 0.02, 0)), _pose((0.05, 0, 0.2), 1.0), (0, 0, 0, 1, 0, 0)
        ),
    ]
    return lk.Linkage(links, gravity=(0.3, -0.2, -9.81))


CHAIN = _chain()
AXIS = _unit((0.3, -0.5, 0.8))
#: every kind, between links, rod points and the world, with placements
ALL_KINDS = (
    lk.Closure("hand", None, "spherical", placement_a=_pose((0.05, 0, 0)), placement_b=_pose((0.2, 0.1, 0.3))),
    lk.Closure("hand", "branch", "revolute", axis=AXIS, placement_a=_pose((0.02, 0.01, 0), 0.5, AXIS)),
    lk.Closure("arm", "branch", "prismatic", axis=Z, point_a=1, placement_b=_pose((0, 0.1, 0), -0.7, (1, 0, 0))),
    lk.Closure("arm", None, "fixed", point_a=2, placement_b=_pose((0.1, 0, 0.2), 0.2)),
    lk.Closure("arm", "hand", "planar", axis=AXIS, point_a=0, placement_a=_pose((0, 0, 0.02))),
    lk.Closure("arm", "arm", constrained=np.arange(12.0).reshape(6, 2) ** 0.5, point_a=1, point_b=-1),
)
#: independent closures with full row rank for the dynamics (k = 3 + 5 of nv = 10)
DYNAMIC = (ALL_KINDS[0], ALL_KINDS[1])


def _random_state(linkage, seed, scale=0.5):
    k = jax.random.split(jax.random.PRNGKey(seed), 3)
    sizes = (linkage.nq, linkage.nv, linkage.n_inputs)
    return tuple(scale * jax.random.normal(key, (n,)) for key, n in zip(k, sizes))


def _coinciding(linkage, closures, q):
    """The closures with placement_b moved so that frame B is frame A at q: e = 0 and g_BA = 1 there."""
    g = lk.forward_kinematics(linkage, q)
    out = []
    for c in closures:
        sl = linkage.points_of(c.link_a)
        g_a = g[sl][c.point_a] @ c.placement_a
        g_b = np.eye(4) if c.link_b is None else g[linkage.points_of(c.link_b)][c.point_b]
        out.append(eqx.tree_at(lambda x: x.placement_b, c, jnp.linalg.solve(g_b, g_a)))
    return tuple(out)


H2 = 1e-3  # the step of the central second differences along q̇


@pytest.fixture(scope="module")
def chain():
    def rows(closures, q, qd):
        error = lambda q: lk.closure_error(CHAIN, closures, q)
        plain = lambda q: _error_plain(CHAIN, lk.check_closures(CHAIN, closures), q)  # no rule
        rate = lambda t: lk.closure_jacobian(CHAIN, closures, q + t * qd) @ qd
        path = lambda s: _error_plain(CHAIN, lk.check_closures(CHAIN, closures), q + s * qd)
        second = jax.jvp(lambda s: jax.jvp(path, (s,), (1.0,))[1], (0.0,), (1.0,))[1]  # d²e(q + s q̇)/ds², no rule
        return (
            error(q),
            lk.closure_jacobian(CHAIN, closures, q),
            lk.closure_error_jacobian(CHAIN, closures, q),
            jax.jacfwd(plain)(q),
            lk.closure_bias(CHAIN, closures, q, qd),
            jax.jvp(rate, (0.0,), (1.0,))[1],
            jax.jacfwd(error)(q),
            lk.closure_error_bias(CHAIN, closures, q, qd),
            second,
            (error(q + H2 * qd) - 2.0 * error(q) + error(q - H2 * qd)) / H2**2,  # its central second difference
        )

    def dynamics(q, qd, u, T):
        return (
            lk.constrained_forward_dynamics(CHAIN, DYNAMIC, q, qd, u, T),
            lk.closure_error(CHAIN, DYNAMIC, q),
            lk.closure_jacobian(CHAIN, DYNAMIC, q),
            lk.closure_bias(CHAIN, DYNAMIC, q, qd),
            lk.closure_error_jacobian(CHAIN, DYNAMIC, q),
            lk.mass_matrix(CHAIN, q),
            lk.generalized_forces(CHAIN, q, qd, u) - lk.inverse_dynamics(CHAIN, q, qd, jnp.zeros_like(qd)),
        )

    return jax.jit(rows), jax.jit(dynamics)


def test_chain_sizes():
    assert (CHAIN.nq, CHAIN.nv, CHAIN.n_points) == (10, 10, 1 + 4 + 1 + 1)
    assert [c.k for c in ALL_KINDS] == [3, 5, 5, 6, 2, 2]
    assert lk.check_closures(CHAIN, ALL_KINDS) == ALL_KINDS
    assert lk.check_closures(CHAIN, ALL_KINDS[0]) == (ALL_KINDS[0],)


def test_constraint_matrix_is_the_error_jacobian_where_the_frames_coincide(chain):
    """At a random q with every frame B moved onto its frame A (e = 0, g_BA = 1): A = ∂e/∂q (jax.jacfwd of the
    plain error)."""
    rows = chain[0]
    q, qd, _ = _random_state(CHAIN, 0)
    e, A, de_dq, de_auto, *_ = rows(_coinciding(CHAIN, ALL_KINDS, q), q, qd)[:7]
    np.testing.assert_allclose(e, 0.0, atol=1e-12)
    np.testing.assert_allclose(A, de_auto, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(de_dq, A, atol=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_error_jacobian_off_the_manifold(chain, seed):
    """At random q (e ≠ 0): ∂e/∂q = Φ⊥ᵀ dexp_ε⁻¹ (Ad_{g_BA} J_A − J_B) equals jax.jacfwd of the plain e and central
    differences, and so does jax.jacfwd of :func:`~jaxse3.linkage.closure_error` (its rule, (D77)–(D80)); A does not.
    With Φ⊥ = I (a fixed closure) e = ε and A = Ad J_A − J_B, so the right-trivialised dexp_{+ε}⁻¹ is the one:
    dexp_{−ε}⁻¹ is off by O(1)."""
    rows = chain[0]
    q, qd, _ = _random_state(CHAIN, seed, 0.8)
    e, A, de_dq, de_auto, _, _, de_rule = rows(ALL_KINDS, q, qd)[:7]
    assert np.abs(e).max() > 0.05
    scale = np.abs(de_auto).max()
    np.testing.assert_allclose(de_dq, de_auto, rtol=1e-10, atol=1e-10 * scale)
    np.testing.assert_allclose(de_rule, de_auto, rtol=1e-10, atol=1e-10 * scale)
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = RULE_CALLS.copy()
    jax.make_jaxpr(jax.jacfwd(lambda q: lk.closure_error(CHAIN, ALL_KINDS, q)))(q)
    assert (RULE_CALLS - before)["linkage.closure_error"] == 1
    h, error = 1e-6, jax.jit(lambda q: lk.closure_error(CHAIN, ALL_KINDS, q))
    central = jnp.stack([(error(q + h * d) - error(q - h * d)) / (2 * h) for d in jnp.eye(CHAIN.nv)], axis=1)
    np.testing.assert_allclose(de_dq, central, rtol=1e-6, atol=1e-7 * scale)
    assert np.abs(A - de_auto).max() > 1e-3 * scale
    fixed = slice(3 + 5 + 5, 3 + 5 + 5 + 6)  # the fixed closure's rows
    eps, V = e[fixed], A[fixed]
    np.testing.assert_allclose(de_auto[fixed], se3.dexp_inv(eps) @ V, rtol=1e-10, atol=1e-12)
    assert np.abs(de_auto[fixed] - se3.dexp_inv(-eps) @ V).max() > 1e-2 * np.abs(V).max()


def test_closure_terms_of_the_derivative_pass_equal_autodiff_of_the_rows():
    """The closures' terms that the Baumgarte rules take from the frames of the tree's derivative pass at (q, q̇, q̈)
    ((D70)–(D83) re-derived: e, A, ∂e/∂q, ∂(Aq̇)/∂q, Ȧ as a matrix, ∂(Aq̈ + Ȧq̇)/∂q) equal ``jax.jacfwd`` of the rows of
    one plain forward pass, for a closure of every kind at a random state; and the multipliers applied as point
    wrenches give ID − Aᵀλ. Ȧ needs the body Jacobian's whole rate Y^B − R^B − ad_η J: without the last term (the
    paper's J̇ = Y^B − R^B) it is off by O(1). Observed ≤ 4e−16 relative; bound 1e−12."""
    from jaxse3.linkage._closure import _closure_pass, _rows
    from jaxse3.linkage._derivatives import tree_derivatives_with_wrenches

    closures = lk.check_closures(CHAIN, ALL_KINDS)
    q, qd, _ = _random_state(CHAIN, 5)
    qdd = _random_state(CHAIN, 6)[1]
    lam = jnp.asarray(np.random.default_rng(0).normal(size=sum(c.k for c in closures)))

    @jax.jit
    def both(q, qd, qdd):
        d, rows = tree_derivatives_with_wrenches(CHAIN, q, qd, qdd, _closure_pass(CHAIN, closures, lam))
        plain = lambda q: _rows("test", CHAIN, closures, q, qd)[1]
        dA = jax.jacfwd(lambda q: plain(q).A)(q)
        want = (
            plain(q).e,
            plain(q).A,
            jax.jacfwd(lambda q: plain(q).e)(q),
            jax.jacfwd(lambda q: plain(q).A @ qd)(q),
            dA @ qd,
            jax.jacfwd(lambda q: plain(q).A @ qdd + plain(q).bias)(q),
        )
        tau = lk.inverse_dynamics(CHAIN, q, qd, qdd) - plain(q).A.T @ lam
        return rows, want, d.tau, tau

    rows, want, tau, tau_want = both(q, qd, qdd)
    for name, got, ref in zip(rows._fields, rows, want):
        scale = np.abs(ref).max()
        assert scale > 0.1, name
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * scale, err_msg=name)
    np.testing.assert_allclose(tau, tau_want, rtol=0, atol=1e-12 * np.abs(tau_want).max())


@pytest.mark.parametrize("seed", [3, 4])
def test_bias_is_the_rate_of_the_constraint_matrix(chain, seed):
    """Ȧq̇ (eq. (47b)) equals d/dt A(q + t q̇) q̇ by jax.jvp, for every kind and both frames moving."""
    rows = chain[0]
    q, qd, _ = _random_state(CHAIN, seed, 0.8)
    *_, bias, want, _ = rows(ALL_KINDS, q, qd)[:7]
    np.testing.assert_allclose(bias, want, rtol=1e-10, atol=1e-11 * np.abs(want).max())


@pytest.mark.parametrize("seed", [3, 4])
def test_error_bias_is_the_second_rate_of_the_error(chain, seed):
    """ë − (∂e/∂q)q̈ (:func:`~jaxse3.linkage.closure_error_bias`, closed form) equals d²/ds² e(q + s q̇) by nested
    JVPs of the plain error (no rule) and by central second differences, for every kind off the manifold (e ≠ 0),
    where Ȧq̇ does not; where the frames coincide (g_BA = 1) it is Ȧq̇."""
    rows = chain[0]
    q, qd, _ = _random_state(CHAIN, seed, 0.8)
    e, *_, bias, _, _, e_bias, want, central = rows(ALL_KINDS, q, qd)
    assert np.abs(e).max() > 0.05
    scale = np.abs(want).max()
    np.testing.assert_allclose(e_bias, want, rtol=1e-10, atol=1e-11 * scale)
    np.testing.assert_allclose(e_bias, central, rtol=1e-5, atol=1e-6 * scale)
    assert np.abs(bias - want).max() > 1e-2 * scale
    e, *_, bias, _, _, e_bias, want, _ = rows(_coinciding(CHAIN, ALL_KINDS, q), q, qd)
    np.testing.assert_allclose(e_bias, want, rtol=1e-10, atol=1e-11 * np.abs(want).max())
    np.testing.assert_allclose(e_bias, bias, rtol=1e-10, atol=1e-11 * np.abs(want).max())


@pytest.mark.parametrize("seed", [5, 6])
def test_constrained_forward_dynamics_solves_the_bordered_system(chain, seed):
    """Off the manifold, moving: A q̈ + Ȧq̇ + (2/T)A q̇ + e/T² = 0 (46b) and M q̈ − Aᵀλ = τ − ID(q, q̇, 0) (46a)."""
    dynamics = chain[1]
    q, qd, u = _random_state(CHAIN, seed)
    T = 0.02
    (qdd, lam), e, A, bias, _, M, f = dynamics(q, qd, u, T)
    assert qdd.shape == (CHAIN.nv,) and lam.shape == (8,)
    assert np.linalg.matrix_rank(np.asarray(A)) == 8
    c = bias + 2 / T * A @ qd + e / T**2
    np.testing.assert_allclose(A @ qdd, -c, rtol=1e-10, atol=1e-10 * np.abs(c).max())
    np.testing.assert_allclose(M @ qdd - A.T @ lam, f, rtol=1e-10, atol=1e-10 * np.abs(f).max())


def test_values_under_vmap_equal_the_unbatched_ones(chain):
    """e, A, ∂e/∂q, Ȧq̇ and (q̈, λ) of a batch of states under jax.vmap equal the unbatched ones (to round-off: the
    bordered system off the manifold, with T = 0.05, amplifies it)."""
    dynamics = chain[1]
    states = [_random_state(CHAIN, s) for s in (7, 8, 9)]
    q, qd, u = (jnp.stack(x) for x in zip(*states))
    batched = jax.jit(jax.vmap(dynamics, in_axes=(0, 0, 0, None)))(q, qd, u, 0.05)
    for n, (qn, vn, un) in enumerate(states):
        for got, want in zip(jax.tree.leaves(batched), jax.tree.leaves(dynamics(qn, vn, un, 0.05))):
            np.testing.assert_allclose(got[n], want, rtol=1e-10, atol=1e-11 * np.abs(want).max())


# ---------------------------------------------------------------------------------------------------------------------
# a rigid body hanging from a spherical closure

MASS, ARM = 1.5, 0.25  # the pivot is ARM above the centre of mass (the body frame's origin) along the body's z


def _pendulum():
    inertia = np.diag([0.02, 0.03, 0.01])
    body = lk.Link.rigid(
        "body", None, "free", rigid.spatial_inertia(MASS, (0, 0, 0), inertia), coordinates="exponential"
    )
    pivot = _pose((0, 0, ARM))
    closure = lk.Closure("body", None, "spherical", placement_a=pivot, placement_b=pivot)
    return lk.Linkage([body]), closure, inertia


@pytest.mark.parametrize("tilt", [0.0, 0.6])
def test_multipliers_are_the_pivots_reaction_force(tilt):
    """A free body (exponential coordinates) closed to the world by a spherical closure at a point ARM above its
    centre of mass, at rest, tilted by ``tilt`` about an oblique axis: Φ⊥λ is the force the pivot exerts on the body in
    world axes (frame B is world-aligned), R = m(a_c − a_g) with the angular acceleration α of the body about the fixed
    pivot, I_p α = r × m a_g, and a_c = α × r (ω = 0), r the centre of mass from the pivot. Hanging (tilt 0):
    R = −m a_g, q̈ = 0."""
    linkage, closure, inertia = _pendulum()
    Rb = np.asarray(_pose(angle=tilt, axis=_unit((1.0, 0.5, 0.2)))[:3, :3])
    pivot = np.array([0.0, 0.0, ARM])
    g = np.eye(4)
    g[:3, :3], g[:3, 3] = Rb, pivot - Rb @ pivot  # the body's pivot point at the world's
    q = se3.log(jnp.asarray(g))
    zero = jnp.zeros(6)
    fd = jax.jit(lambda q: lk.constrained_forward_dynamics(linkage, closure, q, zero, jnp.zeros(0), 0.1))
    qdd, lam = fd(q)
    np.testing.assert_allclose(lk.closure_error(linkage, closure, q), 0.0, atol=1e-14)
    a_g = np.asarray(linkage.gravity)
    r = g[:3, 3] - pivot
    I_p = Rb @ inertia @ Rb.T + MASS * (r @ r * np.eye(3) - np.outer(r, r))
    alpha = np.linalg.solve(I_p, np.cross(r, MASS * a_g))
    reaction = MASS * (np.cross(alpha, r) - a_g)
    np.testing.assert_allclose(lam, reaction, rtol=1e-10, atol=1e-12)
    if tilt == 0.0:
        np.testing.assert_allclose(lam, (0.0, 0.0, MASS * 9.81), rtol=1e-12)
        np.testing.assert_allclose(qdd, 0.0, atol=1e-12)


def test_quaternion_joints_differentiate_in_the_tangent_space():
    """A free joint in quaternion coordinates (nq = 7, nv = 6): ∂e/∂q is the derivative along q ⊕ δ
    (:func:`jaxse3.linkage.integrate`), and A = ∂e/∂q where the frames coincide."""
    _, closure, inertia = _pendulum()
    linkage = lk.Linkage([lk.Link.rigid("body", None, "free", rigid.spatial_inertia(MASS, (0.01, 0, 0), inertia))])
    q = jnp.concatenate([jnp.array([0.1, -0.2, 0.05]), jnp.asarray(_unit((0.9, 0.2, -0.3, 0.1)))])

    @jax.jit
    def jacobians(c):
        auto = jax.jacfwd(lambda d: lk.closure_error(linkage, c, lk.integrate(linkage, q, d)))(jnp.zeros(linkage.nv))
        return lk.closure_error_jacobian(linkage, c, q), lk.closure_jacobian(linkage, c, q), auto

    apart = eqx.tree_at(lambda x: x.placement_b, closure, _pose((0.2, 0.1, 0.3), 0.4))
    de_dq, _, auto = jacobians(apart)
    np.testing.assert_allclose(de_dq, auto, rtol=1e-12, atol=1e-13)
    de_dq, A, auto = jacobians(_coinciding(linkage, [closure], q)[0])
    np.testing.assert_allclose(de_dq, auto, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(A, auto, rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match=r"closure_error_bias: .* quaternion coordinates"):
        lk.closure_error_bias(linkage, closure, q, jnp.zeros(linkage.nv))


# ---------------------------------------------------------------------------------------------------------------------
# the kinds' bases and the checks


@pytest.mark.parametrize("kind", lk.CLOSURE_KINDS)
def test_each_kinds_basis_spans_the_complement_of_its_free_directions(kind):
    a = _unit((0.2, -0.7, 0.4))
    axis = a if kind in ("revolute", "prismatic", "planar") else None
    Phi = np.asarray(lk.Closure("x", kind=kind, axis=axis).constrained)
    np.testing.assert_allclose(Phi, lk.closure_basis(kind, axis))
    e = np.eye(6)
    t = np.linalg.svd(a[None])[2][1:]  # two unit vectors normal to a
    zero = np.zeros(3)
    free = {
        "fixed": np.zeros((6, 0)),
        "spherical": e[:, :3],
        "revolute": np.r_[a, zero][:, None],
        "prismatic": np.r_[zero, a][:, None],
        "planar": np.stack([np.r_[a, zero], np.r_[zero, a], np.r_[t[0], zero], np.r_[t[1], zero]], axis=1),
    }[kind]
    k = {"fixed": 6, "spherical": 3, "revolute": 5, "prismatic": 5, "planar": 2}[kind]
    assert Phi.shape == (6, k)
    np.testing.assert_allclose(Phi.T @ Phi, np.eye(k), atol=1e-15)
    np.testing.assert_allclose(Phi.T @ free, 0.0, atol=1e-15)
    assert np.linalg.matrix_rank(np.c_[Phi, free]) == 6
    # a relative motion along the free directions leaves the closure satisfied
    x = free @ np.linspace(0.3, 0.9, free.shape[1])
    np.testing.assert_allclose(Phi.T @ np.asarray(se3.log(se3.exp(jnp.asarray(x)))), 0.0, atol=1e-15)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: lk.Closure("hand", kind="cylindrical"), r"Closure 'hand–world': unknown 'kind' 'cylindrical'"),
        (lambda: lk.closure_basis("gear"), r"unknown kind"),
        (lambda: lk.Closure("hand", kind="revolute", axis=(1.0, 1.0, 0.0)), r"'hand–world'.*'axis' must be a unit"),
        (lambda: lk.Closure("hand", kind="planar", axis=(1.0, 0.0)), r"'axis' must be a unit 3-vector"),
        (lambda: lk.Closure("hand", kind="prismatic"), r"prismatic closure needs its 'axis'"),
        (lambda: lk.Closure("hand", kind="spherical", axis=Z), r"spherical closure takes no 'axis'"),
        (lambda: lk.Closure("hand", constrained=np.eye(5)), r"'constrained' must be a \(6, k\)"),
        (lambda: lk.Closure("hand", constrained=np.zeros((6, 0))), r"'constrained' must be a \(6, k\)"),
        (lambda: lk.Closure("hand", constrained=np.ones((6, 2))), r"full column rank"),
        (lambda: lk.Closure("hand", kind="fixed", constrained=np.eye(6)), r"either 'constrained' or a 'kind'"),
        (lambda: lk.Closure("hand", placement_b=np.ones((4, 4))), r"'placement_b' must be a pose"),
        (lambda: lk.Closure("hand", point_a=1.0), r"'point_a' must be an integer"),
        (lambda: lk.check_closures(CHAIN, lk.Closure("foot", name="c1")), r"Closure 'c1': link_a 'foot' is not a link"),
        (lambda: lk.check_closures(CHAIN, lk.Closure("hand", "paw")), r"'hand–paw': link_b 'paw' is not a link"),
        (lambda: lk.check_closures(CHAIN, lk.Closure("arm", point_a=4)), r"point_a = 4 is out of range.*4 points"),
        (lambda: lk.check_closures(CHAIN, lk.Closure("hand", "base", point_b=-2)), r"point_b = -2 is out of range"),
        (lambda: lk.check_closures(CHAIN, lk.Closure("hand", "hand")), r"'hand–hand': both frames .* same rigid"),
        (lambda: lk.check_closures(CHAIN, lk.Closure("arm", "arm", point_a=3)), r"both frames"),
        (lambda: lk.check_closures(CHAIN, [ALL_KINDS[0], "spherical"]), r"closures\[1\] must be a Closure"),
        (lambda: lk.closure_error(CHAIN, DYNAMIC, jnp.zeros(9)), r"closure_error: q must have shape \(nq,\) = \(10,\)"),
        (
            lambda: lk.closure_bias(CHAIN, DYNAMIC, jnp.zeros(10), jnp.zeros(3)),
            r"closure_bias: qd must have shape \(nv,\)",
        ),
        (
            lambda: lk.constrained_forward_dynamics(CHAIN, DYNAMIC, jnp.zeros(10), jnp.zeros(10), jnp.zeros(1), 0.1),
            r"constrained_forward_dynamics: u must have shape \(n_inputs,\) = \(3,\)",
        ),
        (
            lambda: lk.constrained_forward_dynamics(CHAIN, DYNAMIC, jnp.zeros(10), jnp.zeros(10), jnp.zeros(3), -1.0),
            r"baumgarte_time must be a positive scalar",
        ),
        (
            lambda: lk.constrained_forward_dynamics(
                CHAIN, DYNAMIC, jnp.zeros(10), jnp.zeros(10), jnp.zeros(3), jnp.ones(2)
            ),
            r"baumgarte_time must be a positive scalar",
        ),
        (
            lambda: lk.index3_residual(CHAIN, DYNAMIC, *(jnp.zeros(10),) * 3, jnp.zeros(7), jnp.zeros(3)),
            r"index3_residual: lam must have the closures' 8 rows, shape \(8,\), got \(7,\)",
        ),
        (
            lambda: lk.index3_residual_at_rest(CHAIN, DYNAMIC, jnp.zeros(10), jnp.zeros(9), jnp.zeros(3)),
            r"index3_residual_at_rest: lam must have the closures' 8 rows",
        ),
        (
            lambda: lk.index3_residual_at_rest(CHAIN, DYNAMIC, jnp.zeros(10), jnp.zeros(8), jnp.zeros(2)),
            r"index3_residual_at_rest: u must have shape \(n_inputs,\) = \(3,\)",
        ),
    ],
)
def test_bad_closures_and_arguments_are_named(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_no_closures_is_the_open_chain():
    q, qd, u = _random_state(CHAIN, 10)
    qdd, lam = lk.constrained_forward_dynamics(CHAIN, (), q, qd, u, 0.1)
    assert lam.shape == (0,) and lk.closure_jacobian(CHAIN, (), q).shape == (0, CHAIN.nv)
    np.testing.assert_allclose(qdd, lk.forward_dynamics(CHAIN, q, qd, u), rtol=1e-10, atol=1e-12)
