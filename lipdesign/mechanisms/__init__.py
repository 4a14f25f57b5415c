"""Mechanisms on the one contract (``lipdesign.mechanisms.base``): perturb, aggregate, estimate, numpy only.

One module per family, named as the field names it: ``table`` (designed and loaded tables, family "table"), ``rr``
(binary randomized response, GRR), ``oue`` (OUE), ``unary_encoding`` (unary encoding designed under LIP, family
"unary"), ``olh`` (OLH), ``local_hashing`` (local hashing designed under LIP, family "hashing"), ``hadamard``
(Hadamard response), ``harmony_categorical`` (Harmony's categorical mechanism), ``numeric`` (Laplace, Duchi,
Harmony's numeric mechanism), ``piecewise`` (Piecewise, Hybrid), ``harmony_mixed`` (Harmony's mixed tuples),
``multi_attribute`` (SPL, SMP and RS+FD over several categorical attributes), ``subset`` (subset selection under LDP
and the LIP orbit at a uniform prior), ``class_lip`` (class-symmetric LIP designs, family "class-lip"). Shared by
them: ``base`` (the contract), ``designed`` (what the designed families share), ``closed_forms`` (their closed
forms), ``estimate`` (the estimate with its standard errors), ``oracle`` (the pure frequency oracles), ``sampling``
(the randomness), ``bit_reports`` and ``bitsums`` (bit-vector reports and their column sums), ``aggregate`` (the
mergeable sufficient statistics), ``postprocess`` (the consistency step), ``registry`` (the family ids).
"""

from lipdesign.mechanisms.aggregate import Aggregate
from lipdesign.mechanisms.audit_plan import AuditPlan
from lipdesign.mechanisms.base import Guarantee, Mechanism, verify
from lipdesign.mechanisms.class_lip import ClassSymmetricLIP
from lipdesign.mechanisms.count_mean import CountMeanSketch
from lipdesign.mechanisms.designed import DesignedMechanism
from lipdesign.mechanisms.estimate import Estimate
from lipdesign.mechanisms.hadamard import HadamardResponse
from lipdesign.mechanisms.hadamard_sketch import HadamardCountMeanSketch
from lipdesign.mechanisms.harmony_categorical import HarmonyCategorical
from lipdesign.mechanisms.harmony_mixed import HarmonyMixed
from lipdesign.mechanisms.hashed_bits import HashedBitReports
from lipdesign.mechanisms.heavy_hitters import PEM, PrefixHeavyHitters, TreeHist
from lipdesign.mechanisms.histogram import SHE, THE
from lipdesign.mechanisms.local_hashing import LocalHashing
from lipdesign.mechanisms.longitudinal import LongitudinalGRR, LongitudinalUE
from lipdesign.mechanisms.longitudinal_hashed import DBitFlipPM, LongitudinalOLH
from lipdesign.mechanisms.longitudinal_table import LongitudinalTable
from lipdesign.mechanisms.multi_attribute import RSFD, SMP, SPL, leakage_summary
from lipdesign.mechanisms.numeric import Duchi, HarmonyNumeric, Laplace
from lipdesign.mechanisms.olh import OLH
from lipdesign.mechanisms.oue import OUE
from lipdesign.mechanisms.piecewise import Hybrid, Piecewise
from lipdesign.mechanisms.postprocess import norm_sub
from lipdesign.mechanisms.rappor import RAPPOR
from lipdesign.mechanisms.registry import families, family_class, register
from lipdesign.mechanisms.rr import GRR
from lipdesign.mechanisms.sampling import TablePerturber, as_generator
from lipdesign.mechanisms.sketch_lip import CountMeanSketchLIP
from lipdesign.mechanisms.subset import SubsetLIP, SubsetSelection
from lipdesign.mechanisms.table import (
    TableMechanism,
    ibu_frequencies,
    mmse_frequencies,
    posterior,
    unbiased_frequencies,
)
from lipdesign.mechanisms.unary_encoding import UnaryEncoding

__all__ = ["Aggregate", "AuditPlan", "ClassSymmetricLIP", "CountMeanSketch", "CountMeanSketchLIP", "DBitFlipPM",
           "DesignedMechanism", "Duchi", "Estimate", "GRR", "Guarantee", "HadamardCountMeanSketch", "HadamardResponse",
           "HarmonyCategorical",
           "HarmonyMixed", "HarmonyNumeric", "HashedBitReports", "Hybrid", "Laplace", "LocalHashing", "LongitudinalGRR",
           "LongitudinalOLH", "LongitudinalTable", "LongitudinalUE", "Mechanism",
           "OLH", "OUE", "PEM", "Piecewise", "PrefixHeavyHitters", "RAPPOR", "RSFD", "SHE", "SMP", "SPL", "SubsetLIP",
           "SubsetSelection", "leakage_summary",
           "TableMechanism", "TablePerturber", "THE", "TreeHist", "UnaryEncoding", "as_generator", "families",
           "family_class", "ibu_frequencies", "mmse_frequencies", "norm_sub", "posterior", "register",
           "unbiased_frequencies", "verify"]
