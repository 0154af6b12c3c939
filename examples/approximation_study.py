"""Convergence of the k-th order local approximations of dexp and dexp⁻¹ (seed 000 §6.3, Figs. 1–3).

Usage::

    python examples/approximation_study.py [--out DIR]

prints a table of the errors ε^[k](s) and their fitted log–log slopes, and writes ``DIR/approximation_orders.png``
(default DIR: the current directory).

Set-up (the paper's §6.3, as quoted in the seed 000 digest §3.5): ``X(s) = s·[n; y]`` with ``n = x/‖x‖``,
``x = [0.3, −0.4, 1]``, ``y = [0.1, 0.2, −0.4]`` (not normalised), ``U = [0.1, 1.0, −1.0, 0.9, 0.5, 0.3]``,
``S = [1.7, −2.9, −9.2, 7.6, 6.7, 2.4]``. The errors are spectral norms (``np.linalg.norm(·, 2)``) of
``approximation − closed form`` for

* ε^[k]    = ‖dexp^[k] − dexp‖ and ε₋^[k] for dexp⁻¹ (Fig. 1),
* ε₁^[k]   = ‖D^[k]dexp(U) − (D dexp)(U)‖ and ε₁₋^[k] for dexp⁻¹ (Fig. 2; the paper's "Euclidean vector norm" of this
  matrix is ambiguous, the digest and this script use the spectral norm),
* ε₂^[k]   = ‖D²^[k]dexp(U)(S) − (D²dexp)(U)(S)‖ and ε₂₋^[k] for dexp⁻¹ (Fig. 3),

over ``s ∈ logspace(−3, −1)`` and orders k = 0…3 (k = 0…2 for the second derivative, the only ones that exist).
Approximations come from :mod:`jaxse3.approx`, closed forms from :mod:`jaxse3.se3`. The expected slope is k+1, or k+2
where the inverse skips an order (B3 = 0: dexp⁻¹ k = 2, D dexp⁻¹ k = 1, D²dexp⁻¹ k = 0, 2). The golden values at
s = 0.1 and 0.01 printed alongside are **the digest's** (§3.5, 50-digit arithmetic), not numbers from the paper, whose
figures are images.

The computation is :func:`study`, which a notebook can reuse::

    import sys; sys.path.insert(0, "../examples")
    from approximation_study import study, plot, format_table
    res = study(np.logspace(-3, -1, 21)); print(format_table(res)); plot(res)
"""

from __future__ import annotations

import argparse
import functools
import os
import time

import jax

jax.config.update("jax_enable_x64", True)  # errors go down to ~1e-14: the study needs float64

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxse3 import approx, se3  # noqa: E402

X_DIR = np.concatenate([np.array([0.3, -0.4, 1.0]) / np.linalg.norm([0.3, -0.4, 1.0]), [0.1, 0.2, -0.4]])
U = np.array([0.1, 1.0, -1.0, 0.9, 0.5, 0.3])
S = np.array([1.7, -2.9, -9.2, 7.6, 6.7, 2.4])

#: quantity -> (label, approximation(X, k), exact(X), orders, expected slopes)
QUANTITIES = {
    "dexp": ("ε^[k]: dexp", lambda X, k: approx.dexp(X, k), lambda X: se3.dexp(X), (0, 1, 2, 3), (1, 2, 3, 4)),
    "dexp_inv": (
        "ε₋^[k]: dexp⁻¹",
        lambda X, k: approx.dexp_inv(X, k),
        lambda X: se3.dexp_inv(X),
        (0, 1, 2, 3),
        (1, 2, 4, 4),
    ),
    "d_dexp": (
        "ε₁^[k]: D dexp(U)",
        lambda X, k: approx.d_dexp(X, U, k),
        lambda X: se3.d_dexp(X, U),
        (0, 1, 2, 3),
        (1, 2, 3, 4),
    ),
    "d_dexp_inv": (
        "ε₁₋^[k]: D dexp⁻¹(U)",
        lambda X, k: approx.d_dexp_inv(X, U, k),
        lambda X: se3.d_dexp_inv(X, U),
        (0, 1, 2, 3),
        (1, 3, 3, 5),
    ),
    "d2_dexp": (
        "ε₂^[k]: D²dexp(U)(S)",
        lambda X, k: approx.d2_dexp(X, U, S, k),
        lambda X: se3.d2_dexp(X, U, S),
        (0, 1, 2),
        (1, 2, 3),
    ),
    "d2_dexp_inv": (
        "ε₂₋^[k]: D²dexp⁻¹(U)(S)",
        lambda X, k: approx.d2_dexp_inv(X, U, S, k),
        lambda X: se3.d2_dexp_inv(X, U, S),
        (0, 1, 2),
        (2, 2, 4),
    ),
}

#: digest §3.5 golden values (spectral norm, 50-digit arithmetic) at s = 0.1 and s = 0.01
GOLDEN = {
    "dexp": {1: (2.504e-3, 2.504e-5), 2: (7.425e-5, 7.426e-8), 3: (1.756e-6, 1.756e-10)},
    "dexp_inv": {1: (1.252e-3, 1.252e-5), 2: (2.928e-7, 2.927e-11), 3: (2.928e-7, 2.927e-11)},
    "d_dexp": {0: (6.022e-2, 6.023e-3), 1: (2.651e-3, 2.651e-5), 2: (8.44e-5, 8.442e-8), 3: (2.032e-6, 2.032e-10)},
    "d_dexp_inv": {0: (3.013e-2, 3.012e-3), 1: (1.408e-5, 1.407e-8), 2: (1.408e-5, 1.407e-8), 3: (6.683e-9, 6.681e-14)},
    "d2_dexp": {0: (0.3105, 3.1e-2), 1: (1.561e-2, 1.561e-4), 2: (4.883e-4, 4.881e-7)},
    "d2_dexp_inv": {0: (2.604e-3, 2.602e-5), 1: (2.604e-3, 2.602e-5), 2: (2.091e-6, 2.09e-10)},
}

#: errors below this are float64 round-off of the closed forms and are left out of the slope fits
FLOOR = 1e-13


def _spectral(M) -> np.ndarray:
    return np.linalg.norm(np.asarray(M), ord=2, axis=(-2, -1))


def study(s_values) -> dict:
    """Errors of every approximation along X(s) = s·X_DIR and their fitted log–log slopes.

    Args:
        s_values: 1-D array of the scale s (> 0).
    Returns:
        ``{"s": s, "floor": FLOOR, "quantities": {name: {"label", "orders", "expected", "errors": {k: (len(s),)},
        "slopes": {k: float}, "golden": {k: (ε(0.1), ε(0.01))}, "at": {k: (ε(0.1), ε(0.01))}}}}``. Slopes are
        least-squares fits of log ε against log s over the points with ε > FLOOR (NaN if fewer than two); "at" are the
        errors recomputed at exactly s = 0.1 and 0.01, to compare with the digest's "golden" values.
    """
    s = np.asarray(s_values, dtype=np.float64)
    m = len(s)
    # one batch (every function broadcasts over the leading axis): the s grid, then s = 0.1 and 0.01
    X = jnp.asarray(np.concatenate([s, [0.1, 0.01]])[:, None] * X_DIR)
    out = {"s": s, "floor": FLOOR, "quantities": {}}
    for name, (label, _f_approx, _f_exact, orders, expected) in QUANTITIES.items():
        diffs = _differences(name, X)  # (len(orders), m + 2, 6, 6)
        errors, slopes, at = {}, {}, {}
        for j, k in enumerate(orders):
            e_all = _spectral(diffs[j])
            e = errors[k] = e_all[:m]
            keep = e > FLOOR
            slopes[k] = float(np.polyfit(np.log(s[keep]), np.log(e[keep]), 1)[0]) if keep.sum() >= 2 else float("nan")
            at[k] = (float(e_all[m]), float(e_all[m + 1]))
        out["quantities"][name] = {
            "label": label,
            "orders": orders,
            "expected": dict(zip(orders, expected)),
            "errors": errors,
            "slopes": slopes,
            "golden": GOLDEN.get(name, {}),
            "at": at,
        }
    return out


@functools.partial(jax.jit, static_argnums=0)
def _differences(name, X):
    """approximation − closed form for every order of ``name``, stacked."""
    _, f_approx, f_exact, orders, _ = QUANTITIES[name]
    exact = f_exact(X)
    return jnp.stack([f_approx(X, k) - exact for k in orders])


def format_table(res: dict) -> str:
    """The study as a text table: errors at the ends and middle of the s range, at s = 0.1 / 0.01 with the digest's
    golden values, and fitted vs expected slopes."""
    s = res["s"]
    picks = sorted({0, len(s) // 2, len(s) - 1})
    head = "".join(f"  s={s[i]:<9.3g}" for i in picks)
    lines = [f"{'quantity':<26} k{head}  ε(0.1)     digest     ε(0.01)    digest     slope  expected"]
    for q in res["quantities"].values():
        for k in q["orders"]:
            e = q["errors"][k]
            g = q["golden"].get(k)
            a = q["at"][k]
            gs = (f"{g[0]:<10.4g}", f"{g[1]:<10.4g}") if g else ("—         ", "—         ")
            lines.append(
                f"{q['label']:<26} {k}"
                + "".join(f"  {e[i]:<11.4g}" for i in picks)
                + f"  {a[0]:<10.4g} {gs[0]} {a[1]:<10.4g} {gs[1]}"
                + f" {q['slopes'][k]:5.2f}  {q['expected'][k]}"
            )
    lines.append(
        f"(slopes: least-squares fit over the points with error > {res['floor']:g}; "
        "digest = seed 000 digest §3.5 golden values)"
    )
    return "\n".join(lines)


def plot(res: dict, path: str | None = None):
    """Log–log figure, one panel per quantity, one line per order; saved to ``path`` if given. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 2, figsize=(10, 11), sharex=True)
    s = res["s"]
    for ax, q in zip(axes.ravel(), res["quantities"].values()):
        for k in q["orders"]:
            e = np.where(q["errors"][k] > 0, q["errors"][k], np.nan)
            same = k - 1 in q["errors"] and np.array_equal(q["errors"][k], q["errors"][k - 1])
            label = f"k={k}  slope {q['slopes'][k]:.2f} (expected {q['expected'][k]})"
            label += f"  ≡ k={k - 1}" if same else ""
            style = dict(ls="--", marker="s", mfc="none", ms=6) if same else dict(ls="-", marker="o", ms=3)
            ax.loglog(s, e, label=label, **style)
        ax.axhspan(1e-30, res["floor"], color="0.9", zorder=0)
        ax.set_ylim(bottom=max(1e-20, min(np.nanmin(np.where(v > 0, v, np.nan)) for v in q["errors"].values()) / 3))
        ax.set_title(q["label"])
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("s  (X = s·[n; y])")
    for ax in axes[:, 0]:
        ax.set_ylabel("spectral-norm error")
    fig.suptitle("k-th order approximations vs closed forms (seed 000 §6.3; grey: float64 round-off floor)")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=".", help="directory for approximation_orders.png (default: current dir)")
    parser.add_argument("--points", type=int, default=21, help="number of s values in logspace(-3, -1)")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    t0 = time.perf_counter()
    res = study(np.logspace(-3, -1, args.points))
    print(format_table(res))
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "approximation_orders.png")
    plot(res, path)
    print(f"wrote {path} ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
