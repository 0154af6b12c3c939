"""The hybrid parallel robot of seed 003 §6.1: a rigid platform on three soft pillars, closed by two loop closures.

The robot (:func:`jaxse3.sim.scenarios.parallel_robot`; the paper gives the pillars' section and length, the platform's
size and the strain bases, our documented choices for the rest are in :mod:`jaxse3.sim.scenarios`): three pillars
(15 cm, 1.5 × 3 cm, the CDM's material, cubic angular and first-order linear strains: 18 DoF each) standing at the
corners of a triangular platform (side 20 cm, 1 cm thick); a spherical joint on each pillar's tip; the platform fixed
to the first joint's ball and closed onto the other two by fixed loop closures: 63 DoF, 12 closure rows, Baumgarte
stabilisation (T_B = 10 ms).

1. Dynamics: a constant wrench on the platform (0.3 N along x, −0.2 N along y, 0.02 N·m about z) from rest, under
   gravity, Kvaerno5; the platform's motion and the closures' drift ‖e‖, ‖Aq̇‖ against time.
2. Statics: ``--n-statics`` random wrenches (force components in [−0.5, 0.5] N, moments in [−0.05, 0.05] N·m, as the
   paper), one batch of systems (chunks of 8), solved for (q, λ); how many converged and how many are stable (the
   stiffness on the closures' tangent space), and the platform's positions.

    python examples/parallel_robot.py [--t-final 10] [--n-statics 100] [--out jaxse3-out/parallel-robot]
"""

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3 import linkage  # noqa: E402
from jaxse3.sim import constraint_drift, scenarios, simulate, solve_statics_batch, stack  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--t-final", type=float, default=10.0)
    p.add_argument("--n-statics", type=int, default=100)
    p.add_argument("--out", default=os.path.join("jaxse3-out", "parallel-robot"))
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    system, u = scenarios.parallel_robot()
    robot = system.params.linkage
    platform = robot.points_of("platform").start

    t0 = time.perf_counter()
    traj = simulate(system, u, t_final=a.t_final, n_save=201, progress=True)
    traj.tip.block_until_ready()
    print(f"{a.t_final} s simulated in {time.perf_counter() - t0:.1f} s wall (compilation included)")
    traj = constraint_drift(system, traj)
    traj.save(os.path.join(a.out, "trajectory.npz"))
    g = jax.vmap(lambda q: linkage.forward_kinematics(robot, q)[platform])(traj.q)
    centre = 1e3 * (np.asarray(g[:, :3, 3]) - np.asarray(g[0, :3, 3]))
    turn = np.degrees(np.arctan2(np.asarray(g[:, 1, 0]), np.asarray(g[:, 0, 0])))
    drift = {k: float(np.max(traj.monitors[k])) for k in ("closure_error", "closure_velocity_error")}
    print(
        f"the platform's centre moved {np.round(centre[-1], 2)} mm and turned {turn[-1]:.2f}° about z; max ‖e‖ "
        f"{drift['closure_error']:.1e}, max ‖A q̇‖ {drift['closure_velocity_error']:.1e}"
    )
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(13, 3.5))
    for k, label in enumerate("xyz"):
        ax1.plot(traj.t, centre[:, k], label=label)
    ax1.set(xlabel="t [s]", ylabel="displacement [mm]", title="the platform's centre")
    ax1.legend()
    ax2.plot(traj.t, turn)
    ax2.set(xlabel="t [s]", ylabel="[°]", title="the platform's turn about z")
    ax3.semilogy(traj.t, traj.monitors["closure_error"], label="‖e‖")
    ax3.semilogy(traj.t, traj.monitors["closure_velocity_error"], label="‖A q̇‖")
    ax3.set(xlabel="t [s]", title="the loop closures' drift")
    ax3.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "dynamics.png"), dpi=120)

    rng = np.random.default_rng(0)
    wrenches = np.concatenate(
        [rng.uniform(-0.05, 0.05, (a.n_statics, 3)), rng.uniform(-0.5, 0.5, (a.n_statics, 3))], axis=1
    )
    systems = stack([system] * a.n_statics)
    systems = eqx.tree_at(lambda s: s.params.linkage.loads[0].wrench, systems, jnp.asarray(wrenches))
    t0 = time.perf_counter()
    sol = solve_statics_batch(systems, batch_system=True, chunk_size=8, throw=False)
    sol.q.block_until_ready()
    wall = time.perf_counter() - t0
    centres = np.asarray(jax.vmap(lambda q: linkage.forward_kinematics(robot, q)[platform, :3, 3])(sol.q))
    ok = np.asarray(sol.converged)
    stable = np.asarray(sol.stable) & ok
    print(
        f"statics: {int(ok.sum())} of {a.n_statics} random wrenches converged in {wall:.1f} s (compilation "
        f"included); mean {float(np.mean(sol.num_steps)):.1f} Newton iterations; {int(stable.sum())} stable, "
        f"{int((ok & ~stable).sum())} unstable (the stiffness on the closures' tangent space), "
        f"{int((np.asarray(sol.singular) & ok).sum())} at a singular Newton matrix"
    )
    index, counts = np.unique(np.asarray(sol.morse_index)[ok], return_counts=True)
    found = ", ".join(f"{k}: {c}" for k, c in zip(index, counts))
    print(f"Morse indices (unstable directions) of the equilibria and how many: {found}")
    fig, ax = plt.subplots(figsize=(4.5, 4))
    for mask, marker, label in ((stable, "o", "stable"), (ok & ~stable, "x", "unstable")):
        ax.scatter(1e3 * centres[mask, 0], 1e3 * centres[mask, 1], c=1e3 * centres[mask, 2], s=12, marker=marker)
        ax.plot([], [], "k" + marker, ls="", label=label)
    ax.legend(fontsize=7)
    ax.set(xlabel="x [mm]", ylabel="y [mm]", title="platform centres under random wrenches", aspect="equal")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "statics.png"), dpi=120)
    print(f"wrote {a.out}/trajectory.npz, dynamics.png, statics.png")


if __name__ == "__main__":
    main()
