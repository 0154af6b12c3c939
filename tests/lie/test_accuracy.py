"""Accuracy budgets of the dexp family against the independent 60-digit mpmath reference (:mod:`mpref`).

The error measure is the maximum over random points of the relative Frobenius error ‖ours − ref‖_F / ‖ref‖_F, at
rotation angles φ ∈ {0, 1e−12, 1e−8, 1e−5, 1e−3, 1e−2, 0.1, 0.5, 1, 2, 3} (``mpref.PHIS``), with random unit axes,
translations y ~ N(0, 1) and directions U, S, Z, Q ~ N(0, 1) (``mpref.draws``, fixed seed). Budgets (``mpref.BUDGETS``):

=====================================================================  ==========  =========
group                                                                  float64     float32
=====================================================================  ==========  =========
value: exp, log, dexp, dexp_inv                                        1e−13       2e−6
first: d_dexp, d_dexp_inv, dexp_jac, dexp_inv_jac, dexpT_jac, …        1e−12       1e−5
second: d2_dexp, d2_dexp_inv, dexp_hess, dexp_inv_hess                 1e−11       1e−4
=====================================================================  ==========  =========

float32 cases pass float32 arrays and are compared with the reference at the float32-rounded inputs, so input
rounding is not charged to the function. ``log`` gets the reference exp(X) rounded to the dtype and must return X.
The ``jacfwd_*``/``hessian_*`` cases evaluate the same Jacobians and Hessians through autodiff of the evaluation maps,
i.e. through the custom_jvp rules. The last tests pin down the genuine singularity of dexp⁻¹ at φ = 2π.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import se3, so3

try:
    from . import mpref
except ImportError:  # imported as a top-level module by benchmarks/accuracy_table.py
    import mpref

MODULES = {"so3": so3, "se3": se3}
DTYPES = {"float64": np.float64, "float32": np.float32}


def _hessian_of(apply):
    return lambda X, Q, Z: jax.hessian(lambda X_: jnp.dot(Q, apply(X_, Z)))(X)


# name -> (group, arguments, our evaluation (module -> callable), reference name in mpref)
CASES = {
    "exp": ("value", ("X",), lambda m: m.exp, "exp"),
    "log": ("value", ("H",), lambda m: m.log, None),
    "dexp": ("value", ("X",), lambda m: m.dexp, "dexp"),
    "dexp_inv": ("value", ("X",), lambda m: m.dexp_inv, "dexp_inv"),
    "d_dexp": ("first", ("X", "U"), lambda m: m.d_dexp, "d_dexp"),
    "d_dexp_inv": ("first", ("X", "U"), lambda m: m.d_dexp_inv, "d_dexp_inv"),
    "dexp_jac": ("first", ("X", "Z"), lambda m: m.dexp_jac, "dexp_jac"),
    "d_dexp_apply": ("first", ("X", "U", "Z"), lambda m: m.d_dexp_apply, "d_dexp_apply"),
    "d_dexp_inv_apply": ("first", ("X", "U", "Z"), lambda m: m.d_dexp_inv_apply, "d_dexp_inv_apply"),
    "dexp_inv_jac": ("first", ("X", "Z"), lambda m: m.dexp_inv_jac, "dexp_inv_jac"),
    "dexpT_jac": ("first", ("X", "Z"), lambda m: m.dexpT_jac, "dexpT_jac"),
    "dexp_invT_jac": ("first", ("X", "Z"), lambda m: m.dexp_invT_jac, "dexp_invT_jac"),
    "d2_dexp": ("second", ("X", "U", "S"), lambda m: m.d2_dexp, "d2_dexp"),
    "d2_dexp_inv": ("second", ("X", "U", "S"), lambda m: m.d2_dexp_inv, "d2_dexp_inv"),
    "dexp_hess": ("second", ("X", "Q", "Z"), lambda m: m.dexp_hess, "dexp_hess"),
    "dexp_inv_hess": ("second", ("X", "Q", "Z"), lambda m: m.dexp_inv_hess, "dexp_inv_hess"),
    # the same Jacobians and Hessians through autodiff of the evaluation maps (custom_jvp rules)
    "jacfwd(dexp_apply)": ("first", ("X", "Z"), lambda m: jax.jacfwd(m.dexp_apply), "dexp_jac"),
    "jacfwd(dexp_inv_apply)": ("first", ("X", "Z"), lambda m: jax.jacfwd(m.dexp_inv_apply), "dexp_inv_jac"),
    "jacfwd(dexpT_apply)": ("first", ("X", "Z"), lambda m: jax.jacfwd(m.dexpT_apply), "dexpT_jac"),
    "jacrev(dexp_apply)": ("first", ("X", "Z"), lambda m: jax.jacrev(m.dexp_apply), "dexp_jac"),
    "hessian(Q@dexp_apply)": ("second", ("X", "Q", "Z"), lambda m: _hessian_of(m.dexp_apply), "dexp_hess"),
    "hessian(Q@dexp_inv_apply)": ("second", ("X", "Q", "Z"), lambda m: _hessian_of(m.dexp_inv_apply), "dexp_inv_hess"),
}

SE3_CASES = tuple(CASES)
SO3_CASES = (
    "exp",
    "log",
    "dexp",
    "dexp_inv",
    "d_dexp",
    "d_dexp_inv",
    "d2_dexp",
    "d2_dexp_inv",
    "dexp_jac",
    "dexp_inv_jac",
    "d_dexp_apply",
    "dexp_hess",
    "dexp_inv_hess",
    "jacfwd(dexp_apply)",
    "hessian(Q@dexp_apply)",
)
ALL_CASES = tuple(("se3", c) for c in SE3_CASES) + tuple(("so3", c) for c in SO3_CASES)


@functools.cache
def evaluate(alg: str, case: str, dtype: str) -> np.ndarray:
    """Our values of ``case`` at every draw of every φ, from one batched (``jax.vmap``) call.

    Returns an array of shape ``(len(PHIS), N_DRAWS, ...)``."""
    _, args, ours, _ = CASES[case]
    dt = DTYPES[dtype]
    points = [mpref.restrict(alg, d) for k in range(len(mpref.PHIS)) for d in mpref.draws(k, dt)]
    if case == "log":  # the exact exp(X), rounded to the dtype
        inputs = [np.stack([mpref.exp(alg, p["X"]).astype(dt) for p in points])]
    else:
        inputs = [np.stack([p[a] for p in points]) for a in args]
    val = jax.vmap(ours(MODULES[alg]))(*(jnp.asarray(v) for v in inputs))
    assert val.dtype == np.dtype(dt), f"{alg}.{case} returned {val.dtype} for {dtype} input"
    return np.asarray(val).reshape(len(mpref.PHIS), mpref.N_DRAWS, *val.shape[1:])


def errors(alg: str, case: str, dtype: str, phi_index: int) -> list[float]:
    """Relative Frobenius errors of ``case`` on ``alg`` at the draws of PHIS[phi_index] in ``dtype``."""
    _, args, _, ref_name = CASES[case]
    vals = evaluate(alg, case, dtype)[phi_index]
    out = []
    for val, d in zip(vals, mpref.draws(phi_index, DTYPES[dtype])):
        d = mpref.restrict(alg, d)
        ref = d["X"] if case == "log" else getattr(mpref, ref_name)(alg, *(d[a] for a in args))
        out.append(mpref.rel_error(val, ref))
    return out


def references() -> set[tuple[str, str, tuple]]:
    """Every (function, algebra, arguments) of mpref that the accuracy budgets use, arguments as mpref keys them."""
    out = set()
    for alg, case in ALL_CASES:
        _, args, _, ref_name = CASES[case]
        name, args = ("exp", ("X",)) if case == "log" else (ref_name, args)
        for dtype in DTYPES.values():
            for k in range(len(mpref.PHIS)):
                for d in mpref.draws(k, dtype):
                    d = mpref.restrict(alg, d)
                    out.add((name, alg, tuple(mpref.arguments(d[a]) for a in args)))
    return out


@functools.cache
def _references_by_key() -> dict[str, tuple[str, str, tuple]]:
    return {mpref.store_key(*r): r for r in references()}


def test_the_store_holds_every_reference_of_the_budgets():
    missing = set(_references_by_key()) - set(mpref.stored())
    assert not missing, f"{len(missing)} references not stored: write them with python -m tests.lie.test_accuracy"


@pytest.mark.parametrize("draw", range(4))
def test_stored_references_equal_the_series_summed_again(draw):
    """Stored results at a few keys drawn at random (among them the Hessians of dexp⁻¹, the longest series) equal
    the series summed again, to the last bit."""
    keys = sorted(_references_by_key())
    hess = [k for k in keys if _references_by_key()[k][0] == "dexp_inv_hess"]
    key = np.random.default_rng(draw).choice(hess if draw == 0 else keys)
    np.testing.assert_array_equal(mpref.stored()[key], mpref.compute(*_references_by_key()[key]))


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("phi_index", range(len(mpref.PHIS)), ids=[f"phi={p:g}" for p in mpref.PHIS])
@pytest.mark.parametrize("alg,case", ALL_CASES, ids=[f"{a}.{c}" for a, c in ALL_CASES])
def test_accuracy_budget(alg, case, phi_index, dtype):
    budget = mpref.BUDGETS[CASES[case][0]][dtype]
    err = max(errors(alg, case, dtype, phi_index))
    assert err <= budget, (
        f"{alg}.{case} at φ={mpref.PHIS[phi_index]:g} ({dtype}): relative error {err:.3g} > budget {budget:g}"
    )


# ---------------------------------------------------------------------------------------------------------------------
# The genuine singularity of dexp⁻¹ at φ = 2π (eigenvalues iφ/(e^{iφ} − 1) of dexp⁻¹; det dexp_X = β² on SE(3)).


def _point_near_2pi(eps: float) -> np.ndarray:
    rng = np.random.default_rng(7)
    n = rng.normal(size=3)
    n /= np.linalg.norm(n)
    return np.concatenate([(2 * np.pi - eps) * n, rng.normal(size=3)])


@pytest.mark.parametrize("eps", [1e-3, 1e-6])
def test_dexp_inv_blows_up_towards_2pi(eps):
    X = _point_near_2pi(eps)
    Finv = np.asarray(se3.dexp_inv(X))
    assert np.all(np.isfinite(Finv))
    norm = np.linalg.norm(Finv)
    assert norm > 1e4
    # the translation block carries the derivative of the rotation block: ‖dexp⁻¹‖ grows like 1/(2π − φ)²
    scaled = norm * eps**2
    assert 1e-2 < scaled < 1e2, scaled


def test_dexp_inv_growth_rate_is_quadratic():
    n1, n2 = (np.linalg.norm(np.asarray(se3.dexp_inv(_point_near_2pi(e)))) for e in (1e-3, 1e-5))
    assert 0.5e4 < n2 / n1 < 2e4  # (1e−3 / 1e−5)² = 1e4


def test_dexp_inv_still_inverts_dexp_near_2pi():
    X = _point_near_2pi(1e-3)
    F, Finv = np.asarray(se3.dexp(X)), np.asarray(se3.dexp_inv(X))
    resid = np.linalg.norm(Finv @ F - np.eye(6)) / np.linalg.norm(np.eye(6))
    assert resid < 1e-6, resid
    # and against the 60-digit reference: the error is the conditioning of the map, not the implementation
    err = mpref.rel_error(Finv, mpref.dexp_inv("se3", X))
    assert err < 1e-9, err


def test_dexp_inv_at_2pi_is_not_silently_wrong():
    """At φ = 2π exactly dexp_X is singular (det = β² = 0). In float64, sin(φ/2) evaluates to ~1e−16 rather than 0, so
    the result is finite but astronomically large (~1e33); it is never a finite, moderate-sized (wrong) matrix."""
    X = _point_near_2pi(0.0)
    Finv = np.asarray(se3.dexp_inv(X))
    finite = bool(np.all(np.isfinite(Finv)))
    assert not (finite and np.linalg.norm(Finv) < 1e12), np.linalg.norm(Finv)


def test_dexp_determinant_is_beta_squared_near_2pi():
    for eps in (1.0, 1e-3):
        X = _point_near_2pi(eps)
        phi = np.linalg.norm(X[:3])
        beta = (np.sin(phi / 2) / (phi / 2)) ** 2
        assert np.isclose(np.linalg.det(np.asarray(se3.dexp(X))), beta**2, rtol=1e-6)


if __name__ == "__main__":  # write the store of mpref results (tests/lie/mpref.py)
    values = {mpref.store_key(*r): mpref.compute(*r) for r in sorted(references())}
    np.savez_compressed(mpref.STORE, **values)
    print(f"{len(values)} references written to {mpref.STORE}")
