"""The analytical derivatives of the closed chain's Baumgarte dynamics (seed 003 eqs. (50), (51), re-derived): the
``custom_jvp`` rules of :func:`jaxse3.linkage.constrained_forward_dynamics` (on q̈ and λ) and
:func:`jaxse3.linkage.constrained_residual`, and :func:`jaxse3.linkage.constrained_forward_dynamics_jacobians`.

Oracles independent of the formulas under test: ``jax.jacfwd`` of the plain functions (autodiff through the forward
passes and both Cholesky factorisations, no rule) and central differences of the values, with respect to q, q̇, q̈
(the residual's), u, T_B and model parameters p (a rigid link's inertia, the rod's stiffness, a closure's placement),
on

* the planar four-bar of :mod:`tests.linkage.four_bar` (rigid links alone: ID's derivatives from
  :mod:`jaxse3.rigid`), on the closed-form assembly q(θ) with q̇ = q'(θ)θ̇ (e = 0, Aq̇ = 0) and off it;
* the spatial hybrid chain of :mod:`tests.linkage.test_closure` (a rod between rigid links; a spherical closure to the
  world and a revolute one between two links; ID's derivatives from the linkage's recursions), with every frame B
  moved onto its frame A and q̇ in the null space of A (consistent), and at a random state (e ≠ 0, Aq̇ ≠ 0).

All arguments are one flat vector x = (q, q̇, q̈, u, T_B, p); each model compiles three programs, shared by its tests:
``jax.jacfwd`` in x of the public functions (their rules), with the Jacobians of
:func:`~jaxse3.linkage.constrained_forward_dynamics_jacobians` for the four-bar; ``jax.jacfwd`` of the plain
functions; and the values at a batch of perturbed x.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxse3 import linkage as lk, rigid
from jaxse3.lie.tangents import RULE_CALLS
from jaxse3.linkage._closure import _fd_plain, _residual_plain
from tests.linkage.four_bar import FOUR_BAR, PLANAR, four_bar_pose
from tests.linkage.test_closure import ALL_KINDS, CHAIN, DYNAMIC, MASS, _coinciding, _random_state

N_PARAMS = 3
#: central differences' relative steps in (q, q̇, q̈, u, T_B, p): q̈, λ and r are at most quadratic in q̇, q̈ and u (no
#: truncation error: long steps, less rounding), the others balance the two errors
STEPS = np.array([1e-6, 1e-3, 1e-3, 1e-3, 1e-4, 1e-5])


class _Model:
    """A linkage and closures as functions of x = (q, q̇, q̈, u, T_B, p) (module docstring), with the programs; the
    closures are the programs' first argument."""

    def __init__(self, linkage, link, rod=None, jacobians=True):
        self.linkage, self.link, self.rod, self.with_jacobians = linkage, link, rod, jacobians
        nv = linkage.nv
        self.sizes = (linkage.nq, nv, nv, linkage.n_inputs, 1, N_PARAMS)
        self.ends = np.cumsum(self.sizes)
        public = lambda c, x: self.outputs(lk.constrained_forward_dynamics, lk.constrained_residual, c, x)
        plain = lambda c, x: self.outputs(self._checked(_fd_plain), self._checked(_residual_plain), c, x)
        self.rules = jax.jit(lambda c, x: (jax.jacfwd(public, argnums=1)(c, x), self._extras(c, x)))
        self.plain = jax.jit(jax.jacfwd(plain, argnums=1))
        self.values = jax.jit(jax.vmap(public, in_axes=(None, 0)))

    @staticmethod
    def _checked(fn):
        return lambda linkage, closures, *a: fn(linkage, lk.check_closures(linkage, closures), *a)

    def split(self, x):
        q, qd, qdd, u, T, p = jnp.split(x, self.ends[:-1])
        return q, qd, qdd, u, T[0], p

    def model(self, closures, p):
        """p: relative changes of a rigid link's inertia and of the rod's stiffness, and a shift (m) of the first
        closure's frame A along its point's x axis."""
        linkage, link, rod = self.linkage, self.link, self.rod
        linkage = eqx.tree_at(lambda m: m.links[link].body, linkage, linkage.links[link].body * (1.0 + p[0]))
        if rod is not None:
            stiffness = linkage.links[rod].body.stiffness
            linkage = eqx.tree_at(lambda m: m.links[rod].body.stiffness, linkage, stiffness * (1.0 + p[1]))
        first = closures[0]
        first = eqx.tree_at(lambda c: c.placement_a, first, first.placement_a.at[0, 3].add(p[2]))
        return linkage, (first, *closures[1:])

    def outputs(self, fd, residual, closures, x):
        q, qd, qdd, u, T, p = self.split(x)
        linkage, closures = self.model(closures, p)
        return (*fd(linkage, closures, q, qd, u, T), residual(linkage, closures, q, qd, qdd, u, T))

    def _extras(self, closures, x):
        """The Jacobians' function (or None), e, Aq̇ and M at x."""
        q, qd, _, u, T, p = self.split(x)
        linkage, closures = self.model(closures, p)
        jacobians = None
        if self.with_jacobians:
            jacobians = lk.constrained_forward_dynamics_jacobians(linkage, closures, q, qd, u, T)
        A = lk.closure_jacobian(linkage, closures, q)
        return jacobians, lk.closure_error(linkage, closures, q), A @ qd, lk.mass_matrix(linkage, q)

    def x(self, q, qd, u, T, qdd=None, p=None):
        qdd = jnp.zeros_like(qd) if qdd is None else qdd
        p = jnp.zeros(N_PARAMS) if p is None else p
        return jnp.concatenate([q, qd, qdd, u, jnp.atleast_1d(T), p])

    def central(self, closures, x):
        """Central differences of (q̈, λ, r) in x, each (n_out, n_x): steps (:data:`STEPS`) times max(|x_i|, 1), T_B's
        times T_B."""
        h = np.repeat(STEPS, self.sizes) * np.maximum(np.abs(np.asarray(x)), 1.0)
        h[self.ends[3]] = STEPS[4] * x[self.ends[3]]
        steps = jnp.asarray(np.diag(h))
        plus, minus = self.values(closures, x + steps), self.values(closures, x - steps)
        return tuple(((a - b) / (2 * h[:, None])).T for a, b in zip(plus, minus))


FOUR = _Model(FOUR_BAR, link=1)
#: the hybrid chain's rules program leaves the Jacobians' function out, to save its compilation (a quarter of this
#: file's time): it shares its pieces with the rule and is tested on the four-bar
HYBRID = _Model(CHAIN, link=2, rod=1, jacobians=False)


def _four_bar_states():
    """The closed-form assembly moving (consistent) and a state off it (e ≠ 0, Aq̇ ≠ 0), u and T_B."""
    q, dq = jax.jit(lambda t: jax.jvp(lambda t: four_bar_pose(t)[0], (t,), (1.0,)))(0.7)  # q(θ), q'(θ)
    u, qdd = jnp.array([0.4, -0.1, 0.05]), jnp.array([1.0, -2.0, 0.5])
    consistent = FOUR.x(q, 2.5 * dq, u, 0.05, qdd)
    inconsistent = FOUR.x(q + jnp.array([0.0, 0.05, -0.08]), jnp.array([1.0, -0.5, 0.3]), u, 0.05, qdd)
    return {"consistent": ((PLANAR,), consistent), "inconsistent": ((PLANAR,), inconsistent)}


@jax.jit
def _on_the_manifold(q, qd):
    """The closures with every frame B moved onto its frame A at q, and q̇ projected on the null space of A there."""
    closures = _coinciding(CHAIN, DYNAMIC, q)
    A = lk.closure_jacobian(CHAIN, closures, q)
    return closures, qd - jnp.linalg.pinv(A) @ (A @ qd)


def _hybrid_states():
    q, qd, u = _random_state(CHAIN, 5)
    qdd = _random_state(CHAIN, 6)[1]
    closures, qd_free = _on_the_manifold(q, qd)
    return {
        "consistent": (closures, HYBRID.x(q, qd_free, u, 0.05, qdd)),
        "inconsistent": (DYNAMIC, HYBRID.x(q, qd, u, 0.02, qdd)),
    }


STATES = {"four-bar": (FOUR, _four_bar_states), "hybrid": (HYBRID, _hybrid_states)}
CASES = [(m, s) for m in STATES for s in ("consistent", "inconsistent")]


@pytest.fixture(scope="module")
def results():
    """(model, x, the rules' Jacobians, the plain ones, central differences, (the Jacobians' function, e, Aq̇, M)),
    per case; the rule counts of tracing the rules' program (once per model)."""
    out, calls = {}, {}
    states = {name: (model, make()) for name, (model, make) in STATES.items()}
    for name, state in CASES:
        model, by_state = states[name]
        closures, x = by_state[state]
        if name not in calls:  # rules are traced once and cached: count a fresh trace, once per model
            jax.clear_caches()
        before = RULE_CALLS.copy()
        rules, extras = model.rules(closures, x)
        calls.setdefault(name, RULE_CALLS - before)
        out[name, state] = (model, x, rules, model.plain(closures, x), model.central(closures, x), extras)
    return out, calls


def _close(got, want, rtol, scale, what):
    assert scale > 0, what
    np.testing.assert_allclose(got, want, rtol=0, atol=rtol * scale, err_msg=what)


@pytest.mark.parametrize("name, state", CASES)
def test_the_state_is_as_named(results, name, state):
    """The consistent states satisfy e = 0 and Aq̇ = 0; the others do not."""
    _, e, Aqd, _ = results[0][name, state][-1]
    if state == "consistent":
        np.testing.assert_allclose(e, 0.0, atol=1e-12)
        np.testing.assert_allclose(Aqd, 0.0, atol=1e-12)
    else:
        assert np.abs(e).max() > 1e-2 and np.abs(Aqd).max() > 1e-2


@pytest.mark.parametrize("name, state", CASES)
def test_rules_equal_the_plain_autodiff_and_central_differences(results, name, state):
    """∂(q̈, λ, r)/∂(q, q̇, q̈, u, T_B, p) by the rules equal ``jax.jacfwd`` of the plain functions (to round-off: the
    bordered system at T_B = 0.02 amplifies it) and central differences, block by block; on the manifold ∂/∂T_B = 0;
    and :func:`~jaxse3.linkage.constrained_forward_dynamics_jacobians` equals the rule's (q, q̇, u) blocks (the
    four-bar). Observed, relative to each block's largest entry: ≤ 6e−13 from autodiff, ≤ 4e−8 from central
    differences; bounds 1e−10 and 1e−6."""
    model, x, rules, plain, central, (jacobians, *_) = results[0][name, state]
    blocks = dict(zip(("q", "qd", "qdd", "u", "T", "p"), np.split(np.arange(x.size), model.ends[:-1])))
    for out, rule, auto, fd in zip(("qdd", "lam", "r"), rules, plain, central):
        for arg, cols in blocks.items():
            if out != "r" and arg == "qdd":
                np.testing.assert_array_equal(rule[:, cols], 0.0)
                continue
            # a block that vanishes (∂/∂T_B on the manifold: round-off on both sides) is compared at 1e−4 of the
            # output's largest entry, i.e. to 1e−14 of it (~50 ε) against autodiff
            what, scale = f"∂{out}/∂{arg}", max(np.abs(auto[:, cols]).max(), 1e-4 * np.abs(auto).max())
            _close(rule[:, cols], auto[:, cols], 1e-10, scale, what + " vs autodiff")
            _close(rule[:, cols], fd[:, cols], 1e-6, scale, what + " vs central differences")
        if state == "consistent":  # e = Aq̇ = 0: T_B does not act, ∂c/∂T_B = (2/T_B²)Aq̇ + (2/T_B³)e = 0
            np.testing.assert_allclose(rule[:, blocks["T"]], 0.0, atol=1e-10 * np.abs(auto).max())
    for jac, arg in zip(() if jacobians is None else jacobians, ("q", "qd", "u")):
        want = rules[0][:, blocks[arg]]
        _close(jac, want, 1e-12, np.abs(want).max(), f"∂qdd/∂{arg}: the Jacobians' function vs the rule")


@pytest.mark.parametrize("name", STATES)
def test_residual_derivative_in_qdd_is_minus_the_mass_matrix(results, name):
    model, _, rules, *_, (*_, M) = results[0][name, "inconsistent"]
    cols = slice(model.ends[1], model.ends[2])
    np.testing.assert_allclose(rules[2][:, cols], -M, rtol=1e-12, atol=1e-12 * np.abs(M).max())


@pytest.mark.parametrize("name", STATES)
def test_jacfwd_runs_the_rules(results, name):
    """Tracing ``jax.jacfwd`` of the public functions invoked both rules (the plain autodiff is not what ran)."""
    calls = results[1][name]
    assert calls["linkage.constrained_forward_dynamics"] >= 1
    assert calls["linkage.constrained_residual"] >= 1


def test_quaternion_joints_keep_plain_autodiff():
    """A free joint in quaternion coordinates (not :func:`~jaxse3.linkage._derivatives.covered`): ``jax.jacfwd``
    differentiates the plain functions (no rule runs) and the Jacobians' function says so."""
    body = rigid.spatial_inertia(MASS, (0.01, 0, 0), np.diag([0.02, 0.03, 0.01]))
    linkage = lk.Linkage([lk.Link.rigid("body", None, "free", body)])
    closure = lk.Closure("body", None, "spherical")
    quat = jnp.array([0.9, 0.2, -0.3, 0.1])
    q, qd, u = jnp.concatenate([jnp.array([0.1, -0.2, 0.05]), quat / jnp.linalg.norm(quat)]), jnp.ones(6), jnp.zeros(0)
    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = RULE_CALLS.copy()
    fd = lambda q: lk.constrained_forward_dynamics(linkage, closure, q, qd, u, 0.1)[0]
    jax.make_jaxpr(jax.jacfwd(fd))(q)
    assert (RULE_CALLS - before)["linkage.constrained_forward_dynamics"] == 0
    with pytest.raises(ValueError, match="constrained_forward_dynamics_jacobians: the analytical derivatives do not"):
        lk.constrained_forward_dynamics_jacobians(linkage, closure, q, qd, u, 0.1)


def test_without_closures_the_jacobians_are_the_open_chains():
    """No closures: the Jacobians (and ``jax.jacfwd`` through the rule) are the open chain's,
    :func:`~jaxse3.linkage.forward_dynamics_jacobians`."""
    q, qd, u = jnp.array([0.3, -0.4, 0.9]), jnp.array([1.0, -0.5, 0.3]), jnp.array([0.4, -0.1, 0.05])

    @jax.jit
    def jacobians(q, qd, u):
        fd = lambda q, qd, u: lk.constrained_forward_dynamics(FOUR_BAR, (), q, qd, u, 0.05)[0]
        return (
            lk.constrained_forward_dynamics_jacobians(FOUR_BAR, (), q, qd, u, 0.05),
            jax.jacfwd(fd, argnums=(0, 1, 2))(q, qd, u),
            lk.forward_dynamics_jacobians(FOUR_BAR, q, qd, u),
        )

    closed, rule, open_chain = jacobians(q, qd, u)
    for a, b, c in zip(closed, rule, open_chain):
        np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-10 * np.abs(c).max())
        np.testing.assert_allclose(b, c, rtol=1e-10, atol=1e-10 * np.abs(c).max())


@pytest.mark.parametrize("name", ["four-bar", "hybrid"])
def test_index3_residual_value_and_rule(name):
    """:func:`~jaxse3.linkage.index3_residual` (seed 003 eq. (52a), λ an independent variable) at the state off the
    manifold with random multipliers: its value is τ − ID(q, q̇, q̈) + Aᵀλ from the linkage's public functions, and
    ``jax.jacfwd`` through its rule (counted; the multipliers as point wrenches of the derivative pass, (D68), (D69))
    equals ``jax.jacfwd`` of the plain function and central differences in (q, q̇, q̈, λ, u); ∂r/∂λ = Aᵀ. On the hybrid
    chain with a closure of every kind (frames on rod points and placed off them, two on one rod, to the world; its
    first two are the chain's closures of the dynamics, whose rows the residual's with these include).
    Observed, relative to the largest entry: ≤ 3e−16 from autodiff, ≤ 2e−10 from central differences; bounds 1e−10
    and 1e−6. :func:`~jaxse3.linkage.index3_residual_at_rest` (statics' residual, its rule a derivative pass without
    velocity terms) equals it at q̇ = q̈ = 0, and its Jacobian in (q, λ, u) equals ``jax.jacfwd`` of the plain
    function there."""
    from jaxse3.linkage._closure import _index3_plain

    model, make = STATES[name]
    closures, x = make()["inconsistent"]
    if name == "hybrid":
        closures = ALL_KINDS
    q, qd, qdd, u, _, _ = model.split(x)
    linkage, nv = model.linkage, model.linkage.nv
    n_c = sum(c.k for c in closures)
    lam = jnp.asarray(np.random.default_rng(3).normal(size=n_c))
    y = jnp.concatenate([q, qd, qdd, lam, u])
    ends = np.cumsum([nv, nv, nv, n_c])

    def public(y):
        return lk.index3_residual(linkage, closures, *jnp.split(y, ends))

    def plain(y):
        return _index3_plain(linkage, lk.check_closures(linkage, closures), *jnp.split(y, ends))

    def at_rest(z):  # z = (q, λ, u): the statics' unknowns and inputs
        q, lam, u = jnp.split(z, [nv, nv + n_c])
        return lk.index3_residual_at_rest(linkage, closures, q, lam, u)

    def plain_at_rest(z):
        q, lam, u = jnp.split(z, [nv, nv + n_c])
        return plain(jnp.concatenate([q, jnp.zeros(2 * nv), lam, u]))

    @jax.jit
    def programs(y, z):
        q, qd, qdd, lam, u = jnp.split(y, ends)
        A = lk.closure_jacobian(linkage, closures, q)
        want = lk.generalized_forces(linkage, q, qd, u) - lk.inverse_dynamics(linkage, q, qd, qdd) + A.T @ lam
        rest = (at_rest(z), plain_at_rest(z), jax.jacfwd(at_rest)(z), jax.jacfwd(plain_at_rest)(z))
        return public(y), want, A, jax.jacfwd(public)(y), jax.jacfwd(plain)(y), rest

    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = RULE_CALLS.copy()
    r, want, A, rule, auto, rest = programs(y, jnp.concatenate([q, lam, u]))
    assert (RULE_CALLS - before)["linkage.index3_residual"] >= 1
    assert (RULE_CALLS - before)["linkage.index3_residual_at_rest"] >= 1
    r0, r0_want, J0, J0_want = rest
    np.testing.assert_allclose(r0, r0_want, rtol=0, atol=1e-12 * np.abs(r0_want).max())
    np.testing.assert_allclose(J0, J0_want, rtol=0, atol=1e-10 * np.abs(J0_want).max())
    np.testing.assert_allclose(r, want, rtol=0, atol=1e-12 * np.abs(want).max())
    scale = np.abs(auto).max()
    np.testing.assert_allclose(rule, auto, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(rule[:, ends[2] : ends[3]], A.T, rtol=0, atol=1e-12 * scale)
    h = 1e-6 * np.maximum(np.abs(np.asarray(y)), 1.0)
    steps = jnp.asarray(np.diag(h))
    values = jax.jit(jax.vmap(public))
    central = ((values(y + steps) - values(y - steps)) / (2 * h[:, None])).T
    np.testing.assert_allclose(rule / scale, central / scale, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["four-bar", "hybrid"])
def test_baumgarte_residual_value_and_rule(name):
    """:func:`~jaxse3.linkage.baumgarte_residual` (seed 003 eqs. (48), (49) as a residual in (q̈, λ)) at the state off
    the manifold with random multipliers: its value is [τ − ID + Aᵀλ; Aq̈ + Ȧq̇ + (2/T_B)Aq̇ + e/T_B²] from the
    linkage's public functions and vanishes at the (q̈_B, λ) of the forward dynamics (the four-bar); ``jax.jacfwd``
    through its rule (counted; both blocks from one derivative pass) equals ``jax.jacfwd`` of the plain function and
    central differences in (q, q̇, q̈, λ, u, T_B, p), p the model's parameters (their tangents by the rule's autodiff
    path), and along (q̈, λ) alone (the rule's affine branch) autodiff's columns; at q = 0 too. On the hybrid chain
    with a closure of every kind. Bounds as the index-3 residual's."""
    from jaxse3.linkage._closure import _baumgarte_plain

    model, make = STATES[name]
    closures, x = make()["inconsistent"]
    if name == "hybrid":
        closures = ALL_KINDS
    q, qd, qdd, u, T, _ = model.split(x)
    nv = model.linkage.nv
    n_c = sum(c.k for c in closures)
    lam = jnp.asarray(np.random.default_rng(4).normal(size=n_c))
    p = jnp.asarray([0.1, -0.2, 0.01])
    y = jnp.concatenate([q, qd, qdd, lam, u, jnp.atleast_1d(T), p])
    ends = np.cumsum([nv, nv, nv, n_c, model.linkage.n_inputs, 1])

    def args(y):
        q, qd, qdd, lam, u, T, p = jnp.split(y, ends)
        linkage, cs = model.model(closures, p)
        return linkage, cs, q, qd, qdd, lam, u, T[0]

    def public(y):
        return lk.baumgarte_residual(*args(y))

    def plain(y):
        linkage, cs, *rest = args(y)
        return _baumgarte_plain(linkage, lk.check_closures(linkage, cs), *rest)

    @jax.jit
    def programs(y):
        linkage, cs, q, qd, qdd, lam, u, T = args(y)
        A = lk.closure_jacobian(linkage, cs, q)
        r = lk.generalized_forces(linkage, q, qd, u) - lk.inverse_dynamics(linkage, q, qd, qdd) + A.T @ lam
        c = A @ (qdd + (2 / T) * qd) + lk.closure_bias(linkage, cs, q, qd) + lk.closure_error(linkage, cs, q) / T**2
        at_b = None
        if name == "four-bar":  # (the closures of every kind remove more mobility than the chain has: no q̈_B)
            qdd_b, lam_b = lk.constrained_forward_dynamics(linkage, cs, q, qd, u, T)
            at_b = lk.baumgarte_residual(linkage, cs, q, qd, qdd_b, lam_b, u, T)
        # along (q̈, λ) alone: the rule's affine branch (one forward pass, no derivative pass)
        x = jnp.concatenate([qdd, lam])
        along_x = jax.jacfwd(lambda x: lk.baumgarte_residual(linkage, cs, q, qd, x[:nv], x[nv:], u, T))(x)
        return public(y), jnp.concatenate([r, c]), at_b, jax.jacfwd(public)(y), jax.jacfwd(plain)(y), along_x

    jax.clear_caches()  # rules are traced once and cached: count a fresh trace
    before = RULE_CALLS.copy()
    R, want, at_b, rule, auto, along_x = programs(y)
    assert (RULE_CALLS - before)["linkage.baumgarte_residual"] >= 1
    np.testing.assert_allclose(R, want, rtol=0, atol=1e-12 * np.abs(want).max())
    if at_b is not None:
        np.testing.assert_allclose(at_b, 0.0, atol=1e-10 * np.abs(want).max())
    scale = np.abs(auto).max(axis=1, keepdims=True)  # per row: the two blocks differ in scale by 1/T_B²
    np.testing.assert_allclose(rule / scale, auto / scale, rtol=0, atol=1e-10)
    np.testing.assert_allclose(along_x / scale, auto[:, 2 * nv : ends[3]] / scale, rtol=0, atol=1e-12)
    h = 1e-6 * np.maximum(np.abs(np.asarray(y)), 1.0)
    h[ends[4]] = 1e-4 * float(T)
    steps = jnp.asarray(np.diag(h))
    values = jax.jit(jax.vmap(public))
    central = ((values(y + steps) - values(y - steps)) / (2 * h[:, None])).T
    np.testing.assert_allclose(rule / scale, central / scale, rtol=0, atol=1e-6)
    # at q = 0 (every joint at zero rotation, straight rods): finite and equal to autodiff (the same programs)
    _, _, _, rule0, auto0, _ = programs(y.at[:nv].set(0.0))
    assert np.all(np.isfinite(rule0))
    scale0 = np.abs(auto0).max(axis=1, keepdims=True)
    np.testing.assert_allclose(rule0 / scale0, auto0 / scale0, rtol=0, atol=1e-10)
