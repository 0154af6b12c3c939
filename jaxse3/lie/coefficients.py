"""Scalar coefficient functions of the closed-form SO(3)/SE(3) maps, accurate over the whole range.

Every closed form in seed 000 (Müller 2026) is a polynomial of degree ≤ 4 in ``ad_X`` whose scalar coefficients
depend on the rotation angle φ = ‖x‖ only, and every one of them is an analytic function of ``t = φ²``:

* the base functions of seed 000 eq. (10): α = sinc φ, β = sinc²(φ/2), γ = α/β, δ = (1 − α)/φ²;
* the ad-polynomial coefficients of dexp and dexp⁻¹, eq. (23): a1…a4, b1 = −1/2, b2, b4 (b3 = 0);
* their first "bar" derivatives, eqs. (31)–(32): ā_i = 2 da_i/dt, b̄_i = 2 db_i/dt;
* their second "breve" derivatives, eqs. (44)–(45): ă_i = 2 dā_i/dt, b̆_i = 2 db̄_i/dt.

The literal closed forms divide by up to φ⁸ and cancel catastrophically near φ = 0 (seed 000 digest §5.2: O(1)
relative error in float64 second derivatives at φ = 1e−5, already at φ = 0.5 in float32). We therefore switch at the
scalar level, never at the matrix level: below a per-dtype threshold ``t < T0[dtype]`` each coefficient is evaluated as
its Taylor polynomial in ``t`` (exact rational coefficients generated at import time by power-series arithmetic, digest
000 Appendix B), above it by the closed form. The threshold is large (φ₀ = 3.2 in float64, 4.2 in float32) because the
closed forms only become accurate there; the a-family series are entire and the b-family series converge for φ < 2π
(the genuine singularity of dexp⁻¹), so the polynomials stay well conditioned on the whole switched range.

Both branches are computed on "safe" arguments (the double-``where`` trick), so values and all derivatives are finite
at φ = 0 exactly, under ``jit``, ``vmap`` and nested autodiff.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike

__all__ = ["evaluate", "series", "threshold", "FAMILIES"]

# --------------------------------------------------------------------------------------------------------------------
# Exact power series in t = φ² (lists of Fractions, lowest order first).

_N_SERIES = 48  # terms generated; the evaluator truncates per dtype (see _n_terms)


def _s_alpha(n: int) -> list[Fraction]:
    return [Fraction((-1) ** k, math.factorial(2 * k + 1)) for k in range(n)]


def _s_beta(n: int) -> list[Fraction]:
    return [Fraction(2 * (-1) ** k, math.factorial(2 * k + 2)) for k in range(n)]


def _s_delta(n: int) -> list[Fraction]:
    return [Fraction((-1) ** k, math.factorial(2 * k + 3)) for k in range(n)]


def _add(*terms: tuple[Fraction | int, list[Fraction]]) -> list[Fraction]:
    n = min(len(s) for _, s in terms)
    return [sum((Fraction(c) * s[k] for c, s in terms), Fraction(0)) for k in range(n)]


def _const(c: Fraction | int, n: int) -> list[Fraction]:
    return [Fraction(c)] + [Fraction(0)] * (n - 1)


def _mul(a: list[Fraction], b: list[Fraction]) -> list[Fraction]:
    n = min(len(a), len(b))
    return [sum((a[i] * b[k - i] for i in range(k + 1)), Fraction(0)) for k in range(n)]


def _inv(a: list[Fraction]) -> list[Fraction]:
    out = [1 / a[0]]
    for k in range(1, len(a)):
        out.append(-sum((a[i] * out[k - i] for i in range(1, k + 1)), Fraction(0)) / a[0])
    return out


def _shift(a: list[Fraction], m: int = 1) -> list[Fraction]:
    """Divide by t^m (the series must vanish to that order); the result is m terms shorter."""
    assert all(c == 0 for c in a[:m]), "series does not vanish to the order divided by"
    return a[m:]


def _bar(a: list[Fraction]) -> list[Fraction]:
    """2 d/dt, the map a ↦ ā (seed 000 digest §2.10: ā = 2 da/dt, ă = 2 dā/dt)."""
    return [2 * k * a[k] for k in range(1, len(a))]


def _build_series(n: int) -> dict[str, list[Fraction]]:
    al, be, de = _s_alpha(n), _s_beta(n), _s_delta(n)
    half = Fraction(1, 2)
    ga = _mul(al, _inv(be))
    inv_be = _inv(be)
    s: dict[str, list[Fraction]] = {"alpha": al, "beta": be, "gamma": ga, "delta": de}
    # seed 000 eq. (23)
    s["a1"] = _add((1, be), (-half, al))
    s["a2"] = _add((Fraction(5, 2), de), (Fraction(-1, 4), be))
    s["a3"] = _shift(_add((half, be), (-half, al)))
    s["a4"] = _shift(_add((Fraction(3, 2), de), (Fraction(-1, 4), be)))
    s["b1"] = _const(-half, n)
    s["b2"] = _shift(_add((2, _const(1, n)), (-half, _mul(_add((1, _const(1, n)), (3, al)), inv_be))))
    s["b4"] = _shift(_add((1, _const(1, n)), (-half, _mul(_add((1, _const(1, n)), (1, al)), inv_be))), 2)
    # SO(3)-specific: dexp⁻¹_x = I − x̃/2 + ((1 − γ)/φ²) x̃²  (seed 001 eq. (2.16));
    s["so3_b2"] = _shift(_add((1, _const(1, n)), (-1, ga)))
    for base in ("a1", "a2", "a3", "a4", "b1", "b2", "b4"):
        s[base + "_bar"] = _bar(s[base])
        s[base + "_brev"] = _bar(s[base + "_bar"])
    n_min = min(len(v) for v in s.values())
    return {k: v[:n_min] for k, v in s.items()}


series: dict[str, list[Fraction]] = _build_series(_N_SERIES + 4)

# --------------------------------------------------------------------------------------------------------------------
# Closed forms (used for t ≥ T0). ``b`` holds the base functions evaluated at a safe t ≥ T0.

_Closed = Callable[[dict], jnp.ndarray]


def _base(t: jnp.ndarray) -> dict:
    phi = jnp.sqrt(t)
    h = 0.5 * phi
    alpha = jnp.sin(phi) / phi
    beta = (jnp.sin(h) / h) ** 2
    return {"t": t, "alpha": alpha, "beta": beta, "gamma": alpha / beta, "delta": (1.0 - alpha) / t}


_CLOSED: dict[str, _Closed] = {
    "alpha": lambda b: b["alpha"],
    "beta": lambda b: b["beta"],
    "gamma": lambda b: b["gamma"],
    "delta": lambda b: b["delta"],
    "so3_b2": lambda b: (1.0 - b["gamma"]) / b["t"],
    # seed 000 eq. (23)
    "a1": lambda b: b["beta"] - 0.5 * b["alpha"],
    "a2": lambda b: 0.5 * (5.0 * b["delta"] - 0.5 * b["beta"]),
    "a3": lambda b: (b["beta"] - b["alpha"]) / (2.0 * b["t"]),
    "a4": lambda b: (3.0 * b["delta"] - 0.5 * b["beta"]) / (2.0 * b["t"]),
    "b1": lambda b: jnp.full_like(b["t"], -0.5),
    "b2": lambda b: (2.0 - (1.0 + 3.0 * b["alpha"]) / (2.0 * b["beta"])) / b["t"],
    "b4": lambda b: (1.0 - (1.0 + b["alpha"]) / (2.0 * b["beta"])) / b["t"] ** 2,
    # seed 000 eqs. (31), (32) (ā2 with the digest's corrected reading)
    "a1_bar": lambda b: 0.25 * b["beta"] + (2.5 * b["alpha"] - 2.0 * b["beta"] - 0.5) / b["t"],
    "a2_bar": lambda b: (1.75 * b["beta"] - 0.5 * b["alpha"]) / b["t"] + 7.5 * (b["alpha"] - 1.0) / b["t"] ** 2,
    "a3_bar": lambda b: _CLOSED["a1_bar"](b) / b["t"],
    "a4_bar": lambda b: _CLOSED["a2_bar"](b) / b["t"],
    "b1_bar": lambda b: jnp.zeros_like(b["t"]),
    "b2_bar": lambda b: (
        (0.75 - 1.5 * b["delta"] / b["beta"]) / b["t"]
        + ((b["alpha"] + 3.0 * b["alpha"] ** 2) / b["beta"] ** 2 - 4.0) / b["t"] ** 2
    ),
    "b4_bar": lambda b: (
        (0.25 - 0.5 * b["delta"] / b["beta"]) / b["t"] ** 2
        + ((1.0 + b["alpha"]) * (b["alpha"] / b["beta"] ** 2 + 1.0 / b["beta"]) - 4.0) / b["t"] ** 3
    ),
    # seed 000 eqs. (44), (45)
    "a1_brev": lambda b: (
        (0.5 * b["alpha"] - 1.75 * b["beta"]) / b["t"] + (3.5 - 11.5 * b["alpha"] + 8.0 * b["beta"]) / b["t"] ** 2
    ),
    "a2_brev": lambda b: (
        0.25 * b["beta"] / b["t"]
        + (5.0 * b["alpha"] - 10.75 * b["beta"] - 0.5) / b["t"] ** 2
        + 37.5 * (1.0 - b["alpha"]) / b["t"] ** 3
    ),
    "a3_brev": lambda b: (
        (0.5 * b["alpha"] - 2.25 * b["beta"]) / b["t"] ** 2 + (4.5 - 16.5 * b["alpha"] + 12.0 * b["beta"]) / b["t"] ** 3
    ),
    "a4_brev": lambda b: (
        0.25 * b["beta"] / b["t"] ** 2
        + (6.0 * b["alpha"] - 0.5 - 14.25 * b["beta"]) / b["t"] ** 3
        + 52.5 * (1.0 - b["alpha"]) / b["t"] ** 4
    ),
    "b1_brev": lambda b: jnp.zeros_like(b["t"]),
    "b2_brev": lambda b: (
        (
            16.0
            + 1.0 / b["beta"] ** 2
            + (8.0 / b["beta"] - 4.5) * b["gamma"]
            - (9.0 + 4.0 / b["beta"]) * b["gamma"] ** 2
            - 12.0 * b["gamma"] ** 3
            + 4.5 / b["beta"]
        )
        / b["t"] ** 3
        - (2.25 + 3.0 * b["gamma"] + 0.5 / b["beta"]) / b["t"] ** 2
    ),
    "b4_brev": lambda b: (
        (
            24.0
            - 2.0 / b["beta"]
            - (7.5 + 4.0 / b["beta"]) * b["gamma"]
            - (5.5 + 3.0 / b["beta"]) * b["gamma"] ** 2
            - 2.0 * b["gamma"] ** 3
        )
        / b["t"] ** 4
        - (1.375 + 0.25 / b["beta"] + 0.5 * b["gamma"]) / b["t"] ** 3
    ),
}

# The polynomial families: c_0 … c_4 of F(X) = Σ c_i ad_X^i (c_0 = 1), with their bar and breve derivatives.
FAMILIES: dict[str, tuple[str, ...]] = {
    "dexp": ("a1", "a2", "a3", "a4"),
    "dexp_inv": ("b1", "b2", None, "b4"),  # type: ignore[dict-item]
}

# --------------------------------------------------------------------------------------------------------------------
# Switching thresholds (in φ) per dtype. Above them every closed form has ≲ 1e−13 (float64) / ≲ 1e−5 (float32)
# relative error (measured against mpmath in tests/lie/test_coefficients.py); below them the Taylor polynomials are
# used. The series of the b-family (and of γ, 1/sinc) converge only for φ < 2π, so the thresholds stay well inside.
_PHI0 = {np.dtype(np.float64): 3.2, np.dtype(np.float32): 4.2, np.dtype(np.float16): 4.2}


def threshold(dtype: DTypeLike) -> float:
    """The switching angle φ₀ for a floating dtype: Taylor in φ² below, closed form at and above."""
    return _PHI0.get(np.dtype(dtype), 3.2)


def _n_terms(name: str, dtype) -> int:
    """Smallest number of Taylor terms whose truncation error at t = φ₀² is 1% of the dtype's epsilon (relative)."""
    eps = float(np.finfo(dtype).eps)
    t0 = threshold(dtype) ** 2
    terms = [abs(float(c)) * t0**k for k, c in enumerate(series[name])]
    value = abs(float(sum(c * Fraction(t0) ** k for k, c in enumerate(series[name]))))
    for n in range(2, len(terms)):
        if sum(terms[n:]) <= 1e-2 * eps * value:
            return n
    raise ValueError(f"series for {name!r} too short for dtype {np.dtype(dtype).name}")


_TABLES: dict[tuple[tuple[str, ...], str], np.ndarray] = {}


def _table(names: tuple[str, ...], dtype) -> np.ndarray:
    key = (names, np.dtype(dtype).name)
    if key not in _TABLES:
        n = max(_n_terms(nm, dtype) for nm in names)
        tab = np.array([[float(c) for c in series[nm][:n]] for nm in names], dtype=np.float64)
        _TABLES[key] = tab.T.astype(dtype)  # (n_terms, K), lowest order first
    return _TABLES[key]


def evaluate(names: Sequence[str], t: jnp.ndarray) -> jnp.ndarray:
    """Evaluate the named coefficient functions at ``t = φ²``.

    Args:
        names: coefficient names (keys of :data:`series`, e.g. ``"alpha"``, ``"a3_bar"``, ``"b4_brev"``).
        t: squared rotation angle, any shape, floating dtype.

    Returns:
        Array of shape ``t.shape + (len(names),)``: Taylor polynomial in ``t`` below :func:`threshold`², closed form
        at and above. Both branches see only safe arguments, so values and derivatives are finite at ``t = 0``.
    """
    names = tuple(names)
    dtype = t.dtype
    t0 = threshold(dtype) ** 2
    small = t < t0
    t_small = jnp.where(small, t, jnp.zeros_like(t))
    t_big = jnp.where(small, jnp.full_like(t, 2.0 * t0), t)
    tab = _table(names, dtype)  # rows as constants of the program: Horner's rule is then two operations per term
    ts = jnp.broadcast_to(t_small[..., None], t.shape + (len(names),))
    poly = tab[-1] * ts + tab[-2]
    for k in range(tab.shape[0] - 3, -1, -1):
        poly = poly * ts + tab[k]
    b = _base(t_big)
    closed = jnp.stack([_CLOSED[nm](b) for nm in names], axis=-1)
    return _computed_once(jnp.where(small[..., None], poly, closed))


def _computed_once(x: jnp.ndarray) -> jnp.ndarray:
    """``x`` (exactly, for normal numbers: ½x + ½x), as the result of a reduction. XLA:CPU fuses elementwise work into
    each of its consumers and re-evaluates it per consumer element, but never fuses a reduction into its consumers:
    the coefficients of a rod's 6 × 6 maps were evaluated (Horner's rule, 16 terms) once per matrix entry, 36 times
    over, inside the fusion that formed the matrices (the spatial peers' rod: forward dynamics in a compiled loop
    20 → 12 µs, `vmap` 1000 18–20 → 14 µs per state; the CDM's 23–26 → 17 µs, 2026-12-05). Optimisation barriers do not
    help: XLA:CPU removes them before fusion."""
    return jnp.sum(jnp.stack([x, x], axis=-1) * 0.5, axis=-1)
