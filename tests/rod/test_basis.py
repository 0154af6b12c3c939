"""Strain bases, cross-sections, material, quadrature and the assembled rod data (seed 003 eq. (1), (3), D64, D65)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy.polynomial import legendre as npleg

from jaxse3 import rod as R


def test_legendre_basis_matches_numpy_per_component_and_switches():
    orders = (3, None, 1, 2, None, 0)
    basis = R.LegendreBasis(orders)
    assert basis.n_dof == 4 + 2 + 3 + 1
    L = 0.7
    X = np.linspace(0, L, 9)
    Phi = np.asarray(basis(jnp.asarray(X), L))
    assert Phi.shape == (9, 6, basis.n_dof)
    col = 0
    for i, o in enumerate(orders):
        if o is None:
            assert np.all(Phi[:, i] == 0)
            continue
        for j in range(o + 1):
            np.testing.assert_allclose(Phi[:, i, col + j], npleg.legval(2 * X / L - 1, np.eye(j + 1)[j]), atol=1e-14)
            others = np.delete(Phi[:, :, col + j], i, axis=1)
            assert np.all(others == 0)
        col += o + 1


def test_monomial_and_user_bases():
    L = 2.0
    X = jnp.linspace(0, L, 5)
    Phi = R.MonomialBasis((2, None, None, None, None, 1))(X, L)
    np.testing.assert_allclose(Phi[:, 0, :3], np.stack([np.ones(5), X / L, (X / L) ** 2], -1), atol=1e-15)
    np.testing.assert_allclose(Phi[:, 5, 3:], np.stack([np.ones(5), X / L], -1), atol=1e-15)

    def fn(x, length):
        return jnp.zeros((6, 2)).at[1, 0].set(jnp.sin(x)).at[2, 1].set(x / length)

    ub = R.UserBasis(fn, 2)
    np.testing.assert_allclose(ub(X, L)[:, 1, 0], np.sin(X), atol=1e-15)
    with pytest.raises(ValueError, match=r"shape \(6, 3\)"):
        R.UserBasis(fn, 3)(X, L)
    with pytest.raises(ValueError, match="one order per strain component"):
        R.LegendreBasis((1, 2))
    with pytest.raises(ValueError, match="at least one"):
        R.LegendreBasis((None,) * 6)


def test_gauss_points_integrate_exactly():
    X, w = R.gauss_points(4, 1.3)
    assert X.shape == (6,) and float(w[0]) == 0.0 and float(w[-1]) == 0.0
    assert float(X[0]) == 0.0 and abs(float(X[-1]) - 1.3) < 1e-15
    for k in range(8):  # degree 2n − 1 = 7
        np.testing.assert_allclose(float(jnp.sum(w * X**k)), 1.3 ** (k + 1) / (k + 1), rtol=1e-13)
    with pytest.raises(ValueError, match="n_gauss"):
        R.gauss_points(0, 1.0)


def test_cdm_rod_data():
    rod = R.cdm_rod()
    assert (rod.n_dof, rod.n_points, rod.n_tendons) == (24, 7, 5)
    r = 0.03 - 0.015 * rod.X / 0.5
    np.testing.assert_allclose(rod.contact_radius, r, atol=1e-15)
    A, J = np.pi * r**2, np.pi * r**4 / 4
    np.testing.assert_allclose(rod.inertia[:, 3], rod.weights * 1000.0 * A, rtol=1e-13)
    np.testing.assert_allclose(rod.inertia[:, 0], rod.weights * 1000.0 * 2 * J, rtol=1e-13)
    for Kmat in (rod.stiffness, rod.damping):  # D64, D65: symmetric positive definite for this full basis
        np.testing.assert_allclose(Kmat, Kmat.T, atol=1e-12 * float(jnp.max(jnp.abs(Kmat))))
        assert float(jnp.min(jnp.linalg.eigvalsh(Kmat))) > 0
    # K = ∫ Φᵀ Σ Φ: the (bend_y P0, bend_y P0) entry is ∫ E J_y dX (Gauss is exact for the degree-4 integrand)
    G, E = 1e6 / 3, 1e6
    i = 5  # first bend_y mode
    Xq = np.linspace(0, 0.5, 20001)
    np.testing.assert_allclose(
        float(rod.stiffness[i, i]), np.trapezoid(E * np.pi * (0.03 - 0.03 * Xq) ** 4 / 4, Xq), rtol=1e-7
    )
    np.testing.assert_allclose(
        float(rod.stiffness[0, 0]), np.trapezoid(G * np.pi * (0.03 - 0.03 * Xq) ** 4 / 2, Xq), rtol=1e-7
    )
    # tendon routes of Table 2: cable 1 at z = r(X), helix 4 at radius r_t with d′ of the helix
    np.testing.assert_allclose(rod.tendon_d[0, :, 2], r, atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(rod.tendon_d[3], axis=1), 0.015, atol=1e-15)
    th = 4 * np.pi * rod.X / 0.5
    np.testing.assert_allclose(rod.tendon_dd[3, :, 1], 0.015 * 4 * np.pi / 0.5 * np.cos(th), atol=1e-13)
    np.testing.assert_allclose(rod.tendon_d[4, :, 2], -0.015 * np.cos(th), atol=1e-15)


def test_sections_and_material():
    rect = R.RectangularSection(0.02, 0.01)
    A, Jx, Jy, Jz = rect.moments(jnp.zeros(2), 1.0)
    np.testing.assert_allclose(
        [A[0], Jy[0], Jz[0], Jx[0]], [2e-4, 0.02 * 1e-6 / 12, 0.01 * 8e-6 / 12, (0.02e-6 + 0.08e-6) / 12], rtol=1e-13
    )
    m = R.Material(E=3.0, rho=1.0, nu=0.5)
    assert abs(float(m.G) - 1.0) < 1e-15
    assert float(R.Material(E=3.0, rho=1.0, G=0.7).G) == 0.7
    prof = R.CircularSection(lambda X, L: 0.01 * (1 + X / L))
    np.testing.assert_allclose(prof.radius_at(jnp.array([0.0, 2.0]), 2.0), [0.01, 0.02], atol=1e-16)


def test_rod_construction_is_traceable_for_batches():
    def build(E):
        return R.Rod(0.3, R.CircularSection(0.01), R.Material(E, 1000.0), R.LegendreBasis((1, 1, 1, 0, 0, 0)), 3)

    rods = jax.vmap(build)(jnp.array([1e5, 2e5]))
    assert rods.stiffness.shape == (2, 9, 9)
    np.testing.assert_allclose(rods.stiffness[1], 2 * rods.stiffness[0], rtol=1e-13)
    with pytest.raises(ValueError, match="'gravity'"):
        R.Rod(0.3, R.CircularSection(0.01), R.Material(1e5, 1e3), R.LegendreBasis((1,) * 6), gravity=(0, 1))
    with pytest.raises(ValueError, match="order"):
        R.Rod(0.3, R.CircularSection(0.01), R.Material(1e5, 1e3), R.LegendreBasis((1,) * 6), magnus_order=3)
