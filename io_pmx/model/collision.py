"""Which PMX rigid bodies collide, and how Blender's collision collections can say it (docs/mmd.md §6.1).

MMD (Bullet's broadphase filter) lets bodies a and b collide when each one's 16-bit non-collision mask keeps
the other's group: bit g_b of m_a and bit g_a of m_b are set (a clear bit is a group it passes through). The
rule is per pair and need not hold for two bodies of one kind: a group that masks itself does not collide
with itself, yet collides with the groups it keeps.

Blender lets two rigid bodies collide when they share one of 20 collision collections. Sharing is the only
rule, so it cannot say "a and b collide with c but not with each other"; what it cannot say is handed back
as pairs to exclude with disabled-collision constraints. Bodies with the same (group, mask) behave alike, so
the layout is worked out on those kinds: each collection is a set of kinds that all collide pairwise (a clique
of the kinds' collision graph), chosen greedily until every colliding pair of kinds shares one.
"""
from __future__ import annotations

import numpy as np

SLOTS = 20  # Blender's collision collections


def collides(groups, masks) -> np.ndarray:
    """n×n: whether MMD lets bodies i and j collide (the diagonal: whether a body's kind collides with itself)."""
    g = np.asarray(groups, np.int64) & 15
    m = np.asarray(masks, np.int64) & 0xFFFF
    keeps = (m[:, None] >> g[None, :]) & 1  # keeps[i, j]: i's mask keeps j's group
    return (keeps & keeps.T).astype(bool)


def _cliques(touch: np.ndarray) -> list[list[int]]:
    """Sets of kinds that pairwise collide, covering every colliding pair of kinds (a kind colliding with
    itself counts as a pair); each grown from an uncovered pair by the kind adding most uncovered pairs."""
    uncovered = touch.copy()
    out: list[list[int]] = []
    while uncovered.any():
        t, u = (int(x) for x in np.argwhere(uncovered)[0])
        clique = [t] if t == u else [t, u]
        while True:
            fits = [v for v in range(len(touch)) if v not in clique and touch[v, clique].all()]
            if not fits:
                break
            clique.append(max(fits, key=lambda v: (int(uncovered[v, clique].sum()), bool(touch[v, v]))))
        idx = np.array(clique)
        uncovered[np.ix_(idx, idx)] = False
        out.append(clique)
    return out


def _fit(cliques: list[list[int]], touch: np.ndarray, counts: np.ndarray, slots: int) -> list[list[int]]:
    """At most `slots` collections: merge the two whose union wrongly joins the fewest body pairs."""
    kinds = len(touch)
    sets = np.zeros((len(cliques), kinds), bool)
    for c, clique in enumerate(cliques):
        sets[c, clique] = True
    weight = np.outer(counts, counts).astype(np.float64)
    np.fill_diagonal(weight, 0.0)  # a kind's own pairs are joined already by the clique it is in
    while len(sets) > slots:
        share = (sets.T.astype(np.int64) @ sets.astype(np.int64)) > 0
        wrong = np.where(share | touch, 0.0, weight)  # body pairs a merge would newly join against MMD
        cost = sets.astype(np.float64) @ wrong @ sets.T.astype(np.float64)
        cost[np.tril_indices(len(sets))] = np.inf
        i, j = np.unravel_index(int(np.argmin(cost)), cost.shape)
        sets[i] |= sets[j]
        sets = np.delete(sets, j, axis=0)
    return [list(np.nonzero(row)[0]) for row in sets]


def collision_layout(groups, masks, slots: int = SLOTS) -> tuple[np.ndarray, np.ndarray]:
    """(member n×slots: the Blender collision collections of each body; apart n×n: pairs that share a
    collection although MMD does not let them collide, to be kept apart by disabled-collision constraints)."""
    groups = np.asarray(groups, np.int64)
    masks = np.asarray(masks, np.int64)
    n = len(groups)
    member = np.zeros((n, slots), bool)
    if n == 0:
        return member, np.zeros((0, 0), bool)
    kinds, kind_of, counts = np.unique(np.stack([groups & 15, masks & 0xFFFF], 1), axis=0, return_inverse=True,
                                       return_counts=True)
    kind_of = kind_of.reshape(-1)
    touch = collides(kinds[:, 0], kinds[:, 1])
    cliques = _fit(_cliques(touch), touch, counts, slots)
    for c, clique in enumerate(cliques):
        member[np.isin(kind_of, clique), c] = True
    share = (member.astype(np.int64) @ member.T.astype(np.int64)) > 0
    apart = share & ~collides(groups, masks)
    np.fill_diagonal(apart, False)
    return member, apart
