"""Group structure and the identities of digest 000 §6 and digest 001 §9 (property tests with hypothesis)."""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from jax.scipy.linalg import expm

from jaxse3 import se3, so3
from jaxse3.lie import coefficients
from tests.lie import reference as ref


def close(a, b, atol=1e-11):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=atol)


def _vec(dim, max_angle=3.0):
    coord = st.floats(-1.0, 1.0, allow_nan=False)
    return st.tuples(
        st.lists(coord, min_size=3, max_size=3),
        st.floats(0.0, max_angle),
        st.lists(coord, min_size=dim - 3, max_size=dim - 3),
    ).map(lambda a: _build(*a))


def _build(axis, angle, rest):
    axis = np.asarray(axis) + np.array([1e-3, 0, 0])
    x = angle * axis / np.linalg.norm(axis)
    return jnp.asarray(np.concatenate([x, np.asarray(rest) * 2.0]))


def _beta(X):
    return float(coefficients.evaluate(("beta",), jnp.dot(X[:3], X[:3]))[0])


@settings(max_examples=40, deadline=None)
@given(X=_vec(6), Y=_vec(6))
def test_se3_identities(X, Y):
    A = se3.ad(X)
    F, Fi = se3.dexp(X), se3.dexp_inv(X)
    close(A @ Y, se3.vee(se3.hat(X) @ se3.hat(Y) - se3.hat(Y) @ se3.hat(X)))
    close(A.T @ Y, se3.adbar(Y) @ X)
    close(se3.adbar(Y), -se3.adbar(Y).T)
    close(F @ X, X)
    close(Fi @ X, X)
    close(Fi @ F, np.eye(6), 1e-10)
    close(F @ A, A @ F)
    close(Fi - se3.dexp_inv(-X), -A, 1e-10)
    close(se3.dexp(-X), se3.Ad(se3.exp(-X)) @ F, 1e-10)  # dexp_{−X} = Ad_{exp(−X)} dexp_X
    close(np.linalg.det(F), _beta(X) ** 2, 1e-10)  # det dexp_X = β²
    phi2 = float(X[:3] @ X[:3])
    Xh = se3.hat(X)
    close(np.linalg.matrix_power(Xh, 4) + phi2 * Xh @ Xh, np.zeros((4, 4)), 1e-9)
    close(np.linalg.matrix_power(A, 5), -2 * phi2 * np.linalg.matrix_power(A, 3) - phi2**2 * A, 1e-8)
    H = se3.exp(X)
    close(se3.Ad(H), expm(A), 1e-10)  # (2.59)
    close(se3.Ad(H), se3.dexp_inv(-X) @ F, 1e-9)  # (2.60)
    close(se3.Ad(H), np.eye(6) + A @ F, 1e-10)  # (2.62)
    close(se3.Ad(H) @ Y, se3.vee(H @ se3.hat(Y) @ se3.inv(H)))
    close(se3.Ad_inv(H), se3.Ad(se3.inv(H)))
    close(se3.coAd(H), np.linalg.inv(se3.Ad(H)).T, 1e-10)
    close(H[:3, 3], so3.dexp(X[:3]) @ X[3:])  # translation is dexp_x y (seed 000 eq. (4))


@settings(max_examples=40, deadline=None)
@given(x=_vec(3), y=_vec(3))
def test_so3_identities(x, y):
    F, Fi, R = so3.dexp(x), so3.dexp_inv(x), so3.exp(x)
    close(so3.dexp(-x), F.T)  # dexp_{−x} = dexp_xᵀ
    close(R, Fi.T @ F, 1e-10)  # (2.19)
    close(R, np.eye(3) + so3.hat(x) @ F)  # (2.21)
    close(np.linalg.det(F), _beta(x))
    close(R.T @ R, np.eye(3))
    close(so3.hat(x) @ y, np.cross(x, y))
    close(so3.vee(so3.hat(x)), x)


def test_dexp_inverse_is_not_transpose_on_se3():
    X = jnp.array([0.3, -0.2, 0.5, 1.0, 2.0, -1.0])
    assert np.abs(se3.dexp(-X) - se3.dexp(X).T).max() > 0.1


def test_pure_translation_and_zero():
    y = jnp.array([0.3, -1.0, 2.0])
    X = jnp.concatenate([jnp.zeros(3), y])
    close(se3.exp(X), np.block([[np.eye(3), np.asarray(y)[:, None]], [np.zeros((1, 3)), np.ones((1, 1))]]))
    close(se3.dexp(X), np.block([[np.eye(3), np.zeros((3, 3))], [0.5 * so3.hat(y), np.eye(3)]]))
    close(se3.dexp_inv(X), np.block([[np.eye(3), np.zeros((3, 3))], [-0.5 * so3.hat(y), np.eye(3)]]))
    close(se3.log(se3.exp(X)), X)


@pytest.mark.parametrize("phi", [np.pi / 2, 2.0, 3.0, np.pi - 1e-6, np.pi - 1e-9, np.pi])
def test_log_near_pi(phi):
    rng = np.random.default_rng(5)
    n = rng.normal(size=3)
    n /= np.linalg.norm(n)
    X = np.concatenate([phi * n, rng.normal(size=3)])
    H = ref.exp(jnp.asarray(X))
    L = se3.log(H)
    close(se3.exp(L), H, 1e-13)
    assert np.linalg.norm(L[:3]) <= np.pi + 1e-12
    if phi < np.pi:
        close(L, X, 1e-9 if phi > np.pi - 1e-6 else 1e-12)


def test_log_checked_and_project():
    H = se3.exp(jnp.array([0.1, 0.2, 0.3, 1.0, 2.0, 3.0]))
    close(se3.log_checked(H), se3.log(H))
    bad = H.at[0, 0].add(0.1)
    with pytest.raises(Exception, match="not in SE\\(3\\)"):
        se3.log_checked(bad)
    with pytest.raises(Exception, match="not a rotation"):
        so3.log_checked(bad[:3, :3])
    P = se3.project(bad)
    assert se3.log_checked(P).shape == (6,)
    close(P[:3, 3], H[:3, 3])
    close(se3.project(H), H)


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda: se3.dexp(jnp.zeros(5)), "'X'"),
        (lambda: se3.dexp_apply(jnp.zeros(6), jnp.zeros(3)), "'Z'"),
        (lambda: se3.dexp_hess(jnp.zeros(6), jnp.zeros((2, 4)), jnp.zeros(6)), "'Q'"),
        (lambda: se3.log(jnp.zeros((3, 3))), "'H'"),
        (lambda: so3.exp(jnp.zeros(6)), "'x'"),
        (lambda: so3.log(jnp.zeros((4, 4))), "'R'"),
    ],
)
def test_bad_shapes_raise_with_argument_name(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


def test_integer_input_is_promoted():
    assert se3.exp(jnp.array([0, 0, 0, 1, 2, 3])).dtype == jnp.float64
