"""How what a hand-in's source declares (kata/records/declared.py) is compared with the reference's."""

from __future__ import annotations

import math

from kata.i18n import _, say
from kata.records.declared import RELATIVE, Unresolved, read

__all__ = ["Unresolved", "dropouts_problem", "losses_problem", "optimizers_problem", "read"]


# --- how the readings are compared ----------------------------------------------------------------------------


def _candidates(value) -> list:
    return list(value[1:]) if isinstance(value, list) and value[:1] == ["one of"] else [value]


def _agree(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=RELATIVE, abs_tol=0.0)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_agree(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def optimizers_problem(mine: dict, ref: dict) -> str | None:
    """Where an optimizer the hand-in's source builds differs from the reference's (None: each agrees)."""
    if not ref["optimizers"]:
        return None
    want = ref["optimizers"][0]
    if not mine["optimizers"]:
        return say("the source builds no optimizer by a name torch.optim gives it (the reference: {ref})",
                   ref=want["class"])
    for optimizer in mine["optimizers"]:
        if optimizer["class"] != want["class"]:
            return say("{where}: the source builds torch's {mine}, the reference {ref}", where=optimizer["where"],
                       mine=optimizer["class"], ref=want["class"])
        for group in optimizer["groups"]:
            for key, expected in want["groups"][0].items():
                for value in _candidates(group.get(key, expected)):
                    if not _agree(value, expected):
                        return say("{where}: the source builds {optimizer} with {key}={mine}, the reference with "
                                   "{key}={ref}", where=optimizer["where"], optimizer=optimizer["class"], key=key,
                                   mine=value, ref=expected)
    return None


def losses_problem(mine: dict, ref: dict) -> str | None:
    """A loss module the hand-in's source builds of a class the reference never builds (a loss written as a
    function builds none, and agrees)."""
    allowed = {loss["class"] for loss in ref["losses"]}
    other = [loss for loss in mine["losses"] if loss["class"] not in allowed]
    if other:
        return say("{where}: the source builds the loss {mine}, the reference {ref}", where=other[0]["where"],
                   mine=other[0]["class"], ref=", ".join(sorted(allowed)) or _("none"))
    return None


def dropouts_problem(mine: dict, ref: dict) -> str | None:
    """A dropout rate the hand-in's source declares that the reference's does not."""
    rates = [r["p"] for r in ref["dropouts"]]
    if rates and not mine["dropouts"] and not mine["unresolved"]:
        return say("the source builds no dropout by a name torch gives it (the reference: p={ref})",
                   ref=", ".join(map(str, sorted(set(rates)))))
    for dropout in mine["dropouts"]:
        for p in _candidates(dropout["p"]):
            if p is not None and not any(_agree(p, r) for r in rates):   # None: a branch without dropout
                return say("{where}: the source declares dropout with p={mine}, the reference with p={ref}",
                           where=dropout["where"], mine=p, ref=", ".join(map(str, sorted(set(rates)))))
    return None
