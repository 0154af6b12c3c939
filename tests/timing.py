"""pytest plugin, opt-in (``python -m pytest -p tests.timing``): where the suite's time goes, test by test.

For every test it records the wall time and, from JAX's compilation events, the time spent tracing Python to jaxprs,
lowering them to StableHLO and compiling them with XLA (each the union of its nested intervals, so a trace inside a
trace counts once), and the number of XLA compilations; the rest is execution, Python and subprocesses. At the end
it prints the files and the tests that took longest, with these parts. Under pytest-xdist each worker sends its
records to the controller, which prints the summary of the whole run. ``JAXSE3_TEST_TIMING=path.json`` also writes
the records there.
"""

from __future__ import annotations

import collections
import json
import os
import time

import jax.monitoring
import pytest

#: JAX's duration events (jax/_src/dispatch.py) and the columns they fill
EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}
PARTS = ("trace", "lower", "compile")
SHOWN = 20

_spans: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
_records: dict[str, dict[str, float]] = {}


def _listen(event: str, start: float, end: float, **_: object) -> None:
    part = EVENTS.get(event)
    if part is not None:
        _spans[part].append((start, end))


def _union(spans: list[tuple[float, float]]) -> float:
    total, begin, stop = 0.0, None, None
    for s, e in sorted(spans):
        if stop is None or s > stop:
            total += 0.0 if stop is None else stop - begin
            begin, stop = s, e
        else:
            stop = max(stop, e)
    return total + (0.0 if stop is None else stop - begin)


def pytest_configure(config: pytest.Config) -> None:
    jax.monitoring.register_event_time_span_listener(_listen)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    _spans.clear()
    start = time.perf_counter()
    yield
    record = {"wall": time.perf_counter() - start, "compiles": float(len(_spans["compile"]))}
    record.update({part: _union(_spans[part]) for part in PARTS})
    _records[item.nodeid] = record


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: hand the records to the controller
        workeroutput["jaxse3_timing"] = json.dumps(_records)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # the controller, as each pytest-xdist worker finishes
    _records.update(json.loads(getattr(node, "workeroutput", {}).get("jaxse3_timing", "{}")))


def _row(name: str, r: dict[str, float]) -> str:
    other = r["wall"] - sum(r[p] for p in PARTS)
    cells = " ".join(f"{r[k]:8.1f}" for k in ("wall", *PARTS)) + f" {other:8.1f} {int(r['compiles']):8d}"
    return f"{cells}  {name}"


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if getattr(config, "workeroutput", None) is not None or not _records:
        return
    path = os.environ.get("JAXSE3_TEST_TIMING")
    if path:
        with open(path, "w") as fh:
            json.dump(_records, fh, indent=1)
    files: dict[str, dict[str, float]] = collections.defaultdict(lambda: collections.defaultdict(float))
    total: dict[str, float] = collections.defaultdict(float)
    for nodeid, r in _records.items():
        for k, v in r.items():
            files[nodeid.split("::")[0]][k] += v
            total[k] += v
    head = " ".join(f"{k:>8s}" for k in ("wall s", *PARTS, "other", "compiles"))
    write = terminalreporter.write_line
    terminalreporter.section("where the time goes (tests.timing)")
    write(f"{head}  files ({len(files)}; the {SHOWN} longest)")
    for name, r in sorted(files.items(), key=lambda kv: -kv[1]["wall"])[:SHOWN]:
        write(_row(name, r))
    write(_row("all", total))
    write(f"{head}  tests ({len(_records)}; the {SHOWN} longest)")
    for name, r in sorted(_records.items(), key=lambda kv: -kv[1]["wall"])[:SHOWN]:
        write(_row(name, r))
