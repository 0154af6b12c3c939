"""Benchmark: jaxse3.rigid RNEA, CRBA and forward dynamics vs Pinocchio's Python bindings (CPU, float64).

Run from the repository root::

    python benchmarks/rigid_dynamics.py                    # robots + autoTree chains/trees N = 6, 12, 24, 48
    python benchmarks/rigid_dynamics.py --quick            # UR5, HyQ and N = 12 only, fewer repeats
    python benchmarks/rigid_dynamics.py --markdown rigid_dynamics.md

For each model and algorithm: jaxse3 per call at batch 1 (``jax.jit``), jaxse3 per state under ``jax.vmap`` at batch
B (default 1000), and Pinocchio per call (``pin.rnea`` / ``pin.crba`` / ``pin.aba`` from Python, so each call includes
the ~1 µs binding overhead). Medians of repeated samples with ``block_until_ready``; the jaxse3 cases of one model are
sampled round-robin (``benchmarks/_timing.py``); compile times are reported separately. Ratios are jaxse3 / Pinocchio
(> 1: Pinocchio faster). Robots: example-robot-data URDFs loaded with ``jaxse3.rigid.example_robot`` (the same joint
order as Pinocchio); the outputs are cross-checked against Pinocchio (column "max rel err").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import fmt_time, time_group  # noqa: E402

from jaxse3 import rigid  # noqa: E402
from jaxse3.rigid import interop  # noqa: E402

ROBOTS = {"UR5": "ur5", "Panda": "panda", "HyQ": "hyq", "Talos": "talos"}  # label: jaxse3.rigid.example_robot name


def _pin_time(fn, repeats: int, min_sample_s: float = 0.02) -> float:
    fn()
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    number = max(1, int(min_sample_s / max(one, 1e-7)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def bench_model(label, m, pm, batch, repeats):
    import pinocchio as pin

    rng = np.random.default_rng(0)
    pd = pm.createData()
    q_pin = [pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)) for _ in range(batch)]
    v_pin, a_pin = rng.normal(size=(batch, pm.nv)), rng.normal(size=(batch, pm.nv))
    conv = [interop.from_pinocchio(m, q, v, a) for q, v, a in zip(q_pin, v_pin, a_pin)]
    Q, V, A = (jnp.asarray(np.stack(x)) for x in zip(*conv))
    T = jnp.asarray(np.stack([pin.rnea(pm, pd, q, v, a) for q, v, a in zip(q_pin, v_pin, a_pin)]))
    T = T[:, np.argsort(interop.velocity_permutation(m))]  # τ in jaxse3 order
    algos = {
        "RNEA": (lambda q, v, a, t: rigid.rnea(m, q, v, a), lambda i: pin.rnea(pm, pd, q_pin[i], v_pin[i], a_pin[i])),
        "CRBA": (lambda q, v, a, t: rigid.crba(m, q), lambda i: pin.crba(pm, pd, q_pin[i])),
        "FD": (
            lambda q, v, a, t: rigid.forward_dynamics(m, q, v, t),
            lambda i: pin.aba(pm, pd, q_pin[i], v_pin[i], T_pin[i]),
        ),
    }
    T_pin = [pin.rnea(pm, pd, q, v, a) for q, v, a in zip(q_pin, v_pin, a_pin)]
    cases = []
    for fn, _ in algos.values():
        cases.append((fn, (Q[0], V[0], A[0], T[0])))
        cases.append((jax.vmap(fn), (Q, V, A, T)))
    timings = time_group(cases, repeats=repeats)
    rows = []
    perm = interop.velocity_permutation(m)
    for k, (name, (_, pin_fn)) in enumerate(algos.items()):
        t1, tb = timings[2 * k], timings[2 * k + 1]
        t_pin = _pin_time(lambda: pin_fn(0), repeats)
        ref = {
            "RNEA": lambda: np.asarray(T_pin[0]),
            "FD": lambda: a_pin[0],
            "CRBA": lambda: (lambda M: np.triu(M) + np.triu(M, 1).T)(pin.crba(pm, pd, q_pin[0])),
        }[name]()
        out = np.asarray(t1.out)
        out = out[perm][:, perm] if out.ndim == 2 else out[perm]
        err = np.abs(out - ref).max() / np.abs(ref).max()
        rows.append((label, m.nv, name, t1.median_s, tb.median_s / batch, t_pin, t1.compile_s + tb.compile_s, err))
    return rows


def benchmark_models(robots, sizes):
    """``(label, jaxse3 model, Pinocchio model)`` for the named robots and the autoTree chains/trees of the given
    sizes."""
    import pinocchio as pin

    models = []
    for name in robots:
        m, path = rigid.example_robot(ROBOTS[name]), rigid.example_robot_path(ROBOTS[name])
        free = m.joint_types[0] == "free"
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free else pin.buildModelFromUrdf(path)
        models.append((name, m, pm))
    for n in sizes:
        for bf, kind in ((1, "chain"), (2, "tree bf=2")):
            m = _depth_first(rigid.auto_tree(n, bf=bf, seed=0))
            models.append((f"autoTree {kind} N={n}", m, _pin_auto_tree(m)))
    return models


def main(argv=None):

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--robots", default=None, help="comma-separated subset of " + ",".join(ROBOTS))
    ap.add_argument(
        "--sizes", default=None, help="comma-separated autoTree sizes (default 6,12,24,48; 'none': no autoTree)"
    )
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else args.repeats
    robots = args.robots.split(",") if args.robots else (["UR5", "HyQ"] if args.quick else list(ROBOTS))
    sizes = (
        ([] if args.sizes == "none" else [int(x) for x in args.sizes.split(",")])
        if args.sizes
        else ([12] if args.quick else [6, 12, 24, 48])
    )
    models = benchmark_models(robots, sizes)
    rows = []
    for label, m, pm in models:
        rows += bench_model(label, m, pm, args.batch, repeats)
        table = _table(rows, args.batch)
        print(table.splitlines()[-3:], flush=True)
        if args.markdown:  # rewritten after every model, so that an interrupted run keeps what it measured
            with open(args.markdown, "w") as fh:
                fh.write(table + "\n")
    print(_table(rows, args.batch))


def _table(rows, batch):
    header = (
        f"| model | nv | algorithm | jaxse3 batch 1 | jaxse3 per state (vmap {batch}) | Pinocchio per call | "
        f"ratio batch 1 | ratio per state | compile | max rel err |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    return "\n".join(
        [header]
        + [
            f"| {lab} | {nv} | {alg} | {fmt_time(t1)} | {fmt_time(tb)} | {fmt_time(tp)} | {t1 / tp:.1f} "
            f"| {tb / tp:.2f} | {c:.1f} s | {e:.1e} |"
            for lab, nv, alg, t1, tb, tp, c, e in rows
        ]
    )


def _depth_first(m):
    """The same tree renumbered depth-first (Pinocchio's CRBA/ABA assume contiguous subtrees; autoTree is
    breadth-first)."""
    order, stack = [], [i for i in reversed(range(m.nb)) if m.parents[i] < 0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(m.children(i)))
    new = {old: k for k, old in enumerate(order)}
    parents = [-1 if m.parents[i] < 0 else new[m.parents[i]] for i in order]
    idx = np.array(order)
    return rigid.Model(
        parents,
        [m.joint_types[i] for i in order],
        m.joint_placements[idx],
        m.joint_axes[idx],
        m.inertias[idx],
        m.gravity,
        [m.names[i] for i in order],
    )


def _pin_auto_tree(m):
    """The same autoTree as a Pinocchio model (revolute joints about their axes, same placements and inertias)."""
    import pinocchio as pin

    pm = pin.Model()
    ids = []
    for i in range(m.nb):
        X = np.asarray(m.joint_placements[i])
        parent = 0 if m.parents[i] < 0 else ids[m.parents[i]]
        axis = np.asarray(m.joint_axes[i, :3])
        jid = pm.addJoint(parent, pin.JointModelRevoluteUnaligned(axis), pin.SE3(X[:3, :3], X[:3, 3]), f"j{i}")
        I6 = np.asarray(m.inertias[i])
        mass = I6[5, 5]
        c = np.array([I6[2, 4], I6[0, 5], I6[1, 3]]) / mass
        C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
        pm.appendBodyToJoint(jid, pin.Inertia(mass, c, I6[:3, :3] - mass * C @ C.T), pin.SE3.Identity())
        ids.append(jid)
    return pm


if __name__ == "__main__":
    main()
