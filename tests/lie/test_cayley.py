"""Cayley map (seed 001 §3, digest 001.md §5): jaxse3.lie.cayley against independent oracles.

Oracles: the definition cay(A) = (I − A)⁻¹(I + A) by ``jnp.linalg.solve`` on the 3×3 / 4×4 hat matrices, its
differentials by ``jax.jvp`` of that definition, ``scipy.linalg.expm``, scipy's quaternion rotations and central
finite differences. The module is never checked against itself.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st
from scipy.spatial.transform import Rotation

from jaxse3.lie import cayley as C

# ---------------------------------------------------------------------------------------------------------------------
# Independent oracles (plain definitions, written here).
# ---------------------------------------------------------------------------------------------------------------------


def hat3(x):
    return jnp.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]], dtype=x.dtype)


def vee3(M):
    return jnp.array([M[2, 1], M[0, 2], M[1, 0]])


def hat6(X):
    M = jnp.zeros((4, 4), X.dtype)
    return M.at[:3, :3].set(hat3(X[:3])).at[:3, 3].set(X[3:])


def vee6(M):
    return jnp.concatenate([vee3(M[:3, :3]), M[:3, 3]])


def cay_def(A):
    """(I − A)⁻¹(I + A), seed 001 eq. (3.1)."""
    eye = jnp.eye(A.shape[0], dtype=A.dtype)
    return jnp.linalg.solve(eye - A, eye + A)


def make_group(name, dim, hat, vee):
    def cay(X):
        return cay_def(hat(X))

    def right(X, Y):
        """vee(d/dt cay(X + tY) cay(X)⁻¹)."""
        G, dG = jax.jvp(cay, (X,), (Y,))
        return vee(dG @ jnp.linalg.inv(G))

    def left(X, Y):
        """vee(cay(X)⁻¹ d/dt cay(X + tY))."""
        G, dG = jax.jvp(cay, (X,), (Y,))
        return vee(jnp.linalg.solve(G, dG))

    def dcay(X):
        """Right-trivialised differential as a matrix, column by column from the definition."""
        return jax.vmap(lambda e: right(X, e), out_axes=1)(jnp.eye(dim, dtype=X.dtype))

    def dcay_inv(X):
        return jnp.linalg.inv(dcay(X))

    def cay_half(X):
        return cay(0.5 * X)

    def dcay_half(X):
        def right_h(e):
            G, dG = jax.jvp(cay_half, (X,), (e,))
            return vee(dG @ jnp.linalg.inv(G))

        return jax.vmap(right_h, out_axes=1)(jnp.eye(dim, dtype=X.dtype))

    mod = SimpleNamespace(
        **{
            k: getattr(C, f"{k}_{name}")
            for k in (
                "cay",
                "cay_inv",
                "dcay",
                "dcay_inv",
                "d_dcay",
                "d_dcay_inv",
                "cay_half",
                "cay_half_inv",
                "dcay_half",
                "dcay_half_inv",
                "d_dcay_half",
                "d_dcay_half_inv",
            )
        }
    )
    ref = SimpleNamespace(
        cay=cay,
        right=right,
        left=left,
        dcay=dcay,
        dcay_inv=dcay_inv,
        cay_half=cay_half,
        dcay_half=dcay_half,
        dcay_half_inv=lambda X: jnp.linalg.inv(dcay_half(X)),
    )
    return SimpleNamespace(name=name, dim=dim, hat=hat, vee=vee, mod=mod, ref=ref)


SO3 = make_group("so3", 3, hat3, vee3)
SE3 = make_group("se3", 6, hat6, vee6)
GROUPS = pytest.mark.parametrize("G", [SO3, SE3], ids=["so3", "se3"])

RNG = np.random.default_rng(20210303)


def rand(dim, n=None, scale=1.0):
    shape = (dim,) if n is None else (n, dim)
    return jnp.asarray(scale * RNG.standard_normal(shape))


SAMPLES = [rand(6, scale=s) for s in (1e-9, 0.05, 0.4, 1.0, 2.0)]  # no switching anywhere: near 0 is plain


def Ad6(H):
    R, r = H[:3, :3], H[:3, 3]
    Z = jnp.zeros((3, 3), H.dtype)
    return jnp.block([[R, Z], [hat3(r) @ R, R]])


def close(a, b, tol=1e-10):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    scale = max(1.0, float(np.max(np.abs(b))))
    err = float(np.max(np.abs(a - b)))
    assert err <= tol * scale, f"max error {err:.3e} (scale {scale:.3e}, tol {tol:.1e})"


# ---------------------------------------------------------------------------------------------------------------------
# Maps.
# ---------------------------------------------------------------------------------------------------------------------


@GROUPS
@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_cay_matches_definition(G, k):
    X = SAMPLES[k][: G.dim]
    close(G.mod.cay(X), G.ref.cay(X), 1e-13)


def test_cay_so3_is_rotation():
    for X in SAMPLES + [rand(3, scale=30.0)]:
        R = np.asarray(C.cay_so3(X[:3]))
        close(R.T @ R, np.eye(3), 1e-13)
        assert abs(np.linalg.det(R) - 1.0) < 1e-13
        H = np.asarray(C.cay_se3(X)) if X.shape[0] == 6 else None
        if H is not None:
            close(H[3], [0, 0, 0, 1], 0)
            close(H[:3, :3], R, 0)


def test_cay_se3_pure_translation():
    y = rand(3)
    H = C.cay_se3(jnp.concatenate([jnp.zeros(3), y]))
    expected = np.eye(4)
    expected[:3, 3] = 2 * np.asarray(y)
    close(H, expected, 1e-15)
    close(C.cay_half_se3(jnp.concatenate([jnp.zeros(3), y]))[:3, 3], y, 1e-15)


@pytest.mark.parametrize("phi", [1e-6, 0.3, 1.5, 2.9, 3.1])
def test_gibbs_rodrigues_vector_gives_rotation(phi):
    n = np.array(rand(3))
    n /= np.linalg.norm(n)
    R = scipy.linalg.expm(phi * np.asarray(hat3(jnp.asarray(n))))
    close(C.cay_so3(jnp.tan(phi / 2) * n), R, 1e-12)
    close(C.cay_half_so3(2 * jnp.tan(phi / 2) * n), R, 1e-12)
    close(C.cay_inv_so3(R), np.tan(phi / 2) * n, 1e-9)


def test_quaternion_gnomonic_projection():
    for _ in range(5):
        q = RNG.standard_normal(4)
        q /= np.linalg.norm(q)  # (q0, q1, q2, q3), scalar first
        R = Rotation.from_quat(np.r_[q[1:], q[0]]).as_matrix()  # scipy: scalar last
        close(C.cay_so3(jnp.asarray(q[1:] / q[0])), R, 1e-12)


@GROUPS
def test_cay_inv_roundtrip(G):
    for X in SAMPLES + [jnp.zeros(6)]:
        X = X[: G.dim]
        close(G.mod.cay_inv(G.ref.cay(X)), X, 1e-12)
        close(G.mod.cay_half_inv(G.ref.cay_half(X)), X, 1e-12)


def test_cay_inv_half_turn_not_finite():
    """A half turn (tr R = −1) has no Cayley coordinates: documented inf/nan, not a silent finite value."""
    R = jnp.diag(jnp.array([1.0, -1.0, -1.0]))
    assert not np.all(np.isfinite(C.cay_inv_so3(R)))
    H = jnp.eye(4).at[:3, :3].set(R)
    assert not np.all(np.isfinite(C.cay_inv_se3(H)))


# ---------------------------------------------------------------------------------------------------------------------
# Trivialised differentials.
# ---------------------------------------------------------------------------------------------------------------------


@GROUPS
@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_dcay_right_and_left_trivialisation(G, k):
    X, Y = SAMPLES[k][: G.dim], rand(G.dim)
    close(G.mod.dcay(X) @ Y, G.ref.right(X, Y), 1e-12)
    close(G.mod.dcay(-X) @ Y, G.ref.left(X, Y), 1e-12)
    close(G.mod.dcay_inv(X), jnp.linalg.inv(G.ref.dcay(X)), 1e-12)
    close(G.mod.dcay(X) @ G.mod.dcay_inv(X), np.eye(G.dim), 1e-13)


@GROUPS
def test_dcay_at_zero(G):
    z = jnp.zeros(G.dim)
    close(G.mod.dcay(z), 2 * np.eye(G.dim), 0)
    close(G.mod.dcay_inv(z), 0.5 * np.eye(G.dim), 0)
    close(G.mod.dcay_half(z), np.eye(G.dim), 0)
    close(G.mod.dcay_half_inv(z), np.eye(G.dim), 0)


def test_dcay_se3_pure_translation():
    y = rand(3)
    Y = np.asarray(hat3(y))
    I3, Z = np.eye(3), np.zeros((3, 3))
    close(C.dcay_se3(jnp.concatenate([jnp.zeros(3), y])), np.block([[2 * I3, Z], [2 * Y, 2 * I3]]), 1e-15)


def test_dcay_inv_so3_alternative_form():
    """(3.12): dcay_x⁻¹ = (I + Rᵀ)/(2σ), R = cay x̃ (from the definition)."""
    x = SAMPLES[3][:3]
    sigma = 2 / (1 + x @ x)
    close(C.dcay_inv_so3(x), (np.eye(3) + SO3.ref.cay(x).T) / (2 * sigma), 1e-13)


@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_determinants(k):
    X = SAMPLES[k]
    sigma = 2 / (1 + X[:3] @ X[:3])
    close(jnp.linalg.det(C.dcay_so3(X[:3])), 2 * sigma**2, 1e-13)
    close(jnp.linalg.det(C.dcay_se3(X)), 8 * sigma**3, 1e-12)


@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_adjoint_and_transpose_identities(k):
    X = SAMPLES[k]
    close(C.dcay_se3(X), Ad6(SE3.ref.cay(X)) @ C.dcay_se3(-X), 1e-12)
    close(C.dcay_so3(-X[:3]), C.dcay_so3(X[:3]).T, 1e-15)
    close(C.dcay_inv_so3(-X[:3]), C.dcay_inv_so3(X[:3]).T, 1e-15)
    # no transpose rule on SE(3): the lower-left blocks differ (by a term of order |y|)
    if k > 0:
        assert float(jnp.max(jnp.abs(C.dcay_se3(-X) - C.dcay_se3(X).T))) > 1e-3


# ---------------------------------------------------------------------------------------------------------------------
# Directional derivatives of the differentials.
# ---------------------------------------------------------------------------------------------------------------------


@GROUPS
@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_d_dcay_vs_jvp_of_definition(G, k):
    X, U = SAMPLES[k][: G.dim], rand(G.dim)
    close(G.mod.d_dcay(X, U), jax.jvp(G.ref.dcay, (X,), (U,))[1], 1e-11)
    close(G.mod.d_dcay_inv(X, U), jax.jvp(G.ref.dcay_inv, (X,), (U,))[1], 1e-11)


@GROUPS
@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_d_dcay_vs_finite_differences(G, k):
    X, U = SAMPLES[k][: G.dim], rand(G.dim)
    h = 1e-6
    for f, df in (
        (G.mod.dcay, G.mod.d_dcay),
        (G.mod.dcay_inv, G.mod.d_dcay_inv),
        (G.mod.dcay_half, G.mod.d_dcay_half),
        (G.mod.dcay_half_inv, G.mod.d_dcay_half_inv),
    ):
        fd = (f(X + h * U) - f(X - h * U)) / (2 * h)
        close(df(X, U), fd, 1e-8)


# ---------------------------------------------------------------------------------------------------------------------
# Half-scale convention.
# ---------------------------------------------------------------------------------------------------------------------


@GROUPS
@pytest.mark.parametrize("k", range(len(SAMPLES)))
def test_half_scale(G, k):
    X, U = SAMPLES[k][: G.dim], rand(G.dim)
    close(G.mod.cay_half(X), G.ref.cay(X / 2), 1e-13)
    close(G.mod.dcay_half(X), G.ref.dcay_half(X), 1e-12)
    close(G.mod.dcay_half_inv(X), G.ref.dcay_half_inv(X), 1e-12)
    close(G.mod.d_dcay_half(X, U), jax.jvp(G.ref.dcay_half, (X,), (U,))[1], 1e-11)
    close(G.mod.d_dcay_half_inv(X, U), jax.jvp(G.ref.dcay_half_inv, (X,), (U,))[1], 1e-11)


@GROUPS
def test_half_scale_first_order(G):
    """cay_h(tX) = I + t X̂ + O(t²)."""
    X, t = rand(G.dim), 1e-5
    close((G.mod.cay_half(t * X) - np.eye(G.hat(X).shape[0])) / t, G.hat(X), 1e-4)


def test_half_scale_so3_closed_forms():
    """Digest §5.1: dcay_h,x = (I + x̃/2)/(1 + |x|²/4), dcay_h,x⁻¹ = (1 + |x|²/4) I − x̃/2 + x̃²/4."""
    x = SAMPLES[3][:3]
    K, q = np.asarray(hat3(x)), float(x @ x)
    close(C.dcay_half_so3(x), (np.eye(3) + K / 2) / (1 + q / 4), 1e-14)
    close(C.dcay_half_inv_so3(x), (1 + q / 4) * np.eye(3) - K / 2 + K @ K / 4, 1e-14)


# ---------------------------------------------------------------------------------------------------------------------
# X = 0, autodiff, jit/vmap, broadcasting, dtypes, shape errors.
# ---------------------------------------------------------------------------------------------------------------------

UNARY = ["cay", "dcay", "dcay_inv", "cay_half", "dcay_half", "dcay_half_inv"]
BINARY = ["d_dcay", "d_dcay_inv", "d_dcay_half", "d_dcay_half_inv"]
INVERSE = ["cay_inv", "cay_half_inv"]
# XLA compile time dominates this file, so derivatives at 0 are compiled for the seed-convention functions only (the
# half-scale variants call the same unbatched cores at X/2), and full Hessians for a few of them: cay's Hessian at 0 is
# compared with the definition's below, and the Jacobian of d_dcay(X, U) in (X, U) already reaches third derivatives.
HESSIAN = {"dcay_inv", "d_dcay", "cay_inv"}


def _scalars(G):
    """name -> (scalar function of a flat vector, its length) for every public function of G."""
    W = jnp.asarray(RNG.standard_normal((7, 7)))

    def weigh(out):
        out = out if out.ndim == 2 else out[:, None]
        return jnp.sum(jnp.sin(out) * W[: out.shape[0], : out.shape[1]])

    out = {}
    for name in UNARY:
        out[name] = (lambda Z, f=getattr(G.mod, name): weigh(f(Z)), G.dim)
    for name in BINARY:
        out[name] = (lambda Z, f=getattr(G.mod, name): weigh(f(Z[: G.dim], Z[G.dim :])), 2 * G.dim)
    for name in INVERSE:  # at the identity: the argument is cay(Z) of the definition, Z = 0
        out[name] = (lambda Z, f=getattr(G.mod, name): weigh(f(G.ref.cay(Z))), G.dim)
    return out


@GROUPS
def test_values_and_derivatives_finite_at_zero(G):
    scalars = _scalars(G)
    for name, (s, n) in scalars.items():  # eager values of every function at 0
        assert np.isfinite(s(jnp.zeros(n))), name

    @jax.jit
    def derivatives():
        res = {}
        for name, (s, n) in scalars.items():
            if "half" not in name:
                z = jnp.zeros(n)
                res[name] = (jax.jacfwd(s)(z),) + ((jax.hessian(s)(z),) if name in HESSIAN else ())
        return res

    res = derivatives()
    assert len(res) == 6
    for name, vals in res.items():
        for val in vals:
            assert np.all(np.isfinite(val)), name


@GROUPS
def test_autodiff_at_zero_matches_definition(G):
    """Derivatives at X = 0 equal those of the definition (no special case at 0): Hessian of a scalar of cay,
    Jacobian of dcay."""
    z = jnp.zeros(G.dim)
    Wc = jnp.asarray(RNG.standard_normal(G.hat(z).shape))

    def hess_cay(cay):
        return jax.hessian(lambda X: jnp.sum(cay(X) * Wc))(z)

    @jax.jit
    def derivatives():
        return hess_cay(G.mod.cay), hess_cay(G.ref.cay), jax.jacfwd(G.mod.dcay)(z), jax.jacfwd(G.ref.dcay)(z)

    hc_mod, hc_ref, jd_mod, jd_ref = derivatives()
    close(hc_mod, hc_ref, 1e-12)
    close(jd_mod, jd_ref, 1e-12)


@GROUPS
def test_jit_vmap_equal_loop(G):
    n = 4
    Xs, Us = rand(G.dim, n), rand(G.dim, n)
    Ms = jax.vmap(G.ref.cay)(Xs)
    calls = {name: (getattr(G.mod, name), (Xs,)) for name in UNARY}
    calls.update({name: (getattr(G.mod, name), (Xs, Us)) for name in BINARY})
    calls.update({name: (getattr(G.mod, name), (Ms,)) for name in INVERSE})

    @jax.jit
    def batched_results():
        return {name: (jax.jit(f)(*args), jax.vmap(f)(*args), f(*args)) for name, (f, args) in calls.items()}

    results = batched_results()
    for name, (f, args) in calls.items():
        loop = np.stack([np.asarray(f(*(a[i] for a in args))) for i in range(n)])
        for r in results[name]:
            close(r, loop, 1e-14)
    close(jax.vmap(G.mod.dcay)(Xs), np.stack([np.asarray(G.mod.dcay(X)) for X in Xs]), 1e-14)  # eager vmap


def test_broadcasting_shapes():
    X = rand(6, 10).reshape(2, 5, 6)
    shape = lambda f, *a: jax.eval_shape(f, *a).shape
    assert C.dcay_se3(X).shape == (2, 5, 6, 6)
    assert shape(C.dcay_half_inv_se3, X) == (2, 5, 6, 6)
    assert shape(C.cay_se3, X) == (2, 5, 4, 4)
    assert shape(C.cay_inv_se3, jnp.zeros((2, 5, 4, 4))) == (2, 5, 6)
    assert shape(C.d_dcay_se3, X[:, :1], rand(6, 5)) == (2, 5, 6, 6)
    assert shape(C.d_dcay_inv_so3, X[0, :, :3], rand(3)) == (5, 3, 3)
    assert shape(C.cay_so3, X[..., :3]) == (2, 5, 3, 3)
    close(C.dcay_se3(X)[1, 2], C.dcay_se3(X[1, 2]), 1e-15)  # to round-off: batched and single kernels may differ
    close(C.d_dcay_se3(X[:, :1], X[0])[1, 3], C.d_dcay_se3(X[1, 0], X[0, 3]), 1e-15)


@GROUPS
def test_float32(G):
    X64, U64 = SAMPLES[3][: G.dim], rand(G.dim)
    X32, U32 = X64.astype(jnp.float32), U64.astype(jnp.float32)
    # compare at the float32-rounded inputs so that only the arithmetic differs
    Xr, Ur = X32.astype(jnp.float64), U32.astype(jnp.float64)
    for name in UNARY:
        out = getattr(G.mod, name)(X32)
        assert out.dtype == jnp.float32, name
        close(out, getattr(G.mod, name)(Xr), 1e-5)
    for name in BINARY:
        out = getattr(G.mod, name)(X32, U32)
        assert out.dtype == jnp.float32, name
        close(out, getattr(G.mod, name)(Xr, Ur), 1e-5)
    M32 = G.mod.cay(X32)
    out = G.mod.cay_inv(M32)
    assert out.dtype == jnp.float32
    close(out, G.mod.cay_inv(M32.astype(jnp.float64)), 1e-5)


@pytest.mark.parametrize(
    "f, args, argname",
    [
        (C.cay_so3, (jnp.zeros(4),), "x"),
        (C.dcay_inv_so3, (jnp.zeros((2, 6)),), "x"),
        (C.cay_inv_so3, (jnp.eye(4),), "R"),
        (C.d_dcay_so3, (jnp.zeros(3), jnp.zeros(6)), "u"),
        (C.cay_se3, (jnp.zeros(3),), "X"),
        (C.cay_inv_se3, (jnp.eye(3),), "H"),
        (C.dcay_half_se3, (jnp.zeros((6, 1)),), "X"),
        (C.d_dcay_inv_se3, (jnp.zeros(6), jnp.zeros(5)), "U"),
        (C.d_dcay_half_inv_se3, (jnp.zeros(3), jnp.zeros(6)), "X"),
    ],
)
def test_wrong_shape_raises(f, args, argname):
    with pytest.raises(ValueError, match=f"'{argname}'"):
        f(*args)


# ---------------------------------------------------------------------------------------------------------------------
# Property-based identities over |x| ≤ 3.
# ---------------------------------------------------------------------------------------------------------------------


def _twist(values):
    X = np.asarray(values, dtype=np.float64)
    nx = np.linalg.norm(X[:3])
    if nx > 3.0:
        X[:3] *= 3.0 / nx
    return jnp.asarray(X)


TWIST = st.lists(st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False), min_size=6, max_size=6).map(_twist)


@jax.jit
def _pairs_roundtrip(X):
    return [
        (C.cay_se3(X), SE3.ref.cay(X)),
        (C.cay_inv_se3(C.cay_se3(X)), X),
        (C.cay_inv_so3(C.cay_so3(X[:3])), X[:3]),
        (C.cay_half_inv_se3(C.cay_half_se3(X)), X),
        (C.dcay_se3(X) @ C.dcay_inv_se3(X), jnp.eye(6)),
        (C.dcay_half_so3(X[:3]) @ C.dcay_half_inv_so3(X[:3]), jnp.eye(3)),
    ]


@jax.jit
def _pairs_trivialisation(X, Y):
    return [
        (C.dcay_se3(X) @ Y, SE3.ref.right(X, Y)),
        (C.dcay_se3(-X) @ Y, SE3.ref.left(X, Y)),
        (C.dcay_so3(X[:3]) @ Y[:3], SO3.ref.right(X[:3], Y[:3])),
        (C.dcay_so3(-X[:3]) @ Y[:3], SO3.ref.left(X[:3], Y[:3])),
        (C.dcay_half_se3(X) @ Y, jax.jvp(SE3.ref.cay_half, (X,), (Y,))[1] @ jnp.linalg.inv(SE3.ref.cay_half(X))),
        (C.dcay_se3(X), Ad6(SE3.ref.cay(X)) @ C.dcay_se3(-X)),
    ]


@jax.jit
def _pairs_directional(X, U):
    x, u = X[:3], U[:3]
    return [
        (C.d_dcay_se3(X, U), jax.jvp(SE3.ref.dcay, (X,), (U,))[1]),
        (C.d_dcay_inv_se3(X, U), jax.jvp(SE3.ref.dcay_inv, (X,), (U,))[1]),
        (C.d_dcay_so3(x, u), jax.jvp(SO3.ref.dcay, (x,), (u,))[1]),
        (C.d_dcay_inv_so3(x, u), jax.jvp(SO3.ref.dcay_inv, (x,), (u,))[1]),
        (C.d_dcay_half_se3(X, U), jax.jvp(SE3.ref.dcay_half, (X,), (U,))[1]),
        (C.d_dcay_half_inv_se3(X, U), jax.jvp(SE3.ref.dcay_half_inv, (X,), (U,))[1]),
    ]


@settings(max_examples=30, deadline=None)
@given(TWIST)
def test_property_roundtrip_and_inverse(X):
    for a, b in _pairs_roundtrip(X):
        close(a, b, 1e-10)


@settings(max_examples=30, deadline=None)
@given(TWIST, TWIST)
def test_property_trivialisation_and_adjoint(X, Y):
    pairs = _pairs_trivialisation(X, Y)
    pairs[4] = (pairs[4][0], SE3.vee(pairs[4][1]))
    for a, b in pairs:
        close(a, b, 1e-10)


@settings(max_examples=30, deadline=None)
@given(TWIST, TWIST)
def test_property_directional_derivatives(X, U):
    for a, b in _pairs_directional(X, U):
        close(a, b, 1e-10)


@pytest.mark.parametrize("scale", [0.0, 1e-9, 0.3, 1.0, 5.0])
def test_cay_of_the_adjoint(scale):
    """cay(ad_X) (seed 001 Lemma 3.4) against its definition (I − ad_X)⁻¹(I + ad_X) by a linear solve, and as the
    adjoint of the pose [[cay x̃, dcay_x y], [0, 1]] built from the SO(3) map — which differs from Ad of the SE(3)
    Cayley map (the same numbers, another motion; digest §5.5) — at zero rotation (pure translation: [[I, 0], [2ỹ, I]])
    and at growing rotations; its derivative (plain autodiff of the closed form) against central differences."""
    from jaxse3 import se3, so3

    rng = np.random.default_rng(7)
    X = jnp.concatenate([scale * jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))])
    x, y = X[:3], X[3:]
    ad = jnp.block([[hat3(x), jnp.zeros((3, 3))], [hat3(y), hat3(x)]])
    M = C.cay_ad_se3(X)
    np.testing.assert_allclose(M, cay_def(ad), rtol=1e-13, atol=1e-13)
    R = so3.cay(x)
    pose = se3.from_rotation_translation(R, so3.dcay(x) @ y)
    np.testing.assert_allclose(M, se3.Ad(pose), rtol=1e-13, atol=1e-13)
    if scale > 0.1:
        assert np.abs(np.asarray(M - se3.Ad(se3.cay(X)))).max() > 1e-3
    if scale == 0.0:
        np.testing.assert_allclose(M[3:, :3], 2 * hat3(y), atol=1e-15)
    dX = jnp.asarray(rng.normal(size=6))
    h = 1e-6
    central = (se3.cay_ad(X + h * dX) - se3.cay_ad(X - h * dX)) / (2 * h)
    np.testing.assert_allclose(jax.jvp(se3.cay_ad, (X,), (dX,))[1], central, rtol=1e-7, atol=1e-8)
    batch = se3.cay_ad(jnp.stack([X, 2 * X]))
    np.testing.assert_allclose(batch[1], cay_def(2 * ad), rtol=1e-12, atol=1e-12)
