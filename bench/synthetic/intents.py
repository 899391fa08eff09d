"""Templates for synthetic e-commerce search queries, per intent.

The labels are those of the hand-written set in ``bench/data/intent_examples.csv``. Weights
follow a shop's traffic (product search dominates). Most templates give 1-5 words; the long
ones read like messages typed into a search box, and a few queries join two of them (~30 words).
"""

from __future__ import annotations

import functools
import random
import string

from bench.synthetic.catalog import AXES, BOOK_WORDS, BRANDS, COLOURS, TYPES
from bench.synthetic.offers import typo

_PRODUCTS = tuple(t for t in TYPES if t.lines)
_WEARABLES = tuple(t for t in _PRODUCTS if t.category in ("apparel", "footwear"))
_COLOUR_NAMES = tuple(COLOURS)

_SLOTS = {
    "person": ("mom", "dad", "wife", "husband", "boyfriend", "girlfriend", "teenager", "coworker", "grandma",
               "grandpa", "sister", "brother", "best friend", "boss", "teacher", "new parents", "10 year old boy",
               "8 year old girl", "toddler", "nurse"),
    "occasion": ("birthday", "christmas", "anniversary", "mother's day", "father's day", "graduation",
                 "baby shower", "housewarming", "valentine's day", "retirement", "secret santa", "wedding"),
    "budget": ("under $20", "under $50", "under 100 dollars", "under 30", "less than $25"),
    "hobby": ("cooking", "gaming", "hiking", "running", "reading", "gardening", "coffee", "yoga", "camping",
              "music", "photography", "fishing"),
    "genre": ("thriller", "comedy", "horror", "romantic comedy", "documentary", "sci fi", "jazz", "hip hop",
              "classical", "lofi", "country", "true crime", "fantasy", "k-pop", "anime", "christmas"),
    "media": ("movies", "shows", "series", "albums", "songs", "playlists", "audiobooks", "ebooks", "podcasts",
              "films", "tv shows"),
    "city": ("chicago", "austin", "seattle", "denver", "boston", "miami", "portland", "atlanta", "phoenix",
             "san diego", "toronto", "london", "new york", "dallas", "nashville"),
    "country": ("canada", "mexico", "the uk", "germany", "australia", "puerto rico", "alaska", "hawaii", "france"),
    "carrier": ("ups", "fedex", "usps", "dhl"),
    "pay": ("paypal", "apple pay", "google pay", "klarna", "afterpay", "venmo", "a gift card", "debit card",
            "amex", "store credit"),
    "day": ("monday", "tuesday", "friday", "saturday", "yesterday", "last week", "the weekend"),
    "holiday": ("black friday", "cyber monday", "christmas", "labor day", "memorial day", "prime day",
                "new year's day", "thanksgiving"),
    "defect": ("stopped charging", "arrived broken", "is missing parts", "doesn't fit", "has a scratch",
               "is the wrong colour", "makes a weird noise", "won't turn on"),
    "n": ("2", "3", "5", "7", "10", "14"),
    "months": ("2", "6", "8", "11", "13", "18"),
    "age": ("5", "7", "10", "13", "16", "30", "60"),
    "size": ("small", "medium", "large", "size 8", "size 10", "32x32", "xl"),
}

_INTENTS: dict[str, tuple[float, tuple[str, ...], tuple[str, ...]]] = {
    "product_search": (0.34, (
        "{product}", "{product}", "{brand} {product}", "{product} {attr}", "{colour} {product}",
        "{brand} {product} {attr}", "{brand} {line}", "{brand} {line} {product}", "{code}", "{product} {feature}",
        "{feature} {product}", "{product} {colour} {attr}", "{brand}",
    ), (
        "i am looking for a {colour} {product} in {attr} with {feature}",
        "do you have the {brand} {line} {product} in {colour} {attr}",
        "need a {feature} {product} for {use}",
        "{brand} {line} {product} {feature} {attr} {colour}",
        "show me {colour} {product} from {brand} in {attr}",
    )),
    "price_deals": (0.08, (
        "{product} deals", "{product} sale", "{brand} coupon", "promo code", "discount code", "{product} on sale",
        "{holiday} {product}", "{brand} {product} discount", "today's deals", "clearance {product}",
        "{holiday} deals", "price drop {brand}",
    ), (
        "is there a coupon code for {brand} {product}",
        "when does the {holiday} sale start this year",
        "do you price match if i find the {product} cheaper somewhere else",
        "can i use two promo codes on one order",
        "will the {brand} {line} {product} go on sale before {holiday}",
    )),
    "order_status": (0.08, (
        "where is my order", "track order", "order status", "track my package", "order {order}",
        "tracking number", "order not arrived", "{carrier} tracking", "where is my {product}", "order {order} status",
    ), (
        "i ordered a {product} {n} days ago and it still says processing",
        "where is my order {order} it was supposed to arrive {day}",
        "my tracking number hasnt updated since {day} is my package lost",
        "{carrier} tracking says delivered but i never got my {product}",
        "how can i check the status of the {product} i ordered {day}",
    )),
    "returns_refunds": (0.06, (
        "return {product}", "refund status", "return policy", "exchange {product}", "how to return an item",
        "return label", "refund not received", "return {brand} {product}", "start a return",
    ), (
        "i want to return the {product} i bought because it {defect}",
        "how long does it take to get my refund after returning a {product}",
        "can i return a {product} without the original box",
        "i returned my order {n} days ago and still no refund",
        "can i exchange the {product} for a different {axis}",
    )),
    "shipping_delivery": (0.05, (
        "shipping cost", "free shipping", "delivery time", "ship to {country}", "same day delivery",
        "express shipping", "shipping to {city}", "international shipping", "next day delivery {product}",
        "free shipping minimum",
    ), (
        "how much is shipping for a {product} to {city}",
        "how long does standard delivery take to {country}",
        "can i get the {product} delivered by {day}",
        "do you deliver on weekends in {city}",
        "what is the cheapest shipping option for a large item like a {product}",
    )),
    "account_help": (0.04, (
        "reset password", "forgot password", "cant log in", "change email", "delete account", "update address",
        "account locked", "sign in problem", "two factor authentication", "change my username",
    ), (
        "i forgot my password and the reset email never arrives",
        "how do i change the email address on my account",
        "my account got locked after too many login attempts",
        "how can i delete my account and all my data",
        "someone logged into my account and changed my password",
    )),
    "payment_billing": (0.04, (
        "payment declined", "pay with {pay}", "charged twice", "invoice", "update card", "billing address",
        "pay in installments", "payment methods", "pending charge", "{pay} payment",
    ), (
        "why was my card charged twice for order {order}",
        "can i pay for the {product} with {pay}",
        "my payment keeps getting declined even though my card works everywhere else",
        "how do i download an invoice for my {product} purchase",
        "can i split the payment between a gift card and {pay}",
    )),
    "store_locator": (0.04, (
        "store near me", "stores in {city}", "store hours", "{city} store", "opening hours {city}",
        "nearest store", "store open sunday", "pickup location {city}", "store locator",
    ), (
        "what time does the {city} store close today",
        "is there a store near {city} that has the {product} in stock",
        "which stores are open on {holiday}",
        "where can i pick up my order in {city}",
    )),
    "product_comparison": (0.05, (
        "{brand} {product} vs {brand2} {product}", "{product} comparison", "{brand} vs {brand2}",
        "{line} vs {line2}", "compare {product}", "best {product}", "{brand} or {brand2} {product}",
        "{attr} vs {attr2} {product}",
    ), (
        "which is better the {brand} {line} or the {brand2} {line2} {product}",
        "what is the difference between the {attr} and {attr2} {product}",
        "is the {brand} {product} worth it compared to {brand2}",
        "should i get the {brand} or the {brand2} {product} for {use}",
    )),
    "media_entertainment": (0.07, (
        "{genre} movies", "watch {genre} movies", "{genre} music", "{genre} playlist", "stream {title}",
        "{title} audiobook", "{title} movie", "new {media}", "{genre} podcast", "top {media} this week",
        "{title} ebook", "listen to {genre}",
    ), (
        "where can i stream the {title} movie",
        "recommend some {genre} {media} to watch this weekend",
        "is the {title} audiobook available to stream",
        "{genre} {media} similar to {title}",
        "play relaxing {genre} music for studying",
    )),
    "customer_support_contact": (0.04, (
        "customer service", "contact us", "phone number", "live chat", "talk to a person",
        "customer service number", "email support", "speak to agent", "file a complaint", "help desk",
    ), (
        "how do i talk to a real person about my order",
        "what is the customer service phone number",
        "i want to file a complaint about a delivery driver",
        "is live chat available 24 hours a day",
    )),
    "gift_ideas": (0.04, (
        "gifts for {person}", "{occasion} gifts", "gift ideas", "gift card", "gift for {person} {budget}",
        "{occasion} gift for {person}", "stocking stuffers", "gift wrap", "{hobby} gifts",
    ), (
        "what is a good {occasion} gift for my {person} who likes {hobby}",
        "gift ideas for a {age} year old who has everything",
        "looking for a {occasion} present for my {person} {budget}",
        "can i send a gift card by email for {occasion}",
    )),
    "size_fit": (0.04, (
        "size chart", "{wear} size guide", "{brand} size chart", "does {wear} run small", "{wear} fit",
        "what size {wear}", "{wear} measurements", "{wear} sizing",
    ), (
        "i usually wear a {size} in {brand2} what size should i get in {brand} {wear}",
        "do the {brand} {line} {wear} run true to size",
        "how do i measure myself for {wear}",
        "are the {brand} {wear} true to size or should i size up",
    )),
    "warranty_repair": (0.02, (
        "warranty", "{product} warranty", "{brand} warranty claim", "repair {product}", "{product} not working",
        "broken {product}", "extended warranty", "repair service",
    ), (
        "my {product} stopped working after {months} months is it covered by warranty",
        "how do i make a warranty claim for a {brand} {product}",
        "where can i get my {brand} {product} repaired",
        "the {product} i bought {months} months ago {defect} can it be fixed",
    )),
}

INTENTS: tuple[str, ...] = tuple(_INTENTS)
WEIGHTS: tuple[float, ...] = tuple(w for w, _, _ in _INTENTS.values())
_LONG_SHARE = 0.12
_JOINED_SHARE = 0.02


def render_query(intent: str, rng: random.Random) -> str:
    """One query for ``intent``: lower-case mostly, sometimes a typo, like real search logs."""
    _, short, long = _INTENTS[intent]
    r = rng.random()
    if r < _JOINED_SHARE:
        text = f"{_fill(rng.choice(long), rng)} {rng.choice(('and', 'also', 'then'))} {_fill(rng.choice(long), rng)}"
    else:
        text = _fill(rng.choice(long if r < _LONG_SHARE else short), rng)
    if rng.random() < 0.85:
        text = text.lower()
    if rng.random() < 0.04:
        text = typo(text, rng)
    return text


@functools.lru_cache(maxsize=None)
def _fields(template: str) -> tuple[str, ...]:
    return tuple(name for _, name, _, _ in string.Formatter().parse(template) if name)


def _fill(template: str, rng: random.Random) -> str:
    fields = _fields(template)
    if not fields:
        return template
    t = rng.choice(_WEARABLES if "wear" in fields else _PRODUCTS)
    brands = BRANDS[t.category]
    axis = AXES[rng.choice(t.axes)]
    values: dict[str, str] = {}
    pairs: dict[str, list] = {}  # brand/brand2, line/line2, attr/attr2 always differ

    def one_of_two(name: str, choices) -> object:
        base = name.rstrip("2")
        if base not in pairs:
            pairs[base] = rng.sample(choices, 2)
        return pairs[base][name.endswith("2")]

    for name in fields:
        if name in _SLOTS:
            values[name] = rng.choice(_SLOTS[name])
        elif name in ("product", "wear"):
            values[name] = rng.choice(t.nouns).lower()
        elif name in ("brand", "brand2"):
            values[name] = one_of_two(name, brands)
        elif name in ("line", "line2"):
            values[name] = one_of_two(name, t.lines)
        elif name in ("attr", "attr2"):
            # the common spellings, not seller shorthand
            values[name] = rng.choice(axis.spellings(one_of_two(name, axis.values))[:3])
        elif name == "axis":
            values[name] = axis.label.lower()
        elif name == "colour":
            values[name] = rng.choice(COLOURS[rng.choice(_COLOUR_NAMES)][:3])
        elif name == "feature":
            values[name] = rng.choice(t.features)
        elif name == "use":
            values[name] = t.use.split(",")[0]
        elif name == "code":
            values[name] = f"{brands[0][:2].upper()}-{rng.randint(100, 9999)}"
        elif name == "order":
            values[name] = f"#{rng.randint(10**7, 10**8 - 1)}"
        elif name == "title":
            values[name] = f"{rng.choice(('the ', '', ''))}{rng.choice(BOOK_WORDS)} {rng.choice(BOOK_WORDS)}".lower()
        else:
            raise KeyError(f"template {template!r} names unknown slot {name!r}")
    return template.format_map(values)
