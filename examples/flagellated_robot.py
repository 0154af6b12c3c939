"""The underwater flagellated robot of seed 003 §6.3: a floating body swimming on six soft flagella, 10 s.

The robot (:func:`jaxse3.sim.scenarios.flagellated_robot`; the paper gives the flagella's lengths and nothing else, our
documented choices are in :mod:`jaxse3.sim.scenarios`): a neutrally buoyant cylindrical body (0.3 m, radius 5 cm) on a
free joint in exponential coordinates; two shafts on revolute joints about its axis, at its ends, driven by +0.25 and
−0.25 N·m (opposite, so that their reactions on the body cancel); three rigid hooks on each shaft and a tapered
Kirchhoff flagellum with cubic strain on each hook (0.35 m in front, 0.5 m behind, 12 DoF each): 80 DoF, in water
(buoyancy, added mass, Morison drag, eqs. (62)–(66)). Kvaerno5 with the analytical Jacobian, from rest.

The run prints how far the body swam and how much it turned, and draws the body's path and the shafts' turns against
time, and the robot at the end of the run.

    python examples/flagellated_robot.py [--t-final 10] [--out jaxse3-out/flagellated]
"""

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3 import linkage  # noqa: E402
from jaxse3.sim import scenarios, simulate  # noqa: E402
from jaxse3.viz import plot_shapes  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--t-final", type=float, default=10.0)
    p.add_argument("--out", default=os.path.join("jaxse3-out", "flagellated"))
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    system, torques = scenarios.flagellated_robot()
    robot = system.params

    t0 = time.perf_counter()
    traj = simulate(system, torques, t_final=a.t_final, n_save=101, progress=True)
    traj.tip.block_until_ready()
    print(f"{a.t_final} s simulated in {time.perf_counter() - t0:.1f} s wall (compilation included)")
    swim = scenarios.swimming(robot, traj.q, traj.t)
    print(
        f"the body swam {swim['distance']:.3f} m along {np.round(swim['direction'], 3)} ({swim['speed']:.3f} m/s at "
        f"the end) and turned at most {swim['body_rotation']:.1e} rad; the shafts turned {swim['turns_front']:+.1f} "
        f"and {swim['turns_rear']:+.1f} turns"
    )
    traj.save(os.path.join(a.out, "trajectory.npz"))

    g = jax.vmap(lambda q: linkage.forward_kinematics(robot, q))(traj.q)
    body = np.asarray(g[:, 0, :3, 3])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.5))
    for k, label in enumerate("xyz"):
        ax1.plot(traj.t, body[:, k], label=f"body {label}")
    ax1.set(xlabel="t [s]", ylabel="position [m]", title="the body swims along its axis")
    ax1.legend()
    for name in ("front", "rear"):
        ax2.plot(traj.t, np.asarray(traj.q[:, robot.q_slice(robot.index(name))]) / (2 * np.pi), label=f"{name} shaft")
    ax2.plot(traj.t, np.asarray(traj.q[:, 0]) / (2 * np.pi), label="body roll")
    ax2.set(xlabel="t [s]", ylabel="rotation [turns]", title="shafts at ±0.25 N·m; the body does not turn")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "swimming.png"), dpi=120)

    names = [f"{shaft}_flagellum{k}" for shaft in ("front", "rear") for k in range(1, 4)]
    ax = plot_shapes(np.stack([np.asarray(g[-1, robot.points_of(n), :3, 3]) for n in names]), labels=names)
    ends = np.asarray(g[-1, [robot.points_of(n).stop - 1 for n in ("front", "rear")], :3, 3])
    ax.plot(*ends.T, "k-", lw=4, label="body and shafts")
    ax.plot(*body.T, "k:", label="the body's path")
    ax.set(xlabel="x [m]", ylabel="y [m]", zlabel="z [m]", title=f"the flagella at t = {float(traj.t[-1]):g} s")
    ax.legend(fontsize=7)
    plt.savefig(os.path.join(a.out, "flagella.png"), dpi=120)
    print(f"wrote {a.out}/trajectory.npz, swimming.png, flagella.png")


if __name__ == "__main__":
    main()
