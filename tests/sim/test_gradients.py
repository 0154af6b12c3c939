"""Gradients through simulations: reverse mode (checkpointed and backsolve adjoints) and forward mode against central
differences, for every solver kind, on the analytic stand-in, the CDM rod (tensions, E, initial state) and a rigid
arm under joint torques; and the rod's analytical rules are what the backward pass runs."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import rod as rods
from jaxse3.sim import SampledInput, rigid_system, simulate
from jaxse3.sim.scenarios import cdm_system
from tests.sim import standin

U = np.array([1.0, -0.5])
T = 1.0


def _central(f, x, direction, h):
    return (f(x + h * direction) - f(x - h * direction)) / (2 * h)


def _standin_tip(solver, **kw):
    """(u, stiffness scale, q0) -> first coordinate at T of the stand-in (a scalar)."""
    s = standin.make()

    def tip(u, k, q0):
        system = eqx.tree_at(lambda s: s.params.K, s, k * s.params.K)
        return simulate(system, u, t_final=T, q0=q0, n_save=11, solver=solver, **kw).q[-1, 0]

    return tip


_TIGHT = dict(rtol=1e-10, atol=1e-12)
_ARGS = (jnp.asarray(U), jnp.asarray(1.0), jnp.asarray([0.1, 0.0, -0.2, 0.05]))


def _directional_checks(grads, f, args, h=1e-5, rtol=1e-6, seed=1, label="argument"):
    """g·d against central differences of ``f`` along a random direction d, for each argument of ``f``."""
    rng = np.random.default_rng(seed)
    for i, g in enumerate(grads):
        d = jnp.asarray(rng.normal(size=np.shape(args[i])))
        along = lambda x: f(*(x if j == i else a for j, a in enumerate(args)))
        fd = _central(along, args[i], d, h)
        np.testing.assert_allclose(jnp.vdot(g, d), fd, rtol=rtol, err_msg=f"{label} {i}")


@pytest.mark.parametrize(
    "solver, adjoint, kw",
    [
        ("kvaerno5", "checkpoint", _TIGHT),
        ("tsit5", "checkpoint", _TIGHT),
        ("tsit5", "backsolve", _TIGHT),
        ("newmark", "checkpoint", dict(dt=1e-2, newton_tol=1e-14)),
    ],
)
def test_reverse_mode_gradients_match_central_differences(solver, adjoint, kw):
    """∂(q₀(T))/∂(u, K scale, q0) by reverse mode equals central differences of the same solver, for each adjoint."""
    tip = _standin_tip(solver, adjoint=adjoint, **kw)
    grads = jax.grad(tip, argnums=(0, 1, 2))(*_ARGS)
    _directional_checks(grads, tip, _ARGS)


def test_forward_mode_equals_reverse_mode():
    """``adjoint="forward"``: jax.jacfwd of the whole final state equals jax.jacrev with the checkpointed adjoint."""
    s = standin.make()

    def final(u, adjoint):
        tr = simulate(s, u, t_final=T, n_save=11, solver="kvaerno5", adjoint=adjoint, **_TIGHT)
        return jnp.concatenate([tr.q[-1], tr.qd[-1]])

    fwd = jax.jacfwd(lambda u: final(u, "forward"))(jnp.asarray(U))
    rev = jax.jacrev(lambda u: final(u, "checkpoint"))(jnp.asarray(U))
    np.testing.assert_allclose(fwd, rev, rtol=1e-9, atol=1e-12)
    assert np.abs(fwd).max() > 0.1


def test_bad_adjoint_arguments_are_named():
    s = standin.make()
    with pytest.raises(ValueError, match="adjoint must be one of"):
        simulate(s, U, t_final=T, adjoint="adjoint")
    with pytest.raises(ValueError, match="adjoint='backsolve' needs an explicit solver"):
        simulate(s, U, t_final=T, adjoint="backsolve")
    with pytest.raises(ValueError, match="checkpoints must be None or a positive int"):
        simulate(s, U, t_final=T, checkpoints=0)
    with pytest.raises(ValueError, match="newton_tol must be positive"):
        simulate(s, U, t_final=T, solver="newmark", newton_tol=-1.0)


CDM_T = 0.5
CDM_KNOTS = jnp.linspace(0.0, CDM_T, 3)


def _cdm_tip_loss(knots, E, q0, qd0):
    """w · (tip at 0.5 s) of the CDM under piecewise-linear tensions (3 knots × 5 cables), with Young's modulus E
    (the stiffness is linear in E at fixed ν), Newmark-β at the paper's 2 ms with a Newton tolerance that makes the
    differenced runs the exact Newmark map."""
    system = cdm_system()
    rod, loads = system.params
    rod = eqx.tree_at(lambda r: r.stiffness, rod, rod.stiffness * (E / 1e6))
    system = eqx.tree_at(lambda s: s.params, system, (rod, loads))
    tr = simulate(
        system,
        SampledInput(CDM_KNOTS, knots, kind="linear"),
        t_final=CDM_T,
        q0=q0,
        qd0=qd0,
        solver="newmark",
        newton_tol=1e-14,
        n_save=6,
    )
    return jnp.dot(jnp.array([1.0, -2.0, 3.0]), tr.tip[-1])


def test_cdm_tip_gradient_wrt_tensions_stiffness_and_initial_state_matches_central_differences():
    """Seed 003's CDM: the gradient of its tip after 0.5 s with respect to tension knots, E, q0 and q̇0 (one reverse
    pass) equals central differences along random directions to 1e−6, and the backward pass runs the rod's
    analytical rules."""
    rng = np.random.default_rng(0)
    knots = jnp.asarray(np.abs(rng.normal(size=(3, 5))) * np.array([4.0, 2.0, 2.0, 1.0, 1.0]))
    args = (knots, jnp.asarray(1e6), jnp.asarray(0.02 * rng.normal(size=24)), jnp.asarray(0.1 * rng.normal(size=24)))
    grads = jax.jit(jax.grad(_cdm_tip_loss, argnums=(0, 1, 2, 3)))
    assert _backward_rule_calls(_cdm_tip_loss, grads, args) > 0
    g = grads(*args)
    # central differences with steps relative to each argument's size (E: 10 Pa in 1 MPa; at 1 Pa the tip's change,
    # ~1e−8, was within 1e−6 of the simulation's round-off)
    for i, (h, seed) in enumerate(((1e-4, 1), (10.0, 2), (1e-6, 3), (1e-5, 4))):
        along = lambda x: _cdm_tip_loss(*args[:i], x, *args[i + 1 :])
        _directional_checks((g[i],), along, (args[i],), h, seed=seed, label=f"argument {i} of")
    assert all(np.abs(x).max() > 0 for x in g)


_ROD_RULES = ("inverse_dynamics", "generalized_forces", "forward_dynamics")


def _rule_calls_while_tracing(fn, args, names=_ROD_RULES) -> int:
    """Applications of the analytical derivative rules ``names`` traced when ``fn`` is lowered, from empty caches
    (rules and diffrax's solves are traced once and cached)."""
    jax.clear_caches()
    count = lambda: sum(rods.ROD_RULE_CALLS[k] for k in names)
    before = count()
    fn.lower(*args)
    return count() - before


def _backward_rule_calls(loss, grads, args, names=_ROD_RULES) -> int:
    """Rule applications traced for the gradient ``grads`` of ``loss`` beyond those of its forward pass (which
    applies rules too: the implicit solvers linearise)."""
    forward = _rule_calls_while_tracing(jax.jit(loss), args, names)
    assert forward > 0
    return _rule_calls_while_tracing(grads, args, names) - forward


def test_ur5_tip_gradient_wrt_torque_knots_payload_and_initial_state_matches_central_differences():
    """UR5 (example-robot-data) under joint torques (gravity compensation at q0 plus random piecewise-linear knots),
    Kvaerno5 + StepChord at rtol = 1e−12: the gradient of its tool position after 0.5 s with respect to the
    torque knots, the last link's inertia scale (a payload), q0 and q̇0 equals central differences to 1e−6, and the
    backward pass runs the rigid rules (IDSVA)."""
    pytest.importorskip("urdf_parser_py")
    from jaxse3 import rigid

    try:
        model = rigid.example_robot("ur5")
    except ImportError:
        pytest.skip("example-robot-data is not installed")
    rng = np.random.default_rng(5)
    q0 = jnp.asarray([0.3, -1.2, 1.0, -0.5, 0.8, 0.1])
    hold = rigid.rnea(model, q0, jnp.zeros(6), jnp.zeros(6))
    knots = hold + jnp.asarray(rng.normal(size=(3, 6)))
    ts = jnp.linspace(0.0, 0.5, 3)
    tight = dict(rtol=1e-12, atol=1e-14)  # the adaptive steps' noise in the differences ~ 1e-5 at rtol = 1e-10

    def loss(knots, payload, q0, qd0):
        arm = eqx.tree_at(lambda m: m.inertias, model, model.inertias.at[-1].multiply(payload))
        tr = simulate(
            rigid_system(arm), SampledInput(ts, knots, kind="linear"), t_final=0.5, q0=q0, qd0=qd0, n_save=6, **tight
        )
        return jnp.dot(jnp.array([1.0, -2.0, 3.0]), tr.tip[-1])

    args = (knots, jnp.asarray(1.0), q0, jnp.asarray(0.2 * rng.normal(size=6)))
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))
    assert _backward_rule_calls(loss, grads, args, ("rigid.forward_dynamics", "rigid.rnea_derivatives")) > 0
    g = grads(*args)
    # steps between the truncation error and the noise of the adaptive steps (~1e-7 of the derivative)
    for i, (h, seed) in enumerate(((1e-3, 1), (1e-3, 2), (1e-5, 3), (1e-4, 4))):
        _directional_checks(
            (g[i],), lambda x: loss(*args[:i], x, *args[i + 1 :]), (args[i],), h, seed=seed, label=f"argument {i} of"
        )


def test_rigid_system_is_the_rigid_dynamics_and_rejects_quaternion_joints():
    """rigid_system: FD is rigid.forward_dynamics, the residual τ − RNEA vanishes on it, the tip is the last body's
    origin; a free or spherical joint (quaternion coordinates) is rejected by name."""
    from jaxse3 import rigid

    model = rigid.auto_tree(4, joint_types=("revolute", "prismatic"), seed=3)
    s = rigid_system(model)
    rng = np.random.default_rng(0)
    q, qd, tau = (jnp.asarray(rng.normal(size=4)) for _ in range(3))
    qdd = s.acceleration(q, qd, tau)
    np.testing.assert_allclose(qdd, rigid.forward_dynamics(model, q, qd, tau), rtol=1e-12)
    np.testing.assert_allclose(s.dynamics_residual(q, qd, qdd, tau), 0.0, atol=1e-10)
    np.testing.assert_allclose(s.tip(q), rigid.forward_kinematics(model, q)[-1, :3, 3])
    assert (s.n_dof, s.n_inputs) == (4, 4)
    with pytest.raises(ValueError, match=r"rigid_system: every joint must have one degree of freedom.*'free'"):
        rigid_system(rigid.auto_tree(3, floating_base=True))
    with pytest.raises(TypeError, match=r"rigid_system: model must be a jaxse3\.rigid\.Model"):
        rigid_system(standin.make())
