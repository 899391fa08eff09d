"""Move a jar's classes to another package, as Maven's shade plugin relocates them.

Iceberg's Spark runtime calls Jackson under `org.apache.iceberg.shaded.com.fasterxml.jackson`, the
package its own build relocates Jackson to; the one copy of that runtime on PyPI (local_aws/iceberg_jars.py)
was repackaged without those relocated classes. `relocate()` rebuilds them from the plain Jackson
jars: in each class file only the constant pool names classes, descriptors and the strings that
reflection reads, so rewriting its UTF-8 entries (the rest of the file holds indexes into the pool,
never offsets) moves a class completely; service files are renamed and rewritten the same way.
"""
from __future__ import annotations

import struct
import zipfile
from pathlib import Path
from typing import Iterable

# Constant-pool entry sizes after the tag byte, for the tags that are not UTF-8 (1).
_FIXED = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2}


def rename_in_class(data: bytes, old: str, new: str) -> bytes:
    """The class file with `old` replaced by `new` in every UTF-8 constant, in its slash
    (`com/x/`) and dot (`com.x.`) spellings."""
    pairs = [(old.replace(".", "/").encode(), new.replace(".", "/").encode()),
             (old.replace("/", ".").encode(), new.replace("/", ".").encode())]
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    (count,) = struct.unpack_from(">H", data, 8)
    out, pos, index = [data[:10]], 10, 1
    while index < count:
        tag = data[pos]
        if tag == 1:
            (length,) = struct.unpack_from(">H", data, pos + 1)
            text = data[pos + 3:pos + 3 + length]
            for a, b in pairs:
                text = text.replace(a, b)
            out.append(bytes([1]) + struct.pack(">H", len(text)) + text)
            pos += 3 + length
        elif tag in _FIXED:
            out.append(data[pos:pos + 1 + _FIXED[tag]])
            pos += 1 + _FIXED[tag]
        else:
            raise ValueError(f"unknown constant-pool tag {tag}")
        index += 2 if tag in (5, 6) else 1  # a long or a double takes two slots
    out.append(data[pos:])
    return b"".join(out)


def relocate(jars: Iterable[Path], old: str, new: str, target: Path) -> Path:
    """One jar at `target` holding every class of `jars` under package `old` moved to `new`
    (dotted package names), and their service files; module descriptors are left out (a
    relocated package belongs to no module)."""
    old_path, new_path = old.replace(".", "/") + "/", new.replace(".", "/") + "/"
    services = "META-INF/services/"
    seen: set[str] = set()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for jar in jars:
            with zipfile.ZipFile(jar) as source:
                for name in source.namelist():
                    if name.endswith("/") or name.endswith("module-info.class"):
                        continue
                    if name.startswith(old_path) and name.endswith(".class"):
                        moved, data = new_path + name[len(old_path):], rename_in_class(source.read(name), old, new)
                    elif name.startswith(services + old + "."):
                        moved = services + new + name[len(services + old):]
                        data = source.read(name).replace(old.encode(), new.encode())
                    else:
                        continue
                    if moved not in seen:
                        seen.add(moved)
                        out.writestr(moved, data)
    return target
