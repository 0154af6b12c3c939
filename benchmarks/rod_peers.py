"""The same soft rod in jaxse3 and in its JAX peers SoRoMoX and jsrm, side by side: dynamics, derivatives, statics and
simulation, per entry point, with compile times and a physics cross-check.

The rod: L = 0.5 m, two equal constant-strain segments (piecewise constant strain, PCS), solid circular section
r = 0.02 m, E = 5 MPa, G = E/3, ρ = 1000 kg/m³, material damping υ = 1e3 Pa·s (Υ = υ diag(J_x, 3J_y, 3J_z, 3A, A, A)
per unit length in all three), clamped at the origin along +x, gravity 9.81 m/s² perpendicular to it (a horizontal
cantilever). Two variants:

* planar: strains κ_z (bending), elongation and shear y per segment, 6 DoF, gravity along −y: jsrm (its sympy-derived
  planar PCS, ``planar_pcs_ns-2``), SoRoMoX (``PlanarPCS``) and jaxse3;
* spatial: all six strains per segment, 12 DoF, gravity along −z: SoRoMoX (``PCS``) and jaxse3 (jsrm is planar only).

Matching the models. SoRoMoX's PCS uses ``num_gauss_points=5`` per segment; its coordinates are the strains minus the
reference strain, segment by segment, in jaxse3's component order. jaxse3: ``PiecewiseConstantBasis(2, components)``
with ``Rod(..., n_gauss=5, n_segments=2, magnus_order=2)``: the computational points are the base, 5 Gauss–Legendre
points per segment, the segment end and the tip, so every Magnus interval lies in one segment, the strain is constant
on it and the 2nd-order (midpoint) Magnus step is exact, and the quadrature is SoRoMoX's. jsrm integrates its closed
forms exactly; its rod runs along its local y axis, its strains per segment are (bending, shear, axial) with the shear
along the right-hand normal, so its coordinates are jaxse3's (κ, −shear, elongation) per segment (a signed
permutation P), its base angle is −π/2, its shear stiffness carries a factor 4/3 (we pass G' = 3G/4 so that the
physics is the same) and its damping is the strain-space matrix υ l diag(3J, A, 3A) per segment. jsrm clamps
|κ| < 1e−2 inside its dynamics (its closed forms divide by κ), so every state used here bends away from straight.

Entry points (CPU, float64; the median of interleaved samples, compile time separate and cold: the persistent
compilation cache that ``import jaxse3`` turns on is off here unless ``JAXSE3_CACHE`` is set; see ``_timing.py``):

1. forward dynamics q̈ = FD(q, q̇), ``jax.vmap`` over ``--batch`` random states (time per state) and at batch 1 (on a
   CPU jaxse3's ``vmap`` runs in chunks of 8 states, its functions' own batching rule, ``jaxse3._chunks``; the
   peers' as one ``vmap``);
2. the Jacobian ∂FD/∂(q, q̇), vmapped: ``jax.jacfwd`` for the peers (autodiff), for jaxse3 ``jax.jacfwd`` of
   ``rod.forward_dynamics`` (its analytic custom_jvp rules) and ``rod.forward_dynamics_jacobians``;
3. the static equilibrium under gravity: ``optimistix.Newton`` (rtol = atol = 1e−10) on each library's static force
   residual (SoRoMoX ``potential_force``, jsrm G + K, jaxse3 τ − ID at rest) from the same bent start, plus
   jaxse3's ``sim.solve_statics`` (adaptive load continuation from straight);
4. 1 s of motion from rest at half the static deflection: diffrax ``Tsit5`` with ``PIDController(rtol=1e−6,
   atol=1e−8)`` for all, plus jaxse3's ``sim.simulate`` (Kvaerno5 with its analytic Jacobian) at the same tolerances.

Physics check (printed, and the script stops with the quantity and its size if one fails): the static tip, the
relative difference of FD (and of its Jacobian) at the random states, and the tip at 1 s, each against jaxse3.

The peers are optional (``pip install soromox jsrm``, or ``pip install -e ".[bench]"``): without them the jaxse3
rows run alone.

    python benchmarks/rod_peers.py [--quick] [--batch 1000] [--repeats 7] [--variants planar spatial]
        [--markdown out.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from importlib.metadata import version

# compile times are cold ones: no persistent compilation cache (import jaxse3 would turn it on for every library in
# the process) unless the caller sets JAXSE3_CACHE
os.environ.setdefault("JAXSE3_CACHE", "0")

import jax

jax.config.update("jax_enable_x64", True)

import diffrax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optimistix as optx  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _timing import fmt_time, time_group  # noqa: E402

from jaxse3 import rod as R, sim  # noqa: E402

L, N_SEG, RADIUS, E, RHO, UPSILON, GRAVITY, N_GAUSS = 0.5, 2, 0.02, 5e6, 1000.0, 1e3, 9.81, 5
G = E / 3
AREA, J_BEND = np.pi * RADIUS**2, np.pi * RADIUS**4 / 4
PLANAR = ("bend_z", "elongation", "shear_y")
T_FINAL, RTOL, ATOL = 1.0, 1e-6, 1e-8
NEWTON_TOL = 1e-10
#: physics-check tolerances against jaxse3 (relative for FD and its Jacobian; metres for tips). SoRoMoX's Gauss nodes
#: come from a Newton iteration stopped at ~2e−8, which moves its mass matrix by ~6e−8 (relative); jsrm's closed forms
#: lose digits by cancellation at small curvature (mass matrix ~5e−8 off at κ l ≈ 0.01), amplified by the mass
#: matrix's condition number (~1e4) in FD.
TOLERANCES = {
    "SoRoMoX": {"FD": 1e-6, "Jacobian": 1e-5, "statics tip": 1e-6, "tip at 1 s": 1e-5},
    "jsrm": {"FD": 1e-3, "Jacobian": 1e-2, "statics tip": 1e-6, "tip at 1 s": 1e-5},
}


@dataclass
class Model:
    """One library's model of the rod, in its own coordinates q_lib = P q (q: jaxse3's coordinates)."""

    name: str
    P: np.ndarray
    fd: callable  # (q, q̇) -> q̈
    residual: callable  # q -> static force residual (zero at equilibrium)
    tip: callable  # q -> world tip position, (2,) planar / (3,) spatial
    extra: dict = field(default_factory=dict)

    def to_lib(self, x):
        return jnp.asarray(x) @ jnp.asarray(self.P).T  # (..., n) jaxse3 → library coordinates

    def from_lib(self, x):
        return jnp.asarray(x) @ jnp.asarray(self.P)


def jaxse3_model(planar: bool) -> Model:
    basis = R.PiecewiseConstantBasis(N_SEG, PLANAR if planar else R.basis.STRAIN_NAMES)
    rod = R.Rod(
        L,
        R.CircularSection(RADIUS),
        R.Material(E, RHO, G=G, damping=UPSILON),
        basis,
        n_gauss=N_GAUSS,
        n_segments=N_SEG,
        magnus_order=2,
        gravity=(0.0, -GRAVITY, 0.0) if planar else (0.0, 0.0, -GRAVITY),
    )
    system = sim.rod_system(rod)
    n = rod.n_dof
    no_input = jnp.zeros(0)
    k = 2 if planar else 3
    return Model(
        "jaxse3",
        np.eye(n),
        lambda q, qd: R.forward_dynamics(rod, q, qd),
        lambda q: system.statics_residual(q, no_input),
        lambda q: R.tip_position(rod, q)[:k],
        extra={"rod": rod, "system": system},
    )


def soromox_model(planar: bool) -> Model:
    from soromox.systems import PCS, LinkSpec, PCSStructure, PlanarPCS, PlanarPCSStructure

    ref = [0.0, 1.0, 0.0] if planar else [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    link = LinkSpec.circular(
        length=L / N_SEG,
        radius=RADIUS,
        density=RHO,
        reference_strain=ref,
        young_modulus=E,
        shear_modulus=G,
        material_damping_coefficient=UPSILON,
    )
    if planar:
        robot = PlanarPCS.from_links(
            [link] * N_SEG,
            structure=PlanarPCSStructure(num_gauss_points=N_GAUSS),
            gravity=jnp.array([0.0, -GRAVITY]),
            base_pose=jnp.zeros(3),  # [θ, x, y]: along +x
        )
        tip = lambda q: robot.forward_kinematics(q, jnp.asarray(L))[1:3]
    else:
        robot = PCS.from_links(
            [link] * N_SEG,
            structure=PCSStructure(num_gauss_points=N_GAUSS),
            gravity=jnp.array([0.0, 0.0, -GRAVITY]),
            base_pose=jnp.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]),  # identity quaternion, origin: along +x
        )
        tip = lambda q: robot.forward_kinematics(q, jnp.asarray(L))[:3, 3]
    n = N_SEG * len(ref)
    return Model(
        "SoRoMoX",
        np.eye(n),
        lambda q, qd: robot.forward_dynamics(0.0, jnp.concatenate([q, qd]))[n:],
        robot.potential_force,
        tip,
    )


def jsrm_model() -> Model:
    from pathlib import Path

    import jsrm
    from jsrm.systems import euler_lagrangian, planar_pcs

    path = Path(jsrm.__file__).parent / "symbolic_expressions" / f"planar_pcs_ns-{N_SEG}.dill"
    _, fk, dyn, _ = planar_pcs.factory(path)
    l = L / N_SEG
    ones = jnp.ones(N_SEG)
    params = {
        "th0": jnp.asarray(-np.pi / 2),  # jsrm's rod runs along its local y axis: −π/2 lays it along +x
        "l": l * ones,
        "r": RADIUS * ones,
        "rho": RHO * ones,
        "g": jnp.array([0.0, -GRAVITY]),
        "E": E * ones,
        "G": 0.75 * G * ones,  # jsrm's shear stiffness is (4/3) G A: pass 3G/4 for G A
        "D": jnp.asarray(np.diag(np.tile([3 * J_BEND, AREA, 3 * AREA], N_SEG) * UPSILON * l)),
    }
    P = np.zeros((3 * N_SEG, 3 * N_SEG))
    for s in range(N_SEG):  # jaxse3 (κ, elongation, shear y) → jsrm (κ, shear along the right normal, axial)
        P[3 * s, 3 * s], P[3 * s + 1, 3 * s + 2], P[3 * s + 2, 3 * s + 1] = 1.0, -1.0, 1.0
    zero = jnp.zeros(3 * N_SEG)

    def residual(q):
        _, _, Gq, Kq, _, _ = dyn(params, q, zero)
        return Gq + Kq

    return Model(
        "jsrm",
        P,
        lambda q, qd: euler_lagrangian.forward_dynamics(dyn, params, q, qd, zero),
        residual,
        lambda q: fk(params, q, jnp.asarray(L))[:2],
    )


def random_states(n_batch: int, planar: bool, seed: int = 0):
    """(q, q̇) in jaxse3 coordinates: angular strains ±U[0.2, 2] 1/m (away from jsrm's |κ| < 1e−2 clamp), linear
    strains N(0, 0.02), angular rates N(0, 1) 1/(m s), linear rates N(0, 0.05) 1/s."""
    rng = np.random.default_rng(seed)
    angular = np.array([True, False, False] if planar else [True] * 3 + [False] * 3)
    angular = np.tile(angular, N_SEG)
    n = angular.size
    kappa = rng.choice([-1.0, 1.0], size=(n_batch, n)) * rng.uniform(0.2, 2.0, size=(n_batch, n))
    q = np.where(angular, kappa, rng.normal(0.0, 0.02, size=(n_batch, n)))
    qd = np.where(angular, rng.normal(0.0, 1.0, size=(n_batch, n)), rng.normal(0.0, 0.05, size=(n_batch, n)))
    return jnp.asarray(q), jnp.asarray(qd)


def newton_statics(model: Model):
    def solve(q0):
        sol = optx.root_find(
            lambda q, _: model.residual(q),
            optx.Newton(rtol=NEWTON_TOL, atol=NEWTON_TOL),
            q0,
            max_steps=50,
            throw=False,
        )
        return sol.value, sol.stats["num_steps"], sol.result == optx.RESULTS.successful

    return solve


def tsit5_simulation(model: Model):
    def vector_field(t, y, args):
        q, qd = y
        return qd, model.fd(q, qd)

    def run(q0):
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(vector_field),
            diffrax.Tsit5(),
            0.0,
            T_FINAL,
            None,
            (q0, jnp.zeros_like(q0)),
            saveat=diffrax.SaveAt(t1=True),
            stepsize_controller=diffrax.PIDController(rtol=RTOL, atol=ATOL),
            max_steps=1_000_000,
            throw=False,
        )
        return sol.ys[0][-1], sol.stats["num_steps"], sol.result == diffrax.RESULTS.successful

    return run


def jaxse3_simulate(system):
    def run(q0):
        tr = sim.simulate(system, t_final=T_FINAL, q0=q0, rtol=RTOL, atol=ATOL, n_save=2, throw=False)
        return tr.q[-1], tr.num_steps, tr.result == 0

    return run


class PhysicsMismatch(SystemExit):
    pass


def _rel(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def check(checks: list, variant: str, quantity: str, peer: str, value: float, unit: str = ""):
    tol = TOLERANCES[peer][quantity]
    checks.append((variant, quantity, peer, value, tol, unit))
    print(f"  check [{variant}] {quantity:12s} {peer:8s} vs jaxse3: {value:.2e}{unit} (tolerance {tol:g}{unit})")
    if not value <= tol:
        raise PhysicsMismatch(
            f"physics check failed ({variant}): the {quantity} of {peer} differs from jaxse3's by {value:.3g}{unit}, "
            f"more than the tolerance {tol:g}{unit}: the models do not describe the same rod"
        )


@dataclass
class Row:
    label: str
    unit: str  # "per state" or "per solve"
    cells: dict  # library -> (seconds, compile seconds, note)


def run_variant(variant: str, peers: list[str], batch: int, repeats: int, min_sample_s: float, checks: list):
    planar = variant == "planar"
    ours = jaxse3_model(planar)
    models = [jsrm_model()] if "jsrm" in peers and planar else []
    if "SoRoMoX" in peers:
        models.append(soromox_model(planar))
    models.append(ours)
    names = [m.name for m in models]
    n = ours.extra["rod"].n_dof
    print(f"\n[{variant}] {n} DoF; libraries: {', '.join(names)}; batch {batch}, {repeats} samples", flush=True)
    rows: list[Row] = []

    def group(label, unit, cases, scale=1.0):
        """cases: [(library, fn, args, note_fn)]; timed round-robin; returns the outputs by case index."""
        tms = time_group([(fn, args) for _, fn, args, _ in cases], repeats=repeats, min_sample_s=min_sample_s)
        cells = {}
        for (lib, _, _, note), tm in zip(cases, tms):
            cells[lib] = (tm.median_s / scale, tm.compile_s, note(tm.out) if note else "")
        rows.append(Row(label, unit, cells))
        print(
            f"  {label}: " + ", ".join(f"{lib} {fmt_time(s)} (compile {c:.1f} s)" for lib, (s, c, _) in cells.items()),
            flush=True,
        )
        return [tm.out for tm in tms]

    Q, QD = random_states(batch, planar)
    lib_states = {m.name: (m.to_lib(Q), m.to_lib(QD)) for m in models}

    # 1. forward dynamics
    outs = group(
        f"forward dynamics, vmap {batch}",
        "per state",
        [(m.name, jax.vmap(m.fd), lib_states[m.name], None) for m in models],
        scale=batch,
    )
    fd = {m.name: m.from_lib(o) for m, o in zip(models, outs)}
    for peer in names[:-1]:
        check(checks, variant, "FD", peer, _rel(fd[peer], fd["jaxse3"]))
    group(
        "forward dynamics, batch 1",
        "per state",
        [(m.name, m.fd, tuple(x[0] for x in lib_states[m.name]), None) for m in models],
    )

    # 2. Jacobians
    jac_cases = [(m.name, jax.vmap(jax.jacfwd(m.fd, argnums=(0, 1))), lib_states[m.name], None) for m in models]
    rod = ours.extra["rod"]
    jac_cases.append(
        (
            "jaxse3 `forward_dynamics_jacobians`",
            jax.vmap(lambda q, qd: R.forward_dynamics_jacobians(rod, q, qd)),
            (Q, QD),
            None,
        )
    )
    outs = group(f"∂FD/∂(q, q̇), vmap {batch} (jacfwd)", "per state", jac_cases, scale=batch)
    P = {m.name: jnp.asarray(m.P) for m in models}
    jac = {
        m.name: jnp.concatenate([P[m.name].T @ o[0] @ P[m.name], P[m.name].T @ o[1] @ P[m.name]], -1)
        for m, o in zip(models, outs)
    }
    direct = jnp.concatenate(outs[-1], -1)
    if (d := _rel(direct, jac["jaxse3"])) > 1e-10:
        raise PhysicsMismatch(f"jaxse3's forward_dynamics_jacobians and jacfwd(forward_dynamics) differ by {d:.3g}")
    for peer in names[:-1]:
        check(checks, variant, "Jacobian", peer, _rel(jac[peer], jac["jaxse3"]))

    # 3. statics
    q_start = np.zeros(n)
    bend = np.tile([True, False, False] if planar else [False, True, False, False, False, False], N_SEG)
    q_start[bend] = 0.1 if not planar else -0.1  # bent towards gravity, away from straight
    if not planar:
        q_start[np.tile([False, False, True, False, False, False], N_SEG)] = 0.05  # and out of the loaded plane
    q_start = jnp.asarray(q_start)
    newton_note = lambda out: f"{int(out[1])} Newton it."
    cases = [(m.name, newton_statics(m), (m.to_lib(q_start),), newton_note) for m in models]
    system = ours.extra["system"]
    cases.append(
        (
            "jaxse3 `sim.solve_statics` (load continuation)",
            lambda rod: (lambda s: (s.q, s.num_steps, s.converged))(
                sim.solve_statics(sim.rod_system(rod), throw=False)
            ),
            (rod,),
            lambda out: f"{int(out[1])} Newton it.",
        )
    )
    outs = group("statics under gravity, optimistix Newton", "per solve", cases)
    for (lib, *_), out in zip(cases, outs):
        if not bool(out[2]):
            raise PhysicsMismatch(f"statics ({variant}): {lib} did not converge")
    q_static = {m.name: m.from_lib(o[0]) for m, o in zip(models, outs)}
    tips = {m.name: np.asarray(m.tip(m.to_lib(q_static[m.name]))) for m in models}
    if _rel(outs[-1][0], q_static["jaxse3"]) > 1e-8:
        raise PhysicsMismatch("statics: jaxse3's solve_statics and optimistix Newton reach different equilibria")
    print(f"  static tip (jaxse3): {np.array2string(tips['jaxse3'], precision=6)} m")
    for peer in names[:-1]:
        check(checks, variant, "statics tip", peer, float(np.linalg.norm(tips[peer] - tips["jaxse3"])), " m")

    # 4. simulation from rest at half the static deflection
    q0 = 0.5 * q_static["jaxse3"]
    step_note = lambda out: f"{int(out[1])} steps"
    cases = [(m.name, tsit5_simulation(m), (m.to_lib(q0),), step_note) for m in models]
    cases.append(("jaxse3 `sim.simulate` (Kvaerno5, analytic Jacobian)", jaxse3_simulate(system), (q0,), step_note))
    outs = group(f"{T_FINAL:g} s from rest, Tsit5 (rtol {RTOL:g})", "per solve", cases)
    for (lib, *_), out in zip(cases, outs):
        if not bool(out[2]):
            raise PhysicsMismatch(f"simulation ({variant}): {lib} failed (diffrax result {out[2]})")
    tips = {m.name: np.asarray(m.tip(o[0])) for m, o in zip(models, outs)}
    tip_k5 = np.asarray(ours.tip(outs[-1][0]))
    print(
        f"  tip at {T_FINAL:g} s (jaxse3 Tsit5): {np.array2string(tips['jaxse3'], precision=6)} m; Kvaerno5 differs by "
        f"{np.linalg.norm(tip_k5 - tips['jaxse3']):.1e} m"
    )
    for peer in names[:-1]:
        check(checks, variant, "tip at 1 s", peer, float(np.linalg.norm(tips[peer] - tips["jaxse3"])), " m")
    return rows, names


def markdown(variant: str, rows: list[Row], names: list[str]) -> str:
    """One table: a row per entry point (the peers' and jaxse3's times side by side), and under it a "↳" row for each
    of jaxse3's own alternatives, its ratios taken against the same peer times."""
    peers = names[:-1]
    head = ["entry point", "per", *names] + [f"jaxse3 ÷ {p}" for p in peers]
    head += ["compile s (" + " / ".join(names) + ")", "notes"]
    lines = [
        f"#### {variant}",
        "",
        "| " + " | ".join(head) + " |",
        "|---|---|" + "---:|" * (len(head) - 4) + "---|---|",
    ]
    for row in rows:
        for who in ["jaxse3", *(lib for lib in row.cells if lib not in names)]:
            t, main_row = row.cells[who], who == "jaxse3"
            label = row.label if main_row else f"↳ {who}"
            times = [fmt_time(row.cells[p][0]) if main_row else "" for p in peers] + [fmt_time(t[0])]
            ratio = [f"{t[0] / row.cells[p][0]:.2f}" for p in peers]
            compile_s = " / ".join(f"{row.cells[lib][1]:.1f}" for lib in names) if main_row else f"{t[1]:.1f}"
            notes = "; ".join(f"{lib}: {row.cells[lib][2]}" for lib in names if row.cells[lib][2]) if main_row else t[2]
            cells = [label, row.unit.removeprefix("per "), *times, *ratio, compile_s, notes]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: batch 100, 3 samples")
    p.add_argument("--batch", type=int, default=None, help="vmapped batch of random states (default 1000)")
    p.add_argument("--repeats", type=int, default=None, help="timed samples per case (default 7; 3 with --quick)")
    p.add_argument("--variants", nargs="*", default=["planar", "spatial"], choices=["planar", "spatial"])
    p.add_argument("--markdown", metavar="PATH", help="also write the tables to this markdown file")
    a = p.parse_args(argv)
    batch = a.batch if a.batch is not None else (100 if a.quick else 1000)
    repeats = a.repeats if a.repeats is not None else (3 if a.quick else 7)
    min_sample_s = 0.005 if a.quick else 0.02

    peers, missing = [], []
    for lib, module in (("jsrm", "jsrm"), ("SoRoMoX", "soromox")):
        (peers if importlib.util.find_spec(module) is not None else missing).append(lib)
    versions = ", ".join(
        f"{m} {version(m)}" for m in ("jax", "diffrax", "optimistix", "soromox", "jsrm") if importlib.util.find_spec(m)
    )
    print(f"{versions}; {jax.default_backend()}, float64, {os.cpu_count()} CPUs visible")
    if missing:
        print(
            f"peers missing: {', '.join(missing)} — install them with `pip install soromox jsrm` (or "
            '`pip install -e ".[bench]"`); running the rows of the libraries present'
        )
    checks, tables = [], []
    for variant in a.variants:
        rows, names = run_variant(variant, peers, batch, repeats, min_sample_s, checks)
        tables.append(markdown(variant, rows, names))
    text = "\n\n".join(tables)
    print("\n" + text)
    if checks:
        print("\nphysics checks passed: " + "; ".join(f"{v} {q} {p} {x:.1e}{u}" for v, q, p, x, _, u in checks))
    print(
        "\njaxse3 ÷ peer > 1: jaxse3 is slower. Vmapped rows: the batch's time / batch. ↳ rows: jaxse3's own "
        "alternative for the entry point above, compared with the same peer times."
    )
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
