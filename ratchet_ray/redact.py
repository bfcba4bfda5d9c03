"""Keep credentials out of everything a run writes: errors, evidence, prompts, actor names.

Contracts:
- ``redact(text)`` replaces the user info of every URL (``http://user:pass@host`` ->
  ``http://***@host``), every registered secret and the values of ``SECRET_ENV_VARS`` present
  in this process's environment with ``***``. It is idempotent and cheap enough for every string
  written to the evidence (``evidence.schema.to_records`` applies it to all text columns).
- ``redact_url(url)`` is the URL without user info (for names and messages).
- ``register_secret(value)`` adds a value to redact in this process (API keys held by clients;
  values shorter than ``MIN_SECRET_LEN`` are ignored: they would blank ordinary words).
"""

from __future__ import annotations

import os
import re

MASK = "***"
MIN_SECRET_LEN = 8
SECRET_ENV_VARS = ("OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                   "AWS_BEARER_TOKEN_BEDROCK", "HF_TOKEN")
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s'\"]+@")
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    if value and len(value) >= MIN_SECRET_LEN:
        _registered.add(value)


def _secrets() -> list[str]:
    from_env = {os.environ.get(name) or "" for name in SECRET_ENV_VARS}
    found = _registered | {value for value in from_env if len(value) >= MIN_SECRET_LEN}
    return sorted(found, key=len, reverse=True)  # longest first: a key containing another


def redact_url(url: str) -> str:
    return _USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", url)


def redact(text: str) -> str:
    if not text:
        return text
    text = redact_url(text)
    for secret in _secrets():
        if secret in text:
            text = text.replace(secret, MASK)
    return text
