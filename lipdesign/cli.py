"""Command line: ``lipdesign design | compare | mechanism | verify | audit | simulate | perturb | aggregate | estimate
| plot | heavy-hitters | demo``.

Every LipdesignError (bad input, infeasible or too-large problem, failed verification) ends the command
with exit code 2 and one line on stderr, never a traceback; a verification or an audit that runs but fails exits 1.
With --json, design, compare, verify, audit, simulate and estimate print one strict JSON document on stdout (inf and
nan as null), their progress and notes on stderr. ``python -m lipdesign`` is the same command.
"""

import argparse
import inspect
import json
import math
import os
import sys
import warnings
from pathlib import Path

from lipdesign import __version__
from lipdesign.errors import LipdesignError, ValidationError, VerificationError

#: The most epsilons `lipdesign plot --epsilons` takes (each is a design).
MAX_PLOT_EPSILONS = 32

#: One example per command for its --help, run from the repository's root: the inputs are files of examples/ or the
#: files an earlier command's example writes (tests/test_cli_json.py runs them all, in this order).
EXAMPLES = {
    "design": ("run from the repository's root",
               ["lipdesign design examples/screen-time-lip.json -o screen-time.json"]),
    "compare": ("run from the repository's root", ["lipdesign compare examples/screen-time-lip.json --json"]),
    "verify": ("screen-time.json from `lipdesign design --help`", ["lipdesign verify screen-time.json --json"]),
    "simulate": ("screen-time.json from `lipdesign design --help`",
                 ["lipdesign simulate screen-time.json -n 20000 -r 5 --seed 1"]),
    "plot": ("run from the repository's root",
             ["lipdesign plot examples/screen-time-lip.json -o screen-time.png --epsilons 0.5,1,2"]),
    "mechanism": ("GRR over k = 4 values at epsilon 1", ["lipdesign mechanism grr --epsilon 1 -p k=4 -o grr.json"]),
    "vectors": ("grr.json from `lipdesign mechanism --help`",
                ["lipdesign vectors grr.json -o vectors.json", "lipdesign vectors grr.json --check vectors.json"]),
    "audit": ("grr.json from `lipdesign mechanism --help`", ["lipdesign audit grr.json --reports 50000 --seed 1"]),
    "perturb": ("grr.json from `lipdesign mechanism --help`; printf writes four users' values",
                ["printf 'value\\n0\\n1\\n3\\n1\\n' > values.csv",
                 "lipdesign perturb grr.json values.csv -o reports.parquet --seed 1"]),
    "aggregate": ("reports.parquet from `lipdesign perturb --help`",
                  ["lipdesign aggregate grr.json reports.parquet -o aggregate.json"]),
    "estimate": ("aggregate.json from `lipdesign aggregate --help`",
                 ["lipdesign estimate grr.json aggregate.json --json"]),
    "rounds": ("an L-GRR mechanism; printf writes two rounds of four devices' values, perturbed with one key file",
               ["lipdesign mechanism l-grr --epsilon 1 -p epsilon_permanent=2 -p k=4 -o l-grr.json",
                "printf 'device,value\\n0,0\\n1,1\\n2,3\\n3,1\\n' > round1.csv",
                "printf 'device,value\\n0,0\\n1,2\\n2,3\\n3,1\\n' > round2.csv",
                "lipdesign perturb l-grr.json round1.csv -o round1.parquet --keys devices.key --seed 1",
                "lipdesign perturb l-grr.json round2.csv -o round2.parquet --keys devices.key --seed 2",
                "lipdesign rounds l-grr.json round1.parquet round2.parquet --change"]),
    "demo": ("writes the folder lipdesign-demo", ["lipdesign demo --out lipdesign-demo"]),
    "heavy-hitters": ("printf writes a text file of strings, one per line",
                      ["printf 'the\\nof\\nthe\\nand\\nthe\\n' > words.txt",
                       "lipdesign heavy-hitters words.txt --epsilon 4 --top 2 --max-bytes 4 --seed 1 --json"]),
}

#: The help of every command's mechanism argument.
MECHANISM_HELP = "mechanism JSON file (written by `lipdesign design` or `lipdesign mechanism`)"


def _example(command):
    """The epilog of ``command``'s --help: its example (``EXAMPLES``)."""
    where, lines = EXAMPLES[command]
    return f"Example ({where}):\n" + "\n".join(f"  {line}" for line in lines)


#: The extensions an output may have, by the format a command writes.
OUTPUT_SUFFIXES = {"JSON": (".json",), "Parquet": (".parquet",), "an image": (".png", ".pdf", ".svg")}


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"lipdesign: error: {message} (see lipdesign --help)\n")


def _strict(value):
    """``value`` as plain JSON: numpy numbers and arrays as Python ones and lists, tuples as lists, and every float
    that is inf or nan as None (strict JSON has neither)."""
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, _np_types()):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_strict(item) for item in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def _np_types():
    """numpy's array and scalar types (numpy imported only when a command prints JSON)."""
    import numpy as np

    return (np.ndarray, np.generic)


def _print_json(document):
    """The one JSON document of ``--json`` on stdout: strict (no NaN or Infinity: ``_strict``), indented by one."""
    print(json.dumps(_strict(document), indent=1, allow_nan=False))


#: The options of ``ld.design`` that ``lipdesign design`` also takes as flags (a flag overrides the spec's field).
DESIGN_FLAGS = ("family", "method", "buckets", "target_gap", "max_rounds", "time_limit", "max_rays")


def _design(args):
    from lipdesign.designer import design
    from lipdesign.io import read_json, spec_to_problem

    prior, notion, objective, options = spec_to_problem(read_json(args.spec), args.spec)
    options.update({name: getattr(args, name) for name in DESIGN_FLAGS if getattr(args, name) is not None})
    with _Progress(args) as progress:
        mechanism = design(prior, notion, objective, progress=progress.line, **options)
    mechanism.to_json(args.output)
    if args.json:
        _print_json({"mechanism": mechanism.fingerprint, "family": mechanism.family, "output": str(args.output),
                     "figure": getattr(mechanism, "mse", None), "verified_epsilons": mechanism.verified_epsilons(),
                     "envelope": mechanism.to_dict()})
        return
    print(mechanism.summary())
    print(f"wrote {args.output} (fingerprint {mechanism.fingerprint})")


def _compare(args):
    from lipdesign.designer import compare
    from lipdesign.io import read_json, spec_to_problem

    prior, notion, objective, options = spec_to_problem(read_json(args.spec), args.spec)
    with _Progress(args) as progress:
        comparison = compare(prior, notion, objective, progress=progress.line,
                             **{key: value for key, value in options.items() if key != "family"})
    if args.json:
        best = comparison.best
        _print_json({**comparison.to_dict(), "best": None if best is None else best.family})
    else:
        print(comparison.summary())
    if "family" in options:
        print(f"(the spec names family {options['family']!r}; compare designs every family, `lipdesign design` "
              "that one)", file=sys.stderr if args.json else sys.stdout)


def _verify(args):
    from lipdesign.io import load

    try:
        mechanism = load(args.mechanism)
    except VerificationError as error:
        if args.json:
            _print_json({"mechanism": None, "passed": False, "error": str(error)})
        else:
            print(f"FAIL: {error}")
        return 1
    if args.json:  # a continuous output space has no table: no certificate (passed and epsilon null)
        certificate = mechanism.verify().to_dict() if mechanism.finite else {"passed": None, "epsilon": None}
        _print_json({"mechanism": mechanism.fingerprint, "family": mechanism.family, "finite": mechanism.finite,
                     **certificate, "verified_epsilons": mechanism.verified_epsilons(),
                     "guarantee": mechanism.guarantee.to_dict()})
        return 0
    if not mechanism.finite:
        print(f"{mechanism!r}: continuous output space, no finite table to verify; guarantee: "
              f"{mechanism.guarantee.summary()}")
        return 0
    print(mechanism.verify().summary())
    print(f"{mechanism!r}; verified epsilons: " +
          ", ".join(f"{name} {value:.12g}" for name, value in mechanism.verified_epsilons().items()))
    print(f"fingerprint {mechanism.fingerprint} (devices and server must run the mechanism with this fingerprint)")
    return 0


def _audit(args):
    from lipdesign.auditor import audit
    from lipdesign.io import load

    mechanism = load(args.mechanism)
    with _Progress(args, "reports", f"audit {mechanism.family}") as progress:
        result = audit(mechanism, reports=args.reports, confidence=args.confidence, rng=args.seed,
                       progress=progress.line, progress_reports=progress.count)
    if args.json:
        _print_json(result.to_dict())
    else:
        print(result.summary())
    return 0 if result.passed else 1


def _vectors(args):
    from lipdesign.io import load
    from lipdesign.vectors import check_vectors, read_vectors, write_vectors

    mechanism = load(args.mechanism)
    if args.check is not None:
        failures = check_vectors(mechanism, read_vectors(args.check))
        if failures:  # like a failed verification: exit 1, not a bad-input 2
            print(f"FAIL: {args.check}: {len(failures)} of the test vectors do not replay; the first: {failures[0]}")
            return 1
        print(f"PASS: every test vector in {args.check} replays exactly ({mechanism.family}, fingerprint "
              f"{mechanism.fingerprint[:12]})")
        return 0
    if args.output is None:
        raise ValidationError("-o is missing; vectors writes VECTORS.json (or pass --check VECTORS.json)")
    write_vectors(mechanism, args.output, n=args.cases, seed=args.seed)
    print(f"wrote {args.cases} test vectors of {mechanism.family} {mechanism.fingerprint[:12]} to {args.output}")
    return 0


def _family_id(name):
    """The family id of a name on the command line (lipdesign 0.1.0's class names map to theirs)."""
    from lipdesign.io.envelope import LEGACY_CLASS_NAMES

    return LEGACY_CLASS_NAMES.get(name, name)


#: Constructor arguments that are no part of a mechanism's file (a decoder's candidate list): not CLI parameters.
NOT_STORED = ("candidates",)


def _fixed_families():
    """The families ``lipdesign mechanism`` builds: those of an epsilon, and those whose guarantees follow from
    their own parameters (RAPPOR's f, p, q); the designed ones take a notion and a prior, from ``lipdesign
    design``."""
    from lipdesign.mechanisms import families, family_class
    from lipdesign.mechanisms.registry import describe

    def fixed(family):
        names = [name for name, _, _ in describe(family)]
        if {"on", "off"} <= set(names) or {"permanent", "refill"} <= set(names):  # tables designed at a prior
            return False  # (cms-lip, l-table): `lipdesign design`, ld.designer.design_longitudinal
        return names[0] == "epsilon" or ("epsilon" not in names and family_class(family).design_family is None)

    return [family for family in families() if fixed(family)]


def _parameter_lines(family):
    """Help lines of ``family``'s parameters: name, default (or required) and rule (``registry.describe``)."""
    from lipdesign.mechanisms import family_class
    from lipdesign.mechanisms.registry import describe

    lines = [f"  {family} ({family_class(family).__name__})"]
    for name, default, rule in describe(family):
        if name in NOT_STORED:
            continue
        given = "required" if default is inspect.Parameter.empty else (
            "optional" if default is None else f"default {json.dumps(default)}")
        lines.append(f"    {'--epsilon' if name == 'epsilon' else '-p ' + name:<16} {given:<18} {rule}")
    return lines


def _families_help(family=None):
    """The parameters of every fixed family, or of ``family`` alone (``lipdesign mechanism NAME --help``)."""
    from lipdesign.mechanisms import families

    fixed = _fixed_families()
    shown = [family] if family in fixed else fixed
    designed = [name for name in families() if name not in fixed]
    return "\n".join(["families and their parameters (-p NAME=VALUE reads VALUE as JSON):",
                      *(line for name in shown for line in _parameter_lines(name)),
                      f"designed families (from `lipdesign design SPEC`, not built here): {', '.join(designed)}"])


class _FamilyHelp(argparse.Action):
    """-h of ``lipdesign mechanism``: its usage and every fixed family's parameters, or NAME's with ``mechanism NAME
    --help``."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show this help (with a family: its parameters only) and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        parser.epilog = _families_help(_family_id(getattr(namespace, "family", None))) + "\n\n" + _example("mechanism")
        parser.print_help()
        parser.exit()


def _mechanism(args):
    from lipdesign.mechanisms import family_class
    from lipdesign.mechanisms.registry import describe

    parameters = {} if args.epsilon is None else {"epsilon": args.epsilon}
    for item in args.param:
        name, separator, text = item.partition("=")
        if not separator or not name:
            raise ValidationError(f"--param is {item!r}; it must be NAME=VALUE, e.g. d=4 or "
                                  "attributes='[\"numeric\", 3]'")
        if name == "epsilon":
            raise ValidationError(f"--param is {item!r}; epsilon is set by --epsilon only")
        try:
            parameters[name] = json.loads(text)
        except json.JSONDecodeError:
            parameters[name] = text
    family = _family_id(args.family)
    if family not in _fixed_families():
        raise ValidationError(f"family is {args.family!r}; it must be one of {', '.join(_fixed_families())} "
                              "(designed tables come from `lipdesign design`)")
    described = [entry for entry in describe(family) if entry[0] not in NOT_STORED]
    takes_epsilon = described[0][0] == "epsilon"
    takes = f"{family} takes {', '.join(f'-p {name}' for name, _, _ in described if name != 'epsilon')}" + (
        " and --epsilon" if takes_epsilon else " (no --epsilon: its guarantees follow from these)")
    if takes_epsilon and args.epsilon is None:
        raise ValidationError(f"--epsilon is missing; {takes}")
    if not takes_epsilon and args.epsilon is not None:
        raise ValidationError(f"--epsilon is {args.epsilon!r}; {takes}")
    unknown = sorted(set(parameters) - {name for name, _, _ in described})
    if unknown:
        raise ValidationError(f"--param is {unknown[0]!r}; {takes} (their ranges: `lipdesign mechanism {family} "
                              "--help`)")
    for name, default, rule in described:
        if default is inspect.Parameter.empty and name not in parameters:
            raise ValidationError(f"{name} is missing; pass -p {name}=VALUE ({rule}); {takes}")
    cls = family_class(family)
    mechanism = cls(**parameters)
    mechanism.to_json(args.output)
    print(mechanism.summary())
    print(f"wrote {args.output} (fingerprint {mechanism.fingerprint})")


def _simulate(args):
    from lipdesign.io import load
    from lipdesign.simulation import simulate

    mechanism = load(args.mechanism)
    if args.candidates is not None:
        mechanism = _with_candidates(mechanism, args.candidates)
    truth = None
    if args.truth is not None:
        try:
            truth = json.loads(args.truth)
        except json.JSONDecodeError:
            raise ValidationError(f"--truth is {args.truth!r}; it must be a JSON list of probabilities, one per "
                                  "value, e.g. '[0.5, 0.3, 0.2]'") from None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _Progress(args, "repetitions", "simulate") as progress:
            result = simulate(mechanism, args.n, rng=args.seed, truth=truth, repetitions=args.repetitions,
                              method=args.method, drift=not args.no_drift, progress=progress.count)
    if args.json:
        _print_json({"mechanism": mechanism.fingerprint, "family": mechanism.family, **_simulation(result)})
    else:
        print(repr(mechanism))
        print(result.summary())
    for message in dict.fromkeys(str(warning.message) for warning in caught):
        print(f"lipdesign: warning: {message}", file=sys.stderr)


def _simulation(result):
    """The numbers of a Simulation's summary, per estimated quantity in ``names`` order (``estimates``: one row per
    repetition), and its drifted run's the same way (None without one)."""
    return {"n": result.n, "method": result.method, "population": result.population,
            "repetitions": result.repetitions, "level": result.level, "interval": result.interval,
            "names": list(result.names), "truth": result.truth, "expected": result.expected, "std": result.std,
            "estimate": result.estimate, "bias": result.bias, "empirical_std": result.empirical_std,
            "coverage": result.coverage, "estimates": result.estimates, "largest_z": result.largest_z,
            "p_value": result.p_value, "squared_error": result.squared_error,
            "expected_squared_error": result.expected_squared_error,
            "drifted": None if result.drifted is None else _simulation(result.drifted)}


def _bar(args, total, unit, desc=None):
    """The progress bar of every command: a tqdm bar of ``total`` (None: a counter) ``unit`` (reports counted in k
    and M) on stderr, off with --quiet and when stderr is not a terminal, and gone from the terminal once closed
    (stdout never sees it)."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, unit_scale=unit == "reports", desc=desc, disable=True if args.quiet else None,
                file=sys.stderr, leave=False)


class _Progress:
    """A command's progress on stderr, for the library's progress callables: one bar (``_bar``) at a time.

    ``line`` takes the lines of text of a ``progress`` callable (ld.design, ld.compare, ld.audit); ``count`` is a
    ``progress(done, total)`` callable (ld.simulate's ``progress``, ld.audit's ``progress_reports``); both are None
    with --quiet. Each phase has its bar: a ``ProgressLine`` (lipdesign.progress) moves the bar of its phase to its
    count, its detail beside the bar; ``count`` moves the command's own bar (``desc``, ``unit``), where a plain line
    belongs too. When a phase ends (a line or a count of another phase, or the end of the block) its bar goes and
    its last line is written in its place, so a short log of the phases stays (not after an error: the error's line
    is then the only one). When stderr is not a terminal there is no bar, and the lines are printed as they come."""

    def __init__(self, args, unit="steps", desc=None):
        self.args, self.unit, self.desc = args, unit, desc
        self.bar = self.phase = self.last = None
        self.line = None if args.quiet else self._line
        self.count = None if args.quiet else self._count

    def _open(self, phase, total, unit):
        """The bar of ``phase`` (None: the command's own), opened when another phase's is open or none is."""
        if self.bar is None or phase != self.phase:
            self._end(write=True)
            self.bar = _bar(self.args, total, unit, desc=self.desc if phase is None else phase)
            self.phase = phase
        return self.bar

    def _line(self, line):
        if getattr(line, "phase", None) is None:
            bar = self._open(None, None, self.unit)
        else:  # a few lines a second at most: the bar is redrawn at each
            bar = self._open(line.phase, line.total, line.unit)
            bar.total, bar.n = line.total, line.done
            bar.set_postfix_str(line.detail)
        if bar.disable:
            print(line, file=sys.stderr, flush=True)
        else:
            self.last = line

    def _count(self, done, total):
        bar = self._open(None, total, self.unit)
        bar.total = total
        bar.update(done - bar.n)

    def _end(self, write):
        if self.bar is not None:
            self.bar.close()
            if write and self.last is not None:
                self.bar.write(self.last, file=sys.stderr)
        self.bar = self.phase = self.last = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        self._end(write=kind is None)


def _perturb(args):
    from lipdesign.engine import BLOCK_ROWS, MAX_START, perturb_file
    from lipdesign.io import load

    mechanism = load(args.mechanism)
    if args.start is not None and args.seed is None:
        raise ValidationError(f"--start is {args.start}; it numbers the users of a seeded simulation, so it needs "
                              "--seed")
    start = 0 if args.start is None else args.start
    if not 0 <= start < MAX_START or start % BLOCK_ROWS:
        raise ValidationError(f"--start is {start}; it must be a non-negative multiple of {BLOCK_ROWS} below 2^62 (the "
                              "users of a simulation come in blocks of that many, each with its own stream)")
    from pathlib import Path

    new_keys = args.keys is not None and not Path(args.keys).exists()
    with _Progress(args, "reports") as progress:
        done = perturb_file(mechanism, args.values, args.output, seed=args.seed, start=args.start,
                            progress=progress.count, keys=args.keys)
    print(f"wrote {done} reports of {mechanism.family} mechanism {mechanism.fingerprint} to {args.output}")
    if args.keys is not None:
        made = (f"created the new key file {args.keys}: every device draws new permanent responses (if earlier "
                "rounds used another key file, their memos do not carry over)") if new_keys else \
            f"read the key file {args.keys}"
        print(f"memoised: {made}; each device's permanent response comes from its key, derived from that secret and "
              "its device id (keep the file secret; give every round's file of this mechanism the same --keys, the "
              "rows in the same device order for `lipdesign rounds`, and, with --seed, a seed of its own)")
    if args.seed is not None:
        following = start + -(-done // BLOCK_ROWS) * BLOCK_ROWS
        print(f"simulation seed {args.seed}: users {start}..{start + done - 1}; the next file of this simulation "
              f"takes --seed {args.seed} --start {following} (the same seed and start repeat these reports' random "
              "streams)")


def _aggregate(args):
    from lipdesign.engine import aggregate
    from lipdesign.io import load
    from lipdesign.reports import open_reports

    mechanism = load(args.mechanism)
    total = sum(open_reports(path, mechanism).rows for path in args.reports)
    with _bar(args, total, "reports") as bar:
        result = aggregate(mechanism, args.reports, engine=args.engine, scheduler=args.scheduler,
                           progress=bar.update, batch_rows=args.batch_rows)
    text = json.dumps(result.to_dict(), allow_nan=False) + "\n"
    Path(args.output).write_text(text, encoding="utf-8")
    print(f"aggregated {result.n} reports from {len(args.reports)} file(s) ({args.engine}); wrote {args.output}")


def _with_candidates(mechanism, path):
    """``mechanism`` decoding over the strings of the text file ``path`` (``--candidates``), one per line: checked
    as every file of strings is (``hitters.read_strings``), a repeated one refused with both lines, white space
    around one said on stderr (it is part of the string)."""
    from lipdesign.hitters import read_strings
    from lipdesign.mechanisms.hashed_bits import StringMechanism

    if not isinstance(mechanism, StringMechanism):
        raise ValidationError(f"--candidates is {path!r}; it lists the strings an open-domain family decodes over, "
                              f"and {mechanism.family} takes none")
    strings = read_strings(path, mechanism.max_bytes, too_long="the mechanism's max_bytes: a longer string is no "
                                                                "value of it")
    first: dict[bytes, int] = {}
    for line, value in enumerate(strings, start=1):
        if first.setdefault(value, line) != line:
            raise ValidationError(f"FILE {path!r} line {line} repeats line {first[value]} "
                                  f"({value.decode('utf-8')!r}); every candidate must be listed once")
        if value != value.strip():
            print(f"lipdesign: warning: FILE {path!r} line {line} ({value.decode('utf-8')!r}) starts or ends with "
                  "white space, which is part of the candidate", file=sys.stderr)
    return mechanism.with_candidates([value.decode("utf-8") for value in strings])


def _estimate(args):
    import numpy as np

    from lipdesign.io import load, read_json
    from lipdesign.mechanisms import Aggregate

    mechanism = load(args.mechanism)
    counts = Aggregate.from_dict(read_json(args.aggregate))
    if args.candidates is not None:
        mechanism = _with_candidates(mechanism, args.candidates)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = mechanism.estimate(counts, method=args.method, consistency=args.consistency)
    if args.json:
        document = {"mechanism": mechanism.fingerprint, "family": mechanism.family, **result.to_dict(),
                    "note": result.note, "level": args.level}
        finite = np.isfinite(result.standard_errors)

        def entries(array):  # null where an entry has no standard error
            return [float(value) if ok else None for value, ok in zip(np.atleast_1d(array), finite)]

        low, high = result.confidence_interval(args.level) if finite.any() else (result.standard_errors,) * 2
        document["standard_errors"] = entries(result.standard_errors)
        document["confidence_interval"] = {"low": entries(low), "high": entries(high)}
        print(json.dumps(document, indent=1, allow_nan=False))
    else:
        print(result.summary(args.level))
    for message in dict.fromkeys(str(warning.message) for warning in caught):
        print(f"lipdesign: warning: {message}", file=sys.stderr)


def _devices(digest):
    return "not marked by device" if digest is None else f"devices {digest[:12]}..."


def _rounds(args):
    from lipdesign.io import load
    from lipdesign.reports import open_reports, read_reports
    from lipdesign.rounds import average, change

    mechanism = load(args.mechanism)
    if not args.unaligned:  # memoised files carry a digest of their device ids in row order: they must agree
        digests = [(path, open_reports(path, mechanism).devices) for path in args.reports]
        for path, digest in digests[1:]:
            if digest != digests[0][1]:
                raise ValidationError(f"reports holds {path}, whose rows are {_devices(digest)}, and "
                                      f"{digests[0][0]}, whose rows are {_devices(digests[0][1])}; aligned rounds "
                                      "need the same devices in the same row order (or pass --unaligned)")
    rounds = [read_reports(path, mechanism) for path in args.reports]
    if args.change and len(rounds) != 2:
        raise ValidationError(f"reports has {len(rounds)} files; --change compares two rounds: give the earlier "
                              "round's file, then the later one's")
    if len(rounds) < 2:
        raise ValidationError("reports has 1 file; --average needs at least two rounds' files")
    result = (change if args.change else average)(mechanism, *([rounds] if not args.change else rounds),
                                                  aligned=not args.unaligned)
    print(result.summary(args.level))


def _heavy_hitters(args):
    import numpy as np

    from lipdesign.hitters import heavy_hitters, read_strings

    values = read_strings(args.file, args.max_bytes, truncate=args.truncate)
    result = heavy_hitters(values, epsilon=args.epsilon, top=args.top, protocol=args.protocol,
                           max_bytes=args.max_bytes, seed=args.seed)
    if not args.json:  # a string found from noise may hold control characters: shown escaped, never raw
        from lipdesign.mechanisms import Estimate

        shown = [name if name.isprintable() else ascii(name) for name in result.names]
        print(Estimate(result.values, result.standard_errors, n=result.n, method=result.method, names=shown,
                       raw=result.raw, note=result.note).summary())
        return
    low, high = result.confidence_interval(0.95) if len(result) else (np.zeros(0), np.zeros(0))
    print(json.dumps({"protocol": args.protocol, "epsilon": args.epsilon, "max_bytes": args.max_bytes,
                      "users": result.n, "strings": result.names, "frequencies": result.values.tolist(),
                      "standard_errors": result.standard_errors.tolist(),
                      "confidence_interval": {"level": 0.95, "low": np.atleast_1d(low).tolist(),
                                              "high": np.atleast_1d(high).tolist()},
                      "note": result.note}, indent=1, allow_nan=False))


def _demo(args):
    import numpy as np

    from lipdesign import demo
    from lipdesign.mechanisms import verify
    from lipdesign.model import PriorSet

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValidationError(f"--out is {args.out!r}; it is a file: the demo writes a folder of files there")
    out.mkdir(parents=True, exist_ok=True)
    rows, mechanisms = demo.run()
    print(f"Screen-time buckets {list(demo.BUCKETS)}; last year's survey is the prior; the server estimates this "
          "year's histogram.")
    print("Accuracy = n x sum of the variances of each mechanism's own unbiased estimate, at the prior, given the "
          "users' values (lower is better; docs/math.md §11):")
    names = ["epsilon", *demo.COLUMNS]
    print(" ".join(f"{name:>{max(len(name), 9)}}" for name in names))
    for row in rows:
        print(" ".join(f"{value:>{max(len(name), 9)}.4g}" for name, value in zip(names, row)))
    print("An eps-LIP table is eps-LIP for X at the prior but only 2 eps-LDP in the worst case (docs/math.md §2): "
          "compare it with the last column too.")
    epsilon = 1.0 if 1.0 in mechanisms else next(iter(mechanisms))
    mechanism = mechanisms[epsilon]

    unbiased, mmse = demo.drift_story(mechanism)
    print(f"\nThis year's population drifted by TV 0.2 from the prior; {demo.USERS} phones, eps = {epsilon:g}, 5 runs:")
    print(f"{'bucket':>8} {'truth':>8} {'unbiased':>9} {'+- sd':>8} {'covered':>8} {'MMSE':>8}")
    for label, *values in zip(demo.BUCKETS, unbiased.truth, unbiased.estimate, unbiased.std, unbiased.coverage,
                              mmse.estimate):
        print(f"{label:>8} {values[0]:8.4f} {values[1]:9.4f} {values[2]:8.4f} {values[3]:8.2f} {values[4]:8.4f}")
    print(f"squared error: unbiased {unbiased.squared_error:.3g}, MMSE (the per-user Bayesian design of the LIP "
          f"paper, right only when the prior is the truth) {mmse.squared_error:.3g}")
    drift = verify(mechanism, prior=PriorSet.tv_ball(mechanism.prior.probabilities, 0.2)).epsilon
    print(f"privacy under that drift: the table designed for eps = {epsilon:g} at the prior is LIP {drift:.3g} at "
          f"worst over every prior within TV 0.2 (never above its LDP level {mechanism.epsilons['LDP']:.3g})")

    counts, prior_set, bounded, plain = demo.prior_set_story(epsilon)
    print(f"\nPrior from a survey of {demo.SURVEY} phones, counts {counts.tolist()}: PriorSet.from_counts gives a TV "
          f"ball of radius {prior_set.parameters['radius']:.3g} (95 %); at the survey's frequencies the BP-LIP design "
          f"over it has n x sum Var {bounded.mse:.4g} (plain LIP {plain.mse:.4g}, optimal LDP "
          f"{plain.baselines['optimal LDP']:.4g}) and is eps-LIP for every prior in the ball (plain LIP: "
          f"{verify(plain, prior=prior_set).epsilon:.3g} at worst).")

    latent = demo.secret_story(epsilon)
    revealed = np.flatnonzero(latent.revealed() >= 0.5)
    print(f"\nProtecting only the owner's age band (a latent secret): n x sum Var {latent.mse:.3g}, but LIP for X is "
          f"{latent.epsilons['LIP for X']:.3g} and {len(revealed)} of {len(demo.BUCKETS)} buckets are revealed in at "
          "least half of their reports; the summary warns about it.")

    table_path, plot_path = out / "demo-mechanism.json", out / "demo-variance.png"
    mechanism.to_json(table_path)
    demo.plot(rows, plot_path)
    print(f"\nwrote {table_path} (LIP for X, eps={epsilon:g}; `lipdesign verify` re-verifies it) and {plot_path}")
    print(f"next: load it in Python (mech = ld.load({str(table_path)!r}); mech.perturb(...), mech.estimate(...)), "
          "or design your own from a spec file (lipdesign design --help); docs/getting-started.md walks through both")


def _epsilons(text):
    """The epsilons of ``--epsilons``: numbers separated by commas (each checked by the notion or mechanism)."""
    try:
        epsilons = [float(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of numbers separated by commas, e.g. "
                                         "0.5,1,2") from None
    if len(epsilons) > MAX_PLOT_EPSILONS:
        raise argparse.ArgumentTypeError(f"{len(epsilons)} epsilons given; a plot takes at most {MAX_PLOT_EPSILONS} "
                                         "(each is a design)")
    return epsilons


def _plot(args):
    from lipdesign import plot
    from lipdesign.io import mechanism_from_dict, read_json, spec_to_problem

    document = read_json(args.input)
    name = Path(args.input).name
    with _Progress(args) as progress:
        if isinstance(document, dict) and "format" in document:
            figure = plot.mechanism_figure(mechanism_from_dict(document, args.input), name, args.epsilons,
                                           progress.line)
        else:
            prior, notion, objective, options = spec_to_problem(document, args.input)
            figure = plot.design_figure(prior, notion, objective, options, name, args.epsilons, progress.line)
    figure.savefig(args.output, dpi=120)
    print(f"wrote {args.output}: {figure.axes[0].get_title()}")


def build_parser():
    parser = _Parser(prog="lipdesign", description="Design, verify and run local privacy mechanisms.")
    parser.add_argument("--version", action="version", version=f"lipdesign {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add_command(name, **options):  # every command's --help ends with its example, as written
        return subparsers.add_parser(name, epilog=_example(name), formatter_class=argparse.RawDescriptionHelpFormatter,
                                     **options)

    command = add_command(
        "design", help="design the optimal table for a JSON spec (default objective: the population histogram)")
    command.add_argument("spec", help="spec file (JSON; see docs/manual.md, \"Spec files\", and examples/)")
    command.add_argument("-o", "--output", required=True, help="where to write the mechanism JSON")
    command.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    command.add_argument("--json", action="store_true",
                         help="print the fingerprint, figure, verified epsilons and envelope as JSON")
    options = command.add_argument_group("design options (each overrides the spec's field of the same name)")
    options.add_argument("--family", choices=("rr", "unary", "hashing", "cms"),
                         help="the design family: rr (any table, the default), unary (unary encoding), hashing "
                              "(local hashing), cms (count-mean sketch over the labels as strings)")
    options.add_argument("--method", choices=("auto", "exact", "columns", "classes"),
                         help="how family rr is designed: auto (default), exact (every extreme ray), columns "
                              "(column generation), classes (class-symmetric)")
    options.add_argument("--buckets", type=int, help="family hashing: buckets g (2 = LIP local hashing; 3..8 pooled); "
                                                    "family cms: the width m of each row")
    options.add_argument("--target-gap", type=float, dest="target_gap",
                         help="column generation stops within this relative gap of the certified bound (0.01)")
    options.add_argument("--max-rounds", type=int, dest="max_rounds",
                         help="column generation: at most these rounds (200)")
    options.add_argument("--time-limit", type=float, dest="time_limit",
                         help="column generation: stop after about these seconds (600)")
    options.add_argument("--max-rays", type=int, dest="max_rays",
                         help="the most extreme rays the exact method enumerates (200000)")
    command.set_defaults(run=_design, inputs=("spec",), output_format=("output", "JSON"))
    command = add_command("compare", help="design every family (rr, unary, hashing, cms) for a JSON spec and print "
                                          "their figures side by side")
    command.add_argument("spec", help="spec file (JSON; see docs/manual.md, \"Spec files\", and examples/)")
    command.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    command.add_argument("--json", action="store_true", help="print the comparison as JSON (one row per family)")
    command.set_defaults(run=_compare, inputs=("spec",))
    command = add_command("mechanism", aliases=["harmony"], add_help=False,
                          help="write a fixed mechanism (GRR, OUE, OLH, Duchi, Harmony's, ...) as JSON")
    command.add_argument("-h", "--help", action=_FamilyHelp)
    command.add_argument("family", help="family id, listed below (lipdesign 0.1.0's class names work too)")
    command.add_argument("--epsilon", type=float, default=None,
                         help="the privacy level, for the families that take one (each family's range: lipdesign "
                              "mechanism FAMILY --help)")
    command.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                         help="constructor argument, VALUE read as JSON (repeat: -p d=4 -p seed=7)")
    command.add_argument("-o", "--output", required=True, help="where to write the mechanism JSON")
    command.set_defaults(run=_mechanism, output_format=("output", "JSON"))
    command = add_command("verify", help="re-verify a mechanism JSON exactly")
    command.add_argument("mechanism", help=MECHANISM_HELP)
    command.add_argument("--json", action="store_true",
                         help="print the certificate, verified epsilons and fingerprint as JSON")
    command.set_defaults(run=_verify, inputs=("mechanism",))
    command = add_command("vectors", help="test vectors (input, random words, expected report) for another "
                                          "implementation of a mechanism JSON's sampler (docs/runtime.md)")
    command.add_argument("mechanism", help=MECHANISM_HELP)
    command.add_argument("-o", "--output", help="VECTORS.json to write")
    command.add_argument("--cases", type=int, default=32, help="number of cases (default 32)")
    command.add_argument("--seed", type=int, default=0, help="ChaCha20 key of the recorded words (default 0)")
    command.add_argument("--check", metavar="VECTORS.json", help="replay these vectors instead of writing")
    command.set_defaults(run=_vectors, inputs=("mechanism",), output_format=("output", "JSON"))
    command = add_command("audit", help="black-box statistical audit of a mechanism JSON's perturber: empirical "
                                        "epsilon lower bound and distribution test")
    command.add_argument("mechanism", help=MECHANISM_HELP)
    command.add_argument("--reports", type=int, default=200_000,
                         help="reports drawn per audited population (default 200000)")
    command.add_argument("--confidence", type=float, default=0.99,
                         help="a sound mechanism passes with at least this probability (default 0.99)")
    command.add_argument("--seed", type=int, default=None, help="random seed (default: fresh entropy)")
    command.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    command.add_argument("--json", action="store_true", help="print the result as JSON")
    command.set_defaults(run=_audit, inputs=("mechanism",))
    command = add_command("simulate", help="perturb a simulated population and estimate; compare with theory")
    command.add_argument("mechanism", help=MECHANISM_HELP)
    command.add_argument("-n", type=int, default=100_000, help="number of users (default 100000)")
    command.add_argument("--seed", type=int, default=None, help="random seed (default: fresh entropy)")
    command.add_argument("--truth", default=None, metavar="JSON",
                         help="the true distribution of the population, e.g. '[0.5, 0.3, 0.2]' (default: the design "
                              "prior, and a population drifted from it)")
    command.add_argument("-r", "--repetitions", type=int, default=20,
                         help="perturb-and-estimate runs on the same users (default 20): bias, sd and coverage")
    command.add_argument("--method", default=None, help="estimation method (default: the mechanism's)")
    command.add_argument("--no-drift", action="store_true", help="skip the drifted population")
    command.add_argument("--candidates", default=None, metavar="FILE",
                         help="open-domain families: a text file of strings, one per line, the users are drawn from "
                              "(Zipf(1) over the file's order unless --truth) and the estimate decodes over")
    command.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    command.add_argument("--json", action="store_true",
                         help="print the estimates, expectations and standard deviations as JSON")
    command.set_defaults(run=_simulate, inputs=("mechanism", "candidates"))
    command = add_command("perturb", help="perturb the values in a CSV or Parquet file into a Parquet report file "
                                          "(simulation and gateway use)")
    command.add_argument("mechanism", help=MECHANISM_HELP)
    command.add_argument("values", help="CSV or .parquet file with a column 'value' (labels or indices; numeric "
                                        "mechanisms with d > 1: columns value_0 .. value_{d-1}; and 'user_id' "
                                        "where the mechanism keys public randomness by user)")
    command.add_argument("-o", "--output", required=True, help="where to write the reports (Parquet)")
    command.add_argument("--seed", type=int, default=None,
                         help="simulation seed (one PCG64 stream per block of 65536 users); default: the "
                              "cryptographic stream keyed from the OS, what a deployment uses")
    command.add_argument("--start", type=int, default=None,
                         help="with --seed: the index of this file's first user in the simulation, a multiple of "
                              "65536 (default 0); give each file of one simulation its own range (perturb prints "
                              "the next file's --start)")
    command.add_argument("--keys", default=None, metavar="FILE",
                         help="memoise the permanent response (l-grr, l-ue, l-olh, dbitflip, l-table, rappor, "
                              "cms-lip): a key file, made on first use "
                              "and bound to this mechanism; the values file then needs a column 'device' (int64 "
                              "ids), and each device's memo key is derived from the file's secret and its id. Give "
                              "each round's file the same --keys (and, with --seed, its own seed)")
    command.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    command.set_defaults(run=_perturb, inputs=("mechanism", "values"), output_format=("output", "Parquet"))
    command = add_command("aggregate", help="aggregate report files (streaming, any number, local or Dask) into an "
                                            "aggregate JSON")
    command.add_argument("mechanism", help=MECHANISM_HELP + ", whose reports these are")
    command.add_argument("reports", nargs="+", help="report files (Parquet or NPY)")
    command.add_argument("-o", "--output", required=True, help="where to write the aggregate JSON")
    command.add_argument("--engine", choices=["local", "dask"], default="local",
                         help="local: this process; dask: a Dask cluster (default local)")
    command.add_argument("--scheduler", default=None, metavar="ADDRESS",
                         help="address of a running Dask scheduler (default with --engine dask: a 2-worker "
                              "LocalCluster)")
    command.add_argument("--batch-rows", type=int, default=1 << 20, help="reports read at a time (default 1048576)")
    command.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    command.set_defaults(run=_aggregate, inputs=("mechanism", "reports"), output_format=("output", "JSON"))
    command = add_command("estimate", help="the estimate of an aggregate JSON, with standard errors and confidence "
                                           "intervals")
    command.add_argument("mechanism", help=MECHANISM_HELP + ", whose reports the aggregate counts")
    command.add_argument("aggregate", help="aggregate JSON file (written by `lipdesign aggregate`)")
    command.add_argument("--method", default=None, help="estimation method (default: the mechanism's)")
    command.add_argument("--consistency", default=None, choices=["norm-sub"], help="make frequencies consistent")
    command.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    command.add_argument("--json", action="store_true", help="print the estimate as JSON")
    command.add_argument("--candidates", default=None, metavar="FILE",
                         help="open-domain families (rappor, cms, hcms, cms-lip, pem, treehist): a text file of "
                              "the strings to decode over, one per line (UTF-8, at most the mechanism's max_bytes "
                              "each)")
    command.set_defaults(run=_estimate, inputs=("mechanism", "aggregate", "candidates"))
    command = add_command("rounds", help="the change between two rounds, or the average of several, of the same "
                                         "devices' reports, with standard errors that count each device's rounds "
                                         "being dependent")
    command.add_argument("mechanism",
                         help=MECHANISM_HELP + " (l-grr, l-ue, l-olh, dbitflip or l-table), whose reports these are")
    command.add_argument("reports", nargs="+", help="one report file per round (Parquet or NPY), in round order")
    which = command.add_mutually_exclusive_group(required=True)
    which.add_argument("--change", action="store_true", help="the later round's frequencies minus the earlier's")
    which.add_argument("--average", action="store_true", help="the average of the rounds' frequencies")
    command.add_argument("--unaligned", action="store_true",
                         help="the files' rows are not the same devices in the same order (standard errors are "
                              "then the bound sum |w| SE, valid whatever the dependence)")
    command.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    command.set_defaults(run=_rounds, inputs=("mechanism", "reports"))
    command = add_command("plot", help="plot accuracy against epsilon of a spec's design (or of a mechanism JSON) "
                                       "beside its LDP counterparts and the lower bound, as a PNG")
    command.add_argument("input", help="spec file or mechanism JSON")
    command.add_argument("-o", "--output", required=True, help="where to write the PNG")
    command.add_argument("--epsilons", type=_epsilons, default=None, metavar="EPS,EPS,...",
                         help="the epsilons to plot (default: 1/4, 1/2, 1, 2 and 4 times the file's own, within "
                              "the families' range)")
    command.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    command.set_defaults(run=_plot, inputs=("input",), output_format=("output", "an image"))
    command = add_command("heavy-hitters", help="the most frequent strings of a text file (one per line) from one "
                                                 "simulated round of PEM or TreeHist, with confidence intervals")
    command.add_argument("file", help="text file, one string per line (UTF-8)")
    command.add_argument("--epsilon", type=float, required=True, help="each user's LDP level (one report)")
    command.add_argument("--top", type=int, default=20, help="how many strings to find (default 20)")
    command.add_argument("--protocol", choices=("pem", "treehist"), default="pem", help="pem (default) or treehist")
    command.add_argument("--max-bytes", type=int, dest="max_bytes", default=16,
                         help="the longest string in bytes, and the number of levels (default 16)")
    command.add_argument("--truncate", action="store_true",
                         help="cut longer strings at a character boundary instead of refusing them")
    command.add_argument("--seed", type=int, default=None, help="seed of the simulated users and the public hashes")
    command.add_argument("--json", action="store_true", help="print the strings and their estimates as JSON")
    command.set_defaults(run=_heavy_hitters, inputs=("file",))
    command = add_command("demo", help="run the built-in scenario, write a JSON table and a PNG plot")
    command.add_argument("--out", default="lipdesign-demo", help="output folder (default ./lipdesign-demo)")
    command.set_defaults(run=_demo)
    return parser


def _check_inputs(args):
    """Refuse, before any work and naming the argument, an input file that does not exist and an output the command
    cannot write: a folder, a place it may not create a file, a name whose extension is another format, or one of
    its own inputs (which the output would overwrite)."""
    inputs = []
    for name in getattr(args, "inputs", ()):
        paths = getattr(args, name)
        for path in [] if paths is None else [paths] if isinstance(paths, str) else paths:  # None: not given
            if not Path(path).is_file():
                raise ValidationError(f"{name} is {path!r}; no such file" + ("" if not Path(path).exists() else
                                                                               " (it is a folder)"))
            inputs.append((name, Path(path)))
    output, written = getattr(args, "output_format", (None, None))
    path = None if output is None else getattr(args, output)
    if path is not None:
        _check_output(Path(path), f"--{output}", written, inputs)


def _check_output(path, field, written, inputs):
    suffixes = OUTPUT_SUFFIXES[written]
    if path.suffix.lower() not in suffixes:
        raise ValidationError(f"{field} is {str(path)!r}; this command writes {written}, so the name must end in "
                              f"{' or '.join(suffixes)}")
    if path.is_dir():
        raise ValidationError(f"{field} is {str(path)!r}; it is a folder: give a file name")
    if not path.parent.is_dir():
        raise ValidationError(f"{field} is {str(path)!r}; its folder {str(path.parent)!r} does not exist")
    for name, source in inputs:
        if path.exists() and path.samefile(source):
            raise ValidationError(f"{field} is {str(path)!r}, which is the {name} file: writing it would overwrite "
                                  "the input; give another name")
    existed = path.exists()
    try:  # a probe that neither truncates an existing file nor blocks on a pipe
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666))
    except OSError as error:
        raise ValidationError(f"{field} is {str(path)!r}; it cannot be written ({error.strerror})") from None
    if not existed:
        path.unlink(missing_ok=True)


def _one_line_warning(message, category, *where, **details):
    print(f"lipdesign: warning: {message}", file=sys.stderr)


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning  # restored when the block ends
            _check_inputs(args)
            return args.run(args) or 0
    except LipdesignError as error:
        print(f"lipdesign: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout stopped early (`| head`): nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's exit flush then writes nowhere
        return 0
    except OSError as error:  # name the file and the reason, without errno's bracketed number
        where = f"{error.filename}: " if error.filename else ""
        print(f"lipdesign: error: {where}{error.strerror or error}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as error:
        print(f"lipdesign: error: {error}", file=sys.stderr)
        return 2
    except MemoryError:
        print("lipdesign: error: out of memory; use a smaller problem (k, d, m or -n)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
