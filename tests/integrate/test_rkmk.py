"""RKMK solvers (jaxse3.integrate.rkmk) against independent oracles.

Oracles: scipy's DOP853 (rtol = atol = 1e-13) on the plain 4×4 / 3×3 matrix ODEs ``Ċ = V̂ C`` / ``Ċ = C V̂`` written
here in numpy; ``scipy.linalg.expm`` for constant twists; conservation laws of the free rigid body; central finite
differences for gradients; the golden error table of seed 001 digest §8.2a (independent numpy implementation).
"""

from __future__ import annotations

import functools

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.linalg

from jaxse3.integrate.group_state import LieODETerm, SE3Element, SO3Element
from jaxse3.integrate.rkmk import RKMK, RKMK4, LieEuler, RKMKBosh3, RKMKDopri5, RKMKHeun
from jaxse3.integrate.tableaux import ButcherTableau

T = 2.0
X0 = np.array([0.3, -0.2, 0.1, 1.0, 2.0, 3.0])
NS = np.array([10, 20, 40, 80, 160])

# seed 001 digest §8.2a: max-abs error of C_N at T = 2 for N = 10, 20, 40, 80, 160
GOLDEN = {
    ("spatial", "exp"): [3.52e-05, 2.08e-06, 1.26e-07, 7.74e-09, 4.80e-10],
    ("spatial", "cayley"): [5.15e-05, 2.88e-06, 1.70e-07, 1.03e-08, 6.34e-10],
    ("body", "exp"): [1.99e-05, 1.21e-06, 7.48e-08, 4.65e-09, 2.90e-10],
    ("body", "cayley"): [1.78e-05, 9.53e-07, 5.81e-08, 3.92e-09, 2.54e-10],
}


# ---------------------------------------------------------------------------------------------------------------------
# Plain numpy oracles.
# ---------------------------------------------------------------------------------------------------------------------


def hat3_np(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def hat6_np(X):
    M = np.zeros((4, 4))
    M[:3, :3], M[:3, 3] = hat3_np(X[:3]), X[3:]
    return M


def twist_np(t):
    return np.array([np.sin(t), np.cos(2 * t), 0.5 + 0.3 * t, t, 1.0, -np.cos(t)])


def twist(t):
    return jnp.stack([jnp.sin(t), jnp.cos(2 * t), 0.5 + 0.3 * t, t, jnp.ones_like(t), -jnp.cos(t)])


C0 = scipy.linalg.expm(hat6_np(X0))
C0[3] = [0.0, 0.0, 0.0, 1.0]  # exact bottom row (expm leaves ~1e-17 there)


@functools.cache
def reference(side: str, ts: tuple = (T,)) -> np.ndarray:
    """DOP853 on the 4×4 matrix ODE of the §8.2a problem, at the times ``ts``: ``(len(ts), 4, 4)``."""

    def rhs(t, c):
        C, V = c.reshape(4, 4), hat6_np(twist_np(t))
        return (V @ C if side == "spatial" else C @ V).ravel()

    sol = scipy.integrate.solve_ivp(rhs, (0.0, T), C0.ravel(), method="DOP853", rtol=1e-13, atol=1e-13, t_eval=ts)
    return sol.y.T.reshape(-1, 4, 4)


KINEMATIC = LieODETerm(lambda t, y, args: twist(t))


@functools.cache
def kinematic_run(solver, saveat_ts: tuple | None = None):
    """jit(vmap over step counts) of the §8.2a reconstruction: ``n ↦ C`` at T (or at ``saveat_ts``)."""
    saveat = diffrax.SaveAt(t1=True) if saveat_ts is None else diffrax.SaveAt(ts=jnp.array(saveat_ts))

    @jax.jit
    @jax.vmap
    def run(n):
        sol = diffrax.diffeqsolve(
            KINEMATIC, solver, 0.0, T, T / n, SE3Element(jnp.asarray(C0)), saveat=saveat, max_steps=400
        )
        return sol.ys.matrix

    return run


def max_err(C, ref):
    return np.max(np.abs(np.asarray(C) - ref), axis=(-2, -1))


def orders(errors):
    return np.log2(errors[:-1] / errors[1:])


def orthogonality_defect(R):
    R = np.asarray(R)
    return np.max(np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)))


# ---------------------------------------------------------------------------------------------------------------------
# Orders and the golden table.
# ---------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("side", ["spatial", "body"])
@pytest.mark.parametrize("coordinates", ["exp", "cayley"])
def test_rkmk4_golden_table_order_four_and_on_group(side, coordinates):
    C = kinematic_run(RKMK4(coordinates, side))(jnp.asarray(NS))[:, -1]
    errors = max_err(C, reference(side)[-1])
    np.testing.assert_allclose(errors, GOLDEN[side, coordinates], rtol=0.05)
    assert np.all(orders(errors) > 3.85) and np.all(orders(errors) < 4.3), orders(errors)
    assert orthogonality_defect(C[..., :3, :3]) < 1e-14
    np.testing.assert_array_equal(np.asarray(C[..., 3, :]), np.broadcast_to([0.0, 0.0, 0.0, 1.0], (len(NS), 4)))


RALSTON = ButcherTableau(a=[[], [2 / 3]], b=[1 / 4, 3 / 4], c=[0.0, 2 / 3], order=2, name="ralston")


@pytest.mark.parametrize(
    "solver, order",
    [
        (LieEuler("exp", "spatial"), 1),
        (LieEuler("cayley", "body"), 1),
        (RKMK(RALSTON, "cayley", "spatial"), 2),
        (RKMKBosh3("exp", "body"), 3),
    ],
    ids=["euler-exp-spatial", "euler-cay-body", "ralston-cay-spatial", "bosh3-exp-body"],
)
def test_tableau_orders(solver, order):
    ns = NS[1:] * (2 if order == 1 else 1)
    C = kinematic_run(solver)(jnp.asarray(ns))[:, -1]
    observed = orders(max_err(C, reference(solver.side)[-1]))
    assert np.all(np.abs(observed - order) < 0.2), observed


# ---------------------------------------------------------------------------------------------------------------------
# Constant twists are integrated exactly with exp coordinates; mixed pytree states.
# ---------------------------------------------------------------------------------------------------------------------

V_BODIES = np.array([[0.4, -1.1, 0.7, 1.0, -2.0, 0.5], [0.0, 0.0, 0.0, 0.3, 0.2, -0.1]])  # 2nd: pure translation
W_ROT = np.array([2.5, -0.3, 1.2])
H_BODIES = np.stack([scipy.linalg.expm(hat6_np([0.1, 0.2, -0.3, 1.0, 0.0, 2.0])), np.eye(4)])
R_ROT = scipy.linalg.expm(hat3_np([-0.5, 0.4, 0.9]))


def constant_field(t, y, args):
    return {"bodies": jnp.asarray(V_BODIES), "rot": jnp.asarray(W_ROT), "x": jnp.array([1.0, 2.0]) * t}


@pytest.mark.parametrize(
    "solver",
    [LieEuler("exp", "body"), RKMK4("exp", "spatial"), RKMKDopri5("exp", "body")],
    ids=["euler-body", "rk4-spatial-steps", "dopri5-pid-body"],
)
def test_constant_twist_exact_mixed_state(solver):
    y0 = {"bodies": SE3Element(jnp.asarray(H_BODIES)), "rot": SO3Element(jnp.asarray(R_ROT)), "x": jnp.zeros(2)}
    ts = jnp.array([0.0, 0.35, 1.0, 1.7])
    adaptive = isinstance(solver, RKMKDopri5)
    sol = jax.jit(
        lambda y: diffrax.diffeqsolve(
            LieODETerm(constant_field),
            solver,
            0.0,
            1.7,
            0.1,
            y,
            saveat=diffrax.SaveAt(ts=ts, steps=solver.side == "spatial"),
            stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6) if adaptive else diffrax.ConstantStepSize(),
        )
    )(y0)
    ts_out = np.asarray(sol.ts)
    keep = np.isfinite(ts_out)
    for t, H, R in zip(ts_out[keep], np.asarray(sol.ys["bodies"].matrix)[keep], np.asarray(sol.ys["rot"].matrix)[keep]):
        for k in range(2):
            E = scipy.linalg.expm(t * hat6_np(V_BODIES[k]))
            expect = E @ H_BODIES[k] if solver.side == "spatial" else H_BODIES[k] @ E
            np.testing.assert_allclose(H[k], expect, atol=1e-13)
        E = scipy.linalg.expm(t * hat3_np(W_ROT))
        np.testing.assert_allclose(R, E @ R_ROT if solver.side == "spatial" else R_ROT @ E, atol=1e-13)
    # the vector leaf x' = (1, 2) t is integrated by the same tableau (exact for order ≥ 2 at the step times)
    if solver.tableau.order >= 2:
        x = np.asarray(sol.ys["x"])[keep]
        np.testing.assert_allclose(x, 0.5 * ts_out[keep, None] ** 2 * np.array([1.0, 2.0]), atol=1e-12)


# ---------------------------------------------------------------------------------------------------------------------
# Free rigid body: SO(3) rotation (body side) + angular velocity (vector leaf), Euler's equations.
# ---------------------------------------------------------------------------------------------------------------------

J_BODY = np.array([1.0, 2.0, 3.5])
W0 = np.array([0.8, 1.5, -0.6])
T_RB = 4.0


def rigid_body_field(t, y, args):
    w = y["w"]
    J = jnp.asarray(J_BODY)
    return {"R": w, "w": jnp.cross(J * w, w) / J}


@functools.cache
def rigid_body_reference():
    def rhs(t, z):
        R, w = z[:9].reshape(3, 3), z[9:]
        return np.concatenate([(R @ hat3_np(w)).ravel(), np.cross(J_BODY * w, w) / J_BODY])

    z = scipy.integrate.solve_ivp(
        rhs, (0, T_RB), np.concatenate([np.eye(3).ravel(), W0]), method="DOP853", rtol=1e-13, atol=1e-13
    ).y[:, -1]
    return z[:9].reshape(3, 3), z[9:]


def test_free_rigid_body_order_and_invariants(coordinates="cayley"):
    @jax.jit
    @jax.vmap
    def run(n):
        y0 = {"R": SO3Element(jnp.eye(3)), "w": jnp.asarray(W0)}
        sol = diffrax.diffeqsolve(
            LieODETerm(rigid_body_field), RKMK4(coordinates, "body"), 0.0, T_RB, T_RB / n, y0, max_steps=1000
        )
        return sol.ys["R"].matrix[-1], sol.ys["w"][-1]

    R, w = map(np.asarray, run(jnp.array([100, 200, 400])))
    R_ref, w_ref = rigid_body_reference()
    err = np.maximum(np.max(np.abs(R - R_ref), axis=(1, 2)), np.max(np.abs(w - w_ref), axis=1))
    assert np.all(np.abs(orders(err) - 4) < 0.3), orders(err)
    energy = 0.5 * np.sum(J_BODY * w * w, axis=1)
    momentum = np.einsum("nij,nj->ni", R, J_BODY * w)  # spatial angular momentum R J ω
    e_drift = np.abs(energy - 0.5 * np.sum(J_BODY * W0 * W0))
    m_drift = np.max(np.abs(momentum - J_BODY * W0), axis=1)
    assert np.all(orders(m_drift) > 3.5), (m_drift, orders(m_drift))
    # the energy error of RK4 on Euler's equations is small and decays, not at a clean order here (measured 2.4, 3.3)
    assert np.all(e_drift < 1e-6 * (100 / np.array([100, 200, 400])) ** 3) and e_drift[-1] < e_drift[0], e_drift
    assert orthogonality_defect(R) < 1e-14


# ---------------------------------------------------------------------------------------------------------------------
# Dense output, adaptive stepping, jit/vmap, progress meter.
# ---------------------------------------------------------------------------------------------------------------------

TS_DENSE = (0.13, 0.77, 1.31, 1.99)


@pytest.mark.parametrize("side, coordinates", [("spatial", "exp"), ("body", "cayley")])
def test_saveat_ts_hermite_on_group_third_order(side, coordinates):
    C = kinematic_run(RKMK4(coordinates, side), TS_DENSE)(jnp.array([10, 20, 40]))
    errors = np.max(max_err(C, reference(side, TS_DENSE)), axis=1)
    assert np.all(orders(errors) > 2.8), orders(errors)  # cubic Hermite dense output (RK4 itself is order 4)
    assert errors[-1] < 1e-6
    assert orthogonality_defect(C[..., :3, :3]) < 1e-14


@pytest.mark.parametrize("solver", [RKMKBosh3("cayley", "body"), RKMKDopri5("exp", "spatial")], ids=["bosh3", "dopri5"])
def test_adaptive_reaches_tolerance(solver):
    @jax.jit
    def run(tol):
        sol = diffrax.diffeqsolve(
            KINEMATIC,
            solver,
            0.0,
            T,
            None,
            SE3Element(jnp.asarray(C0)),
            stepsize_controller=diffrax.PIDController(rtol=tol, atol=tol),
            max_steps=4096,
        )
        return sol.ys.matrix[-1], sol.stats["num_accepted_steps"]

    ref = reference(solver.side)[-1]
    results = [run(tol) for tol in (1e-5, 1e-8, 1e-11)]
    errors = np.array([max_err(C, ref) for C, _ in results])
    steps = [int(n) for _, n in results]
    assert np.all(errors < 100 * np.array([1e-5, 1e-8, 1e-11])), errors
    assert errors[2] < errors[1] < errors[0] and steps[0] < steps[1] < steps[2], (errors, steps)


def test_jit_vmap_over_initial_conditions_matches_loop():
    solver = RKMKHeun("cayley", "spatial")
    xs = jnp.array([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.3, -0.2, 0.1, 1.0, 2.0, 3.0], [3.0, 0.1, -0.2, 0.0, 1.0, 0.0]])

    starts = jnp.stack([jnp.asarray(scipy.linalg.expm(hat6_np(np.asarray(x)))) for x in xs])
    batched = jax.jit(
        jax.vmap(lambda C: diffrax.diffeqsolve(KINEMATIC, solver, 0.0, 1.0, 0.05, SE3Element(C)).ys.matrix[-1])
    )(starts)
    single = jax.jit(
        lambda C: diffrax.diffeqsolve(
            KINEMATIC, solver, 0.0, 1.0, 0.05, SE3Element(C), progress_meter=diffrax.TqdmProgressMeter()
        ).ys.matrix[-1]
    )
    for k in range(len(xs)):
        np.testing.assert_allclose(batched[k], single(starts[k]), rtol=0, atol=1e-14)
    # eager (no jit) agrees too
    eager = diffrax.diffeqsolve(KINEMATIC, solver, 0.0, 1.0, 0.05, SE3Element(starts[1])).ys.matrix[-1]
    np.testing.assert_allclose(eager, batched[1], atol=1e-14)


# ---------------------------------------------------------------------------------------------------------------------
# Gradients through diffeqsolve.
# ---------------------------------------------------------------------------------------------------------------------


def coupled_field(t, y, args):
    """A state-dependent twist: the body spins about an axis that depends on its own position (and on p = args)."""
    p = args
    r = y.matrix[:3, 3]
    return p * twist(t) + jnp.concatenate([0.1 * jnp.sin(r), jnp.zeros(3)])


LOSS_W = np.arange(16.0).reshape(4, 4) / 10


def loss(xi, p, adjoint=diffrax.RecursiveCheckpointAdjoint()):
    """Loss on the final pose; ``xi`` perturbs the initial pose as exp(ξ) C0. (Heun keeps the compile of the
    reverse- and forward-mode solves small; the stage machinery is the same for every tableau.)"""
    from jaxse3 import se3

    y0 = SE3Element(se3.compose(se3.exp(xi), jnp.asarray(C0)))
    sol = diffrax.diffeqsolve(
        LieODETerm(coupled_field), RKMKHeun("exp", "body"), 0.0, 1.0, 0.1, y0, args=p, adjoint=adjoint, max_steps=16
    )
    return jnp.sum(jnp.asarray(LOSS_W) * sol.ys.matrix[-1])


def central_fd(fn, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    out = []
    for i in range(x.size):
        d = np.zeros_like(x).ravel()
        d[i] = eps
        d = d.reshape(x.shape)
        out.append((fn(x + d) - fn(x - d)) / (2 * eps))
    return np.array(out).reshape(x.shape)


@functools.cache
def loss_derivatives():
    """Compiled once for both cases: (value, (∂ξ, ∂p)) by reverse mode, and ∂ξ by forward mode; the
    finite differences take the values of the first."""
    args = (jnp.zeros(6), jnp.asarray(1.0))
    value_and_grad = jax.value_and_grad(loss, argnums=(0, 1))
    jacfwd = jax.jacfwd(lambda x, p: loss(x, p, adjoint=diffrax.ForwardMode()))
    return tuple(jax.jit(f).lower(*args).compile() for f in (value_and_grad, jacfwd))


@pytest.mark.parametrize("p", [1.0, 0.0], ids=["p=1", "p=0 (all increments zero)"])
def test_gradients_match_central_differences(p):
    xi0 = np.zeros(6)  # derivative at ξ = 0: the initial pose itself
    value_and_grad, jacfwd = loss_derivatives()
    p = jnp.asarray(p)

    def value(x, q):
        return value_and_grad(jnp.asarray(x), jnp.asarray(q))[0]

    g_xi, g_p = value_and_grad(jnp.asarray(xi0), p)[1]
    assert np.all(np.isfinite(g_xi)) and np.isfinite(g_p)
    np.testing.assert_allclose(g_xi, central_fd(lambda x: value(x, p), xi0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g_p, central_fd(lambda q: value(xi0, q), np.array(p)), rtol=1e-6, atol=1e-7)
    fwd = jacfwd(jnp.asarray(xi0), p)
    np.testing.assert_allclose(fwd, g_xi, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------------------------------
# Errors.
# ---------------------------------------------------------------------------------------------------------------------


def test_bad_input_errors():
    with pytest.raises(ValueError, match="strictly lower triangular"):
        ButcherTableau(a=[[0.0, 1.0], [1.0, 0.0]], b=[0.5, 0.5], c=[0.0, 1.0], order=2)
    with pytest.raises(ValueError, match="c_i"):
        ButcherTableau(a=[[], [1.0]], b=[0.5, 0.5], c=[0.0, 0.5], order=2)
    with pytest.raises(ValueError, match="'b' must sum to 1"):
        ButcherTableau(a=[[], [1.0]], b=[0.5, 0.6], c=[0.0, 1.0], order=2)
    with pytest.raises(ValueError, match="coordinates"):
        RKMK4(coordinates="cay")
    with pytest.raises(ValueError, match="side"):
        RKMK4(side="left")
    with pytest.raises(ValueError, match=r"\(\.\.\., 4, 4\)"):
        SE3Element(jnp.eye(3))
    with pytest.raises(ValueError, match=r"twists of shape \(6,\)"):
        diffrax.diffeqsolve(LieODETerm(lambda t, y, a: jnp.zeros(3)), RKMK4(), 0.0, 1.0, 0.1, SE3Element(jnp.eye(4)))
    with pytest.raises(ValueError, match="replaced by an array of twists"):
        diffrax.diffeqsolve(LieODETerm(lambda t, y, a: (jnp.zeros(6),)), RKMK4(), 0.0, 1.0, 0.1, SE3Element(jnp.eye(4)))
    with pytest.raises(RuntimeError, match="error estimates"):
        diffrax.diffeqsolve(
            KINEMATIC,
            RKMK4(),
            0.0,
            1.0,
            0.1,
            SE3Element(jnp.eye(4)),
            stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-6),
        )
