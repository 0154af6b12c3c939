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

**Hybrid serial robot** (seed 003 §5.1, digest §5.2; :func:`serial_robot`): seven rigid links on revolute joints,
then a soft Kirchhoff link on a fixed joint — 7 + 4 strains × 5 modes = 27 DoF. The paper gives neither the rigid
links' dimensions and masses nor the joint angles (a figure only); our choices:

* rigid link i (i = 1 … 7): 0.1 m long along its local x, 0.3 kg, a slender cylinder of radius 2 cm about its centre
  (0.05, 0, 0); joint i+1 at its far end; joint axes alternate local y and local x (the paper's blue and red links),
  starting with y; the arm lies along the world x axis at q = 0, the base at the origin;
* the soft link: L = 0.5 m, circular section of radius 1.5 cm → 1 cm (linear), the CDM's material (E = 1 MPa,
  ν = 0.5, ρ = 1000 kg/m³, υ = 10⁴ Pa·s), strains ω_x, ω_y, ω_z, v_x with Legendre order 4 (no shear: Kirchhoff),
  5 Gauss points; it hangs from the seventh link's far end along the world −z axis, so q = 0 is an equilibrium;
* prescribed joint angles q_i(t) = A_i (1 − cos(2π t/P_i))/2 (from rest), A = (π/6, −π/8, π/8, −π/6, π/8, −π/8,
  π/6) rad, P_i = 4 + 0.5 (i − 1) s.

**Underwater flagellated robot** (seed 003 §6.3, digest §5.6; :func:`flagellated_robot`): a free-floating body, two
shafts on revolute joints, three rigid hooks on each shaft and a soft flagellum on each hook — 6 (the body, in
exponential coordinates) + 2 + 6 × 12 = 80 DoF, driven by +0.25 N·m on the front shaft and −0.25 N·m on the rear one
(opposite torques: the reactions on the body cancel). The paper gives the flagella's lengths and a base radius, no other
dimension and no hydrodynamic coefficient; our choices:

* the body: a circular cylinder along its local x (the swimming axis), 0.3 m long, radius 5 cm; the shafts: cylinders
  of radius 2 cm, 5 cm long, on the body's axis at its ends (x = ±0.15 m), both turning about the body's +x; the
  hooks: 5 g each, 3 cm off the shaft's axis at 0°, 120°, 240° at the shaft's outer end;
* the flagella: Kirchhoff rods (torsion and bending, no stretch or shear) with cubic strain (Legendre order 3 → 12
  DoF), 6 Gauss points; front 0.35 m pointing forward, rear 0.5 m pointing backward, each tilted 30° outwards from
  the axis; circular section tapering linearly from 1.25 cm at the base to 1.25 mm at the tip (the paper: "base
  radius of 12.5 cm", implausible for a 35 cm flagellum — read as 12.5 mm; "to a point" — a tenth of the base, since
  a section of zero radius has no stiffness); the CDM's material (E = 1 MPa, ν = 0.5, ρ = 1000 kg/m³,
  υ = 10⁴ Pa·s);
* water (ρ_w = 1000 kg/m³) and every body neutrally buoyant (each rigid body's volume = m/ρ_w; the rods' density is
  the water's): gravity and buoyancy cancel, as in the paper;
* the flagella's drag and added mass: :class:`jaxse3.linkage.Fluid`'s circular-cylinder values (Morison drag
  C_D = 1.2 across, skin friction C_f = 0.01 along, added mass C_a = 1 across: potential flow about a cylinder);
* the rigid bodies' drag and added mass, from their shapes (link frames at the centres): translation 𝓓 =
  ½ρ_w diag(C_ax A_end, C_D d L, C_D d L) with C_ax = 0.82 (a cylinder of length/diameter ≈ 3 end-on, Hoerner 1965)
  and C_D = 1.2, added mass diag(0.1 ρ_w V, ρ_w V, ρ_w V) along/across (slender-body values; 0.1 end-on for
  length/diameter ≈ 3), and added rotational inertia ρ_w π r² L³/12 about the transverse axes; no rotational drag (the
  quadratic drag of eq. (62) scales with the point's linear speed); the hooks are small enough to carry none.

**Hybrid parallel robot** (seed 003 §6.1, digest §5.4; :func:`parallel_robot`): three soft pillars standing on the
ground carry a rigid triangular platform through spherical joints — 3 × 18 + 3 × 3 = 63 DoF, 12 closure rows. The
paper gives the pillars' section and length, the platform's size and the strain bases, not the layout, the masses or
the load's time profile; our choices:

* the pillars: 15 cm long, rectangular section 1.5 cm × 3 cm (the 3 cm side radial), the CDM's material (E = 1 MPa,
  ν = 0.5, ρ = 1000 kg/m³, υ = 10⁴ Pa·s), cubic angular strains (Legendre order 3: 4 modes each) and first-order
  linear ones (2 modes each), 6 Gauss points; standing vertically at the corners of the platform's triangle (side
  20 cm, circumradius 11.5 cm), so the structure is symmetric under turns of 120° about the vertical;
* the joints: a spherical joint (exponential coordinates) on each pillar's tip carrying a small ball (5 g, radius
  5 mm); the platform (an equilateral plate 20 cm × 1 cm thick, density 1000 kg/m³: 173 g) is fixed to the first ball,
  and the other two balls are fixed to its corners by loop closures (``"fixed"``, 6 rows each) — the paper's three
  spherical joints and two closed chains;
* the load: a constant world wrench on the platform's centre (:data:`PARALLEL_WRENCH`: 0.3 N along x, −0.2 N along
  y, 0.02 N·m about z), applied from rest at t = 0, with gravity; the closures' Baumgarte time constant is 10 ms.

**Fin-ray finger** (seed 003 §5.2, digest §5.3; :func:`fin_ray_linkage`, :func:`fin_ray`): a planar closed chain of 17
soft links, 5 revolute joints and a prismatic one, closed by 6 loop closures — 17 × 4 + 5 + 1 = 74 DoF. The paper's
geometry wording ("rectangular cross-section with a width of 1 mm; sidewalls height 2.5 cm and length 3 cm; ribs height
1 cm") does not say which number is which; our reading and choices:

* the finger stands in the vertical world xy plane, pointing up (+y), gravity (0, −9.81, 0) m/s²; two sidewalls, A
  (front) from the origin and B (back) from (2 cm, 0, 0), each 3 cm long (the paper's length, taken literally), meet
  at the apex (1 cm, 2.828 cm, 0): an isosceles triangle of base 2 cm (our choice) and apex half-angle 19.5°;
* sections: 1 mm in the plane (the paper's width, the bending thickness: local y) × 2.5 cm out of the plane for the
  sidewalls and 1 cm for the ribs (the paper's heights: local z = world z);
* each sidewall is cut at 5 equally spaced junctions into 6 soft links of 5 mm on fixed joints; 5 horizontal ribs
  (lengths 2 cm · (1 − k/6), k = 1 … 5: 16.7 mm down to 3.3 mm) hang from A's junctions on massless revolute joints
  about z and are closed to B's junctions at the same heights; A's base is fixed to the world, B's base slides on the
  actuated prismatic joint :data:`FIN_RAY_ACTUATOR` along the world y axis (pushing B's base up bends the finger
  towards −x, A's side); the apex is closed by a fixed joint;
* every soft link: linear bending about z, constant elongation and constant in-plane shear (Legendre orders
  (—, —, 1, 0, 0, —): 4 DoF), 6 Gauss points (8 computational points per soft link: 17 × 8 = 136, the paper's n_p);
* ABS: E = 2 GPa, ν = 0.35, ρ = 1050 kg/m³ (not given in the paper), material damping υ = 2·10⁴ Pa·s (not given): the
  lowest mode of the closed chain with the slider held (932 Hz) then has a damping ratio of 0.09; the modes up to
  about 10 kHz oscillate, the faster ones (down to 0.5 MHz: elongation and shear of the short links) are overdamped;
* the closures of a planar mechanism keep only their in-plane rows (the out-of-plane rows vanish identically and
  would make A rank-deficient): the ribs' revolute joints are ``"planar"`` closures (2 rows) and the fixed apex joint
  constrains the rotation about z and the two in-plane translations (3 rows): 13 independent rows;
* the actuation (the paper's Fig. 10b profile is not in its text): the slider prescribed, raised-cosine strokes
  d(t) = 2 mm (1 − cos 2πt/2 s)/2 from rest (:data:`FIN_RAY_STROKE`, :data:`FIN_RAY_PERIOD`), so the response is
  periodic; the prescription and the closures are constraints of the index-3 Newmark-β (``solver="newmark-index3"``,
  the paper's fastest solver for this example), the start q = 0 at rest.
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Real

from jaxse3 import linkage as linkages, rigid, rod as rods, se3
from jaxse3.rod.basis import LegendreBasis
from jaxse3.rod.geometry import CircularSection, Material, RectangularSection
from jaxse3.sim.system import System, joint_control, linkage_system, prescribed_inputs, rod_system

__all__ = [
    "PulseInputs",
    "cdm_tensions",
    "cdm_system",
    "cdm_contact_system",
    "CDM_T_FINAL",
    "serial_robot",
    "serial_robot_linkage",
    "SERIAL_JOINTS",
    "RaisedCosine",
    "flagellated_robot",
    "flagellated_robot_linkage",
    "FLAGELLATED_TORQUES",
    "swimming",
    "parallel_robot",
    "parallel_robot_linkage",
    "PARALLEL_WRENCH",
    "fin_ray",
    "fin_ray_linkage",
    "FIN_RAY_ACTUATOR",
    "FIN_RAY_STROKE",
    "FIN_RAY_PERIOD",
    "from_toml",
    "RUN_SETTINGS",
]

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


def cdm_system(n_gauss: int = 5, material: Material | None = None) -> System:
    """The CDM (seed 003 §4.5; :func:`jaxse3.rod.cdm_rod`, hanging along −z) as a :class:`System`; ``material``
    replaces the paper's (E = 1 MPa, ρ = 1000 kg/m³, ν = 0.5, υ = 10⁴ Pa·s)."""
    return rod_system(rods.cdm_rod(n_gauss=n_gauss, material=material))


def cdm_contact_system(
    radius: float = 0.15, stiffness: float = 1e5, exponent: float = 1.5, material: Material | None = None
) -> System:
    """The CDM inside a hollow cylinder about the world z axis (seed 003 §6.2): 12 computational points (10 Gauss);
    ``material`` as for :func:`cdm_system`."""
    contact = rods.CylinderContact(radius=radius, stiffness=stiffness, exponent=exponent)
    return rod_system(rods.cdm_rod(n_gauss=10, material=material), rods.Loads(contact=contact))


#: the hybrid serial robot's joint links, in order (module docstring)
SERIAL_JOINTS = tuple(f"link{i}" for i in range(1, 8))
_SERIAL_AMPLITUDES = np.array([1 / 6, -1 / 8, 1 / 8, -1 / 6, 1 / 8, -1 / 8, 1 / 6]) * np.pi
_SERIAL_PERIODS = 4.0 + 0.5 * np.arange(7)


def serial_robot_linkage() -> linkages.Linkage:
    """The hybrid serial robot of seed 003 §5.1 (module docstring): 7 rigid revolute links and a soft link, 27 DoF."""
    ell, mass, radius = 0.1, 0.3, 0.02
    inertia = rigid.spatial_inertia(
        mass, (ell / 2, 0.0, 0.0), np.diag([mass * radius**2 / 2, *(2 * [mass * (3 * radius**2 + ell**2) / 12])])
    )
    axes = [(0.0, 1.0, 0.0, 0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)]
    at_end = se3.from_rotation_translation(jnp.eye(3), jnp.array([ell, 0.0, 0.0]))
    links = [
        linkages.Link.rigid(
            name, None if i == 0 else SERIAL_JOINTS[i - 1], "revolute", inertia, None if i == 0 else at_end, axes[i % 2]
        )
        for i, name in enumerate(SERIAL_JOINTS)
    ]
    rod = rods.Rod(
        length=0.5,
        section=CircularSection(0.015, 0.01),
        material=Material(E=1e6, rho=1000.0, nu=0.5, damping=1e4),
        basis=LegendreBasis((4, 4, 4, 4, None, None)),
        n_gauss=5,
    )
    down = jnp.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # local x along world −z
    links.append(linkages.Link.soft("soft", SERIAL_JOINTS[-1], rod, se3.from_rotation_translation(down, at_end[:3, 3])))
    return linkages.Linkage(links)


def serial_robot() -> tuple[System, Callable]:
    """The hybrid serial robot (module docstring) with its seven joints prescribed: the :func:`linkage_system` and its
    inputs (the joint angles of the module docstring and their derivatives). Start it at rest at q = 0."""
    system = linkage_system(serial_robot_linkage(), prescribed=SERIAL_JOINTS)
    return system, prescribed_inputs(
        system, RaisedCosine(jnp.asarray(_SERIAL_AMPLITUDES), jnp.asarray(_SERIAL_PERIODS))
    )


#: the shaft torques of the flagellated robot [N·m]: front, rear (seed 003 §6.3)
FLAGELLATED_TORQUES = (0.25, -0.25)


def _cylinder_in_water(length: float, radius: float, rho_w: float) -> dict:
    """A neutrally buoyant rigid cylinder along its local x, about its centre: spatial inertia, volume, drag and added
    mass (module docstring)."""
    volume = np.pi * radius**2 * length
    mass = rho_w * volume
    across = mass * (3 * radius**2 + length**2) / 12
    inertia = rigid.spatial_inertia(mass, (0.0, 0.0, 0.0), np.diag([mass * radius**2 / 2, across, across]))
    side = 0.5 * rho_w * 1.2 * 2 * radius * length
    drag = (0.0, 0.0, 0.0, 0.5 * rho_w * 0.82 * np.pi * radius**2, side, side)
    turning = rho_w * np.pi * radius**2 * length**3 / 12
    added = np.diag([0.0, turning, turning, 0.1 * mass, mass, mass])
    return dict(inertia=inertia, volume=volume, drag=drag, added_mass=added)


def flagellated_robot_linkage(n_gauss: int = 6) -> linkages.Linkage:
    """The underwater flagellated robot of seed 003 §6.3 (module docstring): 80 DoF, in water, neutrally buoyant."""
    rho_w = 1000.0
    material = Material(E=1e6, rho=rho_w, nu=0.5, damping=1e4)
    basis = LegendreBasis((3, 3, 3, None, None, None))
    hook_mass = 0.005
    hook = dict(inertia=rigid.spatial_inertia(hook_mass, (0.0, 0.0, 0.0), 1e-7 * np.eye(3)), volume=hook_mass / rho_w)
    x = jnp.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    links = [
        linkages.Link.rigid("body", None, "free", coordinates="exponential", **_cylinder_in_water(0.3, 0.05, rho_w))
    ]
    tilt = np.deg2rad(30.0)
    for shaft, side, length in (("front", 1.0, 0.35), ("rear", -1.0, 0.5)):
        place = se3.from_rotation_translation(jnp.eye(3), jnp.array([side * 0.15, 0.0, 0.0]))
        links.append(
            linkages.Link.rigid(
                shaft, "body", "revolute", placement=place, axis=x, **_cylinder_in_water(0.05, 0.02, rho_w)
            )
        )
        rod = rods.Rod(
            length=length,
            section=CircularSection(0.0125, 0.00125),
            material=material,
            basis=basis,
            n_gauss=n_gauss,
        )
        for k in range(3):
            phi = 2 * np.pi * k / 3
            radial = np.array([0.0, np.cos(phi), np.sin(phi)])
            along = np.array([side * np.cos(tilt), 0.0, 0.0]) + np.sin(tilt) * radial  # the flagellum's local x
            third = np.cross(along, radial) / np.cos(tilt)
            R = np.stack([along, np.cross(third, along), third], axis=1)
            at = se3.from_rotation_translation(jnp.asarray(R), jnp.asarray([side * 0.025, *(0.03 * radial[1:])]))
            name = f"{shaft}_hook{k + 1}"
            links.append(linkages.Link.rigid(name, shaft, "fixed", placement=at, **hook))
            links.append(linkages.Link.soft(f"{shaft}_flagellum{k + 1}", name, rod, jnp.eye(4)))
    return linkages.Linkage(links, fluid=linkages.Fluid(density=rho_w))


def flagellated_robot(n_gauss: int = 6) -> tuple[System, Float[Array, " 2"]]:
    """The underwater flagellated robot (module docstring) as a :func:`linkage_system` and its constant inputs, the
    shaft torques :data:`FLAGELLATED_TORQUES`. Start it at rest at q = 0 (straight flagella)."""
    return linkage_system(flagellated_robot_linkage(n_gauss)), jnp.asarray(FLAGELLATED_TORQUES)


#: the world wrench on the parallel robot's platform (moment, force) [N·m, N] (module docstring)
PARALLEL_WRENCH = (0.0, 0.0, 0.02, 0.3, -0.2, 0.0)


def parallel_robot_linkage(
    wrench: Float[ArrayLike, " 6"] = PARALLEL_WRENCH, n_gauss: int = 6
) -> tuple[linkages.Linkage, tuple[linkages.Closure, ...]]:
    """The hybrid parallel robot of seed 003 §6.1 (module docstring): its linkage (63 DoF) with ``wrench`` (6,) on the
    platform's centre (world frame), and its two loop closures."""
    side, thick, length, rho = 0.2, 0.01, 0.15, 1000.0
    rod = rods.Rod(
        length=length,
        section=RectangularSection(0.015, 0.03),
        material=Material(E=1e6, rho=rho, nu=0.5, damping=1e4),
        basis=LegendreBasis((3, 3, 3, 1, 1, 1)),
        n_gauss=n_gauss,
    )
    ball_mass, ball_radius = 0.005, 0.005
    ball = rigid.spatial_inertia(ball_mass, (0.0, 0.0, 0.0), 0.4 * ball_mass * ball_radius**2 * np.eye(3))
    area = np.sqrt(3.0) / 4 * side**2
    plate = rho * area * thick
    # an equilateral plate about its centre: I_zz = m s²/12, I_xx = I_yy = m s²/24 + m t²/12
    plate_inertia = rigid.spatial_inertia(
        plate, (0.0, 0.0, 0.0), np.diag([plate * (side**2 / 24 + thick**2 / 12)] * 2 + [plate * side**2 / 12])
    )
    radius = side / np.sqrt(3.0)
    corners = [radius * np.array([np.cos(a), np.sin(a), 0.0]) for a in np.deg2rad([90.0, 210.0, 330.0])]
    links, closures = [], []
    for k, corner in enumerate(corners):
        radial = corner / radius
        # the pillar's local x up, local z (the 3 cm side) radial
        R = np.stack([np.array([0.0, 0.0, 1.0]), np.cross(radial, [0.0, 0.0, 1.0]), radial], axis=1)
        R[:, 1] = np.cross(R[:, 2], R[:, 0])
        base = se3.from_rotation_translation(jnp.asarray(R), jnp.asarray(corner))
        level = se3.from_rotation_translation(jnp.asarray(R.T), jnp.zeros(3))  # the ball's frame world-aligned
        links.append(linkages.Link.soft(f"pillar{k + 1}", None, rod, base))
        links.append(
            linkages.Link.rigid(f"ball{k + 1}", f"pillar{k + 1}", "spherical", ball, level, coordinates="exponential")
        )
        if k == 0:
            centre = se3.from_rotation_translation(jnp.eye(3), jnp.asarray(-corner + [0.0, 0.0, thick / 2]))
            links.append(linkages.Link.rigid("platform", "ball1", "fixed", plate_inertia, centre))
        else:  # the ball fixed to the platform's corner k
            at_corner = se3.from_rotation_translation(jnp.eye(3), jnp.asarray(corner - [0.0, 0.0, thick / 2]))
            closures.append(linkages.Closure(f"ball{k + 1}", "platform", "fixed", placement_b=at_corner))
    load = linkages.PointLoad("platform", wrench, frame="world")
    return linkages.Linkage(links, loads=[load]), tuple(closures)


def parallel_robot(wrench: Float[ArrayLike, " 6"] = PARALLEL_WRENCH, n_gauss: int = 6) -> tuple[System, Array]:
    """The hybrid parallel robot (module docstring) as a closed-chain :func:`linkage_system` (Baumgarte time 10 ms)
    and its inputs (none). Start it at rest at q = 0 (straight pillars, a consistent state)."""
    linkage, closures = parallel_robot_linkage(wrench, n_gauss)
    return linkage_system(linkage, closures=closures, baumgarte_time=0.01), jnp.zeros(0)


def swimming(linkage: linkages.Linkage, q: Float[ArrayLike, "n nq"], t: Float[ArrayLike, " n"]) -> dict[str, float]:
    """What a floating linkage's run did (its first link the free body in exponential coordinates, as in
    :func:`flagellated_robot_linkage`), from the samples ``q`` at times ``t``: ``distance`` [m] and ``direction`` (unit)
    of the body's displacement, ``speed`` [m/s] its mean over the last quarter of the run, ``body_rotation`` [rad] the
    largest rotation angle of the body, and for every actuated revolute joint ``turns_<name>`` its rotation in turns."""
    q, t = np.asarray(q), np.asarray(t)
    if not linkage.links[0].exponential or linkage.links[0].joint != "free":
        raise ValueError("swimming: the linkage's first link must be a free joint in exponential coordinates")
    body = np.asarray(jax.vmap(se3.exp)(jnp.asarray(q[:, :6]))[:, :3, 3])
    moved = body[-1] - body[0]
    distance = float(np.linalg.norm(moved))
    late = len(t) - max(len(t) // 4, 1) - 1
    out = {
        "distance": distance,
        "direction": (moved / distance).tolist() if distance > 0 else [0.0, 0.0, 0.0],
        "speed": float(np.linalg.norm(body[-1] - body[late]) / (t[-1] - t[late])),
        "body_rotation": float(np.linalg.norm(q[:, :3], axis=1).max()),
    }
    for i, link in enumerate(linkage.links):
        if link.joint == "revolute" and link.actuated:
            out[f"turns_{link.name}"] = float(
                (q[-1, linkage.q_slice(i)][0] - q[0, linkage.q_slice(i)][0]) / (2 * np.pi)
            )
    return out


class RaisedCosine(eqx.Module):
    """Joint profiles q_i(t) = A_i (1 − cos(2π t/P_i))/2: from rest (zero angle and velocity) to A_i at t = P_i/2."""

    amplitude: jax.Array
    period: jax.Array

    def __call__(self, t: Real[ArrayLike, ""]) -> Float[Array, " n"]:
        return self.amplitude * (1.0 - jnp.cos(2.0 * jnp.pi * t / self.period)) / 2.0


#: the solver settings a model file's [simulation] table may hold (the ``jaxse3 run`` flags override them)
RUN_SETTINGS = {"t_final": float, "solver": str, "rtol": float, "atol": float, "dt": float, "rho_inf": float}


def from_toml(source: str | dict) -> tuple[System, Callable, dict, Float[Array, " n_dof"]]:
    """A model file (a path, TOML text or its parsed table) run as ``jaxse3 run my_robot.toml``: the linkage of
    :func:`jaxse3.linkage.from_toml` and its ``[simulation]`` table — ``prescribed = { link = { amplitude = A,
    period = P } }`` (raised-cosine joint profiles from rest, :class:`RaisedCosine`), ``inputs = [...]`` (constant
    efforts and tensions, the linkage's inputs without the prescribed joints'), ``q0 = [...]`` (the initial
    coordinates, at rest), ``baumgarte_time`` (s, the loop closures' time constant, default 0.01) and the settings of
    :data:`RUN_SETTINGS`. The file's ``[[closure]]`` tables (:func:`jaxse3.linkage.closures_from_toml`) make a closed
    chain. Returns ``(system, inputs, settings, q0)``."""
    data, label = linkages.read_toml(source)
    linkage = linkages.from_toml(source)
    closures = linkages.closures_from_toml(source)
    table = data.get("simulation", {})
    allowed = {"prescribed", "inputs", "q0", "baumgarte_time", *RUN_SETTINGS}
    where = f"{label}: [simulation]"
    if not isinstance(table, dict) or set(table) - allowed:
        raise ValueError(
            f"{where}: unknown field(s) {sorted(set(table) - allowed)}; expected some of {sorted(allowed)}"
        )
    settings = {}
    for key, kind in RUN_SETTINGS.items():
        if key in table:
            value = table[key]
            if kind is float and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ValueError(f"{where}: {key!r} must be a number, got {value!r}")
            if key == "rho_inf" and not 0 <= value <= 1:
                raise ValueError(f"{where}: 'rho_inf' must lie in [0, 1], got {value!r}")
            if kind is float and key != "rho_inf" and value <= 0:
                raise ValueError(f"{where}: {key!r} must be a positive number, got {value!r}")
            if kind is str and not isinstance(value, str):
                raise ValueError(f"{where}: {key!r} must be a string, got {value!r}")
            settings[key] = kind(value)
    prescribed = table.get("prescribed", {})
    if not isinstance(prescribed, dict):
        raise ValueError(f"{where}: 'prescribed' must be a table of link = {{ amplitude = A, period = P }}")
    names = [name for name in linkage.names if name in prescribed]
    unknown = sorted(set(prescribed) - set(names))
    if unknown:
        raise ValueError(f"{where}: 'prescribed' names links that do not exist: {unknown}")
    try:
        system = linkage_system(
            linkage, prescribed=tuple(names), closures=closures, baumgarte_time=table.get("baumgarte_time", 0.01)
        )
    except ValueError as e:
        raise ValueError(f"{label}: {e}") from None
    n_inputs = len(joint_control(system).known_inputs) if names else system.n_inputs
    values = np.asarray(table.get("inputs", np.zeros(n_inputs)), dtype=float)
    if values.shape != (n_inputs,):
        raise ValueError(f"{where}: 'inputs' must be a list of {n_inputs} numbers, got {table.get('inputs')!r}")
    q0 = np.asarray(table.get("q0", np.zeros(linkage.nq)), dtype=float)
    if q0.shape != (linkage.nq,):
        raise ValueError(f"{where}: 'q0' must be a list of {linkage.nq} numbers, got {table.get('q0')!r}")
    if not names:
        return system, jnp.asarray(values), settings, jnp.asarray(q0)
    profile = []
    for name in names:
        spec = prescribed[name]
        if not isinstance(spec, dict) or set(spec) != {"amplitude", "period"}:
            raise ValueError(f"{where}: prescribed.{name} must be {{ amplitude = A, period = P }}, got {spec!r}")
        if (
            not all(isinstance(spec[k], int | float) and not isinstance(spec[k], bool) for k in spec)
            or spec["period"] <= 0
        ):
            raise ValueError(f"{where}: prescribed.{name}: amplitude must be a number, period a positive number")
        profile.append((float(spec["amplitude"]), float(spec["period"])))
    amplitude, period = (jnp.asarray(x) for x in zip(*profile))
    return (
        system,
        prescribed_inputs(system, RaisedCosine(amplitude, period), jnp.asarray(values)),
        settings,
        jnp.asarray(q0),
    )


#: the fin-ray finger's actuated prismatic link, under sidewall B's base (module docstring)
FIN_RAY_ACTUATOR = "slider"
#: the fin-ray finger's geometry [m] (module docstring): sidewall length, base width, in-plane thickness, out-of-plane
#: depths of sidewalls and ribs, and the number of soft links per sidewall
_FIN_RAY_WALL, _FIN_RAY_BASE, _FIN_RAY_THICK, _FIN_RAY_DEPTHS, _FIN_RAY_SEGMENTS = 0.03, 0.02, 0.001, (0.025, 0.01), 6


def fin_ray_linkage(n_gauss: int = 6) -> tuple[linkages.Linkage, tuple[linkages.Closure, ...]]:
    """The fin-ray finger of seed 003 §5.2 (module docstring): its linkage (23 links, 17 soft; 74 DoF) and its 6 loop
    closures (13 rows), consistent at q = 0 (straight links). ``n_gauss`` Gauss points per soft link (≥ 2, for the
    linear bending): the default 6 gives 17 × 8 = 136 rod points, the paper's n_p (``linkage.n_points`` = 142 with the
    6 one-point rigid links).

    Links, parents first: ``wall_a1`` … ``wall_a6`` (sidewall A from the fixed base to the apex, each on the previous
    one's tip), ``slider`` (:data:`FIN_RAY_ACTUATOR`: prismatic along world y at (2 cm, 0, 0), massless, actuated),
    ``wall_b1`` … ``wall_b6`` (sidewall B on the slider), then for k = 1 … 5 ``hinge{k}`` (a massless revolute joint
    about z, not actuated, world-aligned on the tip of ``wall_a{k}``) and ``rib{k}`` on it (along world +x). The only
    input is the slider's force. Closures: ``rib{k}``'s tip to ``wall_b{k}``'s tip, ``"planar"`` about z (k = 1 … 5),
    then ``"apex"``: ``wall_a6``'s tip to ``wall_b6``'s tip, the rotation about z and both in-plane translations (an
    explicit Φ⊥, kind ``"custom"``) — the fixed joint of a planar mechanism. Gravity (0, −9.81, 0). Use float64: the
    mass matrix spans 15 orders of magnitude (5 mm links of 1 mm ABS; curvature coordinates).
    """
    L, w, t = _FIN_RAY_WALL, _FIN_RAY_BASE, _FIN_RAY_THICK
    wall_depth, rib_depth = _FIN_RAY_DEPTHS
    n = _FIN_RAY_SEGMENTS
    height = np.sqrt(L**2 - (w / 2) ** 2)
    material = Material(E=2e9, rho=1050.0, nu=0.35, damping=2e4)
    basis = LegendreBasis((None, None, 1, 0, 0, None))  # planar: bending about z (linear), elongation, shear along y
    z = np.array([0.0, 0.0, 1.0])

    def along(direction: np.ndarray) -> np.ndarray:  # local x along ``direction``, local z = world z
        return np.stack([direction, np.cross(z, direction), z], axis=1)

    def pose(R: np.ndarray, p: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> Array:
        return se3.from_rotation_translation(jnp.asarray(R), jnp.asarray(p, dtype=float))

    R_a = along(np.array([w / 2, height, 0.0]) / L)
    R_b = along(np.array([-w / 2, height, 0.0]) / L)
    rod = lambda length, depth: rods.Rod(
        length=length, section=RectangularSection(t, depth), material=material, basis=basis, n_gauss=n_gauss
    )
    wall = rod(L / n, wall_depth)
    massless = np.zeros((6, 6))
    links = [
        linkages.Link.soft(f"wall_a{k}", None if k == 1 else f"wall_a{k - 1}", wall, pose(R_a if k == 1 else np.eye(3)))
        for k in range(1, n + 1)
    ]
    slide = (0.0, 0.0, 0.0, 0.0, 1.0, 0.0)
    links.append(
        linkages.Link.rigid(FIN_RAY_ACTUATOR, None, "prismatic", massless, pose(np.eye(3), (w, 0.0, 0.0)), slide)
    )
    links += [
        linkages.Link.soft(
            f"wall_b{k}", FIN_RAY_ACTUATOR if k == 1 else f"wall_b{k - 1}", wall, pose(R_b if k == 1 else np.eye(3))
        )
        for k in range(1, n + 1)
    ]
    closures = []
    for k in range(1, n):
        hinge = linkages.Link.rigid(
            f"hinge{k}", f"wall_a{k}", "revolute", massless, pose(R_a.T), (*z, 0.0, 0.0, 0.0), actuated=False
        )
        links += [hinge, linkages.Link.soft(f"rib{k}", f"hinge{k}", rod(w * (1 - k / n), rib_depth))]
        closures.append(linkages.Closure(f"rib{k}", f"wall_b{k}", "planar", axis=z, placement_b=pose(R_b.T)))
    in_plane = np.eye(6)[:, [2, 3, 4]]  # rotation about z, translations along the frame's x and y (frame B's z = z)
    closures.append(
        linkages.Closure(f"wall_a{n}", f"wall_b{n}", constrained=in_plane, placement_b=pose(R_b.T @ R_a), name="apex")
    )
    return linkages.Linkage(links, gravity=(0.0, -9.81, 0.0)), tuple(closures)


#: the fin-ray finger's slider motion (module docstring): stroke [m] and period [s] of its raised-cosine cycles
FIN_RAY_STROKE, FIN_RAY_PERIOD = 0.002, 2.0


def fin_ray(n_gauss: int = 6) -> tuple[System, Callable]:
    """The fin-ray finger (module docstring) with its slider prescribed: the closed-chain :func:`linkage_system` (run
    it with ``solver="newmark-index3"``, which holds the closures and the prescription as constraints) and its inputs,
    the slider's position d(t) = s (1 − cos 2πt/P)/2 (stroke s = :data:`FIN_RAY_STROKE` up along y, period
    P = 2 s: from rest, periodic; the paper's Fig. 10b profile is not in its text) and its derivatives. Start it at
    rest at q = 0 (straight links, a consistent state; gravity then sets the walls swinging about their sag)."""
    linkage, closures = fin_ray_linkage(n_gauss)
    system = linkage_system(linkage, prescribed=(FIN_RAY_ACTUATOR,), closures=closures)
    profile = RaisedCosine(jnp.asarray([FIN_RAY_STROKE]), jnp.asarray([FIN_RAY_PERIOD]))
    return system, prescribed_inputs(system, profile)
