"""Benchmark: jaxse3's closed-form derivative rules vs plain autodiff, and jaxse3 exp/log vs jaxlie (CPU, float64).

Run from the repository root::

    python benchmarks/bench_lie.py                 # batch 1 and batch 10**5 (a few minutes on 2 cores)
    python benchmarks/bench_lie.py --quick         # smoke test: batch 10**3, fewer repeats
    python benchmarks/bench_lie.py --batch 10000 --markdown results.md

Sections (each for batch 1 and a jax.vmap-ed batch B):

1. Jacobian of X ↦ dexp_X Z (and of X ↦ dexp_X⁻¹ Z):
   (a) ``jax.jacfwd`` / ``jax.jacrev`` of ``jaxse3.se3.dexp_apply`` (runs the custom_jvp closed forms),
   (b) ``jaxse3.se3.dexp_jac`` called directly,
   (c) ``jax.jacfwd`` / ``jax.jacrev`` of :func:`plain_dexp_apply` below: the SAME formula
       dexp_X Z = Z + a1 AZ + a2 A²Z + a3 A³Z + a4 A⁴Z (A = ad_X, matrix-vector products only, like the library) with
       the
       literal closed-form coefficients of seed 000 eq. (23) and a double-where 2-term Taylor branch below φ = 1e−3,
       differentiated by plain JAX autodiff.
2. Hessian of h(X) = Qᵀ dexp_X Z (and dexp⁻¹): (a) ``jax.hessian`` through the custom rules, (a') ``jax.hessian`` of
   ``se3.dexp_form`` (the Q-contracted rule), (b) ``se3.dexp_hess``, (c) ``jax.hessian`` of the plain implementation.
3. exp, log and ``jax.jacfwd`` of exp (4×4 output, 6 inputs): jaxse3 vs jaxlie (tangent order permuted (ω, v) ↔ (v, ω)).

Each case is jit-compiled once (compile time reported separately), then timed as the median of repeated calls with
``block_until_ready``; the cases of one table and batch size are sampled round-robin, so that drifting load on a
shared machine affects them alike. The XLA cost-analysis columns (flops and bytes accessed per element of the compiled
executable) do not depend on load. Outputs are cross-checked (column "max |Δ|": against plain autodiff / jaxlie).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from importlib import metadata

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
import jaxlie  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import fmt_time, time_group  # noqa: E402

from jaxse3 import se3  # noqa: E402

# ---------------------------------------------------------------------------------------------------------------------
# Plain baseline: the same closed forms, written the way a user would, differentiated by ordinary autodiff.

PHI_SMALL = 1e-3  # below this angle the plain coefficients use their 2-term Taylor polynomials


def _skew(x):
    z = jnp.zeros_like(x[0])
    return jnp.array([[z, -x[2], x[1]], [x[2], z, -x[0]], [-x[1], x[0], z]])


def plain_ad(X):
    """ad_X = [[x̃, 0], [ỹ, x̃]] for X = (x, y), rotation first."""
    xt, yt = _skew(X[:3]), _skew(X[3:])
    return jnp.block([[xt, jnp.zeros((3, 3), X.dtype)], [yt, xt]])


def _guarded(t):
    """Double-where: (small mask, safe t for the closed form, safe t for the Taylor branch)."""
    small = t < PHI_SMALL**2
    return small, jnp.where(small, 1.0, t), jnp.where(small, 0.0, t)


def _base(t):
    phi = jnp.sqrt(t)
    alpha = jnp.sin(phi) / phi
    beta = (jnp.sin(0.5 * phi) / (0.5 * phi)) ** 2
    delta = (1.0 - alpha) / t
    return alpha, beta, delta


def plain_dexp_coeffs(t):
    """a1…a4 of seed 000 eq. (23): a1 = β − α/2, a2 = (5δ − β/2)/2, a3 = (β − α)/(2φ²), a4 = (3δ − β/2)/(2φ²)."""
    small, tb, ts = _guarded(t)
    alpha, beta, delta = _base(tb)
    closed = (
        beta - 0.5 * alpha,
        0.5 * (5.0 * delta - 0.5 * beta),
        (beta - alpha) / (2.0 * tb),
        (3.0 * delta - 0.5 * beta) / (2.0 * tb),
    )
    taylor = (0.5 + 0.0 * ts, 1 / 6 + 0.0 * ts, 1 / 24 - ts / 360, 1 / 120 - ts / 2520)
    return [jnp.where(small, s, c) for s, c in zip(taylor, closed)]


def plain_dexp_inv_coeffs(t):
    """b1 = −1/2, b2 = (2 − (1+3α)/(2β))/φ², b4 = (1 − (1+α)/(2β))/φ⁴ (b3 = 0)."""
    small, tb, ts = _guarded(t)
    alpha, beta, _ = _base(tb)
    closed = ((2.0 - (1.0 + 3.0 * alpha) / (2.0 * beta)) / tb, (1.0 - (1.0 + alpha) / (2.0 * beta)) / tb**2)
    taylor = (1 / 12 + 0.0 * ts, -1 / 720 - ts / 15120)
    b2, b4 = [jnp.where(small, s, c) for s, c in zip(taylor, closed)]
    return -0.5, b2, b4


def plain_dexp_apply(X, Z):
    """dexp_X Z = Z + a1 AZ + a2 A²Z + a3 A³Z + a4 A⁴Z, A = ad_X."""
    a1, a2, a3, a4 = plain_dexp_coeffs(jnp.dot(X[:3], X[:3]))
    A = plain_ad(X)
    Z1 = A @ Z
    Z2 = A @ Z1
    Z3 = A @ Z2
    Z4 = A @ Z3
    return Z + a1 * Z1 + a2 * Z2 + a3 * Z3 + a4 * Z4


def plain_dexp_inv_apply(X, Z):
    """dexp_X⁻¹ Z = Z + b1 AZ + b2 A²Z + b4 A⁴Z."""
    b1, b2, b4 = plain_dexp_inv_coeffs(jnp.dot(X[:3], X[:3]))
    A = plain_ad(X)
    Z1 = A @ Z
    Z2 = A @ Z1
    Z4 = A @ (A @ Z2)
    return Z + b1 * Z1 + b2 * Z2 + b4 * Z4


# ---------------------------------------------------------------------------------------------------------------------
# jaxlie wrappers ((v, ω) tangent order).


def _to_vw(X):
    return jnp.concatenate([X[3:], X[:3]])


def _to_wv(T):
    return jnp.concatenate([T[3:], T[:3]])


def jaxlie_exp(X):
    return jaxlie.SE3.exp(_to_vw(X)).as_matrix()


def jaxlie_log(H):
    return _to_wv(jaxlie.SE3.from_matrix(H).log())


# ---------------------------------------------------------------------------------------------------------------------
# Cases.


def _q_dot(apply):
    return lambda X, Q, Z: Q @ apply(X, Z)


def section_cases():
    """[(title, [(key, label, fn on unbatched args, arg names)], reference key(s), [(baseline, ours, text,
    target)])]."""
    sections = []
    for fam, ours_apply, ours_jac, plain_apply, sym in (
        ("dexp", se3.dexp_apply, se3.dexp_jac, plain_dexp_apply, "dexp_X Z"),
        ("dexp_inv", se3.dexp_inv_apply, se3.dexp_inv_jac, plain_dexp_inv_apply, "dexp_X⁻¹ Z"),
    ):
        cases = [
            ("ours_fwd", f"(a) jacfwd({fam}_apply) [custom rule]", jax.jacfwd(ours_apply), "XZ"),
            ("ours_rev", f"(a) jacrev({fam}_apply) [custom rule]", jax.jacrev(ours_apply), "XZ"),
            ("ours_direct", f"(b) {fam}_jac direct", ours_jac, "XZ"),
            ("plain_fwd", "(c) jacfwd(plain) [autodiff]", jax.jacfwd(plain_apply), "XZ"),
            ("plain_rev", "(c) jacrev(plain) [autodiff]", jax.jacrev(plain_apply), "XZ"),
        ]
        ratios = [
            ("plain_fwd", "ours_fwd", "custom vs plain autodiff (jacfwd)", 2.0),
            ("plain_rev", "ours_rev", "custom vs plain autodiff (jacrev)", 2.0),
            ("plain_fwd", "ours_direct", "direct closed form vs plain autodiff (jacfwd)", 2.0),
            ("best_plain", "best_ours", "best ours vs best plain autodiff", 2.0),
        ]
        sections.append((f"1. Jacobian of X ↦ {sym} (6×6)", cases, "plain_fwd", ratios))
    for fam, ours_apply, ours_hess, ours_form, plain_apply, sym in (
        ("dexp", se3.dexp_apply, se3.dexp_hess, se3.dexp_form, plain_dexp_apply, "dexp_X Z"),
        ("dexp_inv", se3.dexp_inv_apply, se3.dexp_inv_hess, se3.dexp_inv_form, plain_dexp_inv_apply, "dexp_X⁻¹ Z"),
    ):
        cases = [
            ("ours_hess", f"(a) hessian(Q·{fam}_apply) [custom rules]", jax.hessian(_q_dot(ours_apply)), "XQZ"),
            ("ours_form", f"(a') hessian({fam}_form) [contracted rule]", jax.hessian(ours_form), "XQZ"),
            ("ours_direct", f"(b) {fam}_hess direct", ours_hess, "XQZ"),
            ("plain_hess", "(c) hessian(Q·plain) [autodiff]", jax.hessian(_q_dot(plain_apply)), "XQZ"),
        ]
        ratios = [
            ("plain_hess", "ours_hess", "custom vs plain autodiff (jax.hessian)", 3.0),
            ("plain_hess", "ours_form", "contracted form vs plain autodiff (jax.hessian)", 3.0),
            ("plain_hess", "ours_direct", "direct closed form vs plain autodiff", 3.0),
        ]
        sections.append((f"2. Hessian of h(X) = Qᵀ {sym} (6×6)", cases, "plain_hess", ratios))
    sections.append(
        (
            "3. exp, log and the Jacobian of exp: jaxse3 vs jaxlie",
            [
                ("ours_exp", "exp: jaxse3 se3.exp", se3.exp, "X"),
                ("lie_exp", "exp: jaxlie SE3.exp().as_matrix()", jaxlie_exp, "X"),
                ("ours_log", "log: jaxse3 se3.log", se3.log, "H"),
                ("lie_log", "log: jaxlie SE3.from_matrix().log()", jaxlie_log, "H"),
                ("ours_jexp", "jacfwd(exp): jaxse3 [custom rule]", jax.jacfwd(se3.exp), "X"),
                ("lie_jexp", "jacfwd(exp): jaxlie [autodiff]", jax.jacfwd(jaxlie_exp), "X"),
            ],
            {"ours_exp": "lie_exp", "ours_log": "lie_log", "ours_jexp": "lie_jexp"},
            [
                ("lie_exp", "ours_exp", "exp: jaxse3 vs jaxlie", 1.0),
                ("lie_log", "ours_log", "log: jaxse3 vs jaxlie", 1.0),
                ("lie_jexp", "ours_jexp", "jacfwd(exp): jaxse3 vs jaxlie", 1.0),
            ],
        )
    )
    return sections


def make_inputs(batch: int, seed: int = 0):
    """Twists with rotation angle uniform in [0.1, 3] (random axis), translation parts N(0, 1); Z, Q ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    n = max(batch, 1)
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    phi = rng.uniform(0.1, 3.0, size=(n, 1))
    X = np.concatenate([phi * axis, rng.normal(size=(n, 3))], axis=1)
    Z = rng.normal(size=(n, 6))
    Q = rng.normal(size=(n, 6))
    H = np.asarray(jax.vmap(jaxlie_exp)(jnp.asarray(X)))
    arrs = {"X": X, "Z": Z, "Q": Q, "H": H}
    if batch == 1:
        return {k: jnp.asarray(v[0]) for k, v in arrs.items()}
    return {k: jnp.asarray(v) for k, v in arrs.items()}


# ---------------------------------------------------------------------------------------------------------------------
# Reporting.


def machine_info() -> list[str]:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    dev = jax.devices()[0]
    return [
        f"- load average at start (1/5/15 min): {_loadavg()} — other processes share these cores, see README",
        f"- CPU: {cpu}, {os.cpu_count()} logical cores visible; {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}",
        f"- jax {jax.__version__}, jaxlib {metadata.version('jaxlib')}, jaxlie {metadata.version('jaxlie')}, "
        f"numpy {np.__version__}; device: {dev.platform} ({dev.device_kind}); x64 enabled: "
        f"{jax.config.read('jax_enable_x64')}; XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}",
    ]


def _loadavg() -> str:
    try:
        return " / ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def _peak_rss_gib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # ru_maxrss is in KiB on Linux


def _maxdiff(a, b) -> float:
    return float(jnp.max(jnp.abs(jnp.asarray(a) - jnp.asarray(b))))


def run(batches: list[int], repeats: int, min_sample_s: float, emit) -> list[tuple]:
    """Run every section; returns (comparison, batch, ratio, met, target) for the batched ratio lines."""
    inputs = {b: make_inputs(b) for b in batches}
    summary = []
    for title, cases, ref, ratio_specs in section_cases():
        emit(f"\n### {title}\n")
        emit(
            "| case | batch | compile s | time / call (median) | (best) | time / element | XLA flops / el "
            "| XLA bytes / el | max \\|Δ\\| vs ref |"
        )
        emit("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        results: dict[tuple[str, int], float] = {}
        for b in batches:
            group = [(fn if b == 1 else jax.vmap(fn), [inputs[b][n] for n in argnames]) for _, _, fn, argnames in cases]
            timings = time_group(group, repeats=repeats, min_sample_s=min_sample_s)  # interleaved (round-robin)
            rows = [(key, label, tm) for (key, label, _, _), tm in zip(cases, timings)]
            outs = {key: tm.out for key, _, tm in rows}
            results.update({(key, b): tm.median_s for key, _, tm in rows})
            for key, label, tm in rows:  # cross-check every output against the reference of its section
                rkey = ref if isinstance(ref, str) else ref.get(key, key)
                d = "ref" if rkey == key else f"{_maxdiff(outs[key], outs[rkey]):.1e}"
                emit(
                    f"| {label} | {b} | {tm.compile_s:.2f} | {fmt_time(tm.median_s)} | {fmt_time(tm.min_s)} "
                    f"| {fmt_time(tm.median_s / b)} | {tm.flops / b:.0f} | {tm.bytes_accessed / b:.0f} | {d} |"
                )
        emit("")
        for b in batches:
            best = {
                p: min((v for (k, bb), v in results.items() if bb == b and k.startswith(p)), default=None)
                for p in ("ours", "plain")
            }
            for base, ours, text, target in ratio_specs:
                tb = best["plain"] if base == "best_plain" else results[(base, b)]
                to = best["ours"] if ours == "best_ours" else results[(ours, b)]
                r = tb / to
                met = r >= target
                tgt = f"target ≥ {target:g}× {'met' if met else 'MISSED'}" if b > 1 else "batch 1, no target"
                emit(f"- batch {b}: {text}: **{r:.2f}×** ({tgt})")
                if b > 1:
                    summary.append((f"{title.split(' (')[0].split(':')[0]} — {text}", b, r, met, target))
    return summary


class Emitter:
    """Prints lines as they come and keeps them for the markdown file."""

    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, line: str):
        self.lines.append(line)
        print(line, flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=None, help="vmapped batch size (default 10**5; 10**3 with --quick)")
    p.add_argument("--quick", action="store_true", help="smoke test: batch 10**3 and fewer repeats")
    p.add_argument("--repeats", type=int, default=None, help="timed samples per case (default 7; 3 with --quick)")
    p.add_argument("--markdown", metavar="PATH", help="also write the tables to this markdown file")
    a = p.parse_args(argv)
    batch = a.batch if a.batch is not None else (10**3 if a.quick else 10**5)
    repeats = a.repeats if a.repeats is not None else (3 if a.quick else 7)
    min_sample_s = 0.005 if a.quick else 0.05

    emit = Emitter()
    t_start = time.perf_counter()
    emit("## jaxse3 benchmark: closed-form derivative rules vs plain autodiff; exp/log vs jaxlie\n")
    emit("Machine:\n")
    for line in machine_info():
        emit(line)
    emit(
        f"- float64, batch 1 and jax.vmap batch {batch}; median (and best) of {repeats} samples per case, each ≥ "
        f"{min_sample_s * 1e3:g} ms of back-to-back calls with block_until_ready, "
        "cases of a table sampled round-robin; "
        "compile s = trace + lower + XLA compile."
    )
    summary = run([1, batch], repeats, min_sample_s, emit)

    emit(f"\n### Targets at batch {batch}\n")
    emit("| comparison | ratio (baseline / ours) | target | met |")
    emit("|---|---:|---:|:---:|")
    for text, _, r, met, target in summary:
        emit(f"| {text} | {r:.2f}× | ≥ {target:g}× | {'yes' if met else '**no**'} |")
    emit(
        f"\nTotal benchmark wall time: {time.perf_counter() - t_start:.0f} s; peak RSS {_peak_rss_gib():.1f} GiB; "
        f"load average at end: {_loadavg()}"
    )
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(emit.lines) + "\n")
        print(f"\n(markdown written to {a.markdown})")


if __name__ == "__main__":
    main()
