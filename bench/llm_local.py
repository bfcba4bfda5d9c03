"""Tokens/s of our local backend next to raw llama-cpp-python on the same prompt and model.

Both sides share one loaded ``Llama`` (so only our layer differs: prompt rendering, the context
fit check, stop sequences, grammar cache, ``Reply``), alternate run by run to spread machine
noise evenly, and report medians. ``--ray`` adds the per-node Ray model server path.

``--extra-bufts`` instead compares llama.cpp's extra weight buffer types off (our default,
``llm.local.extra_buffer_types``) with on: two copies of the model, one of each, alternate run by
run on prompt processing (a ~400-token prompt from an empty cache) and on generation.

    python bench/llm_local.py [--tokens 64] [--reps 5] [--ray] [--extra-bufts]

Targets: our layer costs under 10% (ratio ours/raw >= 0.90); extra buffer types off costs at
most a few percent (ratio off/on >= 0.95) on a CPU without AMX (with AMX, on crashes).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ratchet_ray.llm.base import Message  # noqa: E402
from ratchet_ray.llm.local import (STOP_SEQUENCES, LocalConfig, LocalLLM,  # noqa: E402
                                   completion_prompt)

MESSAGES = [Message("system", "You are a careful Python programmer."),
            Message("user", "Write a Python function that merges two sorted lists into one sorted list.")]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "steps": {
    "type": "array", "items": {"type": "string"}}}, "required": ["name", "steps"]}


def raw_rate(llm: LocalLLM, tokens: int, schema: dict | None) -> float:
    prompt = completion_prompt(MESSAGES, schema)
    grammar = None
    if schema is not None:
        from llama_cpp import LlamaGrammar
        import json

        grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    started = time.perf_counter()
    out = llm.llama.create_completion(prompt, max_tokens=tokens, temperature=0.0,
                                      stop=list(STOP_SEQUENCES), grammar=grammar)
    return out["usage"]["completion_tokens"] / (time.perf_counter() - started)


def ours_rate(client, tokens: int, schema: dict | None) -> float:
    started = time.perf_counter()
    reply = client.complete(MESSAGES, max_tokens=tokens, temperature=0.0, json_schema=schema)
    return reply.output_tokens / (time.perf_counter() - started)


def layer_cost_s(llm: LocalLLM, schema: dict | None, calls: int = 200) -> float:
    """Seconds per call of what our layer adds around ``create_completion`` (prompt rendering,
    the context-fit tokenisation, the cached grammar lookup), measured without generating: a
    noise-free view of the overhead that the tok/s medians show through machine noise."""
    started = time.perf_counter()
    for _ in range(calls):
        prompt = completion_prompt(MESSAGES, schema)
        llm._fit(prompt, 64)
        if schema is not None:
            llm.grammar(schema)
    return (time.perf_counter() - started) / calls


def compare(label: str, llm: LocalLLM, client, tokens: int, reps: int, schema: dict | None) -> None:
    raw_rate(llm, 4, schema), ours_rate(client, 4, schema)  # warm-up: caches, first-call costs
    raws, ours = [], []
    for _ in range(reps):
        raws.append(raw_rate(llm, tokens, schema))
        ours.append(ours_rate(client, tokens, schema))
    raw_med, ours_med = statistics.median(raws), statistics.median(ours)
    added = layer_cost_s(llm, schema)
    print(f"{label:<22} raw {raw_med:7.1f} tok/s | ours {ours_med:7.1f} tok/s | "
          f"ratio {ours_med / raw_med:.3f} | layer adds {added * 1e3:.2f} ms/call = "
          f"{100 * added * raw_med / tokens:.2f}% of a {tokens}-token generation")


LONG_PROMPT = [Message("system", "You are a careful Python programmer."),
               Message("user", "Review this function and list its bugs.\n\n" + "\n".join(
                   f"def helper_{i}(values, limit={i}):\n    return [v * {i} for v in values "
                   f"if v < limit]" for i in range(24)))]


def prefill_rate(llm: LocalLLM) -> float:
    """Prompt tokens/s of one prompt processed from an empty cache (``reset``: llama-cpp-python
    would otherwise reuse the cached prefix of the previous call)."""
    prompt = completion_prompt(LONG_PROMPT, None)
    llm.llama.reset()
    started = time.perf_counter()
    out = llm.llama.create_completion(prompt, max_tokens=1, temperature=0.0)
    return out["usage"]["prompt_tokens"] / (time.perf_counter() - started)


def cpu_has_amx() -> bool:
    """Whether this CPU reports AMX, where llama.cpp's extra buffer types crash on the packaged
    model (``ratchet_ray/llm/local.py``)."""
    try:
        return " amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def compare_buffer_types(tokens: int, reps: int, threads: int | None) -> None:
    """Extra buffer types off (default) vs on, alternating, medians and the ratio off/on; on a
    CPU with AMX only a line saying why not (on would crash the process)."""
    if cpu_has_amx():
        print("extra buffer types: not measured: this CPU reports AMX, where on crashes "
              "llama.cpp (SIGSEGV in ggml_backend_amx_mul_mat); off is the only setting here")
        return
    models = {on: LocalLLM(LocalConfig(n_ctx=2048, n_threads=threads, extra_buffer_types=on))
              for on in (False, True)}
    for on, llm in models.items():
        assert llm.llama.model_params.use_extra_bufts is on
        prefill_rate(llm), raw_rate(llm, 4, None)  # warm-up
    rates: dict[tuple[str, bool], list[float]] = {}
    for rep in range(reps):
        order = (False, True) if rep % 2 == 0 else (True, False)  # neither always goes first
        for on in order:
            rates.setdefault(("prompt", on), []).append(prefill_rate(models[on]))
            rates.setdefault(("generation", on), []).append(raw_rate(models[on], tokens, None))
    prompt_tokens = len(models[False].llama.tokenize(
        completion_prompt(LONG_PROMPT, None).encode(), add_bos=True))
    print(f"extra buffer types, {reps} reps, threads {models[False].llama.n_threads}")
    for kind, what in (("prompt", f"{prompt_tokens}-token prompt"),
                       ("generation", f"{tokens}-token generation")):
        off, on = statistics.median(rates[(kind, False)]), statistics.median(rates[(kind, True)])
        print(f"{what:<22} off {off:7.1f} tok/s | on {on:7.1f} tok/s | ratio off/on "
              f"{off / on:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--ray", action="store_true", help="also measure through the per-node Ray server")
    parser.add_argument("--extra-bufts", action="store_true",
                        help="compare llama.cpp's extra buffer types off (default) and on")
    args = parser.parse_args()
    if args.extra_bufts:
        compare_buffer_types(args.tokens, args.reps, args.threads)
        return
    config = LocalConfig(n_ctx=2048, n_threads=args.threads)
    llm = LocalLLM(config)
    llm.llama  # load once, outside the timings
    print(f"model {llm.model}, {args.tokens} tokens x {args.reps} reps, threads {llm.llama.n_threads}")
    compare("free text", llm, llm, args.tokens, args.reps, None)
    compare("json-schema grammar", llm, llm, args.tokens, args.reps, SCHEMA)
    if args.ray:
        import ray

        from actors.llm_server import NodeLLMClient, release_llm_actors

        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
                 configure_logging=False, log_to_driver=False)
        try:
            node = NodeLLMClient(config)
            compare("free text via Ray", llm, node, args.tokens, args.reps, None)
        finally:
            release_llm_actors()
            ray.shutdown()


if __name__ == "__main__":
    main()
