"""Command line: ``lipdesign design | compare | mechanism | verify | audit | simulate | demo``.

Every LipdesignError (bad input, infeasible or too-large problem, failed verification) ends the command
with exit code 2 and one line on stderr, never a traceback; a verification or an audit that runs but fails exits 1.
"""

import argparse
import inspect
import json
import sys
import warnings
from pathlib import Path

from lipdesign.errors import LipdesignError, ValidationError, VerificationError


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"lipdesign: error: {message} (see lipdesign --help)\n")


def _design(args):
    from lipdesign.designer import design
    from lipdesign.io import read_json, spec_to_problem

    prior, notion, objective, options = spec_to_problem(read_json(args.spec), args.spec)
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    mechanism = design(prior, notion, objective, progress=progress, **options)
    mechanism.to_json(args.output)
    print(mechanism.summary())
    print(f"wrote {args.output} (fingerprint {mechanism.fingerprint})")


def _compare(args):
    from lipdesign.designer import compare
    from lipdesign.io import read_json, spec_to_problem

    prior, notion, objective, options = spec_to_problem(read_json(args.spec), args.spec)
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    comparison = compare(prior, notion, objective, progress=progress,
                         **{key: value for key, value in options.items() if key != "family"})
    print(comparison.summary())
    if "family" in options:
        print(f"(the spec names family {options['family']!r}; compare designs every family, `lipdesign design` "
              "that one)")


def _verify(args):
    from lipdesign.io import load

    try:
        mechanism = load(args.mechanism)
    except VerificationError as error:
        print(f"FAIL: {error}")
        return 1
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
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    result = audit(mechanism, reports=args.reports, confidence=args.confidence, rng=args.seed, progress=progress)
    print(json.dumps(result.to_dict(), indent=1) if args.json else result.summary())
    return 0 if result.passed else 1


def _mechanism(args):
    from lipdesign.io.envelope import LEGACY_CLASS_NAMES
    from lipdesign.mechanisms import families, family_class

    parameters = {"epsilon": args.epsilon}
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
    family = LEGACY_CLASS_NAMES.get(args.family, args.family)
    if family == "table" or family not in families():
        raise ValidationError(f"family is {args.family!r}; it must be one of "
                              f"{', '.join(f for f in families() if f != 'table')} (designed tables come from "
                              "`lipdesign design`)")
    cls = family_class(family)
    signature = {name: value for name, value in inspect.signature(cls.__init__).parameters.items() if name != "self"}
    unknown = sorted(set(parameters) - set(signature))
    missing = [name for name, value in signature.items() if value.default is value.empty and name not in parameters]
    if unknown or missing:
        problem = f"--param is {unknown[0]!r}" if unknown else f"{missing[0]} is missing (-p {missing[0]}=VALUE)"
        raise ValidationError(f"{problem}; {family} takes {', '.join(signature)}")
    mechanism = cls(**parameters)
    mechanism.to_json(args.output)
    print(repr(mechanism))
    if mechanism.finite:
        print(mechanism.verify().summary())
    else:
        print(f"continuous output space, no finite table to verify; guarantee: {mechanism.guarantee.summary()}")
    print(f"wrote {args.output} (fingerprint {mechanism.fingerprint})")


def _simulate(args):
    from lipdesign.io import load
    from lipdesign.simulation import simulate

    mechanism = load(args.mechanism)
    truth = None
    if args.truth is not None:
        try:
            truth = json.loads(args.truth)
        except json.JSONDecodeError:
            raise ValidationError(f"--truth is {args.truth!r}; it must be a JSON list of probabilities, one per "
                                  "value, e.g. '[0.5, 0.3, 0.2]'") from None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = simulate(mechanism, args.n, rng=args.seed, truth=truth, repetitions=args.repetitions,
                          method=args.method, drift=not args.no_drift)
    print(repr(mechanism))
    print(result.summary())
    for message in dict.fromkeys(str(warning.message) for warning in caught):
        print(f"lipdesign: warning: {message}", file=sys.stderr)


def _demo(args):
    import numpy as np

    from lipdesign import demo
    from lipdesign.mechanisms import verify
    from lipdesign.model import PriorSet

    out = Path(args.out)
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


def build_parser():
    parser = _Parser(prog="lipdesign", description="Design, verify and run local privacy mechanisms.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    command = commands.add_parser("design", help="design the optimal table for a JSON spec (default objective: the population histogram)")
    command.add_argument("spec", help="spec file (JSON; see README and examples/)")
    command.add_argument("-o", "--output", required=True, help="where to write the mechanism JSON")
    command.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    command.set_defaults(run=_design)
    command = commands.add_parser("compare", help="design every family (rr, unary, hashing) for a JSON spec and "
                                                  "print their figures side by side")
    command.add_argument("spec", help="spec file (JSON; see README and examples/)")
    command.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    command.set_defaults(run=_compare)
    command = commands.add_parser("mechanism", aliases=["harmony"],
                                  help="write a fixed mechanism (GRR, OUE, OLH, Duchi, Harmony's, ...) as JSON")
    command.add_argument("family", help="family id: grr, oue, olh, hadamard, duchi, harmony-numeric, "
                                        "harmony-mixed, ... (lipdesign 0.1.0's class names work too)")
    command.add_argument("--epsilon", type=float, required=True)
    command.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                         help="constructor argument, VALUE read as JSON (repeat: -p d=4 -p seed=7)")
    command.add_argument("-o", "--output", required=True, help="where to write the mechanism JSON")
    command.set_defaults(run=_mechanism)
    command = commands.add_parser("verify", help="re-verify a mechanism JSON exactly")
    command.add_argument("mechanism")
    command.set_defaults(run=_verify)
    command = commands.add_parser("audit", help="black-box statistical audit of a mechanism JSON's perturber: "
                                                "empirical epsilon lower bound and distribution test")
    command.add_argument("mechanism")
    command.add_argument("--reports", type=int, default=200_000,
                         help="reports drawn per audited population (default 200000)")
    command.add_argument("--confidence", type=float, default=0.99,
                         help="a sound mechanism passes with at least this probability (default 0.99)")
    command.add_argument("--seed", type=int, default=None, help="random seed (default: fresh entropy)")
    command.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    command.add_argument("--json", action="store_true", help="print the result as JSON")
    command.set_defaults(run=_audit)
    command = commands.add_parser("simulate", help="perturb a simulated population and estimate; compare with theory")
    command.add_argument("mechanism")
    command.add_argument("-n", type=int, default=100_000, help="number of users (default 100000)")
    command.add_argument("--seed", type=int, default=None, help="random seed (default: fresh entropy)")
    command.add_argument("--truth", default=None, metavar="JSON",
                         help="the true distribution of the population, e.g. '[0.5, 0.3, 0.2]' (default: the design "
                              "prior, and a population drifted from it)")
    command.add_argument("-r", "--repetitions", type=int, default=20,
                         help="perturb-and-estimate runs on the same users (default 20): bias, sd and coverage")
    command.add_argument("--method", default=None, help="estimation method (default: the mechanism's)")
    command.add_argument("--no-drift", action="store_true", help="skip the drifted population")
    command.set_defaults(run=_simulate)
    command = commands.add_parser("demo", help="run the built-in scenario, write a JSON table and a PNG plot")
    command.add_argument("--out", default="lipdesign-demo", help="output folder (default ./lipdesign-demo)")
    command.set_defaults(run=_demo)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.run(args) or 0
    except LipdesignError as error:
        print(f"lipdesign: error: {error}", file=sys.stderr)
        return 2
    except (OSError, json.JSONDecodeError) as error:
        print(f"lipdesign: error: {error}", file=sys.stderr)
        return 2
    except MemoryError:
        print("lipdesign: error: out of memory; use a smaller problem (k, d, m or -n)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
