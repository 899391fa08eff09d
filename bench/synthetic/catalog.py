"""Vocabulary of the synthetic product catalogue: categories, brands, product types, attributes.

Data only. Brands and product lines are invented, so the generated offers resemble real listings
without naming real companies. Every spelling list puts the canonical form first; the others
are what different sellers write for the same value (duplicates are built from them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Axis:
    """One attribute that tells variants of a product apart (colour, capacity, size ...)."""

    label: str
    values: tuple
    spellings: Callable[[object], tuple[str, ...]]


@dataclass(frozen=True)
class ProductType:
    """A kind of product; a family is one brand's product line of this type."""

    category: str
    nouns: tuple[str, ...]
    lines: tuple[str, ...]
    features: tuple[str, ...]
    axes: tuple[str, ...]
    use: str
    facts: tuple[str, ...]
    audiences: tuple[str, ...] = ()
    code_in_title: float = 0.5
    brand_in_title: float = 0.9


COLOURS = {
    "Black": ("Black", "Jet Black", "Midnight Black", "Blk", "Onyx Black"),
    "White": ("White", "Snow White", "Arctic White", "Wht", "Pure White"),
    "Grey": ("Grey", "Gray", "Space Grey", "Charcoal Grey", "Gry"),
    "Silver": ("Silver", "Platinum Silver", "Metallic Silver", "Slvr"),
    "Blue": ("Blue", "Ocean Blue", "Cobalt Blue", "Blu"),
    "Navy": ("Navy", "Navy Blue", "Dark Navy", "Nvy"),
    "Red": ("Red", "Crimson Red", "Scarlet", "Rd"),
    "Green": ("Green", "Forest Green", "Olive Green", "Grn"),
    "Pink": ("Pink", "Blush Pink", "Rose Pink", "Pnk"),
    "Beige": ("Beige", "Sand", "Khaki Beige", "Oatmeal"),
    "Gold": ("Gold", "Champagne Gold", "Rose Gold Tone"),
    "Purple": ("Purple", "Lavender Purple", "Violet"),
    "Orange": ("Orange", "Burnt Orange", "Tangerine"),
    "Yellow": ("Yellow", "Mustard Yellow", "Lemon"),
}


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _same(v) -> tuple[str, ...]:
    return (str(v),)


def _storage(v) -> tuple[str, ...]:
    if v >= 1000:
        t = _fmt(v / 1000)
        return (f"{t}TB", f"{t} TB", f"{t} terabyte", f"{v}GB", f"{t}tb")
    return (f"{v}GB", f"{v} GB", f"{v} gigabytes", f"{v}G", f"{v}gb", f"{v} Gig")


def _grams(v) -> tuple[str, ...]:
    oz = round(v / 28.3495, 1)
    metric = (f"{_fmt(v / 1000)} kg", f"{_fmt(v / 1000)}kg") if v >= 1000 else (f"{v}g", f"{v} g")
    return (f"{oz:g} oz",) + metric + (f"{oz:g} Ounce", f"{v} grams")


def _pounds(v) -> tuple[str, ...]:
    kg = round(v * 0.4536, 1)
    return (f"{v} lb", f"{v} lbs", f"{v}-Pound", f"{v} pound", f"{kg:g} kg", f"{v}lb")


def _ml(v) -> tuple[str, ...]:
    oz = round(v / 29.5735, 1)
    litre = (f"{_fmt(v / 1000)} L", f"{_fmt(v / 1000)} Litre") if v >= 1000 else ()
    return (f"{oz:g} fl oz", f"{v} ml", f"{v}ml", f"{v} mL", f"{oz:g} Fl. Oz.") + litre


def _inches(v) -> tuple[str, ...]:
    s = _fmt(v)
    return (f"{s} Inch", f'{s}"', f"{s} in", f"{s}-inch", f"{s}in", f"{s} inches")


def _feet(v) -> tuple[str, ...]:
    m = round(v * 0.3048, 1)
    return (f"{v} ft", f"{v}'", f"{v} feet", f"{v}-Foot", f"{v}ft", f"{m:g} m")


def _quarts(v) -> tuple[str, ...]:
    return (f"{v} Quart", f"{v} Qt", f"{v}-Qt", f"{v}QT", f"{round(v * 0.946, 1):g} L")


def _pack(v) -> tuple[str, ...]:
    if v == 1:
        return ("Single", "1 Pack", "1 Count", "1 ct")
    return (f"Pack of {v}", f"{v}-Pack", f"{v} ct", f"{v} Count", f"({v} pcs)", f"x{v}", f"{v} pk")


def _count(noun: str) -> Callable[[object], tuple[str, ...]]:
    return lambda v: (f"{v} {noun}", f"{v} Count", f"{v} ct", f"{v}-Count", f"{v} pcs")


def _unit(unit: str, *alts: str) -> Callable[[object], tuple[str, ...]]:
    def spell(v) -> tuple[str, ...]:
        s = _fmt(v)
        return (f"{s}{unit}", f"{s} {unit}") + tuple(a.format(v=s) for a in alts)

    return spell


def _words(table: dict[str, tuple[str, ...]]) -> Callable[[object], tuple[str, ...]]:
    return lambda v: table.get(v, (str(v),))


_SIZES = {
    "XS": ("XS", "X-Small", "Extra Small", "Size XS"),
    "S": ("S", "Small", "Size S", "Sm"),
    "M": ("M", "Medium", "Size M", "Med"),
    "L": ("L", "Large", "Size L", "Lrg"),
    "XL": ("XL", "X-Large", "Extra Large", "Size XL"),
    "XXL": ("XXL", "2XL", "XX-Large", "Size 2X"),
}
_BEDS = {
    "Twin": ("Twin", "Twin Size", "Single"),
    "Full": ("Full", "Full Size", "Double"),
    "Queen": ("Queen", "Queen Size", "Q"),
    "King": ("King", "King Size", "K"),
    "California King": ("California King", "Cal King", "CA King"),
}
_AGES = {a: (f"Ages {a}+", f"{a}+ years", f"for Kids {a} and Up", f"{a} Years & Up") for a in (3, 5, 8, 12)}
_DIAPERS = {
    "Newborn": ("Newborn", "Size N", "NB"),
    **{f"Size {k}": (f"Size {k}", f"Sz {k}", f"Size-{k}", f"S{k}") for k in range(1, 7)},
}

AXES: dict[str, Axis] = {
    "colour": Axis("Colour", tuple(COLOURS), lambda v: COLOURS[v]),
    "storage": Axis("Capacity", (64, 128, 256, 512, 1000), _storage),
    "drive": Axis("Storage", (256, 512, 1000, 2000, 4000), _storage),
    "ram": Axis("Memory", (8, 16, 32), lambda v: (f"{v}GB RAM", f"{v} GB RAM", f"{v}GB Memory", f"RAM {v}GB")),
    "screen": Axis("Screen size", (32, 43, 50, 55, 65, 75, 85), _inches),
    "monitor": Axis("Screen size", (24, 27, 32, 34), _inches),
    "laptop_screen": Axis("Screen size", (13.3, 14, 15.6, 16, 17.3), _inches),
    "watch_case": Axis("Case size", (40, 41, 44, 45, 46), _unit("mm", "{v} millimetre")),
    "mah": Axis("Battery", (5000, 10000, 20000, 26800), _unit("mAh", "{v} mah")),
    "watts": Axis("Output", (20, 30, 45, 65, 100, 140), _unit("W", "{v} Watt", "{v}-Watt")),
    "apparel": Axis("Size", tuple(_SIZES), _words(_SIZES)),
    "shoe": Axis("Size", (6, 6.5, 7, 7.5, 8, 8.5, 9, 9.5, 10, 10.5, 11, 12),
                 lambda v: (f"US {v:g}", f"Size {v:g}", f"{v:g} US", f"US Size {v:g}", f"Sz {v:g}")),
    "jeans": Axis("Size", ("30x30", "32x30", "32x32", "34x32", "36x32", "38x34"),
                  lambda v: (f"{v[:2]}W x {v[3:]}L", v, f"W{v[:2]} L{v[3:]}", f"{v[:2]}/{v[3:]}")),
    "wash": Axis("Wash", ("Dark Wash", "Medium Wash", "Light Wash", "Black Rinse"), _same),
    "quarts": Axis("Capacity", (3, 6, 8, 10), _quarts),
    "pan": Axis("Diameter", (8, 10, 12), _inches),
    "bed": Axis("Bed size", tuple(_BEDS), _words(_BEDS)),
    "pack": Axis("Pack size", (1, 2, 3, 4, 6, 8, 12, 24), _pack),
    "cups": Axis("Capacity", (5, 8, 10, 12, 14), lambda v: (f"{v} Cup", f"{v}-Cup", f"{v} cups", f"{v}C")),
    "grams": Axis("Net weight", (100, 227, 340, 500, 907, 1000), _grams),
    "pounds": Axis("Weight", (4, 5, 10, 15, 20, 25, 30, 40), _pounds),
    "ml": Axis("Volume", (50, 100, 250, 400, 500, 750, 1000), _ml),
    "bottle": Axis("Capacity", (12, 18, 24, 32, 40, 64), _unit("oz", "{v} Ounce", "{v} fl oz")),
    "roast": Axis("Roast", ("Light Roast", "Medium Roast", "Dark Roast", "Espresso Roast", "Decaf"), _same),
    "flavour": Axis("Flavour", ("Original", "Sea Salt", "Sour Cream & Onion", "BBQ", "Chili Lime", "Salt & Vinegar"),
                    _same),
    "bar_flavour": Axis("Flavour", ("Chocolate Peanut Butter", "Cookies & Cream", "Vanilla Almond", "Salted Caramel"),
                        _same),
    "tea": Axis("Variety", ("Green", "Chamomile", "Earl Grey", "Peppermint", "English Breakfast"), _same),
    "bags": Axis("Count", (20, 40, 100), _count("Tea Bags")),
    "pieces": Axis("Pieces", (100, 250, 500, 750, 1000, 1500, 2000), _count("Pieces")),
    "age": Axis("Age", tuple(_AGES), _words(_AGES)),
    "scale": Axis("Scale", ("1:10", "1:16", "1:18", "1:24"), lambda v: (v, f"{v} Scale", f"Scale {v}")),
    "plush": Axis("Height", (8, 12, 16, 24), _inches),
    "volts": Axis("Voltage", (12, 18, 20, 40), _unit("V", "{v} Volt", "{v}-Volt", "{v}v")),
    "amps": Axis("Motor", (10, 13, 15), _unit(" Amp", "{v}A", "{v}-Amp")),
    "tape": Axis("Length", (16, 25, 30, 35), _feet),
    "bits": Axis("Pieces", (32, 45, 60, 100, 142), _count("Piece")),
    "shade": Axis("Shade", ("Ruby Red", "Nude Rose", "Berry Crush", "Coral Kiss", "Mauve", "Classic Red"), _same),
    "scent": Axis("Scent", ("Lavender", "Unscented", "Citrus", "Coconut", "Eucalyptus Mint", "Vanilla"), _same),
    "spf": Axis("SPF", (15, 30, 50), lambda v: (f"SPF {v}", f"SPF{v}", f"SPF-{v}", f"Broad Spectrum SPF {v}")),
    "format": Axis("Format", ("Paperback", "Hardcover", "Large Print"),
                   _words({"Paperback": ("Paperback", "Paper back", "PB", "Softcover"),
                           "Hardcover": ("Hardcover", "Hardback", "HC", "Hard Cover"),
                           "Large Print": ("Large Print", "Large-Print Edition", "LP")})),
    "mat": Axis("Thickness", (4, 6, 8, 10), _unit("mm", "{v} Millimeter", "{v}-mm")),
    "grip": Axis("Grip size", ("4 1/8", "4 1/4", "4 3/8", "4 1/2"),
                 lambda v: (f"Grip {v}", f"{v} Grip", f"{v} in. grip")),
    "ruling": Axis("Ruling", ("College Ruled", "Wide Ruled", "Dot Grid", "Graph"), _same),
    "recipe": Axis("Recipe", ("Chicken & Brown Rice", "Salmon & Sweet Potato", "Lamb & Oatmeal", "Beef & Barley"),
                   _same),
    "diaper": Axis("Size", tuple(_DIAPERS), _words(_DIAPERS)),
    "viscosity": Axis("Viscosity", ("0W-20", "5W-20", "5W-30", "10W-30", "10W-40"),
                      lambda v: (v, v.replace("-", ""), f"SAE {v}")),
    "oil_qt": Axis("Volume", (1, 5), _quarts),
    "wiper": Axis("Length", (16, 18, 20, 22, 24, 26), _inches),
    "hose": Axis("Length", (25, 50, 75, 100), _feet),
    "soil": Axis("Volume", (8, 16, 32, 64), _quarts),
    "gen": Axis("Generation", (2, 3, 4, 5),
                lambda v: (f"Gen {v}", f"{v}{'nd' if v == 2 else 'rd' if v == 3 else 'th'} Gen", f"(Gen{v})")),
}

BRANDS = {
    "electronics": ("Veltrix", "Sonora", "Kestrel", "Lumora", "Arcwave", "Novatek", "Zentra", "Halcyon", "Orbis",
                    "Tervo"),
    "computers": ("Corvan", "Stratos", "Pixelon", "Nexacore", "Ironbyte", "Datavale", "Quillon", "Vantix"),
    "apparel": ("Northway", "Ridgeline", "Marlowe & Co", "Urban Thread", "Saltmarsh", "Cotton Harbor", "Vireo",
                "Alder & Pine"),
    "footwear": ("Stridewell", "Trailhawk", "Pacemark", "Cobblestone", "Airlune", "Fennic"),
    "home": ("Hearthstone", "Casavia", "Kitchenary", "Copperleaf", "Homely", "Bramble & Birch", "Ovenwise", "Pureflow"),
    "grocery": ("Brightfield", "Golden Acre", "Harvest Moon", "Olive Grove Co.", "Nutmeg Farms", "Daily Crunch",
                "Morning Ritual"),
    "toys": ("Bricktopia", "Wonderloom", "Tinker Tots", "Playvale", "Starbound", "Puzzlecraft"),
    "tools": ("Ironclad", "Torquemax", "Benchmark Pro", "Forgeline", "Stanwick", "Voltedge"),
    "beauty": ("Lumière Skin", "Verdana Botanics", "Glowhaus", "Petal & Pearl", "Aurelia", "Mistral Beauty"),
    "books": ("Harbor House", "Lantern Press", "Quillstone Books", "Bluebird Editions", "Northwind Publishing"),
    "sports": ("Peakform", "Summit Gear", "Velocity Athletics", "Coreline", "Aquaglide", "Ridgeback"),
    "office": ("Inkwell", "Paperlane", "Deskmate", "Scribewell", "Clipstone"),
    "pets": ("Pawsome", "Happy Tails", "Furwell", "Barkley & Co", "Whisker Works"),
    "baby": ("Little Sprout", "Cuddlebug", "Tiny Steps", "Nestling"),
    "automotive": ("Roadvance", "Gearhead Pro", "Autonova", "Tredwell", "Pitlane"),
    "garden": ("Verdance", "Bloomfield", "Terragrow", "Yardwise"),
}

AUTHORS = (
    "Jane Marlow", "Daniel Okafor", "Priya Raman", "Tomás Herrera", "Ellen Whitcombe", "Kenji Mori",
    "Ruth Abernathy", "Samuel Ashdown", "Leila Haddad", "Marcus Bell", "Ingrid Solberg", "Ava Lindqvist",
)
BOOK_WORDS = (
    "River", "Winter", "Silence", "Garden", "Harbor", "Stars", "Salt", "Ashes", "Orchard", "Lighthouse",
    "Thread", "Kingdom", "Summer", "Glass", "Shadows", "Compass", "Tide", "Mountain", "Letters", "Fire",
)

TYPES: tuple[ProductType, ...] = (
    ProductType("electronics", ("Wireless Earbuds", "True Wireless Earbuds", "Bluetooth Earbuds", "Wireless Earphones"),
                ("Pulse", "AirBeat", "Echo Buds", "Freedom", "Pods Pro"),
                ("Active Noise Cancelling", "Bluetooth 5.3", "IPX5 Waterproof", "30H Playtime",
                 "Wireless Charging Case", "Touch Control"),
                ("colour", "gen"), "commuting, workouts and long flights",
                ("Up to 8 hours of playback on a single charge and 30 hours with the case.",
                 "Six built-in microphones keep calls clear even on busy streets.",
                 "The ergonomic fit stays secure during runs and gym sessions.",
                 "Fast charging gives one hour of music from a ten-minute charge."), code_in_title=0.6),
    ProductType("electronics", ("Over-Ear Headphones", "Wireless Headphones", "Noise Cancelling Headphones"),
                ("Studio", "Quiet One", "Aria", "Momentum"),
                ("Hi-Res Audio", "Active Noise Cancelling", "40H Battery", "Foldable", "Multipoint Bluetooth"),
                ("colour",), "travel, office work and home listening",
                ("Memory-foam ear cushions stay comfortable for hours.",
                 "Adaptive noise cancelling adjusts to your surroundings automatically.",
                 "A 3.5 mm cable is included for wired listening on flights."), code_in_title=0.7),
    ProductType("electronics", ("Smart TV", "4K UHD Smart TV", "4K Smart Television", "Ultra HD TV"),
                ("Vision", "CrystalView", "Series 7", "Horizon"),
                ("4K Ultra HD", "HDR10+", "Dolby Vision", "120Hz", "Built-in Voice Assistant", "3 HDMI Ports"),
                ("screen",), "movie nights, sports and gaming",
                ("The quad-core processor upscales HD content to near 4K detail.",
                 "Stream your favourite apps without an extra box.",
                 "A slim bezel design fits any living room.",
                 "Game mode lowers input lag for consoles."), code_in_title=0.8),
    ProductType("electronics", ("Smartphone", "Unlocked Smartphone", "5G Smartphone", "Cell Phone"),
                ("Nova", "Edge", "Spark", "Prime"),
                ("5G", "Unlocked", "Triple Camera", "6.5\" AMOLED Display", "Dual SIM", "5000mAh Battery"),
                ("storage", "colour"), "everyday use, photography and streaming",
                ("The 50 MP main camera captures sharp photos in low light.",
                 "An all-day battery supports 33 W fast charging.",
                 "Works with all major carriers out of the box."), code_in_title=0.6),
    ProductType("electronics", ("Power Bank", "Portable Charger", "External Battery Pack"),
                ("ChargeGo", "Volt", "PowerCore"),
                ("USB-C PD", "Fast Charging", "LED Display", "Slim"),
                ("mah", "colour"), "travel and charging on the go",
                ("Charges two devices at once through USB-C and USB-A ports.",
                 "Built-in protection guards against overheating and short circuits."), code_in_title=0.5),
    ProductType("electronics", ("Smartwatch", "Smart Watch", "Fitness Smartwatch"),
                ("Active", "Fit", "Pulse Watch"),
                ("GPS", "Heart Rate Monitor", "Sleep Tracking", "Water Resistant 5ATM", "AMOLED"),
                ("watch_case", "colour"), "fitness tracking and notifications",
                ("Tracks heart rate, sleep and over 100 workout modes.",
                 "Battery lasts up to 10 days in typical use."), code_in_title=0.5),
    ProductType("electronics", ("USB-C Charger", "Wall Charger", "GaN Fast Charger"),
                ("Nano", "Flash", "Mini"),
                ("GaN", "PD 3.0", "Foldable Plug", "2-Port"),
                ("watts",), "phones, tablets and laptops",
                ("Compact GaN design is half the size of a standard charger.",), code_in_title=0.6),
    ProductType("computers", ("Laptop", "Notebook Computer", "Thin and Light Laptop"),
                ("ProBook", "Aero", "Zenith", "Slate"),
                ("Intel Core i7", "FHD IPS Display", "Backlit Keyboard", "Windows 11", "Fingerprint Reader", "Wi-Fi 6"),
                ("drive", "ram", "laptop_screen"), "work, study and creative projects",
                ("The aluminium chassis weighs just 1.3 kg.",
                 "Up to 12 hours of battery life for a full day of work.",
                 "Thunderbolt 4 and HDMI ports connect external displays."), code_in_title=0.7),
    ProductType("computers", ("Portable SSD", "External Solid State Drive", "USB-C SSD"),
                ("Rapid", "Pocket", "Extreme"),
                ("Up to 1050MB/s", "USB 3.2 Gen 2", "Shock Resistant", "Hardware Encryption"),
                ("drive", "colour"), "backups, photos and video editing",
                ("Transfers a full-length 4K movie in under a minute.",
                 "Drop resistant up to two metres."), code_in_title=0.6),
    ProductType("computers", ("microSD Card", "microSDXC Memory Card", "Memory Card"),
                ("Ultra", "Endurance", "Pro Plus"),
                ("U3", "V30", "A2", "with Adapter", "Up to 160MB/s"),
                ("storage",), "phones, cameras, drones and handheld consoles",
                ("Records 4K video without dropped frames.",), code_in_title=0.5),
    ProductType("computers", ("Gaming Monitor", "Computer Monitor", "PC Gaming Monitor"),
                ("Raptor", "ClearSight", "Vista"),
                ("165Hz", "1ms", "QHD 1440p", "FreeSync Premium", "Height Adjustable", "IPS Panel"),
                ("monitor",), "gaming and multitasking",
                ("A 1 ms response time removes motion blur in fast games.",
                 "The stand tilts, swivels and rotates to portrait mode."), code_in_title=0.8),
    ProductType("computers", ("Mechanical Keyboard", "Gaming Keyboard", "Mechanical Gaming Keyboard"),
                ("Strike", "Tactile", "K-Series"),
                ("RGB Backlit", "Hot-Swappable", "Tenkeyless", "Bluetooth and 2.4GHz"),
                ("colour",), "typing and gaming",
                ("Hot-swappable switches can be replaced without soldering.",), code_in_title=0.6),
    ProductType("apparel", ("T-Shirt", "Crew Neck Tee", "Short Sleeve T-Shirt", "Tee"),
                ("Classic", "Essential", "Everyday", "Heritage"),
                ("100% Cotton", "Crew Neck", "Relaxed Fit", "Pre-Shrunk", "Tagless"),
                ("apparel", "colour"), "everyday wear and layering",
                ("Soft ring-spun cotton gets softer with every wash.",
                 "A tagless neckline prevents itching.",
                 "Machine wash cold with like colours."), audiences=("Men's", "Women's", "Unisex"), code_in_title=0.1),
    ProductType("apparel", ("Jeans", "Denim Jeans", "Denim Pants"),
                ("Original", "Authentic", "Workwear", "Flex"),
                ("Stretch Denim", "5-Pocket", "Mid Rise", "Button Fly"),
                ("jeans", "wash"), "work and weekends",
                ("Stretch denim moves with you all day.",
                 "Reinforced stitching at stress points for durability."),
                audiences=("Men's", "Women's"), code_in_title=0.15),
    ProductType("apparel", ("Hoodie", "Pullover Hoodie", "Hooded Sweatshirt", "Fleece Hoodie"),
                ("Campus", "Lodge", "Weekend"),
                ("Fleece Lined", "Kangaroo Pocket", "Drawstring Hood", "Midweight"),
                ("apparel", "colour"), "cool evenings and lounging",
                ("Brushed fleece inside keeps you warm.",),
                audiences=("Men's", "Women's", "Unisex", "Kids'"), code_in_title=0.1),
    ProductType("apparel", ("Winter Jacket", "Puffer Jacket", "Insulated Winter Coat"),
                ("Alpine", "Summit", "Glacier"),
                ("Water Resistant", "Hooded", "Packable", "Windproof", "Recycled Insulation"),
                ("apparel", "colour"), "cold and wet weather",
                ("Synthetic insulation stays warm even when damp.",
                 "Packs into its own pocket for travel."), audiences=("Men's", "Women's"), code_in_title=0.2),
    ProductType("apparel", ("Crew Socks", "Athletic Socks", "Cushioned Socks"),
                ("Daily", "Performance", "Cushion"),
                ("Moisture Wicking", "Arch Support", "Cotton Blend"),
                ("pack", "colour"), "sports and everyday wear",
                ("Cushioned soles reduce impact on long walks.",),
                audiences=("Men's", "Women's", "Kids'"), code_in_title=0.1),
    ProductType("footwear", ("Running Shoes", "Road Running Shoes", "Athletic Sneakers", "Trainers"),
                ("Glide", "Tempo", "Cloudrun", "Velocity"),
                ("Lightweight", "Breathable Mesh", "Cushioned Midsole", "Non-Slip"),
                ("shoe", "colour"), "road running and the gym",
                ("Responsive foam returns energy with every stride.",
                 "Engineered mesh upper keeps feet cool.",
                 "Rubber outsole grips wet pavement."), audiences=("Men's", "Women's"), code_in_title=0.3),
    ProductType("footwear", ("Hiking Boots", "Waterproof Hiking Boots", "Trail Boots"),
                ("Ridge", "Trailblazer", "Basecamp"),
                ("Waterproof", "Vibram Outsole", "Ankle Support", "Leather"),
                ("shoe", "colour"), "trails and rough terrain",
                ("A waterproof membrane keeps feet dry in streams and mud.",),
                audiences=("Men's", "Women's"), code_in_title=0.3),
    ProductType("home", ("Electric Pressure Cooker", "Multi-Cooker", "Programmable Pressure Cooker"),
                ("Duo", "Chef", "QuickPot"),
                ("7-in-1", "Stainless Steel", "Dishwasher Safe", "Delay Start"),
                ("quarts",), "weeknight dinners and meal prep",
                ("Replaces a slow cooker, rice cooker, steamer and sauté pan.",
                 "Cooks up to 70% faster than the stovetop."), code_in_title=0.5),
    ProductType("home", ("Nonstick Frying Pan", "Nonstick Skillet", "Non-Stick Fry Pan"),
                ("Pro", "Ceramic", "Everyday"),
                ("PFOA Free", "Induction Compatible", "Oven Safe", "Stay-Cool Handle"),
                ("pan", "colour"), "eggs, pancakes and stir fries",
                ("The ceramic coating releases food easily with little oil.",), code_in_title=0.3),
    ProductType("home", ("Sheet Set", "Bed Sheets", "Microfiber Sheet Set"),
                ("Cloud", "Hotel", "Luxe"),
                ("Deep Pocket", "4 Piece", "Wrinkle Resistant", "400 Thread Count"),
                ("bed", "colour"), "a cool, comfortable night's sleep",
                ("Deep pockets fit mattresses up to 16 inches.",
                 "Includes a flat sheet, a fitted sheet and two pillowcases."), code_in_title=0.1),
    ProductType("home", ("Bath Towels", "Towel Set", "Cotton Bath Towels"),
                ("Spa", "Plush", "Resort"),
                ("100% Cotton", "Quick Dry", "Highly Absorbent", "600 GSM"),
                ("pack", "colour"), "the bathroom, gym or pool",
                ("Thick cotton loops absorb water quickly.",), code_in_title=0.1),
    ProductType("home", ("Robot Vacuum", "Robotic Vacuum Cleaner", "Robot Vacuum Cleaner"),
                ("Roam", "CleanBot", "Sweep"),
                ("LiDAR Navigation", "Self-Emptying", "2700Pa Suction", "App Control", "Works with Alexa"),
                ("gen", "colour"), "pet hair, carpets and hard floors",
                ("Maps your home and cleans room by room.",
                 "Automatically returns to the dock to recharge."), code_in_title=0.7),
    ProductType("home", ("Coffee Maker", "Drip Coffee Maker", "Programmable Coffee Machine"),
                ("Brew", "Morning", "Barista"),
                ("Programmable", "Glass Carafe", "Keep Warm", "Auto Shut-Off"),
                ("cups", "colour"), "home and office coffee",
                ("Set it the night before and wake up to fresh coffee.",), code_in_title=0.5),
    ProductType("home", ("Scented Candle", "Jar Candle", "Soy Candle"),
                ("Hygge", "Cabin", "Signature"),
                ("Soy Wax", "Cotton Wick", "Long Burning"),
                ("scent", "grams"), "relaxing evenings and gifts",
                ("Burns cleanly for up to 50 hours.",), code_in_title=0.05),
    ProductType("grocery", ("Whole Bean Coffee", "Coffee Beans", "Whole Bean Coffee Beans"),
                ("Morning Blend", "House Blend", "Single Origin", "Organic"),
                ("100% Arabica", "Fair Trade", "Organic", "Small Batch Roasted"),
                ("roast", "grams", "pack"), "drip, French press or espresso",
                ("Notes of dark chocolate, caramel and toasted nuts.",
                 "Roasted in small batches and packed fresh."), code_in_title=0.05),
    ProductType("grocery", ("Extra Virgin Olive Oil", "Olive Oil", "Cold Pressed Olive Oil"),
                ("Reserve", "Classic", "Estate"),
                ("Cold Pressed", "First Harvest", "Non-GMO", "Glass Bottle"),
                ("ml", "pack"), "salads, dipping and everyday cooking",
                ("Pressed within hours of harvest for a fresh, peppery taste.",), code_in_title=0.05),
    ProductType("grocery", ("Potato Chips", "Kettle Chips", "Kettle Cooked Chips"),
                ("Crunch", "Kettle", "Classic"),
                ("Gluten Free", "Non-GMO", "Family Size"),
                ("flavour", "grams", "pack"), "snacking and lunch boxes",
                ("Kettle cooked in small batches for extra crunch.",), code_in_title=0.02),
    ProductType("grocery", ("Tea Bags", "Tea", "Bagged Tea"),
                ("Serenity", "Garden", "Classic"),
                ("Caffeine Free", "Organic", "Individually Wrapped"),
                ("tea", "bags", "pack"), "a calm cup any time of day",
                ("Each bag is wrapped to lock in freshness.",), code_in_title=0.02),
    ProductType("grocery", ("Protein Bars", "Protein Snack Bars", "High Protein Bars"),
                ("Fuel", "Power", "Lean"),
                ("20g Protein", "Low Sugar", "Gluten Free", "Keto Friendly"),
                ("bar_flavour", "pack"), "post-workout snacks and busy days",
                ("Each bar packs 20 grams of protein and only 2 grams of sugar.",), code_in_title=0.02),
    ProductType("toys", ("Building Set", "Building Blocks Kit", "Construction Toy Set"),
                ("City", "Space Explorer", "Castle", "Race Team"),
                ("STEM Toy", "Compatible with Major Brands", "Instruction Booklet"),
                ("pieces", "age"), "creative play and STEM learning",
                ("Bricks are compatible with most major building brands.",
                 "Step-by-step instructions for three different models."), code_in_title=0.5),
    ProductType("toys", ("Jigsaw Puzzle", "Puzzle for Adults", "Jigsaw Puzzle Game"),
                ("Landscape", "Vintage Map", "Wildlife"),
                ("Premium Quality", "Poster Included", "Glare-Free Finish"),
                ("pieces",), "family game nights",
                ("Precision-cut pieces fit snugly with no false fits.",), code_in_title=0.2),
    ProductType("toys", ("RC Car", "Remote Control Car", "RC Racing Car"),
                ("Thunder", "Blaze", "Off-Road"),
                ("2.4GHz", "4WD", "Rechargeable Battery", "All Terrain"),
                ("scale", "colour"), "backyard racing and birthday gifts",
                ("Reaches speeds of 20 mph on grass and gravel.",), code_in_title=0.3),
    ProductType("toys", ("Plush Toy", "Stuffed Animal", "Soft Plush Toy"),
                ("Cuddle", "Snuggle", "Woodland"),
                ("Super Soft", "Machine Washable", "Hypoallergenic Filling"),
                ("plush", "colour"), "bedtime and gifts",
                ("Surface-washable and safe for all ages.",), code_in_title=0.1),
    ProductType("tools", ("Cordless Drill", "Drill Driver", "Cordless Drill/Driver Kit"),
                ("Max", "Compact", "Brushless"),
                ("Brushless Motor", "2 Batteries", "Charger Included", "1/2\" Chuck", "LED Light"),
                ("volts",), "home repairs and DIY projects",
                ("Two-speed gearbox for drilling and driving.",
                 "An LED light illuminates dark work areas."), code_in_title=0.8),
    ProductType("tools", ("Screwdriver Bit Set", "Precision Screwdriver Set", "Driver Bit Set"),
                ("Precision", "Pro", "Impact"),
                ("Magnetic", "S2 Steel", "Storage Case"),
                ("bits",), "electronics repair and assembly",
                ("Magnetic tips hold screws in place.",), code_in_title=0.6),
    ProductType("tools", ("Tape Measure", "Measuring Tape", "Retractable Tape Measure"),
                ("PowerLock", "Fat Max", "Auto Lock"),
                ("Magnetic Hook", "Belt Clip", "Impact Resistant"),
                ("tape",), "construction and woodworking",
                ("The blade stands out to 11 feet without bending.",), code_in_title=0.6),
    ProductType("tools", ("Circular Saw", "Corded Circular Saw", "7-1/4 Inch Circular Saw"),
                ("Worksite", "Pro", "Framing"),
                ("Electric Brake", "Bevel Capacity 56°", "Dust Blower"),
                ("amps",), "framing and cutting plywood",
                ("An electric brake stops the blade in seconds.",), code_in_title=0.8),
    ProductType("beauty", ("Shampoo", "Moisturizing Shampoo", "Sulfate Free Shampoo"),
                ("Botanical", "Repair", "Volume"),
                ("Sulfate Free", "Paraben Free", "Vegan", "Color Safe"),
                ("ml", "scent"), "dry and damaged hair",
                ("Argan oil and keratin restore shine and softness.",), code_in_title=0.05),
    ProductType("beauty", ("Face Moisturizer", "Daily Moisturizer", "Face Cream"),
                ("Hydra", "Daily Glow", "Barrier"),
                ("Hyaluronic Acid", "Fragrance Free", "Non-Comedogenic", "Dermatologist Tested"),
                ("ml", "spf"), "all skin types",
                ("Absorbs quickly without a greasy finish.",
                 "Broad-spectrum protection for daily wear."), code_in_title=0.05),
    ProductType("beauty", ("Lipstick", "Matte Lipstick", "Long Lasting Lipstick"),
                ("Velvet", "Satin", "Luxe"),
                ("Long Lasting", "Matte Finish", "Cruelty Free"),
                ("shade",), "everyday wear and special occasions",
                ("Rich pigment in one swipe that lasts up to 12 hours.",), code_in_title=0.1),
    ProductType("beauty", ("Eau de Parfum", "Perfume", "Eau de Parfum Spray"),
                ("Noir", "Bloom", "Soleil"),
                ("For Women", "Long Lasting", "Floral"),
                ("ml",), "evenings out and gifts",
                ("Top notes of bergamot with a heart of jasmine.",), code_in_title=0.05),
    ProductType("books", ("Novel", "A Novel", "Fiction Novel"),
                (), ("Bestseller", "Book Club Pick", "Signed Edition"),
                ("format",), "readers who love a page-turner",
                ("A sweeping story of family, loss and second chances.",
                 "Now a major streaming series."), code_in_title=0.05, brand_in_title=0.1),
    ProductType("books", ("Cookbook", "Cook Book", "Recipe Book"),
                (), ("Illustrated", "Quick and Easy", "Vegetarian"),
                ("format",), "home cooks of every level",
                ("Over 120 recipes with step-by-step photos.",), code_in_title=0.05, brand_in_title=0.1),
    ProductType("sports", ("Yoga Mat", "Exercise Mat", "Non-Slip Yoga Mat"),
                ("Flow", "Balance", "Zen"),
                ("Non-Slip", "Eco-Friendly TPE", "Carrying Strap", "Extra Thick"),
                ("mat", "colour"), "yoga, pilates and home workouts",
                ("Textured surface grips in hot yoga.",), code_in_title=0.1),
    ProductType("sports", ("Dumbbell", "Hex Dumbbell", "Rubber Hex Dumbbell"),
                ("Iron", "Core", "Pro"),
                ("Rubber Coated", "Anti-Roll", "Chrome Handle"),
                ("pounds",), "strength training at home",
                ("Rubber-coated heads protect floors.",), code_in_title=0.2),
    ProductType("sports", ("Bike Helmet", "Cycling Helmet", "Road Bike Helmet"),
                ("Aero", "Commuter", "Trail"),
                ("MIPS", "Adjustable Fit", "Ventilated", "Rear LED Light"),
                ("apparel", "colour"), "commuting and road cycling",
                ("Meets CPSC safety standards.",), audiences=("Adult", "Youth"), code_in_title=0.3),
    ProductType("sports", ("Water Bottle", "Insulated Water Bottle", "Stainless Steel Water Bottle"),
                ("Hydro", "Trek", "Chill"),
                ("Vacuum Insulated", "Leak Proof", "BPA Free", "Straw Lid"),
                ("bottle", "colour"), "the gym, hiking and the office",
                ("Keeps drinks cold for 24 hours or hot for 12.",), code_in_title=0.1),
    ProductType("sports", ("Tennis Racket", "Tennis Racquet", "Graphite Tennis Racket"),
                ("Power", "Control", "Tour"),
                ("Pre-Strung", "Graphite Frame", "Head Cover Included"),
                ("grip",), "club players and beginners",
                ("A larger sweet spot forgives off-centre hits.",), code_in_title=0.5),
    ProductType("office", ("Gel Pens", "Gel Ink Pens", "Retractable Gel Pens"),
                ("Smooth", "Quick Dry", "Fine Line"),
                ("0.7mm", "Retractable", "Smear Proof"),
                ("pack", "colour"), "note taking and journaling",
                ("Quick-drying ink resists smudges.",), code_in_title=0.2),
    ProductType("office", ("Spiral Notebook", "Notebook", "Subject Notebook"),
                ("Classic", "Campus", "Study"),
                ("100 Sheets", "Perforated Pages", "Durable Cover"),
                ("ruling", "pack"), "school and the office",
                ("Micro-perforated pages tear out cleanly.",), code_in_title=0.1),
    ProductType("office", ("Office Chair", "Ergonomic Office Chair", "Mesh Desk Chair"),
                ("ErgoPlus", "Task", "Executive"),
                ("Lumbar Support", "Adjustable Armrests", "Breathable Mesh", "Tilt Lock"),
                ("colour",), "long days at the desk",
                ("Adjustable lumbar support reduces back strain.",), code_in_title=0.6),
    ProductType("pets", ("Dry Dog Food", "Dog Food", "Dry Dog Kibble"),
                ("Natural", "Wholesome", "Active Adult"),
                ("Real Meat First", "No Artificial Flavors", "High Protein"),
                ("recipe", "pounds"), "adult dogs of all breeds",
                ("Real meat is the first ingredient.",), code_in_title=0.05),
    ProductType("pets", ("Cat Litter", "Clumping Cat Litter", "Clumping Clay Litter"),
                ("Fresh", "Multi-Cat", "Odor Lock"),
                ("Clumping", "99% Dust Free", "Odor Control"),
                ("pounds", "scent"), "single and multi-cat homes",
                ("Forms tight clumps for easy scooping.",), code_in_title=0.05),
    ProductType("baby", ("Diapers", "Disposable Diapers", "Baby Diapers"),
                ("Soft", "Overnight", "Sensitive"),
                ("Hypoallergenic", "Wetness Indicator", "12-Hour Protection"),
                ("diaper", "pack"), "day and night protection",
                ("A wetness indicator shows when it is time for a change.",), code_in_title=0.02),
    ProductType("baby", ("Baby Wipes", "Sensitive Baby Wipes", "Water Wipes"),
                ("Gentle", "Pure", "Sensitive"),
                ("Fragrance Free", "99% Water", "Plant Based"),
                ("pack", "scent"), "diaper changes and sticky hands",
                ("Thick, soft wipes made with 99% water.",), code_in_title=0.02),
    ProductType("automotive", ("Motor Oil", "Full Synthetic Motor Oil", "Synthetic Engine Oil"),
                ("Advanced", "High Mileage", "Endurance"),
                ("Full Synthetic", "API SP", "Dexos Approved"),
                ("viscosity", "oil_qt"), "modern gasoline engines",
                ("Protects against sludge for up to 10,000 miles.",), code_in_title=0.1),
    ProductType("automotive", ("Wiper Blades", "Windshield Wiper Blade", "Windshield Wipers"),
                ("All Season", "Beam", "Hybrid"),
                ("All Weather", "Easy Install", "Streak Free"),
                ("wiper",), "rain, sleet and snow",
                ("Fits most J-hook wiper arms.",), code_in_title=0.6),
    ProductType("automotive", ("Car Phone Mount", "Phone Holder for Car", "Car Phone Holder"),
                ("Grip", "MagHold", "Dash"),
                ("Dashboard and Vent", "360° Rotation", "One-Hand Operation"),
                ("colour",), "navigation and hands-free calls",
                ("Holds phones from 4 to 7 inches securely.",), code_in_title=0.4),
    ProductType("garden", ("Garden Hose", "Water Hose", "Hose"),
                ("Flex", "Heavy Duty", "Lightweight"),
                ("Kink Free", "Brass Fittings", "10-Pattern Spray Nozzle"),
                ("hose", "colour"), "watering lawns and washing cars",
                ("Solid brass fittings will not crack or leak.",), code_in_title=0.1),
    ProductType("garden", ("Potting Soil", "Potting Mix", "Potting Soil Mix"),
                ("Indoor", "Organic", "Container"),
                ("OMRI Listed", "With Fertilizer", "Peat Free"),
                ("soil",), "container plants and raised beds",
                ("Feeds plants for up to six months.",), code_in_title=0.02),
    ProductType("garden", ("Pruning Shears", "Bypass Pruners", "Garden Shears"),
                ("Precision", "Pro Cut", "Ratchet"),
                ("SK5 Steel Blade", "Ergonomic Grip", "Safety Lock"),
                ("colour",), "roses, shrubs and small branches",
                ("Sharp steel blades cut branches up to 3/4 inch.",), code_in_title=0.4),
)

CATEGORY_FACTS = {
    "electronics": ("Compatible with iOS and Android devices.", "Firmware updates add new features over time.",
                    "Includes a USB-C charging cable.", "Certified for safety in the US and EU."),
    "computers": ("Plug and play with Windows, macOS and Linux.", "Backed by 24/7 technical support.",
                  "Energy Star certified for lower power use."),
    "apparel": ("Machine wash cold, tumble dry low.", "Please check the size chart before ordering.",
                "Colours may vary slightly from the photos.", "Designed for a true-to-size fit."),
    "footwear": ("Fits true to size; half sizes go up.", "Removable insole fits custom orthotics.",
                 "Spot clean with a damp cloth."),
    "home": ("Hand washing is recommended to extend its life.", "Easy to clean and store.",
             "Designed and tested in our home kitchen studio."),
    "grocery": ("Store in a cool, dry place.", "Produced in a facility that also handles nuts.",
                "Best before date printed on the package."),
    "toys": ("WARNING: choking hazard, small parts. Not for children under 3.", "Batteries not included.",
             "Tested to meet ASTM F963 toy safety standards."),
    "tools": ("Battery and charger sold separately unless stated.", "Always wear eye protection.",
              "Part of a cordless platform of more than 200 tools."),
    "beauty": ("For external use only.", "Not tested on animals.", "Patch test before first use."),
    "books": ("Printed on acid-free paper.", "Includes a reading group guide.", "Ships in protective packaging."),
    "sports": ("Wipe clean after each use.", "Suitable for beginners and experienced athletes."),
    "office": ("Acid-free paper for archival notes.", "Great for school, home and office."),
    "pets": ("Transition gradually over 7 to 10 days.", "Always provide fresh water."),
    "baby": ("Dermatologist tested and hypoallergenic.", "Free of chlorine, latex and parabens."),
    "automotive": ("Check your owner's manual for the correct fit.", "Installs in minutes without tools."),
    "garden": ("Store indoors during winter.", "Safe for use around children and pets when used as directed."),
}

INTROS = (
    "The {brand} {line} {noun} is designed for {use}.",
    "Meet the {line} {noun} from {brand}, made for {use}.",
    "{brand} brings you the {line} {noun}, perfect for {use}.",
    "Looking for a reliable {noun}? The {brand} {line} is a great choice for {use}.",
    "This {noun} by {brand} is ideal for {use}.",
    "Upgrade to the {brand} {line} {noun} and enjoy {use} like never before.",
    "{line} {noun}: quality you can trust for {use}.",
)

SPEC_FORMS = (
    "Specifications: {specs}.",
    "Product details - {specs}.",
    "Specs: {specs}",
    "• {specs}",
    "Details: {specs}.",
)

# Seller text that pads long descriptions: warranties, shipping, returns, about-us paragraphs.
BOILERPLATE = (
    "Every order is packed by hand in our warehouse and shipped within one business day.",
    "We offer a 30-day hassle-free return policy on all unused items in their original packaging.",
    "If you have any questions about this product, please contact our customer service team before leaving feedback.",
    "Our team answers messages seven days a week, usually within a few hours.",
    "Please note that delivery times may be longer during holidays and peak sales periods.",
    "All products come with a one-year limited manufacturer warranty against defects in materials and workmanship.",
    "The warranty does not cover damage caused by accidents, misuse or normal wear and tear.",
    "Images are for illustration purposes only and the actual product may differ slightly.",
    "We are a family-owned business that has been serving customers since 2009.",
    "Customer satisfaction is our top priority, and we stand behind everything we sell.",
    "Orders placed before 2 pm are usually dispatched the same day.",
    "International buyers are responsible for any import duties, taxes or customs charges.",
    "Tracking information is emailed as soon as your parcel leaves our warehouse.",
    "Please double check your shipping address at checkout, as we cannot redirect parcels once shipped.",
    "For bulk or wholesale orders, send us a message and we will prepare a custom quote.",
    "This listing is for a brand new, factory sealed item unless stated otherwise.",
    "We source our inventory directly from authorised distributors to guarantee authenticity.",
    "Leave us a review and help other shoppers make a confident choice.",
    "Refunds are issued to the original payment method within five business days of receiving the return.",
    "Exchanges are free for a different size or colour, subject to availability.",
    "Gift wrapping and a personalised message card are available at checkout.",
    "Keep the original box and receipt in case you need to make a warranty claim.",
    "Register your product online to extend the warranty by an additional six months.",
    "Our packaging is made from recycled cardboard and is fully recyclable.",
    "We do not ship to PO boxes or military addresses at this time.",
    "Returns must be initiated within 30 days of delivery through your order page.",
    "Buyer pays return shipping unless the item arrived damaged or defective.",
    "Damaged items must be reported within 48 hours of delivery with photos of the packaging.",
    "Free standard shipping on all orders over $35 within the continental United States.",
    "Express shipping options are available for an additional fee.",
    "Thousands of happy customers have rated our store five stars.",
    "Check out our store for matching accessories and bundle deals.",
    "Prices include VAT where applicable.",
    "Please allow slight measurement differences of 1 to 2 cm due to manual measurement.",
    "Due to different monitor settings, colours may appear slightly different on your screen.",
    "This product complies with all applicable safety and environmental regulations.",
    "Instructions are included in English, Spanish and French.",
    "Follow us for new arrivals, exclusive discounts and seasonal promotions.",
    "Satisfaction guaranteed or your money back, no questions asked.",
    "Our support team can help with setup, troubleshooting and replacement parts.",
    "Replacement parts and accessories can be ordered separately from our store.",
    "Contact us with your order number and we will resolve any issue as quickly as possible.",
)

BOILERPLATE_TITLE = (
    "NEW", "Brand New", "Genuine", "2024 Model", "Latest Version", "Free Shipping!", "Fast Shipping",
    "100% Authentic", "Best Seller", "Hot Sale", "US Seller", "Ships Today", "Limited Stock", "[Official]",
    "Top Rated", "Great Gift",
)
