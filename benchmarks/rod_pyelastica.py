"""jaxse3 (GVS rod) vs PyElastica on the same tapered cantilever released straight under gravity, side by side.

The rod: L = 0.5 m, radius 3 → 1.5 cm (linear taper), E = 1 MPa, G = E/3 (ν = 0.5), ρ = 1000 kg/m³, no damping, no
cables; clamped at the origin, lying along +x, gravity −9.81 along z; released from rest and simulated for 1 s.

* jaxse3: the GVS rod (Legendre 4 angular / 2 linear, 24 DoF, 5 Gauss points, the CDM discretisation), Tsit5 (the
  undamped rod is not stiff at this resolution), rtol ``--rtol``; batched: ``--batch`` rods (E varied by ±1 %) in one
  vmap.
* PyElastica: ``--elements`` elements, PositionVerlet, dt ``--dt``. PyElastica has no batch mode: B rods cost B times
  one rod (its per-rod time is what we scale by).
* Reference: jaxse3 at high resolution (Legendre 8 angular / 4 linear, 12 Gauss points, rtol 1e−10).

Prints wall time per simulated second (compile/numba-JIT separate), the tip position at 1 s and its distance to the
reference, and rod-seconds per wall second for 1 and B rods.

    python benchmarks/rod_pyelastica.py [--batch 1024] [--elements 50] [--dt 2e-5] [--rtol 1e-6]
"""

from __future__ import annotations

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3 import rod as rods  # noqa: E402
from jaxse3.sim import rod_system, simulate, simulate_batch, stack  # noqa: E402

L, RB, RT, E, RHO, T = 0.5, 0.03, 0.015, 1e6, 1000.0, 1.0


def gvs_rod(orders=(4, 4, 4, 2, 2, 2), n_gauss=5, E=E):
    return rods.Rod(L, rods.CircularSection(RB, RT), rods.Material(E=E, rho=RHO, nu=0.5, damping=0.0),
                    rods.LegendreBasis(orders), n_gauss=n_gauss)  # fmt: skip


def pyelastica_tip(n_elements: int, dt: float) -> tuple[np.ndarray, float, float]:
    """Tip at T, wall time of the run, and of a 10-step warm-up (numba compilation)."""
    import elastica as ea

    class Sim(ea.BaseSystemCollection, ea.Constraints, ea.Forcing):
        pass

    def build():
        sim = Sim()
        X = (np.arange(n_elements) + 0.5) / n_elements * L
        rod = ea.CosseratRod.straight_rod(n_elements, np.zeros(3), np.array([1.0, 0, 0]), np.array([0, 0, 1.0]), L,
                                          RB + (RT - RB) * X / L, RHO, youngs_modulus=E, shear_modulus=E / 3)  # fmt: skip
        sim.append(rod)
        sim.constrain(rod).using(ea.OneEndFixedBC, constrained_position_idx=(0,), constrained_director_idx=(0,))
        sim.add_forcing_to(rod).using(ea.GravityForces, acc_gravity=np.array([0.0, 0.0, -9.81]))
        sim.finalize()
        return sim, rod

    sim, _ = build()
    t0 = time.perf_counter()
    ea.integrate(ea.PositionVerlet(), sim, 10 * dt, 10, progress_bar=False)
    warm = time.perf_counter() - t0
    sim, rod = build()
    t0 = time.perf_counter()
    ea.integrate(ea.PositionVerlet(), sim, T, int(round(T / dt)), progress_bar=False)
    return np.array(rod.position_collection[:, -1]), time.perf_counter() - t0, warm


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--elements", type=int, default=50)
    p.add_argument("--dt", type=float, default=2e-5)
    p.add_argument("--rtol", type=float, default=1e-6)
    a = p.parse_args(argv)
    kw = dict(solver="tsit5", n_save=2)

    ref = simulate(rod_system(gvs_rod((8, 8, 8, 4, 4, 4), 12)), t_final=T, rtol=1e-10, atol=1e-12, **kw).tip[-1]
    ref = np.asarray(ref)
    system = rod_system(gvs_rod())
    t0 = time.perf_counter()
    jax.block_until_ready(simulate(system, t_final=1e-3, rtol=a.rtol, atol=a.rtol, **kw))
    c1 = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = jax.block_until_ready(simulate(system, t_final=T, rtol=a.rtol, atol=a.rtol, **kw))
    w1 = time.perf_counter() - t0
    batch = stack([rod_system(gvs_rod(E=E * (1 + 0.01 * s))) for s in np.linspace(-1, 1, a.batch)])
    t0 = time.perf_counter()
    jax.block_until_ready(simulate_batch(batch, None, batch_system=True, batch_inputs=False, t_final=1e-3,
                                         rtol=a.rtol, atol=a.rtol, **kw))  # fmt: skip
    cB = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(simulate_batch(batch, None, batch_system=True, batch_inputs=False, t_final=T, rtol=a.rtol,
                                         atol=a.rtol, **kw))  # fmt: skip
    wB = time.perf_counter() - t0
    tip_pe, wpe, cpe = pyelastica_tip(a.elements, a.dt)

    print(f"tapered cantilever under gravity, {T} s, reference tip (jaxse3 high resolution) {np.round(ref, 5)} m")
    print(f"{'':34s} {'wall / sim-s':>12s} {'tip error':>10s} {'rod-s/wall-s':>13s} {'compile':>8s}")
    rows = [(f"jaxse3 GVS 24 DoF, 1 rod", w1, np.linalg.norm(np.asarray(ours.tip[-1]) - ref), T / w1, c1),
            (f"jaxse3 GVS 24 DoF, {a.batch} rods (vmap)", wB, float("nan"), a.batch * T / wB, cB),
            (f"PyElastica {a.elements} el., dt {a.dt:g}, 1 rod", wpe, np.linalg.norm(tip_pe - ref), T / wpe, cpe),
            (f"PyElastica, {a.batch} rods (B × 1 rod)", wpe * a.batch, float("nan"), T / wpe, float("nan"))]  # fmt: skip
    for name, w, err, thr, c in rows:
        print(f"{name:34s} {w / T:11.3f}s {err:9.1e}m {thr:13.2f} {c:7.1f}s")
    print(f"throughput ratio jaxse3/PyElastica: 1 rod {wpe / w1:.1f}×, {a.batch} rods {a.batch * wpe / wB:.1f}×")


if __name__ == "__main__":
    main()
