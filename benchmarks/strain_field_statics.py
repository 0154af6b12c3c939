"""Strain-field rod statics: Newton with the exact (closed-form) Hessian vs autodiff Hessian vs gradient-only L-BFGS.

Usage::

    python benchmarks/strain_field_statics.py [--degrees 8 16] [--repeats 5]

Problem: the seed 000 §7 rubber rod (8 × 8 mm², L = 100 mm, E = 10 MPa, G = 0.3 MPa), clamped, tip force with
F L²/(EI) = 2 (large deflection), unknowns the 6 × degree Chebyshev field coefficients (:mod:`jaxse3.rod.strain_field`).

Compared, in one run (float64, CPU, medians of interleaved repeats, compile time separate, ``block_until_ready``):

1. one Hessian of the total potential: ``jax.hessian`` through the closed-form custom_jvp rules (eqs. (15), (16);
   what :func:`jaxse3.sim.energy_statics.solve_statics` uses) vs ``jax.hessian`` of the plain energy (the same
   Taylor-switched dexp written as a plain ad-polynomial, differentiated by JAX: "autodiff Hessian");
2. the full Newton solve with each Hessian (same iterates; time per iteration and total);
3. gradient-only: optax L-BFGS (zoom line search) to the same relative residual ‖∇Π‖ ≤ 1e-10 ‖∇Π₀‖ (iterations, time).
"""

from __future__ import annotations

import argparse
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _timing import time_group, time_jit  # noqa: E402

from jaxse3.lie import (  # noqa: E402
    SE3,
    adpoly,
    rules,
)
from jaxse3.rod import strain_field as sf  # noqa: E402
from jaxse3.sim import energy_statics as es  # noqa: E402

L, E, G, A, I = 100.0, 10.0, 0.3, 64.0, 8.0**4 / 12.0
RTOL = 1e-10


def plain_energy(rod, c):
    """The elastic energy with dexp_{−X} as a plain ad-polynomial (no custom rules): autodiff differentiates it."""
    X, dX = rod.basis0 @ c, rod.basis1 @ c

    def dens(X, dX):
        D = adpoly.value(SE3, -X, rules.family_poly(SE3, -X, "dexp", 0))
        e = D @ dX - rod.reference_strain
        return 0.5 * e @ rod.stiffness @ e

    return jnp.dot(rod.weights, jax.vmap(dens)(X, dX))


def lbfgs(rod, loads, max_steps=20000):
    f = lambda c: es.potential(rod, loads, c)
    opt = optax.lbfgs()
    vg = optax.value_and_grad_from_state(f)
    c0 = rod.straight()
    g0 = jnp.linalg.norm(jax.grad(f)(c0))

    def cond(s):
        _c, _st, k, r = s
        return (r > RTOL * g0) & (k < max_steps)

    def body(s):
        c, st, k, _ = s
        v, g = vg(c, state=st)
        u, st = opt.update(g, st, c, value=v, grad=g, value_fn=f)
        c = optax.apply_updates(c, u)
        return c, st, k + 1, jnp.linalg.norm(jax.grad(f)(c))

    c, _, k, r = jax.lax.while_loop(cond, body, (c0, opt.init(c0), 0, g0))
    return c, k, r / g0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--degrees", type=int, nargs="+", default=[8, 16])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    loads = es.RodLoads(tip_force=(0.0, -2.0 * E * I / L**2, 0.0))
    solver = es.NewtonMinimiser(rtol=RTOL, atol=0.0)
    rows = []
    for deg in args.degrees:
        rod = sf.StrainFieldRod.from_material(L, E, G, A, I, I, 2 * I, degree=deg)
        n = 6 * rod.n_coeffs
        c = es.solve_statics(rod, loads, solver=solver).value  # a deformed state for the Hessian timing
        h_exact = lambda r, c: jax.hessian(lambda c: es.potential(r, loads, c))(c)
        h_plain = lambda r, c: jax.hessian(lambda c: es.potential(r, loads, c, plain_energy))(c)
        h_asm = lambda r, c: sf.energy_hessian(r, c)
        t_ex, t_pl, t_asm = time_group(
            [(h_exact, (rod, c)), (h_plain, (rod, c)), (h_asm, (rod, c))], repeats=args.repeats
        )
        err = float(jnp.abs(t_ex.out - t_pl.out).max() / jnp.abs(t_ex.out).max())
        s_ex = time_jit(lambda r: es.solve_statics(r, loads, solver=solver), rod, repeats=args.repeats)
        s_pl = time_jit(
            lambda r: es.solve_statics(r, loads, solver=solver, elastic=plain_energy), rod, repeats=args.repeats
        )
        s_lb = time_jit(lambda r: lbfgs(r, loads), rod, repeats=args.repeats)
        it_ex, it_pl = int(s_ex.out.num_steps), int(s_pl.out.num_steps)
        tip_ex = sf.positions(rod, s_ex.out.value, 1.0)
        tip_lb = sf.positions(rod, s_lb.out[0], 1.0)
        rows.append(
            dict(
                deg=deg,
                n=n,
                h_ex=t_ex.median_s,
                h_pl=t_pl.median_s,
                h_asm=t_asm.median_s,
                herr=err,
                c_ex=t_ex.compile_s,
                c_pl=t_pl.compile_s,
                it_ex=it_ex,
                it_pl=it_pl,
                s_ex=s_ex.median_s,
                s_pl=s_pl.median_s,
                s_lb=s_lb.median_s,
                it_lb=int(s_lb.out[1]),
                r_lb=float(s_lb.out[2]),
                r_ex=float(s_ex.out.stats["residuals"][it_ex] / s_ex.out.stats["residuals"][0]),
                dtip=float(jnp.linalg.norm(tip_ex - tip_lb) / jnp.linalg.norm(tip_ex)),
            )
        )
    print("Hessian of the total potential (one evaluation, median):")
    print(
        "| degree | unknowns | exact (rules) | autodiff (plain) | ratio plain/exact | assembled elastic (16) |"
        " max rel. diff | compile exact / plain |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['deg']} | {r['n']} | {r['h_ex'] * 1e3:.3f} ms | {r['h_pl'] * 1e3:.3f} ms | "
            f"{r['h_pl'] / r['h_ex']:.2f} | {r['h_asm'] * 1e3:.3f} ms | {r['herr']:.1e} | "
            f"{r['c_ex']:.1f} s / {r['c_pl']:.1f} s |"
        )
    print("\nFull solve to ‖∇Π‖ ≤ 1e-10 ‖∇Π₀‖ (median):")
    print(
        "| degree | Newton exact: iters, time, per iter | Newton autodiff: iters, time, per iter | ratio |"
        " L-BFGS (optax): iters, time, final rel. residual | L-BFGS/Newton time | tip diff |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['deg']} | {r['it_ex']}, {r['s_ex'] * 1e3:.1f} ms, {r['s_ex'] / r['it_ex'] * 1e3:.2f} ms | "
            f"{r['it_pl']}, {r['s_pl'] * 1e3:.1f} ms, {r['s_pl'] / r['it_pl'] * 1e3:.2f} ms | "
            f"{r['s_pl'] / r['s_ex']:.2f} | {r['it_lb']}, {r['s_lb'] * 1e3:.1f} ms, {r['r_lb']:.1e} | "
            f"{r['s_lb'] / r['s_ex']:.1f} | {r['dtip']:.1e} |"
        )


if __name__ == "__main__":
    main()
