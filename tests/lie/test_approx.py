"""k-th order approximations (jaxse3.approx, seed 000 §5–§6): tables, series, identities and the §3.5 convergence study.

Oracles are independent of the library: the ad matrix, the Bernoulli numbers and the truncated series are built here
(matrix powers), differentiated with jax.jvp / jax.jacfwd / jax.hessian, and the Tables 2–6 of the digest (seed 000
notes §3.3, with its corrections) are transcribed literally. The convergence test reproduces the digest §3.5 golden
table against the exact closed forms of jaxse3.se3.
"""

from fractions import Fraction
from math import comb, factorial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import approx, se3, so3

# --------------------------------------------------------------------------------------------------------------------
# independent oracle


def _bernoulli(n):
    """B_0 … B_n with B_1 = −1/2, from Σ_{k=0}^{m} C(m+1, k) B_k = 0."""
    B = [Fraction(1)]
    for m in range(1, n + 1):
        B.append(-sum(comb(m + 1, k) * B[k] for k in range(m)) / (m + 1))
    return B


COEF = {
    "dexp": [Fraction(1, factorial(i + 1)) for i in range(7)],
    "dexp_inv": [b / factorial(i) for i, b in enumerate(_bernoulli(6))],
}


def _skew(x):
    return jnp.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _ad(X):
    if X.shape[-1] == 3:
        return _skew(X)
    xt, yt = _skew(X[:3]), _skew(X[3:])
    return jnp.block([[xt, jnp.zeros((3, 3))], [yt, xt]])


def _adbar(U):
    if U.shape[-1] == 3:
        return _skew(U)
    ut, vt = _skew(U[:3]), _skew(U[3:])
    return jnp.block([[ut, vt], [vt, jnp.zeros((3, 3))]])


def _series(X, fam, nterms):
    """Σ_{i<nterms} c_i ad_X^i by matrix powers."""
    A = _ad(X)
    return sum(float(COEF[fam][i]) * jnp.linalg.matrix_power(A, i) for i in range(nterms))


def _oracle(kind, fam, k, X, *args):
    if kind == "matrix":
        return _series(X, fam, k + 1)
    if kind == "d":
        (U,) = args
        return jax.jvp(lambda X: _series(X, fam, k + 2), (X,), (U,))[1]
    if kind == "d2":
        U, S = args
        return jax.jvp(lambda X: jax.jvp(lambda Y: _series(Y, fam, k + 3), (X,), (U,))[1], (X,), (S,))[1]
    if kind == "jac":
        (Z,) = args
        return jax.jacfwd(lambda X: _series(X, fam, k + 2) @ Z)(X)
    Q, Z = args
    return jax.hessian(lambda X: Q @ _series(X, fam, k + 3) @ Z)(X)


KINDS = {  # kind -> (public name pattern, orders, number of vector arguments after X)
    "matrix": ("{}", (0, 1, 2, 3, 4), 0),
    "d": ("d_{}", (0, 1, 2, 3), 1),
    "d2": ("d2_{}", (0, 1, 2), 2),
    "jac": ("{}_jac", (0, 1, 2, 3), 1),
    "hess": ("{}_hess", (0, 1, 2), 2),
}
CASES = [(kind, fam, k) for kind, (_, orders, _) in KINDS.items() for fam in ("dexp", "dexp_inv") for k in orders]


def _fn(kind, fam):
    return getattr(approx, KINDS[kind][0].format(fam))


def _rand(rng, n, scale=1.0):
    return jnp.asarray(scale * rng.standard_normal(n))


# --------------------------------------------------------------------------------------------------------------------
# coefficients and the generic series


def test_coefficients():
    assert [float(c) for c in COEF["dexp"]] == list(approx.DEXP_COEFFICIENTS)
    assert COEF["dexp_inv"][:7] == [1, Fraction(-1, 2), Fraction(1, 12), 0, Fraction(-1, 720), 0, Fraction(1, 30240)]
    np.testing.assert_allclose(approx.DEXP_INV_COEFFICIENTS, [float(c) for c in COEF["dexp_inv"]], rtol=1e-15)
    assert approx.DEXP_INV_COEFFICIENTS[3] == 0.0 and approx.DEXP_INV_COEFFICIENTS[5] == 0.0


@pytest.mark.parametrize("n", [3, 6])
@pytest.mark.parametrize("kind,fam,k", CASES)
def test_equals_truncated_series_and_autodiff(kind, fam, k, n):
    """Each approximation ≡ the truncated matrix series and its jvp / jacfwd / hessian (eqs. (52)–(61))."""
    rng = np.random.default_rng(1000 * k + 10 * n + len(kind) + (fam == "dexp_inv"))
    for _ in range(3):
        X = _rand(rng, n, 0.7)
        args = [_rand(rng, n) for _ in range(KINDS[kind][2])]
        got = _fn(kind, fam)(X, *args, k)
        want = _oracle(kind, fam, k, X, *args)
        assert got.shape == (n, n)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------------------------------------------------
# the Tables of the digest §3.3, transcribed literally (with its corrections)


def _table_d(fam, k, A, B):
    """Tables 2 and 3, D^[k] column."""
    P1, P2, P3 = A, A @ A, A @ A @ A
    terms = [B, B @ P1 + P1 @ B, B @ P2 + P1 @ B @ P1 + P2 @ B, B @ P3 + P2 @ B @ P1 + P1 @ B @ P2 + P3 @ B]
    if fam == "dexp":
        w = [1 / 2, 1 / 6, 1 / 24, 1 / 120]
    else:  # Table 3: k=0 −½B, k=1 +1/12(...), k=2 = k=1, k=3 −1/720(...)
        w = [-1 / 2, 1 / 12, 0.0, -1 / 720]
    return sum(w[i] * terms[i] for i in range(k + 1))


def _table_jac(fam, k, X, Z):
    """Tables 2 and 3, J^[k] column (with the corrected k=3 row)."""
    A = _ad(X)
    P1, P2, P3 = A, A @ A, A @ A @ A
    Z1, Z2, Z3 = A @ Z, A @ A @ Z, A @ A @ A @ Z
    terms = [
        -_ad(Z),
        -(_ad(Z1) + P1 @ _ad(Z)),
        -(_ad(Z2) + P1 @ _ad(Z1) + P2 @ _ad(Z)),
        -(_ad(Z3) + P1 @ _ad(Z2) + P2 @ _ad(Z1) + P3 @ _ad(Z)),
    ]
    w = [1 / 2, 1 / 6, 1 / 24, 1 / 120] if fam == "dexp" else [-1 / 2, 1 / 12, 0.0, -1 / 720]
    return sum(w[i] * terms[i] for i in range(k + 1))


def _table_d2(fam, k, A, B, C):
    """Tables 4 and 5."""
    P1, P2 = A, A @ A
    t0 = C @ B + B @ C
    t1 = (P1 @ C + C @ P1) @ B + (B @ C + C @ B) @ P1 + (B @ P1 + P1 @ B) @ C
    t2 = (
        C @ (P2 @ B + B @ P2 + P1 @ B @ P1)
        + B @ (P2 @ C + C @ P2 + P1 @ C @ P1)
        + P2 @ (C @ B + B @ C)
        + P1 @ (C @ (P1 @ B + B @ P1) + B @ (P1 @ C + C @ P1))
    )
    w = [1 / 6, 1 / 24, 1 / 120] if fam == "dexp" else [1 / 12, 0.0, -1 / 720]
    return sum(w[i] * t for i, t in enumerate([t0, t1, t2][: k + 1]))


def _table_hess(fam, k, X, Q, Z):
    """Table 6 (rows = H̄2, H̄3, H̄4) with (62)/(63), corrected."""
    A = _ad(X)
    P1, P2 = A, A @ A
    Z1, Z2 = A @ Z, A @ A @ Z
    Q1, Q2 = A.T @ Q, A.T @ A.T @ Q
    adZ, adZ1, adZ2 = _ad(Z), _ad(Z1), _ad(Z2)
    H2 = _adbar(Q) @ adZ
    H3 = _adbar(Q) @ (P1 @ adZ + adZ1) + _adbar(Q1) @ adZ
    H4 = _adbar(Q) @ (P2 @ adZ + P1 @ adZ1 + adZ2) + _adbar(Q1) @ (P1 @ adZ + adZ1) + _adbar(Q2) @ adZ
    w = [1 / 6, 1 / 24, 1 / 120] if fam == "dexp" else [1 / 12, 0.0, -1 / 720]
    return sum(w[i] * (H + H.T) for i, H in enumerate([H2, H3, H4][: k + 1]))


@pytest.mark.parametrize("n", [3, 6])
@pytest.mark.parametrize("fam", ["dexp", "dexp_inv"])
def test_tables_2_to_6(fam, n):
    rng = np.random.default_rng(7 + n)
    X, U, S, Q, Z = (_rand(rng, n) for _ in range(5))
    A, B, C = _ad(X), _ad(U), _ad(S)
    f = lambda name: getattr(approx, name.format(fam))
    for k in range(4):
        np.testing.assert_allclose(f("d_{}")(X, U, k), _table_d(fam, k, A, B), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(f("{}_jac")(X, Z, k), _table_jac(fam, k, X, Z), rtol=1e-12, atol=1e-12)
    for k in range(3):
        np.testing.assert_allclose(f("d2_{}")(X, U, S, k), _table_d2(fam, k, A, B, C), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(f("{}_hess")(X, Q, Z, k), _table_hess(fam, k, X, Q, Z), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [3, 6])
@pytest.mark.parametrize("fam", ["dexp", "dexp_inv"])
def test_consistency_between_maps(fam, n):
    """J^[k] U = D^[k](U) Z; Sᵀ H^[k] U = Qᵀ D²^[k](U)(S) Z; D²^[k] symmetric; H^[k] symmetric."""
    rng = np.random.default_rng(3 + n)
    X, U, S, Q, Z = (_rand(rng, n) for _ in range(5))
    f = lambda name: getattr(approx, name.format(fam))
    for k in range(4):
        np.testing.assert_allclose(f("{}_jac")(X, Z, k) @ U, f("d_{}")(X, U, k) @ Z, rtol=1e-12, atol=1e-12)
    for k in range(3):
        H = f("{}_hess")(X, Q, Z, k)
        np.testing.assert_allclose(H, H.T, atol=1e-13)
        np.testing.assert_allclose(S @ H @ U, Q @ f("d2_{}")(X, U, S, k) @ Z, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(f("d2_{}")(X, U, S, k), f("d2_{}")(X, S, U, k), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [3, 6])
def test_odd_order_inverse_identities(n):
    """B3 = 0: D^[1] ≡ D^[2], D²^[0] ≡ D²^[1], H_inv^[0] ≡ H_inv^[1], J^[1] ≡ J^[2], dexp⁻¹[2] ≡ dexp⁻¹[3] (bitwise)."""
    rng = np.random.default_rng(11 + n)
    X, U, S, Q, Z = (_rand(rng, n) for _ in range(5))
    pairs = [
        (approx.dexp_inv(X, 2), approx.dexp_inv(X, 3)),
        (approx.d_dexp_inv(X, U, 1), approx.d_dexp_inv(X, U, 2)),
        (approx.d2_dexp_inv(X, U, S, 0), approx.d2_dexp_inv(X, U, S, 1)),
        (approx.dexp_inv_jac(X, Z, 1), approx.dexp_inv_jac(X, Z, 2)),
        (approx.dexp_inv_hess(X, Q, Z, 0), approx.dexp_inv_hess(X, Q, Z, 1)),
    ]
    for a, b in pairs:
        np.testing.assert_array_equal(a, b)
    # …and the dexp family has no such coincidences
    assert not np.allclose(approx.d_dexp(X, U, 1), approx.d_dexp(X, U, 2))
    assert not np.allclose(approx.dexp_hess(X, Q, Z, 0), approx.dexp_hess(X, Q, Z, 1))


def test_lower_orders_are_limits():
    """Order 0 gives the x → 0 limits of the closed forms: D^[0] = ±½ad_U, J^[0] = ∓½ad_Z (eq. (33), Table 2/3)."""
    rng = np.random.default_rng(5)
    X, U, Z = (_rand(rng, 6) for _ in range(3))
    np.testing.assert_allclose(approx.dexp(X, 0), np.eye(6))
    np.testing.assert_allclose(approx.d_dexp(X, U, 0), 0.5 * _ad(U))
    np.testing.assert_allclose(approx.d_dexp_inv(X, U, 0), -0.5 * _ad(U))
    np.testing.assert_allclose(approx.dexp_jac(X, Z, 0), -0.5 * _ad(Z))
    np.testing.assert_allclose(approx.dexp_inv_jac(X, Z, 0), 0.5 * _ad(Z))
    X0 = jnp.zeros(6)
    np.testing.assert_allclose(approx.d_dexp(X0, U, 3), se3.d_dexp(X0, U), atol=1e-15)
    np.testing.assert_allclose(approx.dexp_inv_jac(X0, Z, 3), se3.dexp_inv_jac(X0, Z), atol=1e-15)


# --------------------------------------------------------------------------------------------------------------------
# convergence: digest §3.5 set-up and golden table

_x = np.array([0.3, -0.4, 1.0])
N0 = np.concatenate([_x / np.linalg.norm(_x), [0.1, 0.2, -0.4]])
U35 = np.array([0.1, 1.0, -1.0, 0.9, 0.5, 0.3])
S35 = np.array([1.7, -2.9, -9.2, 7.6, 6.7, 2.4])

# (kind, family, k) -> values at s = 0.1, 0.05, 0.01 (digest §3.5, spectral norm)
GOLDEN = {
    ("matrix", "dexp", 1): (2.504e-3, 6.26e-4, 2.504e-5),
    ("matrix", "dexp", 2): (7.425e-5, 9.282e-6, 7.426e-8),
    ("matrix", "dexp", 3): (1.756e-6, 1.098e-7, 1.756e-10),
    ("matrix", "dexp", 4): (3.379e-8, 1.056e-9, 3.38e-13),
    ("matrix", "dexp_inv", 1): (1.252e-3, 3.13e-4, 1.252e-5),
    ("matrix", "dexp_inv", 2): (2.928e-7, 1.829e-8, 2.927e-11),
    ("matrix", "dexp_inv", 3): (2.928e-7, 1.829e-8, 2.927e-11),
    ("matrix", "dexp_inv", 4): (9.231e-11, 1.442e-12, 9.228e-17),
    ("d", "dexp", 0): (6.022e-2, 3.011e-2, 6.023e-3),
    ("d", "dexp", 1): (2.651e-3, 6.629e-4, 2.651e-5),
    ("d", "dexp", 2): (8.44e-5, 1.055e-5, 8.442e-8),
    ("d", "dexp", 3): (2.032e-6, 1.27e-7, 2.032e-10),
    ("d", "dexp_inv", 0): (3.013e-2, 1.506e-2, 3.012e-3),
    ("d", "dexp_inv", 1): (1.408e-5, 1.759e-6, 1.407e-8),
    ("d", "dexp_inv", 2): (1.408e-5, 1.759e-6, 1.407e-8),
    ("d", "dexp_inv", 3): (6.683e-9, 2.088e-10, 6.681e-14),
    ("d2", "dexp", 0): (0.3105, 0.1551, 3.1e-2),
    ("d2", "dexp", 1): (1.561e-2, 3.903e-3, 1.561e-4),
    ("d2", "dexp", 2): (4.883e-4, 6.103e-5, 4.881e-7),
    ("d2", "dexp_inv", 0): (2.604e-3, 6.507e-4, 2.602e-5),
    ("d2", "dexp_inv", 1): (2.604e-3, 6.507e-4, 2.602e-5),
    ("d2", "dexp_inv", 2): (2.091e-6, 1.306e-7, 2.09e-10),
}
S_GOLDEN = (0.1, 0.05, 0.01)
FLOOR = 1e-13  # below this float64 round-off of the closed forms dominates


def _expected_slope(kind, fam, k):
    """The first omitted non-zero term: c_i ad^i (order i), c_i DP_i (i−1), c_i D²P_i / H̄_i (i−2)."""
    shift = {"matrix": 0, "d": 1, "jac": 1, "d2": 2, "hess": 2}[kind]
    i = next(i for i in range(k + shift + 1, 7) if COEF[fam][i] != 0)
    return i - shift


def _diff(kind, fam, k, lib, X, *args):
    exact = {"matrix": "{}", "d": "d_{}", "d2": "d2_{}", "jac": "{}_jac", "hess": "{}_hess"}[kind].format(fam)
    return _fn(kind, fam)(X, *args, k) - getattr(lib, exact)(X, *args)


def _error(kind, fam, k, X, lib, args):
    """Spectral norm of (approximation − exact closed form)."""
    return np.linalg.norm(np.asarray(_diff(kind, fam, k, lib, jnp.asarray(X), *map(jnp.asarray, args))), 2)


def _slope(s, e):
    return np.log(e[0] / e[1]) / np.log(s[0] / s[1])


def test_expected_slopes_match_golden_table():
    want = {("matrix", "dexp_inv"): [1, 2, 4, 4, 6], ("d", "dexp_inv"): [1, 3, 3, 5], ("d2", "dexp_inv"): [2, 2, 4]}
    for (kind, fam), slopes in want.items():
        assert [_expected_slope(kind, fam, k) for k in range(len(slopes))] == slopes
    assert [_expected_slope("d2", "dexp", k) for k in range(3)] == [1, 2, 3]


@pytest.mark.parametrize("kind,fam,k", [c for c in CASES if c[0] in ("matrix", "d", "d2")])
def test_convergence_golden_section_3_5(kind, fam, k):
    """Digest §3.5: X(s) = s·[n; y]; spectral-norm errors against the exact closed forms; golden values and slopes."""
    args = {"matrix": (), "d": (U35,), "d2": (U35, S35)}[kind]
    errs = [_error(kind, fam, k, s * N0, se3, args) for s in S_GOLDEN]
    if (kind, fam, k) in GOLDEN:
        for s, e, g in zip(S_GOLDEN, errs, GOLDEN[kind, fam, k]):
            if g > FLOOR:
                assert abs(e / g - 1) < 1e-3, (s, e, g)
    # slope between s = 0.1 and 0.01 (or 0.05 where the 0.01 value is round-off dominated)
    j = 2 if errs[2] > 10 * FLOOR else 1
    slope = _slope((S_GOLDEN[0], S_GOLDEN[j]), (errs[0], errs[j]))
    assert abs(slope - _expected_slope(kind, fam, k)) < 0.05, slope


@pytest.mark.parametrize("n", [3, 6])
@pytest.mark.parametrize("kind,fam,k", CASES)
def test_convergence_all_maps(kind, fam, k, n):
    """Every approximation (Jacobians and Hessians included, so(3) too) converges to the closed form at the rate
    of its first omitted non-zero term."""
    lib = so3 if n == 3 else se3
    rng = np.random.default_rng(17)
    X0 = N0[:n]
    args = tuple(_rand(rng, n) for _ in range(KINDS[kind][2]))
    s = (0.2, 0.1, 0.05, 0.02, 0.01)
    errs = [_error(kind, fam, k, si * X0, lib, args) for si in s]
    # pair s = 0.1 with the smallest s whose error is well above round-off (s = 0.2 with 0.1 if there is none)
    j = max((j for j in range(2, 5) if errs[j] > 1e-11), default=None)
    i, j = (1, j) if j is not None else (0, 1)
    assert errs[j] > 1e-11
    assert abs(_slope((s[i], s[j]), (errs[i], errs[j])) - _expected_slope(kind, fam, k)) < 0.05, errs


# --------------------------------------------------------------------------------------------------------------------
# API: orders, shapes, jit, vmap, broadcasting, dtype


def test_orders_table():
    assert approx.ORDERS["dexp"] == approx.ORDERS["dexp_inv"] == (0, 1, 2, 3, 4)
    assert approx.ORDERS["d_dexp"] == approx.ORDERS["dexp_jac"] == approx.ORDERS["dexp_inv_jac"] == (0, 1, 2, 3)
    assert approx.ORDERS["d2_dexp_inv"] == approx.ORDERS["dexp_hess"] == (0, 1, 2)
    assert set(approx.ORDERS) == {KINDS[kind][0].format(fam) for kind in KINDS for fam in ("dexp", "dexp_inv")}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("fam", ["dexp", "dexp_inv"])
def test_missing_orders_raise(kind, fam):
    name, orders, nargs = KINDS[kind]
    name = name.format(fam)
    args = [jnp.ones(6)] * (1 + nargs)
    for bad in (-1, orders[-1] + 1, 7, True, 1.0, "1", None):
        with pytest.raises(ValueError, match=f"^{name}: order must be .*seed 000"):
            getattr(approx, name)(*args, bad)
    assert getattr(approx, name)(*args, np.int64(orders[-1])).shape == (6, 6)


def test_missing_order_message():
    with pytest.raises(ValueError) as e:
        approx.dexp_hess(jnp.ones(6), jnp.ones(6), jnp.ones(6), 3)
    assert str(e.value) == "dexp_hess: order must be 0, 1 or 2 (seed 000 eq. (62)), got 3"
    with pytest.raises(ValueError, match=r"d_dexp_inv: order must be 0, 1, 2 or 3 \(seed 000 Table 3\), got 4"):
        approx.d_dexp_inv(jnp.ones(3), jnp.ones(3), 4)
    with pytest.raises(ValueError, match=r"dexp: order must be 0, 1, 2, 3 or 4"):
        approx.dexp(jnp.ones(3), 5)
    with pytest.raises(ValueError, match="static Python int"):
        jax.jit(lambda X, k: approx.dexp(X, k))(jnp.ones(6), 1)


def test_shape_errors_name_the_argument():
    v6, v3 = jnp.ones(6), jnp.ones(3)
    msg = r"dexp: argument 'X' must have shape \(\.\.\., 3\) \(so\(3\)\) or \(\.\.\., 6\) \(se\(3\)\), got \(4,\)"
    with pytest.raises(ValueError, match=msg):
        approx.dexp(jnp.ones(4), 0)
    with pytest.raises(ValueError, match="'X'"):
        approx.dexp_inv(1.0, 0)
    with pytest.raises(ValueError, match="'X'"):
        approx.d_dexp(jnp.ones((6, 2)), v6, 0)
    with pytest.raises(ValueError, match=r"d_dexp: argument 'U' must have shape \(\.\.\., 6\), got \(3,\)"):
        approx.d_dexp(v6, v3, 0)
    with pytest.raises(ValueError, match=r"d2_dexp_inv: argument 'S' must have shape \(\.\.\., 3\)"):
        approx.d2_dexp_inv(v3, v3, v6, 0)
    with pytest.raises(ValueError, match="dexp_inv_jac: argument 'Z'"):
        approx.dexp_inv_jac(v6, jnp.ones((2, 5)), 1)
    with pytest.raises(ValueError, match="dexp_hess: argument 'Q'"):
        approx.dexp_hess(v3, v6, v3, 1)


@pytest.mark.parametrize("n", [3, 6])
def test_jit_vmap_broadcast(n):
    rng = np.random.default_rng(23)
    Xb = jnp.asarray(rng.standard_normal((4, 1, n)))
    Qb = jnp.asarray(rng.standard_normal((5, n)))
    Z = jnp.asarray(rng.standard_normal(n))
    J = approx.dexp_inv_jac(Xb, Qb, 3)  # broadcasting (4, 1, n) with (5, n), eagerly
    assert J.shape == (4, 5, n, n)
    H = jax.jit(approx.dexp_inv_hess, static_argnums=3)(Xb, Qb, Z, 2)  # … and under jit
    assert H.shape == (4, 5, n, n)
    for i, j in ((0, 0), (3, 4), (2, 1)):
        np.testing.assert_allclose(J[i, j], approx.dexp_inv_jac(Xb[i, 0], Qb[j], 3), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(H[i, j], approx.dexp_inv_hess(Xb[i, 0], Qb[j], Z, 2), rtol=1e-13, atol=1e-13)
    X2, U2 = Xb[:, 0], jnp.asarray(rng.standard_normal((4, n)))
    D = jax.vmap(lambda X, U: approx.d_dexp(X, U, 3))(X2, U2)
    np.testing.assert_allclose(D, approx.d_dexp(X2, U2, 3), rtol=1e-13, atol=1e-13)
    M = jax.jit(jax.vmap(lambda X: approx.dexp(X, 4)))(X2)
    np.testing.assert_allclose(M, approx.dexp(X2, 4), rtol=1e-13, atol=1e-13)


def test_dtype_and_lists():
    X32 = jnp.ones(6, jnp.float32)
    assert approx.dexp_inv(X32, 4).dtype == jnp.float32
    assert approx.dexp_hess(X32, X32, X32, 2).dtype == jnp.float32
    np.testing.assert_allclose(approx.dexp([0.1, 0.2, 0.3], 2), _series(jnp.array([0.1, 0.2, 0.3]), "dexp", 3))


def test_autodiff_of_approximation_is_next_table():
    """jax.jacfwd of X ↦ dexp^[k+1] Z is J^[k] (the approximations are plain polynomials)."""
    rng = np.random.default_rng(29)
    X, Z, Q = (_rand(rng, 6) for _ in range(3))
    J = jax.jit(jax.jacfwd(lambda X: approx.dexp(X, 3) @ Z))(X)
    np.testing.assert_allclose(J, approx.dexp_jac(X, Z, 2), atol=1e-12)
    H = jax.jit(jax.hessian(lambda X: Q @ approx.dexp_inv(X, 4) @ Z))(X)
    np.testing.assert_allclose(H, approx.dexp_inv_hess(X, Q, Z, 2), atol=1e-12)


@pytest.mark.slow
def test_example_study_reproduces_digest(tmp_path):
    """examples/approximation_study.py: study() gives the digest's §3.5 numbers and slopes; the figure is written."""
    import pathlib
    import runpy

    mod = runpy.run_path(str(pathlib.Path(__file__).parents[2] / "examples" / "approximation_study.py"))
    res = mod["study"](np.logspace(-2, -1, 3))
    for name, q in res["quantities"].items():
        for k in q["orders"]:
            assert abs(q["slopes"][k] - q["expected"][k]) < 0.05, (name, k, q["slopes"][k])
            for got, want in zip(q["at"][k], q["golden"].get(k, ())):
                if want > FLOOR:
                    assert abs(got / want - 1) < 1e-3, (name, k, got, want)
    assert "slope" in mod["format_table"](res)
