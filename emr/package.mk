# `make package`: dist/ wheel, --py-files zip and venv-pack environment archive (emr/packaging.py).
# Hook into the top-level Makefile with:   include emr/package.mk
# Needs venv-pack in $(PACKAGE_PYTHON)'s environment (dev extra).
#
# The archive links to the building machine's Python and holds its compiled wheels: for EMR 7
# build it on Amazon Linux 2023 with Python 3.11, e.g. with `make package-al2023` (Docker).

PACKAGE_PYTHON ?= .venv/bin/python
DIST ?= dist

.PHONY: package package-al2023
package:
	$(PACKAGE_PYTHON) -m emr package --dist $(DIST)

package-al2023:
	$(PACKAGE_PYTHON) -m emr package --dist $(DIST) --no-env
	docker build -f emr/docker/Dockerfile.al2023-env -t accel-scoring-env-al2023 .
	docker run --rm -v $(CURDIR)/$(DIST):/out accel-scoring-env-al2023
