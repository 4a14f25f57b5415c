"""The joint posterior mean of unary encoding and its moments (docs/math.md §7.1), by 1/S = int_0^inf e^(-tS) dt:
with S = sum_x P_x rho_x(y_x) and the bits independent, every expectation of a ratio over the 2^k reports becomes one
integral in t of a product over bits. Numpy, and scipy's adaptive quadrature of vector integrands imported when an
integral is taken (the mechanisms import numpy only)."""

import numpy as np

#: Tolerances of the adaptive quadrature.
EPSABS, EPSREL = 1e-14, 1e-11

#: Breakpoints of the integrand (ln t at 1/(P_x rho) for every bit and both of its values) are merged on a grid of
#: this spacing in ln t, so that the quadrature sees every narrow peak (a bit with b near 0 makes one) at O(1) cost.
BREAK_SPACING = 0.25


class _Bits:
    """Per bit j, under the law of a bit whose value is not the user's (1 with probability b_j; rho = u_j or v_j):
    log phi_j(t) = log E[e^(-t P_j rho_j)] and r_m,j(t) = E[rho_j^m e^(-t P_j rho_j)] / phi_j(t), computed with
    e^(-t P_j min(u_j, v_j)) factored out so that nothing underflows to 0/0."""

    def __init__(self, prior, a, b):
        self.prior, self.b = np.asarray(prior, dtype=float), np.asarray(b, dtype=float)
        a = np.asarray(a, dtype=float)
        self.u, self.v = a / self.b, (1 - a) / (1 - self.b)
        self.low = np.minimum(self.u, self.v)

    def at(self, t):
        one = self.b * np.exp(-t * self.prior * (self.u - self.low))
        zero = (1 - self.b) * np.exp(-t * self.prior * (self.v - self.low))
        total = one + zero
        log_phi = -t * self.prior * self.low + np.log(total)
        ratios = [(one * self.u**m + zero * self.v**m) / total for m in (1, 2, 3)]
        return np.exp(log_phi.sum()), ratios

    def range(self):
        """(lowest, highest, breakpoints) in s = ln t: below ``lowest`` the integrand times t is below 1e-17 of its
        scale, above ``highest`` it has decayed by e^-60 (t S >= 60 for every report, S >= sum P Lo); the
        breakpoints are ln(1/(P_x rho)) for every bit value, merged."""
        scale = np.concatenate([self.prior * self.u, self.prior * self.v, [self.prior @ self.low]])
        scale = scale[scale > 0]
        lowest = -np.log(scale.max()) - 40.0 - 3 * np.log(max(1.0, self.u.max(), self.v.max()))
        highest = np.log(60.0 / (self.prior @ self.low))
        points = np.unique(np.round(-np.log(scale) / BREAK_SPACING)) * BREAK_SPACING
        return lowest, highest, points[(points > lowest) & (points < highest)]


def _integral(bits, integrand):
    """int_0^inf integrand(t) dt as int integrand(e^s) e^s ds over the range of ``bits``, split at its breakpoints."""
    from scipy.integrate import quad_vec

    lowest, highest, points = bits.range()
    return quad_vec(lambda s: integrand(np.exp(s)) * np.exp(s), lowest, highest, epsabs=EPSABS, epsrel=EPSREL,
                    points=points)[0]


def joint_mmse_risk(prior, a, b):
    """The histogram MSE per user of the joint posterior mean at ``prior``: 1 - sum_x P_x^2 int L(t) r_2,x(t) dt,
    L = prod_j phi_j (docs/math.md §7.1)."""
    bits = _Bits(prior, a, b)

    def integrand(t):
        product, (_, second, _) = bits.at(t)
        return np.array([product * float(bits.prior**2 @ second)])

    return 1.0 - float(_integral(bits, integrand)[0])


def joint_mmse_moments(prior, a, b):
    """(first, second): k x k matrices of E[pi_v | X = x] and E[pi_v^2 | X = x] for the joint posterior pi_v =
    P_v rho_v / S (docs/math.md §7.1). Under X = x, Pr[y | x] = c(y) rho_x(y_x), so E[g | x] = E_c[rho_x g], and
    rho_x rho_v / S and rho_x rho_v^2 / S^2 = rho_x rho_v^2 int t e^(-tS) dt factorise over bits. O(k^2) per node."""
    bits = _Bits(prior, a, b)
    k = bits.prior.size

    def integrand(t):
        product, (first, second, third) = bits.at(t)
        mean = np.outer(first, first)
        np.fill_diagonal(mean, second)
        square = np.outer(first, second)
        np.fill_diagonal(square, third)
        return np.concatenate([(product * mean).ravel(), (t * product * square).ravel()])

    values = _integral(bits, integrand)
    first, second = values[:k * k].reshape(k, k), values[k * k:].reshape(k, k)
    return first * bits.prior, second * bits.prior**2
