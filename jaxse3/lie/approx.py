"""k-th order local approximations of dexp, dexp⁻¹ and their derivatives on so(3) and se(3) (seed 000 §5–§6).

Every approximation is a truncation of the series (52)–(61) of seed 000, i.e. a polynomial ``Σ c_i ad_X^i`` with
**constant** coefficients, evaluated by the generic recursions of :mod:`jaxse3.lie.adpoly` (``c̄ = c̆ = 0``):

* dexp:  ``c_i = 1/(i+1)!``  (1, 1/2, 1/6, 1/24, 1/120, 1/720, …);
* dexp⁻¹: ``c_i = B_i/i!`` with the Bernoulli numbers B0 = 1, B1 = −1/2, B2 = 1/6, B3 = 0, B4 = −1/30, B5 = 0,
  B6 = 1/42 (1, −1/2, 1/12, 0, −1/720, 0, 1/30240; the paper prints B6 = 1/46, digest §8).

"Order k" follows the digest §3.2 (which is what Tables 2–6 and the paper's reference library implement):

* ``dexp``, ``dexp_inv``: ``Σ_{i=0}^{k} c_i ad_X^i``, k = 0 … 4 (eqs. (18), (22); Fig. 1);
* ``d_dexp``, ``d_dexp_inv``: ``D^[k] = Σ_{i=1}^{k+1} c_i DP_i(U)``, k = 0 … 3 (eqs. (52), (53); Tables 1–3);
* ``d2_dexp``, ``d2_dexp_inv``: ``Σ_{i=2}^{k+2} c_i D²P_i(U)(S)``, k = 0 … 2 (eqs. (57), (58); Tables 4, 5);
* ``dexp_jac``, ``dexp_inv_jac``: ``J^[k] = Σ_{i=1}^{k+1} c_i Σ_j P_{i,j}(X, Z)``, k = 0 … 3 (eqs. (54)–(56); Tables
  1–3);
* ``dexp_hess``, ``dexp_inv_hess``: ``H^[k] = Σ_{i=2}^{k+2} c_i (H̄_i + H̄_iᵀ)``, k = 0 … 2 (eqs. (60)–(63); Table 6);

so ``d_dexp(X, U, k)`` is the exact directional derivative of ``dexp(X, k + 1)``, ``d2_dexp(X, U, S, k)`` the second
derivative of ``dexp(X, k + 2)``, ``dexp_jac(X, Z, k)`` the Jacobian of ``X ↦ dexp(X, k + 1) Z`` and
``dexp_hess(X, Q, Z, k)`` the Hessian of ``X ↦ Qᵀ dexp(X, k + 2) Z`` (the same holds for the ``_inv`` functions).
For X(s) = s·X₀ the error of order k is O(s^{k+1}).

Because B3 = B5 = 0 the inverse has no odd orders; the odd orders are accepted and coincide with the one below:
``dexp_inv(·, 3) ≡ dexp_inv(·, 2)``, ``d_dexp_inv(·, 2) ≡ d_dexp_inv(·, 1)``, ``d2_dexp_inv(·, 1) ≡ d2_dexp_inv(·, 0)``,
``dexp_inv_jac(·, 2) ≡ dexp_inv_jac(·, 1)`` and ``dexp_inv_hess(·, 1) ≡ dexp_inv_hess(·, 0)``. The lower order of each
pair therefore gains one order, O(s^{k+2}): ``dexp_inv`` orders 2 and 4 (O(s⁴), O(s⁶)), ``d_dexp_inv`` /
``dexp_inv_jac`` orders 1 and 3 (O(s³), O(s⁵)), ``d2_dexp_inv`` / ``dexp_inv_hess`` orders 0 and 2 (O(s²), O(s⁴)).

Each function works for so(3) (vectors ``(..., 3)``) and se(3) (``(..., 6)``, rotation first), chosen by the trailing
size of X; all arguments broadcast over leading batch axes. ``order`` must be a static Python int (use
``jax.jit(f, static_argnums=...)`` or close over it). The approximations are plain JAX polynomials, so autodiff of them
is exact (no custom rules). They are the paper's §6.3 replacements for the closed forms near φ = 0; the closed forms of
:mod:`jaxse3.se3` / :mod:`jaxse3.so3` are already accurate there (Taylor-switched coefficients).
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np
from jaxtyping import Array, Float

from jaxse3.lie import adpoly
from jaxse3.lie._algebra import SE3, SO3
from jaxse3.lie.shapes import batched

__all__ = [
    "dexp",
    "dexp_inv",
    "d_dexp",
    "d_dexp_inv",
    "d2_dexp",
    "d2_dexp_inv",
    "dexp_jac",
    "dexp_inv_jac",
    "dexp_hess",
    "dexp_inv_hess",
    "ORDERS",
    "DEXP_COEFFICIENTS",
    "DEXP_INV_COEFFICIENTS",
]

_NMAX = 7  # coefficients i = 0 … 6 (the highest needed is i = 4; B5, B6 kept for reference)

#: c_i = 1/(i+1)! of dexp (seed 000 eqs. (18), (52)), i = 0 … 6.
DEXP_COEFFICIENTS: tuple[float, ...] = tuple(1.0 / math.factorial(i + 1) for i in range(_NMAX))

_BERNOULLI = (1.0, -1.0 / 2.0, 1.0 / 6.0, 0.0, -1.0 / 30.0, 0.0, 1.0 / 42.0)

#: c_i = B_i/i! of dexp⁻¹ (seed 000 eqs. (22), (53)), i = 0 … 6; the exact 0.0 entries (B3 = B5 = 0) skip their terms.
DEXP_INV_COEFFICIENTS: tuple[float, ...] = tuple(b / math.factorial(i) for i, b in enumerate(_BERNOULLI))

# kind -> (orders, number of ad-polynomial terms for order k, (dexp reference, dexp⁻¹ reference))
_KINDS = {
    "matrix": ((0, 1, 2, 3, 4), lambda k: k + 1, ("§6.3, Fig. 1", "§6.3, Fig. 1")),
    "d": ((0, 1, 2, 3), lambda k: k + 2, ("Table 2", "Table 3")),
    "d2": ((0, 1, 2), lambda k: k + 3, ("Table 4", "Table 5")),
    "jac": ((0, 1, 2, 3), lambda k: k + 2, ("Table 2", "Table 3")),
    "hess": ((0, 1, 2), lambda k: k + 3, ("eq. (62)", "eq. (63)")),
}

#: The orders that exist, by public function name.
ORDERS: dict[str, tuple[int, ...]] = {}
_FUNCS: dict[str, tuple[str, bool]] = {}
for _kind, _stem in (("matrix", "{}"), ("d", "d_{}"), ("d2", "d2_{}"), ("jac", "{}_jac"), ("hess", "{}_hess")):
    for _inv, _fam in ((False, "dexp"), (True, "dexp_inv")):
        ORDERS[_stem.format(_fam)] = _KINDS[_kind][0]
        _FUNCS[_stem.format(_fam)] = (_kind, _inv)
del _kind, _stem, _inv, _fam


Vector = Float[Array, "... n"]  # so(3) (n = 3) or se(3) (n = 6, rotation first), batched over leading axes
Matrix = Float[Array, "... n n"]


def _words(orders: tuple[int, ...]) -> str:
    return ", ".join(map(str, orders[:-1])) + " or " + str(orders[-1])


def _check_order(name: str, order) -> int:
    kind, inv = _FUNCS[name]
    orders, _, refs = _KINDS[kind]
    msg = f"{name}: order must be {_words(orders)} (seed 000 {refs[inv]})"
    if isinstance(order, bool):
        raise ValueError(f"{msg}, got {order!r}")
    try:
        k = operator.index(order)
    except TypeError:
        raise ValueError(f"{msg} given as a static Python int, got {order!r}") from None
    if k not in orders:
        raise ValueError(f"{msg}, got {k}")
    return k


@functools.cache
def _impl(name: str, dim: int, order: int):
    """The batched, shape-checked function of ``name`` for the algebra of dimension ``dim`` at ``order``."""
    kind, inv = _FUNCS[name]
    alg = SO3 if dim == 3 else SE3
    c = (DEXP_INV_COEFFICIENTS if inv else DEXP_COEFFICIENTS)[: _KINDS[kind][1](order)]
    zeros = (0.0,) * len(c)
    p = adpoly.Poly(c, zeros, zeros)
    v, m = f"({dim})", f"({dim},{dim})"
    if kind == "matrix":
        return batched(f"{v}->{m}", ("X",), name)(lambda X: adpoly.value(alg, X, p))
    if kind == "d":
        return batched(f"{v},{v}->{m}", ("X", "U"), name)(lambda X, U: adpoly.derivative(alg, X, U, p))
    if kind == "d2":
        return batched(f"{v},{v},{v}->{m}", ("X", "U", "S"), name)(
            lambda X, U, S: adpoly.second_derivative(alg, X, U, S, p)
        )
    if kind == "jac":
        return batched(f"{v},{v}->{m}", ("X", "Z"), name)(lambda X, Z: adpoly.jacobian(alg, X, Z, p))
    return batched(f"{v},{v},{v}->{m}", ("X", "Q", "Z"), name)(lambda X, Q, Z: adpoly.hessian(alg, X, Q, Z, p))


def _call(name: str, order, X, *rest):
    k = _check_order(name, order)
    shape = tuple(np.shape(X))
    if not shape or shape[-1] not in (3, 6):
        raise ValueError(f"{name}: argument 'X' must have shape (..., 3) (so(3)) or (..., 6) (se(3)), got {shape}")
    return _impl(name, shape[-1], k)(X, *rest)


def dexp(X: Vector, order: int) -> Matrix:
    """k-th order approximation ``dexp^[k]_X = Σ_{i=0}^{k} ad_X^i/(i+1)!`` (seed 000 eq. (18) truncated; Fig. 1).

    Args:
        X: ``(..., 3)`` (so(3)) or ``(..., 6)`` (se(3), rotation first).
        order: k ∈ {0, 1, 2, 3, 4} (static int); the error is O(‖X‖^{k+1}).
    Returns:
        ``(..., n, n)``.
    """
    return _call("dexp", order, X)


def dexp_inv(X: Vector, order: int) -> Matrix:
    """k-th order approximation ``dexp^{-1[k]}_X = Σ_{i=0}^{k} (B_i/i!) ad_X^i`` (seed 000 (22) as a series; Fig. 1).

    Args:
        X: ``(..., 3)`` or ``(..., 6)``.
        order: k ∈ {0, 1, 2, 3, 4} (static int). Since B3 = 0, order 3 ≡ order 2 (both O(‖X‖⁴)); order 4 is O(‖X‖⁶).
    Returns:
        ``(..., n, n)``.
    """
    return _call("dexp_inv", order, X)


def d_dexp(X: Vector, U: Vector, order: int) -> Matrix:
    """k-th order approximation ``D^[k] = Σ_{i=1}^{k+1} DP_i(U)/(i+1)!`` of (D_X dexp)(U) (seed 000 (52), Table 2).

    ``DP_i(U) = Σ_j P_j ad_U P_{i−1−j}`` (Table 1). This is the exact derivative of ``dexp(X, k + 1)``.

    Args:
        X, U: ``(..., 3)`` or ``(..., 6)``.
        order: k ∈ {0, 1, 2, 3} (static int); the error is O(‖X‖^{k+1}).
    Returns:
        ``(..., n, n)``.
    """
    return _call("d_dexp", order, X, U)


def d_dexp_inv(X: Vector, U: Vector, order: int) -> Matrix:
    """k-th order approximation ``D^[k] = Σ_{i=1}^{k+1} (B_i/i!) DP_i(U)`` of (D_X dexp⁻¹)(U) (seed 000 (53), Table 3).

    Args:
        X, U: ``(..., 3)`` or ``(..., 6)``.
        order: k ∈ {0, 1, 2, 3} (static int). Since B3 = 0, order 2 ≡ order 1 (Table 3 has no k = 2 row); the errors
            are O(‖X‖), O(‖X‖³), O(‖X‖³), O(‖X‖⁵).
    Returns:
        ``(..., n, n)``.
    """
    return _call("d_dexp_inv", order, X, U)


def d2_dexp(X: Vector, U: Vector, S: Vector, order: int) -> Matrix:
    """k-th order approximation ``Σ_{i=2}^{k+2} D²P_i(U)(S)/(i+1)!`` of (D²_X dexp)(U)(S) (seed 000 (57), Table 4).

    Symmetric in U and S; the exact second derivative of ``dexp(X, k + 2)``.

    Args:
        X, U, S: ``(..., 3)`` or ``(..., 6)``.
        order: k ∈ {0, 1, 2} (static int); the error is O(‖X‖^{k+1}).
    Returns:
        ``(..., n, n)``.
    """
    return _call("d2_dexp", order, X, U, S)


def d2_dexp_inv(X: Vector, U: Vector, S: Vector, order: int) -> Matrix:
    """k-th order approximation ``Σ_{i=2}^{k+2} (B_i/i!) D²P_i(U)(S)`` of (D²_X dexp⁻¹)(U)(S) (seed 000 (58), Table 5).

    Args:
        X, U, S: ``(..., 3)`` or ``(..., 6)``.
        order: k ∈ {0, 1, 2} (static int). Since B3 = 0, order 1 ≡ order 0 (Table 5 has no k = 1 row); the errors are
            O(‖X‖²), O(‖X‖²), O(‖X‖⁴).
    Returns:
        ``(..., n, n)``.
    """
    return _call("d2_dexp_inv", order, X, U, S)


def dexp_jac(X: Vector, Z: Vector, order: int) -> Matrix:
    """k-th order approximation J^[k] of ∂(dexp_X Z)/∂X, rows = outputs (seed 000 (54)–(56), Table 2 right column).

    ``J^[k] = Σ_{i=1}^{k+1} 1/(i+1)! Σ_{j=0}^{i−1} P_{i,j}(X, Z)`` with ``P_{i,j} = −P_j ad_{Z_{i−j−1}}``,
    ``Z_i = ad_X^i Z``; ``J^[0] = −½ ad_Z``. Equals ``jax.jacfwd(lambda X: dexp(X, k + 1) @ Z)`` and
    ``dexp_jac(X, Z, k) @ U == d_dexp(X, U, k) @ Z``.

    Args:
        X, Z: ``(..., 3)`` or ``(..., 6)``.
        order: k ∈ {0, 1, 2, 3} (static int); the error is O(‖X‖^{k+1}).
    Returns:
        ``(..., n, n)``.
    """
    return _call("dexp_jac", order, X, Z)


def dexp_inv_jac(X: Vector, Z: Vector, order: int) -> Matrix:
    """k-th order approximation J^[k] of ∂(dexp_X⁻¹ Z)/∂X (seed 000 (54)–(56), Table 3 right column).

    ``J^[k] = Σ_{i=1}^{k+1} (B_i/i!) Σ_j P_{i,j}(X, Z)``; ``J^[0] = ½ ad_Z``.

    Args:
        X, Z: ``(..., 3)`` or ``(..., 6)``.
        order: k ∈ {0, 1, 2, 3} (static int). Since B3 = 0, order 2 ≡ order 1.
    Returns:
        ``(..., n, n)``.
    """
    return _call("dexp_inv_jac", order, X, Z)


def dexp_hess(X: Vector, Q: Vector, Z: Vector, order: int) -> Matrix:
    """k-th order approximation H^[k] of the Hessian of h(X) = Qᵀ dexp_X Z (seed 000 (60), (62), Table 6).

    ``H^[k] = Σ_{i=2}^{k+2} (H̄_i + H̄_iᵀ)/(i+1)!`` with ``H̄_2 = adbar_Q ad_Z`` etc. (Table 6, rows i = 2, 3, 4; the
    paper's (62) misprints the last line as "H^[3] = H^[2] + …", digest §8). Symmetric; equals
    ``jax.hessian(lambda X: Q @ dexp(X, k + 2) @ Z)``.

    Args:
        X, Q, Z: ``(..., 3)`` or ``(..., 6)``.
        order: k ∈ {0, 1, 2} (static int); the error is O(‖X‖^{k+1}).
    Returns:
        ``(..., n, n)``.
    """
    return _call("dexp_hess", order, X, Q, Z)


def dexp_inv_hess(X: Vector, Q: Vector, Z: Vector, order: int) -> Matrix:
    """k-th order approximation H_inv^[k] of the Hessian of h(X) = Qᵀ dexp_X⁻¹ Z (seed 000 (60), (63), Table 6).

    ``H_inv^[k] = Σ_{i=2}^{k+2} (B_i/i!)(H̄_i + H̄_iᵀ)``: ``H_inv^[0] = (H̄_2 + H̄_2ᵀ)/12``,
    ``H_inv^[2] = H_inv^[0] − (H̄_4 + H̄_4ᵀ)/720``.

    Args:
        X, Q, Z: ``(..., 3)`` or ``(..., 6)``.
        order: k ∈ {0, 1, 2} (static int). Since B3 = 0, order 1 ≡ order 0.
    Returns:
        ``(..., n, n)``.
    """
    return _call("dexp_inv_hess", order, X, Q, Z)
