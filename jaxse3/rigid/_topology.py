"""Static index tables of the DoF pairs on common root–leaf chains (numpy, built at trace time).

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

import numpy as np

from jaxse3.rigid.rnea_derivatives import _topology

__all__ = ["Chains", "chains", "chains_of"]


class Chains(NamedTuple):
    """``joint[a]``: the joint of DoF a; ``E[a, b]``: joint(b) ⪯ joint(a); ``same``: one joint; ``chain`` (n, L): the b of row a (dummy ``n`` padded);
    ``slot`` (n, n): l with ``chain[a, l] = b`` where E[a, b], else a padded slot of row a."""

    joint: np.ndarray  # (n,) int, the joint of each DoF
    E: np.ndarray  # (n, n) bool
    same: np.ndarray  # (n, n) bool
    chain: np.ndarray  # (n, L) int
    slot: np.ndarray  # (n, n) int


@functools.lru_cache(maxsize=None)
def chains_of(parents: tuple[int, ...], joint_types: tuple[str, ...]) -> Chains:
    """The :class:`Chains` of the tree (``Model.parents``, ``Model.joint_types``), cached."""
    top = _topology(parents, joint_types)
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


def chains(model) -> Chains:
    """The :class:`Chains` of ``model`` (cached per topology)."""
    return chains_of(model.parents, model.joint_types)

