"""`python -m engines.compile`, the compile command's name before the toolchain moved to compiler/:
it runs `python -m compiler` with the same arguments. By name, not by import: engines/ is what an
executor loads and imports nothing above it."""
import runpy

if __name__ == "__main__":
    runpy.run_module("compiler", run_name="__main__", alter_sys=True)
