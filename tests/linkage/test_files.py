"""Linkages from TOML model files: the shipped serial and flagellated robots equal the scenarios', and bad files are
named."""

import os

import jax
import numpy as np
import pytest

from jaxse3 import linkage as lk
from jaxse3.sim import scenarios

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "models")


def test_the_serial_robot_file_is_the_scenario():
    path = os.path.join(MODELS, "serial_robot.toml")
    got, want = lk.from_toml(path), scenarios.serial_robot_linkage()
    assert got.names == want.names and got.parents == want.parents and got.nv == want.nv == 27
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15), got, want)
    _, inputs, settings, q0 = scenarios.from_toml(path)
    _, ref = scenarios.serial_robot()
    assert settings == {"t_final": 10.0, "solver": "kvaerno5"}
    for t in (0.0, 1.3, 7.0):
        np.testing.assert_allclose(inputs(t), ref(t), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(q0, 0.0)


def test_the_flagellated_robot_file_is_the_scenario():
    path = os.path.join(MODELS, "flagellated_robot.toml")
    got, want = lk.from_toml(path), scenarios.flagellated_robot_linkage()
    assert got.names == want.names and got.parents == want.parents and got.nv == got.nq == want.nv == 80
    assert got.links[0].exponential
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-15), got, want)
    _, inputs, settings, q0 = scenarios.from_toml(path)
    np.testing.assert_allclose(inputs, scenarios.FLAGELLATED_TORQUES)
    assert settings == {"t_final": 10.0, "solver": "kvaerno5"}
    np.testing.assert_allclose(q0, 0.0)


GOOD = """
[[link]]
name = "a"
joint = "revolute"
axis = [0.0, 0.0, 1.0]
mass = 1.0
inertia = [0.1, 0.1, 0.1]
"""


SOFT = "[[link]]\nname = 's'\njoint = 'soft'\n[link.rod]\nlength = 0.5\nradius = 0.01\nyoung = 1e6\ndensity = 1e3\n"


def test_a_rods_shear_factor_and_rotary_inertia_are_read():
    rod = lk.from_toml(SOFT + "shear_factor = 0.85\nrotary_inertia = false").links[0].body
    assert float(rod.shear_factor) == 0.85 and rod.rotary_inertia is False
    np.testing.assert_array_equal(rod.inertia[:, 1:3], 0.0)
    rod = lk.from_toml(SOFT).links[0].body
    assert float(rod.shear_factor) == 1.0 and rod.rotary_inertia is True


@pytest.mark.parametrize(
    "text, match",
    [
        ("[[link]]\nname = 'a'\njoint = 'ball'", "link 'a': 'joint' must be one of"),
        (GOOD + "\n[[load]]\nlink = 'a'\nwrench = [1, 2, 3]", "load 1: 'wrench' must be a list of 6 numbers"),
        (GOOD + "\n[[load]]\nlink = 'b'\nwrench = [1, 2, 3, 4, 5, 6]", "names the link 'b', which is not a link"),
        (GOOD.replace("revolute", "free").replace("axis = [0.0, 0.0, 1.0]", "coordinates = 'euler'"), "'coordinates'"),
        (GOOD.replace("mass = 1.0", "mass = -1.0"), "link 'a': 'mass' must be non-negative"),
        (GOOD.replace("inertia = [0.1, 0.1, 0.1]", ""), "'inertia' must be .* \\(optional for a massless link"),
        (GOOD.replace("mass = 1.0", "mas = 1.0"), r"link 'a': unknown field\(s\) \['mas'\]"),
        (GOOD.replace("[0.0, 0.0, 1.0]", "[0.0, 0.0, 2.0]"), "'axis' must be a unit vector"),
        (GOOD.replace("[0.1, 0.1, 0.1]", "[0.1, -0.1, 0.1]"), "'inertia' must be symmetric positive semi-definite"),
        (GOOD + "\n[[link]]\nname = 'b'\nparent = 'c'\njoint = 'fixed'\nmass = 1.0\ninertia = [1, 1, 1]", "not a link"),
        (
            "[[link]]\nname = 'b'\nparent = 'a'\njoint = 'fixed'\nmass = 1.0\ninertia = [1, 1, 1]\n" + GOOD,
            "which comes after it",
        ),
        ("[[link]]\nname = 's'\njoint = 'soft'", "needs its \\[link.rod\\] table"),
        (
            "[[link]]\nname = 's'\njoint = 'soft'\n[link.rod]\nlength = -0.5\nradius = 0.01\nyoung = 1e6\n"
            "density = 1e3",
            "link 's': rod: 'length' must be positive",
        ),
        (
            "[[link]]\nname = 's'\njoint = 'soft'\n[link.rod]\nlength = 0.5\nradius = 0.01\nyoung = 1e6\n"
            "density = 1e3\norder = 4\ngauss = 3",
            "'gauss' must be an integer ≥ order \\+ 1 = 5",
        ),
        (SOFT + "shear_factor = 0", "link 's': rod: 'shear_factor' must be positive"),
        (SOFT + "rotary_inertia = 1", "link 's': rod: 'rotary_inertia' must be true or false"),
        ("gravity = [0, 0]", "'gravity' must be a list of 3 numbers"),
        ("", "no links"),
        ("[[link]\n", "not valid TOML"),
    ],
)
def test_bad_model_files_name_the_link_and_the_field(text, match):
    with pytest.raises(ValueError, match=match):
        lk.from_toml(text)


def test_the_parallel_robot_file_is_the_scenario():
    """A closed chain in a model file: rectangular sections, one Legendre order per strain, loads and [[closure]] tables
    give the scenario's linkage and closures, and [simulation] its Baumgarte time."""
    path = os.path.join(MODELS, "parallel_robot.toml")
    (got, closures), (want, ref) = (lk.from_toml(path), lk.closures_from_toml(path)), scenarios.parallel_robot_linkage()
    assert got.names == want.names and got.parents == want.parents and got.nv == got.nq == want.nv == 63
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-15), got, want)
    assert [(c.link_a, c.link_b, c.kind) for c in closures] == [(c.link_a, c.link_b, c.kind) for c in ref]
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15), closures, ref)
    system, inputs, settings, q0 = scenarios.from_toml(path)
    assert float(system.params.baumgarte_time) == 0.01 and inputs.shape == (0,) and q0.shape == (63,)
    assert settings == {"t_final": 10.0, "solver": "kvaerno5"}


def test_the_fin_ray_file_is_the_scenario():
    """The fin-ray finger in a model file: massless rigid links (mass = 0: the slider and the hinges), an explicit
    Φ⊥ for the apex closure, and [simulation] the prescribed slider with the index-3 solver: the scenario's linkage,
    closures, constraints and inputs."""
    path = os.path.join(MODELS, "fin_ray.toml")
    (got, closures), (want, ref) = (lk.from_toml(path), lk.closures_from_toml(path)), scenarios.fin_ray_linkage()
    assert got.names == want.names and got.parents == want.parents and got.nv == got.nq == want.nv == 74
    assert got.n_points == want.n_points
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15), got, want)
    assert [(c.link_a, c.link_b, c.kind, c.name) for c in closures] == [
        (c.link_a, c.link_b, c.kind, c.name) for c in ref
    ]
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15), closures, ref)
    system, inputs, settings, q0 = scenarios.from_toml(path)
    assert settings == {"t_final": 10.0, "solver": "newmark-index3", "dt": 0.01}
    reference, reference_inputs = scenarios.fin_ray()
    assert system.n_constraints == reference.n_constraints == 14 and q0.shape == (74,) and not np.any(q0)
    for t in (0.0, 0.3, 1.0):
        np.testing.assert_allclose(inputs(t), reference_inputs(t), rtol=1e-14, atol=1e-16)


@pytest.mark.parametrize(
    "closure, match",
    [
        ("link_a = 'a'\nkind = 'hinge'", "unknown 'kind'"),
        ("link_a = 'a'\nkind = 'revolute'", "needs its 'axis'"),
        ("link_a = 'a'\nspin = 1", r"unknown field\(s\) \['spin'\]"),
        ("link_a = 'a'\npoint_a = 1.5", "'point_a' must be an integer"),
        ("kind = 'fixed'", "'link_a' .* must be link names"),
        ("link_a = 'a'\nconstrained = [[1, 0], [0, 1]]", r"'constrained' must be six rows of k numbers \(Φ⊥, 6 × k\)"),
        (
            "link_a = 'a'\nconstrained = [[1], [0], [0], [0], [0], [0]]\nkind = 'fixed'",
            "either 'constrained' or a 'kind'",
        ),
    ],
)
def test_bad_closure_tables_are_named(closure, match):
    with pytest.raises(ValueError, match=match):
        lk.closures_from_toml(GOOD + "\n[[closure]]\n" + closure + "\n")


def test_a_massless_link_needs_no_inertia():
    linkage = lk.from_toml(GOOD.replace("mass = 1.0", "mass = 0.0").replace("inertia = [0.1, 0.1, 0.1]", ""))
    np.testing.assert_array_equal(linkage.links[0].body, np.zeros((6, 6)))


def test_loads_in_a_model_file():
    text = GOOD + "\n[[load]]\nlink = 'a'\nwrench = [0, 0, 1, 0, 0, -2]\nframe = 'local'\n"
    linkage = lk.from_toml(text)
    (load,) = linkage.loads
    assert (load.link, load.frame, load.point) == ("a", "local", -1)
    np.testing.assert_allclose(load.wrench, [0, 0, 1, 0, 0, -2])


def test_bad_simulation_tables_are_named(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(GOOD + "\n[simulation]\nprescribed = { b = { amplitude = 1.0, period = 2.0 } }\n")
    with pytest.raises(ValueError, match=r"m\.toml: \[simulation\]: 'prescribed' names links that do not exist"):
        scenarios.from_toml(str(path))
    path.write_text(GOOD + "\n[simulation]\nsteps = 3\n")
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['steps'\]"):
        scenarios.from_toml(str(path))
    for line, message in (
        ("rho_inf = 1.2", r"'rho_inf' must lie in \[0, 1\], got 1.2"),
        ("dt = 0", "'dt' must be a positive"),
    ):
        path.write_text(GOOD + f"\n[simulation]\n{line}\n")
        with pytest.raises(ValueError, match=message):
            scenarios.from_toml(str(path))
    path.write_text(GOOD + "\n[simulation]\nsolver = 'generalized-alpha'\nrho_inf = 0\n")
    assert scenarios.from_toml(str(path))[2] == {"solver": "generalized-alpha", "rho_inf": 0.0}
