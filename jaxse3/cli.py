"""The ``jaxse3`` command: argument parsing and dispatch to the built-in examples of :mod:`jaxse3.demo`.

``jaxse3 run cdm`` (the main job) simulates the cable-driven soft manipulator of seed 003 for 10 s with a progress bar,
prints a timing summary (compilation separately from the simulation's wall time) and writes the trajectory (``cdm.npz``:
``t``, ``q``, ``qd``, ``u``, ``points``, ``tip`` world positions) and a figure (``cdm.png``: shape snapshots, tip path)
to ``--out`` (default ``./jaxse3-out``). Its programs compile in jaxse3's "fast" mode (about half the compile time, 2–3×
the run time; :func:`jaxse3.set_compile_mode`) unless ``--compile optimized``, in float64 on a CPU and in float32
on a GPU or TPU (``--dtype``; :func:`jaxse3.demo.precision`: linkages default to float64 everywhere). ``jaxse3
list`` lists the examples.
``jaxse3 run lie-demo`` (also plain ``jaxse3`` or ``jaxse3 demo``) runs the demo of the SE(3) core: accuracy of exp,
log, dexp, dexp⁻¹ and their derivatives against an independent float64 reference, and batched timings (``--batch``,
``--save``). ``jaxse3 optimize cdm-reach --target X Y Z`` solves the CDM reaching problem of
:mod:`jaxse3.optim.scenarios` by single shooting (``--method ddp`` or ``ilqr``: by DDP or iLQR on 20 ms implicit Euler
steps) and writes ``cdm-reach.npz`` (a :class:`jaxse3.optim.Solution`) and ``cdm-reach.png``; ``jaxse3 optimize
arm-reach`` solves Crocoddyl's arm-reaching benchmark (Talos arm) by DDP and writes ``arm-reach.npz`` and
``arm-reach.png``; ``jaxse3 optimize my_robot.toml --target X Y Z`` poses the same reaching problem on a model file's
linkage (:func:`jaxse3.optim.scenarios.reach`: its tip to the target, the actuated joints' efforts within
``--max-input``) and solves it by single shooting.
"""

from __future__ import annotations

import argparse
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)

from jaxse3._compile import COMPILE_MODES, set_compile_mode  # noqa: E402
from jaxse3.demo import (  # noqa: E402
    PRECISIONS,
    demo,
    precision,
    run_optimisation_example,
    run_simulation_example,
    run_sweep_file,
)


def _writable_folder(parser: argparse.ArgumentParser, option: str, folder: str) -> None:
    """Create ``folder`` (for ``option``) now, before any work, or stop with a clear message."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        parser.error(f"{option}: cannot create the folder {folder!r}: {e.strerror}")
    if not os.access(folder, os.W_OK):
        parser.error(f"{option}: the folder {folder!r} is not writable")


EXAMPLES = {
    "cdm": "seed 003 cable-driven soft manipulator, 10 s dynamics (the main job)",
    "cdm-contact": "the CDM inside a hollow cylinder with Hertz-type contact (seed 003 §6.2)",
    "serial-robot": "hybrid serial robot: 7 prescribed revolute joints and a soft link, 27 DoF (seed 003 §5.1)",
    "flagellated": "underwater flagellated robot: a floating body, 2 driven shafts, 6 soft flagella, 80 DoF (§6.3)",
    "parallel-robot": "hybrid parallel robot: 3 soft pillars, a platform on spherical joints, 2 loop closures, 63 DoF "
    "(§6.1)",
    "fin-ray": "fin-ray finger: 17 soft links, 6 loop closures, a prescribed slider, 74 DoF (§5.2; index-3 Newmark-β)",
    "lie-demo": "accuracy and speed of the SE(3) core's closed forms (exp, log, dexp, derivatives)",
}
#: the problems of ``jaxse3 optimize``
PROBLEMS = {
    "cdm-reach": "the CDM's tip to a target point (--target X Y Z) from rest, bounded tensions; single shooting, or "
    "--method ddp|ilqr",
    "arm-reach": "Crocoddyl's benchmark: the Talos arm's gripper to a pose (--target X Y Z), DDP (needs 'robots')",
    "MODEL.toml": "a model file's tip to --target X Y Z from rest, its inputs within --max-input; single shooting",
}
#: the default target and the options of each problem of ``jaxse3 optimize`` (argument name: flag)
TARGETS = {"cdm-reach": (0.1, 0.05, -0.45), "arm-reach": (0.0, 0.0, 0.4)}
_SHOOTING_PROBLEM = {"t_final": "--t-final", "knots": "--knots", "gtol": "--gtol", "progress": "--no-progress"}
_PROBLEM_OPTIONS = {
    "cdm-reach": _SHOOTING_PROBLEM,
    "arm-reach": {"effort_limits": "--effort-limits"},
    "model": {**_SHOOTING_PROBLEM, "max_input": "--max-input"},
}
#: the methods of each problem of ``jaxse3 optimize``, the default first
METHODS = {"cdm-reach": ("shooting", "ddp", "ilqr"), "arm-reach": ("ddp", "ilqr"), "model": ("shooting",)}
#: cdm-reach's options that only single shooting uses (DDP's controls are held over its steps of 20 ms)
_SHOOTING_OPTIONS = {"knots": "--knots", "gtol": "--gtol"}


_DTYPE_HELP = (
    "floating-point precision (default: float32 for the CDM examples on a GPU or TPU, where it runs several times "
    "faster with tips within ~1e-6 m of float64; float64 otherwise: docs/scale.md)"
)


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {kind.__name__}, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def _unit_interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], got {text}")
    return value


def _model_file(text: str) -> str:
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such model file: {text!r}")
    return text


def _problem(text: str) -> str:
    if text in PROBLEMS and text != "MODEL.toml":
        return text
    if text.endswith(".toml"):
        return _model_file(text)
    raise argparse.ArgumentTypeError(
        f"invalid choice: {text!r} (choose from cdm-reach, arm-reach, or a .toml model file)"
    )


def _sweep_file(text: str) -> str:
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such sweep file: {text!r}")
    return text


def _address(text: str) -> str:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return text


def _example(text: str) -> str:
    if text in EXAMPLES:
        return text
    if text.endswith(".toml"):
        return _model_file(text)
    raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(EXAMPLES)}, or a .toml file)")


def _parser() -> argparse.ArgumentParser:
    description = "jaxse3 built-in examples; the main job is 'jaxse3 run cdm'"
    parser = argparse.ArgumentParser(prog="jaxse3", description=description)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("list", help="list the built-in examples")
    d = sub.add_parser("demo", help="the demo of the SE(3) core (same as 'run lie-demo'; the default)")
    r = sub.add_parser("run", help="run a built-in example (see 'jaxse3 list')")
    r.add_argument(
        "example", type=_example, metavar="EXAMPLE", help="one of: " + ", ".join(EXAMPLES) + ", or a model file (.toml)"
    )
    r.add_argument("--t-final", type=_positive(float), default=10.0, help="simulated time in s (default 10)")
    r.add_argument("--out", default="jaxse3-out", help="output folder (default ./jaxse3-out)")
    r.add_argument(
        "--solver",
        choices=(
            "kvaerno5",
            "kvaerno3",
            "newmark",
            "newmark-index3",
            "generalized-alpha",
            "generalized-alpha-index3",
            "tsit5",
            "dopri5",
        ),
        default="kvaerno5",
        help="integrator (default kvaerno5; *-index3: closed chains, constraints held exactly; generalized-alpha: "
        "Newmark with numerical damping, --rho-inf)",
    )
    r.add_argument("--rtol", type=_positive(float), default=1e-3, help="relative tolerance (default 1e-3)")
    r.add_argument("--atol", type=_positive(float), default=1e-6, help="absolute tolerance (default 1e-6)")
    r.add_argument("--dt", type=_positive(float), default=2e-3, help="fixed step in s (default 2e-3)")
    r.add_argument(
        "--rho-inf",
        type=_unit_interval,
        default=0.9,
        help="generalized-alpha: spectral radius at infinity in [0, 1] (default 0.9; 1: no damping)",
    )
    r.add_argument("--n-save", type=_positive(int), default=201, help="saved time samples (default 201)")
    r.add_argument("--max-steps", type=_positive(int), default=100_000, help="solver step limit (default 100000)")
    r.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    r.add_argument(
        "--compile",
        choices=COMPILE_MODES,
        default="fast",
        help="fast (default): XLA compiles in about half the time, the program runs 2-3x slower (short runs); "
        "optimized: XLA's full optimisation (long runs)",
    )
    r.add_argument("--dtype", choices=PRECISIONS, default=None, help=_DTYPE_HELP)
    r.add_argument("--animate", action="store_true", help="also write an animation of the motion beside its inputs")
    r.add_argument(
        "--format", choices=("mp4", "gif"), default="mp4", help="--animate: mp4 (default; the 'plot' extra) or gif"
    )
    parser.run_parser = r  # type: ignore[attr-defined]  # main() reads its defaults
    o = sub.add_parser("optimize", help="solve a built-in trajectory optimisation problem (see 'jaxse3 list')")
    o.add_argument(
        "problem", type=_problem, metavar="PROBLEM", help="one of: cdm-reach, arm-reach, or a model file (.toml)"
    )
    o.add_argument(
        "--target", type=float, nargs=3, default=None, metavar=("X", "Y", "Z"), help="m (default per problem)"
    )
    o.add_argument("--t-final", type=_positive(float), default=2.0, help="horizon in s (default 2)")
    o.add_argument("--knots", type=_positive(int), default=6, help="tension knots per cable (default 6)")
    o.add_argument("--max-iters", type=_positive(int), default=None, help="iterations (default 50; arm-reach 200)")
    o.add_argument(
        "--method",
        choices=("shooting", "ddp", "ilqr"),
        default=None,
        help="cdm-reach: shooting (default), ddp or ilqr; arm-reach: ddp (default) or ilqr",
    )
    o.add_argument("--effort-limits", action="store_true", help="arm-reach: bound the torques (box-DDP)")
    o.add_argument(
        "--max-input",
        type=_positive(float),
        default=20.0,
        help="model files: |effort| ≤ this (N·m or N; tendon tensions in [0, this] N) (default 20)",
    )
    o.add_argument("--gtol", type=_positive(float), default=1e-5, help="projected-gradient tolerance (1e-5)")
    o.add_argument("--out", default="jaxse3-out", help="output folder (default ./jaxse3-out)")
    o.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    parser.optimize_parser = o  # type: ignore[attr-defined]  # main() reads its defaults
    w = sub.add_parser("sweep", help="run a parameter sweep file (a model, parameters, what to record)")
    w.add_argument("file", type=_sweep_file, metavar="FILE", help="the sweep file (.toml; see jaxse3.sim.sweep)")
    w.add_argument("--out", default=None, help="output folder (default ./jaxse3-out/<the file's name>)")
    w.add_argument("--resume", action="store_true", help="continue the interrupted sweep in --out")
    w.add_argument("--no-progress", dest="progress", action="store_false", help="hide the progress bar")
    w.add_argument("--dtype", choices=PRECISIONS, default=None, help=_DTYPE_HELP)
    w.add_argument(
        "--coordinator", type=_address, metavar="HOST:PORT", help="jax.distributed: process 0's address and port"
    )
    w.add_argument("--num-processes", type=_positive(int), help="jax.distributed: the number of processes")
    w.add_argument("--process-id", type=int, help="jax.distributed: this process's index, 0 … N − 1")
    w.add_argument(
        "--distributed", action="store_true", help="jax.distributed with the cluster's own settings (e.g. SLURM)"
    )
    for p in (parser, d, r):
        p.add_argument("--batch", type=_positive(int), default=10_000, help="lie-demo: timing batch size (10000)")
        p.add_argument("--save", metavar="PATH", help="lie-demo: write the results as JSON")
    return parser


#: options of ``run`` that only rod examples use, and those only lie-demo uses (argument name: flag)
_ROD_OPTIONS = {
    "t_final": "--t-final",
    "out": "--out",
    "solver": "--solver",
    "rtol": "--rtol",
    "atol": "--atol",
    "dt": "--dt",
    "rho_inf": "--rho-inf",
    "n_save": "--n-save",
    "max_steps": "--max-steps",
    "progress": "--no-progress",
    "compile": "--compile",
    "dtype": "--dtype",
    "animate": "--animate",
    "format": "--format",
}
_DEMO_OPTIONS = {"batch": "--batch", "save": "--save"}


def _unused(parser: argparse.ArgumentParser, args: argparse.Namespace, options: dict[str, str]) -> list[str]:
    return [flag for key, flag in options.items() if getattr(args, key) != parser.get_default(key)]


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "list":
        for name, text in EXAMPLES.items():
            print(f"{name:12s} {text}")
        for name, text in PROBLEMS.items():
            print(f"{name:12s} {text} (jaxse3 optimize {name})")
        return 0
    if args.command == "optimize":
        kind = "model" if args.problem.endswith(".toml") else args.problem
        own = _PROBLEM_OPTIONS[kind]
        others = {k: v for opts in _PROBLEM_OPTIONS.values() for k, v in opts.items() if k not in own}
        unused = _unused(parser.optimize_parser, args, others)  # type: ignore[attr-defined]
        if unused:
            parser.error(f"{', '.join(unused)}: not an option of {args.problem}")
        if kind == "model" and args.target is None:
            parser.error(f"{args.problem}: a model file needs --target X Y Z (its tip's goal, m)")
        methods = METHODS[kind]
        args.method = methods[0] if args.method is None else args.method
        if args.method not in methods:
            parser.error(f"--method {args.method}: not a method of {args.problem} (choose from {', '.join(methods)})")
        if args.method != "shooting":
            unused = _unused(parser.optimize_parser, args, _SHOOTING_OPTIONS)  # type: ignore[attr-defined]
            if unused:
                parser.error(f"{', '.join(unused)}: only for --method shooting, not for {args.method}")
        args.target = TARGETS[kind] if args.target is None else tuple(args.target)
        if args.max_iters is None:
            args.max_iters = 200 if args.problem == "arm-reach" else 50
        if args.knots < 2:
            parser.error("--knots must be at least 2")
        dt = 2e-3 if args.method == "shooting" else 2e-2
        steps = args.t_final / dt
        if abs(steps - round(steps)) > 1e-9 * steps:
            parser.error(f"--t-final must be a whole number of {1e3 * dt:g} ms steps, got {args.t_final}")
        _writable_folder(parser, "--out", args.out)
        return run_optimisation_example(args.problem, args)
    if args.command == "sweep":
        explicit = (args.coordinator, args.num_processes, args.process_id)
        if any(x is not None for x in explicit):
            if any(x is None for x in explicit) or args.distributed:
                parser.error("--coordinator, --num-processes and --process-id go together (and without --distributed)")
            if not 0 <= args.process_id < args.num_processes:
                parser.error(f"--process-id must lie in 0 … {args.num_processes - 1}, got {args.process_id}")
        if args.out is None:
            args.out = os.path.join("jaxse3-out", os.path.splitext(os.path.basename(args.file))[0])
        _writable_folder(parser, "--out", args.out)
        return run_sweep_file(args.file, args)
    run = parser.run_parser  # type: ignore[attr-defined]
    if args.command == "run" and args.example != "lie-demo":
        if args.n_save < 2:
            parser.error("--n-save must be at least 2")
        unused = _unused(run, args, _DEMO_OPTIONS)
        if unused:
            parser.error(f"{', '.join(unused)}: only for lie-demo, not for {args.example}")
        if args.format != run.get_default("format") and not args.animate:
            parser.error("--format: an option of --animate")
        _writable_folder(parser, "--out", args.out)
        defaults = {key: run.get_default(key) for key in _ROD_OPTIONS}
        previous = set_compile_mode(args.compile)
        try:
            with precision(args.dtype, args.example):
                return run_simulation_example(args.example, args, defaults)
        finally:
            set_compile_mode(previous)
    if args.command == "run":
        unused = _unused(run, args, _ROD_OPTIONS)
        if unused:
            parser.error(f"{', '.join(unused)}: not used by lie-demo (only --batch and --save are)")
    if args.save:
        _writable_folder(parser, "--save", os.path.dirname(os.path.abspath(args.save)))
    result = demo(batch=args.batch, save=args.save)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
