"""One local model copy per node: a named Ray actor that owns Gemma and MiniLM for its node.

Contracts:
- ``get_node_server(config, scope)`` returns actor ``ratchet-llm-<scope>-<node id>-<config
  digest>`` (namespace ``ratchet``) pinned to the caller's node, created on first use, so the
  actors of one run (``scope``: its run id) on a node share one model and two runs never share
  (or release) each other's servers.
- The server is detached (a non-detached named actor would die with whichever task created
  it). ``release_llm_actors(scope)`` kills that scope's model servers and rate limiters (the
  loop does when a run ends; a killed driver's leave once its lease is gone,
  ``actors.run_lease``, unless a ``--resume`` retakes it); ``release_llm_actors()`` kills every
  one of namespace ``ratchet``. A later call starts them again.
- Generations and embeddings run one at a time each (llama.cpp contexts are not thread-safe),
  in two concurrency groups, so an embedding never waits behind a long generation.
- ``NodeLLMClient`` / ``NodeEmbedderClient`` are what ``make_llm`` / ``make_embedder`` return
  for the ``local`` backend given ``cluster_services(scope)`` (which also carries the scope's
  rate limiter, ``actors.rate_limiter.cluster_limiter``). They pickle without their handle and
  re-resolve it where used; if the server died, one new server is started and the call is sent
  once more.
- ``Reply.latency_s`` is the server-side generation time; ``extra["wall_s"]`` adds queueing.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Sequence

import numpy as np
import ray

from actors.named_client import NAMESPACE, NamedActorClient, kill_named
from actors.placement import pinned
from actors.rate_limiter import DEFAULT_SCOPE, cluster_limiter
from actors.run_lease import scope_token, watch_run_lease
from ratchet_ray.llm.base import InputType, Message, Reply
from ratchet_ray.llm.local import LocalConfig, LocalLLM, LocalModelServer, MiniLMEmbedder
from ratchet_ray.llm.registry import LLMServices


# num_cpus=0: the server must never wait for a CPU slot held by the very actors it serves.
@ray.remote(num_cpus=0, concurrency_groups={"generate": 1, "embed": 1})
class LLMServerActor(LocalModelServer):
    def __init__(self, config: LocalConfig, scope: str = DEFAULT_SCOPE):
        super().__init__(config)
        watch_run_lease(scope)

    @ray.method(concurrency_group="generate")
    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Reply:
        return self.llm.complete(messages, **kwargs)

    @ray.method(concurrency_group="embed")
    def embed(self, texts: Sequence[str], input_type: InputType = "search_document") -> np.ndarray:
        return self.embedder.embed(texts, input_type)


def server_name(node_id: str, config: LocalConfig, scope: str = DEFAULT_SCOPE) -> str:
    return f"ratchet-llm-{scope_token(scope)}-{node_id}-{config.digest()}"


def get_node_server(config: LocalConfig, scope: str = DEFAULT_SCOPE):
    node_id = ray.get_runtime_context().get_node_id()
    return LLMServerActor.options(
        name=server_name(node_id, config, scope), namespace=NAMESPACE, get_if_exists=True,
        lifetime="detached",
        scheduling_strategy=pinned(node_id),
    ).remote(config, scope)


def release_llm_actors(scope: str | None = None) -> list[str]:
    """Kill the local model servers and rate limiters of ``scope`` (None: every one of
    namespace ``ratchet``); returns their names."""
    prefixes = (("ratchet-llm-", "ratchet-ratelimit-") if scope is None else
                (f"ratchet-llm-{scope_token(scope)}-", f"ratchet-ratelimit-{scope_token(scope)}-"))
    released = []
    for entry in ray.util.list_named_actors(all_namespaces=True):
        name = entry["name"]
        # kill_named is False when someone else released it in between
        if entry["namespace"] == NAMESPACE and name.startswith(prefixes) and kill_named(name):
            released.append(name)
    return released


class _NodeClient(NamedActorClient):
    def __init__(self, config: LocalConfig, scope: str = DEFAULT_SCOPE):
        self.config = config
        self.scope = scope

    def _create(self) -> Any:
        return get_node_server(self.config, self.scope)


class NodeLLMClient(_NodeClient):
    backend = "local"
    supports_prefill = True  # the server's LocalLLM continues a trailing assistant message
    supports_seed = True  # and samples with the seed it is given

    def __init__(self, config: LocalConfig, scope: str = DEFAULT_SCOPE):
        super().__init__(config, scope)
        self.model = LocalLLM(config).model

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0,
                 stop: Sequence[str] | None = None, json_schema: dict[str, Any] | None = None,
                 seed: int | None = None) -> Reply:
        started = time.perf_counter()
        reply = self._call(LLMServerActor.complete, list(messages), max_tokens=max_tokens,
                           temperature=temperature, stop=list(stop) if stop else None,
                           json_schema=json_schema, seed=seed)
        reply.extra["wall_s"] = time.perf_counter() - started
        return reply


class NodeEmbedderClient(_NodeClient):
    def __init__(self, config: LocalConfig, scope: str = DEFAULT_SCOPE):
        super().__init__(config, scope)
        self.name = MiniLMEmbedder(config).name

    def embed(self, texts: Sequence[str], input_type: InputType = "search_document") -> np.ndarray:
        return self._call(LLMServerActor.embed, list(texts), input_type)


def cluster_services(scope: str = DEFAULT_SCOPE, limiter_scope: str | None = None
                     ) -> LLMServices:
    """What clients of one run (``scope``: its run id) share inside a Ray cluster: the node's
    model server and the rate limiter of ``limiter_scope`` (default: ``scope``)."""
    return LLMServices(limiters=partial(cluster_limiter, scope=limiter_scope or scope),
                       local_llm=partial(NodeLLMClient, scope=scope),
                       local_embedder=partial(NodeEmbedderClient, scope=scope))
