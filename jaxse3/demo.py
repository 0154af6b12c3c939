"""The built-in examples behind the ``jaxse3`` command: the demo of the SE(3) core (accuracy against an independent
float64 reference, batched timings), the simulation scenarios (the seed 003 CDM, with and without contact; the hybrid
serial robot) and the trajectory optimisation problems.

Each function prints its report and returns (or writes) its results; :mod:`jaxse3.cli` only parses arguments and
dispatches here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np

from jaxse3 import __version__
from jaxse3._compile import FAST_OPTIONS
from jaxse3.lie import se3

ANGLES = (0.0, 1e-8, 1e-4, 0.1, 1.0, 2.0, 3.0)


def _series_dexp(X: jnp.ndarray, inverse: bool) -> jnp.ndarray:
    """Independent reference: dexp_X = Σ ad_X^i/(i+1)! (seed 000 eq. (18)); dexp⁻¹ as its matrix inverse."""
    A = se3.ad(X)
    out = P = jnp.eye(6, dtype=X.dtype)
    for i in range(1, 45):
        P = P @ A / (i + 1)
        out = out + P
    return jnp.linalg.inv(out) if inverse else out


def _rel(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def _pairs(X, U, S, Z, Q) -> dict[str, tuple[jnp.ndarray, jnp.ndarray]]:
    """(closed form, reference) of every quantity of :func:`accuracy_table` at one point X."""
    out = {
        "exp": (se3.exp(X), jax.scipy.linalg.expm(se3.hat(X))),
        "log": (se3.log(se3.exp(X)), X),
    }
    for inv in (False, True):
        tag = "dexp_inv" if inv else "dexp"
        F = lambda X, inv=inv: _series_dexp(X, inv)
        out[tag] = (getattr(se3, tag)(X), F(X))
        out[f"d_{tag}"] = (getattr(se3, "d_" + tag)(X, U), jax.jvp(F, (X,), (U,))[1])
        d2_ref = jax.jvp(lambda X: jax.jvp(F, (X,), (U,))[1], (X,), (S,))[1]
        out[f"d2_{tag}"] = (getattr(se3, "d2_" + tag)(X, U, S), d2_ref)
        out[f"{tag}_jac"] = (getattr(se3, tag + "_jac")(X, Z), jax.jacfwd(lambda X: F(X) @ Z)(X))
        H_ref = jax.hessian(lambda X: Q @ F(X) @ Z)(X)
        out[f"{tag}_hess"] = (getattr(se3, tag + "_hess")(X, Q, Z), H_ref)
        apply = getattr(se3, tag + "_apply")
        out[f"hessian via custom rules ({tag})"] = (jax.hessian(lambda X: Q @ apply(X, Z))(X), H_ref)
    return out


def accuracy_table(seed: int = 0) -> list[dict]:
    """Max relative Frobenius error per quantity over :data:`ANGLES` (random axes and translations).

    All angles are evaluated by one program (:func:`_pairs` under ``vmap``), compiled in the fast mode (values, not
    speed, matter here; :data:`jaxse3._compile.FAST_OPTIONS`): executed op by op, the series references' Hessians
    took a minute.
    """
    rng = np.random.default_rng(seed)
    points = []
    for phi in ANGLES:
        n = rng.normal(size=3)
        X = np.concatenate([phi * n / np.linalg.norm(n), rng.normal(size=3)])
        points.append([X, *(rng.normal(size=6) for _ in range(4))])  # X, U, S, Z, Q
    args = [jnp.asarray(np.stack(column)) for column in zip(*points)]
    pairs = jax.jit(jax.vmap(_pairs)).lower(*args).compile(FAST_OPTIONS)(*args)
    return [
        {"quantity": k, "max_rel_error": max(_rel(ours[i], ref[i]) for i in range(len(ANGLES)))}
        for k, (ours, ref) in pairs.items()
    ]


def _time(fn: Callable, *args, repeats: int = 5) -> float:
    jax.block_until_ready(fn(*args))
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best.append(time.perf_counter() - t0)
    return float(np.median(best))


def speed_table(batch: int, seed: int = 0) -> list[dict]:
    """Time per element of batched (vmapped, jitted) evaluation, float64, CPU."""
    rng = np.random.default_rng(seed)
    X = jnp.asarray(rng.normal(size=(batch, 6)))
    Z, Q = (jnp.asarray(rng.normal(size=(batch, 6))) for _ in range(2))
    cases = {
        "exp": (jax.jit(se3.exp), (X,)),
        "log": (jax.jit(se3.log), (se3.exp(X),)),
        "dexp_inv_apply": (jax.jit(se3.dexp_inv_apply), (X, Z)),
        "jacfwd(dexp_apply) [custom rule]": (jax.jit(jax.vmap(jax.jacfwd(se3.dexp_apply))), (X, Z)),
        "hessian(Q·dexp_apply) [custom rules]": (
            jax.jit(jax.vmap(jax.hessian(lambda X, Q, Z: Q @ se3.dexp_apply(X, Z)))),
            (X, Q, Z),
        ),
        "dexp_hess [closed form]": (jax.jit(se3.dexp_hess), (X, Q, Z)),
    }
    return [
        {"function": k, "batch": batch, "ns_per_element": 1e9 * _time(f, *a) / batch} for k, (f, a) in cases.items()
    ]


def _print_table(rows: list[dict], title: str) -> None:
    print(f"\n{title}")
    keys = list(rows[0])
    width = [max(len(k), *(len(_fmt(r[k])) for r in rows)) for k in keys]
    print("  ".join(k.ljust(w) for k, w in zip(keys, width)))
    print("  ".join("-" * w for w in width))
    for r in rows:
        print("  ".join(_fmt(r[k]).ljust(w) for k, w in zip(keys, width)))


def _fmt(v) -> str:
    return (
        f"{v:.2e}"
        if isinstance(v, float) and (v < 1e-2 or v > 1e5)
        else (f"{v:.1f}" if isinstance(v, float) else str(v))
    )


def demo(batch: int = 10_000, save: str | None = None) -> dict:
    """Run the demo and return (and optionally save) its results."""
    print(
        f"jaxse3 {__version__} — closed-form SE(3) maps with analytical derivatives (jax {jax.__version__}, "
        f"{jax.default_backend()}, {platform.machine()})"
    )
    print(f"angles φ = {ANGLES} (random axes and translations), float64; reference: defining series + JAX autodiff")
    acc = accuracy_table()
    _print_table(acc, "Accuracy (max relative Frobenius error)")
    spd = speed_table(batch)
    _print_table(spd, f"Speed (jit + vmap, batch {batch})")
    worst = max(r["max_rel_error"] for r in acc)
    ok = worst < 1e-10
    print(f"\nworst relative error {worst:.2e}: {'OK' if ok else 'FAILED'}")
    result = {"version": __version__, "accuracy": acc, "speed": spd, "ok": ok}
    if save:
        with open(save, "w") as fh:
            json.dump(result, fh, indent=2)
        print(f"results written to {save}")
    return result


def _scenario(name: str):
    """(system, inputs, description, file settings, q0) of a built-in simulation example or a model file."""
    from jaxse3.sim import scenarios

    if name.endswith(".toml"):
        system, inputs, settings, q0 = scenarios.from_toml(name)
        linkage = system.params if hasattr(system.params, "links") else system.params.linkage
        kinds = sorted({link.joint for link in linkage.links})
        what = f"the linkage of {name}: {len(linkage.links)} links ({', '.join(kinds)}), {linkage.nv} DoF"
        return system, inputs, what, settings, q0
    if name == "serial-robot":
        system, inputs = scenarios.serial_robot()
        linkage = system.params.linkage
        rod = linkage.links[-1].body
        what = (
            f"the seed 003 hybrid serial robot, 7 prescribed revolute joints and a soft link; {linkage.nv} DoF "
            f"({rod.n_dof} soft), {linkage.n_points} points"
        )
        return system, inputs, what, {}, None
    if name == "flagellated":
        system, inputs = scenarios.flagellated_robot()
        linkage = system.params
        what = (
            f"the seed 003 underwater flagellated robot: a free-floating body, two shafts at "
            f"{scenarios.FLAGELLATED_TORQUES[0]:+g}/{scenarios.FLAGELLATED_TORQUES[1]:+g} N·m, six soft flagella; "
            f"{linkage.nv} DoF, {linkage.n_points} points, in water"
        )
        return system, inputs, what, {}, None
    if name == "parallel-robot":
        system, inputs = scenarios.parallel_robot()
        linkage, closures = system.params.linkage, system.params.closures
        what = (
            f"the seed 003 hybrid parallel robot: three soft pillars, a rigid platform on spherical joints, two loop "
            f"closures ({sum(c.k for c in closures)} rows, Baumgarte); {linkage.nv} DoF, {linkage.n_points} points; "
            f"a constant wrench on the platform from rest"
        )
        return system, inputs, what, {}, None
    if name == "fin-ray":
        system, inputs = scenarios.fin_ray()
        linkage, closures = system.params.linkage, system.params.closures
        what = (
            f"the seed 003 fin-ray finger: 17 soft ABS links, 5 ribs on revolute joints, {len(closures)} loop closures "
            f"({sum(c.k for c in closures)} rows), the slider prescribed ({1e3 * scenarios.FIN_RAY_STROKE:g} mm "
            f"strokes, period {scenarios.FIN_RAY_PERIOD:g} s); {linkage.nv} DoF, {linkage.n_points} points"
        )
        return system, inputs, what, {"solver": "newmark-index3", "dt": 1e-2}, None
    if name == "cdm-contact":
        system, inputs = scenarios.cdm_contact_system(), scenarios.cdm_tensions(2.0)
        what = "the seed 003 CDM inside a cylinder (r = 0.15 m, k_c = 1e5 N/m, p = 1.5)"
    else:
        system, inputs, what = scenarios.cdm_system(), scenarios.cdm_tensions(), "the seed 003 cable-driven manipulator"
    rod = system.params[0]
    return system, inputs, f"{what}; {rod.n_dof} DoF, {rod.n_points} points, {rod.n_tendons} cables", {}, None


def _body_boxes(linkage, q) -> tuple[np.ndarray, np.ndarray] | None:
    """The rigid bodies of ``linkage`` as boxes at the saved configurations ``q`` (n, nq): (poses (n, n_b, 4, 4),
    half extents (n_b, 3)) (:meth:`~jaxse3.linkage.Linkage.inertia_boxes`), or None without massive rigid bodies."""
    from jaxse3 import linkage as lk

    points, placements, halves = linkage.inertia_boxes()
    if not len(points):
        return None
    frames = np.asarray(jax.jit(jax.vmap(lambda x: lk.forward_kinematics(linkage, x)[points]))(q))
    return frames @ placements, halves


#: what the inputs of the built-in examples are, for the animations' input panel
INPUT_LABELS = {
    "cdm": "cable tension [N]",
    "cdm-contact": "cable tension [N]",
    "flagellated": "shaft torque [N·m]",
    "fin-ray": "slider d [m], ḋ [m/s], d̈ [m/s²] (u1–u3)",
    "serial-robot": "joints q [rad], q̇ [rad/s], q̈ [rad/s²] (u1–7, u8–14, u15–21)",
}


#: the floating-point precisions of ``jaxse3 run`` and ``jaxse3 sweep`` (``--dtype``)
PRECISIONS = ("float32", "float64")
#: the models that compute in float32 by default on a GPU or TPU: the CDM rods, whose float32 error budgets are tested
#: (tests/sim/test_float32.py). Linkages stay in float64: rigid bodies and thin rods together make ill-conditioned mass
#: matrices (the flagellated robot's: condition number 5e11; its float32 forward dynamics are off by 1.5 % at its
#: state at 0.2 s), on which an adaptive solver's error estimate collapses the step (Kvaerno5 over 0.2 s: the
#: flagellated robot 7874 steps against 43 in float64, the parallel robot 2578 against 57), and the fin-ray finger's
#: mass matrix spans 15 orders of magnitude.
FLOAT32_MODELS = ("cdm", "cdm-contact")


@contextlib.contextmanager
def precision(dtype: str | None, model: str | None = None) -> Iterator[str]:
    """Compute the block in ``dtype`` (one of :data:`PRECISIONS`) by JAX's x64 switch, restored after the block;
    yields the precision chosen. ``dtype`` None: float32 on a GPU or TPU when ``model`` is one of
    :data:`FLOAT32_MODELS` (there float32 runs several times faster in half the memory: docs/scale.md), float64
    otherwise. Call it after ``jax.distributed.initialize`` (it asks for the default backend)."""
    if dtype is None:
        accelerator = jax.default_backend() != "cpu"
        dtype = "float32" if accelerator and model in FLOAT32_MODELS else "float64"
    if dtype not in PRECISIONS:
        raise ValueError(f"dtype must be one of {PRECISIONS}, got {dtype!r}")
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", dtype == "float64")
    try:
        yield dtype
    finally:
        jax.config.update("jax_enable_x64", previous)


def run_simulation_example(name: str, args: argparse.Namespace, defaults: dict | None = None) -> int:
    """Simulate a built-in scenario or a model file (:func:`_scenario`); print the timing summary (compilation apart
    from the simulation); write ``<name>.npz`` (with units and the run's parameters) and ``<name>.png``; a solver
    failure is reported after them (exit status 1), the samples before it saved. A model file's ``[simulation]``
    settings apply where ``args`` holds the ``defaults`` (flags given explicitly win)."""
    from jaxse3._compile import STATS
    from jaxse3.sim import FIXED_STEP, INDEX3, simulate
    from jaxse3.sim.dynamics import failure_summary

    system, inputs, what, settings, q0 = _scenario(name)
    for key, value in settings.items():
        if defaults is None or getattr(args, key) == defaults.get(key):
            setattr(args, key, value)
    if name.endswith(".toml"):
        name = os.path.splitext(os.path.basename(name))[0]
    if args.solver in INDEX3 and system.constraint is None:
        print(
            f"jaxse3 run {name}: --solver {args.solver} integrates closed chains (loop closures, e.g. "
            f"parallel-robot); {name} has none: use --solver {args.solver.removesuffix('-index3')}",
            file=sys.stderr,
        )
        raise SystemExit(2)
    if not args.solver.startswith("generalized-alpha"):
        if defaults is not None and args.rho_inf != defaults.get("rho_inf"):
            print(f"jaxse3 run {name}: --rho-inf is an option of the generalized-alpha solvers only", file=sys.stderr)
            raise SystemExit(2)
    kw = dict(
        solver=args.solver,
        rtol=args.rtol,
        atol=args.atol,
        dt=args.dt,
        rho_inf=args.rho_inf,
        n_save=args.n_save,
        max_steps=args.max_steps,
    )
    dtype = jnp.result_type(float).name
    print(
        f"jaxse3 run {name}: {what}; {args.t_final:g} s with {args.solver} (analytic Jacobian, {dtype})"
        + (
            f", dt = {args.dt:g} s" + (f", ρ∞ = {args.rho_inf:g}" if args.solver.startswith("generalized") else "")
            if args.solver in FIXED_STEP
            else f", rtol {args.rtol:g}, atol {args.atol:g}"
        ),
        flush=True,
    )
    compiled, seconds, loaded = STATS.compilations, STATS.seconds, STATS.loaded
    t0 = time.perf_counter()
    traj = simulate(system, inputs, t_final=args.t_final, q0=q0, progress=args.progress, throw=False, **kw)
    traj = jax.block_until_ready(traj)
    wall = time.perf_counter() - t0
    compile_s = STATS.seconds - seconds
    sim_s = wall - compile_s
    cache = (
        f"{STATS.loaded - loaded} of {STATS.compilations - compiled} programs from the persistent cache"
        if STATS.compilations > compiled
        else "already compiled in this process"
    )
    print(f"compile: {compile_s:.1f} s ({cache})")
    print(
        f"simulation: {args.t_final:g} s simulated in {sim_s:.2f} s wall ({args.t_final / sim_s:.2f} rod-s per "
        f"wall-s), {int(traj.num_steps)} solver steps"
    )
    tip = np.asarray(traj.tip)
    print(
        f"tip (world, m): start {np.array2string(tip[0], precision=4)}, end {np.array2string(tip[-1], precision=4)}, "
        f"max horizontal excursion {np.max(np.linalg.norm(tip[:, :2], axis=1)):.4f}"
    )
    if name == "flagellated":
        from jaxse3.sim import scenarios

        swim = scenarios.swimming(system.params, traj.q, traj.t)
        print(
            f"swimming: the body moved {swim['distance']:.3f} m along {np.round(swim['direction'], 3)} "
            f"({swim['speed']:.3f} m/s at the end) and turned at most {swim['body_rotation']:.2e} rad while the "
            f"shafts turned {swim['turns_front']:+.2f} and {swim['turns_rear']:+.2f} turns"
        )
    if hasattr(system.params, "closures"):  # a closed chain: how well the motion kept its loops closed
        from jaxse3.sim import constraint_drift

        traj = constraint_drift(system, traj)
        print(
            f"loop closures: max ‖e‖ {float(np.max(traj.monitors['closure_error'])):.2e}, max ‖A q̇‖ "
            f"{float(np.max(traj.monitors['closure_velocity_error'])):.2e} (saved as monitors)"
        )
    npz, png = os.path.join(args.out, f"{name}.npz"), os.path.join(args.out, f"{name}.png")
    params = {"example": name, "t_final": args.t_final, "jaxse3": __version__, **kw, "atol": args.atol, "dtype": dtype}
    traj.save(npz, metadata={"run": params})
    from jaxse3.viz import plot_trajectory

    label = INPUT_LABELS.get(name, "input")
    params = system.params
    linkage = params if hasattr(params, "links") else getattr(params, "linkage", None)
    edges = None if linkage is None else linkage.edges  # a tree draws branch by branch
    boxes = None if linkage is None else _body_boxes(linkage, traj.q)
    plot_trajectory(traj, png, title=f"jaxse3 run {name}", input_label=label, edges=edges, boxes=boxes)
    print(f"wrote {npz} (t, q, qd, u, points, tip, with units and run parameters) and {png}")
    if not traj.ok:  # said last, after what was saved: the samples before the failure
        hint = " (float32: try --dtype float64)" if dtype == "float32" else ""
        print(
            f"jaxse3 run {name}: {failure_summary(traj, args.solver)}{hint}; the samples before it are saved (NaN "
            "after it)",
            file=sys.stderr,
        )
        return 1
    if args.animate:
        from jaxse3.viz import animate_trajectory

        t0 = time.perf_counter()
        movie = os.path.join(args.out, f"{name}.{args.format}")
        animate_trajectory(traj, movie, input_label=label, title=f"jaxse3 run {name}", edges=edges, boxes=boxes)
        print(f"wrote {movie} in {time.perf_counter() - t0:.1f} s")
    return 0


def run_optimisation_example(name: str, args: argparse.Namespace) -> int:
    """Solve a built-in trajectory optimisation problem (``cdm-reach`` by single shooting, DDP or iLQR; ``arm-reach``
    by DDP or iLQR; a model file's reaching problem by single shooting); print the iterations, the time (compilation
    apart) and the result; write ``<name>.npz`` (a :class:`~jaxse3.optim.Solution`: ``u``, ``x``, ``cost_history``,
    ``iterations``, …) and ``<name>.png``."""
    from jaxse3.viz import plot_solution

    if name.endswith(".toml"):
        sol, params, error, label, timing = _solve_model_reach(name, args)
        name = os.path.splitext(os.path.basename(name))[0]
    else:
        solve = _solve_arm_reach if name == "arm-reach" else _solve_cdm_reach
        sol, params, error, label, timing = solve(name, args)
    print(f"{sol.message}")
    print(
        f"{sol.iterations} iterations in {timing}; cost {sol.cost_history[0]:.4g} -> {sol.cost:.4g}; error at the "
        f"end {1e3 * error:.2f} mm"
    )
    npz, png = os.path.join(args.out, f"{name}.npz"), os.path.join(args.out, f"{name}.png")
    sol.save(npz, metadata={"run": {"example": name, **params, "jaxse3": __version__}})
    axis = {"T": "cable tension [N]", "τ": "joint torque [N·m]"}.get(label, "input")
    plot_solution(sol, png, target=args.target, title=f"jaxse3 optimize {name}", input_label=label, input_axis=axis)
    print(f"wrote {npz} (values, t, u, x, tip, cost_history, iterations, …) and {png}")
    return 0


def _shooting(problem, args: argparse.Namespace, initial=None):
    """``solve_shooting`` with the CLI's options from ``initial`` knots (default zero): (the
    :class:`~jaxse3.optim.Solution`, the distance of its last tip to ``args.target``, a timing line, the run's
    parameters)."""
    from jaxse3.optim import solve_shooting

    sol = solve_shooting(problem, initial, max_iters=args.max_iters, gtol=args.gtol, progress=args.progress)
    error = float(np.linalg.norm(sol.tip[-1] - np.asarray(args.target)))
    first, wall = sol.info["first_gradient_s"], sol.info["wall_s"]
    timing = f"{wall:.1f} s (the first gradient, compilation included, {first:.1f} s)"
    params = {"target": list(args.target), "t_final": args.t_final, "knots": args.knots, "method": "shooting"}
    return sol, error, timing, params


def _solve_cdm_reach(name: str, args: argparse.Namespace):
    from jaxse3.optim import scenarios

    if args.method != "shooting":
        return _solve_cdm_reach_steps(name, args)
    problem = scenarios.cdm_reach(args.target, t_final=args.t_final, n_knots=args.knots)
    print(
        f"jaxse3 optimize {name}: the seed 003 CDM from rest, tip to {tuple(args.target)} m at t = {args.t_final:g} s; "
        f"{args.knots} tension knots per cable in [0, {float(problem.upper[0]):g}] N; single shooting, L-BFGS, "
        f"gradients through Newmark-β (2 ms)",
        flush=True,
    )
    sol, error, timing, params = _shooting(problem, args)
    return sol, params, error, "T", timing


def _solve_model_reach(path: str, args: argparse.Namespace):
    """A model file's reaching problem (:func:`jaxse3.optim.scenarios.reach`): its tip from rest at the file's q0 to
    ``args.target``; efforts within ±``args.max_input``, tendon tensions within [0, ``args.max_input``]; from the
    file's constant inputs (held at every knot)."""
    from jaxse3 import rod as rods
    from jaxse3.optim import scenarios as problems
    from jaxse3.sim import scenarios, system as systems

    name = os.path.splitext(os.path.basename(path))[0]
    system, inputs, _, q0 = scenarios.from_toml(path)
    if systems.joint_control(system) is not None:
        print(
            f"jaxse3 optimize {name}: the model's prescribed joints follow given trajectories; remove them from "
            "[simulation] prescribed to optimise their efforts",
            file=sys.stderr,
        )
        raise SystemExit(2)
    if system.n_inputs == 0:
        print(f"jaxse3 optimize {name}: the model has no inputs (no actuated joints) to optimise", file=sys.stderr)
        raise SystemExit(2)
    linkage = system.params.linkage if isinstance(system.params, systems.ClosedChain) else system.params
    lower = np.full(system.n_inputs, -args.max_input)
    for i, link in enumerate(linkage.links):
        if isinstance(link.body, rods.Rod):  # tendon tensions pull only
            lower[linkage.u_slice(i)] = 0.0
    problem = problems.reach(
        system, args.target, args.t_final, lower=lower, upper=args.max_input, q0=q0, n_knots=args.knots
    )
    print(
        f"jaxse3 optimize {name}: {linkage.nv} DoF, {system.n_inputs} inputs, tip from rest to "
        f"{tuple(args.target)} m at t = {args.t_final:g} s; {args.knots} knots per input within ±{args.max_input:g} "
        "(tensions ≥ 0); single shooting, L-BFGS, gradients through Newmark-β (2 ms)",
        flush=True,
    )
    sol, error, timing, params = _shooting(problem, args, jnp.broadcast_to(inputs, (args.knots, system.n_inputs)))
    return sol, {**params, "model": os.path.abspath(path), "max_input": args.max_input}, error, "u", timing


def _ddp(problem, us0, args: argparse.Namespace, bounds: dict, dt: float, point: Callable):
    """``solve_ddp`` by ``args.method`` compiled, then run, its iteration log printed: (the
    :class:`~jaxse3.optim.Solution` with ``point(x)`` as its tip, the distance of the last point to ``args.target``, a
    timing line)."""
    from jaxse3.optim import solve_ddp

    solve = jax.jit(lambda us: solve_ddp(problem, us, method=args.method, max_iters=args.max_iters, **bounds))
    t0 = time.perf_counter()
    compiled = solve.lower(us0).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = jax.block_until_ready(compiled(us0))
    wall = time.perf_counter() - t0
    print(result.log())
    tip = jax.vmap(point)(result.xs)
    sol = result.to_solution(dt, tip, {"wall_s": wall, "compile_s": compile_s, "method": args.method})
    error = float(np.linalg.norm(np.asarray(tip[-1]) - np.asarray(args.target)))
    return sol, error, f"{wall:.2f} s (compilation apart: {compile_s:.1f} s)"


def _solve_cdm_reach_steps(name: str, args: argparse.Namespace):
    from jaxse3.optim import scenarios

    dt = 0.02
    problem, us0, bounds = scenarios.cdm_reach_steps(args.target, t_final=args.t_final, dt=dt)
    print(
        f"jaxse3 optimize {name}: the seed 003 CDM from rest, tip to {tuple(args.target)} m at t = {args.t_final:g} s; "
        f"tensions in [{bounds['lower']:g}, {bounds['upper']:g}] N held over {problem.horizon} implicit Euler steps "
        f"of {1e3 * dt:g} ms; {args.method.upper()} (box constraints) from zero tensions",
        flush=True,
    )
    system = scenarios.cdm_system()
    sol, error, timing = _ddp(problem, us0, args, bounds, dt, lambda x: system.tip(x[: system.n_dof]))
    params = {"target": list(args.target), "t_final": args.t_final, "method": args.method, "dt": dt}
    return sol, params, error, "T", timing


def _solve_arm_reach(name: str, args: argparse.Namespace):
    from jaxse3 import rigid
    from jaxse3.optim import scenarios

    problem, us0 = scenarios.arm_reach(args.target)
    arm = scenarios.TALOS_ARM
    limit = np.asarray(arm["effort_limit"]) if args.effort_limits else None
    bounds = {} if limit is None else {"lower": -limit, "upper": limit}
    print(
        f"jaxse3 optimize {name}: Crocoddyl's arm-reaching benchmark, the Talos arm's {arm['frame']} to "
        f"{tuple(args.target)} m (R = I) in 100 steps of 10 ms from q0 at rest; {args.method.upper()}"
        f"{' with the URDF effort limits' if args.effort_limits else ''}, from gravity compensation",
        flush=True,
    )
    model = scenarios.talos_arm()
    body = model.names.index(arm["frame"])
    point = lambda x: rigid.forward_kinematics(model, x[: model.nq])[body, :3, 3]
    sol, error, timing = _ddp(problem, us0, args, bounds, 0.01, point)
    params = {"target": list(args.target), "method": args.method, "effort_limits": bool(args.effort_limits)}
    return sol, params, error, "τ", timing


def run_sweep_file(path: str, args: argparse.Namespace) -> int:
    """Run a sweep file (:mod:`jaxse3.sim.sweep`) into ``args.out`` (``--resume``: continue it) in the precision
    ``args.dtype`` (:func:`precision`), under ``jax.distributed`` when asked (``--coordinator``/``--num-processes``/
    ``--process-id`` or ``--distributed``); print how many members succeeded and why the others failed. Exit status
    1 when any member failed."""
    if args.distributed:
        jax.distributed.initialize()
    elif args.coordinator is not None:
        jax.distributed.initialize(args.coordinator, num_processes=args.num_processes, process_id=args.process_id)
    from jaxse3.sim.sweep import read_sweep, run_sweep

    try:
        sweep = read_sweep(path)
        start = time.perf_counter()
        with precision(args.dtype, sweep.model):
            result = run_sweep(sweep, args.out, resume=args.resume, progress=args.progress)
    except ValueError as e:
        print(f"jaxse3 sweep: {e}", file=sys.stderr)
        return 2
    ok = result.ok
    where = f"process {jax.process_index()} of {jax.process_count()}, " if jax.process_count() > 1 else ""
    print(
        f"{sweep.name}: {int(ok.sum())} of {len(ok)} members succeeded ({where}{time.perf_counter() - start:.1f} s, "
        f"{sweep.kind}, parameters {', '.join(sweep.names)})"
    )
    reasons: dict[str, int] = {}
    for reason in result.reasons:
        if reason:
            reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in reasons.items():
        print(f"  {count} failed: {reason}")
    if jax.process_index() == 0:
        print(f"wrote {os.path.join(args.out, 'results.npz')} (load it with jaxse3.sim.load_sweep({args.out!r}))")
    return 0 if ok.all() else 1
