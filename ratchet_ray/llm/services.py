"""Shared services an LLM client may use, handed to ``make_llm`` / ``make_embedder`` explicitly.

``LLMServices`` says where a client gets what is shared beyond its process: its budget's rate
limiter (``limiters``) and, for ``local``, the model (``local_llm`` / ``local_embedder``:
``LocalConfig -> client``; None loads it in this process). ``IN_PROCESS`` (the default) shares
nothing, whether or not Ray runs in the process: the library never looks. The cluster's services
are ``actors.llm_server.cluster_services()``. Every field must pickle (clients travel to actors).
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
