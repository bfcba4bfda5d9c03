# Entry points named in the README. `make setup` is idempotent; `run` and `test` call it first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
MBPP_DATA ?= $(firstword $(wildcard ../shared/data/MbppPlus-v0.2.0.jsonl.gz))
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
ifneq ($(MBPP_DATA),)
export MBPP_OVERRIDE_PATH ?= $(abspath $(MBPP_DATA))
endif

.PHONY: setup run test test-fast bench clean

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU build of torch first, so sentence-transformers does not pull a CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[local,bedrock,openai,swebench,dev]'
	touch $@

setup: $(BIN)/.installed

run: setup  ## a short MBPP+ loop on the local Gemma model: 2 rounds, 6 train / 4 eval tasks
	$(BIN)/python -m jobs.skill_loop mbpp --rounds 2 --n-train 6 --n-eval 4 --tag quickstart

test: setup  ## the whole suite, real components (Docker tests need `bash .ci/docker_setup.sh`)
	$(BIN)/python -m pytest -q -rs

test-fast: setup  ## skip the heavy (real-model, many-round) tests
	$(BIN)/python -m pytest -q -m "not slow and not docker"

bench: setup
	$(BIN)/python bench/evidence_query.py
	$(BIN)/python bench/llm_local.py
	$(BIN)/python bench/round_scaling.py

clean:
	rm -rf $(VENV) results/*/quickstart* .pytest_cache
