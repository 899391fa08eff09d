"""The flash-tokenizer route for single texts (udfs/flash_route.py): exactly the artifact
tokenizer's ids, type ids and truncation wherever it is used, and `tokenizers` alone wherever it
cannot be trusted."""
import copy
import json
import random
import sys

import numpy as np
import pytest

from udfs import flash_route
from udfs.tokenize import TextEncoder

try:
    import flash_tokenizer  # noqa: F401
    HAVE_FLASH = True
except ImportError:
    HAVE_FLASH = False
needs_flash = pytest.mark.skipif(not HAVE_FLASH, reason="flash_tokenizer (optional) is not installed")


@pytest.fixture(scope="module")
def minilm_config(minilm_dir) -> dict:
    return json.loads((minilm_dir / "tokenizer.json").read_text())


def _encoders(tokenizer_json, max_seq_len):
    """(routed encoder, `tokenizers`-only encoder) for one tokenizer.json and length."""
    routed = TextEncoder(tokenizer_json, max_seq_len)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(flash_route.ENV, "0")
        plain = TextEncoder(tokenizer_json, max_seq_len)
    return routed, plain


@pytest.fixture(scope="module", params=[256, 64], ids=["L256", "L64"])
def encoders(request, minilm_dir):
    """The embedding artifact's length (sides) and the intent artifact's (queries)."""
    return _encoders(minilm_dir / "tokenizer.json", request.param)


def _assert_same(routed, plain, texts):
    a, b = routed.encode(texts), plain.encode(texts)
    assert len(a.ids) == len(b.ids) == len(texts)
    for i, t in enumerate(texts):
        assert a.ids[i].tolist() == b.ids[i].tolist(), repr(t[:120])
        assert a.type_ids[i].tolist() == b.type_ids[i].tolist(), repr(t[:120])
    assert a.truncated.tolist() == b.truncated.tolist()
    assert a.lengths.tolist() == b.lengths.tolist()
    return a


def _generator_texts(n):
    from bench.synthetic import datasets
    from udfs.workloads import Duplicates

    pairs = datasets.product_pairs(n // 4, seed=7)
    sides = Duplicates().side(pairs, "left").tolist() + Duplicates().side(pairs, "right").tolist()
    return sides + datasets.search_queries(n // 2, seed=11)["query"].tolist()


@needs_flash
def test_routed_encoder_matches_tokenizers_on_generator_texts(encoders):
    routed, plain = encoders
    assert routed.single_route.startswith("flash_tokenizer") and plain.single_route.startswith("off")
    texts = _generator_texts(6000)
    taken = sum(routed._flash.takes(t) for t in dict.fromkeys(texts))
    assert taken > 0.99 * len(set(texts))  # the route is what these texts actually get
    enc = _assert_same(routed, plain, texts)
    if routed.max_seq_len == 64:
        assert enc.truncated.any()  # long sides at the short length: truncation exercised


def _edge_corpus(seed=0):
    """Texts that WordPiece implementations disagree on, alone and among ASCII words."""
    rng = random.Random(seed)
    specials = ["café naïve RÉSUMÉ Ångström Straße ǅemal İstanbul ﬁﬂ", "e\u0301 a\u0308 n\u0303 o\u0338\u0301",
                "東京都 北京市 日本語のテキスト 包丁", "서울 한국어 텍스트 ᄀᄁ ㄱㄴ", "ｈｅｌｌｏ ＡＢＣ ｶﾀｶﾅ",
                "👩‍👩‍👧‍👦 🇩🇪 👍🏽 🏳️‍🌈 1️⃣", "\x00\x01\x07\x0b\x0c\x1b\x1f\x7f\x85\x9f",
                "\u200b\u200c\u200d\u2060\ufeff\u00ad\u061c", "\xa0\u2002\u2003\u2009\u202f\u205f\u3000\u1680\u2028\u2029",
                "\ue000\uf8ff\U000F0000\ufffd\uffff", "¡Hola! ¿Qué? «quote» § 3 ¶ 2 · ×÷", "[CLS] [SEP] [UNK] [PAD] [MASK]",
                "[cls]x[Sep] ##ing [MASK]ed", "עברית ימין لشمال العربية", "Ⅻ ½ ℃ ²³ ①", "\t\n\r\n", "", " "]
    ascii_words = "usb-c charger 65w black/grey (2-pack) [new] pro max 256gb 12.5\" x@y.com".split()
    texts = list(specials)
    for _ in range(1500):
        words = [rng.choice(specials) if rng.random() < 0.2 else rng.choice(ascii_words) for _ in range(rng.randint(0, 40))]
        texts.append(rng.choice((" ", "", " - ")).join(words))
    for n in (60, 61, 62, 63, 64, 65, 66, 98, 99, 100, 101, 102, 150, 255, 256, 257, 400):  # very long words
        for alphabet in ("abcdefghij", "0123456789", "aé", "a-", "日"):
            texts.append("intro " + "".join(rng.choice(alphabet) for _ in range(n)) + " outro")
    for n in (30, 62, 63, 64, 65, 254, 255, 256, 257, 2000, 9000):  # past max_seq_len and the character clip
        texts.append(" ".join(rng.choice(ascii_words) for _ in range(n)))
        texts.append(" ".join(rng.choice(specials) for _ in range(n // 8 + 1)))
    return texts


@needs_flash
def test_routed_encoder_matches_tokenizers_on_unicode_edge_cases(encoders):
    routed, plain = encoders
    texts = _edge_corpus()
    takes = [routed._flash.takes(t) for t in texts]
    assert any(takes) and not all(takes)
    assert routed._flash.accepts(texts).tolist() == takes  # the whole-batch look and the per-text one agree
    for i, t in enumerate(texts):  # one text it refuses among ones it takes
        if not takes[i] and i > 0 and takes[i - 1]:
            assert routed._flash.accepts([texts[i - 1], t, texts[i - 1]]).tolist() == [True, False, True]
    enc = _assert_same(routed, plain, texts)
    assert enc.truncated.any() and not enc.truncated.all()


def _ascii_fuzz(n, seed):
    """Random ASCII: printable characters, control characters, whitespace, runs near the limits."""
    rng = random.Random(seed)
    printable = [chr(c) for c in range(32, 127)]
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.5:
            text = "".join(rng.choice(printable) if rng.random() < 0.97 else chr(rng.randrange(32)) for _ in range(rng.randint(0, 300)))
        elif r < 0.8:
            text = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-_.,") for _ in range(rng.randint(1, 12)))
                            for _ in range(rng.randint(1, 300)))
        else:
            text = " ".join("x" * rng.randint(50, 110) for _ in range(rng.randint(1, 3)))
        out.append(text)
    return out


@needs_flash
def test_routed_encoder_matches_tokenizers_on_random_ascii(encoders):
    routed, plain = encoders
    _assert_same(routed, plain, _ascii_fuzz(3000, seed=routed.max_seq_len))


@needs_flash
def test_each_safe_character_encodes_the_same_in_every_position(encoders):
    routed, plain = encoders
    longest = min(routed.max_seq_len, flash_route.MAX_INPUT_CHARS_PER_WORD + 1) - 2
    texts, known = [], routed._flash._characters  # SAFE_CHARACTERS that this vocab holds
    assert len(known) > 400
    for ch in sorted(known):
        n = len(ch.encode())
        texts += [form.replace("{}", ch) for form in ("ab {} cd", "ab{}cd", "{}{}{}x", "x{}", "{}", "A{}B {} 12{}34", "({})")]
        texts += [f"x {ch * (longest // n)} y", f"x {'a' * (longest - n)}{ch} y", " ".join([ch + "word"] * routed.max_seq_len),
                  f"{ch.upper() * 3} {ch.lower() * 3}"]
    texts = [t for t in texts if routed._flash.takes(t)]  # all but the upper cases that leave the set (ÿ: Ÿ)
    assert len(texts) > 10 * len(known)
    _assert_same(routed, plain, texts)


@needs_flash
def test_routed_encoder_matches_tokenizers_on_random_latin_text(encoders):
    routed, plain = encoders
    rng = random.Random(routed.max_seq_len)
    known = routed._flash._characters
    latin, unknown = sorted(known - set(map(chr, range(128)))), sorted(flash_route.SAFE_CHARACTERS - known)
    words = "usb-c charger 65w black/grey pack of 2 crème brûlée 25°c".split()
    texts = []
    for _ in range(3000):
        parts = [rng.choice(words) if rng.random() < 0.6 else
                 "".join(rng.choice(latin) if rng.random() < 0.5 else rng.choice("abcxyz09-.") for _ in range(rng.randint(1, 14)))
                 for _ in range(rng.randint(0, 120))]
        if rng.random() < 0.2:  # a character the vocab lacks: [UNK], so tokenizers'
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(unknown))
        texts.append(rng.choice((" ", "", "  ")).join(parts))
    taken = sum(map(routed._flash.takes, texts))
    assert len(texts) // 2 < taken < len(texts)
    _assert_same(routed, plain, texts)


@needs_flash
def test_the_whole_batch_look_refuses_what_the_per_text_look_refuses(encoders):
    routed, _ = encoders
    route, longest = routed._flash, routed._flash._longest_word
    taken = ["usb-c charger 65w", "crème brûlée • 25°c", "x" * longest, "é" * (longest // 2), ""]
    refused = ["x" * (longest + 1), "é" * (longest // 2 + 1), "a\x0b" * longest, "a\xa0" * longest, "[CLS] hi",
               "hi [sep]", "日本", "¿qué?", "x\u0301", "\u200b"]
    assert all(map(route.takes, taken)) and not any(map(route.takes, refused))
    assert route.accepts(taken).all()
    for text in refused:
        assert route.accepts([*taken, text, *taken]).tolist() == [True] * len(taken) + [False] + [True] * len(taken), repr(text)


def test_refusal_names_what_flash_tokenizer_does_not_implement(minilm_config):
    assert flash_route.refusal(minilm_config) is None

    def changed(path, value):
        config = copy.deepcopy(minilm_config)
        *parents, key = path
        node = config
        for p in parents:
            node = node[p]
        node[key] = value
        return flash_route.refusal(config)

    assert "not WordPiece" in changed(("model", "type"), "BPE")
    assert "not BertNormalizer" in changed(("normalizer", "type"), "Sequence")
    assert "accents" in changed(("normalizer", "strip_accents"), False)  # lowercases, keeps accents
    assert "not BertPreTokenizer" in changed(("pre_tokenizer", "type"), "Whitespace")
    assert "max_input_chars_per_word is 200" in changed(("model", "max_input_chars_per_word"), 200)
    assert "line break" in changed(("model", "vocab", "a\nb"), 5)
    assert "added token" in changed(("added_tokens", 0, "normalized"), True)


def test_vocab_file_is_written_once_in_id_order(minilm_config, tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_SCORING_CACHE", str(tmp_path))
    path = flash_route.vocab_file(minilm_config)
    assert path.parent == tmp_path / "vocab"
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    vocab = minilm_config["model"]["vocab"]
    assert len(lines) == len(vocab) and all(vocab[t] == i for i, t in enumerate(lines))
    assert flash_route.vocab_file(minilm_config) == path and len(list(path.parent.iterdir())) == 1


def test_tokenizers_alone_when_flash_tokenizer_is_missing_or_turned_off(minilm_dir, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "flash_tokenizer", None)  # import raises ImportError
    enc = TextEncoder(minilm_dir / "tokenizer.json", 64)
    assert enc._flash is None and "not importable" in enc.single_route
    assert "accel-scoring: single texts: flash_tokenizer not importable" in capsys.readouterr().err
    monkeypatch.setenv(flash_route.ENV, "0")
    assert TextEncoder(minilm_dir / "tokenizer.json", 64).single_route == f"off ({flash_route.ENV}=0)"


@needs_flash
def test_tokenizers_alone_for_a_tokenizer_flash_tokenizer_does_not_implement(minilm_config, tmp_path):
    config = copy.deepcopy(minilm_config)
    config["model"]["max_input_chars_per_word"] = 60
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config))
    enc = TextEncoder(path, 256)
    assert enc._flash is None and "max_input_chars_per_word is 60" in enc.single_route
    word = "intro " + "abcdefghij" * 7 + " outro"  # 70 characters: [UNK] for this tokenizer only
    assert enc.encode([word]).ids[0].tolist()[2] == config["model"]["vocab"]["[UNK]"]


@needs_flash
def test_tokenizers_alone_when_the_vocab_cannot_be_written(minilm_dir, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("ACCEL_SCORING_CACHE", str(blocker))  # vocab/ would go under a file
    enc = TextEncoder(minilm_dir / "tokenizer.json", 64)
    assert enc._flash is None and enc.single_route.startswith("not used: NotADirectoryError")
    assert enc.encode(["usb-c charger"]).ids[0].tolist() == enc._tok.encode("usb-c charger").ids


@needs_flash
def test_a_cased_bert_is_routed_with_case_kept(minilm_config, tmp_path):
    config = copy.deepcopy(minilm_config)
    config["normalizer"].update(lowercase=False, strip_accents=None)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config))
    routed, plain = _encoders(path, 64)
    assert routed._flash is not None
    texts = ["USB-C Charger Black", "iPhone ProMax", "lower case only"] + _ascii_fuzz(500, seed=1)
    enc = _assert_same(routed, plain, texts)
    assert enc.ids[0].tolist() != routed.encode(["usb-c charger black"]).ids[0].tolist()  # case kept


@needs_flash
def test_tokenizers_alone_when_the_probe_disagrees(minilm_dir, monkeypatch):
    real = flash_route.FlashRoute.encode_all

    def drops_a_token(self, texts):  # a flash-tokenizer that loses every long row's last word piece
        ids, truncated = real(self, texts)
        return [np.delete(x, -2) if len(x) > 10 else x for x in ids], truncated

    monkeypatch.setattr(flash_route.FlashRoute, "encode_all", drops_a_token)
    enc = TextEncoder(minilm_dir / "tokenizer.json", 64)
    assert enc._flash is None and "probe differs" in enc.single_route
    text = "usb-c charger 65w black/grey stainless steel pack of 2"
    assert enc.encode([text]).ids[0].tolist() == enc._tok.encode(text).ids


@needs_flash
def test_flash_rows_have_zero_type_ids_that_cannot_be_written(encoders):
    routed, _ = encoders
    enc = routed.encode(["usb-c charger", "日本 包丁"])
    assert enc.type_ids[0].tolist() == [0] * len(enc.ids[0]) and not enc.type_ids[0].flags.writeable


@needs_flash
def test_another_flash_tokenizer_release_is_refused(minilm_dir, monkeypatch):
    real = flash_route.importlib.metadata.version
    monkeypatch.setattr(flash_route.importlib.metadata, "version",
                        lambda name: "1.3.0" if name == "flash_tokenizer" else real(name))
    enc = TextEncoder(minilm_dir / "tokenizer.json", 64)
    assert enc._flash is None
    assert enc.single_route == "not used: flash_tokenizer 1.3.0 is installed; this route was checked on 1.2.0 only"


def test_the_fast_extra_pins_the_release_the_route_was_checked_on():
    import tomllib
    from pathlib import Path

    from packaging.requirements import Requirement

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    (req,) = map(Requirement, pyproject["project"]["optional-dependencies"]["fast"])
    assert req.name == "flash-tokenizer" and str(req.specifier) == f"=={flash_route.FLASH_VERSION}"
    assert req.marker.evaluate({"sys_platform": "linux", "platform_machine": "x86_64"})
    assert not req.marker.evaluate({"sys_platform": "linux", "platform_machine": "aarch64"})
