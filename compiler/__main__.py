"""`python -m compiler`: the compile CLI (compiler/compile.py)."""
import sys

from compiler.compile import main

sys.exit(main())
