"""Extreme rays of a notion's column cone, built directly where their form is known (docs/math.md §5)."""

import math
from functools import partial

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

#: Default cap on the number of extreme rays handed to the LP.
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


def extreme_rays(prior, notion, max_rays, progress=None):
    """(rays, description): the extreme rays of the column cone of ``notion`` at ``prior``, one per row.

    LDP (and worst-case LIP without a secret): the 2^k - 2 staircases {1, e^eps}^k; LIP with G = X: the vertices
    of the box slice [e^-eps, e^eps]^k cut by P.q = 1; otherwise a double description enumeration. Raises
    ProblemTooLargeError before the expensive work when more than ``max_rays`` rays would be needed. ``progress``
    (None or a callable taking a line of text) hears about the double description's steps (``ProgressLine``\\ s of
    phase "double description", counting constraints added out of at most all of them).
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
    prior_set = getattr(notion, "prior_set", None)
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
