"""Lie-group generalised-α on the heavy top (seed 001 digest §7.3, §8.2b, §8.3, §9 item 8).

Oracles: scipy DOP853 at rtol = atol = 1e-13 on the plain matrix ODE (written here), the digest's reference Ω(1) and
error tables, exact invariants (Ω₂ ≡ 150), the same top as an index-3 constrained body (SO(3)×R³ and SE(3) with a
spherical joint), ``jax.jacfwd`` of the whole step residual for the iteration matrix, and central finite differences for
gradients.
"""

from __future__ import annotations

import functools

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from jaxse3.integrate.generalized_alpha import GeneralizedAlpha, GeneralizedAlphaState, LieGroupMechanicalTerm
from jaxse3.integrate.newton import newton_statistics

M_TOP = 15.0
J_COM = np.diag([0.234375, 0.46875, 0.234375])
X_COM = np.array([0.0, 1.0, 0.0])
G_VEC = np.array([0.0, 0.0, -9.81])
OMEGA0 = np.array([0.0, 150.0, -4.61538])
STEPS = (1e-3, 5e-4, 2.5e-4, 1.25e-4, 6.25e-5)


def skew(x):
    return jnp.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def pivot_inertia(m):
    Xt = skew(jnp.asarray(X_COM))
    return jnp.asarray(J_COM) - m * Xt @ Xt


def _pivot_force(t, R, W, m):
    J0 = pivot_inertia(m)
    return jnp.cross(W, J0 @ W) - m * jnp.cross(jnp.asarray(X_COM), R.T @ jnp.asarray(G_VEC))


def _block_mass(m):
    return jax.scipy.linalg.block_diag(jnp.asarray(J_COM), m * jnp.eye(3))


TERMS = {
    # fixed pivot on SO(3): J0 Ω̇ + Ω×J0Ω = m X×(Rᵀg)
    "pivot": LieGroupMechanicalTerm(lambda q, m: pivot_inertia(m), _pivot_force, ("SO3",)),
    # free body on SO(3)×R³ (CoM position x, velocity ẋ), spherical joint at the pivot: Φ = x − R X
    "so3r3": LieGroupMechanicalTerm(
        lambda q, m: _block_mass(m),
        lambda t, q, v, m: jnp.concatenate([jnp.cross(v[:3], jnp.asarray(J_COM) @ v[:3]), -m * jnp.asarray(G_VEC)]),
        ("SO3", "R"),
        constraint=lambda q, m: q[1] - q[0] @ jnp.asarray(X_COM),
    ),
    # free body on SE(3) (CoM frame, body twist (ω, u)), same joint: Φ = r − R X
    "se3": LieGroupMechanicalTerm(
        lambda q, m: _block_mass(m),
        lambda t, q, v, m: jnp.concatenate(
            [
                jnp.cross(v[:3], jnp.asarray(J_COM) @ v[:3]),
                m * jnp.cross(v[:3], v[3:]) - m * q[:3, :3].T @ jnp.asarray(G_VEC),
            ]
        ),
        ("SE3",),
        constraint=lambda q, m: q[:3, 3] - q[:3, :3] @ jnp.asarray(X_COM),
    ),
}


def initial_state(model, omega0):
    X = jnp.asarray(X_COM)
    if model == "pivot":
        return jnp.eye(3), omega0
    u = jnp.cross(omega0, X)  # pivot at rest: CoM velocity Ω × X (R0 = I)
    if model == "so3r3":
        return (jnp.eye(3), X), jnp.concatenate([omega0, u])
    H = jnp.eye(4).at[:3, 3].set(X)
    return H, jnp.concatenate([omega0, u])


def rotation_of(model, q):
    return {"pivot": lambda q: q, "so3r3": lambda q: q[0], "se3": lambda q: q[..., :3, :3]}[model](q)


def invariants(R, W, m):
    """Energy ½ΩᵀJ0Ω − m gᵀRX and vertical angular momentum e3ᵀ R J0 Ω (digest §8.3), batched over time."""
    J0 = pivot_inertia(m)
    potential = m * jnp.einsum("i,...ij,j->...", jnp.asarray(G_VEC), R, jnp.asarray(X_COM))
    energy = 0.5 * jnp.einsum("...i,ij,...j->...", W, J0, W) - potential
    mom = jnp.einsum("...j,jk,...k->...", R[..., 2, :], J0, W)
    return energy, mom


@functools.cache
def runner(model: str, coordinate_map: str, tangent_operator: bool = True, max_iters: int = 20):
    """Jitted solve: (h, t1, ρ∞, tol, Ω0, m) -> (ys at 11 equispaced times, Newton stats, success)."""
    term = TERMS[model]

    def run(h, t1, rho, tol, omega0, m):
        solver = GeneralizedAlpha(rho, coordinate_map, tangent_operator, tol, max_iters)
        saveat = diffrax.SaveAt(ts=t1 * jnp.linspace(0.0, 1.0, 11), solver_state=True)
        sol = diffrax.diffeqsolve(
            term, solver, 0.0, t1, h, initial_state(model, omega0), args=m, saveat=saveat, max_steps=20000, throw=False
        )
        return sol.ys, newton_statistics(sol), sol.result == diffrax.RESULTS.successful

    return jax.jit(run)


def solve(model, cm, h, t1=1.0, rho=0.9, tol=1e-12, omega0=OMEGA0, m=M_TOP, **kw):
    ys, stats, ok = runner(model, cm, **kw)(h, t1, rho, tol, jnp.asarray(omega0), m)
    return ys, stats, bool(ok)


@functools.cache
def reference(t1: float = 1.0, m: float = M_TOP):
    """DOP853 on the plain matrix ODE Ṙ = RΩ̃, J0Ω̇ = −Ω×J0Ω + mX×(Rᵀg), rtol = atol = 1e-13."""
    J0 = np.asarray(pivot_inertia(m))

    def rhs(t, y):
        R, W = y[:9].reshape(3, 3), y[9:]
        Wt = np.array([[0, -W[2], W[1]], [W[2], 0, -W[0]], [-W[1], W[0], 0]])
        dW = np.linalg.solve(J0, -np.cross(W, J0 @ W) + m * np.cross(X_COM, R.T @ G_VEC))
        return np.concatenate([(R @ Wt).ravel(), dW])

    ts = np.linspace(0.0, t1, 11)
    sol = solve_ivp(
        rhs, (0.0, t1), np.concatenate([np.eye(3).ravel(), OMEGA0]), method="DOP853", rtol=1e-13, atol=1e-13, t_eval=ts
    )
    return sol.y[:9].T.reshape(-1, 3, 3), sol.y[9:].T


def errors(model, ys, t1=1.0):
    """(‖R − Rref‖₂, |Ω − Ωref|/|Ωref|) at t1 (digest §8.2b metrics)."""
    Rref, Wref = reference(t1)
    R = np.asarray(rotation_of(model, ys[0]))[-1]
    W = np.asarray(ys[1])[-1, :3]
    return np.linalg.norm(R - Rref[-1], 2), np.linalg.norm(W - Wref[-1]) / np.linalg.norm(Wref[-1])


# ---------------------------------------------------------------------------------------------------------------------


def test_reference_matches_digest():
    _, W = reference()
    np.testing.assert_allclose(W[-1], [-0.8220781, 150.0, -5.92329135], atol=2e-7)


GOLDEN = {  # digest §8.2b, ρ∞ = 0.9, T = 1: ‖R − Rref‖₂ per h, and |Ω−Ωref|/|Ωref| at the first and last h
    "exp": ([1.34e-01, 3.37e-02, 8.43e-03, 2.11e-03, 5.27e-04], 8.38e-03, 3.27e-05),
    "cayley": ([2.83e-01, 7.11e-02, 1.78e-02, 4.45e-03, 1.11e-03], 1.02e-02, 4.02e-05),
}


@pytest.mark.parametrize("cm", ["exp", "cayley"])
def test_golden_errors_and_order(cm):
    """Digest error tables within 5% and order 2.00; Ω₂ ≡ 150 exactly (an invariant of the scheme here too)."""
    errs = []
    for h in STEPS:
        ys, _, ok = solve("pivot", cm, h)
        assert ok
        errs.append(errors("pivot", ys))
        np.testing.assert_allclose(np.asarray(ys[1])[:, 1], 150.0, rtol=0, atol=1e-9)
    eR, eW = np.array(errs).T
    golden_R, golden_W0, golden_W4 = GOLDEN[cm]
    np.testing.assert_allclose(eR, golden_R, rtol=0.05)
    np.testing.assert_allclose([eW[0], eW[-1]], [golden_W0, golden_W4], rtol=0.05)
    np.testing.assert_allclose(np.log2(eR[:-1] / eR[1:]), 2.0, atol=0.05)
    np.testing.assert_allclose(np.log2(eW[:-1] / eW[1:]), 2.0, atol=0.05)


@pytest.mark.parametrize("cm", ["exp", "cayley"])
def test_order_two_for_every_rho(cm):
    for rho in (0.0, 0.5, 0.9, 1.0):
        e = np.array([errors("pivot", solve("pivot", cm, h, rho=rho)[0]) for h in STEPS[1:4]])
        orders = np.log2(e[:-1] / e[1:])
        assert np.all(np.abs(orders - 2.0) < 0.15), (rho, orders)


def test_invariants_drift_is_bounded_and_second_order():
    """Energy and vertical angular momentum over [0, 1]: the drift shrinks by ≈ 4 per halving of h; Cayley with
    ρ∞ = 1 (α_m = α_f = ½, the undamped member) conserves both to round-off (measured, 1e-14)."""
    L_scale = float(jnp.linalg.norm(pivot_inertia(M_TOP) @ jnp.asarray(OMEGA0)))

    def drifts(cm, rho, h):
        ys, _, ok = solve("pivot", cm, h, rho=rho)
        assert ok
        E, L = invariants(ys[0], ys[1], M_TOP)
        return [float(jnp.max(jnp.abs(E - E[0])) / abs(E[0])), float(jnp.max(jnp.abs(L - L[0]))) / L_scale]

    for cm, rho in (("exp", 1.0), ("exp", 0.9), ("cayley", 0.9)):
        d = np.array([drifts(cm, rho, h) for h in STEPS[:3]])
        assert d[0, 0] < 1e-4 and d[0, 1] < 0.05, d  # measured at h = 1e-3, exp, ρ∞ = 1: 5.0e-5 and 2.7e-2
        ratios = d[:-1] / d[1:]
        assert np.all((ratios > 3.0) & (ratios < 6.0)), (cm, rho, ratios)
    d = np.array([drifts("cayley", 1.0, h) for h in STEPS[:2]])
    assert np.all(d < 1e-12), d


@pytest.mark.parametrize("model", ["so3r3", "se3"])
def test_constrained_top_matches_fixed_pivot(model):
    """Index-3 spherical joint: Φ at the Newton tolerance, and the same motion as the fixed-pivot top (order 2)."""
    errs = []
    for h in STEPS[:2]:
        ys, _stats, ok = solve(model, "exp", h, t1=0.5)
        assert ok
        q = ys[0]
        phi = np.asarray(jax.vmap(lambda qi: TERMS[model].constraint(qi, M_TOP))(q))
        assert np.max(np.abs(phi)) < 1e-12
        ys_p, _, _ = solve("pivot", "exp", h, t1=0.5)
        Rref, Wref = reference(0.5)
        R = np.asarray(rotation_of(model, q))
        errs.append(
            [
                np.linalg.norm(R[-1] - Rref[-1], 2),
                np.linalg.norm(np.asarray(ys[1])[-1, :3] - Wref[-1]),
                np.linalg.norm(np.asarray(ys_p[1])[-1] - Wref[-1]),
            ]
        )
    errs = np.array(errs)
    assert np.all(errs[:, 1] < 3.0 * errs[:, 2]), errs  # same accuracy class as the fixed-pivot formulation
    np.testing.assert_allclose(np.log2(errs[0] / errs[1]), 2.0, atol=0.2)


def _random_state(model, seed):
    rng = np.random.default_rng(seed)
    q0, v0 = initial_state(model, jnp.asarray(OMEGA0 + rng.normal(size=3)))
    n = v0.shape[0]
    term = TERMS[model]
    vdot, lam = term.accelerations(0.0, q0, v0, M_TOP)
    state = GeneralizedAlphaState(
        vdot, vdot + jnp.asarray(rng.normal(size=n)), lam, jnp.asarray(0, jnp.int32), jnp.asarray(0, jnp.int32)
    )
    return (q0, v0), state, rng


@functools.cache
def _matrix_check(model, cm):
    """Jitted (S with T, S with T = I, jacfwd of the scaled residual) at a perturbed Newton guess."""

    def check(y0, state, dx):
        solver = GeneralizedAlpha(0.7, cm)
        h = 2e-3  # θ ≈ hΩ ≈ 0.3 rad: T(θ) far from I
        fun, x0, _ = solver.step_residual(TERMS[model], h, h, y0, state, M_TOP)
        fun_I, _, _ = solver.step_residual(TERMS[model], h, h, y0, state, M_TOP, tangent_operator=False)
        x = x0 + dx
        return fun(x)[1], fun_I(x)[1], jax.jacfwd(lambda z: fun(z)[0])(x)

    return jax.jit(check)


@pytest.mark.parametrize("model, cm", [("pivot", "cayley"), ("so3r3", "cayley"), ("se3", "exp")])
def test_iteration_matrix_is_the_exact_jacobian(model, cm):
    """S (with T(θ) and the jacfwd tangent stiffness) equals jax.jacfwd of the whole scaled step residual at a
    non-converged iterate; replacing T by I does not."""
    y0, state, rng = _random_state(model, 1)
    dx = 1e-3 * jnp.asarray(rng.normal(size=state.acceleration.shape[0] + state.multiplier.shape[0]))
    S, S_I, S_ad = _matrix_check(model, cm)(y0, state, dx)
    scale = float(jnp.max(jnp.abs(S_ad)))
    np.testing.assert_allclose(S, S_ad, rtol=1e-10, atol=1e-10 * scale)
    err_exact, err_identity = float(jnp.max(jnp.abs(S - S_ad))), float(jnp.max(jnp.abs(S_I - S_ad)))
    assert err_identity > 1e3 * err_exact and err_identity > 1e-9 * scale, (err_exact, err_identity)


def test_newton_iterations_reported():
    """Digest §8.2b: ≈ 2 solves per step at h = 1e-3, 1 at smaller h (scaled tol 1e-14, see the module docstring);
    T ≈ I needs more; a Newton failure is reported, not silent."""
    per_step = {}
    for cm, to in (("exp", True), ("cayley", True), ("exp", False)):
        for h in (1e-3, 2.5e-4):
            _, stats, ok = solve("pivot", cm, h, t1=0.1, tol=1e-14, tangent_operator=to)
            assert ok
            per_step[cm, to, h] = float(stats["per_step"])
    for cm in ("exp", "cayley"):
        assert 1.5 <= per_step[cm, True, 1e-3] <= 2.5
        assert per_step[cm, True, 2.5e-4] <= 1.2
    assert per_step["exp", False, 2.5e-4] >= per_step["exp", True, 2.5e-4] + 0.5
    _, _, ok = solve("pivot", "exp", 1e-3, t1=0.1, tol=0.0)  # unreachable tolerance: max_iters exhausted
    assert not ok


def test_vmap_over_initial_conditions():
    omegas = jnp.asarray(OMEGA0) + jnp.array([[0.0, 0.0, 0.0], [0.5, -1.0, 0.2], [-0.3, 2.0, 1.0]])
    run = runner("pivot", "exp")
    batched = jax.jit(jax.vmap(run, in_axes=(None, None, None, None, 0, None)))
    ys_b, _, ok = batched(1e-3, 0.1, 0.9, 1e-12, omegas, M_TOP)
    assert bool(jnp.all(ok))
    for i in range(omegas.shape[0]):
        ys, _, _ = run(1e-3, 0.1, 0.9, 1e-12, omegas[i], M_TOP)
        np.testing.assert_allclose(ys_b[1][i], ys[1], rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(ys_b[0][i], ys[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model", ["pivot"])
def test_gradient_matches_finite_differences(model):
    """Reverse mode through diffeqsolve (checkpointed adjoint; the Newton loop via the implicit-function step)."""
    run = runner(model, "exp")
    w = jnp.asarray(np.random.default_rng(0).normal(size=(3, 3)))

    def loss(omega0, m):
        ys, _, _ = run(1e-3, 0.05, 0.8, 1e-12, omega0, m)
        R = rotation_of(model, ys[0])[-1]
        return jnp.sum(w * R) + 1e-2 * jnp.sum(ys[1][-1, :3] ** 2)

    g_omega, g_m = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(OMEGA0), M_TOP)
    assert np.all(np.isfinite(g_omega)) and np.isfinite(g_m)
    eps = 1e-5
    fd = [
        (loss(jnp.asarray(OMEGA0) + eps * e, M_TOP) - loss(jnp.asarray(OMEGA0) - eps * e, M_TOP)) / (2 * eps)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(g_omega, fd, rtol=1e-6, atol=1e-6)
    fd_m = (loss(jnp.asarray(OMEGA0), M_TOP + eps) - loss(jnp.asarray(OMEGA0), M_TOP - eps)) / (2 * eps)
    np.testing.assert_allclose(g_m, fd_m, rtol=1e-6, atol=1e-7)


def test_bad_arguments():
    with pytest.raises(ValueError, match="rho_inf"):
        GeneralizedAlpha(rho_inf=1.5)
    with pytest.raises(ValueError, match="coordinate_map"):
        GeneralizedAlpha(coordinate_map="cay")
    with pytest.raises(ValueError, match="spaces"):
        LieGroupMechanicalTerm(lambda q, a: None, lambda t, q, v, a: None, ("SO2",))
    with pytest.raises(ValueError, match="shape"):
        TERMS["pivot"].retract(jnp.eye(4), jnp.zeros(3))
