"""What the designed families (tables, unary encoding, local hashing) share: the lines of their summaries
(docs/math.md §2, §7.3)."""

from lipdesign.notions import LDP
from lipdesign.validation import upward


def baseline_lines(baselines, epsilon, value, kind="LIP"):
    """Summary lines of an encoding's baselines (n x sum Var by name), grouped by guarantee: for an LIP design the
    same eps-LIP, eps-LDP (stronger), 2 eps-LDP (the level eps-LIP implies); for an LDP design all at the same
    eps-LDP; ``value`` says what the encoding offers instead (docs/math.md §7.3)."""
    groups = (("the same eps-LIP", lambda name: "LIP" in name),
              (f"eps={epsilon:g}-LDP (stronger)", lambda name: "LIP" not in name and "2 eps" not in name),
              (f"{2 * epsilon:g}-LDP (the LDP level eps-LIP implies)", lambda name: "2 eps" in name))
    if kind == "LDP":
        groups = ((f"the same eps={epsilon:g}-LDP", lambda name: True),)
    lines = []
    for heading, member in groups:
        row = sorted(((name.replace(" at 2 eps", ""), figure) for name, figure in baselines.items() if member(name)),
                     key=lambda item: item[1])
        if row:
            lines.append(f"    at {heading}: " + ", ".join(f"{name} {figure:.4g}" for name, figure in row))
    if baselines:
        lines.append("    (the optimal RR table does at least as well as any encoding under the same notion; "
                     f"{value}, docs/math.md §7.3)")
    return lines


def guarantee_line(notion, epsilons):
    secret = getattr(notion, "secret", None)
    if isinstance(notion, LDP):
        return "  eps-LDP holds whatever the prior (and so does eps-LIP, docs/math.md §2)"
    if notion.prior_set is not None:
        return (f"  eps-LIP for X holds at every prior of the set ({notion.prior_set.kind}, "
                f"{len(notion.prior_set.vertices)} vertices; docs/math.md §2)")
    if secret is not None:
        return (f"  eps-LIP holds for the latent secret at the design prior; X itself is only LIP "
                f"{upward(epsilons['LIP for X'], 4)} there (docs/math.md §2)")
    return "  eps-LIP for X holds at the design prior; it implies at most 2 eps-LDP, whatever the prior (docs/math.md §2)"

