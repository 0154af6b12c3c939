"""The documentation site (``mkdocs.yml``, built in CI by ``mkdocs build --strict``): every notebook and every public
module is in it, and the getting-started page runs as written."""

from __future__ import annotations

import pkgutil
import re

import pytest

import jaxse3
from tests.docs_code import ROOT, python_blocks, run_as_reader


def _site() -> str:
    return (ROOT / "mkdocs.yml").read_text()


def test_every_notebook_is_a_page():
    nav = _site()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"notebooks/{notebook.name}" in nav, f"{notebook.name} is missing from the site's navigation"


def test_every_public_module_has_an_api_page():
    pages = {p.name: p.read_text() for p in (ROOT / "docs" / "api").glob("*.md")}
    documented = set(re.findall(r"^::: (jaxse3\.\w+)", "\n".join(pages.values()), re.M))
    public = {f"jaxse3.{m.name}" for m in pkgutil.iter_modules(jaxse3.__path__) if not m.name.startswith("_")}
    assert public <= documented, public - documented
    nav = _site()
    assert all(f"api/{name}" in nav for name in pages), "an API page is missing from the navigation"


@pytest.mark.slow
def test_the_getting_started_page_runs_as_written(tmp_path, monkeypatch):
    """Its python blocks, in order, as one script (it needs the example-robot-data robots: ``.[robots]``)."""
    blocks = python_blocks((ROOT / "docs" / "getting-started.md").read_text())
    assert len(blocks) >= 5
    scope = run_as_reader("\n".join(blocks), tmp_path, monkeypatch, "ur5")
    assert scope["eq"].converged and scope["traj"].ok
    assert scope["wrench"].shape == (2, 6) and scope["dtau_dq"].shape == (6, 6)
    assert abs(float(scope["gradient"][0])) > 0
    for name in ("cdm_run.npz", "cdm_run.png", "cdm_run.gif"):
        assert (tmp_path / name).stat().st_size > 1000
