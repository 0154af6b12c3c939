"""Running the documentation's code as a reader would (the README's first-hour block, the getting-started page)."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parents[1]


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a markdown text, in order."""
    return re.findall(r"```python\n(.*?)```", text, re.S)


def run_as_reader(code: str, folder: pathlib.Path, monkeypatch: pytest.MonkeyPatch, robot: str) -> dict:
    """Execute ``code`` in ``folder`` (its files land there) and return its names; skip when example-robot-data, which
    the code's ``robot`` comes from (the ``robots`` extra), is not installed."""
    from jaxse3 import rigid

    try:
        rigid.example_robot_path(robot)
    except ImportError:
        pytest.skip("example-robot-data is not installed (extra 'robots')")
    monkeypatch.chdir(folder)
    scope: dict = {}
    exec(code, scope)
    return scope
