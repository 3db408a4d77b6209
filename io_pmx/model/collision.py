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


def _merge_cost(a: list[int], b: list[int], share: np.ndarray, touch: np.ndarray, counts: np.ndarray) -> int:
    """Body pairs that merging cliques a and b makes share a collection although MMD keeps them apart."""
    cost = 0
    for t in a:
        for u in b:
            if t != u and not share[t, u] and not touch[t, u]:
                cost += int(counts[t] * counts[u])
    return cost


def _fit(cliques: list[list[int]], touch: np.ndarray, counts: np.ndarray, slots: int) -> list[list[int]]:
    """At most `slots` collections: merge the two whose union wrongly joins the fewest body pairs."""
    cliques = [list(c) for c in cliques]
    while len(cliques) > slots:
        share = np.zeros_like(touch)
        for c in cliques:
            share[np.ix_(c, c)] = True
        best = min(((i, j) for i in range(len(cliques)) for j in range(i + 1, len(cliques))),
                   key=lambda ij: _merge_cost(cliques[ij[0]], cliques[ij[1]], share, touch, counts))
        i, j = best
        cliques[i] = sorted(set(cliques[i]) | set(cliques[j]))
        del cliques[j]
    return cliques


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
