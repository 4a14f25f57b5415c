"""lipdesign.runtime: perturb and estimate with a finite table, importing numpy only.

A device or an ingestion job can use this subpackage without scipy, cvxpy or any other part of the design
tool chain: it imports only numpy, the standard library and ``lipdesign.errors``.

- ``TablePerturber(table).perturb(values, rng)``: alias-table sampling, one uniform per value (MATH §1).
- ``counts(reports, n_out)``: the report histogram every estimator takes.
- ``posterior``, ``mmse_frequencies`` (MATH §4), ``unbiased_frequencies`` (GLS/OLS inversion, MATH §4, §8),
  ``ibu_frequencies`` (EM, MATH §4), ``norm_sub`` (consistency, MATH §8), ``grr_table`` (baseline, MATH §8).
"""

from lipdesign.runtime.estimate import (
    grr_table,
    ibu_frequencies,
    mmse_frequencies,
    norm_sub,
    posterior,
    unbiased_frequencies,
)
from lipdesign.runtime.perturb import TablePerturber, as_generator, counts, index_array, validate_table

__all__ = [
    "TablePerturber",
    "as_generator",
    "counts",
    "grr_table",
    "ibu_frequencies",
    "index_array",
    "mmse_frequencies",
    "norm_sub",
    "posterior",
    "unbiased_frequencies",
    "validate_table",
]
