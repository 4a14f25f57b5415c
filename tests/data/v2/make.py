"""Writes tests/data/v2: files written by lipdesign 0.2.0, with seeded reports and estimates, for the legacy test."""
import sys
from pathlib import Path

import numpy as np

import lipdesign as ld
from lipdesign.mechanisms import families, family_class

out = Path(sys.argv[1])
assert ld.__version__ == "0.2.0", ld.__version__
prior = ld.Prior([0.4, 0.25, 0.2, 0.1, 0.05], labels=["a", "b", "c", "d", "e"])
mechanisms = {f"{family}-example": family_class(family).example() for family in families()}
mechanisms.update({
    "design-rr-lip": ld.design(prior, ld.LIP(1.0)),
    "design-rr-ldp-mean": ld.design(prior, ld.LDP(1.0), ld.Mean([0, 1, 2, 3, 4])),
    "design-rr-secret": ld.design(ld.Prior([0.3, 0.15, 0.15, 0.2, 0.2]), ld.LIP(0.8, secret=ld.SecretModel([[0.5, 0.2, 0.1, 0.1, 0.1], [0.1, 0.1, 0.2, 0.3, 0.3]], [0.5, 0.5]))),
    "design-rr-prior-set": ld.design(prior, ld.LIP(1.0, prior_set=ld.PriorSet.tv_ball(prior.probabilities, 0.05))),
    "design-unary": ld.design(prior, ld.LIP(1.0), family="unary"),
    "design-hashing": ld.design(prior, ld.LIP(1.0), family="hashing"),
    "design-hashing-pooled": ld.design(prior, ld.LIP(1.0), family="hashing", buckets=3),
    "design-subset-lip": ld.design(ld.Prior(np.full(6, 1 / 6)), ld.LIP(1.0)),
    "design-subset": ld.design(ld.Prior(np.full(6, 1 / 6)), ld.LDP(1.0)),
    "design-classes": ld.design(ld.Prior([0.3, 0.3, 0.1, 0.1, 0.1, 0.1]), ld.LIP(1.0), method="classes"),
})
runs = {}
for name, mechanism in mechanisms.items():
    mechanism.to_json(out / f"{name}.json")
    mechanism = ld.load(out / f"{name}.json")  # the record is what a user of 0.2.0 gets from the file
    values = mechanism.input_domain.sample(500, np.random.default_rng(1))
    ids = np.arange(500) if mechanism.uses_user_ids else None
    reports = mechanism.perturb(values, rng=7, user_ids=ids)
    if reports.dtype.names:  # structured reports: each field
        for field in reports.dtype.names:
            runs[f"{name}/reports/{field}"] = reports[field]
    else:
        runs[f"{name}/reports"] = reports
    runs[f"{name}/values"] = np.asarray(values, dtype=float) if np.asarray(values).dtype.kind in "fiu" else np.asarray(values)
    estimate = mechanism.estimate(mechanism.aggregate(reports))
    runs[f"{name}/estimate"] = np.hstack(estimate).astype(float) if isinstance(estimate, list) else np.asarray(estimate, dtype=float)
np.savez_compressed(out / "runs.npz", **runs)
print(len(mechanisms), "files")
