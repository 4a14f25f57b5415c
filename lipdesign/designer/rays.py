"""Extreme rays of a notion's column cone, built directly where their form is known (docs/math.md §5)."""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from lipdesign._solvers.rays import (
    EnumerationLimitError,
    bit_patterns,
    box_slice_vertices,
    cone_extreme_rays,
    level_rays,
    staircase_rays,
)
from lipdesign.errors import ProblemTooLargeError
from lipdesign.model.prior_set import GREEDY_KINDS
from lipdesign.notions import LDP, LIP, WorstCaseLIP
from lipdesign.progress import ProgressLine

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy.typing as npt

    from lipdesign.model import Prior

#: Default cap on the number of extreme rays handed to the LP (``design(..., max_rays=...)``): past it the exact method
#: raises ProblemTooLargeError and ``method="auto"`` designs by classes or column generation.
MAX_RAYS = 200_000
#: Caps on the double description method (its cost grows with the square of its intermediate rays): intermediate
#: rays, and a budget of work in adjacency tests, so that the same input succeeds or fails on every machine
#: whatever its load (the budget takes about 30 s on the 2-core reference machine).
MAX_DD_RAYS = 20_000
DD_WORK = 3 * 10**8
#: Largest k of a double description enumeration (a latent secret or a prior set).
MAX_DD_K = 16


def _report(progress, added, left, rays, work):
    if added % 25 == 0 or left == 0:
        detail = f"{rays} rays, {work / DD_WORK:.0%} of the work budget"
        progress(ProgressLine(f"double description: {added} constraints added, at most {left} left, {detail}",
                              phase="double description", done=added, total=added + left, unit="constraints",
                              detail=detail))


def extreme_rays(prior: Prior, notion: LDP | LIP | WorstCaseLIP, max_rays: int,
                 progress: Callable[[str], object] | None = None) -> tuple[npt.NDArray[np.float64], str]:
    """The extreme rays of the column cone of ``notion`` at ``prior``, one per row (docs/math.md §5).

    Every column of an eps-private table (its entries for each input, scaled) lies in a cone; the optimal table is
    a weighting of the cone's extreme rays, which the exact method enumerates. LDP (and worst-case LIP without a
    secret): the 2^k - 2 staircases {1, e^eps}^k; LIP with G = X: the vertices of the box slice
    [e^-eps, e^eps]^k cut by P.q = 1; a bounded prior set of a greedy kind: three-level rays; otherwise a double
    description enumeration (k <= 16).

    Parameters
    ----------
    prior : Prior
        The design prior.
    notion : LIP, WorstCaseLIP or LDP
        The notion whose cone is enumerated.
    max_rays : int
        The most rays to return (``MAX_RAYS`` is the designer's default).
    progress : callable, optional
        None (the default) or a callable taking a line of text: hears about the double description's steps
        (``ProgressLine``\\ s of phase "double description", counting constraints added out of at most all of them).

    Returns
    -------
    rays : numpy.ndarray
        The extreme rays, one per row (k columns), each scaled to sum to 1 (the LDP staircases and LIP vertices)
        or as the enumeration gives it.
    description : str
        How they were found, with its docs/math.md section.

    Raises
    ------
    ProblemTooLargeError
        Before the expensive work, when more than ``max_rays`` rays would be needed, when the double description
        exceeds its budget of rays or work, or past k = 16 with a latent secret or a prior set.

    Examples
    --------
    >>> import lipdesign as ld
    >>> import numpy as np
    >>> from lipdesign.designer import MAX_RAYS, extreme_rays
    >>> rays, description = extreme_rays(ld.Prior([0.5, 0.3, 0.2]), ld.LDP(1.0), MAX_RAYS)
    >>> rays.shape, description
    ((6, 3), 'LDP staircase rays {1, e^eps}^k (docs/math.md §5)')
    >>> rays, description = extreme_rays(ld.Prior([0.5, 0.3, 0.2]), ld.LIP(1.0), MAX_RAYS)
    >>> rays.shape
    (4, 3)
    >>> extreme_rays(ld.Prior(np.full(20, 0.05)), ld.LDP(1.0), 1000)
    Traceback (most recent call last):
    ...
    lipdesign.errors.ProblemTooLargeError: k is 20; exact LDP design needs 2^k - 2 = 1048574 extreme rays ...
    """
    k, e = prior.k, math.exp(notion.epsilon)
    if isinstance(notion, LDP) or isinstance(notion, WorstCaseLIP) and notion.secret is None:
        if 2**k - 2 > max_rays:
            raise ProblemTooLargeError(
                f"k is {k}; exact LDP design needs 2^k - 2 = {2**k - 2} extreme rays (limit max_rays={max_rays})")
        return staircase_rays(k, e), "LDP staircase rays {1, e^eps}^k (docs/math.md §5)"
    if isinstance(notion, LIP) and notion.secret is None and notion.prior_set is None:
        if k * 2 ** (k - 1) > 16 * max_rays:
            raise ProblemTooLargeError(
                f"k is {k}; exact LIP design would examine k 2^(k-1) = {k * 2 ** (k - 1)} candidate rays "
                f"(limit max_rays={max_rays})")
        vertices = box_slice_vertices(prior.probabilities, np.full(k, 1 / e), np.full(k, e))
        if len(vertices) > max_rays:
            raise ProblemTooLargeError(
                f"k is {k}; exact LIP design needs {len(vertices)} extreme rays (limit max_rays={max_rays})")
        return vertices / vertices.sum(axis=1, keepdims=True), "LIP box-slice vertices (docs/math.md §5)"
    prior_set: Any = getattr(notion, "prior_set", None)  # not None where read: LIP without one returned above
    if isinstance(notion, LIP) and notion.secret is None and prior_set.kind in GREEDY_KINDS:
        if 3**k // 2 > max_rays:  # about 3^k / 2 candidates survive (observed at k = 10-13)
            raise ProblemTooLargeError(f"k is {k}; exact BP-LIP design would need about 3^k / 2 = {3**k // 2} "
                                       f"candidate rays (limit max_rays={max_rays})")
        masses = prior_set.vertices @ bit_patterns(k).T  # P(A) for every vertex P and subset A
        rays = level_rays(e, masses.min(axis=0), masses.max(axis=0))
        if len(rays) > max_rays:
            raise ProblemTooLargeError(
                f"k is {k}; exact BP-LIP design needs {len(rays)} candidate rays (limit max_rays={max_rays})")
        return rays, f"BP-LIP three-level rays over a {prior_set.kind} (docs/math.md §5)"
    rows = notion.constraint_rows(prior)
    if k > MAX_DD_K:
        raise ProblemTooLargeError(f"k is {k}; exact design with a latent secret or a prior set is limited to "
                                   f"k <= {MAX_DD_K}")
    try:
        rays = cone_extreme_rays(rows, max_rays=min(max_rays, MAX_DD_RAYS), max_work=DD_WORK,
                                 progress=None if progress is None else partial(_report, progress))
    except EnumerationLimitError as error:  # too many rays, too much work, or numerical trouble
        raise ProblemTooLargeError(
            f"k is {k}; exact {notion.kind} design with {len(rows)} cone constraints is too large for extreme-ray "
            f"enumeration ({error}); use fewer values, fewer prior-set vertices or a smaller secret") from None
    return rays, f"double description over {len(rows)} cone constraints (docs/math.md §5)"
