"""Linkages in the simulation drivers (:func:`jaxse3.sim.linkage_system`): an undamped, unactuated hybrid linkage
conserves its energy (kinetic + gravity + elastic, each written here from the forward kinematics and the rod's
stiffness), and its static equilibrium under gravity is a stationary point of that potential energy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk, rigid, rod, se3, sim
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material

Y = (0.0, 1.0, 0.0, 0.0, 0.0, 0.0)


def _pendulum():
    """A rigid link on a horizontal revolute joint, a Kirchhoff rod on it, a rigid hook on the rod's tip; no damping."""
    r = rod.Rod(
        length=0.3,
        section=CircularSection(0.01, 0.008),
        material=Material(E=1e5, rho=1000.0, nu=0.5, damping=0.0),
        basis=LegendreBasis((1, 1, 1, None, None, None)),
        n_gauss=3,
        magnus_order=2,
    )
    down = se3.exp(jnp.array([0.0, jnp.pi / 2, 0.0, 0.0, 0.0, 0.0]))  # the rod along world −z
    links = [
        lk.Link.rigid("link", None, "revolute", rigid.spatial_inertia(0.3, (0, 0, -0.05), 1e-4 * np.eye(3)), axis=Y),
        lk.Link.soft("rod", "link", r, down),
        lk.Link.rigid("hook", "rod", "fixed", rigid.spatial_inertia(0.02, (0.01, 0, 0), 1e-6 * np.eye(3))),
    ]
    return lk.Linkage(links)


PENDULUM = _pendulum()


def _energy(linkage, q, qd):
    M = lk.point_states(linkage, q).M
    mass = M[:, 3, 3]
    com = jnp.stack([M[:, 2, 4], M[:, 0, 5], M[:, 1, 3]], axis=-1) / jnp.maximum(mass, 1e-300)[:, None]
    g = lk.forward_kinematics(linkage, q)
    c = jnp.einsum("kij,kj->ki", g[:, :3, :3], com) + g[:, :3, 3]
    gravity = -jnp.sum(mass * (c @ linkage.gravity))
    r, s = linkage.links[1].body, linkage.v_slice(1)
    elastic = 0.5 * q[s] @ r.stiffness @ q[s]
    return 0.5 * qd @ lk.mass_matrix(linkage, q) @ qd + gravity + elastic


#: the pendulum's written-out energy and its kinetic part along a trajectory (jitted once for the module)
_energies = jax.jit(jax.vmap(lambda q, qd: _energy(PENDULUM, q, qd)))
_kinetic_energies = jax.jit(jax.vmap(lambda q, qd: 0.5 * qd @ lk.mass_matrix(PENDULUM, q) @ qd))


def test_linkage_system_rejects_quaternion_joints():
    model = rigid.auto_tree(2, joint_types=("revolute", "revolute"), floating_base=True, seed=0)
    with pytest.raises(ValueError, match="nq == nv"):
        sim.linkage_system(lk.Linkage.from_rigid(model))
    with pytest.raises(TypeError, match=r"must be a jaxse3\.linkage\.Linkage"):
        sim.linkage_system(model)


def test_undamped_hybrid_linkage_conserves_energy():
    """Kvaerno5 with the analytical Jacobian (the linkage's rules), tight tolerances, 0.5 s from a swung, bent start."""
    system = sim.linkage_system(PENDULUM)
    q0 = jnp.zeros(PENDULUM.nq).at[0].set(0.8).at[1:4].set(jnp.array([0.5, -0.3, 0.2]))
    traj = sim.simulate(system, t_final=0.5, q0=q0, rtol=1e-9, atol=1e-11, n_save=11)
    assert traj.ok
    energy = _energies(traj.q, traj.qd)
    swing = np.ptp(np.asarray(_kinetic_energies(traj.q, traj.qd)))
    assert swing > 0.01  # it moves: the kinetic energy changes by more than 10 mJ
    np.testing.assert_allclose(energy, energy[0], atol=1e-6 * swing)


def test_energy_is_the_written_out_sum_and_its_gradient_the_force_at_rest():
    """``linkage.energy`` against the sum written above, its parts against their definitions, and the gradient of
    elastic + gravitational against the residual at rest (the recursions' generalised forces) at random states, and
    its Hessian against the Jacobian of that residual (the rule of the derivative pass at rest) and of the general
    residual at zero rates."""
    system = sim.linkage_system(PENDULUM)
    assert system.energy is not None and system.rest_residual is not None
    potential = jax.jit(jax.grad(lambda q: (lambda e: e.elastic + e.gravitational)(lk.energy(PENDULUM, q, 0 * q))))
    hessian = jax.jit(jax.jacfwd(potential))
    zero_u = jnp.zeros(system.n_inputs)
    stiffness = jax.jit(jax.jacfwd(lambda q: system.statics_residual(q, zero_u)))
    general = jax.jit(jax.jacfwd(lambda q: system.residual(system.params, q, 0 * q, 0 * q, zero_u)))
    energy = jax.jit(lambda q, qd: lk.energy(PENDULUM, q, qd))
    written = jax.jit(lambda q, qd: (_energy(PENDULUM, q, qd), 0.5 * qd @ lk.mass_matrix(PENDULUM, q) @ qd))
    rest = jax.jit(lambda q: system.statics_residual(q, zero_u))
    system_energy = jax.jit(lambda q, qd: system.energy(system.params, q, qd))
    for seed in range(3):
        k = jax.random.split(jax.random.PRNGKey(seed), 2)
        q, qd = 0.5 * jax.random.normal(k[0], (PENDULUM.nq,)), jax.random.normal(k[1], (PENDULUM.nv,))
        e, (total, kinetic) = energy(q, qd), written(q, qd)
        np.testing.assert_allclose(e.total, total, rtol=1e-13)
        np.testing.assert_allclose(e.kinetic, kinetic, rtol=1e-13)
        np.testing.assert_allclose(potential(q), -rest(q), atol=1e-11)
        H = hessian(q)
        np.testing.assert_allclose(stiffness(q), -H, rtol=0, atol=1e-9 * np.abs(H).max())
        np.testing.assert_allclose(stiffness(q), general(q), rtol=0, atol=1e-12 * np.abs(H).max())
        np.testing.assert_allclose(system_energy(q, qd).total, e.total, rtol=1e-15)


def test_static_equilibrium_is_stationary_for_the_potential_energy():
    system = sim.linkage_system(PENDULUM)
    sol = sim.solve_statics(system, q0=jnp.zeros(PENDULUM.nq).at[0].set(0.3))
    assert bool(sol.converged) and bool(sol.stable)
    grad = jax.jit(jax.grad(lambda q: _energy(PENDULUM, q, jnp.zeros_like(q))))(sol.q)
    np.testing.assert_allclose(grad, 0.0, atol=1e-9)
    assert abs(float(sol.q[0])) < 0.2  # it hangs (nearly) down


def test_statics_with_a_prescribed_joint_is_the_potential_gradient_at_the_prescribed_angle():
    """The joint-controlled system's residual at rest (the linkage's derivative pass at rest, the joint's angle θ read
    from the inputs) against the energy written out above: −∂V/∂q on the rod's rows with the joint at θ, θ − q_0 on the
    joint's row, and its Jacobians in q and in θ the Hessian of V (autodiff of the written-out energy); the general
    residual at zero rates agrees, and the inputs' rates and accelerations are not read at rest."""
    system = sim.linkage_system(PENDULUM, prescribed=("link",))
    assert system.rest_residual is not None

    def expected(q, inputs):
        grad = jax.grad(lambda q: _energy(PENDULUM, q, jnp.zeros_like(q)))(q.at[0].set(inputs[0]))
        return (-grad).at[0].set(inputs[0] - q[0])

    def general(q, inputs):
        z = jnp.zeros_like(q)
        return system.residual(system.params, q, z, z, inputs)

    def with_jacobians(f):
        return jax.jit(lambda q, inputs: (f(q, inputs), jax.jacfwd(f, argnums=(0, 1))(q, inputs)))

    rest, want, zero_rates = (with_jacobians(f) for f in (system.statics_residual, expected, general))
    for seed in range(3):
        k = jax.random.split(jax.random.PRNGKey(seed), 2)
        q = 0.5 * jax.random.normal(k[0], (PENDULUM.nq,))
        inputs = jnp.array([0.7 * float(jax.random.normal(k[1], ())), 0.0, 0.0])
        (r, (dq, du)), (r_want, (dq_want, du_want)) = rest(q, inputs), want(q, inputs)
        scale = np.abs(dq_want).max()
        np.testing.assert_allclose(r, r_want, rtol=0, atol=1e-11)
        np.testing.assert_allclose(dq, dq_want, rtol=0, atol=1e-9 * scale)
        np.testing.assert_allclose(du[:, 0], du_want[:, 0], rtol=0, atol=1e-9 * scale)
        r_g, (dq_g, du_g) = zero_rates(q, inputs)
        np.testing.assert_allclose(r, r_g, rtol=0, atol=1e-13)
        np.testing.assert_allclose(dq, dq_g, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(du[:, 0], du_g[:, 0], rtol=0, atol=1e-12 * scale)
        np.testing.assert_array_equal(rest(q, inputs.at[1:].set(jnp.array([2.0, -3.0])))[0], r)


def test_a_joint_held_still_is_a_fixed_joint():
    """Prescribing the revolute joint at a constant angle gives the dynamics of the linkage whose joint is fixed
    there: equal accelerations of the rod's coordinates, and a zero one of the held joint, at random states."""
    theta = 0.4
    system = sim.linkage_system(PENDULUM, prescribed=("link",))
    inputs = sim.prescribed_inputs(system, lambda t: jnp.full((1,), theta) + 0.0 * t)
    link = PENDULUM.links[0]
    fixed = lk.Link.rigid("link", None, "fixed", link.body, se3.exp(theta * jnp.asarray(link.axis)))
    frozen = lk.Linkage([fixed, *PENDULUM.links[1:]])
    held = jax.jit(lambda q, qd: system.acceleration(q, qd, inputs(0.3)))
    free = jax.jit(lambda q, qd: lk.forward_dynamics(frozen, q, qd, jnp.zeros(0)))
    for seed in range(3):
        k = jax.random.split(jax.random.PRNGKey(seed), 2)
        q_r, qd_r = 0.5 * jax.random.normal(k[0], (6,)), jax.random.normal(k[1], (6,))
        q, qd = jnp.concatenate([jnp.full(1, theta), q_r]), jnp.concatenate([jnp.zeros(1), qd_r])
        acc, want = held(q, qd), free(q_r, qd_r)
        np.testing.assert_allclose(acc[0], 0.0, atol=1e-12)
        np.testing.assert_allclose(acc[1:], want, rtol=1e-10, atol=1e-10 * np.abs(want).max())


def test_a_driven_joint_follows_its_prescription_and_its_effort_supplies_the_energy():
    """q_k(t) = 0.5 sin(2πt): the state follows it, and the work of the joint's effort (controlled_efforts, integrated
    over the samples) equals the change of the undamped linkage's energy."""
    system = sim.linkage_system(PENDULUM, prescribed=("link",))
    f = lambda t: 0.5 * jnp.sin(2 * jnp.pi * t)[None]
    inputs = sim.prescribed_inputs(system, f)
    qd0 = jnp.zeros(PENDULUM.nv).at[0].set(inputs(0.0)[1])  # the state starts on the prescription: q̇_k(0) = π
    traj = sim.simulate(system, inputs, t_final=0.5, qd0=qd0, rtol=1e-10, atol=1e-12, n_save=401)
    assert traj.ok
    np.testing.assert_allclose(traj.q[:, 0], jax.jit(jax.vmap(f))(traj.t)[:, 0], atol=1e-7)
    control = system.params
    u_idx = np.asarray(control.unknown)

    def power(q, qd, u):
        qdd = system.acceleration(q, qd, u)
        effort = lk.controlled_efforts(control, q[u_idx], qd[u_idx], qdd[u_idx], u)
        return effort @ qd[np.asarray(control.known)]

    p = jax.jit(jax.vmap(power))(traj.q, traj.qd, traj.u)
    work = np.concatenate([[0.0], np.cumsum(0.5 * (p[1:] + p[:-1]) * np.diff(traj.t))])
    energy = _energies(traj.q, traj.qd)
    scale = np.abs(work).max()
    assert scale > 0.01  # the joint does work: 10 mJ or more at some time
    np.testing.assert_allclose(energy - energy[0], work, atol=1e-4 * scale)


def _rigid_arm():
    """Three rigid revolute links (a linkage that runs on jaxse3.rigid), the middle one prescribed below."""
    body = rigid.spatial_inertia(0.4, (0.1, 0.0, 0.0), 2e-3 * np.eye(3))
    place = se3.from_rotation_translation(jnp.eye(3), jnp.array([0.2, 0.0, 0.0]))
    links = [lk.Link.rigid("a", None, "revolute", body, axis=Y)]
    links += [lk.Link.rigid(n, p, "revolute", body, place, (0, 0, 1, 0, 0, 0)) for n, p in (("b", "a"), ("c", "b"))]
    return lk.Linkage(links)


#: (linkage, prescribed link) of the joint-control rule tests: a hybrid one, and one that jaxse3.rigid runs
CONTROLS = {"pendulum": (PENDULUM, "link"), "rigid arm": (_rigid_arm(), "b")}


@pytest.mark.parametrize("model", CONTROLS)
@pytest.mark.parametrize("name", ["controlled_forward_dynamics", "controlled_residual", "at rest"])
def test_controlled_jacobians_match_autodiff_and_central_differences(name, model):
    """The rules of eq. (44) and of the residual (45a), in motion and at rest, against autodiff of the plain functions
    and central differences: with respect to the state and the inputs together (the derivative pass forms every
    column), and to the state alone (the pass forms the unknown coordinates' columns only: the same numbers); at random
    states and at the straight rest state."""
    from jaxse3.linkage._control import _fd_plain, _residual_plain, _rest_plain

    control = lk.JointControl(*CONTROLS[model])
    assert (control.linkage.rigid_obstacle is None) == (model == "rigid arm")
    n = control.n_unknown
    k = jax.random.split(jax.random.PRNGKey(7), 4)
    q_u, qd_u = 0.3 * jax.random.normal(k[0], (n,)), jax.random.normal(k[1], (n,))
    inputs = jax.random.normal(k[2], (control.n_inputs,))
    args = (q_u, qd_u, inputs)
    if name == "controlled_residual":
        args = (q_u, qd_u, 10.0 * jax.random.normal(k[3], (n,)), inputs)
    rule, plain_fn = getattr(lk, name, None), {"controlled_forward_dynamics": _fd_plain}.get(name, _residual_plain)
    if name == "at rest":
        args, plain_fn = (q_u, inputs), _rest_plain
        rule = lambda control, q_u, inputs: lk.controlled_residual(control, q_u, None, None, inputs)
    fd = jax.jit(lambda *a: rule(control, *a))
    every = tuple(range(len(args)))
    rule_jac = jax.jit(jax.jacfwd(fd, argnums=every))
    state_jac = jax.jit(jax.jacfwd(fd, argnums=every[:-1]))
    plain_jac = jax.jit(jax.jacfwd(lambda *a: plain_fn(control, *a), argnums=every))
    # the straight rod at rest with the prescribed joint at zero: finite, and the same numbers as autodiff
    zero = [jnp.zeros_like(a) for a in args]
    for g, s, p in zip(rule_jac(*zero), (*state_jac(*zero), None), plain_jac(*zero)):
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, p, rtol=1e-10, atol=1e-12 * max(np.abs(p).max(), 1.0))
        if s is not None:
            np.testing.assert_allclose(s, g, rtol=1e-12, atol=1e-14 * max(np.abs(g).max(), 1.0))
    got, state_only, plain = rule_jac(*args), state_jac(*args), plain_jac(*args)
    h = 1e-3  # five-point stencil: the stiff rod's large accelerations carry rounding that a small step amplifies
    for i, (g, p) in enumerate(zip(got, plain)):
        np.testing.assert_allclose(g, p, rtol=1e-10, atol=1e-12 * np.abs(p).max())
        if i < len(state_only):
            np.testing.assert_allclose(state_only[i], g, rtol=1e-12, atol=1e-14 * np.abs(g).max())
        f = lambda x: fd(*[x if j == i else a for j, a in enumerate(args)])
        x = args[i]
        stencil = lambda e: (8 * (f(x + h * e) - f(x - h * e)) - (f(x + 2 * h * e) - f(x - 2 * h * e))) / (12 * h)
        central = np.stack([stencil(e) for e in np.eye(x.shape[0])], axis=1)
        np.testing.assert_allclose(g, central, rtol=1e-6, atol=1e-7 * np.abs(central).max())
