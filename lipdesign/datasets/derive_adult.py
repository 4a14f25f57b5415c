"""Derive lipdesign/datasets/adult.csv.gz from the UCI Adult files (adult.data, adult.test).

Usage: ``python lipdesign/datasets/derive_adult.py FOLDER`` with FOLDER holding the two UCI files. Keeps the fields the
notebooks use (age, education, occupation, sex, native-country, income), the split, then race and marital-status
(appended last, so that the earlier columns keep their places), drops the records with a missing value ('?') in any
of them (race and marital-status have none, so the records kept are those of the six fields alone), and strips the
trailing '.' of the test file's income labels.
Source: Becker, B. and Kohavi, R. (1996), Adult, UCI Machine Learning Repository, doi:10.24432/C5XW20, CC BY 4.0.
"""

import csv
import gzip
import sys
from pathlib import Path

FIELDS = {"age": 0, "education": 3, "occupation": 6, "sex": 9, "native-country": 13, "income": 14}
APPENDED = {"race": 8, "marital-status": 5}  # after the split column: added later, the earlier header unchanged


def records(path, split):
    with open(path, newline="") as handle:
        for row in csv.reader(handle, skipinitialspace=True):
            if len(row) < 15:  # blank lines and the test file's "|1x3 Cross validator" header
                continue
            values = {name: row[index].strip().rstrip(".") for name, index in {**FIELDS, **APPENDED}.items()}
            if "?" not in values.values():
                yield {**values, "split": split}


def main(folder):
    folder = Path(folder)
    target = Path(__file__).with_name("adult.csv.gz")
    with gzip.open(target, "wt", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*FIELDS, "split", *APPENDED])
        writer.writeheader()
        for name, split in (("adult.data", "train"), ("adult.test", "test")):
            writer.writerows(records(folder / name, split))
    print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv[1])
