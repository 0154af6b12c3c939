"""Independent 60-digit mpmath reference for the dexp family on so(3) and se(3), plus the accuracy-test design.

Nothing here uses jaxse3: every quantity is computed from the defining power series (seed 000 eqs. (18), (52), (57)),

* ``dexp_X = Σ_{i≥0} P_i/(i+1)!`` with ``P_i = ad_X^i``;
* ``(D dexp)(U) = Σ DP_i(U)/(i+1)!`` with ``DP_i = B P_{i−1} + A DP_{i−1}`` (A = ad_X, B = ad_U);
* ``(D²dexp)(U)(S) = Σ D²P_i(U)(S)/(i+1)!`` with ``D²P_i = B DP_{i−1}(S) + C DP_{i−1}(U) + A D²P_{i−1}`` (C = ad_S);
* ``dexp⁻¹`` as the 60-digit matrix inverse F⁻¹ of the series F, ``D(F⁻¹)(U) = −F⁻¹ DF(U) F⁻¹`` and
  ``D²(F⁻¹)(U)(S) = F⁻¹[DF(S)F⁻¹DF(U) + DF(U)F⁻¹DF(S) − D²F(U)(S)]F⁻¹``;
* Jacobians of the evaluation maps column by column, ``J[:, j] = DF(e_j) Z`` (``dexpT_jac``: ``DF(e_j)ᵀ Z``), and
  Hessians entry by entry, ``H[i, j] = Qᵀ D²F(e_j)(e_i) Z``, by the same recursions applied to vectors;
* ``exp(X)`` by the exponential series of ``hat(X)``.

Every series is summed until i > 2‖A‖_∞ + 4 and two consecutive terms are below 10⁻⁶⁵ of the running sum (so the
neglected tail is below the working precision); the number of terms and the last term are recorded in :data:`STATS`.
Matrices are numpy object arrays of ``mpf``; results are returned as float64 arrays (their own rounding, 1e−16, is
far below every budget). All public functions take tuples of Python floats (exactly the float64 or float32 values
the function under test sees) and are cached, because the same points are reused across tests.

The 60-digit series take most of the accuracy tests' time, so the results at the accuracy test's points are stored
(``mpref_values.npz``, keyed by function, algebra and exact arguments) and read instead of summed again;
``python -m tests.lie.test_accuracy`` writes them, and tests/lie/test_accuracy.py checks that the store holds every
reference it needs and that stored results equal the series summed again. Any other point is computed.
"""

from __future__ import annotations

import functools
import hashlib
import math
import pathlib

import numpy as np
from mpmath import mp, mpf

mp.dps = 60
_TOL = mpf(10) ** -65
_MAX_TERMS = 400

#: Largest number of terms used and largest relative size of the last term, per series kind (for the reports).
STATS: dict[str, list] = {}


def _record(kind: str, n: int, last) -> None:
    s = STATS.setdefault(kind, [0, mpf(0)])
    s[0] = max(s[0], n)
    s[1] = max(s[1], last)


# ---------------------------------------------------------------------------------------------------------------------
# Small object-array helpers


def _vec(t) -> np.ndarray:
    return np.array([mpf(v) for v in t], dtype=object)


def _zeros(*shape) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    out.fill(mpf(0))
    return out


def _eye(n: int) -> np.ndarray:
    out = _zeros(n, n)
    for i in range(n):
        out[i, i] = mpf(1)
    return out


def _norm(a: np.ndarray):
    return max((abs(v) for v in a.flat), default=mpf(0))


def _inf_norm(a: np.ndarray):
    return max(sum(abs(v) for v in row) for row in a)


def _to_float(a: np.ndarray) -> np.ndarray:
    return np.vectorize(float, otypes=[np.float64])(a)


def _inverse(a: np.ndarray) -> np.ndarray:
    inv = mp.inverse(mp.matrix(a.tolist()))
    n = a.shape[0]
    return np.array([[inv[i, j] for j in range(n)] for i in range(n)], dtype=object)


def _skew(x) -> np.ndarray:
    z = mpf(0)
    return np.array([[z, -x[2], x[1]], [x[2], z, -x[0]], [-x[1], x[0], z]], dtype=object)


def ad(alg: str, X) -> np.ndarray:
    """ad_X: x̃ on so(3); [[x̃, 0], [ỹ, x̃]] on se(3) (seed 000 eq. (19))."""
    if alg == "so3":
        return _skew(X)
    out = _zeros(6, 6)
    out[:3, :3] = out[3:, 3:] = _skew(X[:3])
    out[3:, :3] = _skew(X[3:])
    return out


def hat(alg: str, X) -> np.ndarray:
    """x̃ on so(3); [[x̃, y], [0, 0]] on se(3) (seed 000 eq. (3))."""
    if alg == "so3":
        return _skew(X)
    out = _zeros(4, 4)
    out[:3, :3] = _skew(X[:3])
    out[:3, 3] = list(X[3:])
    return out


def _dim(alg: str) -> int:
    return 3 if alg == "so3" else 6


def _lin(terms, shape) -> np.ndarray:
    """Σ c·M over (c, M) pairs, skipping c = 0 and not multiplying by ±1 (keeps basis directions cheap)."""
    out = None
    for c, M in terms:
        if c == 0:
            continue
        t = M if c == 1 else (-M if c == -1 else c * M)
        out = t if out is None else out + t
    return _zeros(*shape) if out is None else out


def _cross(x, M) -> np.ndarray:
    """x × M column by column (x̃ M), M of shape (3, ...)."""
    sh = M.shape[1:]
    return np.stack(
        [
            _lin([(x[1], M[2]), (-x[2], M[1])], sh),
            _lin([(x[2], M[0]), (-x[0], M[2])], sh),
            _lin([(x[0], M[1]), (-x[1], M[0])], sh),
        ]
    )


class _Ad:
    """The linear map M ↦ ad_X M (or ad_Xᵀ M). A dense object-array product for general X; for the basis directions
    (``sparse=True``) blockwise cross products that skip the zero components, ad_X = [[x̃, 0], [ỹ, x̃]] and
    ad_Xᵀ = −[[x̃, ỹ], [0, x̃]] on se(3), ±x̃ on so(3)."""

    def __init__(self, alg: str, X: np.ndarray, transpose: bool = False, sparse: bool = False):
        self.alg, self.X, self.transpose, self.sparse = alg, X, transpose, sparse
        self.matrix = ad(alg, X).T if transpose else ad(alg, X)
        self.inf_norm = _inf_norm(self.matrix)

    def __call__(self, M: np.ndarray) -> np.ndarray:
        if not self.sparse:
            return (self.matrix @ M.reshape(M.shape[0], -1)).reshape(M.shape)
        x = self.X[:3]
        if self.alg == "so3":
            return -_cross(x, M) if self.transpose else _cross(x, M)
        y, top, bot = self.X[3:], M[:3], M[3:]
        if self.transpose:
            return -np.concatenate([_cross(x, top) + _cross(y, bot), _cross(x, bot)])
        return np.concatenate([_cross(x, top), _cross(y, top) + _cross(x, bot)])


def _basis(alg: str, transpose: bool = False) -> list[_Ad]:
    n = _dim(alg)
    return [_Ad(alg, _eye(n)[j], transpose, sparse=True) for j in range(n)]  # ad_{e_j}


class _Stop:
    """Convergence test of one power series: tail negligible once i > 2‖A‖_∞ + 4 and two terms are tiny."""

    def __init__(self, kind: str, inf_norm):
        self.kind, self.i_min, self.small = kind, 2 * float(inf_norm) + 4, 0

    def done(self, i: int, term: np.ndarray, total: np.ndarray) -> bool:
        rel = _norm(term) / max(_norm(total), mpf(10) ** -300)
        self.small = self.small + 1 if rel < _TOL else 0
        if i > self.i_min and self.small >= 2:
            _record(self.kind, i, rel)
            return True
        if i >= _MAX_TERMS:
            raise RuntimeError(f"mpref: {self.kind} series did not converge in {_MAX_TERMS} terms")
        return False


# ---------------------------------------------------------------------------------------------------------------------
# 60-digit series (object arrays in, object arrays out), cached on tuples. Each loop carries the i-th term already
# divided by (i+1)! (p = P_i/(i+1)!, dp = DP_i/(i+1)!, …), so one division per step.


@functools.cache
def _F(alg: str, X: tuple) -> np.ndarray:
    A = _Ad(alg, _vec(X))
    p = _eye(_dim(alg))  # P_i / (i+1)!
    out = p.copy()
    stop = _Stop("dexp", A.inf_norm)
    for i in range(1, _MAX_TERMS + 1):
        p = A(p) / (i + 1)
        out = out + p
        if stop.done(i, p, out):
            return out


@functools.cache
def _Finv(alg: str, X: tuple) -> np.ndarray:
    return _inverse(_F(alg, X))


@functools.cache
def _DF(alg: str, X: tuple, U: tuple) -> np.ndarray:
    """Σ DP_i(U)/(i+1)!, DP_i = B P_{i−1} + A DP_{i−1}; p, dp hold P_{i−1}/i!, DP_{i−1}/i!."""
    A, B = _Ad(alg, _vec(X)), _Ad(alg, _vec(U))
    n = _dim(alg)
    p, dp = _eye(n), _zeros(n, n)
    out = _zeros(n, n)
    stop = _Stop("d_dexp", A.inf_norm)
    for i in range(1, _MAX_TERMS + 1):
        dp = (B(p) + A(dp)) / (i + 1)
        p = A(p) / (i + 1)
        out = out + dp
        if stop.done(i, dp, out):
            return out


@functools.cache
def _D2F(alg: str, X: tuple, U: tuple, S: tuple) -> np.ndarray:
    """Σ D²P_i(U)(S)/(i+1)!, D²P_i = B DP_{i−1}(S) + C DP_{i−1}(U) + A D²P_{i−1}."""
    A, B, C = _Ad(alg, _vec(X)), _Ad(alg, _vec(U)), _Ad(alg, _vec(S))
    n = _dim(alg)
    p, dpu, dps, d2p = _eye(n), _zeros(n, n), _zeros(n, n), _zeros(n, n)
    out = _zeros(n, n)
    stop = _Stop("d2_dexp", A.inf_norm)
    for i in range(1, _MAX_TERMS + 1):
        d2p = (B(dps) + C(dpu) + A(d2p)) / (i + 1)
        dpu, dps = (B(p) + A(dpu)) / (i + 1), (C(p) + A(dps)) / (i + 1)
        p = A(p) / (i + 1)
        out = out + d2p
        if i >= 2 and stop.done(i, d2p, out):
            return out


@functools.cache
def _jac(alg: str, X: tuple, Z: tuple, transpose: bool) -> np.ndarray:
    """Columns DF(e_j) Z (or DF(e_j)ᵀ Z), by DP_i(U) Z = B P_{i−1} Z + A DP_{i−1}(U) Z (transposed:
    DP_i(U)ᵀ Z = Bᵀ P_{i−1}ᵀ Z + Aᵀ DP_{i−1}(U)ᵀ Z, from DP_i = DP_{i−1} A + P_{i−1} B)."""
    A = _Ad(alg, _vec(X), transpose)
    Bs = _basis(alg, transpose)
    n = _dim(alg)
    z = _vec(Z)  # P_{i−1} Z / i!  (or its transposed analogue)
    J = _zeros(n, n)  # column j: DP_{i−1}(e_j) Z / i!
    out = _zeros(n, n)
    stop = _Stop("jacobian", A.inf_norm)
    for i in range(1, _MAX_TERMS + 1):
        J = (A(J) + np.stack([B(z) for B in Bs], axis=1)) / (i + 1)
        z = A(z) / (i + 1)
        out = out + J
        if stop.done(i, J, out):
            return out


@functools.cache
def _hess(alg: str, X: tuple, Q: tuple, Z: tuple) -> np.ndarray:
    """H[i, j] = Qᵀ D²F(e_j)(e_i) Z, with T_n[:, (i, j)] = D²P_n(e_j)(e_i) Z by the D²P recursion applied to Z.

    T is symmetric in (i, j), so only the pairs i ≤ j are carried."""
    A = _Ad(alg, _vec(X))
    Bs = _basis(alg)
    n = _dim(alg)
    I, K = np.triu_indices(n)
    z = _vec(Z)  # P_{k−1} Z / k!
    J = _zeros(n, n)  # column k: DP_{k−1}(e_k) Z / k!
    T = _zeros(n, len(I))
    out = _zeros(n, len(I))
    stop = _Stop("hessian", A.inf_norm)
    for i in range(1, _MAX_TERMS + 1):
        M = np.stack([B(J) for B in Bs], axis=0)  # M[j, :, k] = ad_{e_j} DP_{i−1}(e_k) Z / i!
        T = (A(T) + M[K, :, I].T + M[I, :, K].T) / (i + 1)
        J = (A(J) + np.stack([B(z) for B in Bs], axis=1)) / (i + 1)
        z = A(z) / (i + 1)
        out = out + T
        if i >= 2 and stop.done(i, T, out):
            h = _vec(Q) @ out
            H = _zeros(n, n)
            H[I, K] = h
            H[K, I] = h
            return H


@functools.cache
def _exp(alg: str, X: tuple) -> np.ndarray:
    Xh = hat(alg, _vec(X))
    p = _eye(Xh.shape[0])  # hat(X)^i / i!
    out = p.copy()
    stop = _Stop("exp", _inf_norm(Xh))
    for i in range(1, _MAX_TERMS + 1):
        p = (Xh @ p) / i
        out = out + p
        if stop.done(i, p, out):
            return out


def arguments(v) -> tuple:
    """An argument as the public functions key it: its values as a tuple of Python floats."""
    return tuple(float(a) for a in np.asarray(v, dtype=np.float64).ravel())


def _mpkey(v: np.ndarray) -> tuple:
    return tuple(v)  # mpf values are hashable and exact


# ---------------------------------------------------------------------------------------------------------------------
# Public reference functions: float arguments (any array-like of floats), float64 results.


def _public(fn):
    @functools.wraps(fn)
    def wrapper(alg, *args):
        return _cached(fn.__name__, alg, tuple(arguments(a) for a in args))

    wrapper.raw = fn
    return wrapper


#: stored results (module docstring)
STORE = pathlib.Path(__file__).with_name("mpref_values.npz")


def store_key(name: str, alg: str, args: tuple) -> str:
    """The store's key of ``name(alg, *args)``, args as tuples of Python floats (their repr is exact)."""
    return hashlib.sha256(repr((name, alg, args)).encode()).hexdigest()[:32]


@functools.cache
def stored() -> dict[str, np.ndarray]:
    """The stored results (empty without the file)."""
    if not STORE.exists():
        return {}
    with np.load(STORE) as data:
        return {k: data[k] for k in data.files}


def compute(name: str, alg: str, args: tuple) -> np.ndarray:
    """``name(alg, *args)`` summed by the series, never read from the store."""
    return _to_float(globals()[name].raw(alg, *args))


@functools.cache
def _cached(name: str, alg: str, args: tuple) -> np.ndarray:
    out = stored().get(store_key(name, alg, args))
    out = compute(name, alg, args) if out is None else out
    out.setflags(write=False)
    return out


@_public
def exp(alg, X):
    """exp(hat X): 3×3 rotation on so(3), 4×4 pose on se(3)."""
    return _exp(alg, X)


@_public
def dexp(alg, X):
    return _F(alg, X)


@_public
def dexp_inv(alg, X):
    return _Finv(alg, X)


@_public
def d_dexp(alg, X, U):
    return _DF(alg, X, U)


@_public
def d_dexp_inv(alg, X, U):
    Fi = _Finv(alg, X)
    return -Fi @ _DF(alg, X, U) @ Fi


@_public
def d_dexp_apply(alg, X, U, Z):
    """(D dexp)(U) Z."""
    return _DF(alg, X, U) @ _vec(Z)


@_public
def d_dexp_inv_apply(alg, X, U, Z):
    """(D dexp⁻¹)(U) Z = −F⁻¹ DF(U) F⁻¹ Z."""
    Fi = _Finv(alg, X)
    return -Fi @ (_DF(alg, X, U) @ (Fi @ _vec(Z)))


@_public
def d2_dexp(alg, X, U, S):
    return _D2F(alg, X, U, S)


@_public
def d2_dexp_inv(alg, X, U, S):
    Fi = _Finv(alg, X)
    DU, DS = _DF(alg, X, U), _DF(alg, X, S)
    return Fi @ (DS @ Fi @ DU + DU @ Fi @ DS - _D2F(alg, X, U, S)) @ Fi


@_public
def dexp_jac(alg, X, Z):
    """∂(dexp_X Z)/∂X."""
    return _jac(alg, X, Z, False)


@_public
def dexp_inv_jac(alg, X, Z):
    """∂(dexp_X⁻¹ Z)/∂X: column j is −F⁻¹ DF(e_j) F⁻¹ Z."""
    Fi = _Finv(alg, X)
    return -Fi @ _jac(alg, X, _mpkey(Fi @ _vec(Z)), False)


@_public
def dexpT_jac(alg, X, Z):
    """∂(dexp_Xᵀ Z)/∂X."""
    return _jac(alg, X, Z, True)


@_public
def dexp_invT_jac(alg, X, Z):
    """∂(dexp_X⁻ᵀ Z)/∂X: column j is −F⁻ᵀ DF(e_j)ᵀ F⁻ᵀ Z."""
    FiT = _Finv(alg, X).T
    return -FiT @ _jac(alg, X, _mpkey(FiT @ _vec(Z)), True)


@_public
def dexp_hess(alg, X, Q, Z):
    """Hessian of Qᵀ dexp_X Z."""
    return _hess(alg, X, Q, Z)


@_public
def dexp_inv_hess(alg, X, Q, Z):
    """Hessian of Qᵀ dexp_X⁻¹ Z = Jqᵀ F⁻¹ Jz + (Jqᵀ F⁻¹ Jz)ᵀ − H_F(q, z), q = F⁻ᵀQ, z = F⁻¹Z."""
    Fi = _Finv(alg, X)
    q, z = Fi.T @ _vec(Q), Fi @ _vec(Z)
    Jz = _jac(alg, X, _mpkey(z), False)
    Jq = _jac(alg, X, _mpkey(q), True)
    K = Jq.T @ Fi @ Jz
    return K + K.T - _hess(alg, X, _mpkey(q), _mpkey(z))


FUNCTIONS = (
    "exp",
    "dexp",
    "dexp_inv",
    "d_dexp",
    "d_dexp_inv",
    "d2_dexp",
    "d2_dexp_inv",
    "dexp_jac",
    "dexp_inv_jac",
    "dexpT_jac",
    "dexp_invT_jac",
    "dexp_hess",
    "dexp_inv_hess",
)

# ---------------------------------------------------------------------------------------------------------------------
# The accuracy-test design (shared by tests/lie/test_accuracy.py and benchmarks/accuracy_table.py)

#: Rotation angles φ = ‖x‖ of the test points.
PHIS = (0.0, 1e-12, 1e-8, 1e-5, 1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0, 3.0)
#: Random draws per angle.
N_DRAWS = 2
SEED = 20260430

#: Maximum relative Frobenius error ‖ours − ref‖_F / ‖ref‖_F, per group and dtype.
BUDGETS = {
    "value": {"float64": 1e-13, "float32": 2e-6},
    "first": {"float64": 1e-12, "float32": 1e-5},
    "second": {"float64": 1e-11, "float32": 1e-4},
}


def draws(phi_index: int, dtype) -> list[dict[str, np.ndarray]]:
    """The N_DRAWS test points at PHIS[phi_index]: X = (φ n, y) on se(3) with a random unit n and y ~ N(0, 1),
    and U, S, Z, Q ~ N(0, 1) (6-vectors), rounded to ``dtype``. The so(3) points are the first three components."""
    rng = np.random.default_rng([SEED, phi_index])
    phi = PHIS[phi_index]
    out = []
    for _ in range(N_DRAWS):
        n = rng.normal(size=3)
        n /= math.sqrt(math.fsum(n * n))  # correctly rounded on every CPU (np.linalg.norm's last bit is not)
        d = {"X": np.concatenate([phi * n, rng.normal(size=3)])}
        for name in ("U", "S", "Z", "Q"):
            d[name] = rng.normal(size=6)
        out.append({k: v.astype(dtype) for k, v in d.items()})
    return out


def restrict(alg: str, d: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The point on ``alg``: all six components on se(3), the first three on so(3)."""
    return d if alg == "se3" else {k: v[:3] for k, v in d.items()}


def rel_error(ours, ref) -> float:
    """‖ours − ref‖_F / ‖ref‖_F (absolute error where ref = 0), computed in float64."""
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    den = np.linalg.norm(ref)
    num = np.linalg.norm(ours - ref)
    if not np.all(np.isfinite(ours)):
        return math.inf
    return float(num / den) if den > 0 else float(num)
