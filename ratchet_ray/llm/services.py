"""Shared services an LLM client may use, handed to ``make_llm`` / ``make_embedder`` explicitly.

Contracts:
- ``LLMServices`` says where a client gets what is shared beyond its own process: the rate
  limiter of its budget (``limiters``) and, for the ``local`` backend, the model itself
  (``local_llm`` / ``local_embedder``: ``LocalConfig -> client``; None loads the model in this
  process).
- ``IN_PROCESS`` (the default everywhere) shares nothing: an in-process limiter per client and
  the model loaded where the client runs. Whether Ray happens to run in the process changes
  nothing: the library never looks.
- The cluster's services (one model server per node, one limiter actor per budget) are
  ``actors.llm_server.cluster_services()``; the loop runtime builds its clients with them.
- Every field must pickle (clients built with them travel to actors): module-level functions
  and classes do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ratchet_ray.llm.base import Embedder, LLMClient
from ratchet_ray.llm.ratelimit import LimiterFactory, make_limiter

if TYPE_CHECKING:
    from ratchet_ray.llm.local import LocalConfig


@dataclass(frozen=True)
class LLMServices:
    limiters: LimiterFactory = make_limiter
    local_llm: Callable[["LocalConfig"], LLMClient] | None = None
    local_embedder: Callable[["LocalConfig"], Embedder] | None = None


IN_PROCESS = LLMServices()
