"""Ahead-of-time compilation (jaxse3._compile): announced first compiles, the exported-program cache across
processes (here: across fresh Compiled objects), and static values that have no stable name."""

import gc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxse3
from jaxse3 import _compile
from jaxse3._compile import STATS, Compiled, _stable


class Scale(eqx.Module):
    factor: jax.Array
    power: int = eqx.field(static=True)


def scaled(module: Scale, x, fn=jnp.sin):
    return fn(module.factor * x) ** module.power


@pytest.fixture
def keyed(monkeypatch):
    """Let this test module's names stand for their code (as jaxse3's own do, whose source is in the key)."""
    monkeypatch.setattr("jaxse3._compile._KEYED_PACKAGES", ("tests", *_compile._KEYED_PACKAGES))


def test_exported_programs_are_reused_and_announced(tmp_path, monkeypatch, capsys, keyed):
    monkeypatch.setenv("JAXSE3_CACHE", str(tmp_path))
    args = (Scale(jnp.asarray(2.0), 3), jnp.linspace(0.0, 1.0, 5))
    first = Compiled(scaled, "scaled", lambda m, x: f"power {m.power}", cacheable=True)
    np.testing.assert_allclose(first(*args), scaled(*args), rtol=1e-15)
    assert len(list((tmp_path / "exported").iterdir())) == 2  # program + structure
    assert "jaxse3: compiling scaled (power 3) ..." in capsys.readouterr().err
    loaded = STATS.loaded
    again = Compiled(scaled, "scaled", cacheable=True)  # a new process would start like this
    np.testing.assert_allclose(again(*args), scaled(*args), rtol=1e-15)
    assert STATS.loaded == loaded + 1 and "loaded from the persistent cache" in capsys.readouterr().err
    # another static value is another program; inside a trace the function is simply called
    assert len(list((tmp_path / "exported").iterdir())) == 2
    np.testing.assert_allclose(again(Scale(jnp.asarray(2.0), 2), args[1]), scaled(Scale(jnp.asarray(2.0), 2), args[1]))
    assert len(list((tmp_path / "exported").iterdir())) == 4
    np.testing.assert_allclose(jax.jit(again)(*args), scaled(*args), rtol=1e-15)


def test_values_without_a_stable_name_are_traced_as_usual(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXSE3_CACHE", str(tmp_path))
    local = Compiled(lambda x, fn: fn(x), "local", cacheable=True)
    np.testing.assert_allclose(local(jnp.ones(3), lambda x: 2 * x), 2.0)
    assert not (tmp_path / "exported").exists()
    # a lambda, an unknown object, a jitted function, a user's function or class (may change under the same name)
    for unstable in (lambda x: x, object(), jnp.sin, scaled, Scale(jnp.asarray(1.0), 1)):
        try:
            _stable(unstable)
        except Exception as e:
            assert type(e).__name__ == "_Unstable"
        else:
            raise AssertionError(f"{unstable!r} has no stable name")


def test_clear_caches_drops_the_compiled_programs_and_their_mappings():
    """jaxse3.clear_caches() drops JAX's programs and every Compiled's executables (jax.clear_caches() alone leaves
    those, with the memory mappings of their code); the next call compiles again and gives the same values."""
    maps = lambda: open("/proc/self/maps").read().count("\n")
    program = Compiled(lambda x: jnp.cumsum(jnp.sin(x) ** 2) @ jnp.cos(x), "program")
    x = jnp.linspace(0.0, 1.0, 257)
    value = program(x)
    compiled = STATS.compilations
    jax.clear_caches()
    program(x)
    assert STATS.compilations == compiled  # JAX's own clearing leaves the executable in place
    gc.collect()
    before = maps()
    jaxse3.clear_caches()
    gc.collect()
    assert maps() < before  # the executable's mappings are returned
    np.testing.assert_array_equal(program(x), value)
    assert STATS.compilations == compiled + 1  # compiled again


def test_the_fast_mode_passes_its_options_to_xla_once_per_program_and_gives_the_same_values(monkeypatch):
    """set_compile_mode("fast") compiles the next programs with FAST_OPTIONS (XLA:CPU at -O0); a program compiled
    in both modes is two executables with values equal to round-off; bad modes are named."""
    lowered = type(eqx.filter_jit(jnp.sin).lower(jnp.ones(2)))
    compile_, seen = lowered.compile, []

    def recorded(self, compiler_options=None):
        seen.append(compiler_options)
        return compile_(self, compiler_options)

    monkeypatch.setattr(lowered, "compile", recorded)
    program = Compiled(lambda x: jnp.cumsum(jnp.sin(x) ** 2) @ jnp.cos(x), "modes")
    x = jnp.linspace(0.0, 1.0, 33)
    assert jaxse3.compile_mode() == "optimized"
    optimized = program(x)
    assert jaxse3.set_compile_mode("fast") == "optimized"
    try:
        fast = program(x)
        program(x)
    finally:
        jaxse3.set_compile_mode("optimized")
    program(x)
    assert seen == [None, _compile.FAST_OPTIONS]
    np.testing.assert_allclose(fast, optimized, rtol=1e-13)
    with pytest.raises(ValueError, match="set_compile_mode: mode must be one of optimized, fast, got 'quick'"):
        jaxse3.set_compile_mode("quick")
    with pytest.raises(ValueError, match="JAXSE3_COMPILE must be one of optimized, fast"):
        _compile._mode_from("quick")
    assert _compile._mode_from("") == "optimized" and _compile._mode_from(" Fast ") == "fast"
