"""Synthetic products and the seller offers that describe them.

A family is one brand's product line; its products (variants) differ along one attribute and in
model code, which is what makes hard negatives. An offer is one seller's text for a product:
offer 0 is the clean manufacturer listing, the others are perturbed the way marketplace sellers
write (reordered tokens, other unit spellings, casing, boilerplate, typos, short or copied
descriptions), which is what makes realistic duplicates.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from bench.synthetic.catalog import (
    AUTHORS, AXES, BOILERPLATE, BOILERPLATE_TITLE, BOOK_WORDS, BRANDS, CATEGORY_FACTS, INTROS,
    SPEC_FORMS, TYPES, ProductType,
)

_LINE_MODIFIERS = ("", "", "", " Pro", " Max", " Lite", " Plus", " X", " 2", " 3", " S", " Ultra", " Mini", " Air",
                   " SE", " Neo")
_BOOK_TITLES = ("The {a} of {b}", "{a} and {b}", "The Last {a}", "A {a} in {b}", "Beneath the {a}", "The {a} Keeper")


@dataclass(frozen=True)
class Family:
    ptype: ProductType
    brand: str
    line: str
    audience: str
    features: tuple[str, ...]


@dataclass(frozen=True)
class Product:
    family: int
    attrs: tuple[tuple[str, object], ...]
    code: str


def build_catalogue(n_families: int, rng: random.Random) -> tuple[list[Family], list[Product]]:
    """Draw families and their variants; variants share everything but one attribute and the code."""
    families: list[Family] = []
    products: list[Product] = []
    used_codes: set[str] = set()
    for f in range(n_families):
        t = rng.choice(TYPES)
        brand = rng.choice(BRANDS[t.category])
        features = tuple(rng.sample(t.features, min(len(t.features), rng.randint(2, 4))))
        if t.lines:
            line = rng.choice(t.lines) + rng.choice(_LINE_MODIFIERS)
        else:  # books: the line is the title, the author a feature
            line = rng.choice(_BOOK_TITLES).format(a=rng.choice(BOOK_WORDS), b=rng.choice(BOOK_WORDS))
            features = (f"by {rng.choice(AUTHORS)}",) + features[:1]
        families.append(Family(t, brand, line, rng.choice(t.audiences) if t.audiences else "", features))

        fixed = {a: rng.choice(AXES[a].values) for a in t.axes}
        vary = rng.choice(t.axes)
        n_variants = min(len(AXES[vary].values), rng.choice((1, 1, 2, 2, 3, 4, 5)))
        base = _base_code(brand, rng)
        while base in used_codes:  # model codes name exactly one product
            base = _base_code(brand, rng)
        used_codes.add(base)
        for value in rng.sample(AXES[vary].values, n_variants):
            attrs = tuple((a, value if a == vary else fixed[a]) for a in t.axes)
            code = _isbn(rng) if t.category == "books" else f"{base}-{_value_code(value)}"
            products.append(Product(f, attrs, code))
    return families, products


def _base_code(brand: str, rng: random.Random) -> str:
    letters = "".join(c for c in brand.upper() if c.isalpha())
    prefix = letters[0] + rng.choice(letters[1:])
    return rng.choice((f"{prefix}-{rng.randint(100, 9999)}", f"{prefix}{rng.randint(10, 999)}{rng.choice('ABCEKMSX')}"))


def _value_code(value) -> str:
    """The part of a model code that names the variant: 'Black' -> BLC, '30x32' -> 30X32."""
    text = f"{value:g}" if isinstance(value, float) else str(value)
    if any(c.isdigit() for c in text):
        return "".join(c for c in text if c.isalnum()).upper()
    words = [w for w in text.split() if w.isalpha()]
    if len(words) > 1:
        return "".join(w[0] for w in words).upper()
    word = words[0].upper()
    return word[0] + "".join(c for c in word[1:] if c not in "AEIOU")[:2]


def _isbn(rng: random.Random) -> str:
    return f"978-1-{rng.randint(10000, 99999)}-{rng.randint(100, 999)}-{rng.randint(0, 9)}"


def render_offer(fam: Family, prod: Product, rng: random.Random, canonical: str | None) -> tuple[str, str, str]:
    """One seller's (title, brand, description); ``canonical`` is offer 0's description, None for offer 0."""
    clean = canonical is None
    title = _clean_title(fam, prod) if clean else _seller_title(fam, prod, rng)
    brand = fam.brand if clean else _seller_brand(fam.brand, rng)
    if clean:
        description = _description(fam, prod, rng)
    else:
        mode = rng.random()
        if mode < 0.2:  # sellers copy the manufacturer text
            description = canonical
        elif mode < 0.3 and canonical:
            words = canonical.split()
            description = " ".join(words[: rng.randint(6, 30)]) + "..."
        else:
            description = _description(fam, prod, rng)
    return title, brand, description


def _spell(axis: str, value, rng: random.Random | None) -> str:
    spellings = AXES[axis].spellings(value)
    return spellings[0] if rng is None else rng.choice(spellings)


def _clean_title(fam: Family, prod: Product) -> str:
    t = fam.ptype
    head = " ".join(x for x in (fam.brand if t.brand_in_title > 0.5 else "", fam.line, fam.audience, t.nouns[0]) if x)
    parts = [head, *fam.features[:2], *(_spell(a, v, None) for a, v in prod.attrs)]
    if t.code_in_title >= 0.5:
        parts.append(f"({prod.code})")
    return ", ".join(parts)


def _seller_title(fam: Family, prod: Product, rng: random.Random) -> str:
    t = fam.ptype
    noun = rng.choice(t.nouns)
    brand = fam.brand if rng.random() < t.brand_in_title * 0.85 else ""
    attrs = [_spell(a, v, rng) for a, v in prod.attrs]
    code = _respell_code(prod.code, rng) if rng.random() < t.code_in_title else ""
    style = rng.random()
    if style < 0.2:  # terse: 3-6 words
        words = [brand or fam.line, noun, attrs[0]]
        if rng.random() < 0.5 and len(attrs) > 1:
            words.append(attrs[1])
        title = " ".join(words)
    else:
        head = [x for x in (brand, fam.line, fam.audience, noun) if x]
        n_feat = len(fam.features) if style > 0.85 else rng.randint(0, 2)
        feats = rng.sample(fam.features, min(n_feat, len(fam.features)))
        order = rng.random()
        if order < 0.5:
            chunks = [" ".join(head), *feats, *attrs, code]
        elif order < 0.75:
            chunks = [" ".join(head), *attrs, *feats, code]
        elif order < 0.9:
            chunks = [" ".join(attrs), " ".join(head), *feats, code]
        else:
            chunks = [code, " ".join(head[::-1]), *attrs, *feats]
        title = rng.choice((" ", ", ", " - ", " | ")).join(c for c in chunks if c)
        if style > 0.85:  # keyword stuffing
            title += " " + " ".join(rng.sample(BOILERPLATE_TITLE, 2))
    r = rng.random()
    if r < 0.1:
        title = f"{rng.choice(BOILERPLATE_TITLE)} {title}"
    elif r < 0.2:
        title = f"{title} {rng.choice(BOILERPLATE_TITLE)}"
    r = rng.random()
    if r < 0.06:
        title = title.upper()
    elif r < 0.12:
        title = title.lower()
    if rng.random() < 0.1:
        title = typo(title, rng)
    return title


def _respell_code(code: str, rng: random.Random) -> str:
    return rng.choice((code, code, code.replace("-", ""), code.lower(), code.replace("-", " ")))


def _seller_brand(brand: str, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.04:
        return ""
    if r < 0.09:
        return brand.upper()
    if r < 0.13:
        return brand.lower()
    if r < 0.15:
        return f"{brand} Store"
    return brand


def typo(text: str, rng: random.Random) -> str:
    """One slip of the keyboard in one word: two letters swapped, one dropped or doubled."""
    words = text.split(" ")
    candidates = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
    if not candidates:
        return text
    i = rng.choice(candidates)
    w = words[i]
    j = rng.randrange(1, len(w) - 1)
    kind = rng.randrange(3)
    if kind == 0:
        w = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    elif kind == 1:
        w = w[:j] + w[j + 1:]
    else:
        w = w[:j] + w[j] + w[j:]
    words[i] = w
    return " ".join(words)


def _description(fam: Family, prod: Product, rng: random.Random) -> str:
    """Most 20-80 words, some 80-150 or 150-400, a few short or empty."""
    r = rng.random()
    if r < 0.03:
        return ""
    t = fam.ptype
    intro = rng.choice(INTROS).format(brand=fam.brand, line=fam.line, noun=rng.choice(t.nouns), use=t.use)
    specs = "; ".join(f"{AXES[a].label}: {_spell(a, v, rng)}" for a, v in prod.attrs)
    specs = rng.choice(SPEC_FORMS).format(specs=f"Model: {prod.code}; {specs}" if rng.random() < 0.7 else specs)
    if r < 0.12:
        return rng.choice((intro, specs))
    facts = rng.sample(t.facts, len(t.facts))
    features = "Features: " + ", ".join(fam.features) + "."
    if r < 0.88:
        body = [intro, *facts[: rng.randint(1, 3)]]
        if rng.random() < 0.5:
            body.append(features)
        body.append(specs)
        if rng.random() < 0.4:
            body.append(rng.choice(CATEGORY_FACTS[t.category]))
        return " ".join(body)
    target = rng.randint(80, 150) if r < 0.94 else rng.randint(150, 400)
    body = [intro, *facts, features, specs, *rng.sample(CATEGORY_FACTS[t.category], len(CATEGORY_FACTS[t.category]))]
    count = sum(len(s.split()) for s in body)
    for s in rng.sample(BOILERPLATE, len(BOILERPLATE)):
        if count >= target:
            break
        body.append(s)
        count += len(s.split())
    return rng.choice((" ", "\n", "\n\n")).join(body)
