"""The compile toolchain: a Hugging Face model in, a verified artifact out (torch, transformers,
onnx). It runs on a build machine, never on an executor; engines/ loads what it writes and reaches
it only by name (an Engine's `compile_stage`). It sits above jobs/: `--parity-data` reads a job's
own input.

    python -m compiler           the compile CLI (compiler/compile.py)
    python -m compiler.centroid  an intent classifier from an encoder and example texts
"""
