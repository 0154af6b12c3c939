"""The cable-driven soft manipulator (CDM) of seed 003 §4.5: 10 s dynamics and ten static shapes.

The rod: L = 0.5 m, radius 3 → 1.5 cm, E = 1 MPa, ν = 0.5, ρ = 1000 kg/m³, υ = 1e4 Pa·s, Legendre order 4 angular /
2 linear (24 DoF), 5 Gauss points, five cables (Table 2), hanging along −z. Inputs: the documented smooth tension
pulses of :func:`jaxse3.sim.scenarios.cdm_tensions` (peaks 20 N on the straight cables, 10 N on the helical ones;
the paper's own profiles are only in its figures). Dynamics: Kvaerno5 whose Newton Jacobian is the analytical one.
Statics: ten equilibria for random tensions in [0, 100] N, solved as one batch.

    python examples/cdm.py [--t-final 10] [--out jaxse3-out/cdm]
"""

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3.sim import scenarios, simulate, solve_statics_batch  # noqa: E402
from jaxse3.viz import plot_shapes, plot_trajectory  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--t-final", type=float, default=scenarios.CDM_T_FINAL)
    p.add_argument("--out", default=os.path.join("jaxse3-out", "cdm"))
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    system, tensions = scenarios.cdm_system(), scenarios.cdm_tensions()

    t0 = time.perf_counter()
    simulate(system, tensions, t_final=1e-3).tip.block_until_ready()
    print(f"compiled in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    traj = simulate(system, tensions, t_final=a.t_final, progress=True)
    traj.tip.block_until_ready()
    print(
        f"{a.t_final} s simulated in {time.perf_counter() - t0:.2f} s wall, {int(traj.num_steps)} steps; "
        f"final tip {np.round(np.asarray(traj.tip[-1]), 4)} m"
    )
    traj.save(os.path.join(a.out, "trajectory.npz"))
    plot_trajectory(traj, os.path.join(a.out, "dynamics.png"), title="CDM, 10 s", input_label="cable tension [N]")

    u = jnp.asarray(np.random.default_rng(0).uniform(0.0, 100.0, size=(10, 5)))
    sol = solve_statics_batch(system, u, load_steps=2)
    print(f"statics: {int(sol.converged.sum())}/10 converged, max residual {float(sol.residual_norm.max()):.1e}")
    pts = jax.vmap(lambda q: system.points(system.params, q))(sol.q)
    ax = plot_shapes(pts)
    ax.set_title("CDM statics, random tensions in [0, 100] N")
    plt.savefig(os.path.join(a.out, "statics.png"), dpi=120)
    print(f"wrote {a.out}/trajectory.npz, dynamics.png, statics.png")


if __name__ == "__main__":
    main()
