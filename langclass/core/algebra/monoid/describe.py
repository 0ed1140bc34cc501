"""JSON-ready descriptions of the monoid: D-class structure, a page of elements, the analysis summary."""

from __future__ import annotations

from typing import Any

import numpy as np

from .groups import nontrivial_groups

__all__ = ["DescribeMixin", "monoid_summary"]


class DescribeMixin:
    """:meth:`describe` and :meth:`d_class_summary` of a :class:`~langclass.core.algebra.monoid.TransitionMonoid`."""

    def d_class_summary(self) -> list[dict[str, Any]]:
        """The D-class structure: for each J(=D)-class its size, numbers of R-, L-classes,
        H-class size, idempotent count, regularity, representative and the classes just below it
        in the Cayley graphs (generating the J-order)."""
        cached = self.__dict__.get("_d_class_summary")
        if cached is not None:
            return cached
        g = self.green
        J, R, L, H = g["J"], g["R"], g["L"], g["H"]
        nj = int(J.max()) + 1
        src = np.repeat(J, self.right.shape[1])
        below: list[set[int]] = [set() for _ in range(nj)]
        for tab in (self.right, self.left):
            dst = J[tab.ravel()]
            msk = src != dst
            for a, b in np.unique(np.stack([src[msk], dst[msk]], axis=1), axis=0).tolist() if msk.any() else []:
                below[a].add(b)
        out = []
        order = np.argsort(J, kind="stable")
        bounds = np.searchsorted(J[order], np.arange(nj + 1))
        for j in range(nj):
            mem = order[bounds[j]:bounds[j + 1]]
            rep = int(mem.min())
            idem = int(self.idempotent[mem].sum())
            hsize = int(np.sum(H[mem] == H[rep]))
            out.append({
                "id": j,
                "size": int(mem.size),
                "r_classes": int(np.unique(R[mem]).size),
                "l_classes": int(np.unique(L[mem]).size),
                "h_class_size": hsize,
                "idempotents": idem,
                "regular": idem > 0,
                "representative": rep,
                "representative_word": list(self.word(rep)),
                "in_semigroup": bool(self.in_semigroup[mem].any()),
                "below": sorted(below[j]),
            })
        self.__dict__["_d_class_summary"] = out
        return out

    def describe(self, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        """A JSON-ready description of M, with a page of its elements.

        Args:
            offset: first element id of the page (elements are in shortlex order of their words).
            limit: page size (at most 1000 is sensible).

        Returns:
            ``{"size", "semigroup_size", "identity_in_semigroup", "idempotents", "stability_index",
            "stable_semigroup_size", "counts": {"R","L","H","J"}, "d_classes": [...],
            "maximal_subgroups": [...], "offset", "limit", "elements": [{"id", "word", "length",
            "idempotent", "in_semigroup", "in_stable_semigroup", "regular", "R", "L", "H", "J",
            "transformation"}]}``.

        Raises:
            ValueError: negative offset or limit.
        """
        if offset < 0 or limit < 0:
            raise ValueError("offset and limit must be non-negative")
        g = self.green
        page = range(offset, min(self.size, offset + limit))
        elems = []
        for x in page:
            elems.append({
                "id": x,
                "word": list(self.word(x)),
                "length": int(self.lengths[x]),
                "idempotent": bool(self.idempotent[x]),
                "in_semigroup": bool(self.in_semigroup[x]),
                "in_stable_semigroup": bool(self.stable[x]),
                "regular": bool(self.regular[x]),
                "R": int(g["R"][x]), "L": int(g["L"][x]), "H": int(g["H"][x]), "J": int(g["J"][x]),
                "transformation": self.elements[x].astype(int).tolist(),
            })
        return {
            "size": self.size,
            "semigroup_size": self.semigroup_size,
            "identity_in_semigroup": self.identity_in_semigroup,
            "idempotents": int(self.idempotent.sum()),
            "stability_index": self.stability_index,
            "stable_semigroup_size": self.stable_size,
            "counts": {r: int(g[r].max()) + 1 for r in ("R", "L", "H", "J")},
            "d_classes": self.d_class_summary(),
            "maximal_subgroups": [gi.to_dict() for gi in self.maximal_subgroups],
            "offset": offset,
            "limit": limit,
            "elements": elems,
        }


def monoid_summary(M) -> dict[str, Any]:
    """The ``monoid`` block of an analysis: sizes, idempotents, stability index, Green's class counts,
    aperiodicity and the non-trivial groups (one per regular D-class, largest first)."""
    g = M.green
    return {
        "size": M.size,
        "semigroup_size": M.semigroup_size,
        "identity_in_semigroup": M.identity_in_semigroup,
        "identity_word_plus": list(M.identity_word_plus) if M.identity_word_plus is not None else None,
        "idempotents": int(M.idempotent.sum()),
        "stability_index": M.stability_index,
        "stable_semigroup_size": M.stable_size,
        "r_classes": int(g["R"].max()) + 1,
        "l_classes": int(g["L"].max()) + 1,
        "h_classes": int(g["H"].max()) + 1,
        "d_classes": int(g["J"].max()) + 1,
        "regular_d_classes": len(M.regular_d_classes),
        "aperiodic": not bool(M.nontrivial_group_elements.any()),
        "nontrivial_groups": [gi.to_dict() for gi in nontrivial_groups(M)],
    }
