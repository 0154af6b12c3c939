"""Process-wide settings applied by ``import jaxse3``: batched linear algebra on CPU that cannot deadlock, small matrix
products as fused arithmetic, the persistent compilation cache, and freed memory kept for the next buffer."""

import os
import platform
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import jaxse3  # noqa: F401 - installs the batched lowerings
from jaxse3._batched_linalg import SMALL
from jaxse3._small_products import SMALL as SMALL_PRODUCT

# Independent batched triangular solves: jaxlib's LAPACK kernel splits each batch over the intra-op pool and blocks;
# kernels side by side can hold every pool thread and hang forever (jaxlib 0.10.2, 2 cores: B = 64, 24×24, 48
# right-hand sides; at B = 256 even with XLA's concurrency-optimised scheduler turned off).
REPRODUCER = textwrap.dedent("""
    import jaxse3, jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)

    @jax.jit
    def solves(A, b):
        return [jax.scipy.linalg.solve_triangular(A[i], b[i], lower=True) for i in range(4)]

    key = jax.random.PRNGKey(0)
    A = jnp.tril(jax.random.normal(key, (4, 256, 24, 24))) + 10 * jnp.eye(24)
    b = jax.random.normal(key, (4, 256, 24, 48))
    for _ in range(50):
        jax.block_until_ready(solves(A, b))
    print("finished")
""")


def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env={**os.environ, **env}
    )


def test_batched_solves_do_not_deadlock():
    """Fails by timing out (subprocess.TimeoutExpired) when the batched lowering is not installed."""
    r = _run(REPRODUCER)
    assert r.returncode == 0 and "finished" in r.stdout, r.stderr


def _lapack_batched(f, *args) -> list[bool]:
    """For each LAPACK call in the compiled program: does it work on the batch of 5 at once?"""
    lines = jax.jit(f).lower(*args).compile().as_text().splitlines()
    return [("[5," in line) for line in lines if 'custom_call_target="lapack_' in line]


@pytest.mark.parametrize("n", [7, SMALL + 2])
def test_batched_factorisations_avoid_lapack_and_agree_with_it(n):
    """Batched LU, Cholesky and triangular solves never call LAPACK's batched kernels: LU one member at a time, and
    Cholesky and triangular solves one member at a time above ``SMALL`` and as unrolled recurrences (no LAPACK at
    all) up to it; batched results (and their derivatives) equal the single-matrix results member by member."""
    rng = np.random.default_rng(0)
    A = jnp.asarray(rng.normal(size=(5, n, n)) + n * np.eye(n))
    S = jnp.einsum("bij,bkj->bik", A, A)
    b = jnp.asarray(rng.normal(size=(5, n, 3)))
    fns = {
        "solve": lambda A, b: jnp.linalg.solve(A, b),
        "cho_solve": lambda S, b: jsl.cho_solve(jsl.cho_factor(S), b),
        "tri": lambda A, b: jsl.solve_triangular(jnp.tril(A), b, lower=True),
    }
    for name, f in fns.items():
        M = S if name == "cho_solve" else A
        calls = _lapack_batched(f, M, b)
        if n <= SMALL and name != "solve":
            assert not calls, name
        else:
            assert calls and not any(calls), name
        batched = jax.jit(f)(M, b)
        grads = jax.jit(jax.vmap(jax.grad(lambda M, b: jnp.sum(f(M, b) ** 2))))(M, b)
        for k in range(5):
            np.testing.assert_allclose(batched[k], f(M[k], b[k]), rtol=1e-12, atol=1e-13)
            np.testing.assert_allclose(grads[k], jax.grad(lambda M: jnp.sum(f(M, b[k]) ** 2))(M[k]), rtol=1e-10)
    # Cholesky of a matrix that is not positive definite: NaN, as LAPACK's path gives — also when only its last pivot
    # fails (the leading rows would factor)
    bad = jnp.stack([S[0], -S[1], S[2].at[-1, -1].set(-1.0)])
    L = jax.jit(jnp.linalg.cholesky)(bad)
    assert np.all(np.isfinite(L[0]))
    for k in (1, 2):
        assert np.all(np.isnan(L[k][np.tril_indices(n)])), k  # the whole lower triangle


@pytest.mark.parametrize("n", [1, 4, SMALL])
def test_unrolled_triangular_solves_read_one_triangle_in_every_form(n):
    """Every (lower, transpose, unit diagonal) form of a batched small triangular solve against LAPACK on each
    member, with garbage in the triangle that must not be read."""
    rng = np.random.default_rng(1)
    A = jnp.asarray(rng.normal(size=(5, n, n)) + 3 * np.eye(n))
    b = jnp.asarray(rng.normal(size=(5, n, 2)))
    for lower in (True, False):
        for transpose_a in (False, True):
            for unit_diagonal in (False, True):
                f = lambda A, b: jax.lax.linalg.triangular_solve(
                    A, b, left_side=True, lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal
                )
                batched = jax.jit(f)(A, b)
                for k in range(5):
                    np.testing.assert_allclose(batched[k], f(A[k], b[k]), rtol=1e-11, atol=1e-12)


def _dot_kernels(f, *args) -> int:
    return jax.jit(f).lower(*args).compile().as_text().count(" dot(")


def test_small_products_are_fused_arithmetic_equal_to_the_kernel():
    """Every form of a small ``dot_general`` (matrix–matrix, –vector, vector–vector, outer, batched, contracted over
    two dimensions, transposed operands) compiles to no dot kernel and equals NumPy's product (a product with a
    dimension above SMALL, or of integers, keeps its kernel); derivatives and vmap pass through."""
    rng = np.random.default_rng(2)
    n = SMALL_PRODUCT
    cases = [  # operand shapes, dimension numbers, the same product for np.einsum
        ((6, 6), (6, 3), (((1,), (0,)), ((), ())), "ij,jk->ik"),
        ((3,), (3, 3), (((0,), (0,)), ((), ())), "i,ij->j"),
        ((6,), (6,), (((0,), (0,)), ((), ())), "i,i->"),
        ((3, 4), (5,), (((), ()), ((), ())), "ij,k->ijk"),
        ((4, 4), (4, 4), (((0,), (1,)), ((), ())), "ji,kj->ik"),
        ((2, 6, 6), (2, 6, 1), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
        ((3, 5, 2), (5, 3, 7), (((0, 1), (1, 0)), ((), ())), "jki,kjl->il"),
        ((2, 3, n), (2, n, 3, 5), (((2,), (1,)), ((0,), (0,))), "bik,bkjl->bijl"),
    ]
    for sa, sb, dn, spec in cases:
        a, b = jnp.asarray(rng.normal(size=sa)), jnp.asarray(rng.normal(size=sb))
        f = lambda a, b, dn=dn: jax.lax.dot_general(a, b, dn)
        assert _dot_kernels(f, a, b) == 0, spec
        np.testing.assert_allclose(jax.jit(f)(a, b), np.einsum(spec, a, b), rtol=1e-13, atol=1e-14, err_msg=spec)
    big = jnp.asarray(rng.normal(size=(n + 1, 6)))
    assert _dot_kernels(lambda a, b: a @ b, big, big.T) == 1
    assert _dot_kernels(lambda a, b: a @ b, jnp.ones((3, 3), int), jnp.ones((3, 3), int)) == 1
    A, X = jnp.asarray(rng.normal(size=(4, 4))), jnp.asarray(rng.normal(size=(5, 4, 3)))
    loss = lambda A, X: jnp.sum(jnp.sin(A @ X))
    got = jax.jit(jax.vmap(jax.grad(loss), (None, 0)))(A, X)
    assert _dot_kernels(jax.vmap(jax.grad(loss), (None, 0)), A, X) == 0
    np.testing.assert_allclose(got, [np.cos(np.asarray(A @ x)) @ np.asarray(x).T for x in X], rtol=1e-12)


def test_settings_can_be_turned_off(tmp_path):
    show = (
        "import jaxse3, jax, jax.numpy as jnp, re; print(jax.config.jax_compilation_cache_dir); "
        "t = jax.jit(jnp.linalg.solve).lower(jnp.ones((3, 4, 4)), jnp.ones((3, 4, 1))).compile().as_text(); "
        "print(any('[3,4,4]' in l for l in t.splitlines() if 'lapack_' in l)); "
        "print(' dot(' in jax.jit(jnp.matmul).lower(jnp.ones((3, 3)), jnp.ones((3, 3))).compile().as_text()); "
        "from jaxse3._compile import _environment; print(_environment()); "
        "print(jax.config.jax_default_matmul_precision)"
    )
    on = _run(show, JAXSE3_CACHE=str(tmp_path)).stdout.split("\n")
    assert on[:3] == [str(tmp_path), "False", "False"]
    off = _run(
        show,
        JAXSE3_CACHE="0",
        JAXSE3_BATCHED_LINALG="0",
        JAXSE3_SMALL_PRODUCTS="0",
        JAX_DEFAULT_MATMUL_PRECISION="default",
    ).stdout.split("\n")
    assert off[:3] == ["None", "True", "True"]
    # float32 products in full precision (TF32 on a GPU otherwise), unless the user chose
    assert (on[4], off[4]) == ("highest", "default")
    # the lowerings and the precision shape the programs jaxse3 exports to its cache: a cached program made with them
    # is not loaded without them
    assert on[3].endswith("batched linalg+small products;precision=highest") and on[3] != off[3]


#: a 64 MiB buffer from the C heap, written, freed, taken and written again: the minor page faults of the second
_REFAULTS = textwrap.dedent("""
    import ctypes, resource, jaxse3
    libc, size = ctypes.CDLL(None), 64 << 20
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
    libc.free.argtypes = (ctypes.c_void_p,)
    buffer = libc.malloc(size); ctypes.memset(buffer, 1, size); libc.free(buffer)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    buffer = libc.malloc(size); ctypes.memset(buffer, 1, size)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
""")


@pytest.mark.skipif(sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc options")
def test_freed_memory_stays_with_the_process_for_the_next_buffer():
    """With jaxse3's malloc options a freed 64 MiB buffer is taken again without faulting its pages in; without them
    (``JAXSE3_MALLOC=0``, or a malloc setting of the user's own, which jaxse3 leaves alone) glibc maps fresh pages:
    16384 faults of 4 KiB pages (fewer with transparent huge pages, still many more than with the options)."""
    kept = int(_run(_REFAULTS).stdout)
    for env in ({"JAXSE3_MALLOC": "0"}, {"MALLOC_TOP_PAD_": "131072"}):
        fresh = int(_run(_REFAULTS, **env).stdout)
        assert fresh > 0 and 4 * kept < fresh, (env, kept, fresh)


@pytest.mark.parametrize("value", ["", "1"])
def test_default_cache_folder(value, tmp_path):
    r = _run(
        "import jaxse3, jax; print(jax.config.jax_compilation_cache_dir)",
        JAXSE3_CACHE=value,
        XDG_CACHE_HOME=str(tmp_path),
    )
    assert r.stdout.strip() == ("None" if value == "" else str(tmp_path / "jaxse3"))


def test_xla_cpu_flag_is_set_unless_the_user_chose():
    """``import jaxse3`` adds its XLA:CPU options to XLA_FLAGS before JAX's backend starts (they reach the process's
    programs), keeps the user's own value of each, and leaves XLA_FLAGS alone with ``JAXSE3_XLA_DEFAULTS=1``."""
    code = textwrap.dedent("""
        import os, jaxse3
        from jax._src import xla_bridge
        print(repr(os.environ.get("XLA_FLAGS")), xla_bridge.backends_are_initialized())
    """)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    run = lambda **extra: subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**env, **extra}
    ).stdout.strip()
    from jaxse3._runtime import xla_cpu_flags

    flags = xla_cpu_flags()
    if not flags:
        assert run() == "None False"
        return
    ours = " ".join(flags)
    assert run() == f"'{ours}' False"  # set, and in time
    for flag in flags:  # the user's own value of an option is kept, the others are added after it
        mine = flag.split("=")[0] + "=mine"
        assert run(XLA_FLAGS=mine) == repr(" ".join([mine, *(f for f in flags if f != flag)])) + " False"
    assert run(XLA_FLAGS="--xla_force_host_platform_device_count=2") == (
        f"'--xla_force_host_platform_device_count=2 {ours}' False"
    )
    assert run(JAXSE3_XLA_DEFAULTS="1") == "None False"


@pytest.mark.parametrize(
    "jaxlib, expected",
    [
        ((0, 4, 38), 0),
        ((0, 5, 0), 0),
        ((0, 5, 3), 2),
        ((0, 8, 0), 2),
        ((0, 8, 1), 3),
        ((0, 10, 2), 3),
        ((0, 11, 2), 0),
        ((), 0),
    ],
)
def test_xla_cpu_flags_only_for_jaxlibs_that_know_them(monkeypatch, jaxlib, expected):
    """XLA aborts the process on an option it does not know: jaxlib 0.4.38, 0.5.0 and 0.11.2 do on the
    fusion-emitter option, 0.8.0 on the YNNPACK one, so each goes only to the versions seen to take it (an unreadable
    version gets none)."""
    from jaxse3 import _runtime

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.delenv("JAXSE3_XLA_DEFAULTS", raising=False)
    _runtime._set_xla_flags(jaxlib)
    flags = [flag for flag, *_ in _runtime.XLA_CPU_FLAGS][:expected]
    assert os.environ.get("XLA_FLAGS") == (" ".join(flags) if flags else None)


def test_jaxlib_versions_are_read_from_their_leading_numbers():
    from jaxse3._runtime import _jaxlib_version

    assert _jaxlib_version("0.10.2") == (0, 10, 2)
    assert _jaxlib_version("0.5.3.dev20250101+cuda12") == (0, 5, 3)
    assert _jaxlib_version("0.11") == (0, 11)
