"""Verification: the tightest epsilon of a finite privacy table, exactly in rational arithmetic or in floating
point, and composition of certified parts (docs/math.md §2-§3). Standard library and numpy only: no scipy and no
networkx on this path."""

from lipdesign.verification.exact import (
    FLOAT_SLACK,
    Certificate,
    check_table,
    compose,
    exp_bounds,
    log_upper,
    tightest,
    verify_table,
)

__all__ = ["FLOAT_SLACK", "Certificate", "check_table", "compose", "exp_bounds", "log_upper", "tightest",
           "verify_table"]
