"""Trajectory optimisation building blocks, side by side in one run: the gradient of a simulation against central
differences.

1. ``gradients``: the CDM (seed 003 §4.5) from rest for ``--t-final`` s (default 1) under piecewise-linear tensions,
   ``--knots`` knots per cable (default 4, so 20 parameters), loss ½‖tip(T) − target‖². The gradient with respect to
   the knots by one reverse pass (``adjoint="checkpoint"``), by forward mode (``adjoint="forward"``, one tangent per
   knot) and by central differences (2 × 20 + 1 = 41 simulations, the value included), for Newmark-β (h = 2 ms,
   Newton tolerance 1e−14 so that the differenced runs are the exact step map) and Kvaerno5 (rtol 1e−10, atol 1e−12).
   Reported: compile time, median time per gradient (interleaved with one simulation), the ratio to central
   differences and the agreement (max relative difference of the gradients).

2. ``arm``: the arm-reaching problem of Crocoddyl's benchmark (:func:`jaxse3.optim.scenarios.arm_reach`: Talos
   arm, 7 DoF, T = 100, dt = 0.01) solved by ``solve_ddp`` — full second-order DDP and Gauss–Newton iLQR, without
   and with the URDF's effort limits — and, when ``crocoddyl`` is importable, by Crocoddyl's FDDP, DDP, Box-FDDP and
   Box-DDP on the same problem (its solvers from x0 at every knot, ours from the rollout of the same controls,
   gravity compensation; both stop at Σ‖Q_u‖² < 1e−9). Reported: iterations, final cost, the iteration at which the
   cost first falls to Crocoddyl FDDP's final cost, time per solve (median, compile separate) and per iteration.
   Crocoddyl 3.2 needs pin 4.0.0 (3.2.1 is ABI-incompatible with pin 4.1): ``pip install crocoddyl==3.2.1
   pin==4.0.0`` in an environment of its own, with jaxse3 installed.

3. ``batch``: for each B of ``--batch`` (default 64), B targets around the benchmark's solved by one ``jax.vmap`` of
   DDP, on the default JAX device (a GPU where there is one), in problems per second against Crocoddyl FDDP's one
   problem at a time (measured in the same run when crocoddyl is importable, else its recorded time).

4. ``cdm``: CDM reaching by DDP against iLQR (:func:`jaxse3.optim.scenarios.cdm_reach_steps`): iterations, final
   cost, the iteration at which each comes within 1 % of the lower final cost, time per solve (one solve: tens of
   seconds), compile time.

5. ``cdm_batch``: CDM reaching for ``--cdm-batch`` (default 64) targets by one ``jax.vmap`` of iLQR, on the default
   JAX device.

``--urdf PATH`` loads the Talos arm from ``talos_left_arm.urdf`` where example-robot-data is not installed.

    python benchmarks/optim.py [--sections gradients arm batch cdm cdm_batch] [--t-final 1] [--knots 4]
        [--solvers newmark kvaerno5] [--repeats 3] [--batch 64 1024] [--cdm-batch 64] [--urdf PATH] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _timing import fmt_time, time_group  # noqa: E402

from jaxse3 import rigid  # noqa: E402
from jaxse3.optim import scenarios, solve_ddp  # noqa: E402
from jaxse3.sim import SampledInput, simulate  # noqa: E402
from jaxse3.sim.scenarios import cdm_system  # noqa: E402

SETTINGS = {
    "newmark": dict(solver="newmark", dt=2e-3, newton_tol=1e-14),
    "kvaerno5": dict(solver="kvaerno5", rtol=1e-10, atol=1e-12),
}
TARGET = jnp.array([0.05, 0.05, -0.48])


def cdm_loss(t_final: float, n_knots: int, settings: dict, adjoint: str = "checkpoint", checkpoints=None):
    """knots (n_knots, 5) -> ½‖tip(T) − target‖² of the CDM from rest."""
    system = cdm_system()
    ts = jnp.linspace(0.0, t_final, n_knots)

    def loss(knots):
        u = SampledInput(ts, knots, kind="linear")
        tr = simulate(system, u, t_final=t_final, n_save=11, adjoint=adjoint, checkpoints=checkpoints, **settings)
        return 0.5 * jnp.sum((tr.tip[-1] - TARGET) ** 2)

    return loss


def central_differences(loss, x: jax.Array, h: float) -> np.ndarray:
    """The gradient by central differences: 2 n evaluations of the compiled ``loss``."""
    flat = np.asarray(x).ravel()
    g = np.empty_like(flat)
    for i in range(flat.size):
        e = np.zeros_like(flat)
        e[i] = h
        g[i] = (
            float(loss(jnp.asarray((flat + e).reshape(x.shape))))
            - float(loss(jnp.asarray((flat - e).reshape(x.shape))))
        ) / (2 * h)
    return g.reshape(x.shape)


def gradients(args) -> list[str]:
    rng = np.random.default_rng(0)
    knots = jnp.asarray(rng.uniform(0.0, 4.0, size=(args.knots, 5)))
    n = knots.size
    rows = []
    for name in args.solvers:
        settings = SETTINGS[name]
        loss = cdm_loss(args.t_final, args.knots, settings, checkpoints=args.checkpoints)
        forward_loss = cdm_loss(args.t_final, args.knots, settings, adjoint="forward")
        grad, jac_fwd = jax.grad(loss), jax.jacfwd(forward_loss)
        t_loss, t_grad, t_fwd = time_group([(loss, (knots,)), (grad, (knots,)), (jac_fwd, (knots,))], args.repeats)
        loss_c = jax.jit(loss)
        loss_c(knots)
        g_fd = central_differences(loss_c, knots, 1e-4)
        g_rev, g_fwd = np.asarray(t_grad.out), np.asarray(t_fwd.out)
        scale = np.abs(g_fd).max()
        fd_time = (2 * n + 1) * t_loss.median_s
        reverse = f"reverse ({args.checkpoints or 'default'} checkpoints)"
        for label, t, g in ((reverse, t_grad, g_rev), ("forward mode", t_fwd, g_fwd)):
            rows.append(
                f"| {name} | {label} | {fmt_time(t.median_s)} | {t.compile_s:.1f} s | {fmt_time(fd_time)} | "
                f"{fd_time / t.median_s:.1f}× | {np.abs(g - g_fd).max() / scale:.1e} |"
            )
        rows.append(f"| {name} | one simulation | {fmt_time(t_loss.median_s)} | {t_loss.compile_s:.1f} s | | | |")
        print("\n".join(rows[-3:]), flush=True)
    header = [
        f"CDM, {args.t_final:g} s from rest, {n} tension knots ({args.knots} per cable, piecewise linear)",
        "",
        f"| solver | gradient by | time | compile | central differences ({2 * n + 1} runs) | speed-up "
        "| vs central differences |",
        "|---|---|---|---|---|---|---|",
    ]
    return header + rows


def _first_below(history: np.ndarray, level: float) -> str:
    below = np.flatnonzero(np.asarray(history) <= level * (1 + 1e-9))
    return str(int(below[0])) if below.size else "never"


def _crocoddyl_rows(repeats: int) -> tuple[list[str], float, float]:
    """Crocoddyl's solvers on the same problem: table rows, FDDP's final cost and time per solve."""
    import crocoddyl
    import example_robot_data
    import pinocchio

    arm = scenarios.TALOS_ARM
    robot = example_robot_data.load(arm["robot"]).model
    state = crocoddyl.StateMultibody(robot)
    actuation = crocoddyl.ActuationModelFull(state)
    q0 = np.array(arm["q0"])
    x0 = np.concatenate([q0, np.zeros(robot.nv)])
    w_goal, w_x, w_u, w_terminal = scenarios.ARM_REACH_WEIGHTS
    goal = crocoddyl.CostModelResidual(
        state,
        crocoddyl.ResidualModelFramePlacement(
            state, robot.getFrameId(arm["frame"]), pinocchio.SE3(np.eye(3), np.array([0.0, 0.0, 0.4]))
        ),
    )
    running, terminal = crocoddyl.CostModelSum(state), crocoddyl.CostModelSum(state)
    running.addCost("goal", goal, w_goal)
    running.addCost("xReg", crocoddyl.CostModelResidual(state, crocoddyl.ResidualModelState(state, x0)), w_x)
    running.addCost("uReg", crocoddyl.CostModelResidual(state, crocoddyl.ResidualModelControl(state)), w_u)
    terminal.addCost("goal", goal, w_terminal)
    models = []
    for costs, dt in ((running, 0.01), (terminal, 0.0)):
        dam = crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, costs)
        # example-robot-data's loader set robot.armature = 0.1 from the SRDF; the benchmark adds 0.1 more
        dam.armature = np.array(arm["armature"]) - robot.armature
        models.append(crocoddyl.IntegratedActionModelEuler(dam, dt))
    problem = crocoddyl.ShootingProblem(x0, [models[0]] * 100, models[1])
    rows, fddp = [], None
    for name in ("SolverFDDP", "SolverDDP", "SolverBoxFDDP", "SolverBoxDDP"):
        solver = getattr(crocoddyl, name)(problem)
        times = []
        for _ in range(repeats):
            xs, us = [x0] * 101, problem.quasiStatic([x0] * 100)
            t0 = time.perf_counter()
            solver.solve(xs, us, 200)
            times.append(time.perf_counter() - t0)
        t = float(np.median(times))
        logger = crocoddyl.CallbackLogger()  # one more solve, untimed, for the cost after each iteration
        solver.setCallbacks([logger])
        solver.solve([x0] * 101, problem.quasiStatic([x0] * 100), 200)
        costs = logger.costs
        if fddp is None:
            fddp = (solver.cost, t)
        bounds = "effort limits" if "Box" in name else "none"
        rows.append(
            f"| Crocoddyl {name[6:]} | {bounds} | {solver.iter} | {solver.cost:.4f} | "
            f"{_first_below(costs, fddp[0])} | {fmt_time(t)} | {fmt_time(t / max(solver.iter, 1))} | — |"
        )
        print(rows[-1], flush=True)
    return rows, *fddp


# Crocoddyl 3.2.1 FDDP on the arm problem (final cost; time per solve on the 2-core CPU machine of
# benchmarks/README.md), used where crocoddyl is not importable
CROCODDYL_FDDP = {"cost": 23.846999563786078, "time_s": 71.8e-3, "measured": "2026-11-26, 2-core CPU"}


def _model(args):
    """The benchmark's Talos arm: from example-robot-data, or from ``--urdf`` where that package is missing."""
    if args.urdf is None:
        return scenarios.talos_arm()
    return rigid.from_urdf(args.urdf, floating_base=False).with_armature(scenarios.TALOS_ARM["armature"])


def arm(args) -> list[str]:
    try:
        croc_rows, croc_cost, _ = _crocoddyl_rows(args.repeats)
    except ImportError as e:
        print(f"crocoddyl not available ({e}): jaxse3 rows only", flush=True)
        croc_rows, croc_cost = [], CROCODDYL_FDDP["cost"]
    problem, us0 = scenarios.arm_reach(model=_model(args))
    limit = np.array(scenarios.TALOS_ARM["effort_limit"])
    rows = []
    for method in ("ddp", "ilqr"):
        for bounds in ("none", "effort limits"):
            box = dict(lower=-limit, upper=limit) if bounds != "none" else {}

            def solve(us, method=method, box=box):
                return solve_ddp(problem, us, method=method, max_iters=200, **box)

            (t,) = time_group([(solve, (us0,))], args.repeats, min_sample_s=0.0)
            sol = t.out
            iters = int(sol.iterations)
            rows.append(
                f"| jaxse3 {'DDP' if method == 'ddp' else 'iLQR'} | {bounds} | {iters} | {float(sol.cost):.4f} | "
                f"{_first_below(sol.cost_history, croc_cost)} | {fmt_time(t.median_s)} | "
                f"{fmt_time(t.median_s / iters)} | {t.compile_s:.1f} s |"
            )
            print(rows[-1], flush=True)
    header = [
        "Talos arm reaching (Crocoddyl's benchmark problem): T = 100, dt = 0.01, stop at Σ‖Q_u‖² < 1e−9",
        "",
        f"| solver | bounds | iterations | final cost | first ≤ {croc_cost:.3f} at | time per solve | per iteration "
        "| compile |",
        "|---|---|---|---|---|---|---|---|",
    ]
    return header + croc_rows + rows


def batch(args) -> list[str]:
    """One ``jax.vmap`` of DDP over B targets around the benchmark's, for each B of ``--batch``, in problems per
    second against Crocoddyl FDDP solving one problem at a time (measured in this run when crocoddyl is importable,
    else :data:`CROCODDYL_FDDP`)."""
    try:
        croc_time = _crocoddyl_rows(args.repeats)[2]
        croc_note = "measured in this run"
    except ImportError:
        croc_time = CROCODDYL_FDDP["time_s"]
        croc_note = f"measured {CROCODDYL_FDDP['measured']}"
    model = _model(args)
    device = jax.devices()[0]
    rows = [
        f"Arm reaching, B targets p = (0, 0, 0.4) ± 0.1 m (uniform), one `jax.vmap` of DDP on {device.platform} "
        f"({device.device_kind}); Crocoddyl FDDP {fmt_time(croc_time)} per solve ({croc_note})",
        "",
        "| B | time | problems/s | Crocoddyl FDDP problems/s | ratio | converged | iterations (max) | "
        "per problem-iteration | compile |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(rows), flush=True)
    for size in args.batch:
        rng = np.random.default_rng(0)
        targets = jnp.asarray(np.array([0.0, 0.0, 0.4]) + rng.uniform(-0.1, 0.1, size=(size, 3)))

        def solve(targets):
            return jax.vmap(lambda p: solve_ddp(*scenarios.arm_reach(p, model=model), max_iters=200))(targets)

        (t,) = time_group([(solve, (targets,))], max(1, args.repeats // 2), min_sample_s=0.0)
        converged = int(np.sum(np.asarray(t.out.converged)))
        iters = int(np.max(np.asarray(t.out.iterations)))
        rate = size / t.median_s
        rows.append(
            f"| {size} | {fmt_time(t.median_s)} | {rate:.1f} | {1 / croc_time:.1f} | **{rate * croc_time:.2f}×** | "
            f"{converged}/{size} | {iters} | {fmt_time(t.median_s / (size * iters))} | {t.compile_s:.1f} s |"
        )
        print(rows[-1], flush=True)
    return rows


_STOPPED = {0: "converged", 1: "max_iters", 2: "μ > μ_max"}


def cdm(args) -> list[str]:
    """CDM reaching (:func:`jaxse3.optim.scenarios.cdm_reach_steps`: T = 100 implicit Euler steps of 20 ms, tensions
    in [0, 20] N, from zero tensions) by full DDP (the Hessian of V'_x · f through the rod's rules in the backward
    pass) against Gauss–Newton iLQR: iterations, final cost, the iteration at which each first comes within 1 % of
    the lower final cost, wall time of one solve (compile apart)."""
    problem, us0, bounds = scenarios.cdm_reach_steps()
    sols = {}
    for method in ("ddp", "ilqr"):
        t0 = time.perf_counter()
        solve = jax.jit(lambda us, m=method: solve_ddp(problem, us, method=m, max_iters=200, **bounds))
        compiled = solve.lower(us0).compile()
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        sol = jax.block_until_ready(compiled(us0))
        sols[method] = (sol, compile_s, time.perf_counter() - t0)
    best = min(float(s.cost) for s, _, _ in sols.values())
    rows = [
        "CDM reaching (cdm_reach_steps: T = 100 × 20 ms implicit Euler, 0 ≤ u ≤ 20 N, from u = 0), "
        "stop at Σ‖Q_u‖² < 1e−9",
        "",
        "| solver | iterations | final cost | within 1 % of the lower final cost at | stopped | time per solve | "
        "per iteration | compile |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for method, (sol, compile_s, run_s) in sols.items():
        iters = int(sol.iterations)
        rows.append(
            f"| jaxse3 {'DDP' if method == 'ddp' else 'iLQR'} | {iters} | {float(sol.cost):.6f} | "
            f"{_first_below(sol.cost_history, 1.01 * best)} | {_STOPPED[int(sol.status)]} | {fmt_time(run_s)} | "
            f"{fmt_time(run_s / max(iters, 1))} | {compile_s:.1f} s |"
        )
        print(rows[-1], flush=True)
    return rows


def cdm_batch(args) -> list[str]:
    """CDM reaching for B = ``--cdm-batch`` targets around the default one, by one ``jax.vmap`` of iLQR on the default
    JAX device: time, targets per second, convergence, iterations."""
    device = jax.devices()[0]
    rows = [
        f"CDM reaching, B targets (0.1, 0.05, −0.45) ± 0.05 m (uniform), one `jax.vmap` of iLQR on {device.platform} "
        f"({device.device_kind})",
        "",
        "| B | time | targets/s | converged | iterations (max) | compile |",
        "|---|---|---|---|---|---|",
    ]
    print("\n".join(rows), flush=True)
    for size in args.cdm_batch:
        rng = np.random.default_rng(0)
        targets = jnp.asarray(np.array([0.1, 0.05, -0.45]) + rng.uniform(-0.05, 0.05, size=(size, 3)))

        def solve(targets):
            def one(p):
                problem, us0, bounds = scenarios.cdm_reach_steps(p)
                return solve_ddp(problem, us0, method="ilqr", max_iters=100, **bounds)

            return jax.vmap(one)(targets)

        t0 = time.perf_counter()
        compiled = jax.jit(solve).lower(targets).compile()
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        sol = jax.block_until_ready(compiled(targets))
        run_s = time.perf_counter() - t0
        rows.append(
            f"| {size} | {fmt_time(run_s)} | {size / run_s:.2f} | {int(np.sum(np.asarray(sol.converged)))}/{size} | "
            f"{int(np.max(np.asarray(sol.iterations)))} | {compile_s:.1f} s |"
        )
        print(rows[-1], flush=True)
    return rows


SECTIONS = {"gradients": gradients, "arm": arm, "batch": batch, "cdm": cdm, "cdm_batch": cdm_batch}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--t-final", type=float, default=1.0)
    p.add_argument("--knots", type=int, default=4)
    p.add_argument("--solvers", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--checkpoints", type=int, default=None, help="simulate's checkpoints (default: diffrax's choice)")
    p.add_argument("--markdown", default=None)
    p.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=list(SECTIONS))
    p.add_argument("--batch", type=int, nargs="+", default=[64], help="batch sizes of the batch section")
    p.add_argument("--cdm-batch", type=int, nargs="+", default=[64], help="batch sizes of the cdm_batch section")
    p.add_argument("--urdf", default=None, help="talos_left_arm.urdf, where example-robot-data is not installed")
    args = p.parse_args(argv)
    table = "\n\n".join("\n".join(SECTIONS[name](args)) for name in args.sections)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
