"""Every closed form against autodiff of a plain reference (tests/lie/reference.py) and central finite differences.

Points: exactly zero rotation, tiny angles, random, and both sides of the Taylor/closed-form switch (conftest.ANGLES).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import se3
from tests.lie import reference as ref
from tests.lie.conftest import ANGLES, PHI0, point, vectors

RTOL = 1e-11


def close(a, b, rtol=RTOL):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(np.abs(b).max(), 1.0)
    assert np.all(np.isfinite(a))
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


def fd(f, X, U, h=1e-5):
    """Fourth-order central difference of f along U."""
    return (-f(X + 2 * h * U) + 8 * f(X + h * U) - 8 * f(X - h * U) + f(X - 2 * h * U)) / (12 * h)


@pytest.mark.parametrize("phi", ANGLES)
def test_maps_against_reference(group, phi):
    G, n = group
    X = jnp.asarray(point(n, phi))
    close(G.exp(X), ref.exp(X))
    close(G.dexp(X), ref.dexp(X))
    close(G.dexp_inv(X), ref.dexp_inv(X))
    (Y,) = vectors(n, 1)
    close(G.dexp(X) @ Y, ref.dexp_from_definition(X, jnp.asarray(Y)))
    H = ref.exp(X)
    if phi < np.pi:
        close(G.log(H), X)
    else:  # principal logarithm: a different chart, same group element
        assert np.linalg.norm(G.log(H)[:3]) <= np.pi
        close(G.exp(G.log(H)), H)


@pytest.mark.parametrize("phi", ANGLES)
@pytest.mark.parametrize("inverse", [False, True])
def test_first_and_second_derivatives(group, phi, inverse):
    G, n = group
    X = jnp.asarray(point(n, phi))
    U, S, Z, Q = map(jnp.asarray, vectors(n, 4))
    F_ref = ref.dexp_inv if inverse else ref.dexp
    name = "dexp_inv" if inverse else "dexp"
    d, d2 = getattr(G, "d_" + name), getattr(G, "d2_" + name)
    jac, hess = getattr(G, name + "_jac"), getattr(G, name + "_hess")
    jacT = getattr(G, ("dexp_invT" if inverse else "dexpT") + "_jac")
    jac_dir = getattr(G, name + "_jac_dir")

    dF = lambda X, U: jax.jvp(F_ref, (X,), (U,))[1]
    close(d(X, U), dF(X, U))
    close(d2(X, U, S), jax.jvp(lambda X: dF(X, U), (X,), (S,))[1])
    close(d2(X, U, S), d2(X, S, U))  # symmetric
    close(jac(X, Z), jax.jacfwd(lambda X: F_ref(X) @ Z)(X))
    close(jacT(X, Z), jax.jacfwd(lambda X: F_ref(X).T @ Z)(X))
    H = hess(X, Q, Z)
    close(H, jax.hessian(lambda X: Q @ F_ref(X) @ Z)(X))
    close(H, H.T)
    close(S @ H @ U, Q @ d2(X, U, S) @ Z)  # Sᵀ H U = Qᵀ (D²F)(U)(S) Z
    close(jac_dir(X, Z, S), jax.jvp(lambda X: jax.jacfwd(lambda X: F_ref(X) @ Z)(X), (X,), (S,))[1])
    close(Q @ jac_dir(X, Z, S), H @ S)

    # central finite differences (independent of autodiff)
    F = getattr(G, name)
    close(fd(F, X, U), d(X, U), rtol=1e-8)
    close(fd(lambda X: d(X, U), X, S), d2(X, U, S), rtol=1e-8)
    close(fd(lambda X: F(X) @ Z, X, U), jac(X, Z) @ U, rtol=1e-8)
    d_apply = getattr(G, "d_" + name + "_apply")  # matrix-free (D_X F)(U) Z
    close(d_apply(X, U, Z), dF(X, U) @ Z)
    close(fd(lambda X: F(X) @ Z, X, U), d_apply(X, U, Z), rtol=1e-8)


def test_inverse_identity_for_derivative(group):
    """D dexp⁻¹(U) = −dexp⁻¹ · D dexp(U) · dexp⁻¹ (digest 000 §2.8)."""
    G, n = group
    X = jnp.asarray(point(n, 1.3))
    (U,) = map(jnp.asarray, vectors(n, 1))
    Fi = G.dexp_inv(X)
    close(G.d_dexp_inv(X, U), -Fi @ G.d_dexp(X, U) @ Fi)


def test_limits_at_zero(group):
    """(33) and the Jacobian limits of Lemmas 4.6/4.8 at X = 0 exactly."""
    G, n = group
    X = jnp.zeros(n)
    U, Z = map(jnp.asarray, vectors(n, 2))
    close(G.d_dexp(X, U), 0.5 * G.ad(U))
    close(G.d_dexp_inv(X, U), -0.5 * G.ad(U))
    close(G.dexp_jac(X, Z), -0.5 * G.ad(Z))
    close(G.dexp_inv_jac(X, Z), 0.5 * G.ad(Z))
    close(G.dexpT_jac(X, Z), 0.5 * G.adbar(Z))
    close(G.d_dexp_apply(X, U, Z), 0.5 * G.ad(U) @ Z)
    close(G.d_dexp_inv_apply(X, U, Z), -0.5 * G.ad(U) @ Z)


def test_se3_block_structure_matches_so3():
    """Seed 000 (11), (65), (66), (68): the 6×6 forms decompose into SO(3) derivatives (an independent cross-check)."""
    from jaxse3 import se3, so3

    X = jnp.asarray(point(6, 1.1))
    U = jnp.asarray(vectors(6, 1)[0])
    x, y, u, v = X[:3], X[3:], U[:3], U[3:]
    for F, f, d, _d2 in [
        (se3.dexp, so3.dexp, so3.d_dexp, so3.d2_dexp),
        (se3.dexp_inv, so3.dexp_inv, so3.d_dexp_inv, so3.d2_dexp_inv),
    ]:
        M = F(X)
        close(M[:3, 3:], np.zeros((3, 3)))
        close(M[:3, :3], f(x))
        close(M[3:, 3:], f(x))
        close(M[3:, :3], d(x, y))  # (65)/(66): lower-left block = (D_x dexp)(y)
    dM = se3.d_dexp(X, U)  # (68), (70a): D_X Ddexp(U) = (D²_x dexp)(y)(u) + (D_x dexp)(v)
    close(dM[:3, :3], so3.d_dexp(x, u))
    close(dM[3:, :3], so3.d2_dexp(x, y, u) + so3.d_dexp(x, v))
    dMi = se3.d_dexp_inv(X, U)  # (69), corrected (70b)
    close(dMi[3:, :3], so3.d2_dexp_inv(x, y, u) + so3.d_dexp_inv(x, v))


def test_block_limits_71():
    """(71): (D_0 Ddexp)(U) = ½ṽ + (ỹũ + ũỹ)/6 and (D_0 Ddexp⁻¹)(U) = −½ṽ + (ỹũ + ũỹ)/12 (x = 0, y fixed)."""
    from jaxse3 import se3, so3

    rng = np.random.default_rng(3)
    y, u, v = (jnp.asarray(rng.normal(size=3)) for _ in range(3))
    X = jnp.concatenate([jnp.zeros(3), y])
    U = jnp.concatenate([u, v])
    yt, ut, vt = so3.hat(y), so3.hat(u), so3.hat(v)
    close(se3.d_dexp(X, U)[3:, :3], 0.5 * vt + (yt @ ut + ut @ yt) / 6)
    close(se3.d_dexp_inv(X, U)[3:, :3], -0.5 * vt + (yt @ ut + ut @ yt) / 12)


@pytest.mark.parametrize("phi", [0.0, 1.0])
def test_dexp_rates_on_a_ray(phi):
    """se3.dexp_rates against the plain reference, its autodiff and central differences: dexp(sX), dexp(sX) sU, and
    the time derivative of dexp(sX(t)) sẊ(t) for X(t) = X + tU + t²W/2, at scales that put sX at zero, on both sides
    of the switch and beyond; under jit and over a batch of rays."""
    from jaxse3 import se3

    X = jnp.asarray(point(6, phi))
    U, W = map(jnp.asarray, vectors(6, 2))
    s = jnp.asarray([0.0, 1e-9, 0.4, PHI0 * (1 - 1e-7), PHI0 * (1 + 1e-7), 3.0])

    def velocity(t, si):
        return ref.dexp(si * (X + t * U + 0.5 * t * t * W)) @ (si * (U + t * W))

    T, v, a = jax.jit(se3.dexp_rates)(X, U, W, s)
    for k, si in enumerate(s):
        close(T[k], ref.dexp(si * X))
        close(v[k], velocity(0.0, si))
        close(a[k], jax.jacfwd(velocity)(0.0, si))
        close(a[k], fd(lambda t: velocity(t, si), 0.0, 1.0), rtol=1e-8)
    # autodiff through the closed form (it has no custom rule) is finite at zero rotation and zero scale
    grad = jax.grad(lambda X: sum(jnp.sum(o) for o in se3.dexp_rates(X, U, W, s)))(X)
    assert np.all(np.isfinite(np.asarray(grad)))
    T2, v2, a2 = se3.dexp_rates(jnp.stack([X, U]), jnp.stack([U, W]), jnp.stack([W, X]), jnp.stack([s, 2 * s]))
    assert T2.shape == (2, 6, 6, 6) and v2.shape == a2.shape == (2, 6, 6)
    close(T2[0], T)
    close(a2[0], a)
    close(T2[1], se3.dexp(2 * s[:, None] * U))
    with pytest.raises(ValueError, match="dexp_rates: argument 'U' must have shape"):
        se3.dexp_rates(X, U[:5], W, s)
    with pytest.raises(ValueError, match="dexp_rates: argument 's' must have shape"):
        se3.dexp_rates(X, U, W, 1.0)


def _spatial_twist(X, U, W, Y):
    """V(t) = (Ḣ H⁻¹)^∨ of H(t) = expm(X̂(t)) along X(t) = X + tU + t²W/2 + t³Y/6: a plain matrix exponential, its
    time derivative by autodiff — independent of every dexp formula."""

    def hat(Z):
        x, y = Z[:3], Z[3:]
        K = jnp.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])
        return jnp.zeros((4, 4)).at[:3, :3].set(K).at[:3, 3].set(y)

    def V(t):
        H, dH = jax.jvp(lambda t: jax.scipy.linalg.expm(hat(X + t * U + t * t * W / 2 + t**3 * Y / 6)), (t,), (1.0,))
        S = dH @ jnp.linalg.inv(H)
        return jnp.array([S[2, 1], S[0, 2], S[1, 0], S[0, 3], S[1, 3], S[2, 3]])

    return V


@functools.partial(jax.jit, static_argnums=5)
def _spatial_twist_rate(X, U, W, Y, t, order):
    """The spatial twist V(t) of :func:`_spatial_twist` (order 0) or its first or second time derivative."""
    V = _spatial_twist(X, U, W, Y)
    for _ in range(order):
        V = jax.jacfwd(V)
    return V(t)


# jitted once for the module (and every point): eager, these would compile op by op
_exp_acceleration, _exp_jerk = jax.jit(se3.exp_acceleration), jax.jit(se3.exp_jerk)
_exp_acceleration_jac, _exp_jerk_jac = jax.jit(jax.jacfwd(se3.exp_acceleration)), jax.jit(jax.jacfwd(se3.exp_jerk))


@pytest.mark.parametrize("phi", ANGLES)
def test_exp_acceleration_and_jerk(phi):
    """se3.exp_acceleration and se3.exp_jerk (seed 000 eqs. (12), (13)) against the first and second time derivatives
    of the spatial twist of a plain matrix exponential along a cubic curve X(t), at zero rotation, both sides of the
    switch and beyond; their Jacobian in X (through the rules of dexp_apply, d_dexp_apply and d2_dexp) against
    central differences; under jit and broadcast over a batch."""
    X = jnp.asarray(point(6, phi))
    U, W, Y = map(jnp.asarray, vectors(6, 3))
    V = lambda t, order: _spatial_twist_rate(X, U, W, Y, t, order)
    acc, jerk = _exp_acceleration(X, U, W), _exp_jerk(X, U, W, Y)
    close(acc, V(0.0, 1), rtol=1e-10)
    close(jerk, V(0.0, 2), rtol=1e-9)
    close(se3.dexp_apply(X, U), V(0.0, 0), rtol=1e-10)
    for f, jac in (
        (lambda X: _exp_acceleration(X, U, W), lambda X: _exp_acceleration_jac(X, U, W)),
        (lambda X: _exp_jerk(X, U, W, Y), lambda X: _exp_jerk_jac(X, U, W, Y)),
    ):
        J = jac(X)
        for k, e in enumerate(np.eye(6)):
            close(J[:, k], fd(f, X, jnp.asarray(e), h=1e-4), rtol=1e-7)
    batch = se3.exp_jerk(jnp.stack([X, U]), U, jnp.stack([W, X]), Y)
    close(batch[0], jerk)
    close(batch[1], se3.exp_jerk(U, U, X, Y))
    with pytest.raises(ValueError, match="exp_jerk: argument 'Xddd' must have shape"):
        se3.exp_jerk(X, U, W, Y[:5])
