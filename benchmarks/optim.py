"""Trajectory optimisation building blocks, side by side in one run: the gradient of a simulation against central
differences.

1. ``gradients``: the CDM (seed 003 §4.5) from rest for ``--t-final`` s (default 1) under piecewise-linear tensions,
   ``--knots`` knots per cable (default 4, so 20 parameters), loss ½‖tip(T) − target‖². The gradient with respect to
   the knots by one reverse pass (``adjoint="checkpoint"``), by forward mode (``adjoint="forward"``, one tangent per
   knot) and by central differences (2 × 20 + 1 = 41 simulations, the value included), for Newmark-β (h = 2 ms,
   Newton tolerance 1e−14 so that the differenced runs are the exact step map) and Kvaerno5 (rtol 1e−10, atol 1e−12).
   Reported: compile time, median time per gradient (interleaved with one simulation), the ratio to central
   differences and the agreement (max relative difference of the gradients).

    python benchmarks/optim.py [--t-final 1] [--knots 4] [--solvers newmark kvaerno5] [--repeats 3]
        [--markdown out.md]
"""

from __future__ import annotations

import argparse
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _timing import fmt_time, time_group  # noqa: E402

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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--t-final", type=float, default=1.0)
    p.add_argument("--knots", type=int, default=4)
    p.add_argument("--solvers", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--checkpoints", type=int, default=None, help="simulate's checkpoints (default: diffrax's choice)")
    p.add_argument("--markdown", default=None)
    args = p.parse_args(argv)
    table = "\n".join(gradients(args))
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
