"""Statics of a closed chain of rods against the same structure solved as one rod with an end wrench (issue test of
the closed chains): a cantilever rod whose tip is closed onto the world where it ends at rest, by a spherical (a pin:
three force rows) or a fixed (a clamp: six rows) closure, sags under gravity. The (q, λ) statics returns the
equilibrium and the multipliers; Φ⊥λ is the closure's wrench on the rod's tip in the world frame at the tip (frame B
is world-aligned there). The oracle: the open rod — no closure — loaded at its tip by exactly that world wrench
(a :class:`jaxse3.linkage.PointLoad`) and solved by the open chain's statics from q = 0, must rest in the same
configuration. Both solves run the analytical rules; the oracle shares none of the closure code.
"""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk, rod, se3
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material
from jaxse3.sim import linkage_system, solve_statics

LENGTH = 0.3


def _rod_link(loads=(), gravity=-9.81):
    r = rod.Rod(
        length=LENGTH,
        section=CircularSection(0.005),
        material=Material(E=2e6, rho=1000.0, nu=0.5, damping=0.0),
        basis=LegendreBasis((1, 1, 1, 1, 1, 1)),  # every strain, linear along the rod: 12 DoF
        n_gauss=3,
    )
    return lk.Linkage([lk.Link.soft("rod", None, r)], gravity=(0.0, 0.0, gravity), loads=loads)


@pytest.mark.parametrize("kind", ["spherical", "fixed"])
def test_closed_chain_statics_is_the_open_rod_under_the_closure_wrench(kind):
    """Observed: the free cantilever's tip would fall by 0.24 m; pinned, the rod hangs like a cable (points down to
    7.6 mm below the line, the pin pulling 0.41 N along it and carrying 0.095 N of its 0.23 N weight); clamped
    (bending only, the linear strain basis stiff for it) 0.17 mm, the clamp carrying 0.116 N. The open rod under the
    closure's wrench rests within 4e−15 of the closed chain's configuration (bound: 1e−9 of its largest entry)."""
    tip = se3.from_rotation_translation(jnp.eye(3), jnp.array([LENGTH, 0.0, 0.0]))
    closure = lk.Closure("rod", None, kind, placement_b=tip)
    closed = solve_statics(linkage_system(_rod_link(), closures=[closure]))
    assert bool(closed.converged) and bool(closed.stable) and not bool(closed.singular)
    wrench = closure.constrained @ closed.multipliers  # on the rod's tip, world axes, about the tip
    assert abs(float(wrench[5])) > 0.1 * 1000.0 * np.pi * 0.005**2 * LENGTH * 9.81  # the support carries weight
    open_rod = solve_statics(linkage_system(_rod_link(loads=[lk.PointLoad("rod", wrench, frame="world")])))
    assert bool(open_rod.converged)
    np.testing.assert_allclose(open_rod.q, closed.q, rtol=0, atol=1e-9 * float(np.abs(closed.q).max()))
    np.testing.assert_allclose(open_rod.tip, [LENGTH, 0.0, 0.0], atol=1e-10)


def test_closed_chain_statics_continues_from_a_neighbouring_equilibrium():
    """``start``: the pinned rod under full gravity from its equilibrium under 40 % of it (the multipliers starting
    from zero) reaches the direct solve's configuration and multipliers in one load step."""
    tip = se3.from_rotation_translation(jnp.eye(3), jnp.array([LENGTH, 0.0, 0.0]))
    closure = lk.Closure("rod", None, "spherical", placement_b=tip)
    light = linkage_system(_rod_link(gravity=-0.4 * 9.81), closures=[closure])
    system = linkage_system(_rod_link(), closures=[closure])
    q0 = solve_statics(light).q
    direct = solve_statics(system)
    sol = solve_statics(system, q0=q0, start=(light, jnp.zeros(0)))
    assert bool(sol.converged) and int(sol.load_steps_taken) == 1
    np.testing.assert_allclose(sol.q, direct.q, rtol=0, atol=1e-10 * float(np.abs(direct.q).max()))
    np.testing.assert_allclose(sol.multipliers, direct.multipliers, rtol=1e-9)
