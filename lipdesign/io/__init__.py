"""Export and import: the one versioned envelope of every mechanism (``load`` also reads lipdesign 0.1.0's two),
its JSON Schemas, and design spec files (docs/math.md §3)."""

from lipdesign.io.envelope import load, mechanism_from_dict, save
from lipdesign.io.schema import read_json, validate_document
from lipdesign.io.spec import spec_to_problem

__all__ = ["load", "mechanism_from_dict", "read_json", "save", "spec_to_problem", "validate_document"]
