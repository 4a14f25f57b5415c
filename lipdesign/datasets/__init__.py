"""Real data shipped with lipdesign, for the notebooks and for trying designs on data that is not the prior.

``adult_path()``: the UCI Adult census records (Becker and Kohavi 1996, doi:10.24432/C5XW20, CC BY 4.0), reduced
to six fields and the split; README.md in this folder says how the file was derived (``derive_adult.py``).
"""

from importlib.resources import files


def adult_path():
    """The path of ``adult.csv.gz``: a gzip CSV with header age, education, occupation, sex, native-country,
    income, split (45,222 complete records: 30,162 train, 15,060 test)."""
    return files(__name__) / "adult.csv.gz"
