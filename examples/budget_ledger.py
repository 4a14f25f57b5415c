"""Repeated collection under a per-user budget (docs/math.md §13): how many reports a user may send.

Run: ``python examples/budget_ledger.py``. Under LDP the budgets add, so a total of 4 takes four eps = 1 reports.
Under LIP they do not: two eps = 1 LIP reports of the same value can be 2.7-LIP jointly, so the ledger counts the
joint epsilon of the releases (exact from the product table while it is small, a safe bound beyond).
"""

import math

import lipdesign as ld
from lipdesign.mechanisms import GRR

# A binary question ("did you use the app today?"), last survey's answer rate as the prior: 1 / (1 + e).
prior = ld.Prior([1 / (1 + math.e), 1 - 1 / (1 + math.e)], labels=["yes", "no"])
lip_design = ld.design(prior, ld.LIP(epsilon=1.0))
grr = GRR(epsilon=1.0, k=2)

print("Joint release of two reports of the same answer:")
for name, mechanism in (("eps = 1 LDP (GRR)", grr), ("eps = 1 LIP design", lip_design)):
    certificate = ld.compose([mechanism, mechanism])
    print(f"  {name}: joint {certificate.notion} epsilon {certificate.epsilon:.4f} ({certificate.method})")

print("\nA user's budget, LDP total 4:")
ledger = ld.Ledger(ld.LDP(4.0))
print(f"  GRR eps = 1 reports allowed: {ledger.reports_allowed(grr)}")
for day in range(1, 5):
    ledger.spend(grr)
    print(f"  day {day}: spent {ledger.spent:.10f}, remaining {ledger.remaining:.10f}, "
          f"{ledger.reports_allowed(grr)} more allowed")
try:
    ledger.spend(grr)
except ld.ValidationError as error:
    print(f"  day 5 refused: {error}")

print("\nA user's budget, LIP total 4 at the survey prior:")
ledger = ld.Ledger(ld.LIP(4.0))
print(f"  LIP eps = 1 design reports allowed: {ledger.reports_allowed(lip_design)} (not 4: LIP budgets do not add)")
for day in (1, 2):
    certificate = ledger.spend(lip_design)
    print(f"  day {day}: joint LIP epsilon {certificate.epsilon:.4f} ({certificate.method})")
print(f"  a third report would reach {ledger.joint([*ledger.releases, lip_design]).epsilon:.4f} > 4")
print(f"  GRR eps = 1 reports still allowed: {ledger.reports_allowed(grr)} (GRR's privacy table is a reduction: "
      f"{ledger.joint([*ledger.releases, grr]).method})")
