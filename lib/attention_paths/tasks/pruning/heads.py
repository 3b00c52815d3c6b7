"""The heads of the pruned network, read from its data, never assumed: every head ``(layer, head)`` of an
architecture (:func:`all_heads`), the architecture named by a result's head labels (:func:`heads_of_names`), and
the reference implementation's literal head combinations for the architectures it prunes
(:func:`reference_combinations`)."""

from __future__ import annotations

from typing import Iterable, Sequence

from attention_paths.theory.checks import check_heads

__all__ = ["all_heads", "heads_of_names", "keeps_every_layer", "reference_combinations", "REFERENCE_CUMULATIVE_ORDER"]

# the reference's literal combinations (0-based "layer-head"), which target its own network's heads (spec §C.3):
# for 2 layers x 4 heads, two pairs and two triples
_REFERENCE_COMBINATIONS = {(4, 4): ("0-1,0-3", "0-1,0-3,0-2", "1-2,1-1", "1-2,1-1,1-3")}
# for 2 layers x 8 heads the reference removes heads cumulatively in one fixed order (its
# prune_2lay_h8_g64_n512.sh: its own theory's head scores at N = 10), 1 to 13 of the 16 heads
REFERENCE_CUMULATIVE_ORDER = {(8, 8): "0-6,0-4,1-5,0-0,1-1,0-3,1-4,0-5,1-2,0-2,1-7,1-0,0-1"}


def all_heads(heads: Sequence[int]) -> list[tuple[int, int]]:
    """Every head ``(layer, head)`` (0-based) of a network with ``heads`` per layer, layer by layer."""
    heads = check_heads(heads)
    return [(l, h) for l in range(len(heads)) for h in range(heads[l])]


def keeps_every_layer(pruned: Iterable[tuple[int, int]], heads: Sequence[int]) -> bool:
    """Whether removing the heads ``pruned`` ([(layer, head)], 0-based) leaves every layer of a network with
    ``heads`` per layer at least one head (a network without one has no output; with 2 heads per layer some
    pairs, with 3 a layer's three lowest, are not prunable)."""
    removed: dict[int, set[int]] = {}
    for layer, head in pruned:
        removed.setdefault(int(layer), set()).add(int(head))
    return all(len(removed.get(l, ())) < H for l, H in enumerate(check_heads(heads)))


def heads_of_names(names: Iterable[str]) -> tuple[int, ...]:
    """Heads per layer of the network whose heads are exactly the labels ``names`` ("(layer)head", 1-based,
    as the keys of a pruning result's ``scores``).  Raises ``ValueError`` for an unreadable label or a set of
    labels that is not every head of some architecture."""
    names = list(names)
    per_layer: dict[int, set[int]] = {}
    for name in names:
        try:
            layer, head = name.strip().removeprefix("(").split(")")
            per_layer.setdefault(int(layer), set()).add(int(head))
        except ValueError:
            raise ValueError(f"cannot read head {name!r}; expected '(layer)head' such as '(2)1'") from None
    heads = tuple(len(per_layer.get(l, ())) for l in range(1, len(per_layer) + 1))
    if not per_layer or any(per_layer.get(l) != set(range(1, H + 1)) for l, H in enumerate(heads, 1)):
        raise ValueError(f"the head labels {sorted(names)} are not every head of a network (layers 1.., heads 1..)")
    return heads


def reference_combinations(heads: Sequence[int]) -> tuple[str, ...]:
    """The reference implementation's literal head combinations for a network with ``heads`` per layer, as
    0-based "layer-head" lists ("0-1,0-3"): its two pairs and two triples for 2 x 4 heads, the 13 prefixes of its
    cumulative order (1 to 13 heads removed) for 2 x 8 heads, none for an architecture it does not prune."""
    heads = check_heads(heads)
    if heads in _REFERENCE_COMBINATIONS:
        return _REFERENCE_COMBINATIONS[heads]
    if heads in REFERENCE_CUMULATIVE_ORDER:
        order = REFERENCE_CUMULATIVE_ORDER[heads].split(",")
        return tuple(",".join(order[:k]) for k in range(1, len(order) + 1))
    return ()
