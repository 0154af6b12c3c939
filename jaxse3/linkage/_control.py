"""Joint-coordinate control: rigid joints that follow prescribed trajectories (seed 003 §5.1, eqs. (43)–(45)).

Split the coordinates into unknown ones q_u (the rods' strains, the free joints) and known ones q_k = f(t) (the
prescribed joints), and the inputs into known ones (tendon tensions, the efforts of actuated joints that are not
prescribed) and unknown ones u_u (the efforts the prescribed joints need). Eq. (43)'s bordered system

    [M_uu  −B_u] [q̈_u]   [τ_u − ID_u(q, q̇, (0, q̈_k))]        (the efforts of prescribed joints act on their own rows
    [M_ku  −B_k] [u_u] = [τ_k − ID_k(q, q̇, (0, q̈_k))]         only: B_u = 0, B_k = 1)

splits: q̈_u = M_uu⁻¹(τ_u − ID_u(q, q̇, (0, q̈_k))) (:func:`controlled_forward_dynamics`), then
u_u = ID_k(q, q̇, q̈) − τ_k (:func:`controlled_efforts`). The prescribed (q_k, q̇_k, q̈_k) enter as inputs, so they
overwrite the state at every call, as the paper recommends. Eq. (44): differentiating the rows u of ID = τ,

    ∂q̈_u/∂x = M_uu⁻¹(∂τ_u/∂x − ∂ID_u/∂x)  (x = q_u, q̇_u, q_k, q̇_k, u),      ∂q̈_u/∂q̈_k = −M_uu⁻¹ M_uk,

with ID's derivatives at the full q̈ — the rows u and the relevant columns of the linkage's analytical derivatives
(the ``custom_jvp`` rule of :func:`controlled_forward_dynamics`). Newmark-β and statics use the residual
τ_u − ID_u(q, q̇, q̈) (eq. (45); the chain factors of eq. (12) are the driver's, digest §2.4), whose rule takes the
same rows. Both rules ask the derivative pass for the rows u and, unless the inputs move, the columns u alone
(:func:`~jaxse3.linkage.tree_derivatives`): the prescribed joints' rows and columns are never formed, and prescribed
rigid links ahead of the rods (the hybrid serial robot's seven) run no backward pass.

``controls`` inputs are laid out as ``(q_k, q̇_k, q̈_k, u_known)``: the prescribed joints' positions, velocities and
accelerations in link order, then the linkage's inputs without those of the prescribed joints.
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from jaxse3.lie.tangents import accumulate, custom_rule, is_zero, jvp_of_rest
from jaxse3.linkage._derivatives import covered, tree_derivatives
from jaxse3.linkage._dynamics import generalized_forces, inverse_dynamics_and_mass
from jaxse3.linkage._model import Linkage
from jaxse3.linkage._rules import generalized_forces_derivatives, inverse_dynamics, inverse_dynamics_derivatives

__all__ = ["JointControl", "controlled_forward_dynamics", "controlled_efforts", "controlled_residual"]


class JointControl(eqx.Module):
    """Which joints of a linkage follow prescribed trajectories, and the index tables of the split (module docstring).

    Args:
        linkage: a :class:`~jaxse3.linkage.Linkage` without spherical or free joints.
        prescribed: names of revolute, prismatic or helical links whose joint coordinates are prescribed.
    """

    linkage: Linkage
    prescribed: tuple[str, ...] = eqx.field(static=True)
    known: tuple[int, ...] = eqx.field(static=True)  # positions in q (= q̇) of the prescribed coordinates
    unknown: tuple[int, ...] = eqx.field(static=True)
    known_inputs: tuple[int, ...] = eqx.field(static=True)  # positions in u of the inputs that stay inputs
    effort_inputs: tuple[int, ...] = eqx.field(static=True)  # positions in u of the prescribed joints' efforts

    def __init__(self, linkage: Linkage, prescribed: Sequence[str]):
        if not isinstance(linkage, Linkage):
            raise TypeError(f"JointControl: linkage must be a jaxse3.linkage.Linkage, got {type(linkage).__name__}")
        if isinstance(prescribed, str):
            prescribed = (prescribed,)
        prescribed = tuple(prescribed)
        if len(set(prescribed)) != len(prescribed):
            raise ValueError(f"JointControl: 'prescribed' names a link twice: {prescribed}")
        if not covered(linkage) or linkage.nq != linkage.nv:
            raise ValueError("JointControl: linkages with spherical or free joints are not supported")
        known, efforts = [], []
        for name in prescribed:
            i = linkage.index(name)
            link = linkage.links[i]
            if link.joint not in ("revolute", "prismatic", "helical"):
                raise ValueError(
                    f"JointControl: link {name!r} has a {link.joint} joint; only revolute, prismatic and helical "
                    f"joints can be prescribed"
                )
            known += list(range(linkage.v_slice(i).start, linkage.v_slice(i).stop))
            efforts += list(range(linkage.u_slice(i).start, linkage.u_slice(i).stop))
        self.linkage, self.prescribed = linkage, prescribed
        self.known = tuple(sorted(known))
        self.unknown = tuple(i for i in range(linkage.nv) if i not in known)
        self.effort_inputs = tuple(sorted(efforts))
        self.known_inputs = tuple(i for i in range(linkage.n_inputs) if i not in efforts)

    @property
    def n_unknown(self) -> int:
        """Number of unknown coordinates (the state's size)."""
        return len(self.unknown)

    @property
    def n_inputs(self) -> int:
        """Size of the inputs ``(q_k, q̇_k, q̈_k, u_known)``."""
        return 3 * len(self.known) + len(self.known_inputs)

    def full_state(
        self, q_u: Float[Array, " n_u"], qd_u: Float[Array, " n_u"], inputs: Float[Array, " n_in"]
    ) -> tuple[Float[Array, " nv"], Float[Array, " nv"], Float[Array, " nv"], Float[Array, " n_inputs"]]:
        """(q, q̇, (0, q̈_k), u) of the whole linkage from the unknown coordinates and the inputs; the prescribed
        joints' efforts in u are zero."""
        nk = len(self.known)
        qk, qdk, qddk, uk = inputs[:nk], inputs[nk : 2 * nk], inputs[2 * nk : 3 * nk], inputs[3 * nk :]
        u_idx, k_idx = np.asarray(self.unknown, int), np.asarray(self.known, int)
        dtype = jnp.result_type(q_u, qd_u, inputs)
        merge = lambda a, b: jnp.zeros(self.linkage.nv, dtype).at[u_idx].set(a).at[k_idx].set(b)
        u = jnp.zeros(self.linkage.n_inputs, dtype).at[np.asarray(self.known_inputs, int)].set(uk)
        return merge(q_u, qk), merge(qd_u, qdk), merge(jnp.zeros_like(q_u), qddk), u


def _check(fname: str, control: JointControl, **arrays) -> list[Array]:
    sizes = {"q_u": control.n_unknown, "qd_u": control.n_unknown, "qdd_u": control.n_unknown}
    sizes["inputs"] = control.n_inputs
    out = []
    for name, x in arrays.items():
        x = jnp.asarray(x, dtype=jnp.result_type(float, x))
        if x.shape != (sizes[name],):
            raise ValueError(f"{fname}: {name} must have shape ({sizes[name]},) for this control, got {x.shape}")
        out.append(x)
    return out


def _fd_plain(control: JointControl, q_u, qd_u, inputs):
    linkage, u_idx = control.linkage, np.asarray(control.unknown, int)
    q, qd, qdd0, u = control.full_state(q_u, qd_u, inputs)
    bias, M = inverse_dynamics_and_mass(linkage, q, qd, qdd0)  # one forward pass
    rhs = generalized_forces(linkage, q, qd, u) - bias
    M = M[u_idx][:, u_idx]
    return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(M), rhs[u_idx])


def _rows_u(control: JointControl, q, qd, qdd, u, inputs_move: bool) -> tuple:
    """The rows u of eq. (44)'s derivatives at the full (q, q̇, q̈): ID's (τ_u, ∂ID_u/∂q, ∂ID_u/∂q̇, M_u = ∂ID_u/∂q̈),
    G_q, G_q̇ with G = ∂τ_u/∂(·) − ∂ID_u/∂(·), and B = ∂τ_u/∂u_known, in the columns u (all nv columns when
    ``inputs_move``: the prescribed joints' columns enter through the inputs), and the unknown coordinates' places
    among those columns. The derivative pass forms only these rows and columns
    (:func:`~jaxse3.linkage.tree_derivatives`): prescribed rigid links ahead of the rods carry none.
    ``qd = qdd = None``: at rest (the pass at rest; ∂ID/∂q̇, M and G_q̇ None)."""
    linkage, u_idx = control.linkage, np.asarray(control.unknown, int)
    cols = np.arange(linkage.nv) if inputs_move else u_idx
    zero = jnp.zeros(linkage.nv, q.dtype)
    if linkage.rigid_obstacle is None:  # jaxse3.rigid's IDSVA, then the rows and columns
        r = inverse_dynamics_derivatives(linkage, q, *((zero, zero) if qd is None else (qd, qdd)))
        r = type(r)(r.tau[u_idx], *(None if qd is None and i else x[u_idx][:, cols] for i, x in enumerate(r[1:])))
    else:
        r = tree_derivatives(linkage, q, qd, qdd, rows=control.unknown, columns=tuple(cols.tolist()))
    Tq, Tqd, Tu = generalized_forces_derivatives(linkage, q, zero if qd is None else qd, u)
    B = Tu[u_idx][:, np.asarray(control.known_inputs, int)]
    Gqd = None if qd is None else Tqd[u_idx][:, cols] - r.dqd
    return r, Tq[u_idx][:, cols] - r.dq, Gqd, B, np.searchsorted(cols, u_idx)


def _fd_jvp(primals, tangents):
    control, q_u, qd_u, inputs = primals
    _, dq_u, dqd_u, dinputs = tangents
    u_idx, k_idx = np.asarray(control.unknown, int), np.asarray(control.known, int)
    qdd_u = _fd_plain(control, q_u, qd_u, inputs)
    q, qd, qdd, u = control.full_state(q_u, qd_u, inputs)
    r, Gq, Gqd, B, at_u = _rows_u(control, q, qd, qdd.at[u_idx].set(qdd_u), u, not is_zero(dinputs))
    chol = jax.scipy.linalg.cho_factor(r.M[:, at_u])
    solve = lambda A: jax.scipy.linalg.cho_solve(chol, A)
    Gq, Gqd = solve(Gq), solve(Gqd)  # eq. (44)
    terms = [(Gq[:, at_u], dq_u), (Gqd[:, at_u], dqd_u)]
    if not is_zero(dinputs):
        d_inputs = jnp.concatenate([Gq[:, k_idx], Gqd[:, k_idx], -solve(r.M[:, k_idx]), solve(B)], axis=1)
        terms.append((d_inputs, dinputs))
    rest = jvp_of_rest(_fd_plain, primals, tangents, analytic=(1, 2, 3))
    return qdd_u, accumulate(qdd_u, terms, rest)


_fd = custom_rule("linkage.controlled_forward_dynamics", _fd_plain, _fd_jvp)


def controlled_forward_dynamics(
    control: JointControl, q_u: Float[Array, " n_u"], qd_u: Float[Array, " n_u"], inputs: Float[Array, " n_in"]
) -> Float[Array, " n_u"]:
    """q̈_u = M_uu⁻¹(τ_u − ID_u(q, q̇, (0, q̈_k))) (seed 003 eq. (43)), with the rule of eq. (44) (module docstring);
    ``inputs = (q_k, q̇_k, q̈_k, u_known)``."""
    q_u, qd_u, inputs = _check("controlled_forward_dynamics", control, q_u=q_u, qd_u=qd_u, inputs=inputs)
    return _fd(control, q_u, qd_u, inputs)


def _residual_rows(control: JointControl, q_u, qd_u, qdd_u, inputs, rows: tuple[int, ...]) -> Array:
    """(τ − ID(q, q̇, q̈)) of the whole linkage at the coordinates ``rows``."""
    q, qd, qdd, u = control.full_state(q_u, qd_u, inputs)
    qdd = qdd.at[np.asarray(control.unknown, int)].set(qdd_u)
    linkage = control.linkage
    return (generalized_forces(linkage, q, qd, u) - inverse_dynamics(linkage, q, qd, qdd))[np.asarray(rows, int)]


def _residual_plain(control: JointControl, q_u, qd_u, qdd_u, inputs) -> Array:
    return _residual_rows(control, q_u, qd_u, qdd_u, inputs, control.unknown)


def _rest_plain(control: JointControl, q_u, inputs) -> Array:
    q, _, _, u = control.full_state(q_u, jnp.zeros_like(q_u), inputs)
    linkage, zero = control.linkage, jnp.zeros_like(q)
    return (generalized_forces(linkage, q, zero, u) - inverse_dynamics(linkage, q, zero, zero))[
        np.asarray(control.unknown)
    ]


def _rest_jvp(primals, tangents):
    control, q_u, inputs = primals
    _, dq_u, dinputs = tangents
    u_idx, k_idx = np.asarray(control.unknown, int), np.asarray(control.known, int)
    q, _, _, u = control.full_state(q_u, jnp.zeros_like(q_u), inputs)
    r, G, _, B, at_u = _rows_u(control, q, None, None, u, not is_zero(dinputs))
    out = generalized_forces(control.linkage, q, jnp.zeros_like(q), u)[u_idx] - r.tau
    terms = [(G[:, at_u], dq_u)]
    if not is_zero(dinputs):  # q_k moves; the prescribed rates and accelerations do not enter at rest
        rates = jnp.zeros((len(u_idx), 2 * len(k_idx)), q.dtype)
        terms.append((jnp.concatenate([G[:, k_idx], rates, B], axis=1), dinputs))
    rest = jvp_of_rest(_rest_plain, primals, tangents, analytic=(1, 2))
    return out, accumulate(out, terms, rest)


_rest = custom_rule("linkage.controlled_residual_at_rest", _rest_plain, _rest_jvp)


def _residual_jvp(primals, tangents):
    control, q_u, qd_u, qdd_u, inputs = primals
    _, dq_u, dqd_u, dqdd_u, dinputs = tangents
    u_idx, k_idx = np.asarray(control.unknown, int), np.asarray(control.known, int)
    q, qd, qdd, u = control.full_state(q_u, qd_u, inputs)
    r, Gq, Gqd, B, at_u = _rows_u(control, q, qd, qdd.at[u_idx].set(qdd_u), u, not is_zero(dinputs))
    out = generalized_forces(control.linkage, q, qd, u)[u_idx] - r.tau
    terms = [(Gq[:, at_u], dq_u), (Gqd[:, at_u], dqd_u), (-r.M[:, at_u], dqdd_u)]
    if not is_zero(dinputs):
        terms.append((jnp.concatenate([Gq[:, k_idx], Gqd[:, k_idx], -r.M[:, k_idx], B], axis=1), dinputs))
    rest = jvp_of_rest(_residual_plain, primals, tangents, analytic=(1, 2, 3, 4))
    return out, accumulate(out, terms, rest)


_residual = custom_rule("linkage.controlled_residual", _residual_plain, _residual_jvp)


def controlled_residual(
    control: JointControl,
    q_u: Float[Array, " n_u"],
    qd_u: Float[Array, " n_u"] | None,
    qdd_u: Float[Array, " n_u"] | None,
    inputs: Float[Array, " n_in"],
) -> Float[Array, " n_u"]:
    """τ_u − ID_u(q, q̇, q̈) (seed 003 eq. (45a)): zero along a motion; Newmark-β's and statics' residual.

    ``qd_u = qdd_u = None``: at rest, τ_u(q, 0, u) − ID_u(q, 0, 0), every rate and acceleration zero (the inputs'
    prescribed ones are not read): statics, whose rule runs the derivative pass at rest."""
    if qd_u is None and qdd_u is None:
        q_u, inputs = _check("controlled_residual", control, q_u=q_u, inputs=inputs)
        return _rest(control, q_u, inputs)
    args = _check("controlled_residual", control, q_u=q_u, qd_u=qd_u, qdd_u=qdd_u, inputs=inputs)
    return _residual(control, *args)


def controlled_efforts(
    control: JointControl,
    q_u: Float[Array, " n_u"],
    qd_u: Float[Array, " n_u"],
    qdd_u: Float[Array, " n_u"],
    inputs: Float[Array, " n_in"],
) -> Float[Array, " n_k"]:
    """u_u = ID_k(q, q̇, q̈) − τ_k: the efforts the prescribed joints exert (seed 003 eq. (43), second row), in the order
    of their coordinates."""
    args = _check("controlled_efforts", control, q_u=q_u, qd_u=qd_u, qdd_u=qdd_u, inputs=inputs)
    return -_residual_rows(control, *args, control.known)
