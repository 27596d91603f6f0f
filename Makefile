# The two commands (see README):
#   make run   - set up .venv, then run the operator against the current cluster,
#                or, with no cluster configured, the demo against the built-in API emulator
#   make test  - set up .venv, then ruff, mypy --strict, import contracts and pytest
# Both work on a fresh machine with only Python >= 3.11 installed.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test venv lint typecheck bench clean demo dataplane-demo manifests mutate image

$(STAMP): pyproject.toml constraints.txt
	@echo "make venv: creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "make venv: upgrading pip in $(VENV)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	@echo "make venv: installing endpointslice-operator (editable) with its test and benchmark tools, pinned by constraints.txt (about 90 s on a fresh machine, 20 s from pip's cache)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test,bench]'
	touch $(STAMP)
	@echo "make venv: ready: $(BIN)/endpointslice-operator, $(BIN)/python -m pytest"

venv: $(STAMP)

run: $(STAMP)
	@if [ -n "$$KUBERNETES_SERVICE_HOST" ] || [ -n "$$KUBECONFIG" ] || [ -f "$$HOME/.kube/config" ]; then \
		echo "A cluster is configured: running the operator (Ctrl-C to stop)."; \
		exec $(BIN)/endpointslice-operator run $(ARGS); \
	else \
		echo "No cluster configured: running the demo against the built-in API emulator."; \
		exec $(BIN)/endpointslice-operator demo $(ARGS); \
	fi

demo: $(STAMP)
	$(BIN)/endpointslice-operator demo $(ARGS)

# As root, with KUBEBUILDER_ASSETS (etcd, kube-apiserver, kube-controller-manager, kube-proxy):
# a real kube-proxy routes curl by the operator's slices through a rollout (README).
dataplane-demo: $(STAMP)
	$(BIN)/python -m scripts.dataplane_demo $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy endpointslice_operator benchmarks scripts tests
	$(BIN)/lint-imports

# The real control planes: with ../shared/envtest beside the checkout (as in CI) and no
# KUBEBUILDER_ASSETS of your own, the suite runs against v1.36 (the server of record; the
# realcluster and dataplane layers), then the realcluster layer again against v1.24 (the oldest
# API the operator supports). ESO_OLDEST_ASSETS= (empty) leaves the second run out.
ENVTEST_ASSETS := ../shared/envtest/assets
envtest = $(if $(wildcard $(ENVTEST_ASSETS)),$(shell $(ENVTEST_ASSETS) $(1)))
REAL_ASSETS = $(if $(filter undefined,$(origin KUBEBUILDER_ASSETS)),$(call envtest,v1.36),$(KUBEBUILDER_ASSETS))
OLDEST_ASSETS = $(if $(filter undefined,$(origin ESO_OLDEST_ASSETS)),$(call envtest,v1.24),$(ESO_OLDEST_ASSETS))

test: lint typecheck
	KUBEBUILDER_ASSETS="$(REAL_ASSETS)" $(BIN)/python -m pytest $(PYTEST_ARGS)
	@if [ -n "$(OLDEST_ASSETS)" ]; then \
		echo "The realcluster layer again, against the oldest supported API ($(OLDEST_ASSETS)):"; \
		KUBEBUILDER_ASSETS="$(OLDEST_ASSETS)" $(BIN)/python -m pytest -m realcluster $(PYTEST_ARGS); \
	fi
	$(BIN)/python -m benchmarks --quick --json $(VENV)/benchmarks.json
	@if [ -z "$(REAL_ASSETS)" ] && [ -z "$$ESO_TEST_KUBECONFIG" ]; then \
		echo "Note: the real-server tests were skipped (no KUBEBUILDER_ASSETS); see docs/testing.md to run them."; \
	fi

bench: $(STAMP)
	$(BIN)/python -m benchmarks $(ARGS)

# The container image, from the Dockerfile as it is, without Docker (buildah + skopeo; see
# scripts/build_image.sh): an OCI archive to import into the cluster's nodes. PYTHON_IMAGE (in
# the environment) overrides the Dockerfile's base image.
IMAGE         ?= localhost/endpointslice-operator:0.1.0
IMAGE_ARCHIVE ?= endpointslice-operator.tar

image:
	scripts/build_image.sh $(IMAGE) $(IMAGE_ARCHIVE)

manifests: $(STAMP)
	$(BIN)/python -m scripts.render_manifests

# Mutation testing (a developer tool, not part of `make test`: CPU heavy, minutes per module).
# MODULES="endpointslice_operator/view/merge.py ..." limits it; see docs/testing.md.
mutate: $(STAMP)
	$(BIN)/python -m scripts.mutate $(MODULES)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build dist
