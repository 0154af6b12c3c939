"""The hybrid serial robot of seed 003 §5.1: seven prescribed revolute joints and a soft link, 10 s and five statics.

The robot (:func:`jaxse3.sim.scenarios.serial_robot`; the paper gives no link dimensions, masses or joint profiles,
our documented choices are in :mod:`jaxse3.sim.scenarios`): 0.1 m, 0.3 kg rigid links whose revolute joints alternate
local y and x, then a 0.5 m Kirchhoff rod (radius 1.5 → 1 cm, the CDM's material, strains ω and v_x with Legendre
order 4: 20 DoF) hanging from the last link; 27 DoF. The joints follow q_i(t) = A_i (1 − cos(2π t/P_i))/2 from rest
(joint-coordinate control, eqs. (43)–(45)); the soft link moves under gravity and its own dynamics. Dynamics: Kvaerno5
with the analytical Jacobian. Statics: five random joint-angle sets in [−π/4, π/4] (Fig. 9a), the soft link's
equilibrium and the joint torques that hold it.

    python examples/hybrid_serial_robot.py [--t-final 10] [--out jaxse3-out/serial-robot]
"""

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3 import linkage  # noqa: E402
from jaxse3.sim import scenarios, simulate, solve_statics_batch  # noqa: E402
from jaxse3.viz import plot_shapes, plot_trajectory  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--t-final", type=float, default=10.0)
    p.add_argument("--out", default=os.path.join("jaxse3-out", "serial-robot"))
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    system, inputs = scenarios.serial_robot()
    control = system.params

    t0 = time.perf_counter()
    simulate(system, inputs, t_final=1e-3).tip.block_until_ready()
    print(f"compiled in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    traj = simulate(system, inputs, t_final=a.t_final, progress=True)
    traj.tip.block_until_ready()
    print(
        f"{a.t_final} s simulated in {time.perf_counter() - t0:.2f} s wall, {int(traj.num_steps)} steps; "
        f"final tip {np.round(np.asarray(traj.tip[-1]), 4)} m"
    )
    traj.save(os.path.join(a.out, "trajectory.npz"))
    plot_trajectory(traj, os.path.join(a.out, "dynamics.png"), title="hybrid serial robot, prescribed joints")

    nk = len(control.known)
    angles = np.random.default_rng(0).uniform(-np.pi / 4, np.pi / 4, size=(5, nk))
    u = jnp.concatenate([jnp.asarray(angles), jnp.zeros((5, 2 * nk + len(control.known_inputs)))], axis=1)
    sol = solve_statics_batch(system, u)
    idx = np.asarray(control.unknown)
    torques = jax.vmap(lambda q, u: linkage.controlled_efforts(control, q[idx], 0 * q[idx], 0 * q[idx], u))(sol.q, u)
    print(f"statics: {int(sol.converged.sum())}/5 converged, max residual {float(sol.residual_norm.max()):.1e}")
    print("joint torques holding them (N·m):\n" + np.array2string(np.asarray(torques), precision=3))
    pts = jax.vmap(lambda q: system.points(system.params, q))(sol.q)
    ax = plot_shapes(pts)
    ax.set_title("hybrid serial robot statics, joint angles in [−π/4, π/4]")
    plt.savefig(os.path.join(a.out, "statics.png"), dpi=120)
    print(f"wrote {a.out}/trajectory.npz, dynamics.png, statics.png")


if __name__ == "__main__":
    main()
