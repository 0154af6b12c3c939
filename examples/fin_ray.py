"""The fin-ray finger of seed 003 §5.2: 17 soft ABS links, 5 ribs on revolute joints, 6 loop closures and a slider
whose displacement is prescribed.

The finger (:func:`jaxse3.sim.scenarios.fin_ray`; the paper's geometry wording is ambiguous, our documented reading
and the unstated density, damping and slider profile are in :mod:`jaxse3.sim.scenarios`): two 3 cm sidewalls of 1 mm
ABS meeting at an apex, each cut into 6 soft links by 5 horizontal ribs; the ribs hang from sidewall A on revolute
joints and are closed onto sidewall B by planar loop closures, the apex by a fixed one; sidewall B stands on a
prismatic slider that pushes it up and down (2 mm raised-cosine strokes, period 2 s): 74 DoF, 17 × 8 = 136 rod points.

The slider's prescription and the closures are constraints of the index-3 Newmark-β (``solver="newmark-index3"``,
h = 10 ms; seed 003 eq. (52)), the paper's fastest solver for this example: e = 0 at every step. Plotted: snapshots of
the finger with the apex's trail, the apex's displacement, the slider's force (the prescription's multiplier, from
:func:`jaxse3.sim.constraint_forces`) and the closures' drift.

    python examples/fin_ray.py [--t-final 10] [--dt 0.01] [--out jaxse3-out/fin-ray]

The same finger as a model file: ``jaxse3 run examples/models/fin_ray.toml`` (``--solver generalized-alpha-index3``
adds numerical damping, which removes the (−1)ⁿ oscillation of the multipliers and most of the velocity drift).
"""

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3.sim import constraint_drift, constraint_forces, scenarios, simulate  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--t-final", type=float, default=10.0)
    p.add_argument("--dt", type=float, default=1e-2, help="Newmark step [s]")
    p.add_argument("--out", default=os.path.join("jaxse3-out", "fin-ray"))
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    system, u = scenarios.fin_ray()
    finger = system.params.linkage

    t0 = time.perf_counter()
    steps = round(a.t_final / a.dt)
    every = max(1, -(-steps // 200))  # samples on the steps (between them the motion is a linear interpolation)
    n_save = steps // every + 1
    t_final = (n_save - 1) * every * a.dt
    traj = simulate(system, u, t_final=t_final, solver="newmark-index3", dt=a.dt, n_save=n_save, progress=True)
    traj.tip.block_until_ready()
    print(f"{t_final:g} s simulated in {time.perf_counter() - t0:.1f} s wall (compilation included)")
    traj = constraint_forces(system, constraint_drift(system, traj), u)
    traj.save(os.path.join(a.out, "trajectory.npz"))
    points = 1e3 * np.asarray(traj.points)  # mm
    apex = points[:, finger.points_of("wall_a6").stop - 1]
    force = np.asarray(traj.monitors["multipliers"][:, -1])
    drift = {k: float(np.max(traj.monitors[k])) for k in ("closure_error", "closure_velocity_error")}
    print(
        f"the apex moved by up to {np.abs(apex[:, 0] - apex[0, 0]).max():.2f} mm sideways; the slider's force spans "
        f"[{force.min():.3g}, {force.max():.3g}] N; max ‖e‖ {drift['closure_error']:.1e}, max ‖A q̇‖ "
        f"{drift['closure_velocity_error']:.1e}"
    )

    fig, axes = plt.subplots(1, 4, figsize=(16, 4))
    ax = axes[0]
    soft = [link.name for link in finger.links if link.joint == "soft"]
    for k, colour in zip(np.linspace(0, len(traj.t) - 1, 5).astype(int), plt.cm.viridis(np.linspace(0, 1, 5))):
        for name in soft:
            sl = finger.points_of(name)
            ax.plot(points[k, sl, 0], points[k, sl, 1], color=colour, lw=1)
        ax.plot([], [], color=colour, label=f"t = {float(traj.t[k]):.2f} s")
    ax.plot(apex[:, 0], apex[:, 1], "k:", lw=0.8, label="apex trail")
    ax.set(xlabel="x [mm]", ylabel="y [mm]", title="the finger", aspect="equal")
    ax.legend(fontsize=7)
    axes[1].plot(traj.t, apex[:, 0] - apex[0, 0], label="x")
    axes[1].plot(traj.t, apex[:, 1] - apex[0, 1], label="y")
    axes[1].set(xlabel="t [s]", ylabel="[mm]", title="the apex's displacement")
    axes[1].legend()
    axes[2].plot(traj.t, force)
    axes[2].set(xlabel="t [s]", ylabel="[N]", title="the slider's force (its multiplier)")
    axes[3].semilogy(traj.t, np.maximum(traj.monitors["closure_error"], 1e-18), label="‖e‖")
    axes[3].semilogy(traj.t, traj.monitors["closure_velocity_error"], label="‖A q̇‖")
    axes[3].set(xlabel="t [s]", title="the loop closures' drift")
    axes[3].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "dynamics.png"), dpi=120)
    print(f"wrote {a.out}/trajectory.npz and dynamics.png")


if __name__ == "__main__":
    main()
