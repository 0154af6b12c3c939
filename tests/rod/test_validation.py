"""Nonsense rod models are rejected at construction with a ValueError naming the argument; traced values pass."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rod as R

CDM_ORDERS = (4, 4, 4, 2, 2, 2)


def _rod(length=0.3, section=None, material=None, basis=None, n_gauss=3, **kwargs):
    return R.Rod(
        length,
        section or R.CircularSection(0.01),
        material or R.Material(1e5, 1e3),
        basis or R.LegendreBasis((1, 1, 1, 0, 0, 0)),
        n_gauss,
        **kwargs,
    )


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: _rod(length=-1.0), "Rod: 'length' must be positive, got -1.0"),
        (lambda: _rod(length=0), "Rod: 'length' must be positive, got 0.0"),
        (lambda: R.CircularSection(-0.01), "CircularSection: 'radius' must be positive, got -0.01"),
        (lambda: R.CircularSection(0.01, 0.0), "CircularSection: 'radius_tip' must be positive"),
        (lambda: R.RectangularSection(0.01, 0.0), "RectangularSection: 'height' must be positive, got 0.0"),
        (lambda: R.RectangularSection(-0.01, 0.02), "RectangularSection: 'width' must be positive, got -0.01"),
        (lambda: R.Material(0.0, 1e3), "Material: 'E' must be positive, got 0.0"),
        (lambda: R.Material(-1e5, 1e3), "Material: 'E' must be positive, got -100000.0"),
        (lambda: R.Material(1e5, 0.0), "Material: 'rho' must be positive, got 0.0"),
        (lambda: R.Material(1e5, 1e3, nu=0.6), "Material: 'nu' must be in (-1, 0.5], got 0.6"),
        (lambda: R.Material(1e5, 1e3, nu=-1.0), "Material: 'nu' must be in (-1, 0.5], got -1.0"),
        (lambda: R.Material(1e5, 1e3, G=0.0), "Material: 'G' must be positive, got 0.0"),
        (lambda: R.Material(1e5, 1e3, damping=-1.0), "Material: 'damping' must be non-negative, got -1.0"),
        (lambda: R.Material(float("nan"), 1e3), "Material: 'E' must be positive, got nan"),
        (lambda: _rod(gravity=(0.0, 0.0, float("inf"))), "Rod: 'gravity' must be finite"),
        (lambda: _rod(base_pose=np.full((4, 4), np.nan)), "Rod: 'base_pose' must be finite"),
        (
            lambda: _rod(section=R.CircularSection(lambda X, L: 0.01 * (1 - X / L))),
            "Rod: 'section' must have a positive area at every computational point",
        ),
        (lambda: R.UserBasis(lambda X, L: jnp.zeros((6, 1)), 0), "UserBasis: 'n_dof' must be a positive int, got 0"),
    ],
)
def test_nonsense_values_are_rejected(build, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        build()


def test_boundary_values_are_accepted():
    R.Material(1e5, 1e3, nu=0.5, damping=0.0)
    R.Material(1e5, 1e3, nu=-0.99)
    _rod(section=R.RectangularSection(0.02, 0.01), gravity=(0.0, 0.0, 0.0))


@pytest.mark.parametrize("basis_cls", [R.LegendreBasis, R.MonomialBasis])
def test_too_few_gauss_points_for_the_basis(basis_cls):
    """Each strain component's stiffness block is a sum of n_gauss rank-one terms: singular when n_gauss < p + 1."""
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"Rod: 'n_gauss' must be at least 5 (highest order + 1) for {basis_cls.__name__}(4, 4, 4, 2, 2, 2), got 4"
        ),
    ):
        _rod(basis=basis_cls(CDM_ORDERS), n_gauss=4)
    with pytest.raises(ValueError, match="'n_gauss' must be at least 3"):
        _rod(basis=basis_cls((None, 2, 2, None, None, None)), n_gauss=2)


def test_cdm_default_quadrature_is_at_the_limit_and_nonsingular():
    """The CDM's 5 Gauss points are the minimum for order 4: its stiffness has full rank. Its smallest eigenvalue is
    7.6 % below the converged one (20 points): the taper's r⁴ makes the order-4 integrand of degree 12, beyond the 9
    that 5 points integrate exactly (6 points: 4e-4). Four points would lose one mode of each of the three angular
    components (rank 21 of the Gram matrix on them)."""
    e5, e6, e20 = (np.linalg.eigvalsh(np.asarray(R.cdm_rod(n_gauss=n).stiffness)) for n in (5, 6, 20))
    assert e5[0] > 1e-6 * e5[-1]
    assert abs(e5[0] / e20[0] - 1) < 0.1 and abs(e6[0] / e20[0] - 1) < 1e-3
    basis = R.LegendreBasis(CDM_ORDERS)
    X, w = R.gauss_points(4, jnp.asarray(0.5))
    Phi = np.asarray(basis(X, 0.5))
    assert np.linalg.matrix_rank(np.einsum("k,kin,kim->nm", np.asarray(w), Phi, Phi)) == 21
    with pytest.raises(ValueError, match="'n_gauss' must be at least 5"):
        R.cdm_rod(n_gauss=4)


def test_user_basis_rank_is_checked():
    """A UserBasis with three bending modes (1, s, s²) is singular on two Gauss points, regular on three."""

    def fn(X, L):
        s = X / L
        return jnp.zeros((6, 3)).at[1].set(jnp.stack([jnp.ones_like(s), s, s**2]))

    with pytest.raises(ValueError, match=r"UserBasis sampled at the n_gauss = 2 Gauss points has rank 2 < n_dof = 3"):
        _rod(basis=R.UserBasis(fn, 3), n_gauss=2)
    assert _rod(basis=R.UserBasis(fn, 3), n_gauss=3).n_dof == 3


def test_construction_stays_traceable():
    """Under vmap/jit the values are tracers: not checked, and the rods are built (a batch of lengths and tapers)."""

    def build(length, radius_tip, E):
        return _rod(length=length, section=R.CircularSection(0.01, radius_tip), material=R.Material(E, 1e3))

    rods = jax.vmap(build)(jnp.array([0.3, 0.4]), jnp.array([0.005, 0.008]), jnp.array([1e5, 2e5]))
    assert rods.stiffness.shape == (2, 9, 9)
    np.testing.assert_allclose(rods.length, [0.3, 0.4])
    rod = jax.jit(lambda E: _rod(material=R.Material(E, 1e3)))(1e5)
    assert bool(jnp.all(jnp.linalg.eigvalsh(rod.stiffness) > 0))
