"""How a loader call's arguments read: each DataLoader parameter Known, Unknown or Omitted, from its
keywords, its positions, its splats, and what a loader subclass's `__init__` leaves known."""

from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst

from .model import Argument, Context, LoaderCall
from .resolve import evaluate
from .signature import ALL_PARAMETERS, POSITIONAL
from .states import OMITTED, Known, Unknown
from .subclass_init import WORKERS, SubclassInit


def read_arguments(call: cst.Call, ctx: Context, init: Optional[SubclassInit] = None) -> LoaderCall:
    """Every DataLoader parameter of a call as Known / Unknown / Omitted (``init``: a subclass's `__init__`
    may set what the call omits, and leaves known only what it says)."""
    positional: List[cst.Arg] = []
    keywords: Dict[str, cst.Arg] = {}
    star = kwsplat = False
    for arg in call.args:
        if arg.star == "*":
            star = True
        elif arg.star == "**":
            kwsplat = True  # every keyword not written may come from it
        elif arg.keyword is not None:
            keywords[arg.keyword.value] = arg
        elif not star:
            positional.append(arg)
    # A subclass's `__init__` orders its parameters its own way (MONAI's `DataLoader(dataset, num_workers=0,
    # **kwargs)`): past the dataset, a positional argument may fill any parameter not given by keyword.
    reordered = init is not None and len(positional) > 1
    args: Dict[str, Argument] = {}
    for index, name in enumerate(ALL_PARAMETERS):
        node = keywords.get(name)
        if node is None and index < len(POSITIONAL) and index < len(positional) and not (reordered and index):
            node = positional[index]
        if node is not None:
            args[name] = Argument(name, evaluate(node.value, ctx.scope), node.value, node)
        elif kwsplat or (star and name in POSITIONAL):
            args[name] = Argument(name, Unknown("may come from a splat"), via_splat=True)
        elif reordered:
            args[name] = Argument(name, Unknown("may be a positional argument of the subclass's __init__"))
        elif init is not None and name == WORKERS and init.omitted_workers is not None:
            args[name] = Argument(name, Known(init.omitted_workers), default_of=f"{init.owner}.__init__")
        elif init is not None:
            args[name] = Argument(name, Unknown("set by the subclass's __init__"))
        else:
            args[name] = Argument(name, OMITTED)
    return LoaderCall(node=call, ctx=ctx, args=args)
