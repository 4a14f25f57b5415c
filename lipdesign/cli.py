"""Command line: ``lipdesign design | harmony | verify | simulate | demo``.

Every LipdesignError (bad input, infeasible or too-large problem, failed verification) ends the command
with exit code 2 and one line on stderr, never a traceback; a verification that runs but fails exits 1.
"""

import argparse
import json
import sys
from pathlib import Path

from lipdesign.errors import LipdesignError, ValidationError, VerificationError


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"lipdesign: error: {message} (see lipdesign --help)\n")


def _design(args):
    from lipdesign.designer import design
    from lipdesign.io import read_json, spec_to_problem

    prior, notion, objective, options = spec_to_problem(read_json(args.spec), args.spec)
    mechanism = design(prior, notion, objective, **options)
    mechanism.to_json(args.output)
    print(mechanism.summary())
    print(f"wrote {args.output}")


def _verify(args):
    from lipdesign.harmony import HarmonyMechanism
    from lipdesign.io import load
    from lipdesign.verification import verify

    try:
        mechanism = load(args.mechanism)
    except VerificationError as error:
        print(f"FAIL: {error}")
        return 1
    if isinstance(mechanism, HarmonyMechanism):
        if mechanism.privacy_table() is None:
            print(f"{mechanism!r}: continuous output space, no finite table to verify; guarantee: "
                  f"{mechanism.guarantee}")
        else:
            print(f"{mechanism!r}: " + mechanism.verify().summary())
        return 0
    print(verify(mechanism, exact=True).summary())
    print("verified epsilons: " + ", ".join(f"{k} {v:.12g}" for k, v in mechanism.epsilons.items()))
    return 0


def _harmony(args):
    from lipdesign.harmony import HarmonyMechanism, load_all

    load_all()
    parameters = {"epsilon": args.epsilon}
    for item in args.param:
        name, separator, text = item.partition("=")
        if not separator or not name:
            raise ValidationError(f"--param is {item!r}; expected NAME=VALUE, e.g. d=4 or attributes='[\"numeric\", 3]'")
        if name == "epsilon":
            raise ValidationError(f"--param is {item!r}; epsilon is set by --epsilon only")
        try:
            parameters[name] = json.loads(text)
        except json.JSONDecodeError:
            parameters[name] = text
    if args.name not in HarmonyMechanism.registry:
        raise ValidationError(f"mechanism is {args.name!r}; expected one of "
                              f"{', '.join(sorted(HarmonyMechanism.registry))}")
    try:
        mechanism = HarmonyMechanism.registry[args.name](**parameters)
    except TypeError as error:
        raise ValidationError(f"{args.name}: {error}") from None
    mechanism.to_json(args.output)
    print(repr(mechanism))
    if mechanism.privacy_table() is not None:
        print(mechanism.verify().summary())
    else:
        print(f"continuous output space, no finite table to verify; guarantee: {mechanism.guarantee}")
    print(f"wrote {args.output}")


def _simulate_harmony(mechanism, args):
    import numpy as np

    from lipdesign.simulation import simulate_harmony

    result = simulate_harmony(mechanism, args.n, rng=args.seed)
    print(f"{result.n} users, {mechanism!r}")
    width = max(len(name) for name in result.names)
    print(f"{'estimate of':>{width}}  {'true':>9}  {'expected':>9}  {'estimate':>9}  {'theory sd':>9}  {'z':>6}")
    for row in zip(result.names, result.truth, result.expected, result.estimate, result.std, result.z_scores):
        print(f"{row[0]:>{width}}  " + "  ".join(f"{value:9.5f}" for value in row[1:5]) + f"  {row[5]:6.2f}")
    finite = np.isfinite(result.z_scores)
    skipped = f"; {np.count_nonzero(~finite)} without reports skipped" if not finite.all() else ""
    print(f"sum of z^2 = {float((result.z_scores[finite] ** 2).sum()):.2f} over {np.count_nonzero(finite)} "
          f"estimates{skipped} (chi-square p-value {result.chi_square_p_value:.3g}; expected = E[estimate], "
          "theory sd from the closed-form variance)")


def _simulate(args):
    from lipdesign.harmony import HarmonyMechanism
    from lipdesign.io import load
    from lipdesign.simulation import simulate

    mechanism = load(args.mechanism)
    if isinstance(mechanism, HarmonyMechanism):
        return _simulate_harmony(mechanism, args)
    result = simulate(mechanism, args.n, rng=args.seed)
    low, high = result.confidence_interval
    print(f"{result.n} users, {mechanism.notion.kind} eps={mechanism.notion.epsilon:g}, "
          f"{mechanism.objective.kind} objective")
    print(f"per-user MSE of the MMSE estimate: empirical {result.empirical_mse:.6g} "
          f"(99% CI {low:.6g} .. {high:.6g}), theoretical {result.theoretical_mse:.6g}")
    width = max(len(str(label)) for label in mechanism.labels)
    print(f"{'value':>{width}}  {'true':>8}" + "".join(f"  {name:>8}" for name in result.estimates))
    for x, label in enumerate(mechanism.labels):
        row = "".join(f"  {estimate[x]:8.4f}" for estimate in result.estimates.values())
        print(f"{label!s:>{width}}  {result.true_frequencies[x]:8.4f}{row}")


def _demo(args):
    from lipdesign import demo

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, mechanisms = demo.run()
    print("Screen-time buckets", list(demo.BUCKETS), "with the age band as latent secret")
    print("histogram MSE per user (MMSE estimate):")
    print(f"{'epsilon':>8} {'LIP(age)':>10} {'LIP(X)':>10} {'opt LDP':>10} {'GRR':>10}")
    for row in rows:
        print(f"{row[0]:8g} " + " ".join(f"{value:10.5f}" for value in row[1:]))
    epsilon = 1.0 if 1.0 in mechanisms else next(iter(mechanisms))
    table_path, plot_path = out / "demo-mechanism.json", out / "demo-mse.png"
    mechanisms[epsilon].to_json(table_path)
    demo.plot(rows, plot_path)
    print(f"wrote {table_path} (LIP for the age band, eps={epsilon:g}) and {plot_path}")


def build_parser():
    parser = _Parser(prog="lipdesign", description="Design, verify and run local privacy mechanisms.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    command = commands.add_parser("design", help="design the MSE-optimal table for a JSON spec")
    command.add_argument("spec", help="spec file (JSON; see README and examples/)")
    command.add_argument("-o", "--output", required=True, help="where to write the mechanism JSON")
    command.set_defaults(run=_design)
    command = commands.add_parser("harmony", help="write a Harmony / LDP mechanism (lipdesign.harmony) as JSON")
    command.add_argument("name", help="class name: Duchi, HarmonyNumeric, GRR, OLH, HarmonyMixed, ...")
    command.add_argument("--epsilon", type=float, required=True)
    command.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                         help="constructor argument, VALUE read as JSON (repeat: -p d=4 -p seed=7)")
    command.add_argument("-o", "--output", required=True, help="where to write the mechanism JSON")
    command.set_defaults(run=_harmony)
    command = commands.add_parser("verify", help="re-verify a mechanism JSON exactly")
    command.add_argument("mechanism")
    command.set_defaults(run=_verify)
    command = commands.add_parser("simulate", help="perturb a simulated population and estimate; compare with theory")
    command.add_argument("mechanism")
    command.add_argument("-n", type=int, default=100_000, help="number of users (default 100000)")
    command.add_argument("--seed", type=int, default=None, help="random seed (default: fresh entropy)")
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
