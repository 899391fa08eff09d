# `make package`: dist/ wheel, --py-files zip and venv-pack environment archive (emr/packaging.py).
# Hook into the top-level Makefile with:   include emr/package.mk
# Needs venv-pack in $(PACKAGE_PYTHON)'s environment (dev extra).
#
# The archive links to the building machine's Python and holds its compiled wheels: for EMR 7
# build it on Amazon Linux 2023 with Python 3.11, e.g. with `make package-al2023` (Docker).
# `make package-gpu` builds the GPU profiles' archive the same way, with the GPU stack of
# dist/gpu-requirements.txt (emr/stacks.py); it needs the two package indexes it comes from:
#   make package-gpu TORCH_INDEX_URL=<PyTorch's CUDA 12.6 wheel index> NVIDIA_INDEX_URL=<NVIDIA's package index>
# `make package-gpu-torch` builds the torch-only one (--backend torch-cuda, emr/gpu_envs.py): the same
# stack's CUDA torch from dist/gpu-torch-requirements.txt, no TensorRT, so only PyTorch's index:
#   make package-gpu-torch TORCH_INDEX_URL=<PyTorch's CUDA 12.6 wheel index>
# RELEASE_LABEL picks the release line the archive is built for (its pip constraints,
# emr/releases.py); without it, the default release's; for EMR 7:   make package-al2023 RELEASE_LABEL=emr-7.14.0

PACKAGE_PYTHON ?= .venv/bin/python
DIST ?= dist
ENV_IMAGE := accel-scoring-env-al2023
TORCH_INDEX_URL ?=
NVIDIA_INDEX_URL ?=
RELEASE_LABEL ?=
RELEASE_ARG = $(if $(RELEASE_LABEL), --release-label $(RELEASE_LABEL))

.PHONY: package package-al2023 package-gpu package-gpu-torch
package:
	$(PACKAGE_PYTHON) -m emr package --dist $(DIST)$(RELEASE_ARG)

package-gpu: ENV_RUN_ARGS = -e GPU=1 -e EXTRAS=aws,fast,gpu -e TORCH_INDEX_URL="$(TORCH_INDEX_URL)" -e NVIDIA_INDEX_URL="$(NVIDIA_INDEX_URL)"
package-gpu: ENV_CHECK = test -n "$(TORCH_INDEX_URL)" -a -n "$(NVIDIA_INDEX_URL)" || { echo "make package-gpu needs TORCH_INDEX_URL=... and NVIDIA_INDEX_URL=... (emr/package.mk)" >&2; exit 2; }
package-gpu-torch: ENV_RUN_ARGS = -e GPU=torch -e EXTRAS=aws,fast,torch-cuda -e TORCH_INDEX_URL="$(TORCH_INDEX_URL)"
package-gpu-torch: ENV_CHECK = test -n "$(TORCH_INDEX_URL)" || { echo "make package-gpu-torch needs TORCH_INDEX_URL=... (emr/package.mk)" >&2; exit 2; }
package-al2023 package-gpu package-gpu-torch:
	$(ENV_CHECK)
	$(PACKAGE_PYTHON) -m emr package --dist $(DIST) --no-env$(RELEASE_ARG)
	docker build -f emr/docker/Dockerfile.al2023-env -t $(ENV_IMAGE) .
	docker run --rm -v $(CURDIR)/$(DIST):/out $(ENV_RUN_ARGS) $(ENV_IMAGE)
