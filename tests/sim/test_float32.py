"""float32 (``jax_enable_x64`` off, in a fresh process) against float64: the CDM's statics, their gradient and
dynamics, the energy of an undamped CDM, the CDM in contact with its cylinder, and a rigid 6-link arm (Featherstone's
autoTree with random inertias) falling from rest.

Budgets (observed in brackets): statics q within 1e−6 of float64 [2.1e−7], converging with the dtype's default Newton
tolerance (1.2e−5: 1e−10 is below float32's round-off); the tip over 1 s within 1e−5 m by Kvaerno5 [4e−7 m at 2 s]
and by Newmark-β, a stack of 64 members with different tensions, at its default Newton tolerance 1e−10 [6.4e−7 m
over 4 members, 1.5e−6 m over 64; 2.7e−5 m at 1e−9: its error grows with the tolerance times the step count;
float32's round-off floor of the stack's scaled residual lies near 1e−10, met by the Newton iteration's stall rule];
the contact CDM's tip over 1.2 s (the wall met at 0.93 s) within 1e−5 m [4.7e−7 m]; the rigid arm's last body over
1 s within 2e−4 m at rtol 1e−5 [6.1e−5 m; a chaotic chain: at rtol 1e−3 the two runs' step choices part by
1.1e−3 m].

The float64 results are stored (``float64_reference.json``, with a digest of the script that made them): the same
script run in float64 costs as much as the float32 run. A change of the script fails the test until the reference is
written again: ``python -m tests.sim.test_float32``."""

from __future__ import annotations

import hashlib
import json
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", sys.argv[1] == "64")
    from jaxse3.sim import scenarios, simulate, simulate_batch, solve_statics

    system = scenarios.cdm_system()
    out = {}
    eq = solve_statics(system, np.full(5, 2.0))
    out["statics"] = np.asarray(eq.q).tolist()
    out["dtype"] = str(eq.q.dtype)
    tip = lambda u: solve_statics(system, u).tip  # its derivative: the implicit-function rule
    out["gradient"] = np.asarray(jax.jacfwd(tip)(np.full(5, 2.0))).tolist()
    from jaxse3 import rod
    from jaxse3.rod.geometry import Material

    free = scenarios.cdm_system(material=Material(E=1e6, rho=1000.0, nu=0.5, damping=0.0))  # undamped
    q0 = np.zeros(free.n_dof)
    q0[1] = 3.0  # bent, released
    tr = simulate(free, None, q0=q0, t_final=1.0, n_save=11, rtol=1e-6, atol=1e-8, progress=False)
    energy = jax.jit(jax.vmap(lambda q, qd: rod.energy(free.params[0], q, qd).total))
    out["energy"] = np.asarray(energy(tr.q, tr.qd)).tolist()
    tr = simulate(system, scenarios.cdm_tensions(), t_final=1.0, n_save=11, progress=False)
    out["kvaerno5"] = np.asarray(tr.tip).tolist()
    # Newmark-β on a stack of 64 members that differ: one Newton test, the max over all of them, each step (and for
    # the initial accelerations), which float32's round-off reaches only through the iteration's stall rule
    u = np.abs(np.random.default_rng(1).normal(size=(64, 5))) * 3.0
    tr = simulate_batch(system, u, t_final=1.0, n_save=11, solver="newmark", progress=False)
    out["newmark"] = np.asarray(tr.tip).tolist()
    contact = scenarios.cdm_contact_system()  # the tip meets the wall at 0.93 s
    tr = simulate(contact, scenarios.cdm_tensions(2.0), t_final=1.2, n_save=13, progress=False)
    out["contact"] = np.asarray(tr.tip).tolist()
    from jaxse3 import rigid
    from jaxse3.sim import rigid_system

    arm = rigid_system(rigid.auto_tree(6, seed=0))  # a 6-link arm falling under gravity from rest
    tr = simulate(arm, np.zeros(6), t_final=1.0, n_save=11, rtol=1e-5, atol=1e-6, progress=False)
    out["rigid"] = np.asarray(tr.tip).tolist()
    print(json.dumps(out))
    """
)


#: the statics tip's derivative by the tensions (implicit-function rule), m/N [1.7e−9; |∂tip/∂u| ≤ 8.6e−3 m/N]
GRADIENT = 2e-8
#: an undamped CDM released bent, 1 s by Kvaerno5 at rtol 1e−6: the energy's drift relative to |E(0)| [float32
#: 1.1e−5, float64 1.1e−5: the integrator's, not the dtype's], and float32's distance from float64's [2.5e−7]
ENERGY_DRIFT, ENERGY_GAP = 5e-5, 2e-6


#: the float64 run of SCRIPT, and the digest of the SCRIPT that made it
REFERENCE = pathlib.Path(__file__).with_name("float64_reference.json")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _digest() -> str:
    return hashlib.sha256(SCRIPT.encode()).hexdigest()[:16]


def _run(bits: str) -> dict:
    r = subprocess.run([sys.executable, "-c", SCRIPT, bits], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_cdm_in_float32_keeps_its_budgets_against_float64():
    reference = json.loads(REFERENCE.read_text())
    assert reference.pop("script") == _digest(), (
        "SCRIPT changed: write the reference again (python -m tests.sim.test_float32)"
    )
    runs = {"32": _run("32"), "64": reference}
    assert runs["32"]["dtype"] == "float32" and runs["64"]["dtype"] == "float64"
    np.testing.assert_allclose(runs["32"]["statics"], runs["64"]["statics"], atol=1e-6)
    np.testing.assert_allclose(runs["32"]["gradient"], runs["64"]["gradient"], atol=GRADIENT)
    energy = {bits: np.asarray(runs[bits]["energy"]) for bits in runs}
    drift = {bits: np.abs(e - e[0]).max() / np.abs(e[0]) for bits, e in energy.items()}
    assert drift["32"] <= ENERGY_DRIFT, drift
    np.testing.assert_allclose(energy["32"], energy["64"], rtol=0, atol=ENERGY_GAP * np.abs(energy["64"][0]))
    np.testing.assert_allclose(runs["32"]["kvaerno5"], runs["64"]["kvaerno5"], atol=1e-5)
    np.testing.assert_allclose(runs["32"]["newmark"], runs["64"]["newmark"], atol=1e-5)
    np.testing.assert_allclose(runs["32"]["contact"], runs["64"]["contact"], atol=1e-5)
    np.testing.assert_allclose(runs["32"]["rigid"], runs["64"]["rigid"], atol=2e-4)


#: a closed four-bar (tests/linkage/four_bar.py) swinging from rest for 1 s by the index-3 Newmark-β; prints q(1 s)
FOUR_BAR_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", sys.argv[1] == "64")
    from jaxse3 import sim
    from tests.linkage.four_bar import FOUR_BAR, PLANAR, four_bar_pose

    system = sim.linkage_system(FOUR_BAR, closures=(PLANAR,))
    q0 = four_bar_pose(jnp.asarray(0.3))[0]
    tr = sim.simulate(system, t_final=1.0, q0=q0, solver="newmark-index3", dt=1e-3, n_save=2, progress=False)
    e = jnp.abs(sim.constraint_drift(system, tr).monitors["closure_error"]).max()
    print(json.dumps({"dtype": str(tr.q.dtype), "q": tr.q[-1].tolist(), "closure_error": float(e)}))
    if sys.argv[1] == "32":  # the linkage examples build in float32
        from jaxse3.demo import _scenario

        for name in ("serial-robot", "flagellated", "parallel-robot", "fin-ray"):
            _scenario(name)
    """
)


def test_closed_chains_and_the_linkage_examples_in_float32():
    """The model checks allow float32's round-off (a rotation computed in float32 is orthonormal to ~1e−7, not 1e−9):
    the linkage examples build; the index-3 Newmark-β holds the constraints to 100 ε in float32 (e's round-off lies
    near 1e−7 m, above its float64 tolerance 1e−10, where every step failed) and accepts a start within 100 ε: a
    four-bar swings 1 s within 1e−3 rad of float64 [2.7e−4], its loop closed to 1.2e−5 m; float64 unchanged."""
    from jaxse3.linkage._model import round_off
    from jaxse3.sim.dynamics import consistent_start_tol

    assert round_off(np.zeros(3)) == 1e-9 and 1e-6 < round_off(np.zeros(3, np.float32)) < 1e-5
    assert consistent_start_tol(np.float64) == 1e-8 and consistent_start_tol(np.float32) == pytest.approx(1.19e-5, 1e-2)
    runs = {}
    for bits in ("32", "64"):
        cmd = [sys.executable, "-c", FOUR_BAR_SCRIPT, bits]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert r.returncode == 0, r.stderr[-3000:]
        runs[bits] = json.loads(r.stdout.strip().splitlines()[-1])
    assert runs["32"]["dtype"] == "float32" and runs["64"]["dtype"] == "float64"
    assert runs["32"]["closure_error"] <= 1.2e-5 and runs["64"]["closure_error"] <= 1e-9
    np.testing.assert_allclose(runs["32"]["q"], runs["64"]["q"], atol=1e-3)


if __name__ == "__main__":  # write the float64 reference: python -m tests.sim.test_float32
    REFERENCE.write_text(json.dumps({"script": _digest(), **_run("64")}) + "\n")
    print(f"wrote {REFERENCE}")
