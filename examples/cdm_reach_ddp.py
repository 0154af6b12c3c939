"""The CDM's tip to a target point in 2 s: single shooting (optax L-BFGS) against DDP and iLQR, side by side.

Shooting solves :func:`jaxse3.optim.scenarios.cdm_reach` (tensions piecewise linear in 6 knots per cable, Newmark-β
at 2 ms, gradients through the simulation); DDP and iLQR solve :func:`jaxse3.optim.scenarios.cdm_reach_steps`, the
same costs on 100 implicit Euler steps of 20 ms with the tensions held over each step (DDP with the exact second
derivatives of the step, iLQR without). All keep the tensions in [0, 20] N. Printed: iterations, wall time
(compilation included: each solver's first solve), final cost and tip error; written: each solution as ``.npz`` and
the DDP solution's figure (cost history, tip path, tensions). The three are different discretisations of one
problem, so their costs agree to the discretisation error, not to round-off.

    python examples/cdm_reach_ddp.py [--target 0.1 0.05 -0.45] [--out jaxse3-out/cdm_reach_ddp]
"""

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3.optim import scenarios, solve_ddp, solve_shooting  # noqa: E402
from jaxse3.viz import plot_solution  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", type=float, nargs=3, default=[0.1, 0.05, -0.45])
    p.add_argument("--out", default=os.path.join("jaxse3-out", "cdm_reach_ddp"))
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    target = np.array(a.target)
    print(f"{'solver':>10s} {'iterations':>10s} {'wall (s)':>9s} {'cost':>10s} {'tip error (mm)':>15s}  stopped")

    t0 = time.perf_counter()
    shooting = solve_shooting(scenarios.cdm_reach(target), max_iters=100, gtol=1e-6)
    wall = time.perf_counter() - t0
    error = 1e3 * np.linalg.norm(shooting.tip[-1] - target)
    row = f"{'shooting':>10s} {shooting.iterations:10d} {wall:9.1f} {shooting.cost:10.6f} {error:15.3f}"
    print(f"{row}  {shooting.message}")
    shooting.save(os.path.join(a.out, "shooting.npz"))

    problem, us0, bounds = scenarios.cdm_reach_steps(target)
    system = problem.step.system
    for method in ("ddp", "ilqr"):
        t0 = time.perf_counter()
        sol = jax.jit(lambda us, m=method: solve_ddp(problem, us, method=m, max_iters=200, **bounds))(us0)
        wall = time.perf_counter() - t0
        tips = np.asarray(jax.vmap(system.tip)(sol.xs[:, : system.n_dof]))
        error = 1e3 * np.linalg.norm(tips[-1] - target)
        print(
            f"{method:>10s} {int(sol.iterations):10d} {wall:9.1f} {float(sol.cost):10.6f} {error:15.3f}  {sol.message}"
        )
        result = sol.to_solution(problem.step.dt, tips, info={"method": method})
        result.save(os.path.join(a.out, f"{method}.npz"))
        if method == "ddp":
            path = os.path.join(a.out, "cdm_reach_ddp.png")
            plot_solution(result, path, target=jnp.asarray(target), title="CDM reaching, DDP", input_label="T")
    print(f"wrote {a.out}/shooting.npz, ddp.npz, ilqr.npz and cdm_reach_ddp.png")


if __name__ == "__main__":
    main()
