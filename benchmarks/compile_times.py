"""Compile time of jaxse3's main entry points: trace, lower and XLA compile (each timed apart), HLO size, first run.

Each entry point runs in a fresh Python process with the persistent compilation cache off (``JAXSE3_CACHE=0``), so
nothing traced or compiled by an earlier case is reused — what a user waits for the first time. Per case::

    traced = jax.jit(fn).trace(*args)   # Python tracing: the rules' bodies, solvers, loops
    lowered = traced.lower()            # to StableHLO
    compiled = lowered.compile()        # XLA's passes and code generation (the default options)

and then one call of the compiled function (``run``). "HLO chars" is the length of the lowered program's text, a
size measure of what XLA receives. The cases:

* the Lie core: ``jax.jacfwd``, ``jax.jacrev`` and ``jax.hessian`` (of h = Qᵀ f(X)) of ``se3.dexp_apply`` and
  ``se3.dexp_inv_apply`` through their rules, beside the same of the plain implementation that
  ``benchmarks/bench_lie.py`` differentiates by ordinary autodiff (needs jaxlie, the ``bench`` extra, for that module);
* the CDM rod (24 DoF): ``rod.forward_dynamics`` and its ``jax.jacfwd`` (n_gauss 5 and 64); ``sim.solve_statics``;
  a 0.1 s Kvaerno5 and a 0.1 s Newmark ``sim.simulate``; the first ``jax.grad`` through 0.5 s of Newmark dynamics
  (20 tension knots, as ``benchmarks/optim.py``) — ``slow``;
* rigid trees: IDSVA first and second order (``rnea_derivatives``, ``rnea_second_order_derivatives``) on HyQ
  (example-robot-data) or, without it, a random 18-DoF floating tree;
* the strain-field rod: ``energy_hessian`` at degree 8;
* a closed chain: the planar four-bar of the tests (``tests/linkage/four_bar.py``; 3 DoF, one planar closure), a
  0.1 s Kvaerno5 ``sim.simulate`` of its Baumgarte form and a 0.1 s index-3 Newmark-β one.

``JAXSE3_SMALL_PRODUCTS=0`` in the environment measures the same with a kernel for every small matrix product.

Run on a quiet machine (``uptime`` load < 1.5), one core for comparable numbers::

    taskset -c 0 python benchmarks/compile_times.py [--cases NAME ...] [--skip-slow] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _lie_cases() -> dict:
    import jax
    import jax.numpy as jnp

    from jaxse3 import se3

    try:
        sys.path.insert(0, HERE)
        from bench_lie import plain_dexp_apply, plain_dexp_inv_apply
    except ImportError:  # jaxlie (the bench extra) missing
        plain_dexp_apply = plain_dexp_inv_apply = None
    X = jnp.array([0.3, -0.2, 0.5, 0.1, 0.4, -0.3])
    Z = jnp.array([0.2, 0.1, -0.4, 0.3, -0.1, 0.2])
    Q = jnp.array([1.0, -0.5, 0.3, 0.2, 0.7, -0.1])
    cases = {}
    maps = {"dexp": (se3.dexp_apply, plain_dexp_apply), "dexp_inv": (se3.dexp_inv_apply, plain_dexp_inv_apply)}
    for name, (ours, plain) in maps.items():
        for impl, f in (("rules", ours), ("plain autodiff", plain)):
            if f is None:
                continue
            cases[f"jacfwd {name} ({impl})"] = lambda f=f: (jax.jacfwd(f), (X, Z))
            cases[f"jacrev {name} ({impl})"] = lambda f=f: (jax.jacrev(f), (X, Z))
            cases[f"hessian Qᵀ{name} ({impl})"] = lambda f=f: (jax.hessian(lambda x: Q @ f(x, Z)), (X,))
    return cases


def _cdm_state(n_gauss=5):
    import jax
    import jax.numpy as jnp

    from jaxse3 import rod

    r = rod.cdm_rod(n_gauss=n_gauss)
    k = jax.random.split(jax.random.PRNGKey(0), 2)
    q, qd = 0.3 * jax.random.normal(k[0], (r.n_dof,)), jax.random.normal(k[1], (r.n_dof,))
    return r, q, qd, jnp.array([10.0, 5.0, 0.0, 3.0, 1.0])


def _rod_fd(n_gauss):
    from jaxse3 import rod

    r, q, qd, u = _cdm_state(n_gauss)
    return (lambda q, qd: rod.forward_dynamics(r, q, qd, u)), (q, qd)


def _rod_fd_jac(n_gauss):
    import jax

    from jaxse3 import rod

    r, q, qd, u = _cdm_state(n_gauss)
    return jax.jacfwd(lambda q, qd: rod.forward_dynamics(r, q, qd, u), argnums=(0, 1)), (q, qd)


def _statics():
    import jax.numpy as jnp

    from jaxse3.sim import scenarios, solve_statics

    system = scenarios.cdm_system()
    return (lambda u: solve_statics(system, u).q), (jnp.array([10.0, 5.0, 0.0, 3.0, 1.0]),)


def _simulate(solver):
    import jax.numpy as jnp

    from jaxse3.sim import scenarios, simulate

    system = scenarios.cdm_system()
    extra = {"dt": 2e-3} if solver == "newmark" else {}
    fn = lambda u: simulate(system, u, t_final=0.1, solver=solver, n_save=11, **extra).tip
    return fn, (jnp.array([10.0, 5.0, 0.0, 3.0, 1.0]),)


def _first_gradient():
    import jax
    import jax.numpy as jnp

    from jaxse3.sim import SampledInput, scenarios, simulate

    system, t_final = scenarios.cdm_system(), 0.5
    ts = jnp.linspace(0.0, t_final, 4)
    target = jnp.array([0.05, 0.05, -0.48])

    def loss(knots):
        u = SampledInput(ts, knots, kind="linear")
        tip = simulate(system, u, t_final=t_final, n_save=11, solver="newmark", dt=2e-3).tip[-1]
        return 0.5 * jnp.sum((tip - target) ** 2)

    return jax.grad(loss), (jnp.full((4, 5), 5.0),)


def _rigid_model():
    from jaxse3 import rigid

    try:
        return rigid.example_robot("hyq"), "HyQ"
    except ImportError:
        return rigid.auto_tree(13, bf=1.5, floating_base=True, seed=0), "random 18-DoF floating tree"


def _rigid(order):
    import jax

    from jaxse3 import rigid

    model, _ = _rigid_model()
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    q = rigid.random_configuration(model, k[0])
    v, a = (jax.random.normal(key, (model.nv,)) for key in k[1:])
    fn = rigid.rnea_derivatives if order == 1 else rigid.rnea_second_order_derivatives
    return (lambda q, v, a: fn(model, q, v, a)), (q, v, a)


def _strain_field_hessian():
    import jax.numpy as jnp

    from jaxse3.rod import strain_field as sf

    L, E, r = 1.0, 1e6, 0.01
    area, inertia = jnp.pi * r**2, jnp.pi * r**4 / 4
    rod = sf.StrainFieldRod.from_material(L, E, E / 3, area, inertia, inertia, 2 * inertia, degree=8)
    coeffs = 0.1 * jnp.ones((rod.basis0.shape[1], 6))
    return (lambda c: sf.energy_hessian(rod, c)), (coeffs,)


def _four_bar(solver):
    import jax.numpy as jnp

    sys.path.insert(0, os.path.dirname(HERE))
    from jaxse3 import sim
    from tests.linkage.four_bar import FOUR_BAR, PLANAR, four_bar_pose

    system = sim.linkage_system(FOUR_BAR, closures=[PLANAR], baumgarte_time=0.01)
    extra = {"solver": "newmark-index3", "dt": 1e-3} if solver == "newmark-index3" else {"rtol": 1e-8, "atol": 1e-10}
    q0 = four_bar_pose(1.0)[0]
    fn = lambda u: sim.simulate(system, u, t_final=0.1, q0=q0, n_save=11, **extra).q
    return fn, (jnp.zeros(3),)


def cases() -> dict:
    """name -> (builder of (fn, args), slow)."""
    out = {name: (build, False) for name, build in _lie_cases().items()}
    out.update(
        {
            "rod.forward_dynamics (CDM, n_gauss 5)": (lambda: _rod_fd(5), False),
            "jacfwd rod.forward_dynamics (CDM, n_gauss 5)": (lambda: _rod_fd_jac(5), False),
            "jacfwd rod.forward_dynamics (CDM, n_gauss 64)": (lambda: _rod_fd_jac(64), False),
            "sim.solve_statics (CDM)": (_statics, False),
            "sim.simulate Kvaerno5 0.1 s (CDM)": (lambda: _simulate("kvaerno5"), False),
            "sim.simulate Newmark 0.1 s (CDM)": (lambda: _simulate("newmark"), False),
            "first jax.grad, 0.5 s Newmark (CDM)": (_first_gradient, True),
            "rigid.rnea_derivatives (HyQ)": (lambda: _rigid(1), False),
            "rigid.rnea_second_order_derivatives (HyQ)": (lambda: _rigid(2), False),
            "strain_field.energy_hessian (degree 8)": (_strain_field_hessian, False),
            "sim.simulate Kvaerno5 0.1 s (closed four-bar)": (lambda: _four_bar("kvaerno5"), False),
            "sim.simulate index-3 Newmark 0.1 s (closed four-bar)": (lambda: _four_bar("newmark-index3"), False),
        }
    )
    return out


def measure(name: str) -> dict:
    """Trace, lower, compile and run one case in this process (call in a fresh one)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    fn, args = cases()[name][0]()
    t0 = time.perf_counter()
    traced = jax.jit(fn).trace(*args)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    compiled = lowered.compile()
    t3 = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    t4 = time.perf_counter()
    return dict(trace=t1 - t0, lower=t2 - t1, compile=t3 - t2, run=t4 - t3, hlo=len(lowered.as_text()))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", nargs="*", default=None, help="names (substrings) of the cases to run (default all)")
    p.add_argument("--skip-slow", action="store_true", help="leave out the first gradient through a simulation")
    p.add_argument("--markdown", default=None, help="also write the table to this file")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # measure one case in this process
    args = p.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args.one)))
        return
    import jax

    chosen = [
        name
        for name, (_, slow) in cases().items()
        if (args.cases is None or any(c in name for c in args.cases)) and not (slow and args.skip_slow)
    ]
    print(f"jax {jax.__version__}, {os.cpu_count()} CPUs visible, load {os.getloadavg()[0]:.2f}, float64")
    header = "| entry point | trace s | lower s | XLA compile s | total s | HLO chars | first run s |"
    rows = [header, "|---|---:|---:|---:|---:|---:|---:|"]
    print(header)
    env = {**os.environ, "JAXSE3_CACHE": "0"}
    for name in chosen:
        r = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--one", name], capture_output=True, text=True, env=env
        )
        if r.returncode != 0:
            row = f"| {name} | failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode} |"
        else:
            m = json.loads(r.stdout.strip().splitlines()[-1])
            total = m["trace"] + m["lower"] + m["compile"]
            row = (
                f"| {name} | {m['trace']:.2f} | {m['lower']:.2f} | {m['compile']:.2f} | {total:.2f} | "
                f"{m['hlo'] / 1e3:,.0f} k | {m['run']:.3f} |"
            )
        rows.append(row)
        print(row, flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
