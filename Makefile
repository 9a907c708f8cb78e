# gpulab: thin wrappers around scripts/*.sh (the logic, with comments, lives there).
# Every target that needs tools installs what is missing first (`deps`), quickly when nothing is.

SHELL := /bin/bash
.DEFAULT_GOAL := help
.PHONY: help deps lab test fuzz probe notebooks notebook gpu-bundle gpu-notebooks clean

help: ## Show the targets
	@echo "gpulab: learn GPU optimization in Go notebooks. Targets:"
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo "Knobs: NB=notebooks/NN-x.ipynb (notebook), GOTESTFLAGS (test), JUPYTER_ARGS (lab),"
	@echo "       PKGS (gpu-bundle), and any env var the notebooks read (GPULAB_SIZES=...)."

deps: ## Install what is missing: apt packages, gonb/goimports/gopls in .tools/bin, Go modules, kernelspec
	@bash scripts/install-deps.sh

lab: deps ## Start Jupyter Notebook on notebooks/ (kernel "Go (gonb)")
	@bash scripts/lab.sh

test: deps ## go vet, go test, the hostile-input probe, then execute every notebook headless
	@bash scripts/test.sh

fuzz: ## Run every Go fuzz target for FUZZTIME (default 30s) each; FUZZ=regexp picks targets
	@FUZZTIME="$(FUZZTIME)" FUZZ="$(FUZZ)" FUZZMINIMIZETIME="$(FUZZMINIMIZETIME)" bash scripts/fuzz.sh

probe: ## Replay the hostile-input probe of lab (scripts/probes/); PROBE=regexp picks cases
	@PROBE="$(PROBE)" bash scripts/probe.sh

notebooks: deps ## Execute every notebook headless (copies in .build/notebooks/)
	@bash scripts/run-notebooks.sh

notebook: ## Execute one notebook: make notebook NB=notebooks/00-devices-and-bandwidth.ipynb
	@if [[ -z "$(NB)" ]]; then echo "usage: make notebook NB=notebooks/NN-name.ipynb" >&2; exit 2; fi
	@bash scripts/install-deps.sh
	@bash scripts/run-notebooks.sh $(NB)

gpu-bundle: ## Build .gpu/: static test binaries + lab + run.sh, for a GPU machine without Go
	@bash scripts/gpu-bundle.sh

gpu-notebooks: deps ## Build .gpu-nb/: Go toolchain + gonb + lab + modules, to run notebooks on a GPU machine without Go
	@bash scripts/gpu-notebooks.sh

clean: ## Remove build outputs (.build, .gpu, .gpu-nb); keeps the tools in .tools
	rm -rf .build .gpu .gpu-nb
