"""Deprecated: the names of lipdesign 0.1.0's ``lipdesign.runtime``, deprecated since 0.2.0, removed in 0.4.0.

The sampler and the estimators are in ``lipdesign.mechanisms`` (``sampling``, ``table``, ``postprocess``). The
estimators now take (table, counts) positionally and the prior as a keyword: ``mmse_frequencies(table, counts,
prior=p)``, ``unbiased_frequencies(table, counts, prior=p)``. ``grr_table`` is gone: its table failed exact
verification for some (k, epsilon); use ``lipdesign.mechanisms.GRR(epsilon, k).full_table()``. ``counts`` is gone
(``np.bincount(reports, minlength=n_out)``, or a mechanism's ``aggregate``), and so are the helpers
``index_array`` and ``validate_table`` (lipdesign.validation has their successors).
"""

import warnings

from lipdesign.mechanisms.postprocess import norm_sub
from lipdesign.mechanisms.sampling import TablePerturber, as_generator
from lipdesign.mechanisms.table import ibu_frequencies, mmse_frequencies, posterior, unbiased_frequencies

warnings.warn("lipdesign.runtime is deprecated since 0.2.0 and will be removed in 0.4.0: import from "
              "lipdesign.mechanisms", DeprecationWarning, stacklevel=2)

__all__ = ["TablePerturber", "as_generator", "ibu_frequencies", "mmse_frequencies", "norm_sub", "posterior",
           "unbiased_frequencies"]
