"""The CDM inside a hollow cylinder (seed 003 §6.2): Hertz-type penalty contact with the wall.

Cylinder about the world z axis, radius 0.15 m, k_c = 1e5 N/m, p = 1.5; 12 computational points (spheres of the local
rod radius); inputs: the CDM tension pulses with doubled peaks, so that the tip reaches the wall. The wall pushes the
rod inward (the force is −k_c δ^p u_⊥, u_⊥ the outward normal), so the points stay (almost) inside the cylinder.
The figure shows the wall, the tensions and the wall's total force on the rod against time.

    python examples/cdm_contact.py [--t-final 10] [--out jaxse3-out/cdm_contact]
"""

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3 import rod as rods  # noqa: E402
from jaxse3.sim import scenarios, simulate  # noqa: E402
from jaxse3.viz import plot_trajectory  # noqa: E402


def contact_force(rod, loads, q):
    """|Σ_k R_k f_k|: the magnitude of the total force of the wall on the rod at q (its points' contact wrenches,
    (moment, force) in the local frames, rotated to the world)."""
    g = rods.forward_kinematics(rod, q)
    wrenches, _ = rods.external_wrenches(rod, loads, g, rods.body_jacobians(rod, q))
    return jnp.linalg.norm(jnp.einsum("kij,kj->i", g[:, :3, :3], wrenches[:, 3:]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--t-final", type=float, default=scenarios.CDM_T_FINAL)
    p.add_argument("--out", default=os.path.join("jaxse3-out", "cdm_contact"))
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    system, tensions = scenarios.cdm_contact_system(), scenarios.cdm_tensions(2.0)
    free = scenarios.cdm_system(n_gauss=10)
    t0 = time.perf_counter()
    traj = simulate(system, tensions, t_final=a.t_final, progress=True)
    traj.tip.block_until_ready()
    print(
        f"{a.t_final} s with contact: {time.perf_counter() - t0:.1f} s wall (compilation included), "
        f"{int(traj.num_steps)} steps"
    )
    ref = simulate(free, tensions, t_final=a.t_final)
    for name, tr in (("with the wall", traj), ("without the wall", ref)):
        r = np.linalg.norm(np.asarray(tr.points)[..., :2], axis=-1)
        print(f"{name:17s}: max radial distance of a point from the axis {r.max():.4f} m (wall at 0.15 m)")
    traj.save(os.path.join(a.out, "trajectory.npz"))
    fig = plot_trajectory(traj, title="CDM in a cylinder (r = 0.15 m)", input_label="cable tension [N]")
    ax = fig.axes[0]
    th = np.linspace(0, 2 * np.pi, 100)
    for z in (0.0, -0.25, -0.5):
        ax.plot(0.15 * np.cos(th), 0.15 * np.sin(th), z, color="grey", lw=0.5, label="wall" if z == 0 else None)
    ax.legend(fontsize=7)
    # the wall's force on the rod: the contact wrenches of the saved states, in the world frame, summed over points
    force = np.asarray(jax.jit(jax.vmap(lambda q: contact_force(*system.params, q)))(traj.q))
    ax2 = fig.axes[1].twinx()
    ax2.plot(np.asarray(traj.t), force, color="k", lw=1, ls="--", label="wall force")
    ax2.set_ylabel("wall force on the rod [N]"), ax2.legend(loc="lower right", fontsize=7)
    print(f"largest wall force {force.max():.3f} N at t = {float(traj.t[np.argmax(force)]):.2f} s")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "contact.png"), dpi=120)
    print(f"wrote {a.out}/trajectory.npz, contact.png")


if __name__ == "__main__":
    main()
