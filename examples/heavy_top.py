"""Heavy top with the Lie-group generalised-α method on SO(3), exp vs Cayley (seed 001 digest §7.3, §8.2b, §8.3).

Usage::

    python examples/heavy_top.py [--out DIR] [--t1 SECONDS]

writes to DIR (default ``./jaxse3-out/heavy_top``):

* ``omega.png``: body angular velocity Ω(t) (exp and Cayley, h = 2.5e-4) with the DOP853 reference;
* ``invariants.png``: relative energy drift and vertical angular momentum drift vs time, exp and Cayley, two step sizes
  (ρ∞ = 0.9), and Cayley with ρ∞ = 1, which conserves both to round-off;
* ``convergence.png``: ‖R − Rref‖₂ and |Ω − Ωref|/|Ωref| at t1 vs h (order-2 guide), exp and Cayley,

and prints the error table and the Newton iterations per step.

Data (Brüls & Cardona benchmark, digest §8.2b): m = 15 kg, J = diag(0.234375, 0.46875, 0.234375) kg m² about the centre
of mass, centre of mass X = (0, 1, 0) m from the fixed pivot in the body frame, g = (0, 0, −9.81) m/s², R0 = I,
Ω0 = (0, 150, −4.61538) rad/s, ρ∞ = 0.9. Fixed-pivot model ``J0 Ω̇ + Ω × J0 Ω = m X × (Rᵀ g)``, ``J0 = J − m X̃X̃``.
Invariants: energy ``½ΩᵀJ0Ω − m gᵀRX`` and the vertical angular momentum ``e3ᵀ R J0 Ω``.
"""

from __future__ import annotations

import argparse
import functools
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import diffrax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

from jaxse3 import so3  # noqa: E402
from jaxse3.integrate import newton_statistics  # noqa: E402
from jaxse3.integrate.generalized_alpha import GeneralizedAlpha, LieGroupMechanicalTerm  # noqa: E402

MASS = 15.0
J_COM = np.diag([0.234375, 0.46875, 0.234375])
X_COM = np.array([0.0, 1.0, 0.0])
GRAVITY = np.array([0.0, 0.0, -9.81])
OMEGA0 = np.array([0.0, 150.0, -4.61538])
J0 = J_COM - MASS * np.asarray(so3.hat(jnp.asarray(X_COM))) @ np.asarray(so3.hat(jnp.asarray(X_COM)))
N_SAVE = 201


def top_term() -> LieGroupMechanicalTerm:
    """The fixed-pivot heavy top as ``M v̇ + g = 0`` on SO(3) (v = Ω, body angular velocity)."""
    J0j, X, g = jnp.asarray(J0), jnp.asarray(X_COM), jnp.asarray(GRAVITY)
    return LieGroupMechanicalTerm(
        mass=lambda R, args: J0j,
        force=lambda t, R, W, args: jnp.cross(W, J0j @ W) - MASS * jnp.cross(X, R.T @ g),
        spaces=("SO3",),
    )


@functools.cache
def simulator(coordinate_map: str):
    """Jitted ``(h, t1, ρ∞) -> (ts, R(ts), Ω(ts), Newton iterations per step)``."""

    def run(h, t1, rho_inf):
        ts = t1 * jnp.linspace(0.0, 1.0, N_SAVE)
        sol = diffrax.diffeqsolve(
            top_term(),
            GeneralizedAlpha(rho_inf, coordinate_map, tol=1e-12),
            0.0,
            t1,
            h,
            (jnp.eye(3), jnp.asarray(OMEGA0)),
            saveat=diffrax.SaveAt(ts=ts, solver_state=True),
            max_steps=100_000,
        )
        return ts, sol.ys[0], sol.ys[1], newton_statistics(sol)["per_step"]

    return jax.jit(run)


def reference(t1: float):
    """DOP853, rtol = atol = 1e-13, on the 12-dimensional matrix ODE, at the save times."""

    def rhs(t, y):
        R, W = y[:9].reshape(3, 3), y[9:]
        Wt = np.array([[0, -W[2], W[1]], [W[2], 0, -W[0]], [-W[1], W[0], 0]])
        dW = np.linalg.solve(J0, -np.cross(W, J0 @ W) + MASS * np.cross(X_COM, R.T @ GRAVITY))
        return np.concatenate([(R @ Wt).ravel(), dW])

    ts = np.linspace(0.0, t1, N_SAVE)
    y = solve_ivp(
        rhs, (0.0, t1), np.concatenate([np.eye(3).ravel(), OMEGA0]), method="DOP853", rtol=1e-13, atol=1e-13, t_eval=ts
    ).y
    return ts, y[:9].T.reshape(-1, 3, 3), y[9:].T


def invariants(R, W):
    energy = 0.5 * np.einsum("ti,ij,tj->t", W, J0, W) - MASS * np.einsum("i,tij,j->t", GRAVITY, R, X_COM)
    momentum = np.einsum("tj,jk,tk->t", R[:, 2, :], J0, W)
    return energy, momentum


def study(t1: float = 1.0, steps=(1e-3, 5e-4, 2.5e-4, 1.25e-4)):
    ts_ref, R_ref, W_ref = reference(t1)
    runs = {}
    for cm in ("exp", "cayley"):
        for h in steps:
            ts, R, W, newton = simulator(cm)(h, t1, 0.9)
            R, W = np.asarray(R), np.asarray(W)
            runs[cm, h] = dict(
                ts=np.asarray(ts),
                R=R,
                W=W,
                newton=float(newton),
                err_R=np.linalg.norm(R[-1] - R_ref[-1], 2),
                err_W=np.linalg.norm(W[-1] - W_ref[-1]) / np.linalg.norm(W_ref[-1]),
            )
    _, R, W, _ = simulator("cayley")(steps[0], t1, 1.0)  # ρ∞ = 1: conserves both invariants to round-off
    runs["cayley_rho1"] = dict(ts=np.asarray(ts), R=np.asarray(R), W=np.asarray(W))
    return dict(ts=ts_ref, R=R_ref, W=W_ref, runs=runs, steps=steps)


def plot(res, out: str):
    os.makedirs(out, exist_ok=True)
    steps, runs = res["steps"], res["runs"]
    h_show = steps[2]
    fig, axes = plt.subplots(3, 1, figsize=(7, 7), sharex=True)
    for i, ax in enumerate(axes):
        ax.plot(res["ts"], res["W"][:, i], "k-", lw=2.5, alpha=0.3, label="DOP853 reference")
        for cm, style in (("exp", "C0-"), ("cayley", "C1--")):
            r = runs[cm, h_show]
            ax.plot(r["ts"], r["W"][:, i], style, lw=1, label=f"gen-α {cm}, h = {h_show:g}")
        ax.set_ylabel(f"Ω{i + 1} [rad/s]")
    axes[0].legend(fontsize=8)
    axes[-1].set_xlabel("t [s]")
    fig.suptitle("Heavy top: body angular velocity")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "omega.png"), dpi=120)
    plt.close(fig)

    fig, (ax_e, ax_l) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for cm, color in (("exp", "C0"), ("cayley", "C1")):
        for h, ls in ((steps[0], "-"), (steps[2], "--")):
            r = runs[cm, h]
            E, L = invariants(r["R"], r["W"])
            ax_e.plot(r["ts"], (E - E[0]) / abs(E[0]), color=color, ls=ls, label=f"{cm}, h = {h:g}")
            ax_l.plot(r["ts"], L - L[0], color=color, ls=ls, label=f"{cm}, h = {h:g}")
    r = runs["cayley_rho1"]
    E, L = invariants(r["R"], r["W"])
    ax_e.plot(r["ts"], (E - E[0]) / abs(E[0]), color="C2", label=f"cayley, ρ∞ = 1, h = {steps[0]:g}")
    ax_l.plot(r["ts"], L - L[0], color="C2", label=f"cayley, ρ∞ = 1, h = {steps[0]:g}")
    ax_e.set_ylabel("(E − E0)/|E0|")
    ax_l.set_ylabel("L3 − L3(0) [kg m²/s]")
    ax_l.set_xlabel("t [s]")
    ax_e.legend(fontsize=8)
    fig.suptitle("Heavy top: energy and vertical angular momentum drift (ρ∞ = 0.9 unless noted)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "invariants.png"), dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4.5))
    hs = np.array(steps)
    for cm, color in (("exp", "C0"), ("cayley", "C1")):
        ax.loglog(hs, [runs[cm, h]["err_R"] for h in steps], "o-", color=color, label=f"{cm}: ‖R − Rref‖₂")
        ax.loglog(hs, [runs[cm, h]["err_W"] for h in steps], "s--", color=color, label=f"{cm}: |Ω − Ωref|/|Ωref|")
    ax.loglog(hs, runs["exp", steps[0]]["err_R"] * (hs / hs[0]) ** 2, "k:", label="order 2")
    ax.set_xlabel("h [s]")
    ax.set_ylabel("error at t1")
    ax.legend(fontsize=8)
    ax.set_title("Generalised-α convergence (heavy top)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "convergence.png"), dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="./jaxse3-out/heavy_top")
    parser.add_argument("--t1", type=float, default=1.0)
    args = parser.parse_args()
    t0 = time.perf_counter()
    res = study(args.t1)
    print(f"{'map':8s} {'h':>9s} {'|R-Rref|_2':>11s} {'|W-Wref|/|Wref|':>16s} {'Newton/step':>12s}")
    for (cm, h), r in ((k, r) for k, r in res["runs"].items() if k != "cayley_rho1"):
        print(f"{cm:8s} {h:9.3g} {r['err_R']:11.3e} {r['err_W']:16.3e} {r['newton']:12.2f}")
    plot(res, args.out)
    print(f"figures written to {args.out} ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
