"""What each recall lever is worth, on LoCoMo and on REALTALK, with a paired bootstrap.

A lever stays only if it pays on both development sets: one written by language models
(LoCoMo) and one written by people (REALTALK). For each data set this imports the
conversations once with the default levers, asks every question with them, then again
with each lever off in turn (``sentence_units``, read when remembering, imports anew),
and prints each lever's effect, default minus lever off, with its 95% paired bootstrap
interval over the questions (the same questions either way), overall and per category.

    python bench/recall_levers.py [--datasets locomo,realtalk] [--engine sqlite]
        [--variants=-named_dates,-sentence_units,+aliases_learned,none] [--keep]

A variant is ``none``, ``all``, or changes to the default: ``-name`` turns a default
lever off, ``+name`` turns on one that is off by default (a lever being tried), joined
with "/" (``-a/+b``). Without ``--variants``: each default lever off, and ``none``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from statistics import mean

import locomo_recall
import realtalk_recall
from recall_measure import (
    CATEGORY_NAMES,
    REPO_ROOT,
    BenchError,
    Dataset,
    Query,
    ask_again,
    engine_env,
    format_table,
    measure,
    paired_bootstrap,
    recalls_at,
)

sys.path.insert(0, str(REPO_ROOT))
from layers.episodic.recall_levers import RecallLevers  # noqa: E402

LOADERS = {"locomo": locomo_recall.load, "realtalk": realtalk_recall.load}
COMPARED_AT = (5, 10)
# Read when a turn is remembered: a variant that changes it imports anew.
READ_WHEN_REMEMBERING = frozenset(("sentence_units",))


@dataclass(frozen=True)
class Effect:
    variant: str
    recall: tuple[float, ...]  # at COMPARED_AT, with the variant
    overall: tuple[tuple[float, float, float], ...]  # (mean, low, high) at each k
    by_category: dict[int, float]  # the default's R@5 minus the variant's


def default_levers() -> frozenset[str]:
    defaults = RecallLevers()
    return frozenset(field.name for field in fields(RecallLevers) if getattr(defaults, field.name))


def levers_of(variant: str) -> frozenset[str]:
    """The levers a variant turns on (see the module's docstring)."""
    every = frozenset(field.name for field in fields(RecallLevers))
    if variant in ("none", "all"):
        return every if variant == "all" else frozenset()
    levers = set(default_levers())
    for change in variant.split("/"):
        name = change[1:]
        if change[:1] not in "+-" or name not in every:
            raise BenchError(f"variant {variant!r}: {change!r} is not +LEVER or -LEVER"
                             f" (the levers: {', '.join(sorted(every))})")
        (levers.add if change[0] == "+" else levers.discard)(name)
    return frozenset(levers)


def lever_env(levers: frozenset[str]) -> dict[str, str]:
    return {"RECALL_LEVERS": ",".join(sorted(levers)) or "none"}


def effect_of(variant: str, queries: Sequence[Query], reference: Mapping[str, Sequence[str]],
              ranked: Mapping[str, Sequence[str]]) -> Effect:
    """What the default gains over ``variant``, overall and per category."""
    overall = []
    recall = []
    for k in COMPARED_AT:
        with_variant = recalls_at(queries, ranked, k)
        recall.append(mean(with_variant))
        overall.append(paired_bootstrap(with_variant, recalls_at(queries, reference, k)))
    by_category = {}
    for category in CATEGORY_NAMES:
        members = [query for query in queries if query.category == category]
        if members:
            by_category[category] = (mean(recalls_at(members, reference, 5))
                                     - mean(recalls_at(members, ranked, 5)))
    return Effect(variant, tuple(recall), tuple(overall), by_category)


def study(dataset: Dataset, variants: Sequence[str], work: Path,
          engine: Mapping[str, str]) -> list[Effect]:
    default = default_levers()
    home = work / f"{dataset.name}-home"
    home.mkdir()
    reference = measure(dataset, work, home, {**engine, **lever_env(default)}).ranked
    print(f"{dataset.name}, default levers ({len(dataset.queries)} questions):")
    print("\n".join(format_table(dataset.queries, reference)))
    effects = []
    for number, variant in enumerate(variants):
        levers = levers_of(variant)
        env = {**engine, **lever_env(levers)}
        if any((name in levers) != (name in default) for name in READ_WHEN_REMEMBERING):
            other_home = work / f"{dataset.name}-home-{number}"
            other_home.mkdir()
            if engine:  # a database of its own, as a fresh home has
                raise BenchError(f"{variant}: a variant read when remembering needs --engine"
                                 " sqlite (each import a home of its own)")
            ranked = measure(dataset, work, other_home, env).ranked
        else:
            ranked, _ = ask_again(dataset, work, home, env)
        effects.append(effect_of(variant, dataset.queries, reference, ranked))
    return effects


def effect_lines(dataset: Dataset, effects: Sequence[Effect]) -> list[str]:
    categories = [c for c in CATEGORY_NAMES if any(q.category == c for q in dataset.queries)]
    header = (f"{'variant':<34}{'R@5':>6}{'R@10':>6}   {'default gains R@5 [95%]':<24}"
              f"{'R@10 [95%]':<24}" + "".join(f"{CATEGORY_NAMES[c][:9]:>10}" for c in categories))
    lines = [f"{dataset.name}: what the default gains over each variant "
             "(paired bootstrap over questions; by category: R@5)", header]
    for effect in effects:
        cells = "".join(f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]   "
                        for mean, low, high in effect.overall)
        lines.append(f"{effect.variant:<34}" + "".join(f"{r:>6.3f}" for r in effect.recall)
                     + f"   {cells}"
                     + "".join(f"{effect.by_category[c]:>+10.3f}" for c in categories))
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Each recall lever's effect on two data sets.")
    parser.add_argument("--datasets", default="locomo,realtalk",
                        help="comma-separated: locomo, realtalk")
    parser.add_argument("--variants", default=None,
                        help="comma-separated variants (see the docstring); default: each"
                             " default lever off, and none")
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--keep", action="store_true", help="keep the temporary files")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    variants = (args.variants.split(",") if args.variants
                else [f"-{name}" for name in sorted(default_levers())] + ["none"])
    work = Path(tempfile.mkdtemp(prefix="thoth-levers-"))
    try:
        for variant in variants:
            levers_of(variant)  # a typo fails before minutes of importing
        for name in args.datasets.split(","):
            if name not in LOADERS:
                raise BenchError(f"no data set {name!r}; the data sets: {', '.join(LOADERS)}")
            dataset = LOADERS[name]()
            with engine_env(args.engine, work) as engine:
                effects = study(dataset, variants, work, engine)
            print()
            print("\n".join(effect_lines(dataset, effects)))
            print()
    except (BenchError, OSError, ValueError) as error:
        print(f"recall_levers: error: {error}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
