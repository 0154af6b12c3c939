"""Simulation results: :class:`Trajectory`, the one result type of every simulation, a pytree that saves to and loads
from ``.npz``.

Under ``vmap`` every field gains the batch axes in front, and ``save``/``load`` keep them. Files carry the units of
every field and monitor and, optionally, the run's parameters (:meth:`Trajectory.save` ``metadata``, read back by
:meth:`Trajectory.metadata`); they are written atomically, so an interrupted save never destroys an older file.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import diffrax
import equinox as eqx
import jax
import numpy as np

__all__ = ["Trajectory"]

#: units of the fields (rod coordinates are strain-basis amplitudes; their units depend on the basis)
UNITS = {
    "t": "s",
    "q": "generalised coordinates (multibody: body poses [[R, r], [0, 1]], r in m)",
    "qd": "generalised velocities (per s; multibody: body velocities (ω rad/s, v m/s))",
    "u": "inputs (N for cables)",
    "points": "m (world)",
    "tip": "m (world)",
    "num_steps": "count",
    "result": "diffrax.RESULTS code",
}
#: units of the monitors the simulations of jaxse3 write (saved as ``"monitors/<name>"``; others: "unspecified")
MONITOR_UNITS = {
    "energy": "J (total mechanical energy)",
    "joint_violations": "m (position-constraint violation ‖g‖ per joint)",
    "closure_error": "rad and m (‖e(q)‖ of a closed chain's loop closures, seed 003 eq. (47c))",
    "closure_velocity_error": "rad/s and m/s (‖A(q) q̇‖ of a closed chain's loop closures, seed 003 eq. (47a))",
    "multipliers": "N·m and N (λ: the closures' wrench components, then prescribed joints' efforts; eq. (52a))",
}
#: prefix of the monitors' entries in a file
_MONITOR = "monitors/"


def _npz(path: str | os.PathLike) -> str:
    """``path`` with the ``.npz`` suffix that ``numpy.savez`` would add."""
    path = os.fspath(path)
    return path if path.endswith(".npz") else path + ".npz"


def write_npz(path: str | os.PathLike, arrays: dict[str, Any], metadata: dict[str, Any]) -> str:
    """Write ``arrays`` and the JSON of ``metadata`` (entry ``"metadata"``) to ``path`` (``.npz`` appended if
    missing) atomically: to a temporary file beside it, then renamed, so an interrupted write leaves any older file
    intact. Returns the path written."""
    path = _npz(path)
    info = json.dumps(metadata)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **{k: np.asarray(v) for k, v in arrays.items()}, metadata=np.asarray(info))
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would differ from a plain open()
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def read_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The ``metadata`` stored by :func:`write_npz` (an empty dict for files without it)."""
    with np.load(_npz(path)) as data:
        return json.loads(str(data["metadata"])) if "metadata" in data.files else {}


class Trajectory(eqx.Module):
    """A simulated motion sampled at times ``t``.

    Rods (:func:`jaxse3.sim.simulate`) have vector coordinates; multibody systems in absolute coordinates
    (:func:`jaxse3.sim.simulate_multibody`) have one Lie-group element per body, stored as its pose: ``q`` is
    ``(n, n_bodies, 4, 4)``, ``qd`` ``(n, n_bodies, 6)``, ``u`` ``(n, 0)``, ``points`` the bodies' centres of mass, and
    ``MultibodySystem.state_from_poses(q[i], qd[i])`` rebuilds the state pytree of sample ``i``.

    Attributes:
        t: (n,) sample times.
        q: (n, n_dof) generalised coordinates; multibody: (n, n_bodies, 4, 4) body poses ``[[R, r], [0, 1]]``.
        qd: (n, n_dof) generalised velocities; multibody: (n, n_bodies, 6) body velocities ``(ω, v)``, each in its
            body's convention (the left-trivialised velocity of its group: body twist in SE(3), ``(ω, ṙ)`` in
            SO(3)×R³).
        u: (n, n_inputs) inputs u(t).
        points: (n, n_points, 3) world positions of the centreline points (for shape plots); multibody: of the
            bodies' centres of mass.
        tip: (n, 3) world position of the tip (``points[:, -1]``).
        num_steps: number of accepted + rejected solver steps.
        result: the solver's result code (``diffrax.RESULTS``; 0 = successful); after a failure the samples the
            solver did not reach are NaN. :attr:`message` says it in words, :attr:`ok` tests it.
        monitors: named per-sample quantities, each ``(n, ...)`` (default none); multibody runs give ``"energy"``
            (n,) [J] and ``"joint_violations"`` (n, n_joints) [m]; :func:`~jaxse3.sim.constraint_drift` adds a closed
            chain's ``"closure_error"`` and ``"closure_velocity_error"`` (n,). Units in :data:`MONITOR_UNITS`.
    """

    t: jax.Array
    q: jax.Array
    qd: jax.Array
    u: jax.Array
    points: jax.Array
    tip: jax.Array
    num_steps: jax.Array
    result: jax.Array
    monitors: dict[str, jax.Array] = eqx.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True iff every simulation in it succeeded (outside jit)."""
        return bool(np.all(np.asarray(self.result) == 0))

    @property
    def message(self) -> str:
        """The solver's status in words (outside jit; for a batch, the first failure's)."""
        codes = np.asarray(self.result).ravel()
        bad = codes[codes != 0]
        return "successful" if bad.size == 0 else diffrax.RESULTS._index_to_message[int(bad[0])]

    def save(self, path: str | os.PathLike, metadata: dict[str, Any] | None = None) -> str:
        """Write every field to ``path`` (``.npz`` appended if missing; numpy arrays, loadable without jaxse3; each
        monitor as the entry ``"monitors/<name>"``) with the units and ``metadata`` (JSON-serialisable: the run's
        parameters). The file is written to a temporary file beside it and renamed, so an interrupted save leaves any
        older file intact. Returns the path written."""
        arrays = {k: np.asarray(v) for k, v in vars(self).items() if k != "monitors"}
        arrays.update({_MONITOR + str(k): np.asarray(v) for k, v in self.monitors.items()})
        units = {**UNITS, **{_MONITOR + str(k): MONITOR_UNITS.get(k, "unspecified") for k in self.monitors}}
        return write_npz(path, arrays, {"units": units, **(metadata or {})})

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Trajectory":
        """Read a file written by :meth:`save` (``.npz`` appended if missing). Files without a ``result`` field
        (older versions) load as successful runs, files without monitors with none."""
        with np.load(_npz(path)) as data:
            fields = dict(data.items())
        fields.setdefault("result", np.zeros(np.shape(fields.get("num_steps", 0)), np.int32))
        monitors = {k[len(_MONITOR) :]: v for k, v in fields.items() if k.startswith(_MONITOR)}
        names = [k for k in cls.__dataclass_fields__ if k != "monitors"]
        missing = set(names) - set(fields)
        if missing:
            raise ValueError(f"Trajectory.load: {path} lacks the fields {sorted(missing)}")
        return cls(**{k: np.asarray(fields[k]) for k in names}, monitors=monitors)

    @staticmethod
    def metadata(path: str | os.PathLike) -> dict[str, Any]:
        """The units and run parameters stored by :meth:`save` (an empty dict for files without them)."""
        return read_metadata(path)
