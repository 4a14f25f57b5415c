"""The unary-encoding designs under eps-LIP (docs/math.md §7.1). The unbiased one, for X, a latent secret or X over
a prior set's vertices: a convex program in (alpha, beta) = (u - 1, 1 - v), u = a/b, v = (1 - a)/(1 - b), solved
by a barrier method whose Newton steps cost O(k) for X (block-diagonal 2 x 2 blocks plus a rank-4 correction, by
the Woodbury identity; rank 2m for a secret of m values, 4V for V vertices), certified by m/t or, where the
objective is not convex, by the Lagrange dual. The Bayesian one: local minima of the per-bit MMSE (SLSQP).
Numpy, and scipy for the Bayesian search.

    minimise  sum_j 1/(alpha_j beta_j) + P_j/beta_j - P_j/alpha_j - P_j     (n x sum Var of the unbiased estimate)
    s.t.      alpha_x (1 - e P_x) - e P_x beta_x + e P . beta <= e - 1      (upper LIP side at x)
              (e - P_x) beta_x - P_x alpha_x + P . alpha <= e - 1           (lower LIP side at x)
              alpha > 0, 0 < beta < 1                                        (a > b, both in (0, 1))

The objective is convex where max P <= 3/4 (the determinant of its 2 x 2 Hessian block is
[4 (1 - P beta)(1 + P alpha) - 1]/(alpha beta)^4, positive since beta < 1), so the barrier method's result is then
the global optimum, within the duality gap m/t of its last centred point.
"""

from dataclasses import dataclass

import numpy as np

#: Barrier growth per centering, Newton tolerance (half the squared decrement), and the caps on the loops.
GROWTH = 20.0
NEWTON_TOLERANCE = 1e-12
#: A centring whose line search can no longer lower the barrier function (rounding, at large t) counts as centred
#: when half its squared Newton decrement is below this (the point is then within about that of the centre).
STALL_TOLERANCE = 1e-6
#: Rounds of iterative refinement of each Newton step.
REFINEMENTS = 2
MAX_NEWTON = 80
MAX_CENTERINGS = 60
#: Centrings in a row that may fail (Newton steps exhausted, at large t where rounding dominates) before the
#: method stops at its last centred point.
MAX_FAILURES = 3

#: A design whose certified gap is at most this fraction of its value, or at most ACCEPTED_ABSOLUTE (n x sum Var:
#: a variance no sample can resolve; designs whose every value may be released have optima near 0), is accepted.
ACCEPTED_GAP = 1e-5
ACCEPTED_ABSOLUTE = 1e-6


def _accepted(gap, value):
    return gap <= max(ACCEPTED_GAP * value, ACCEPTED_ABSOLUTE)

#: With a latent secret, u_x = 1 + alpha_x is capped here (b_x >= about beta_x / ALPHA_CAP): a bit that no LIP
#: row limits would otherwise tend to b_x = 0; the cap adds (1/beta_x - P_x)/ALPHA_CAP to that value's variance.
ALPHA_CAP = 1e6

#: The largest prior probability at which the objective is convex (docs/math.md §7.1).
CONVEX_MAX_PRIOR = 0.75

#: The Lagrange bound searches beta on this many points (geometric, 1e-12..1) where the objective is not convex, and
#: refines every inner minimum by this many golden-section steps.
BETA_GRID = 4096
GOLDEN_STEPS = 80


@dataclass(frozen=True)
class UnaryDesign:
    alpha: np.ndarray
    beta: np.ndarray
    value: float  # n x sum Var of the unbiased estimate at the prior, given the users' values
    gap: float  # m/t at the last centring that converged
    converged: bool  # value - bound accepted (``_accepted``)
    bound: float  # a lower bound on the optimum: value - gap where the objective is convex, else the Lagrange dual


def objective(alpha, beta, prior, weights=1.0):
    """n x sum Var of the unbiased UE estimate at the prior, given the users' values (docs/math.md §7.1), each value's
    term times its weight (docs/math.md §16.6: a sketch's bucket counts as many times as it holds candidates)."""
    return float(np.sum(weights * (1.0 / (alpha * beta) + prior / beta - prior / alpha - prior)))


def bit_probabilities(alpha, beta):
    """(a, b) from (alpha, beta): b = beta/(alpha + beta), a = (1 + alpha) b."""
    b = beta / (alpha + beta)
    return (1.0 + alpha) * b, b


class _ValueRows:
    """The LIP rows of G = X (docs/math.md §7.1): at each x, a local part in (alpha_x, beta_x) plus a part shared by
    every row, e P . beta (upper side) or P . alpha (lower side). 2k rows whose Hessian is block-diagonal plus
    rank 4."""

    def __init__(self, prior, e):
        self.prior, self.e = prior, e
        self.count = 2 * prior.size
        k = prior.size
        self.local_u = np.column_stack([1 - e * prior, -e * prior])
        self.local_l = np.column_stack([-prior, e - prior])
        self.shared_u = np.concatenate([np.zeros(k), e * prior])
        self.shared_l = np.concatenate([prior, np.zeros(k)])

    def slacks(self, alpha, beta):
        prior, e = self.prior, self.e
        upper = e - 1 - (alpha * (1 - e * prior) - e * prior * beta + e * (prior @ beta))
        lower = e - 1 - ((e - prior) * beta - prior * alpha + prior @ alpha)
        return [upper, lower]

    def changes(self, step_alpha, step_beta):
        prior, e = self.prior, self.e
        return [-(step_alpha * (1 - e * prior) - e * prior * step_beta + e * (prior @ step_beta)),
                -((e - prior) * step_beta - prior * step_alpha + prior @ step_alpha)]

    def lagrangian(self, alpha, beta, t):
        """(c_alpha, c_beta, constant): sum_rows lambda_r (row_r . z - h_r) with lambda = 1/(t slack)."""
        upper, lower = self.slacks(alpha, beta)
        lu, ll = 1 / (t * upper), 1 / (t * lower)
        prior, e = self.prior, self.e
        c_alpha = lu * (1 - e * prior) - ll * prior + ll.sum() * prior
        c_beta = -lu * e * prior + lu.sum() * e * prior + ll * (e - prior)
        return c_alpha, c_beta, -(lu.sum() + ll.sum()) * (e - 1)

    def hessian_terms(self, alpha, beta):
        """(gradient, (h_aa, h_bb, h_ab), factors U, middle M) of the rows' log barriers: their gradient, the
        block-diagonal part of their Hessian and its low-rank part U M U^T."""
        upper, lower = self.slacks(alpha, beta)
        gradient, blocks, columns, middle = 0.0, [0.0, 0.0, 0.0], [], []
        for w, local, shared in ((1 / upper, self.local_u, self.shared_u), (1 / lower, self.local_l, self.shared_l)):
            gradient = gradient + np.concatenate([w * local[:, 0], w * local[:, 1]]) + w.sum() * shared
            blocks = [blocks[0] + w**2 * local[:, 0] ** 2, blocks[1] + w**2 * local[:, 1] ** 2,
                      blocks[2] + w**2 * local[:, 0] * local[:, 1]]
            # L c^T + c L^T + (sum w^2) c c^T with L = sum_x w_x^2 l_x (placed at x) and c the shared part
            columns += [np.concatenate([w**2 * local[:, 0], w**2 * local[:, 1]]), shared]
            middle.append(np.array([[0.0, 1.0], [1.0, float(np.sum(w**2))]]))
        full = np.zeros((4, 4))
        full[:2, :2], full[2:, 2:] = middle
        return gradient, blocks, np.column_stack(columns), full


class _SecretRows:
    """The LIP rows of a latent secret G (docs/math.md §7.1): for each secret value g and side, one dense row of
    A (alpha; beta) <= h (2m rows, so the Hessian's low-rank part has rank 2m), and the cap alpha_x <= ALPHA_CAP: a
    value whose bit no row limits (its release keeps G's posterior within e^+-eps) would otherwise go to b_x = 0."""

    def __init__(self, rows, bounds):
        self.rows, self.bounds = rows, bounds
        self.k = rows.shape[1] // 2
        self.count = rows.shape[0] + self.k

    def slacks(self, alpha, beta):
        return [self.bounds - self.rows @ np.concatenate([alpha, beta]), ALPHA_CAP - alpha]

    def changes(self, step_alpha, step_beta):
        return [-(self.rows @ np.concatenate([step_alpha, step_beta])), -step_alpha]

    def lagrangian(self, alpha, beta, t):
        slack, cap = self.slacks(alpha, beta)
        weights, cap_weights = 1 / (t * slack), 1 / (t * cap)
        c = self.rows.T @ weights
        return c[:self.k] + cap_weights, c[self.k:], -(weights @ self.bounds) - cap_weights.sum() * ALPHA_CAP

    def hessian_terms(self, alpha, beta):
        slack, cap = self.slacks(alpha, beta)
        w, zeros = 1 / slack, np.zeros(self.k)
        gradient = self.rows.T @ w + np.concatenate([1 / cap, zeros])
        return gradient, [1 / cap**2, zeros, zeros], self.rows.T * w, np.eye(self.rows.shape[0])


class _Stacked:
    """The rows of several row sets at once (BP-LIP: the value rows at every vertex of a prior set, docs/math.md
    §7.1): their slacks, changes and Lagrangian side by side; Hessian blocks added, low-rank parts stacked."""

    def __init__(self, parts):
        self.parts = parts
        self.count = sum(part.count for part in parts)

    def slacks(self, alpha, beta):
        return [slack for part in self.parts for slack in part.slacks(alpha, beta)]

    def changes(self, step_alpha, step_beta):
        return [change for part in self.parts for change in part.changes(step_alpha, step_beta)]

    def lagrangian(self, alpha, beta, t):
        terms = [part.lagrangian(alpha, beta, t) for part in self.parts]
        return tuple(sum(term[i] for term in terms) for i in range(3))

    def hessian_terms(self, alpha, beta):
        terms = [part.hessian_terms(alpha, beta) for part in self.parts]
        gradient = sum(term[0] for term in terms)
        blocks = [sum(term[1][i] for term in terms) for i in range(3)]
        factors = np.hstack([term[2] for term in terms])
        middle = np.zeros((factors.shape[1], factors.shape[1]))
        start = 0
        for term in terms:
            size = term[3].shape[0]
            middle[start:start + size, start:start + size] = term[3]
            start += size
        return gradient, blocks, factors, middle


def secret_rows(prior, conditional, epsilon):
    """(A, h) of eps-LIP for the secret with T[g, x] = Pr[X = x | G = g] (docs/math.md §7.1): with a >= b the worst
    report for g's upper side puts u_x where c_x = T[g, x] - e P_x >= 0 and v_x elsewhere, so
    sum_x c_x^+ alpha_x - c_x^- beta_x <= -sum_x c_x = e - 1; the lower side likewise with d = e^-eps P - T[g]."""
    e = float(np.exp(epsilon))
    rows, bounds = [], []
    for coefficients in (conditional - e * prior, prior / e - conditional):
        positive, negative = np.maximum(coefficients, 0.0), np.minimum(coefficients, 0.0)
        rows.append(np.hstack([positive, -negative]))
        bounds.append(-coefficients.sum(axis=1))
    return np.vstack(rows), np.concatenate(bounds)


def _barrier(alpha, beta, prior, rows, t, weights):
    slacks = rows.slacks(alpha, beta)
    if any((slack <= 0).any() for slack in slacks) or (alpha <= 0).any() or (beta <= 0).any() or (beta >= 1).any():
        return np.inf
    return (t * objective(alpha, beta, prior, weights) - sum(np.log(slack).sum() for slack in slacks)
            - np.log(alpha).sum()
            - np.log(beta).sum() - np.log1p(-beta).sum())


def _feasible_step(alpha, beta, step_alpha, step_beta, rows):
    """The largest step in (0, 1] that keeps every slack positive (0.99 of the distance to the boundary)."""
    size = 1.0
    pairs = list(zip(rows.slacks(alpha, beta), rows.changes(step_alpha, step_beta)))
    for slack, change in pairs + [(alpha, step_alpha), (beta, step_beta), (1 - beta, -step_beta)]:
        falling = change < 0
        if falling.any():
            size = min(size, 0.99 * float(np.min(slack[falling] / -change[falling])))
    return size


def _newton_step(alpha, beta, prior, rows, t, weights):
    """(d_alpha, d_beta, decrement^2) of the barrier function: the Hessian is block-diagonal (one 2 x 2 block per
    value: the objective, the bounds and each row's own entries) plus the rows' low-rank part, inverted by the
    Woodbury identity in O(k r^2) for a part of rank r (4 for G = X, 2m for a secret of m values)."""
    k = prior.size
    row_gradient, (r_aa, r_bb, r_ab), factors, coupling = rows.hessian_terms(alpha, beta)
    # gradient of t F + barriers, in the order (alpha, beta)
    tw = t * weights
    grad_alpha = tw * (-1 / (alpha**2 * beta) + prior / alpha**2) - 1 / alpha
    grad_beta = tw * (-1 / (alpha * beta**2) - prior / beta**2) - 1 / beta + 1 / (1 - beta)
    gradient = np.concatenate([grad_alpha, grad_beta]) + row_gradient
    h_aa = tw * (2 / (alpha**3 * beta) - 2 * prior / alpha**3) + 1 / alpha**2 + r_aa
    h_bb = tw * (2 / (alpha * beta**3) + 2 * prior / beta**3) + 1 / beta**2 + 1 / (1 - beta) ** 2 + r_bb
    h_ab = tw / (alpha**2 * beta**2) + r_ab
    solve_block = _block_solver(h_aa, h_bb, h_ab)
    scaled = solve_block(factors)
    capacitance = np.linalg.inv(coupling) + factors.T @ scaled

    def solve(vector):  # (D + U M U^T)^-1 vector by the Woodbury identity
        return solve_block(vector) - scaled @ np.linalg.solve(capacitance, scaled.T @ vector)

    def multiply(vector):  # (D + U M U^T) vector, exactly
        top, bottom = vector[:k], vector[k:]
        block = np.concatenate([h_aa * top + h_ab * bottom, h_ab * top + h_bb * bottom])
        return block + factors @ (coupling @ (factors.T @ vector))

    step = -solve(gradient)
    for _ in range(REFINEMENTS):  # the capacitance cancels at large t: iterative refinement restores the step
        step -= solve(multiply(step) + gradient)
    return step[:k], step[k:], abs(float(step @ multiply(step)))


def design_unary(prior, epsilon, tolerance=1e-10, conditional=None, vertices=None, weights=None):
    """The unbiased-UE design of docs/math.md §7.1 at ``prior`` (all entries positive) and ``epsilon``, for X itself
    or, with ``conditional`` (T[g, x] = Pr[X = x | G = g], rows summing to 1), for a latent secret G, or, with
    ``vertices`` (priors, one per row), for X at every prior of their convex hull (BP-LIP). ``weights`` (>= 0, one
    per value; default 1) weigh each value's variance in the objective (docs/math.md §16.6)."""
    prior = np.asarray(prior, dtype=float)
    weights = np.ones(prior.size) if weights is None else np.asarray(weights, dtype=float)
    k, e = prior.size, float(np.exp(epsilon))
    rows: _Stacked | _SecretRows | _ValueRows
    if vertices is not None:
        rows = _Stacked([_ValueRows(np.asarray(vertex, dtype=float), e) for vertex in vertices])
    elif conditional is not None:
        rows = _SecretRows(*secret_rows(prior, conditional, epsilon))
    else:
        rows = _ValueRows(prior, e)
    # symmetric and strictly feasible: both sides hold with room at every x, hence for every secret (a mixture)
    start = 0.5 * (e - 1) / (e + 1)
    alpha, beta = np.full(k, start), np.full(k, start)
    constraints = rows.count + 3 * k  # the LIP rows and three bounds per value
    t = constraints / max(objective(alpha, beta, prior, weights), 1e-300)
    gap, kept, failures = np.inf, (alpha, beta), 0  # m/t at the last centred point, and that point
    for _ in range(MAX_CENTERINGS):
        centred, stalled = False, False
        for _ in range(MAX_NEWTON):
            step_alpha, step_beta, decrement = _newton_step(alpha, beta, prior, rows, t, weights)
            if decrement / 2 < NEWTON_TOLERANCE:  # the decrement is affine-invariant: no scale to take out
                centred = True
                break
            size = _feasible_step(alpha, beta, step_alpha, step_beta, rows)
            base = _barrier(alpha, beta, prior, rows, t, weights)
            while size > 1e-14:
                trial_alpha, trial_beta = alpha + size * step_alpha, beta + size * step_beta
                if _barrier(trial_alpha, trial_beta, prior, rows, t, weights) <= base - 0.01 * size * decrement:
                    break
                size /= 2
            else:  # no step lowers the barrier function measurably: rounding has the last word at this t
                centred, stalled = decrement / 2 < STALL_TOLERANCE, True
                break
            alpha, beta = trial_alpha, trial_beta
        if centred:
            gap, kept, failures = constraints / t, (alpha, beta), 0
            if stalled or gap < tolerance * objective(alpha, beta, prior, weights):
                break
        else:  # go on from here (a later centring may succeed), but only a centred point certifies its gap
            failures += 1
            if failures == MAX_FAILURES or _accepted(gap, objective(*kept, prior, weights)):
                break  # (once the kept point is accepted, rounding-bound centrings only cost time)
        t *= GROWTH
    alpha, beta = kept
    value = objective(alpha, beta, prior, weights)
    if prior.max() <= CONVEX_MAX_PRIOR:
        bound = value - gap
    else:  # the m/t gap needs convexity; weak duality does not
        bound = -np.inf if not np.isfinite(gap) else lagrange_bound(prior, alpha, beta, rows, constraints / gap,
                                                                     weights)
    return UnaryDesign(alpha, beta, value, gap, bool(_accepted(value - bound, value)), bound)


def lagrange_bound(prior, alpha, beta, rows, t, weights=1.0):
    """The Lagrange dual at the barrier's multipliers 1/(t slack) of the LIP rows (docs/math.md §7.1): a lower bound
    on the optimum by weak duality, convex objective or not. The Lagrangian is separable over values; for each, the
    minimum over alpha > 0 of (1/beta - P)/alpha + c_alpha alpha is 2 sqrt((1/beta - P) c_alpha), and beta in (0, 1]
    is searched: by golden section where P <= 3/4 (the partial minimum is then convex in beta), and on a grid of
    BETA_GRID points refined by golden section around its best point otherwise. With ``weights`` w, the value's
    terms are w (1/beta - P)/alpha + w (P/beta - P), so the minimum over alpha is 2 sqrt(w (1/beta - P) c_alpha)."""
    c_alpha, c_beta, constant = rows.lagrangian(alpha, beta, t)
    weights = np.broadcast_to(np.asarray(weights, dtype=float), prior.shape)
    if (c_alpha <= 0).any():
        return -np.inf

    def inner(b, p, ca, cb, w):
        return 2 * np.sqrt(w * (1 / b - p) * ca) + w * (p / b - p) + cb * b

    low, high = np.full(prior.size, 1e-15), np.ones(prior.size)
    wide = prior > CONVEX_MAX_PRIOR
    if wide.any():
        grid = np.geomspace(1e-12, 1.0, BETA_GRID)
        values = inner(grid[None, :], prior[wide, None], c_alpha[wide, None], c_beta[wide, None], weights[wide, None])
        best = values.argmin(axis=1)
        low[wide], high[wide] = grid[np.maximum(best - 1, 0)], grid[np.minimum(best + 1, BETA_GRID - 1)]
    ratio = (np.sqrt(5) - 1) / 2
    for _ in range(GOLDEN_STEPS):  # golden section on [low, high], all values at once
        left, right = high - ratio * (high - low), low + ratio * (high - low)
        lower = inner(left, prior, c_alpha, c_beta, weights) < inner(right, prior, c_alpha, c_beta, weights)
        high, low = np.where(lower, right, high), np.where(lower, low, left)
    inner_min = np.minimum(inner((low + high) / 2, prior, c_alpha, c_beta, weights),
                           inner(1.0, prior, c_alpha, c_beta, weights))
    return float(inner_min.sum() + constant)


def _block_solver(h_aa, h_bb, h_ab):
    """x -> D^-1 x for D block-diagonal with the 2 x 2 blocks [[h_aa, h_ab], [h_ab, h_bb]] on (alpha_j, beta_j)."""
    k = h_aa.size
    det = h_aa * h_bb - h_ab**2

    def solve(vectors):
        vectors = np.asarray(vectors, dtype=float)
        flat = vectors.ndim == 1
        vectors = vectors[:, None] if flat else vectors
        top, bottom = vectors[:k], vectors[k:]
        out = np.concatenate([(h_bb[:, None] * top - h_ab[:, None] * bottom) / det[:, None],
                              (h_aa[:, None] * bottom - h_ab[:, None] * top) / det[:, None]])
        return out[:, 0] if flat else out

    return solve


def per_bit_mmse(alpha, beta, prior):
    """sum_j of the MSE of E[B_j | Y_j] (docs/math.md §7.1): P(1-P) - P^2 (1-P)^2 alpha beta /
    ((1 + P alpha)(1 - P beta)) per bit; alpha = beta = 0 is an uninformative bit (a = b)."""
    q = prior * (1 - prior)
    return float(np.sum(q - q**2 * alpha * beta / ((1 + prior * alpha) * (1 - prior * beta))))


def per_bit_mmse_candidates(prior, epsilon, starts):
    """Each feasible (alpha, beta) of ``starts`` and the local minimum of ``per_bit_mmse`` SLSQP reaches from it
    under eps-LIP for X (the rows of docs/math.md §7.1 as a dense linear program): the objective is not convex,
    so these are candidates for the caller to score, not a certified optimum. A point counts as feasible within
    1e-9 of the rows' scale (e^eps - 1): the exact verification of the realised bits decides in the end."""
    from scipy.optimize import LinearConstraint, minimize

    k, e = prior.size, float(np.exp(epsilon))
    rows = np.zeros((2 * k, 2 * k))
    rows[:k, :k] = np.diag(1 - e * prior)
    rows[:k, k:] = np.diag(-e * prior) + e * prior[None, :]
    rows[k:, :k] = np.diag(-prior) + prior[None, :]
    rows[k:, k:] = np.diag(e - prior)
    q = prior * (1 - prior)

    def value_and_gradient(z):
        alpha, beta = z[:k], z[k:]
        top, a_part, b_part = q**2 * alpha * beta, 1 + prior * alpha, 1 - prior * beta
        ratio = top / (a_part * b_part)
        d_alpha = -(q**2 * beta / (a_part * b_part) - ratio * prior / a_part)
        d_beta = -(q**2 * alpha / (a_part * b_part) + ratio * prior / b_part)
        return float(np.sum(q - ratio)), np.concatenate([d_alpha, d_beta])

    bounds = [(0.0, None)] * k + [(0.0, 1.0 - 1e-9)] * k
    constraint = LinearConstraint(rows, -np.inf, np.full(2 * k, e - 1))
    candidates = []
    for alpha, beta in starts:
        result = minimize(value_and_gradient, np.concatenate([alpha, beta]), jac=True, method="SLSQP",
                          bounds=bounds, constraints=[constraint], options={"maxiter": 500, "ftol": 1e-13})
        for z in (np.concatenate([alpha, beta]), np.clip(result.x, 0.0, None)):
            if (rows @ z <= (e - 1) * (1 + 1e-9)).all():
                candidates.append((z[:k], np.minimum(z[k:], 1.0 - 1e-9)))
    return candidates
