"""The static topology of a kinematic tree: index tables and 0/1 matrices (numpy, built at trace time, cached).

Sums over ancestors and subtrees are products with these constant matrices, so the traced programs of the algorithms
are a few dense, batched contractions whose size does not grow with the number of bodies (seed 002 digest §1.4, §9):

* :class:`TreeMatrices` (:func:`tree_matrices`): the joint of each DoF, the support matrix ``i ⪯ k``, the
  body–DoF support and the bodies by depth (kinematics, RNEA, CRBA);
* :class:`Topology` (:func:`topology`): the same per DoF pair, ``joint(b) ⪯ joint(a)`` and "same joint" (IDSVA FO),
  with :func:`subtree_sums`;
* :class:`Chains` (:func:`chains`): the DoF pairs on common root–leaf chains in the chain layout (IDSVA SO).

IDSVA's second-order quantities (seed 002 Algorithm 1, digest §4, §9) are non-zero only for DoF pairs (a, b) with
``joint(b) ⪯ joint(a)`` and triples on one chain. Instead of dense n² / n³ masks, per-pair quantities are stored in
the *chain layout* ``x[a, l]`` for the l-th DoF ``b = chain[a, l]`` on the path from joint(a) to the root (joint(a)'s
own DoFs included), padded with a dummy DoF ``n`` whose gathered vectors are zero, so padded slots hold exact zeros;
every row has at least one padded slot, and ``slot`` maps a dense (a, b) back to the layout (to a padded slot off the
chains), so a dense array is one gather.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PyTree

from jaxse3.rigid import joints as _joints
from jaxse3.rigid._model import Model

__all__ = [
    "TreeMatrices",
    "tree_matrices",
    "tree_matrices_of",
    "Topology",
    "topology",
    "topology_of",
    "subtree_sums",
    "Chains",
    "chains",
    "chains_of",
]


# ---------------------------------------------------------------------------------------------------------------------
# bodies: support matrix and depth levels


class TreeMatrices(NamedTuple):
    """Constant index and 0/1 arrays of a tree (numpy, built at trace time from the static topology).

    ``joint[a]``: body (joint) of DoF a; ``support[i, k] = 1`` iff i ⪯ k (i on the path from k to the root);
    ``body_dof[i, a] = 1`` iff joint(a) ⪯ i; ``levels``: body indices grouped by depth (roots first).
    """

    joint: np.ndarray  # (nv,) int
    support: np.ndarray  # (nb, nb)
    body_dof: np.ndarray  # (nb, nv)
    levels: tuple[np.ndarray, ...]


@functools.cache
def tree_matrices_of(parents: tuple[int, ...], joint_types: tuple[str, ...]) -> TreeMatrices:
    """The :class:`TreeMatrices` of the tree (``Model.parents``, ``Model.joint_types``), cached."""
    nb = len(parents)
    support = np.eye(nb)
    depth = np.zeros(nb, dtype=int)
    for k in range(nb):
        i = parents[k]
        depth[k] = 0 if i < 0 else depth[i] + 1
        while i >= 0:
            support[i, k] = 1.0
            i = parents[i]
    joint = np.repeat(np.arange(nb), [_joints.NV[t] for t in joint_types])
    levels = tuple(np.flatnonzero(depth == d) for d in range(depth.max() + 1))
    return TreeMatrices(joint, support, support[joint].T.copy(), levels)


def tree_matrices(model: Model) -> TreeMatrices:
    """The :class:`TreeMatrices` of ``model`` (cached per topology)."""
    return tree_matrices_of(model.parents, model.joint_types)


# ---------------------------------------------------------------------------------------------------------------------
# DoF pairs: ancestor and same-joint masks


class Topology(NamedTuple):
    """Constant 0/1 matrices of the tree (numpy, built at trace time from the static ``model.parents``).

    ``joint[a]`` is the joint of DoF a; ``support[i, k] = 1`` iff ``i ⪯ k`` (i on the path from k to the root);
    ``E[a, b] = 1`` iff ``joint(b) ⪯ joint(a)``; ``same[a, b] = 1`` iff both DoFs belong to one joint.
    """

    joint: np.ndarray  # (nv,) int
    support: np.ndarray  # (nb, nb)
    E: np.ndarray  # (nv, nv)
    same: np.ndarray  # (nv, nv)


@functools.cache
def topology_of(parents: tuple[int, ...], joint_types: tuple[str, ...]) -> Topology:
    """The :class:`Topology` of the tree (``Model.parents``, ``Model.joint_types``), cached."""
    tree = tree_matrices_of(parents, joint_types)
    joint = tree.joint
    return Topology(
        joint, tree.support, tree.support[joint][:, joint].T.copy(), (joint[:, None] == joint[None, :]).astype(float)
    )


def topology(model: Model) -> Topology:
    """The :class:`Topology` of ``model`` (cached per tree)."""
    return topology_of(model.parents, model.joint_types)


def subtree_sums(top: Topology, tree: PyTree[Float[Array, "nb ..."]]) -> PyTree[Float[Array, "nb ..."]]:
    """``x_i ← Σ_{k⪰i} x_k`` for every (nb, ...) leaf of ``tree``, as one product with ``top.support``."""
    leaves, treedef = jax.tree.flatten(tree)
    nb = leaves[0].shape[0]
    sizes = np.cumsum([0] + [int(np.prod(x.shape[1:])) for x in leaves])
    total = jnp.asarray(top.support) @ jnp.concatenate([x.reshape(nb, -1) for x in leaves], axis=1)
    return treedef.unflatten([total[:, i:j].reshape(x.shape) for i, j, x in zip(sizes, sizes[1:], leaves)])


# ---------------------------------------------------------------------------------------------------------------------
# DoF pairs on common root–leaf chains, in the chain layout


class Chains(NamedTuple):
    """``joint[a]``: the joint of DoF a; ``E[a, b]``: joint(b) ⪯ joint(a); ``same``: one joint; ``chain`` (n, L): the
    b of row a (dummy ``n`` padded);
    ``slot`` (n, n): l with ``chain[a, l] = b`` where E[a, b], else a padded slot of row a."""

    joint: np.ndarray  # (n,) int, the joint of each DoF
    E: np.ndarray  # (n, n) bool
    same: np.ndarray  # (n, n) bool
    chain: np.ndarray  # (n, L) int
    slot: np.ndarray  # (n, n) int


@functools.cache
def chains_of(parents: tuple[int, ...], joint_types: tuple[str, ...]) -> Chains:
    """The :class:`Chains` of the tree (``Model.parents``, ``Model.joint_types``), cached."""
    top = topology_of(parents, joint_types)
    E, same = top.E > 0, top.same > 0
    n = len(top.joint)
    L = int(E.sum(axis=1).max()) + 1
    chain = np.full((n, L), n)
    slot = np.full((n, n), L - 1)
    for a in range(n):
        bs = np.flatnonzero(E[a])
        chain[a, : len(bs)] = bs
        slot[a, bs] = np.arange(len(bs))
    return Chains(top.joint, E, same, chain, slot)


def chains(model: Model) -> Chains:
    """The :class:`Chains` of ``model`` (cached per topology)."""
    return chains_of(model.parents, model.joint_types)
