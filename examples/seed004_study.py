"""Seed 004 study (Müller & Terze 2013): SE(3) vs SO(3)×R³ as configuration space of constrained multibody systems.

Integrates the paper's four examples (heavy top without gravity, spherical double pendulum in gravity, floating pair,
spherical 3-bar linkage; data in :mod:`jaxse3.rigid.absolute.examples`) with the Munthe-Kaas scheme (37) (classical RK4
tableau, exp coordinates, body form: ``dexp⁻¹`` at ``−Ψ``), index-1 KKT accelerations and no stabilisation, once with
every body in SE(3) and once in SO(3)×R³ (and, for the double pendulum, mixed: body 1 in SE(3), body 2 in SO(3)×R³ —
the paper's recommendation, §6). Writes the paper's figures — joint violation and energy drift vs time — as PNG to
``--out`` and prints a summary table.

    python examples/seed004_study.py [--out ./jaxse3-out/seed004] [--dt 1e-3] [--tableau rk4|heun|euler]
"""

from __future__ import annotations

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from jaxse3.integrate.rkmk import RKMK4, LieEuler, RKMKHeun  # noqa: E402
from jaxse3.rigid.absolute import EXAMPLES  # noqa: E402
from jaxse3.sim import simulate_multibody  # noqa: E402

SOLVERS = {"rk4": RKMK4, "heun": RKMKHeun, "euler": LieEuler}
# configurations compared per example: label -> per-body spaces ("se3" | "so3xr3")
CASES = {
    "heavy_top": {"SE(3)": "se3", "SO(3)×R³": "so3xr3"},
    "double_pendulum": {"SE(3)": "se3", "SO(3)×R³": "so3xr3", "mixed": ("se3", "so3xr3")},
    "floating_pair": {"SE(3)": "se3", "SO(3)×R³": "so3xr3"},
    "three_bar": {"SE(3)": "se3", "SO(3)×R³": "so3xr3"},
}
STYLE = {"SE(3)": dict(color="C0"), "SO(3)×R³": dict(color="C3"), "mixed": dict(color="C2", ls="--")}


def run_case(name: str, spaces, dt: float, tableau: str):
    ex = EXAMPLES[name]()
    system = ex.system.with_spaces(spaces)
    y0 = system.state(*_physical_state(ex))
    solver = SOLVERS[tableau](coordinates="exp", side="body")
    t1 = ex.t1
    fn = jax.jit(lambda y: simulate_multibody(system, y, t1, dt, solver, n_save=201))
    t0 = time.perf_counter()
    tr = jax.block_until_ready(fn(y0))
    return ex, tr, time.perf_counter() - t0


def _physical_state(ex):
    """(R, r, ω, ṙ) of an example's initial state, so that it can be re-expressed in any configuration space."""
    R, r, V = ex.system.unpack(ex.y0)
    rdot = jnp.stack([b.spatial_linear_velocity(R[i], V[i]) for i, b in enumerate(ex.system.bodies)])
    return R, r, V[:, :3], rdot


def plot(name: str, ex, runs: dict, out: str) -> str:
    k = len(ex.system.joints)
    fig, axes = plt.subplots(1, k + 1, figsize=(4.2 * (k + 1), 3.4), constrained_layout=True)
    for label, tr in runs.items():
        ts, viol, energy = tr.t, tr.monitors["joint_violations"], tr.monitors["energy"]
        for j in range(k):
            axes[j].semilogy(ts, jnp.maximum(viol[:, j], 1e-17), label=label, **STYLE[label])
        axes[k].semilogy(ts[1:], jnp.abs(energy - energy[0])[1:], label=label, **STYLE[label])
    for j in range(k):
        kind = "ground" if ex.system.joints[j].grounded else "body–body"
        axes[j].set(title=f"joint {j + 1} ({kind})", xlabel="t [s]", ylabel="‖g‖ [m]")
    axes[k].set(
        title=f"energy drift (E0 = {float(runs['SE(3)'].monitors['energy'][0]):.6g} J)",
        xlabel="t [s]",
        ylabel="|E − E0| [J]",
    )
    axes[0].legend()
    fig.suptitle(f"seed 004 — {ex.name}: constraint violation and energy drift")
    path = os.path.join(out, f"{name}.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="./jaxse3-out/seed004")
    parser.add_argument("--dt", type=float, default=1e-3, help="step size [s] (paper: 1e-3)")
    parser.add_argument("--tableau", choices=list(SOLVERS), default="rk4")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for name, cases in CASES.items():
        runs = {}
        for label, spaces in cases.items():
            ex, tr, seconds = run_case(name, spaces, args.dt, args.tableau)
            runs[label] = tr
            viol = jnp.max(tr.monitors["joint_violations"], axis=0)
            energy = tr.monitors["energy"]
            de = float(jnp.max(jnp.abs(energy - energy[0])))
            rows.append(
                (
                    ex.name,
                    f"{ex.t1:g}",
                    label,
                    " / ".join(f"{float(v):.2e}" for v in viol),
                    f"{de:.2e}",
                    f"{seconds:.1f}",
                )
            )
        print("wrote", plot(name, ex, runs, args.out))
    head = ("example", "T [s]", "space", "max ‖g‖ per joint [m]", "max |ΔE| [J]", "wall [s]")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    print(f"\nRKMK ({args.tableau}, exp, body form), dt = {args.dt:g} s, no stabilisation")
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
