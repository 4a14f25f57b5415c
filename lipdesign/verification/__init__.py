"""Verification: the tightest epsilon of a finite privacy table, exactly in rational arithmetic or in floating
point, and the composition of releases with a per-user budget ledger (docs/math.md §2-§3, §13). Standard library
and numpy only: no scipy and no networkx on this path."""

from lipdesign.verification.composition import (
    MAX_JOINT_ENTRIES,
    JointCertificate,
    Ledger,
    compose,
    sampled,
    sequential,
)
from lipdesign.verification.exact import (
    FLOAT_SLACK,
    Certificate,
    check_table,
    exp_bounds,
    log_upper,
    tightest,
    verify_table,
)

__all__ = ["FLOAT_SLACK", "MAX_JOINT_ENTRIES", "Certificate", "JointCertificate", "Ledger", "check_table",
           "compose", "exp_bounds", "log_upper", "sampled", "sequential", "tightest", "verify_table"]
