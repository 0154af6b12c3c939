"""The entry-by-entry form of the algebras: its arithmetic equals the arrays', its known zeros are skipped while
tracing, and the closed forms evaluated on it equal the block form's (the rules run on it: test_rules checks them
against autodiff of the plain reference and finite differences)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3.lie import _algebra, adpoly, rules
from jaxse3.lie._entries import Entries
from tests.lie.conftest import ANGLES, point, vectors


def test_arithmetic_equals_the_arrays():
    rng = np.random.default_rng(0)
    A, B = (jnp.asarray(rng.normal(size=(6, 6))) for _ in range(2))
    v = jnp.asarray(rng.normal(size=6))
    a, b = Entries.of(A), Entries.of(B)
    close = lambda x, y: np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-14, atol=1e-14)
    close((a @ b).dense(), A @ B)
    close((a @ v).dense(), A @ v)
    close((A @ b).dense(), A @ B)
    close((v @ a).dense(), v @ A)
    close(v @ Entries.of(v), v @ v)
    close(a.T.dense(), A.T)
    close((a + b).dense(), A + B)
    close((a - b).dense(), A - B)
    close((-a).dense(), -A)
    close((2.5 * a).dense(), 2.5 * A)
    close((a * 2.5).dense(), 2.5 * A)
    close(a + A, 2 * A)  # with an array: dense
    close(Entries.of(v)[3:].dense(), v[3:])
    assert a + 0.0 is a and a.shape == (6, 6) and Entries.of(v).shape == (6,)


@pytest.mark.parametrize("name", ["so3", "se3"])
def test_ad_and_adbar_equal_the_block_forms(name):
    alg, written_out = {"so3": _algebra.SO3, "se3": _algebra.SE3}[name], _algebra.ENTRIES[name]
    X = jnp.asarray(vectors(alg.dim, 1)[0])
    for f in ("ad", "adbar", "ad_form"):
        np.testing.assert_array_equal(getattr(written_out, f)(X).dense(), _algebra.dense(getattr(alg, f)(X)))
    # the vector form of the argument too (the recursions pass Entries vectors to ad)
    np.testing.assert_array_equal(written_out.ad(Entries.of(X)).dense(), alg.ad(X))


def test_known_zeros_are_skipped_while_tracing():
    """ad_X ad_U on se(3) keeps its zero upper-right block as Python zeros: no operation is traced for them."""
    E = _algebra.ENTRIES["se3"]
    X, U = (jnp.asarray(x) for x in vectors(6, 2))
    product = E.ad(X) @ E.ad(U)
    assert all(isinstance(product.e[i][j], float) and product.e[i][j] == 0.0 for i in range(3) for j in range(3, 6))
    assert all(isinstance(product.e[i][i], jax.Array) for i in range(6))  # the diagonal is not zero
    jaxpr = jax.make_jaxpr(lambda X: (E.ad(X) @ E.ad(X)).dense())(X)
    muls = sum(eqn.primitive.name == "mul" for eqn in jaxpr.eqns)
    assert muls == 48, muls  # 12 per product of two 3×3 skew blocks (zero diagonals), 4 such; dense 6×6: 216


@pytest.mark.parametrize("phi", [0.0, 1e-6, ANGLES[3], ANGLES[5], ANGLES[6], 3.0])
@pytest.mark.parametrize("name", ["so3", "se3"])
@pytest.mark.parametrize("family", ["dexp", "dexp_inv"])
def test_closed_forms_on_entries_equal_the_block_forms(family, name, phi):
    alg, written_out = {"so3": _algebra.SO3, "se3": _algebra.SE3}[name], _algebra.ENTRIES[name]
    X = jnp.asarray(point(alg.dim, phi))
    Q, Z, S = (jnp.asarray(x) for x in vectors(alg.dim, 3))

    @jax.jit
    def both(X, Q, Z, S):
        out = []
        for a, materialise in ((alg, False), (written_out, True)):
            p = rules.family_poly(alg, X, family, 2, materialise=materialise)
            out.append(
                [adpoly.jacobian(a, X, Z, p, transpose) for transpose in (False, True)]
                + [adpoly.jacobian_derivative(a, X, Z, S, p), adpoly.hessian(a, X, Q, Z, p)]
            )
        return out

    blocks, entries = both(X, Q, Z, S)
    for b, e in zip(blocks, entries):
        np.testing.assert_allclose(e, b, rtol=1e-13, atol=1e-13)
