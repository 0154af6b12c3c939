"""The fin-ray finger of seed 003 §5.2 (``sim.scenarios.fin_ray_linkage``): its structure, a consistent start, its
geometry and its constrained dynamics at rest.

Oracles independent of the builder: the paper's counts (23 links, 17 soft, 74 DoF, 6 closures of which 5 revolute and
one fixed, 136 rod points); the triangle of the module docstring written out here from its numbers (sidewalls 3 cm
from (0, 0) and (2 cm, 0) to the apex, junctions every 5 mm, horizontal ribs), against which the world positions of
the points at q = 0 are checked, which checks the closures from the positions alone; the closures written with the
spatial kinds (``"revolute"``, ``"fixed"``), whose out-of-plane rows must vanish in this planar mechanism, so that
the planar closures keep every independent row.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk
from jaxse3.linkage._dynamics import link_groups
from jaxse3.sim import scenarios

WALL, BASE = 0.03, 0.02  # sidewall length and base width [m] (module docstring of the scenarios)
HEIGHT = np.sqrt(WALL**2 - (BASE / 2) ** 2)  # the apex's height
N = 6  # soft links per sidewall


def _spatial(closures):
    """The same joints with the spatial kinds: ``"revolute"`` about z for the ribs, ``"fixed"`` at the apex."""
    z = (0.0, 0.0, 1.0)
    ribs = [lk.Closure(c.link_a, c.link_b, "revolute", axis=z, placement_b=c.placement_b) for c in closures[:5]]
    return (*ribs, lk.Closure(closures[5].link_a, closures[5].link_b, "fixed", placement_b=closures[5].placement_b))


@eqx.filter_jit
def _at_rest(linkage, closures, spatial):
    """Everything the tests read at q = 0, q̇ = 0, u = 0, in one compiled call."""
    q = zero = jnp.zeros(linkage.nv)
    qdd, lam = lk.constrained_forward_dynamics(linkage, closures, q, zero, jnp.zeros(linkage.n_inputs), 0.01)
    return dict(
        g=lk.forward_kinematics(linkage, q),
        M=lk.mass_matrix(linkage, q),
        e=lk.closure_error(linkage, closures, q),
        A=lk.closure_jacobian(linkage, closures, q),
        A3=lk.closure_jacobian(linkage, spatial, q),
        qdd=qdd,
        lam=lam,
        etad=lk.point_states(linkage, q, zero, qdd).etad,
    )


@pytest.fixture(scope="module")
def finger():
    linkage, closures = scenarios.fin_ray_linkage()
    spatial = _spatial(closures)
    return linkage, closures, spatial, {k: np.asarray(v) for k, v in _at_rest(linkage, closures, spatial).items()}


def test_structure(finger):
    linkage, closures, _, at = finger
    soft = [link for link in linkage.links if link.joint == "soft"]
    assert len(linkage.links) == 23 and len(soft) == 17
    assert linkage.nv == linkage.nq == 74 == 17 * 4 + 5 + 1
    assert all(link.nv == 4 and link.body.planar for link in soft)
    assert sum(link.n_points for link in soft) == 136  # the paper's n_p
    assert linkage.n_points == 136 + 6
    slider = linkage.links[linkage.index(scenarios.FIN_RAY_ACTUATOR)]
    assert slider.joint == "prismatic" and slider.actuated and slider.parent is None
    hinges = [link for link in linkage.links if link.joint == "revolute"]
    assert len(hinges) == 5 and not any(link.actuated for link in hinges)
    assert [link.joint for link in linkage.links if link.joint not in ("soft", "revolute")] == ["prismatic"]
    assert linkage.n_inputs == 1  # the slider's force
    # zero-inertia joints: M stays positive definite through the rods they carry (equilibrated: M spans decades)
    d = np.sqrt(np.diag(at["M"]))
    assert np.linalg.eigvalsh(at["M"] / np.outer(d, d)).min() > 1e-8
    # 5 revolute closures (planar: 2 rows each) and the fixed apex (its 3 in-plane rows)
    assert len(closures) == 6
    for k, c in enumerate(closures[:5], start=1):
        assert (c.link_a, c.link_b, c.kind, c.k) == (f"rib{k}", f"wall_b{k}", "planar", 2)
        np.testing.assert_array_equal(c.constrained, lk.closure_basis("planar", jnp.array([0.0, 0.0, 1.0])))
    apex = closures[5]
    assert (apex.link_a, apex.link_b, apex.k) == (f"wall_a{N}", f"wall_b{N}", 3)
    np.testing.assert_array_equal(apex.constrained, np.eye(6)[:, [2, 3, 4]])  # ω_z, v_x, v_y
    assert sum(c.k for c in closures) == 13


def test_links_run_in_groups_parents_first(finger):
    """The derivative pass's schedule (link_groups with fewest=True): every link after its parent, members of one
    shape; on the finger, the five hinges together and the five ribs with the last two walls (9 groups, where one
    group per depth and shape makes 13)."""
    linkage = finger[0]
    names = [link.name for link in linkage.links]
    shape = lambda i: jnp.zeros((linkage.links[i].n_points, linkage.links[i].nv))
    for fewest, n in ((False, 13), (True, 9)):
        groups = link_groups(linkage, shape, fewest=fewest)
        assert len(groups) == n and sorted(i for g in groups for i in g) == list(range(len(names)))
        where = {i: k for k, g in enumerate(groups) for i in g}
        assert all(where[p] < where[i] for i, p in enumerate(linkage.parents) if p >= 0)
        assert all(len({shape(i).shape for i in g}) == 1 for g in groups)
    assert [names[i] for i in groups[-2]] == [f"hinge{k}" for k in range(1, N)]
    assert [names[i] for i in groups[-1]] == [f"wall_a{N}", f"wall_b{N}", *(f"rib{k}" for k in range(1, N))]


def test_consistent_start(finger):
    _, _, spatial, at = finger
    assert np.abs(at["e"]).max() < 1e-12
    A = at["A"]
    assert A.shape == (13, 74)
    s = np.linalg.svd(A, compute_uv=False)
    assert s[-1] > 1e-6 * s[0]  # full row rank
    # the spatial kinds: a row is out of the plane where its direction of se(3) has ω_x, ω_y or v_z components (3 per
    # joint); those rows vanish, and the others are A's
    A3 = at["A3"]
    assert A3.shape == (5 * 5 + 6, 74)
    out = np.concatenate([np.abs(np.asarray(c.constrained)[[0, 1, 5]]).sum(0) > 0.5 for c in spatial])
    assert out.sum() == 6 * 3
    assert np.abs(A3[out]).max() < 1e-12 * np.abs(A).max()
    np.testing.assert_allclose(A3[~out], A, rtol=0, atol=1e-12 * np.abs(A).max())


def test_geometry(finger):
    linkage, _, _, at = finger
    g = at["g"]
    p = g[:, :3, 3]
    assert np.abs(p[:, 2]).max() < 1e-14  # every point in the plane z = 0
    np.testing.assert_allclose(g[:, :3, 2], np.tile([0.0, 0.0, 1.0], (len(g), 1)), atol=1e-14)
    tip = lambda name: p[linkage.points_of(name)][-1]
    base = lambda name: p[linkage.points_of(name)][0]
    junction_a = lambda k: k / N * np.array([BASE / 2, HEIGHT, 0.0])
    junction_b = lambda k: np.array([BASE, 0.0, 0.0]) + k / N * np.array([-BASE / 2, HEIGHT, 0.0])
    np.testing.assert_allclose(tip(scenarios.FIN_RAY_ACTUATOR), [BASE, 0.0, 0.0], atol=1e-14)
    for k in range(1, N + 1):
        np.testing.assert_allclose(base(f"wall_a{k}"), junction_a(k - 1), atol=1e-14)
        np.testing.assert_allclose(tip(f"wall_a{k}"), junction_a(k), atol=1e-14)
        np.testing.assert_allclose(base(f"wall_b{k}"), junction_b(k - 1), atol=1e-14)
        np.testing.assert_allclose(tip(f"wall_b{k}"), junction_b(k), atol=1e-14)
    np.testing.assert_allclose(tip(f"wall_a{N}"), [BASE / 2, HEIGHT, 0.0], atol=1e-14)  # the apex
    for k in range(1, N):
        rib = p[linkage.points_of(f"rib{k}")]
        np.testing.assert_allclose(rib[:, 1], junction_a(k)[1], atol=1e-14)  # horizontal
        assert np.all(np.diff(rib[:, 0]) >= 0)
        np.testing.assert_allclose(tip(f"hinge{k}"), junction_a(k), atol=1e-14)
        np.testing.assert_allclose(rib[0], junction_a(k), atol=1e-14)
        np.testing.assert_allclose(rib[-1], junction_b(k), atol=1e-14)  # closed on sidewall B


def test_constrained_dynamics_at_rest(finger):
    _, _, _, at = finger
    qdd, lam, A = at["qdd"], at["lam"], at["A"]
    assert qdd.shape == (74,) and lam.shape == (13,)
    assert np.isfinite(qdd).all() and np.isfinite(lam).all() and np.abs(qdd).max() > 0
    # at rest on the manifold the Baumgarte terms vanish: A q̈ = 0, relative to the terms of A q̈
    assert np.abs(A @ qdd).max() < 1e-9 * (np.abs(A) @ np.abs(qdd)).max()
    # the motion stays in the plane: no out-of-plane body acceleration at any point
    etad = at["etad"]
    assert np.abs(etad[:, [0, 1, 5]]).max() < 1e-12 * np.abs(etad).max()


def test_the_prescribed_system_starts_consistent():
    """``scenarios.fin_ray()``: the closed chain with its slider prescribed (13 closure rows + 1 prescription), inputs
    (d, ḋ, d̈) of the raised-cosine strokes; at rest at q = 0 the constraints and their rates vanish (what
    ``solver="newmark-index3"`` requires), and the slider's row is the slider's coordinate minus d(t)."""
    import jax

    system, inputs = scenarios.fin_ray()
    assert (system.n_dof, system.n_constraints, system.n_inputs) == (74, 14, 3)
    linkage = system.params.linkage
    slider = linkage.v_slice(linkage.index(scenarios.FIN_RAY_ACTUATOR)).start
    q0 = jnp.zeros(74)
    e = lambda q, t: system.constraint(system.params, q, inputs(t))

    @jax.jit
    def rates(q, qd, t):
        return jax.jvp(e, (q, t), (qd, jnp.ones_like(t)))

    value, rate = rates(q0, q0, jnp.asarray(0.0))
    np.testing.assert_allclose(value, 0.0, atol=1e-12)
    np.testing.assert_allclose(rate, 0.0, atol=1e-12)
    half = scenarios.FIN_RAY_PERIOD / 2
    stroke, omega = scenarios.FIN_RAY_STROKE, 2 * np.pi / scenarios.FIN_RAY_PERIOD
    np.testing.assert_allclose(inputs(half), [stroke, 0.0, -stroke * omega**2 / 2], atol=1e-15)
    moved = q0.at[slider].set(0.5e-3)
    np.testing.assert_allclose(rates(moved, q0, jnp.asarray(half))[0][-1], 0.5e-3 - scenarios.FIN_RAY_STROKE)


@pytest.mark.slow
def test_the_prescribed_stroke_keeps_the_closures_and_moves_the_finger_in_its_plane():
    """``scenarios.fin_ray(n_gauss=2)`` (the same 74 DoF and 14 constraint rows, 4 points per soft link for a shorter
    compile) under ``solver="newmark-index3"`` (seed 003 eq. (52): closures and prescription in every step's Newton
    system), 30 steps of 10 ms from rest: every step converges; the closures hold, ‖e‖ ≤ 1e−9 at every sample
    (9.4e−12 over the benchmark's 10 s; the Baumgarte forms drift to 1e−6); the slider's coordinate is the
    prescribed d(t) of the raised-cosine stroke written out here; the finger moves (its points by more than 1 µm),
    and every point stays in its plane z = 0."""
    from jaxse3 import sim

    system, inputs = scenarios.fin_ray(n_gauss=2)
    assert (system.n_dof, system.n_constraints) == (74, 14)
    traj = sim.constraint_drift(
        system, sim.simulate(system, inputs, t_final=0.3, solver="newmark-index3", dt=0.01, n_save=31)
    )
    assert traj.ok, traj.message
    assert np.asarray(traj.monitors["closure_error"]).max() < 1e-9
    linkage = system.params.linkage
    slider = linkage.v_slice(linkage.index(scenarios.FIN_RAY_ACTUATOR)).start
    t = np.asarray(traj.t)
    d = scenarios.FIN_RAY_STROKE * (1 - np.cos(2 * np.pi * t / scenarios.FIN_RAY_PERIOD)) / 2
    np.testing.assert_allclose(np.asarray(traj.q)[:, slider], d, rtol=0, atol=1e-12)
    points = np.asarray(traj.points)
    assert np.abs(points[:, :, 2]).max() < 1e-12
    moved = np.linalg.norm(points[-1] - points[0], axis=-1)
    assert np.isfinite(points).all() and moved.max() > 1e-6
