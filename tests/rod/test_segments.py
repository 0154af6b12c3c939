"""Per-segment quadrature (``Rod(..., n_segments=s)``) and the piecewise constant strain basis (PCS)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rod as R, se3, sim
from jaxse3.rod.geometry import segment_gauss_points

PLANAR = ("bend_z", "elongation", "shear_y")


def _segment_slices(n_segments, n_gauss):
    """Indices of the Gauss points of each segment in the point list (base, seg 0, end, seg 1, ..., tip)."""
    return [slice(1 + i * (n_gauss + 1), 1 + i * (n_gauss + 1) + n_gauss) for i in range(n_segments)]


@pytest.mark.parametrize("n_segments, n_gauss", [(1, 3), (2, 1), (2, 5), (3, 4)])
def test_segment_points_integrate_polynomials_exactly_on_each_segment(n_segments, n_gauss):
    L = 0.7
    X, w = (np.asarray(a) for a in segment_gauss_points(n_segments, n_gauss, L))
    assert X.shape == w.shape == (n_segments * (n_gauss + 1) + 1,)
    assert np.all(np.diff(X) > 0) and X[0] == 0.0 and X[-1] == L
    ends = np.arange(n_segments + 1) * (n_gauss + 1)  # base, interior segment ends, tip
    assert np.all(w[ends] == 0.0) and np.all(w[np.setdiff1d(np.arange(X.size), ends)] > 0)
    np.testing.assert_array_equal(X[ends[:-1]], np.arange(n_segments) * L / n_segments)
    for i, sl in enumerate(_segment_slices(n_segments, n_gauss)):
        a, b = i * L / n_segments, (i + 1) * L / n_segments
        assert np.all((X[sl] > a) & (X[sl] < b))
        for k in range(2 * n_gauss):  # degree 2 n_gauss − 1
            np.testing.assert_allclose(np.sum(w[sl] * X[sl] ** k), (b ** (k + 1) - a ** (k + 1)) / (k + 1), rtol=1e-13)


def test_one_segment_reproduces_todays_points_and_rod_bit_for_bit():
    for n in (1, 2, 5, 7):
        for L in (0.5, 1.3, 0.1):
            for a, b in zip(R.gauss_points(n, L), segment_gauss_points(1, n, L)):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    args = (
        0.4,
        R.CircularSection(0.02, 0.012),
        R.Material(2e5, 1100.0, damping=5.0),
        R.LegendreBasis((2, 2, 2, 1, 1, 1)),
    )
    old, new = R.Rod(*args, n_gauss=3), R.Rod(*args, n_gauss=3, n_segments=1)
    for a, b in zip(jax.tree.leaves(old), jax.tree.leaves(new)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: segment_gauss_points(0, 3, 1.0), "segment_gauss_points: 'n_segments' must be a positive int, got 0"),
        (lambda: segment_gauss_points(2, 0, 1.0), "segment_gauss_points: 'n_gauss' must be a positive int, got 0"),
        (lambda: segment_gauss_points(2.0, 3, 1.0), "'n_segments' must be a positive int, got 2.0"),
        (lambda: R.PiecewiseConstantBasis(0), "PiecewiseConstantBasis: 'n_segments' must be a positive int, got 0"),
        (lambda: R.PiecewiseConstantBasis(2, ("bend",)), "each of 'components' must be a strain name"),
        (lambda: R.PiecewiseConstantBasis(2, (6,)), "each of 'components' must be a strain name"),
        (lambda: R.PiecewiseConstantBasis(2, ("bend_z", 2)), "'components' must not repeat a strain component"),
        (lambda: R.PiecewiseConstantBasis(2, ()), "'components' must name at least one strain component"),
        (lambda: _rod(R.PiecewiseConstantBasis(2, PLANAR), n_segments=0), "Rod: 'n_segments' must be a positive int"),
        (lambda: _rod(R.PiecewiseConstantBasis(2, PLANAR), n_segments=True), "Rod: 'n_segments' must be a positive"),
        (lambda: _rod(R.PiecewiseConstantBasis(2, PLANAR), n_segments=3), "Rod: 'n_segments' must be a multiple of"),
        (lambda: _rod(R.PiecewiseConstantBasis(2, PLANAR), n_gauss=0), "Rod: 'n_gauss' must be a positive int, got 0"),
        (
            lambda: _rod(R.LegendreBasis((4, 4, 4, 2, 2, 2)), n_gauss=2, n_segments=2),
            "Rod: 'n_gauss' must be at least 3 (highest order + 1 Gauss points in all, over 2 segments)",
        ),
    ],
)
def test_nonsense_arguments_are_rejected(build, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        build()


def _rod(basis, n_gauss=5, n_segments=2, E=5e6, gravity=(0.0, -9.81, 0.0), magnus_order=2, **kwargs):
    return R.Rod(
        0.5,
        R.CircularSection(0.02),
        R.Material(E, 1000.0, G=E / 3, damping=1e3),
        basis,
        n_gauss=n_gauss,
        magnus_order=magnus_order,
        gravity=gravity,
        n_segments=n_segments,
        **kwargs,
    )


def test_polynomial_basis_needs_enough_gauss_points_over_all_segments():
    """Order 4 needs 5 Gauss points: 3 per segment over 2 segments is enough (full-rank stiffness)."""
    rod = _rod(R.LegendreBasis((4, 4, 4, 2, 2, 2)), n_gauss=3, n_segments=2, magnus_order=4)
    assert rod.n_points == 2 * 4 + 1
    assert np.linalg.eigvalsh(np.asarray(rod.stiffness))[0] > 0


def test_pcs_basis_is_the_indicator_of_segment_and_component():
    L, n = 0.6, 3
    basis = R.PiecewiseConstantBasis(n, ("elongation", 2))  # a name and an index (bend_z)
    assert basis.components == (3, 2) and basis.n_dof == 6
    assert R.PiecewiseConstantBasis(2, (2, 3, 4)).components == R.PiecewiseConstantBasis(2, PLANAR).components
    X = np.array([0.0, 0.1, 0.2 - 1e-12, 1 * L / 3, 0.3, 2 * L / 3, 0.59, L])
    seg = np.array([0, 0, 0, 1, 1, 2, 2, 2])  # an end belongs to the segment it opens; the tip to the last one
    Phi = np.asarray(basis(jnp.asarray(X), L))
    assert Phi.shape == (X.size, 6, 6)
    want = np.zeros_like(Phi)
    for k, s in enumerate(seg):
        want[k, 3, 2 * s] = want[k, 2, 2 * s + 1] = 1.0
    np.testing.assert_array_equal(Phi, want)
    np.testing.assert_array_equal(np.asarray(basis.segment_index(jnp.asarray(X), L)), seg)


def test_magnus_intervals_lie_in_one_segment_and_pick_it():
    rod = _rod(R.PiecewiseConstantBasis(3, PLANAR), n_gauss=2, n_segments=3, magnus_order=4)
    X, Phi_c = np.asarray(rod.X), np.asarray(rod.Phi_c)
    assert rod.n_points == 3 * 3 + 1 and Phi_c.shape == (rod.n_points - 1, 2, 6, 9)
    for a in range(rod.n_points - 1):
        s = int(np.floor((X[a] + X[a + 1]) / 2 / (0.5 / 3)))  # the segment holding the interval
        want = np.zeros((6, 9))
        want[[2, 3, 4], [3 * s, 3 * s + 1, 3 * s + 2]] = 1.0
        np.testing.assert_array_equal(Phi_c[a, 0], want)
        np.testing.assert_array_equal(Phi_c[a, 1], want)


def test_stiffness_is_block_diagonal_with_segment_lengths():
    """K = (L/s) diag(E J_z, E A, G A) per segment (D64, PCS), as in SoRoMoX."""
    rod = _rod(R.PiecewiseConstantBasis(2, PLANAR))
    A, J, E = np.pi * 0.02**2, np.pi * 0.02**4 / 4, 5e6
    np.testing.assert_allclose(
        np.asarray(rod.stiffness), 0.25 * np.diag(np.tile([E * J, E * A, E / 3 * A], 2)), rtol=1e-14
    )


def test_uniform_pcs_strain_gives_the_constant_strain_tip_pose():
    """Equal strains on both segments = one segment with a constant basis = exp(L ξ̂) (closed form)."""
    L = 0.5
    dxi = np.array([0.4, -1.1, 2.3, 0.05, -0.02, 0.03])
    pcs = _rod(R.PiecewiseConstantBasis(2), gravity=(0.0, 0.0, 0.0))
    const = _rod(R.LegendreBasis((0,) * 6), n_segments=1, gravity=(0.0, 0.0, 0.0))
    oracle = np.asarray(se3.exp(jnp.asarray(L * (dxi + np.array([0, 0, 0, 1.0, 0, 0])))))
    tip_pcs = np.asarray(R.tip_pose(pcs, jnp.asarray(np.tile(dxi, 2))))
    tip_const = np.asarray(R.tip_pose(const, jnp.asarray(dxi)))
    np.testing.assert_allclose(tip_pcs, oracle, atol=1e-14)
    np.testing.assert_allclose(tip_const, oracle, atol=1e-14)


def test_static_deflection_under_gravity_matches_small_deflection_theory():
    """A stiff horizontal cantilever (tip deflection 1.5 % of L): ``solve_statics`` converges, and the tip deflection
    agrees with the PCS small-deflection estimate (segment curvature = mean Euler–Bernoulli curvature, which gives
    (11/96) wL⁴/EI for two segments) to 1 %, and with the beam's wL⁴/(8EI) to 10 % (the PCS discretisation error is
    8.3 %)."""
    E, L, r = 5e7, 0.5, 0.02
    rod = _rod(R.PiecewiseConstantBasis(2, PLANAR), E=E)
    sol = sim.solve_statics(sim.rod_system(rod))
    assert bool(sol.converged) and bool(sol.stable)
    w, EI = 1000.0 * np.pi * r**2 * 9.81, E * np.pi * r**4 / 4
    deflection = -float(sol.tip[1])
    np.testing.assert_allclose(deflection, 11 / 96 * w * L**4 / EI, rtol=1e-2)
    np.testing.assert_allclose(deflection, w * L**4 / (8 * EI), rtol=0.1)
    q = np.asarray(sol.q)
    assert q[0] < q[3] < 0  # the root segment bends more; both bend down


@pytest.mark.parametrize("magnus_order", [2, 4])
def test_constant_strain_runs_equal_the_joint_by_joint_kinematics(magnus_order):
    """A PCS rod with a constant reference strain forms ad_ξ's powers once per run of constant strain
    (``strain_run`` = n_gauss + 1, se3.dexp_rates along the run) and evaluates each run's points side by side from the
    run's first point: the chain becomes a tree of stars, and the App. C recursions sum over each anchor's joints. The
    same rod with the reference strain given as a callable is integrated joint by joint from the Magnus expansion
    (``strain_run`` = 1). Both must agree to round-off in every entry point that runs the kinematics: ID and its
    derivatives, M, ID at rest and its Jacobian (statics), FD and its Jacobians with and without external loads
    (point wrenches, contact), the generalised forces' Jacobians, the body Jacobians and the poses."""
    ref = (0.1, -0.3, 2.0, 1.0, 0.05, 0.0)  # precurved, sheared
    basis = R.PiecewiseConstantBasis(2)
    runs = _rod(basis, n_gauss=2, magnus_order=magnus_order, xi_star=ref)
    joints = _rod(basis, n_gauss=2, magnus_order=magnus_order, xi_star=lambda X, L: jnp.asarray(ref))
    assert runs.strain_run == 3 and joints.strain_run == 1
    q, qd, qdd = (0.5 * jax.random.normal(jax.random.PRNGKey(k), (12,)) for k in range(3))
    wrenches = jax.random.normal(jax.random.PRNGKey(3), (2, runs.n_points, 6))
    loads = R.Loads(local=wrenches[0], world=wrenches[1], contact=R.CylinderContact(0.1, 1e3, 1.5))

    def outputs(rod):
        return (
            R.inverse_dynamics(rod, q, qd, qdd),
            *R.inverse_dynamics_derivatives(rod, q, qd, qdd),
            R.mass_matrix(rod, q),
            R.inverse_dynamics_at_rest(rod, q),
            jax.jacfwd(R.inverse_dynamics_at_rest, argnums=1)(rod, q),
            R.forward_dynamics(rod, q, qd),
            *R.forward_dynamics_jacobians(rod, q, qd),
            R.forward_dynamics(rod, q, qd, loads=loads),
            *R.forward_dynamics_jacobians(rod, q, qd, loads=loads),
            *R.generalized_forces_derivatives(rod, q, qd, loads=loads),
            R.body_jacobians(rod, q),
            R.forward_kinematics(rod, q),
        )

    for a, b in zip(outputs(runs), outputs(joints), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-10 * max(1.0, np.abs(b).max()))


def _planar_rods():
    """Planar rods: a PCS rod with a precurved, sheared in-plane reference strain (runs of constant strain) and a
    Legendre rod with Magnus order 4 (joint by joint); each tilted out of the world axes by its base pose, under a
    gravity with an out-of-plane component (which does no work on a planar rod), with a tapered tendon in the plane."""
    base = se3.exp(jnp.asarray([0.4, -0.7, 0.2, 0.1, 0.0, -0.3]))
    tendon = R.Tendon(lambda X, L: jnp.stack([0.01 * (1.0 - X / L) + 0.004, jnp.zeros_like(X)]))  # in the plane
    common = dict(gravity=(1.0, -9.0, 3.0), base_pose=base, tendons=(tendon,))
    pcs = _rod(R.PiecewiseConstantBasis(2, PLANAR), n_gauss=2, xi_star=(0.0, 0.0, 1.5, 1.1, -0.1, 0.0), **common)
    legendre = _rod(R.LegendreBasis((None, None, 2, 1, 1, None)), n_gauss=3, n_segments=1, magnus_order=4, **common)
    return pcs, legendre


def test_planar_rods_are_detected_and_nothing_else():
    pcs, legendre = _planar_rods()
    assert pcs.planar and legendre.planar and pcs.strain_run == 3 and legendre.strain_run == 1
    assert not _rod(R.PiecewiseConstantBasis(2)).planar  # all six strains
    assert not _rod(R.PiecewiseConstantBasis(2, PLANAR), xi_star=(0.1, 0.0, 0.0, 1.0, 0.0, 0.0)).planar  # twisted
    assert not _rod(R.LegendreBasis((None, 1, 2, 1, 1, None)), n_gauss=3, n_segments=1).planar  # bends out of plane
    assert not R.cdm_rod().planar


@pytest.mark.parametrize("which", ["pcs", "legendre"])
def test_planar_recursions_on_se2_equal_the_spatial_ones(which):
    """A planar rod's recursions run on SE(2) (3-vectors, 3×3 operators); with external loads they run on SE(3), so
    the same rod under a zero point wrench is the oracle: ID, M, ∂ID/∂(q, q̇), the statics Jacobian, FD and its
    Jacobians (under jit and vmap) to round-off. The matrix-free ID (SE(3)) and M = ∂ID/∂q̈ close the loop."""
    rod = dict(zip(["pcs", "legendre"], _planar_rods()))[which]
    n = rod.n_dof
    q, qd, qdd = (0.6 * jax.random.normal(jax.random.PRNGKey(k), (4, n)) for k in range(3))
    spatial = R.Loads(local=jnp.zeros((rod.n_points, 6)))  # no load, but the SE(3) recursions
    rnea = R._inverse_dynamics.rnea

    def outputs(q, qd, qdd, loads):
        r, rest = rnea(rod, q, qd, qdd, loads, level="all"), rnea(rod, q, None, None, loads, level="all")
        mass = rnea(rod, q, qd, qdd, loads, level="mass")
        u = jnp.asarray([2.0])  # a pulling tendon
        fd = R.forward_dynamics(rod, q, qd, u, loads), *R.forward_dynamics_jacobians(rod, q, qd, u, loads)
        return r.tau, r.M, r.dq, r.dqd, rest.tau, rest.dq, mass.tau, mass.M, *fd

    for a, b in zip(
        jax.jit(jax.vmap(lambda *x: outputs(*x, None)))(q, qd, qdd),
        jax.jit(jax.vmap(lambda *x: outputs(*x, spatial)))(q, qd, qdd),
        strict=True,
    ):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-11 * np.abs(b).max())
    id_plain = jax.jit(jax.vmap(lambda *x: R.inverse_dynamics(rod, *x)))(q, qd, qdd)
    tau = jax.jit(lambda *x: outputs(*x, None)[0])(q[0], qd[0], qdd[0])
    np.testing.assert_allclose(tau, id_plain[0], atol=1e-11 * np.abs(id_plain).max())
    joints = jax.jit(lambda q, qd: R.kinematics.joints(rod, q, qd, anchored=True, planar=True, derivatives=True))(
        q[0], qd[0]
    )
    assert joints.S.shape == joints.dSd_qd.shape == (rod.n_points - 1, 3, n) and joints.step.shape[1:] == (3, 3)
