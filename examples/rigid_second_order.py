"""Second-order derivatives of rigid-body inverse dynamics (IDSVA SO, seed 002) on HyQ, and a few Newton steps.

Run::  python examples/rigid_second_order.py [--out ./jaxse3-out/rigid_second_order]

1. Loads HyQ (floating base, nv = 18) from example-robot-data, or falls back to an autoTree model with a note.
2. Computes ∂τ/∂q, ∂τ/∂v, M (IDSVA FO) and the four second-order tensors (IDSVA SO), checks them against nested
   ``jax.jacfwd`` of the plain RNEA, and plots their sparsity (PNG).
3. Uses the analytical Hessians in Newton steps of a small trajectory problem: find the configurations q_1..q_T
   (tangent offsets from a nominal q) of a short trajectory whose inverse-dynamics torques (finite-difference
   velocities/accelerations) are minimal in the least-squares sense, with the exact Hessian from ``jax.hessian``,
   which runs IDSVA SO through the custom_jvp rules.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from jaxse3 import rigid  # noqa: E402
from jaxse3.lie.rules import RULE_CALLS  # noqa: E402
from jaxse3.rigid import integrate, rnea, rnea_autodiff, rnea_derivatives, rnea_second_order_derivatives  # noqa: E402


def load_model():
    try:
        root = importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"
        )
        return "HyQ", rigid.from_urdf(str(root / "hyq_description/robots/hyq_no_sensors.urdf"), floating_base=True)
    except Exception as err:
        print(f"note: example-robot-data not available ({err}); using an autoTree model (bf = 2, floating base)")
        return "autoTree", rigid.auto_tree(13, bf=2, floating_base=True, seed=0)


def check_against_autodiff(m, q, v, a):
    z = jnp.zeros(m.nv)

    @jax.jit
    def both():
        so = rnea_second_order_derivatives(m, q, v, a)

        def dtau_dq(d, v, a):
            return jax.jacfwd(lambda e: rnea_autodiff(m, integrate(m, integrate(m, q, d), e), v, a))(z)

        Hqq, Hqv, dMT = jax.jacfwd(dtau_dq, (0, 1, 2))(z, v, a)
        Hvv = jax.jacfwd(jax.jacfwd(lambda x: rnea_autodiff(m, q, x, a)))(v)
        return so, (Hqq, Hvv, Hqv, jnp.swapaxes(dMT, 1, 2))

    so, ref = both()
    for name, x, r in zip(("d2tau_dq2", "d2tau_dv2", "d2tau_dqdv", "dM_dq"), so, ref):
        err = float(jnp.max(jnp.abs(x - r)) / jnp.max(jnp.abs(r)))
        print(f"  {name:11s} max |.| = {float(jnp.max(jnp.abs(r))):9.3g}   relative difference to autodiff = {err:.1e}")
    return so


def plot_sparsity(so, path):
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))
    for ax, name, T in zip(axes, ("∂²τ/∂q²", "∂²τ/∂v²", "∂²τ/∂q∂v", "∂M/∂q"), so):
        n = T.shape[0]
        ax.imshow(jnp.abs(T).reshape(n, n * n) > 1e-12, aspect="auto", cmap="Greys", interpolation="nearest")
        ax.set_title(f"{name}: {float(jnp.mean(jnp.abs(T) > 1e-12)):.0%} non-zero")
        ax.set_xlabel("(first, second) index, flattened")
        ax.set_ylabel("τ index")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def newton_trajectory(m, q0, steps=4, T=4, dt=0.05):
    """Minimise ½ Σ_t |τ_t|² over tangent offsets δ_t of q_t = q0 ⊕ δ_t (t = 1..T; q_0 and q_{T+1} fixed at q0 ⊕ ±ε)."""
    key = jax.random.PRNGKey(3)
    ends = 0.3 * jax.random.normal(key, (2, m.nv))

    def cost(x):
        d = jnp.concatenate([ends[:1], x.reshape(T, m.nv), ends[1:]])
        qs = jax.vmap(lambda e: integrate(m, q0, e))(d)
        v = (d[2:] - d[:-2]) / (2 * dt)
        a = (d[2:] - 2 * d[1:-1] + d[:-2]) / dt**2
        tau = jax.vmap(lambda q, v, a: rnea(m, q, v, a))(qs[1:-1], v, a)
        return 0.5 * jnp.sum(tau**2) * dt + 0.5e-3 * jnp.sum(x**2)

    grad, hess = jax.jit(jax.grad(cost)), jax.jit(jax.hessian(cost))
    x = jnp.linspace(0.0, 1.0, T + 2)[1:-1, None] * (ends[1] - ends[0]) + ends[0]
    x = x.reshape(-1)
    history = [float(cost(x))]
    for _ in range(steps):
        g, H = grad(x), hess(x)
        w, U = jnp.linalg.eigh(0.5 * (H + H.T))
        step = -U @ ((U.T @ g) / jnp.maximum(w, 1e-6 * jnp.max(w)))
        t = 1.0
        while float(cost(x + t * step)) > history[-1] and t > 1e-3:
            t *= 0.5
        x = x + t * step
        history.append(float(cost(x)))
        print(f"  Newton step: cost = {history[-1]:.6g}, |grad| = {float(jnp.linalg.norm(grad(x))):.2e}")
    return history


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="./jaxse3-out/rigid_second_order")
    ap.add_argument("--steps", type=int, default=4)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    name, m = load_model()
    print(f"{name}: nb = {m.nb}, nq = {m.nq}, nv = {m.nv}")
    q = rigid.random_configuration(m, jax.random.PRNGKey(0))
    v, a = jax.random.normal(jax.random.PRNGKey(1), (2, m.nv))
    dtau_dq, dtau_dv, _M = jax.jit(lambda: rnea_derivatives(m, q, v, a))()
    print(
        f"first order: |∂τ/∂q| = {float(jnp.max(jnp.abs(dtau_dq))):.3g}, "
        f"|∂τ/∂v| = {float(jnp.max(jnp.abs(dtau_dv))):.3g}"
    )
    print("second order vs nested jax.jacfwd of the plain RNEA:")
    so = check_against_autodiff(m, q, v, a)
    path = os.path.join(args.out, "sparsity.png")
    plot_sparsity(so, path)
    print(f"sparsity plot: {path}")
    print("Newton steps on a small trajectory problem (jax.hessian runs IDSVA SO):")
    RULE_CALLS.clear()
    history = newton_trajectory(m, q, steps=args.steps)
    print(f"  cost {history[0]:.4g} -> {history[-1]:.4g}; rule calls {dict(RULE_CALLS)}")


if __name__ == "__main__":
    main()
