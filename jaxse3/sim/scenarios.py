"""The paper's simulation scenarios, ready to run: the cable-driven manipulator and its contact variant (seed 003).

Seed 003 §4.5 and §6.2 (digest §5.1, §5.5). The paper's actuation time histories exist only in its figures (Fig. 3b),
which the text does not contain, so the default inputs here are our own, documented choice of similar magnitude:

**Default CDM tensions** (:func:`cdm_tensions`): each cable's tension is a smooth raised-cosine pulse
``T(t) = peak · sin²(π (t − start)/width)`` for ``start ≤ t ≤ start + width`` and 0 otherwise (C¹, within
[0, peak]), over 10 s:

| cable | route (Table 2)        | start [s] | width [s] | peak [N] |
|-------|------------------------|-----------|-----------|----------|
| 1     | straight, top          | 0         | 4         | 20       |
| 2     | straight, 120°         | 2         | 4         | 20       |
| 3     | straight, 240°         | 4         | 4         | 20       |
| 4     | helix (2 turns)        | 6         | 4         | 10       |
| 5     | helix, opposite hand   | 1         | 4         | 10       |

so the tip sweeps around the axis, then twists. The contact scenario uses twice these peaks so that the rod reaches
the wall of the cylinder (radius 0.15 m, k_c = 1e5 N/m, p = 1.5, 12 computational points).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Real

from jaxse3 import rod as rods
from jaxse3.sim.system import System, rod_system

__all__ = ["PulseInputs", "cdm_tensions", "cdm_system", "cdm_contact_system", "CDM_T_FINAL"]

CDM_T_FINAL = 10.0


class PulseInputs(eqx.Module):
    """Raised-cosine pulses ``u_k(t) = peak_k sin²(π (t − start_k)/width_k)`` on ``[start_k, start_k + width_k]``.

    A pytree (arrays ``start``, ``width``, ``peak``, each (n_inputs,)), so a batch of input sets vmaps.
    """

    start: jax.Array
    width: jax.Array
    peak: jax.Array

    def __call__(self, t: Real[ArrayLike, ""]) -> Float[Array, " n_inputs"]:
        s = jnp.clip((t - self.start) / self.width, 0.0, 1.0)
        return self.peak * jnp.sin(jnp.pi * s) ** 2


def cdm_tensions(scale: float = 1.0) -> PulseInputs:
    """The default CDM tension profiles (module docstring table), peaks multiplied by ``scale``."""
    return PulseInputs(
        start=jnp.array([0.0, 2.0, 4.0, 6.0, 1.0]),
        width=jnp.full(5, 4.0),
        peak=scale * jnp.array([20.0, 20.0, 20.0, 10.0, 10.0]),
    )


def cdm_system(n_gauss: int = 5) -> System:
    """The CDM (seed 003 §4.5; :func:`jaxse3.rod.cdm_rod`, hanging along −z) as a :class:`System`."""
    return rod_system(rods.cdm_rod(n_gauss=n_gauss))


def cdm_contact_system(radius: float = 0.15, stiffness: float = 1e5, exponent: float = 1.5) -> System:
    """The CDM inside a hollow cylinder about the world z axis (seed 003 §6.2): 12 computational points (10 Gauss)."""
    contact = rods.CylinderContact(radius=radius, stiffness=stiffness, exponent=exponent)
    return rod_system(rods.cdm_rod(n_gauss=10), rods.Loads(contact=contact))
