"""Probe texts for parity checks: short and long, odd Unicode, and texts longer than any
bucket, so a tracer that baked a shape or a mask shows up as a mismatch."""
from engines.tasks import task as task_of

TEXTS = (
    "usb-c charger 65w",
    "Apple iPhone 15 Pro 256GB Natural Titanium",
    "Samsung 55\" Class QLED 4K Smart TV (2024) QN55Q80C",
    "where is my order",
    "Nike Air Zoom Pegasus 40 Men's Road Running Shoes, size 10.5, black/white",
    "KitchenAid Artisan Series 5 Quart Tilt-Head Stand Mixer with Pouring Shield, Empire Red. "
    "Ten speeds for nearly any task, 59 touch points around the bowl, 5-quart stainless steel bowl "
    "with comfortable handle, includes coated flat beater, coated dough hook and 6-wire whip.",
    "日本製 ステンレス 包丁 三徳 165mm",
    "café crème – 1 kg grains 🌟🌟🌟 qualité supérieure",
    "שואב אבק אלחוטי",
    "return policy for opened electronics?",
    "LEGO Star Wars Millennium Falcon 75257 building kit 1351 pieces",
    ("Heavy-duty 20V MAX cordless drill/driver kit with two batteries, charger and bag. " * 30).strip(),
    "a",
    "cheap",
    "Organic whole bean coffee, medium roast, 2 lb bag, fair trade certified, notes of chocolate and caramel",
    "tab\tseparated\ttitle with\u200bzero width and \u00a0nbsp",
)


def pairs() -> list[tuple[str, str]]:
    """Deterministic left/right pairs drawn from TEXTS, including long-with-long."""
    n = len(TEXTS)
    return [(TEXTS[i], TEXTS[(i * 7 + 3) % n]) for i in range(n)]


def scored_rows(task: str) -> list:
    """At least 200 rows for score-level parity: every ordered pair of distinct TEXTS for pair
    tasks, and the TEXTS plus their pairwise joins for text classification. Deterministic."""
    n = len(TEXTS)
    pairs = [(TEXTS[i], TEXTS[j]) for i in range(n) for j in range(n) if i != j]
    if task_of(task).gate_rows == "texts":
        return list(TEXTS) + [f"{a} {b}"[:400] for a, b in pairs]
    return pairs
