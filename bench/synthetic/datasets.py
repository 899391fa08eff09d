"""Seeded reference data for the benchmarks and tests: product-offer pairs and search queries.

Everything is synthetic and deterministic for a given ``(n, seed)``; nothing is downloaded.

Example::

    python -m bench.synthetic.datasets pairs --rows 100000 --seed 0 --out data/pairs.parquet
    python -m bench.synthetic.datasets queries --rows 100000 --seed 0 --out data/queries.jsonl
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench.synthetic.intents import INTENTS, WEIGHTS, render_query
from bench.synthetic.offers import build_catalogue, render_offer

_PAIR_COLUMNS = ("pair_id", "left_title", "left_brand", "left_description",
                 "right_title", "right_brand", "right_description", "label")
_HARD_SHARE = 0.5  # of the negatives; the rest are random (mostly easy) pairs
_INTENT_CSV = Path(__file__).resolve().parent.parent / "data" / "intent_examples.csv"  # bench/data/


def product_pairs(n: int, seed: int = 0, duplicate_fraction: float = 0.4) -> pd.DataFrame:
    """Candidate pairs of product offers with a known ``label`` (same product or not).

    As after a real candidate-generation step, popular offers recur in many pairs, so encoding
    each distinct side text once pays off; negatives are half hard (same brand and line or
    category, another variant or model) and half random.

    Args:
        n: number of pairs.
        seed: the same seed gives the same frame.
        duplicate_fraction: share of pairs labelled True (rounded to a whole count).

    Returns:
        Columns ``pair_id``, ``left_/right_`` ``title, brand, description`` (str) and ``label`` (bool).
    """
    if n < 0 or not 0.0 <= duplicate_fraction <= 1.0:
        raise ValueError(f"need n >= 0 and 0 <= duplicate_fraction <= 1, got n={n}, {duplicate_fraction}")
    rng = random.Random(seed)
    families, products = build_catalogue(max(50, n // 10), rng)
    n_pos = round(n * duplicate_fraction)
    sampler = _PairSampler(families, products, n, n_pos, np.random.default_rng(seed), rng)
    n_hard = round((n - n_pos) * _HARD_SHARE)
    pairs = (sampler.draw(sampler.positive, n_pos, True)
             + sampler.draw(sampler.hard_negative, n_hard, False, sampler.multi_weights)
             + sampler.draw(sampler.easy_negative, n - n_pos - n_hard, False))
    rng.shuffle(pairs)

    columns: dict[str, list] = {c: [] for c in _PAIR_COLUMNS}
    for i, (a, b, label) in enumerate(pairs):
        if rng.random() < 0.5:
            a, b = b, a
        left, right = sampler.text(a), sampler.text(b)
        columns["pair_id"].append(f"p{i:09d}")
        for side, text in (("left", left), ("right", right)):
            columns[f"{side}_title"].append(text[0])
            columns[f"{side}_brand"].append(text[1])
            columns[f"{side}_description"].append(text[2])
        columns["label"].append(label)
    return pd.DataFrame({c: pd.Series(v, dtype=bool if c == "label" else object) for c, v in columns.items()})


def search_queries(n: int, seed: int = 0) -> pd.DataFrame:
    """Search queries with their ``intent``, drawn from per-intent templates.

    Intents follow a shop's traffic (about a third product search) and share their labels with
    :func:`load_intent_examples`; most queries have 1-5 words, a tail has up to about 30.

    Returns:
        Columns ``query_id``, ``query`` and ``intent`` (str).
    """
    if n < 0:
        raise ValueError(f"need n >= 0, got {n}")
    rng = random.Random(seed)
    intents = rng.choices(INTENTS, weights=WEIGHTS, k=n)
    return pd.DataFrame({
        "query_id": [f"q{i:09d}" for i in range(n)],
        "query": [render_query(intent, rng) for intent in intents],
        "intent": intents,
    })


def load_intent_examples() -> pd.DataFrame:
    """The hand-written labelled queries (``intent, query, split``); see ``bench/data/README.md``."""
    return pd.read_csv(_INTENT_CSV, dtype=str, keep_default_na=False)


class _PairSampler:
    """Draws offer pairs by product popularity and renders each offer once."""

    def __init__(self, families, products, n: int, n_pos: int, nrng: np.random.Generator,
                 rng: random.Random) -> None:
        self.families, self.products, self.nrng, self.rng = families, products, nrng, rng
        # Zipf-like popularity; popular products are sold by more sellers (more distinct offers),
        # enough of them that the positives drawn for a product rarely run out of new pairs.
        ranks = nrng.permutation(len(products)) + 1
        self.weights = ranks ** -0.6
        self.weights /= self.weights.sum()
        wanted = np.maximum(2 * n * self.weights, 8 * n_pos * self.weights)
        self.n_offers = (np.sqrt(wanted).astype(int) + 2).tolist()
        self.members: dict[int, list[int]] = {}
        self.by_brand_type: dict[tuple, list[int]] = {}
        for p, prod in enumerate(products):
            self.members.setdefault(prod.family, []).append(p)
            fam = families[prod.family]
            self.by_brand_type.setdefault((fam.brand, fam.ptype.nouns[0]), []).append(p)
        multi = np.array([len(self.members[prod.family]) > 1 for prod in products])
        self.multi_weights = np.where(multi, self.weights, 0.0)
        self.multi_weights /= self.multi_weights.sum()
        self.cache: dict[tuple[int, int], tuple[str, str, str]] = {}
        self.seen: set[tuple] = set()

    def draw(self, kind, count: int, label: bool, weights: np.ndarray | None = None) -> list[tuple]:
        """``count`` new unordered offer pairs from ``kind(p, q)``, given two products drawn by ``weights``."""
        weights = self.weights if weights is None else weights
        out: list[tuple] = []
        while len(out) < count:
            before = len(out)
            picks = self.nrng.choice(len(self.products), size=(2 * (count - len(out)) + 16, 2), p=weights)
            for p, q in picks.tolist():
                pair = kind(p, q)
                if pair is None:
                    continue
                key = (min(pair), max(pair))
                if key in self.seen:
                    continue
                self.seen.add(key)
                out.append((*pair, label))
                if len(out) == count:
                    break
            if len(out) == before:
                raise RuntimeError(f"the catalogue ran out of new pairs after {before} of {count}")
        return out

    def _offer(self, p: int) -> tuple[int, int]:
        return p, int(self.n_offers[p] * self.rng.random() ** 1.3)  # the first offers are the most common

    def positive(self, p: int, _q: int):
        a, b = self._offer(p), self._offer(p)
        return (a, b) if a != b else None

    def hard_negative(self, p: int, _q: int):
        family = self.products[p].family
        if self.rng.random() < 0.3:  # another line of the same brand and product type
            fam = self.families[family]
            others = self.by_brand_type[(fam.brand, fam.ptype.nouns[0])]
            q = others[self.rng.randrange(len(others))]
            if self.products[q].family != family:
                return self._offer(p), self._offer(q)
        siblings = self.members[family]
        q = siblings[self.rng.randrange(len(siblings))]
        return (self._offer(p), self._offer(q)) if q != p else None

    def easy_negative(self, p: int, q: int):
        return (self._offer(p), self._offer(q)) if self.products[q].family != self.products[p].family else None

    def text(self, key: tuple[int, int]) -> tuple[str, str, str]:
        if key not in self.cache:
            p, j = key
            fam, prod = self.families[self.products[p].family], self.products[p]
            canonical = None if j == 0 else self.text((p, 0))[2]
            self.cache[key] = render_offer(fam, prod, self.rng, canonical)
        return self.cache[key]


def write(frame: pd.DataFrame, path: Path) -> None:
    """Parquet, or JSON lines for ``.jsonl``, or CSV for ``.csv``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True, force_ascii=False)
    elif path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.synthetic.datasets", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    for kind in ("pairs", "queries"):
        p = sub.add_parser(kind, help=f"write synthetic {'product pairs' if kind == 'pairs' else 'search queries'}")
        p.add_argument("--rows", type=int, required=True, help="number of rows")
        p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
        p.add_argument("--out", type=Path, required=True, help="output file: .parquet, .jsonl or .csv")
        if kind == "pairs":
            p.add_argument("--duplicate-fraction", type=float, default=0.4, help="share of duplicates (default: 0.4)")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    if args.kind == "pairs":
        frame = product_pairs(args.rows, args.seed, args.duplicate_fraction)
        sides = [frame[[f"{s}_title", f"{s}_brand", f"{s}_description"]].itertuples(index=False, name=None)
                 for s in ("left", "right")]
        distinct = len(set().union(*sides))
        detail = f"{int(frame['label'].sum())} duplicates, {distinct} distinct side texts"
    else:
        frame = search_queries(args.rows, args.seed)
        detail = f"{frame['intent'].nunique()} intents"
    generated = time.perf_counter() - start
    write(frame, args.out)
    print(f"wrote {len(frame)} {args.kind} ({detail}; seed {args.seed}) to {args.out} "
          f"in {time.perf_counter() - start:.1f}s ({generated:.1f}s generating)")


if __name__ == "__main__":
    main()
