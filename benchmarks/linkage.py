"""Seed 003's hybrid serial robot (§5.1) and flagellated robot (§6.3) (Table 3), and rigid-only linkages against
jaxse3.rigid, side by side.

Measures, float64 on CPU (``jaxse3.sim.scenarios.serial_robot``: 7 prescribed revolute joints, a soft Kirchhoff link,
27 DoF):
1. Jacobians ∂q̈/∂(q, q̇) of the joint-controlled forward dynamics (eqs. (43), (44)) at a moving state: analytic (the
   linkage's custom_jvp rules) vs forward differences (ε = 1e−6, eq. (38)), column by column as the paper's loop, vs
   autodiff through the plain recursion: agreement, time per Jacobian (interleaved medians), compile.
2. 10 s dynamics: Kvaerno5 with the analytic Jacobian (paper: ode15s + analytic 2.49 s), with the finite-difference
   Jacobian (paper: 7.08 s), Newmark-β h = 1 ms (paper: 231 s); wall and process CPU after compilation, steps, tip
   mismatch, compile (first call).
3. Statics: ``--n-statics`` (1000) random joint-angle sets in [−π/4, π/4], batched (one vmap, chunks of 8, one by
   one); unknowns the soft coordinates (paper: 6.3 ms per solve analytic, 49.9 ms finite differences).
4. Seed 003 §6.3's underwater flagellated robot (``jaxse3.sim.scenarios.flagellated_robot``: a floating body in
   exponential coordinates, two shafts at ±0.25 N·m, six tapered Kirchhoff flagella, in water; 80 DoF): the Jacobians
   of its forward dynamics as in 1. at a random state (paper: f.d. 216.4 ms vs analytic 11.9 ms), and 10 s dynamics as
   in 2. (paper: ode15s + analytic 1.17 s; Newmark h = 10 ms 60.91 s), with the body's displacement and rotation.
5. A rigid-only linkage against jaxse3.rigid on the same robots (``--robots``, default HyQ (floating base) and UR5
   from example-robot-data if installed, else a random floating tree): inverse dynamics and its first-order
   derivatives (tangent space for the floating base), batched per state — the public linkage functions (which run
   jaxse3.rigid on a rigid-only linkage) and the linkage's own tree recursions (what the rigid links of a hybrid
   linkage run).
6. Seed 003 §6.1's hybrid parallel robot (``jaxse3.sim.scenarios.parallel_robot``: three soft pillars, a platform on
   spherical joints, two loop closures; 63 DoF, Baumgarte): the Jacobians of its closed-chain forward dynamics as in 1.
   at a random state (paper: f.d. 82.9 ms vs analytic 5.1 ms), 10 s dynamics as in 2. plus the index-3 Newmark-β
   (paper: ode15s + analytic 2.46 s, Newmark h = 10 ms 17.6 s) with the constraints' drift, and statics under
   ``--n-statics`` random platform wrenches (paper: 8.97 ms per solve analytic, 166 ms finite differences; the
   finite-difference Newton on the first ``--n-statics-fd``, 100).
7. Seed 003 §5.2's fin-ray finger (``jaxse3.sim.scenarios.fin_ray``: 17 soft links, 6 loop closures, a prescribed
   slider; 74 DoF): the Jacobians of its closed-chain forward dynamics (Baumgarte) as in 1. at a random state, the
   slider force-driven and prescribed (paper: f.d. 498 ms vs analytic 23.7 ms), and 10 s of the prescribed motion
   under the index-3 Newmark-β, h = 10 ms (paper: Newmark h = 10 ms 69 s, ode15s + analytic 16 min 34 s).

    python benchmarks/linkage.py [--t-final 10] [--n-statics 1000] [--n-statics-fd 100] [--batch 1000]
        [--robots hyq ur5] [--skip serial flagellated parallel fin-ray jacobians simulations statics rigid]
"""

from __future__ import annotations

import argparse
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _timing import fmt_time, in_a_loop, jacobian_by_columns, time_group, timed  # noqa: E402

from jaxse3 import linkage as lk, rigid  # noqa: E402
from jaxse3.sim import (  # noqa: E402
    constraint_drift,
    finite_difference,
    scenarios,
    simulate,
    solve_statics_batch,
    stack,
)


def _rel(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(np.asarray(b)))


def plain_fd(control, q_u, qd_u, inputs):
    """The joint-controlled forward dynamics from the rule-free public functions (autodiff runs the recursion)."""
    linkage, idx = control.linkage, np.asarray(control.unknown)
    q, qd, qdd0, u = control.full_state(q_u, qd_u, inputs)
    rhs = lk.generalized_forces(linkage, q, qd, u) - lk.inverse_dynamics_autodiff(linkage, q, qd, qdd0)
    return jnp.linalg.solve(lk.mass_matrix(linkage, q)[idx][:, idx], rhs[idx])


def serial_jacobians(system, inputs, t_state=3.0):
    """The serial robot's joint-controlled FD at its state at ``t_state`` of the 10 s run."""
    tr = simulate(system, inputs, t_final=t_state, n_save=2)
    control, u = system.params, tr.u[-1]
    idx = np.asarray(control.unknown)
    fd = lambda q, qd: lk.controlled_forward_dynamics(control, q, qd, u)
    plain = lambda q, qd: plain_fd(control, q, qd, u)
    jacobian_table(f"serial robot, joint-controlled FD at t = {t_state} s", fd, plain, tr.q[-1][idx], tr.qd[-1][idx])


def flagellated_jacobians(seed=3):
    """The flagellated robot's FD at a random state (q ~ 0.2 N(0, 1), q̇ ~ 0.5 N(0, 1)), the shaft torques applied."""
    linkage = scenarios.flagellated_robot_linkage()
    u = jnp.asarray(scenarios.FLAGELLATED_TORQUES)
    k = jax.random.split(jax.random.PRNGKey(seed), 2)
    q, qd = 0.2 * jax.random.normal(k[0], (linkage.nv,)), 0.5 * jax.random.normal(k[1], (linkage.nv,))

    def plain(q, qd):
        bias = lk.inverse_dynamics_autodiff(linkage, q, qd, jnp.zeros_like(qd))
        return jnp.linalg.solve(lk.mass_matrix(linkage, q), lk.generalized_forces(linkage, q, qd, u) - bias)

    fd = lambda q, qd: lk.forward_dynamics(linkage, q, qd, u)
    jacobian_table("flagellated robot, FD at a random state", fd, plain, q, qd)


def parallel_jacobians(seed=4):
    """The parallel robot's closed-chain FD (Baumgarte, eqs. (48)–(51)) at a random, inconsistent state."""
    system, u = scenarios.parallel_robot()
    chain = system.params
    k = jax.random.split(jax.random.PRNGKey(seed), 2)
    q, qd = 0.05 * jax.random.normal(k[0], (system.n_dof,)), 0.2 * jax.random.normal(k[1], (system.n_dof,))
    closed_chain_jacobians("parallel robot", chain.linkage, chain.closures, chain.baumgarte_time, u, q, qd)


def fin_ray_jacobians(seed=5):
    """The fin-ray finger's closed-chain FD (Baumgarte, eqs. (48)–(51)) at a random, inconsistent state, its slider
    driven by a force (the paper's Jacobian of FD; its prescribed run needs the index-3 form instead)."""
    linkage, closures = scenarios.fin_ray_linkage()
    k = jax.random.split(jax.random.PRNGKey(seed), 2)
    q, qd = 0.05 * jax.random.normal(k[0], (linkage.nv,)), 0.2 * jax.random.normal(k[1], (linkage.nv,))
    closed_chain_jacobians("fin-ray finger", linkage, closures, 0.01, jnp.full(linkage.n_inputs, 0.1), q, qd)


def fin_ray_prescribed_jacobians(seed=5):
    """The paper's own fin-ray Jacobian: ∂q̈/∂(q, q̇) of the finger with its slider prescribed (the Baumgarte form with
    the prescribed acceleration as a further row of the bordered solve, ``sim.linkage_system(..., prescribed=...)``),
    at a random, inconsistent state mid-stroke."""
    system, inputs = scenarios.fin_ray()
    k = jax.random.split(jax.random.PRNGKey(seed), 2)
    q, qd = 0.05 * jax.random.normal(k[0], (system.n_dof,)), 0.2 * jax.random.normal(k[1], (system.n_dof,))
    u = inputs(0.5)
    fd = lambda q, qd: system.forward_dynamics(system.params, q, qd, u)
    jacobian_table("fin-ray finger, slider prescribed, FD at a random state", fd, None, q, qd)


def closed_chain_jacobians(name, linkage, closures, T, u, q, qd):
    """∂q̈/∂(q, q̇) of a closed chain's Baumgarte forward dynamics: the rules against forward differences and autodiff
    of the bordered system (48) built from rule-free public functions."""

    def plain(q, qd):  # the bordered system (48) from rule-free public functions
        A = lk.closure_jacobian(linkage, closures, q)
        rhs = (
            -lk.closure_bias(linkage, closures, q, qd) - 2 / T * A @ qd - lk.closure_error(linkage, closures, q) / T**2
        )
        M = lk.mass_matrix(linkage, q)
        bias = lk.inverse_dynamics_autodiff(linkage, q, qd, jnp.zeros_like(qd))
        K = jnp.block([[M, -A.T], [A, jnp.zeros((A.shape[0], A.shape[0]))]])
        top = lk.generalized_forces(linkage, q, qd, u) - bias
        return jnp.linalg.solve(K, jnp.concatenate([top, rhs]))[: linkage.nv]

    fd = lambda q, qd: lk.constrained_forward_dynamics(linkage, closures, q, qd, u, T)[0]
    jacobian_table(f"{name}, closed-chain FD at a random state", fd, plain, q, qd)


def parallel_statics(n, n_fd, seed=0):
    """Statics of the parallel robot under ``n`` random platform wrenches (the paper's ranges), a batch of systems;
    the finite-difference Newton on the first ``n_fd`` of them."""
    system, _ = scenarios.parallel_robot()
    rng = np.random.default_rng(seed)
    w = np.concatenate([rng.uniform(-0.05, 0.05, (n, 3)), rng.uniform(-0.5, 0.5, (n, 3))], axis=1)
    systems = eqx.tree_at(lambda s: s.params.linkage.loads[0].wrench, stack([system] * n), jnp.asarray(w))
    print(f"\n[parallel robot] statics: {n} random wrenches, a batch of systems, from q = 0")
    head = f"{'Newton Jacobian':32s} {'solves':>6s} {'per solve':>10s} {'total':>8s} {'converged':>10s}"
    print(f"{head} {'compile+1st':>12s} {'stable':>7s} {'singular':>9s} {'Newton it. mean/max':>20s} Morse indices")
    rows = (
        ("analytic (rules), chunks of 8", "analytic", 8, n),
        ("analytic (rules), one by one", "analytic", 1, n),
        ("finite differences, one by one", "finite-difference", 1, min(n_fd, n)),
    )
    solutions = []
    for label, jac, chunk, m in rows:
        part = jax.tree.map(lambda x, m=m: x[:m], systems)
        solve = lambda: solve_statics_batch(part, batch_system=True, jacobian=jac, chunk_size=chunk, throw=False)
        c = timed(solve)[1]
        sol, wall, _ = timed(solve)
        ok = np.asarray(sol.converged)
        stable, singular = (int(np.sum(np.asarray(x)[ok])) for x in (sol.stable, sol.singular))
        its = np.asarray(sol.num_steps)
        index, counts = np.unique(np.asarray(sol.morse_index)[ok], return_counts=True)
        print(
            f"{label:32s} {m:6d} {fmt_time(wall / m):>10s} {wall:7.2f}s {int(ok.sum()):6d}/{m} {c:11.1f}s "
            f"{stable:7d} {singular:9d} {its.mean():13.1f} / {its.max()}   "
            + ", ".join(f"{k}: {c}" for k, c in zip(index, counts)),
            flush=True,
        )
        solutions.append(sol)
    # the paper's sign of multistability: the same load solved by two Newton variants ends on different equilibria
    # (its Fig. 14b, c); here the analytic and the finite-difference continuation, on the loads both solved
    analytic, fd = (jax.tree.map(lambda x: np.asarray(x)[: min(n_fd, n)], sol) for sol in solutions[1:])
    both = analytic.converged & fd.converged
    apart = both & (np.max(np.abs(analytic.q - fd.q), axis=1) > 1e-6)
    print(
        f"  multiple equilibria: {int(apart.sum())} of {int(both.sum())} loads end on different equilibria with "
        f"analytic and finite-difference Newton ({int((apart & analytic.stable & fd.stable).sum())} with both stable)"
    )


#: evaluations per program of the "in a compiled loop" rows of :func:`jacobian_table`
LOOPED = 20


def jacobian_table(title, fd, plain, q, qd):
    """∂FD/∂(q, q̇) of ``fd`` (the rules) against forward differences (vectorised and column by column) and autodiff of
    ``plain`` (if given), each a program of its own; then the rules and the column loop again, :data:`LOOPED` times
    inside one program each (:func:`_timing.in_a_loop`): per evaluation without the fixed cost of a launch, as in a
    solver's loop. Ratios are to the analytic row of the same kind."""
    cases = {
        "analytic (custom_jvp)": lambda q, qd: jax.jacfwd(fd, argnums=(0, 1))(q, qd),
        "finite differences (ε=1e-6)": lambda q, qd: jax.jacfwd(finite_difference(fd), argnums=(0, 1))(q, qd),
        "FD column by column": lambda q, qd: jacobian_by_columns(fd, q, qd),
    }
    if plain is not None:
        cases["autodiff through the recursion"] = lambda q, qd: jax.jacfwd(plain, argnums=(0, 1))(q, qd)
    n_launched = len(cases)
    cases["analytic, in a compiled loop"] = in_a_loop(cases["analytic (custom_jvp)"], LOOPED)
    cases["FD column by column, in a loop"] = in_a_loop(cases["FD column by column"], LOOPED)
    tms = time_group([(f, (q, qd)) for f in cases.values()], repeats=7)
    for tm in tms[n_launched:]:
        tm.samples = [s / LOOPED for s in tm.samples]
    ref = tms[0].out
    print(f"\n[{title}] Jacobians ({q.shape[0]} coordinates)")
    print(f"{'method':32s} {'time':>10s} {'ratio':>7s} {'rel err dq':>11s} {'rel err dqd':>12s} {'compile':>8s}")
    for k, ((label, _), tm) in enumerate(zip(cases.items(), tms)):
        base = tms[0 if k < n_launched else n_launched]
        print(
            f"{label:32s} {fmt_time(tm.median_s):>10s} {tm.median_s / base.median_s:7.1f} "
            f"{_rel(tm.out[0], ref[0]):11.1e} {_rel(tm.out[1], ref[1]):12.1e} {tm.compile_s:7.1f}s"
        )


#: the rows of :func:`simulation_table` (``--solvers``)
SIMULATION_ROWS = (
    "kvaerno5",
    "kvaerno5-fd",
    "newmark",
    "newmark-index3",
    "generalized-alpha-index3",
)


def simulation_table(
    title, system, inputs, t_final, newmark_dt, solvers=("kvaerno5", "kvaerno5-fd", "newmark"), only=None
):
    """``t_final`` of dynamics with each of ``solvers`` (those in ``only``, if given); closed chains also report the
    largest ‖e‖ and ‖Aq̇‖."""
    closed = system.constraint is not None
    print(f"\n[{title}] {t_final} s dynamics (wall and process CPU after compilation; compile = first call)")
    drift = f" {'max ‖e‖':>9s} {'max ‖Aq̇‖':>9s}" if closed else ""
    print(f"{'method':40s} {'wall':>8s} {'CPU':>8s} {'steps':>7s} {'max tip mismatch':>17s} {'compile':>8s}{drift}")
    h = f"h = {1e3 * newmark_dt:g} ms"
    runs = {
        "kvaerno5": ("Kvaerno5 + analytic Jacobian", {}),
        "kvaerno5-fd": ("Kvaerno5 + finite-diff. Jacobian", {"jacobian": "finite-difference"}),
        "newmark": (f"Newmark-β {h} (analytic)", {"solver": "newmark", "dt": newmark_dt}),
        "newmark-index3": (f"Newmark-β index-3 {h} (analytic)", {"solver": "newmark-index3", "dt": newmark_dt}),
        "generalized-alpha-index3": (
            f"generalised-α index-3 ρ∞ = 0.9 {h}",
            {"solver": "generalized-alpha-index3", "dt": newmark_dt, "rho_inf": 0.9},
        ),
    }
    ref = None
    for solver in (s for s in solvers if only is None or s in only):
        label, kw = runs[solver]
        run = lambda t, kw=kw: simulate(system, inputs, t_final=t, **kw)
        c = timed(lambda: run(2 * newmark_dt))[1]
        tr, wall, cpu = timed(lambda: run(t_final))
        ref = tr if ref is None else ref
        mism = float(jnp.linalg.norm(tr.tip - ref.tip, axis=-1).max())
        if closed:
            tr = constraint_drift(system, tr)
            e, v = (float(np.max(tr.monitors[k])) for k in ("closure_error", "closure_velocity_error"))
            drift = f" {e:9.1e} {v:9.1e}"
        line = f"{label:40s} {wall:7.2f}s {cpu:7.2f}s {int(tr.num_steps):7d} {mism:16.1e}m {c:7.1f}s{drift}"
        print(line, flush=True)
        if title.startswith("flagellated"):
            swim = scenarios.swimming(system.params, tr.q, tr.t)
            print(
                f"{'':40s} body moved {swim['distance']:.4f} m, turned {swim['body_rotation']:.1e} rad; shafts "
                f"{swim['turns_front']:+.2f}/{swim['turns_rear']:+.2f} turns"
            )


def statics_table(system, n, seed=0):
    control = system.params
    angles = np.random.default_rng(seed).uniform(-np.pi / 4, np.pi / 4, size=(n, len(control.known)))
    u = jnp.concatenate([jnp.asarray(angles), jnp.zeros((n, 2 * len(control.known) + len(control.known_inputs)))], 1)
    print(f"\n[serial robot] statics: {n} random joint-angle sets in [−π/4, π/4], batched (vmap), from q = 0")
    head = f"{'Newton Jacobian':32s} {'per solve':>10s} {'CPU/solve':>10s} {'total':>8s} {'converged':>10s}"
    print(f"{head} {'compile+1st':>12s} {'Newton it. mean/max':>20s}")
    rows = [
        ("analytic, one vmap", "analytic", None),
        ("analytic, chunks of 8", "analytic", 8),
        ("analytic, one by one", "analytic", 1),
        ("finite differences, one by one", "finite-difference", 1),
    ]
    for label, jac, chunk in rows:
        solve = lambda: solve_statics_batch(system, u, jacobian=jac, chunk_size=chunk, throw=False)
        c = timed(solve)[1]
        sol, wall, cpu = timed(solve)
        its = np.asarray(sol.num_steps)
        print(
            f"{label:32s} {fmt_time(wall / n):>10s} {fmt_time(cpu / n):>10s} {wall:7.2f}s "
            f"{int(sol.converged.sum()):6d}/{n} {c:11.1f}s {its.mean():13.1f} / {its.max()}",
            flush=True,
        )


def rigid_table(robot, batch, seed=0):
    if robot == "random":
        model = rigid.auto_tree(13, bf=1.5, floating_base=True, seed=seed)
    else:
        model = rigid.example_robot(robot)
    linkage = lk.Linkage.from_rigid(model)
    k = jax.random.split(jax.random.PRNGKey(seed), 3)
    q = jax.vmap(lambda key: rigid.random_configuration(model, key))(jax.random.split(k[0], batch))
    v, a = (jax.random.normal(key, (batch, model.nv)) for key in k[1:])
    # (label, function, index of the jaxse3.rigid row it is compared with); the public linkage functions run
    # jaxse3.rigid on a rigid-only linkage, the tree recursions are what the rigid links of a hybrid linkage run
    cases = [
        ("rigid.rnea", lambda q, v, a: rigid.rnea(model, q, v, a), 0),
        ("linkage.inverse_dynamics", lambda q, v, a: lk.inverse_dynamics(linkage, q, v, a), 0),
        ("  tree recursion (plain)", lambda q, v, a: lk.inverse_dynamics_autodiff(linkage, q, v, a), 0),
        ("rigid.rnea_derivatives", lambda q, v, a: rigid.rnea_derivatives(model, q, v, a)[:2], 3),
        ("linkage ID derivatives", lambda q, v, a: lk.inverse_dynamics_derivatives(linkage, q, v, a)[1:3], 3),
        ("  tree recursion (derivs)", lambda q, v, a: lk.tree_derivatives(linkage, q, v, a)[1:3], 3),
    ]
    tms = time_group([(jax.vmap(f), (q, v, a)) for _, f, _ in cases], repeats=7)
    print(f"\n[rigid-only linkage vs jaxse3.rigid] {robot} ({model.nv} DoF), batch {batch} random states (vmap)")
    print(f"{'case':28s} {'per state':>10s} {'linkage/rigid':>14s} {'max |Δ|':>9s} {'compile':>8s}")
    for i, (label, _, b) in enumerate(cases):
        base = tms[b]
        delta = max(float(jnp.abs(x - y).max()) for x, y in zip(jax.tree.leaves(tms[i].out), jax.tree.leaves(base.out)))
        print(
            f"{label:28s} {fmt_time(tms[i].median_s / batch):>10s} {tms[i].median_s / base.median_s:14.2f} "
            f"{delta:9.1e} {tms[i].compile_s:7.1f}s"
        )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--t-final", type=float, default=10.0)
    p.add_argument("--n-statics", type=int, default=1000)
    p.add_argument("--n-statics-fd", type=int, default=100, help="parallel robot: solves with finite differences")
    p.add_argument("--batch", type=int, default=1000, help="states of the rigid comparison")
    p.add_argument("--robots", nargs="*", default=None, help="robots of the rigid comparison (default hyq ur5)")
    p.add_argument(
        "--skip",
        nargs="*",
        default=[],
        choices=["serial", "flagellated", "parallel", "fin-ray", "jacobians", "simulations", "statics", "rigid"],
        help="robots or tables to leave out",
    )
    p.add_argument("--solvers", nargs="*", default=None, choices=SIMULATION_ROWS, help="rows of the dynamics tables")
    args = p.parse_args(argv)
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}, float64")
    system, inputs = scenarios.serial_robot()
    if "serial" not in args.skip and "jacobians" not in args.skip:
        serial_jacobians(system, inputs)
    if "serial" not in args.skip and "simulations" not in args.skip:
        simulation_table("serial robot", system, inputs, args.t_final, 1e-3, only=args.solvers)
    if "flagellated" not in args.skip and "jacobians" not in args.skip:
        flagellated_jacobians()
    if "flagellated" not in args.skip and "simulations" not in args.skip:
        flagellated, torques = scenarios.flagellated_robot()
        simulation_table("flagellated robot", flagellated, torques, args.t_final, 1e-2, only=args.solvers)
    if "serial" not in args.skip and "statics" not in args.skip:
        statics_table(system, args.n_statics)
    if "parallel" not in args.skip and "jacobians" not in args.skip:
        parallel_jacobians()
    if "parallel" not in args.skip and "simulations" not in args.skip:
        solvers = ("kvaerno5", "kvaerno5-fd", "newmark", "newmark-index3", "generalized-alpha-index3")
        simulation_table("parallel robot", *scenarios.parallel_robot(), args.t_final, 1e-2, solvers, args.solvers)
    if "parallel" not in args.skip and "statics" not in args.skip:
        parallel_statics(args.n_statics, args.n_statics_fd)
    if "fin-ray" not in args.skip and "jacobians" not in args.skip:
        fin_ray_jacobians()
        fin_ray_prescribed_jacobians()
    if "fin-ray" not in args.skip and "simulations" not in args.skip:
        solvers = ("newmark-index3", "generalized-alpha-index3", "kvaerno5")
        simulation_table("fin-ray finger", *scenarios.fin_ray(), args.t_final, 1e-2, solvers, args.solvers)
    if "rigid" not in args.skip:
        robots = args.robots
        if robots is None:
            try:
                import urdf_parser_py  # noqa: F401

                robots = ["hyq", "ur5"]
            except ImportError:
                robots = ["random"]
        for robot in robots:
            rigid_table(robot, args.batch)


if __name__ == "__main__":
    main()
