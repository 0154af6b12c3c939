"""Parameter sweeps that lose nothing: a sweep file, results committed chunk by chunk, resumption, many processes.

A **sweep file** (TOML) names a model, the parameters to vary and how to sample them, what to record and the
solver's settings::

    model = "cdm"                 # a built-in model ("cdm", "cdm-contact") or a model file (jaxse3.linkage's format),
                                  #   its path relative to the sweep file
    kind = "statics"              # "statics" (equilibria: solve_statics) or "simulate" (motions: simulate)
    record = ["tip", "q"]         # statics: q, tip, residual_norm, stable, morse_index, least_stiffness, energy;
                                  #   simulate: t, tip, q, qd, points, u, energy (default tip); energy: the total
                                  #   mechanical energy at each recorded state; the solver's status (result,
                                  #   num_steps) is always recorded
    chunk = 16                    # members per chunk: the unit of work, of commit and of resumption (default 16)
    devices = 2                   # optional: the local devices each chunk is split over (default all)

    [sampling]
    method = "latin"              # "grid" (every combination of the values), "random" (uniform) or "latin" (a
    n = 64                        #   Latin hypercube: each parameter's range cut in n strata, one member in each);
    seed = 0                      #   n and seed for random and latin

    [parameters]                  # grid: a list of values, or { low, high, n, log }; random and latin: [low, high]
    "inputs[0]" = [0.0, 20.0]     #   or { low, high, log = true } (log-uniform)
    young = { low = 5e5, high = 2e6, log = true }

    [settings]                    # statics: rtol, atol, max_steps, load_steps; simulate: t_final (required),
    rtol = 1e-9                   #   solver, rtol, atol, dt, rho_inf, max_steps and samples (recorded times, 11)

**Parameters.** ``inputs[i]`` (constant input i: a cable tension or a joint effort; the others keep the model file's
``[simulation] inputs``, or zero), ``q0[i]`` (initial coordinate i; simulate only) and the model's own: a built-in
model's material (``young``, ``density``, ``poisson``, ``damping``: the rod's E, ρ, ν, υ); a model file's numbers, a
link's or its rod's by ``link.field`` (``forearm.young``, ``forearm.length``, ``shoulder.mass``, ``shoulder.com[0]``)
and ``gravity[i]``. Members are built from the model with their values; a parameter that changes the model's
structure (a Gauss-point count, a basis order) is refused, as is one the model does not have.

**Results** go to a folder: ``sweep.json`` (the sweep, normalised, and its precision, float32 or float64 by JAX's
``jax_enable_x64``; a resumed run checks both against the file and its own), ``parameters.npz`` (every member's
values), ``chunks/chunk-NNNNN.npz`` per chunk (written to a temporary file and renamed: a chunk is there whole or not
at all) and, at the end, ``results.npz`` with every member. An interrupted sweep
loses at most the chunks in flight; ``resume=True`` (``jaxse3 sweep FILE --resume``) runs only the missing ones.
Failed members (a solver failure, a non-finite state) keep their place and their reason (:attr:`SweepResult.reasons`),
never dropped. :func:`load_sweep` reads a folder, finished or not, into arrays aligned with the parameters.

**Many processes.** Under ``jax.distributed`` (``jaxse3 sweep FILE --coordinator HOST:PORT --num-processes N
--process-id K``, or ``--distributed`` where JAX finds the cluster itself, e.g. in a SLURM ``srun`` step) process k
runs chunks k, k + N, k + 2N, ... on its local devices and commits them to its output folder; after a barrier every
process's results are gathered (``jax.experimental.multihost_utils.process_allgather``) and process 0 writes
``results.npz``. The folders need not be shared; a resumed run must use the same number of processes.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import tomllib
from jaxtyping import Array

from jaxse3.linkage import read_toml
from jaxse3.rod.geometry import Material
from jaxse3.sim import scenarios
from jaxse3.sim.batch import simulate_batch, solve_statics_batch, stack
from jaxse3.sim.statics import StaticsResults
from jaxse3.sim.system import System
from jaxse3.sim.trajectory import write_npz

__all__ = ["Sweep", "SweepResult", "read_sweep", "run_sweep", "load_sweep", "BUILT_IN", "KINDS", "SAMPLING"]

#: the built-in models of a sweep file and their systems (a material replaces the CDM's)
BUILT_IN = {"cdm": scenarios.cdm_system, "cdm-contact": scenarios.cdm_contact_system}
#: a built-in model's material parameters: the names of a sweep file, in :class:`~jaxse3.rod.geometry.Material`'s
_MATERIAL = ("young", "density", "poisson", "damping")
#: what a sweep can record, by kind
KINDS = {
    "statics": ("q", "tip", "residual_norm", "stable", "morse_index", "least_stiffness", "energy"),
    "simulate": ("t", "tip", "q", "qd", "points", "u", "energy"),
}
#: the solver's status, recorded for every member
_STATUS = ("result", "num_steps")
#: the settings of each kind and their types
_SETTINGS = {
    "statics": {"rtol": float, "atol": float, "max_steps": int, "load_steps": int},
    "simulate": dict(
        t_final=float, solver=str, rtol=float, atol=float, dt=float, rho_inf=float, max_steps=int, samples=int
    ),
}
SAMPLING = ("grid", "random", "latin")
_TOP = {"model", "kind", "record", "chunk", "devices", "sampling", "parameters", "settings"}
_NAME = re.compile(r"^(?:(?P<link>[A-Za-z_][\w-]*)\.)?(?P<field>[A-Za-z_]\w*)(?:\[(?P<index>\d+)\])?$")
#: the fields of a soft link's own table (the others are its rod's)
_LINK_FIELDS = {"position", "rotation", "axis", "pitch"}


@dataclass(frozen=True)
class Sweep:
    """A sweep (module docstring), as :func:`read_sweep` reads it from a file.

    Attributes:
        name: the sweep's name (the file's stem). model: a built-in model or a model file's absolute path.
        kind: "statics" or "simulate". record: the recorded fields. chunk: members per chunk. devices: local devices
        per chunk, or None for all. names: the parameters, in the columns of ``values`` (n_members, n_parameters).
        settings: the solver's keyword arguments. spec: the file's content, normalised (compared on resumption).
    """

    name: str
    model: str
    kind: str
    record: tuple[str, ...]
    chunk: int
    devices: int | None
    names: tuple[str, ...]
    values: np.ndarray
    settings: dict[str, Any]
    spec: dict[str, Any]

    @property
    def n_members(self) -> int:
        return self.values.shape[0]

    @property
    def n_chunks(self) -> int:
        return -(-self.n_members // self.chunk)


def _fail(where: str, message: str) -> ValueError:
    return ValueError(f"{where}: {message}")


def _number(where: str, v: Any, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v) or (positive and v <= 0):
        raise _fail(where, f"expected a {'positive ' if positive else ''}finite number, got {v!r}")
    return float(v)


def _whole(where: str, v: Any, low: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise _fail(where, f"expected a whole number ≥ {low}, got {v!r}")
    return v


def _range(where: str, spec: Any, grid: bool) -> tuple[float, float, bool, int | None]:
    """(low, high, log, n) of a ``{low, high[, n][, log]}`` table or (random, latin) a ``[low, high]`` list."""
    if isinstance(spec, list):
        spec = dict(zip(("low", "high"), spec)) if len(spec) == 2 else {"low": None}
    keys = {"low", "high", "log"} | ({"n"} if grid else set())
    if not isinstance(spec, dict) or not {"low", "high"} <= set(spec) or set(spec) - keys:
        form = "a list of values or { low, high, n, log }" if grid else "[low, high] or { low, high, log }"
        raise _fail(where, f"expected {form}, got {spec!r}")
    low, high = _number(where, spec["low"]), _number(where, spec["high"])
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise _fail(where, f"'log' must be true or false, got {log!r}")
    if high < low or (log and low <= 0):
        raise _fail(where, f"need low ≤ high{' and low > 0 (log)' if log else ''}, got {low}, {high}")
    return low, high, log, _whole(f"{where}: n", spec.get("n")) if grid else None


def _sample(where: str, method: str, specs: dict[str, Any], n: int | None, seed: int) -> np.ndarray:
    """The members' parameter values (n_members, n_parameters) (module docstring)."""
    if method == "grid":
        axes = []
        for name, spec in specs.items():
            w = f"{where}: [parameters] {name}"
            if isinstance(spec, list) and spec and all(not isinstance(v, list | dict) for v in spec):
                axes.append([_number(w, v) for v in spec])
            else:
                low, high, log, k = _range(w, spec, grid=True)
                axes.append(np.geomspace(low, high, k) if log else np.linspace(low, high, k))
        return np.array(list(itertools.product(*axes)), dtype=float).reshape(-1, len(specs))
    rng = np.random.default_rng(seed)
    ranges = [_range(f"{where}: [parameters] {name}", spec, grid=False) for name, spec in specs.items()]
    if method == "random":
        unit = rng.random((n, len(specs)))
    else:  # latin: one member in each of the n strata of every parameter, the strata paired at random
        unit = (np.stack([rng.permutation(n) for _ in specs], axis=1) + rng.random((n, len(specs)))) / n
    columns = [
        low * (high / low) ** unit[:, j] if log else low + (high - low) * unit[:, j]
        for j, (low, high, log, _) in enumerate(ranges)
    ]
    return np.stack(columns, axis=1)


def read_sweep(path: str | os.PathLike) -> Sweep:
    """The :class:`Sweep` of a sweep file (module docstring); bad input raises ValueError naming the field."""
    path = os.fspath(path)
    where = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such sweep file") from None
    except tomllib.TOMLDecodeError as e:
        raise _fail(where, f"not valid TOML: {e}") from None
    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise _fail(where, f"unknown field(s) {unknown}; expected some of {sorted(_TOP)}")
    model = data.get("model")
    if not isinstance(model, str) or not (model in BUILT_IN or model.endswith(".toml")):
        raise _fail(where, f"'model' must be one of {list(BUILT_IN)} or a model file (.toml), got {model!r}")
    if model not in BUILT_IN:
        model = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), model))
        if not os.path.isfile(model):
            raise _fail(where, f"'model': no such model file {model}")
    kind = data.get("kind", "statics")
    if kind not in KINDS:
        raise _fail(where, f"'kind' must be one of {list(KINDS)}, got {kind!r}")
    record = data.get("record", ["tip"])
    if not isinstance(record, list) or not record or set(record) - set(KINDS[kind]):
        raise _fail(where, f"'record' must be a non-empty list of some of {list(KINDS[kind])} ({kind}), got {record!r}")
    chunk = _whole(f"{where}: 'chunk'", data.get("chunk", 16))
    devices = data.get("devices")
    devices = None if devices is None else _whole(f"{where}: 'devices'", devices)
    sampling = data.get("sampling", {})
    if not isinstance(sampling, dict) or set(sampling) - {"method", "n", "seed"}:
        raise _fail(where, f"[sampling] takes method, n and seed, got {sampling!r}")
    method = sampling.get("method", "grid")
    if method not in SAMPLING:
        raise _fail(where, f"[sampling] 'method' must be one of {list(SAMPLING)}, got {method!r}")
    if method == "grid" and set(sampling) - {"method"}:
        raise _fail(where, "[sampling] a grid takes no 'n' or 'seed' (its size is that of the values' combinations)")
    n = None if method == "grid" else _whole(f"{where}: [sampling] 'n'", sampling.get("n"))
    seed = _whole(f"{where}: [sampling] 'seed'", sampling.get("seed", 0), low=0)
    specs = data.get("parameters")
    if not isinstance(specs, dict) or not specs:
        raise _fail(where, "[parameters] must name at least one parameter")
    for name in specs:
        if not _NAME.match(name):
            raise _fail(where, f"[parameters] {name!r} is not a parameter name (e.g. young, inputs[0], arm.length)")
    values = _sample(where, method, specs, n, seed)
    settings = data.get("settings", {})
    types = _SETTINGS[kind]
    if not isinstance(settings, dict) or set(settings) - set(types):
        raise _fail(where, f"[settings] of kind {kind!r} takes some of {sorted(types)}, got {sorted(settings)}")
    for key, value in settings.items():
        w = f"{where}: [settings] {key!r}"
        if types[key] is str:
            if not isinstance(value, str):
                raise _fail(w, f"expected a string, got {value!r}")
        elif types[key] is int:
            _whole(w, value)
        elif key == "rho_inf":
            if not 0 <= _number(w, value) <= 1:
                raise _fail(w, f"must lie in [0, 1], got {value}")
        else:
            _number(w, value, positive=True)
    if kind == "simulate" and "t_final" not in settings:
        raise _fail(where, "[settings] of a simulation needs t_final (s)")
    spec = {"model": model, "kind": kind, "record": record, "chunk": chunk, "sampling": sampling, "parameters": specs}
    spec["settings"] = settings
    name = os.path.splitext(os.path.basename(path))[0]
    return Sweep(name, model, kind, tuple(record), chunk, devices, tuple(specs), values, dict(settings), spec)


class _Model:
    """A sweep's model: its base system, inputs and initial state, and the system of a member's parameter values."""

    def __init__(self, sweep: Sweep):
        self.sweep = sweep
        if sweep.model in BUILT_IN:
            self.data = None
            self.system = BUILT_IN[sweep.model]()
            self.inputs, self.defaults = np.zeros(self.system.n_inputs), {}
            self.q0 = np.zeros(self.system.n_dof)
        else:
            self.data, _ = read_toml(sweep.model)
            self.system, inputs, self.defaults, q0 = scenarios.from_toml(sweep.model)
            self.inputs, self.q0 = (inputs if callable(inputs) else np.asarray(inputs)), np.asarray(q0)
        self.columns: dict[str, list[tuple[int, Any]]] = {"inputs": [], "q0": [], "system": []}
        for j, name in enumerate(sweep.names):
            group, key = self._classify(name)
            self.columns[group].append((j, key))
        self._cache: dict[tuple[float, ...], System] = {}
        if "energy" in sweep.record and self.system.energy is None:
            raise _fail(f"{sweep.name}: record", f"the model {sweep.model!r} has no energy function to record")
        if self.columns["system"]:  # refuse early a parameter that changes the structure or that the model lacks
            for row in (sweep.values[0], sweep.values[-1]):
                self._check_structure(row)

    def _classify(self, name: str) -> tuple[str, Any]:
        where = f"{self.sweep.name}: [parameters] {name}"
        m = _NAME.match(name)
        link, key, index = m["link"], m["field"], m["index"]
        index = None if index is None else int(index)
        if link is None and key in ("inputs", "q0"):
            if index is None:
                raise _fail(where, f"name one {key} entry, e.g. {key}[0]")
            size = len(self.q0) if key == "q0" else self.system.n_inputs
            if key == "q0" and self.sweep.kind != "simulate":
                raise _fail(where, "q0 is a simulation's initial state; statics start from the reference state")
            if key == "inputs" and callable(self.inputs):
                raise _fail(where, "the model's inputs are prescribed joint motions, not constants")
            if index >= size:
                raise _fail(where, f"the model has {size} {'coordinates' if key == 'q0' else 'inputs'}")
            return key, index
        if self.data is None:
            if link is not None or index is not None or key not in _MATERIAL:
                raise _fail(where, f"a built-in model's parameters are inputs[i], q0[i] and {', '.join(_MATERIAL)}")
            return "system", (key,)
        if link is None:
            if key != "gravity" or index is None or index > 2:
                raise _fail(where, "a model file's own parameters are gravity[0..2] and link.field (e.g. arm.young)")
            return "system", (key, index)
        tables = {t.get("name"): t for t in self.data.get("link", []) if isinstance(t, dict)}
        if link not in tables:
            raise _fail(where, f"the model has no link {link!r} (links: {', '.join(map(str, tables))})")
        return "system", (link, key, index)

    def _set(self, data: dict, key: tuple, value: float) -> None:
        if key[0] == "gravity":
            data["gravity"] = list(data.get("gravity", [0.0, 0.0, -9.81]))
            data["gravity"][key[1]] = value
            return
        link, name, index = key
        table = next(t for t in data["link"] if t.get("name") == link)
        if table.get("joint") == "soft" and name not in _LINK_FIELDS:
            table = table.setdefault("rod", {})
        old = table.get(name)
        if index is None:
            whole = isinstance(old, int) and not isinstance(old, bool) and float(value).is_integer()
            table[name] = int(value) if whole else value  # a count (gauss, order) stays a whole number
            return
        if not isinstance(old, list) or index >= len(old):
            raise ValueError(f"link {link!r}: {name}[{index}] needs the model file to give {name} with that entry")
        table[name] = [*old[:index], value, *old[index + 1 :]]

    def member_system(self, row: np.ndarray) -> System:
        """The system of a member's parameter values (cached by them)."""
        columns = self.columns["system"]
        if not columns:
            return self.system
        values = tuple(float(row[j]) for j, _ in columns)
        if values in self._cache:
            return self._cache[values]
        named = ", ".join(f"{self.sweep.names[j]} = {v:g}" for (j, _), v in zip(columns, values))
        try:
            if self.data is None:
                material = self.system.params[0].material
                E, G = float(material.E), float(material.G)
                given = {key[0]: v for (_, key), v in zip(columns, values)}
                E = given.get("young", E)
                material = Material(
                    E=E,
                    rho=given.get("density", float(material.rho)),
                    nu=given.get("poisson", float(material.E) / (2 * G) - 1),
                    damping=given.get("damping", float(material.damping)),
                )
                system = BUILT_IN[self.sweep.model](material=material)
            else:
                data = copy.deepcopy(self.data)
                for (_, key), v in zip(columns, values):
                    self._set(data, key, v)
                system = scenarios.from_toml(data)[0]
        except ValueError as e:
            raise ValueError(f"{self.sweep.name}: the member with {named}: {e}") from None
        self._cache[values] = system
        return system

    def _check_structure(self, row: np.ndarray) -> None:
        system = self.member_system(row)
        shapes = lambda s: (jax.tree.structure(s), [np.shape(x) for x in jax.tree.leaves(s)])
        if shapes(system) != shapes(self.system):
            names = ", ".join(self.sweep.names[j] for j, _ in self.columns["system"])
            raise ValueError(
                f"{self.sweep.name}: the parameters {names} change the model's structure (array shapes or "
                "static fields), so its members cannot run as one batch; sweep them in separate files"
            )

    def run(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """The recorded fields and status of the members ``rows`` (k, n_parameters), each (k, ...)."""
        sweep, k = self.sweep, rows.shape[0]
        systemwise = bool(self.columns["system"])
        system = stack([self.member_system(row) for row in rows]) if systemwise else self.system
        common = {"devices": sweep.devices, "throw": False}
        if callable(self.inputs):
            inputs = self.inputs
        else:
            inputs = np.array(np.broadcast_to(self.inputs, (k, len(self.inputs))))
            for j, i in self.columns["inputs"]:
                inputs[:, i] = rows[:, j]
        if sweep.kind == "statics":
            out = solve_statics_batch(system, inputs, batch_system=systemwise, **common, **sweep.settings)
        else:
            settings = {**self.defaults, **sweep.settings}
            settings["n_save"] = settings.pop("samples", 11)
            q0 = np.array(np.broadcast_to(self.q0, (k, len(self.q0))))
            for j, i in self.columns["q0"]:
                q0[:, i] = rows[:, j]
            out = simulate_batch(
                system,
                inputs,
                batch_system=systemwise,
                batch_inputs=not callable(inputs),
                q0=q0,
                batch_q0=True,
                **common,
                **settings,
            )
        fields = {key: getattr(out, key) for key in (*sweep.record, *_STATUS) if key != "energy"}
        if "energy" in sweep.record:
            fields["energy"] = _total_energy(system, out.q, None if sweep.kind == "statics" else out.qd, systemwise)
        fields["result"] = getattr(fields["result"], "_value", fields["result"])  # statics: an enumeration item
        return {key: np.asarray(value) for key, value in fields.items()}


def _total_energy(system: System, q: Array, qd: Array | None, batched: bool) -> Array:
    """The members' total mechanical energy (``system.energy``) at their recorded states: q (k, n) at rest for
    statics, (k, n_save, n) with q̇ for simulations."""
    qd = jnp.zeros_like(q) if qd is None else qd
    at = lambda params, q, qd: system.energy(params, q, qd).total
    for _ in range(q.ndim - 2):  # the samples of a simulation
        at = jax.vmap(at, in_axes=(None, 0, 0))
    return jax.jit(jax.vmap(at, in_axes=(0 if batched else None, 0, 0)))(system.params, q, qd)


@dataclass(frozen=True)
class SweepResult:
    """A sweep's results (:func:`run_sweep`, :func:`load_sweep`), every array aligned with the members.

    Attributes:
        names: the parameters. values: (n_members, n_parameters) their values. kind: "statics" or "simulate".
        fields: the recorded fields and the status (``result``: the solver's result code, 0 = successful;
            ``num_steps``), each (n_members, ...); members not run yet hold NaN (result −1).
        done: (n_members,) True for the members run.

    ``result["tip"]`` is a field, ``result["young"]`` a parameter's values.
    """

    names: tuple[str, ...]
    values: np.ndarray
    kind: str
    fields: dict[str, np.ndarray] = field(default_factory=dict)
    done: np.ndarray | None = None

    def __getitem__(self, key: str) -> np.ndarray:
        if key in self.names:
            return self.values[:, self.names.index(key)]
        if key in self.fields:
            return self.fields[key]
        raise KeyError(f"{key!r}: not a parameter ({', '.join(self.names)}) or a field ({', '.join(self.fields)})")

    @property
    def complete(self) -> bool:
        """True iff every member has run."""
        return bool(np.all(self.done))

    @property
    def ok(self) -> np.ndarray:
        """(n_members,) True for the members that ran, succeeded and whose recorded values are finite."""
        finite = [np.isfinite(v).reshape(len(v), -1).all(axis=1) for k, v in self.fields.items() if k not in _STATUS]
        return self.done & (self.fields["result"] == 0) & np.all(finite, axis=0)

    @property
    def reasons(self) -> list[str]:
        """Per member: "" when :attr:`ok`, else why not ("not run", the solver's message, "non-finite state")."""
        messages = (StaticsResults if self.kind == "statics" else diffrax.RESULTS)._index_to_message
        ok = self.ok
        out = []
        for i, code in enumerate(self.fields["result"]):
            if ok[i]:
                out.append("")
            elif not self.done[i]:
                out.append("not run")
            elif code != 0:
                out.append(messages[int(code)])
            else:
                out.append("non-finite state")
        return out


def _folder(out: str | os.PathLike) -> dict[str, str]:
    out = os.fspath(out)
    return {
        "spec": os.path.join(out, "sweep.json"),
        "parameters": os.path.join(out, "parameters.npz"),
        "results": os.path.join(out, "results.npz"),
        "chunks": os.path.join(out, "chunks"),
    }


def _chunk_path(out: str | os.PathLike, i: int) -> str:
    return os.path.join(_folder(out)["chunks"], f"chunk-{i:05d}.npz")


def _start(sweep: Sweep, out: str | os.PathLike, resume: bool) -> None:
    """Create the folder and write the sweep's description and precision, or check them against the ones there
    (``resume``). With several processes, every one checks before any writes (they may share the folder)."""
    paths = _folder(out)
    spec = json.dumps(sweep.spec, sort_keys=True)
    dtype = jnp.result_type(float).name
    if os.path.exists(paths["spec"]):
        if not resume:
            raise ValueError(
                f"{os.fspath(out)} holds a sweep already: pass resume=True (jaxse3 sweep --resume) to continue it, "
                "or choose another output folder"
            )
        with open(paths["spec"]) as fh:
            there = json.load(fh)
        if json.dumps(there["spec"], sort_keys=True) != spec:
            raise ValueError(
                f"{os.fspath(out)}: the sweep there differs from this one (its file changed since it started); "
                "choose another output folder to run this one"
            )
        started = there.get("dtype", "float64")  # sweeps written before the precision was recorded: float64
        if started != dtype:
            raise ValueError(
                f"{os.fspath(out)}: the sweep there ran in {started}, this process computes in {dtype}: resume it in "
                f"{started} (jaxse3 sweep --dtype; JAX's jax_enable_x64) or choose another output folder"
            )
    _barrier(f"jaxse3 sweep {sweep.name}: folder checked")
    os.makedirs(paths["chunks"], exist_ok=True)
    info = {"spec": sweep.spec, "name": sweep.name, "names": list(sweep.names), "n_chunks": sweep.n_chunks}
    info["dtype"] = dtype
    write_npz(paths["parameters"], {"values": sweep.values}, {"names": list(sweep.names)})
    fd, tmp = tempfile.mkstemp(dir=out, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(info, fh, indent=1)
    os.replace(tmp, paths["spec"])


def _barrier(name: str) -> None:
    """Wait for every process (``jax.distributed``); nothing with one."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def run_sweep(
    sweep: Sweep | str | os.PathLike, out: str | os.PathLike, *, resume: bool = False, progress: bool = True
) -> SweepResult:
    """Run a sweep (a :class:`Sweep` or a sweep file's path) into the folder ``out`` (module docstring): chunk after
    chunk, each committed when done; ``resume=True`` continues a folder's interrupted run. Under ``jax.distributed``
    this process runs its share of the chunks and the results are gathered (module docstring). Returns every
    member's results (:class:`SweepResult`)."""
    sweep = read_sweep(sweep) if not isinstance(sweep, Sweep) else sweep
    _start(sweep, out, resume)
    rank, size = jax.process_index(), jax.process_count()
    if size > sweep.n_chunks:
        raise ValueError(f"{sweep.name}: {size} processes for {sweep.n_chunks} chunks; use fewer processes or chunks")
    mine = [i for i in range(sweep.n_chunks) if i % size == rank]
    todo = [i for i in mine if not os.path.exists(_chunk_path(out, i))]
    members = lambda i: range(i * sweep.chunk, min((i + 1) * sweep.chunk, sweep.n_members))
    if todo:
        model = _Model(sweep)
        from tqdm.auto import tqdm

        total = sum(len(members(i)) for i in mine)
        done = total - sum(len(members(i)) for i in todo)
        with tqdm(total=total, initial=done, unit="member", desc=sweep.name, disable=not progress) as bar:
            for i in todo:
                index = np.asarray(members(i))
                padded = np.concatenate([index, np.repeat(index[-1:], sweep.chunk - len(index))])  # one compilation
                fields = {k: v[: len(index)] for k, v in model.run(sweep.values[padded]).items()}
                write_npz(_chunk_path(out, i), {"members": index, **fields}, {"chunk": i})
                bar.update(len(index))
    result = _gather(sweep, out, mine) if size > 1 else load_sweep(out)
    if rank == 0:
        write_npz(_folder(out)["results"], {"done": result.done, **result.fields}, {"names": list(sweep.names)})
    return result


def _gather(sweep: Sweep, out: str | os.PathLike, mine: list[int]) -> SweepResult:
    """Every process's chunks (``mine`` here), gathered to every process."""
    from jax.experimental import multihost_utils

    _barrier(f"jaxse3 sweep {sweep.name}: chunks done")
    own = _read_chunks([_chunk_path(out, i) for i in mine])
    width = -(-sweep.n_chunks // jax.process_count()) * sweep.chunk  # the most members a process holds
    pad = lambda x, fill: np.concatenate([x, np.full((width - len(x), *x.shape[1:]), fill, x.dtype)])
    local = {k: pad(v, -1 if k == "members" else 0) for k, v in own.items()}
    every = multihost_utils.process_allgather(local)
    gathered = {k: v.reshape(-1, *v.shape[2:]) for k, v in every.items()}
    return _assemble(sweep.names, sweep.values, sweep.kind, gathered)


def _read_chunks(paths: list[str]) -> dict[str, np.ndarray]:
    parts = []
    for path in paths:
        with np.load(path) as data:
            parts.append({k: data[k] for k in data.files if k != "metadata"})
    if not parts:
        return {}
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _assemble(names, values, kind, chunks: dict[str, np.ndarray]) -> SweepResult:
    """Scatter the chunks' members into arrays over every member (NaN, result −1 where none ran)."""
    n = values.shape[0]
    done = np.zeros(n, bool)
    fields: dict[str, np.ndarray] = {}
    if chunks:
        index = chunks.pop("members")
        keep = index >= 0
        index = index[keep]
        done[index] = True
        for k, v in chunks.items():
            fill = -1 if k == "result" else (0 if v.dtype.kind in "iub" else np.nan)
            full = np.full((n, *v.shape[1:]), fill, v.dtype)
            full[index] = v[keep]
            fields[k] = full
    else:
        fields["result"] = np.full(n, -1, np.int32)
    return SweepResult(tuple(names), values, kind, fields, done)


def load_sweep(out: str | os.PathLike) -> SweepResult:
    """The results in a sweep's folder (:func:`run_sweep`), finished or not: arrays aligned with the parameters,
    members not run marked (:attr:`SweepResult.done`)."""
    paths = _folder(out)
    if not os.path.exists(paths["spec"]):
        raise ValueError(f"{os.fspath(out)}: not a sweep's folder (no sweep.json)")
    with open(paths["spec"]) as fh:
        info = json.load(fh)
    with np.load(paths["parameters"]) as data:
        values = data["values"]
    names, kind = tuple(info["names"]), info["spec"]["kind"]
    if os.path.exists(paths["results"]):
        with np.load(paths["results"]) as data:
            fields = {k: data[k] for k in data.files if k not in ("metadata", "done")}
            return SweepResult(names, values, kind, fields, data["done"])
    files = sorted(
        os.path.join(paths["chunks"], f) for f in os.listdir(paths["chunks"]) if re.match(r"chunk-\d+\.npz$", f)
    )
    return _assemble(names, values, kind, _read_chunks(files))
