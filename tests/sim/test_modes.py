"""Modal analysis (:func:`jaxse3.sim.natural_modes`) of a straight cantilever rod without gravity against the
classical closed forms of a clamped–free rod of length L:

* bending: ω_i = (β_i L)² √(EI/(ρA L⁴)), β₁L = 1.8751040687, β₂L = 4.6940911330 (Euler–Bernoulli; the Cosserat
  rod's rotary inertia lowers them by O((β_i r)²), 1e−6 to 1e−4 here);
* axial: ω₁ = (π/2) √(E/ρ) / L;   torsion: ω₁ = (π/2) √(G/ρ) / L (circular section: GJ/(ρI_p) = G/ρ).

Also: the shapes are M-orthonormal, a rod hanging under gravity has its bending frequencies raised (tension
stiffening) and a standing one, heavier than its buckling load, unstable directions (NaN frequencies), Beck's
follower-loaded column flutters at 20.05 EI/L², and bad arguments are named.
"""

import numpy as np
import pytest

from jaxse3 import rod
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material
from jaxse3.sim import natural_modes, rod_system, solve_statics

L, R, E, RHO, NU = 0.5, 0.001, 1e6, 1000.0, 0.5
G = E / (2 * (1 + NU))
AREA, I_BEND = np.pi * R**2, np.pi * R**4 / 4


def _rod(gravity=(0.0, 0.0, 0.0)):
    return rod.Rod(
        length=L,
        section=CircularSection(R),
        material=Material(E=E, rho=RHO, nu=NU, damping=0.0),
        basis=LegendreBasis((4, 10, None, 4, None, None)),  # torsion, bending about y, elongation
        n_gauss=12,
        gravity=gravity,
    )


@pytest.fixture(scope="module")
def modes():
    system = rod_system(_rod())
    return system, natural_modes(system)


def _nearest(omega, target):
    return omega[np.nanargmin(np.abs(omega - target))]


def test_the_cantilevers_frequencies_are_the_closed_forms(modes):
    """Observed relative errors: bending 6.8e−6 and 4.9e−5 (below Euler–Bernoulli: rotary inertia, O((β_i r)²)),
    axial and torsion 3e−7 (the Legendre basis resolving the quarter sines). Bounds 1e−4 and 1e−5."""
    _, m = modes
    bend = [(b**2) * np.sqrt(E * I_BEND / (RHO * AREA * L**4)) for b in (1.8751040687119611, 4.6940911329741745)]
    axial = 0.5 * np.pi * np.sqrt(E / RHO) / L
    torsion = 0.5 * np.pi * np.sqrt(G / RHO) / L
    assert np.all(np.isfinite(m.omega)) and np.all(np.diff(m.omega) >= 0)
    np.testing.assert_allclose(m.omega[:2], bend, rtol=1e-4)
    for target in (axial, torsion):
        np.testing.assert_allclose(_nearest(m.omega, target), target, rtol=1e-5)
    np.testing.assert_allclose(m.frequency, m.omega / (2 * np.pi))


def test_without_rotary_inertia_and_shear_the_bending_frequencies_are_euler_bernoullis():
    """Bending alone (no shear, no stretch: a Kirchhoff rod) and ``rotary_inertia=False``: the Euler–Bernoulli
    clamped–free frequencies (β_i L: the roots of cos·cosh = −1). Observed relative errors at Legendre order 8 and 40
    Gauss points: −1.6e−8, −2.7e−7, −1.9e−6 (first three); the GVS kinematics' Magnus intervals converge them as h⁴
    (−2.5e−7, −4.1e−6, −4.4e−5 at 20 points)."""
    r = rod.Rod(
        length=L,
        section=CircularSection(R),
        material=Material(E=E, rho=RHO, nu=NU),
        basis=LegendreBasis((None, 8, None, None, None, None)),
        n_gauss=40,
        gravity=(0.0, 0.0, 0.0),
        rotary_inertia=False,
    )
    roots = (1.8751040687119611, 4.6940911329741745, 7.8547574382376126)
    bend = [(b**2) * np.sqrt(E * I_BEND / (RHO * AREA * L**4)) for b in roots]
    omega = natural_modes(rod_system(r)).omega[:3]
    np.testing.assert_allclose(omega[:2], bend[:2], rtol=1e-6)
    np.testing.assert_allclose(omega[2], bend[2], rtol=1e-5)


def test_shapes_are_mass_orthonormal(modes):
    system, m = modes
    import jax
    import jax.numpy as jnp

    q = jnp.zeros(system.n_dof)
    M = -np.asarray(jax.jit(jax.jacfwd(lambda a: system.residual(system.params, q, q, a, jnp.zeros(0))))(q))
    np.testing.assert_allclose(m.shapes.T @ M @ m.shapes, np.eye(system.n_dof), atol=1e-9)


def test_gravity_stiffens_a_hanging_rod_and_destabilises_an_inverted_one(modes):
    """Gravity along the rod (the rod hanging from its base): tension raises the first bending frequency from 0.222
    to 5.36 rad/s (observed); gravity against it (the rod standing on its base, its self-weight ρAgL³/EI = 4900 far
    beyond the buckling value 7.84): the straight equilibrium, which statics still finds by symmetry, has unstable
    directions, ω² < 0 and NaN frequencies."""
    _, straight = modes
    hanging, standing = (rod_system(_rod(gravity=(sign * 9.81, 0.0, 0.0))) for sign in (1.0, -1.0))
    m = natural_modes(hanging, solve_statics(hanging).q)
    assert np.all(np.isfinite(m.omega)) and m.omega[0] > 10 * straight.omega[0]
    m = natural_modes(standing, solve_statics(standing).q)
    assert m.omega_squared[0] < 0 and np.isnan(m.omega[0])


def test_becks_column_flutters_at_its_critical_follower_load():
    """Beck's column: the cantilever under a compressive follower force P at its tip (a local wrench). The load is not
    conservative, K is unsymmetric, and the first two frequencies approach each other and coalesce into a complex
    pair — flutter — at P_cr = 20.05 EI/L² (Beck 1952). Observed: finite and distinct at 0.99 P_cr (0.634 and
    0.762 rad/s), a NaN pair (complex ω²) at 1.01 P_cr. Below it the modes solve K φ = ω² M φ with φᵀMφ = 1."""
    import jax
    import jax.numpy as jnp

    r = _rod()
    p_cr = 20.05 * E * I_BEND / L**2
    follower = lambda f: rod_system(r, rod.Loads.at_tip(r, [0.0, 0.0, 0.0, -f * p_cr, 0.0, 0.0], frame="local"))
    below, above = (natural_modes(follower(f)) for f in (0.99, 1.01))
    assert np.all(np.isfinite(below.omega[:2])) and below.omega[1] - below.omega[0] < 0.2 * below.omega[1]
    assert np.all(np.isnan(above.omega[:2])) and np.isfinite(above.omega[2])
    system = follower(0.5)
    q = jnp.zeros(system.n_dof)
    residual = lambda q, a: system.residual(system.params, q, jnp.zeros_like(q), a, jnp.zeros(0))
    K, M = (-np.asarray(x) for x in jax.jit(jax.jacfwd(residual, (0, 1)))(q, q))
    assert np.abs(K - K.T).max() > 1e-8 * np.abs(K).max()  # 4e−7: the follower force
    m = natural_modes(system)
    for k in range(3):
        phi = m.shapes[:, k]
        np.testing.assert_allclose(K @ phi, m.omega_squared[k] * (M @ phi), rtol=0, atol=1e-8 * np.abs(K).max())
        np.testing.assert_allclose(phi @ M @ phi, 1.0, rtol=1e-10)


def test_bad_arguments_are_named(modes):
    system, _ = modes
    with pytest.raises(ValueError, match=r"q must have shape \(21,\)"):
        natural_modes(system, np.zeros(3))
    with pytest.raises(ValueError, match=r"u must have shape \(0,\)"):
        natural_modes(system, None, np.zeros(2))
