"""Real data shipped with lipdesign, for the notebooks and for trying designs on data that is not the prior.

``adult_path()``: the UCI Adult census records (Becker and Kohavi 1996, doi:10.24432/C5XW20, CC BY 4.0), reduced
to eight fields and the split; README.md in this folder says how the file was derived (``derive_adult.py``).

``words_path()``: the 100,000 most frequent English words with their frequencies (wordfreq 3.1.1, Speer 2022,
doi:10.5281/zenodo.7199437, CC BY-SA 4.0, kept with that licence), an open domain for the string families.
"""

from importlib.resources import files


def adult_path():
    """The path of ``adult.csv.gz``: a gzip CSV with header age, education, occupation, sex, native-country,
    income, split, race, marital-status (45,222 complete records: 30,162 train, 15,060 test)."""
    return files(__name__) / "adult.csv.gz"


def words_path():
    """The path of ``en-words-100k.tsv.gz``: a gzip TSV with header rank, word, frequency (100,000 English words,
    most frequent first; the frequencies sum to 0.964). CC BY-SA 4.0, see README.md in this folder."""
    return files(__name__) / "en-words-100k.tsv.gz"
