"""Credentials never reach what a run writes: errors, evidence rows, actor names."""

from __future__ import annotations

import pickle
import socket

import pytest

from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.llm.base import LLMError, Message
from ratchet_ray.llm.openai_compat import OpenAICompatLLM, OpenAIConfig
from ratchet_ray.redact import redact, redact_url, register_secret

KEY = "sk-test-0123456789abcdef"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_redact_masks_url_user_info_and_registered_secrets():
    register_secret("hunter2-long-secret")
    assert redact_url("http://bob:pw@host:8000/v1") == "http://***@host:8000/v1"
    text = "POST https://u:p@a.example/v1 failed with key hunter2-long-secret (x)"
    assert redact(text) == "POST https://***@a.example/v1 failed with key *** (x)"
    assert redact("plain text, http://host/v1") == "plain text, http://host/v1"
    register_secret("short")  # too short to be a key: never blanks ordinary words
    assert redact("a short note") == "a short note"


def test_evidence_rows_are_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    store = EvidenceStore(tmp_path)
    store.append("llm_call", 0, [{"run_id": "r", "round": 0, "role": "solver", "ok": False,
                                  "error": f"http://me:secret@h/v1 said no to {KEY}"}])
    store.append("capsule", 0, [{"capsule_id": "c", "run_id": "r", "round": 0, "split": "eval",
                                 "task_id": "t", "skill_id": "NONE", "passed": False,
                                 "grader_trace": f"[solver] LLMError: key {KEY}"}])
    con = store.connect()
    assert con.execute("select error from llm_call").fetchall() == [("http://***@h/v1 said no to ***",)]
    assert con.execute("select grader_trace from capsule").fetchall() == [("[solver] LLMError: key ***",)]


def test_openai_client_keeps_the_key_out_of_reprs_errors_and_names():
    url = f"http://alice:pa55word-xyz@127.0.0.1:{closed_port()}/v1"
    config = OpenAIConfig(base_url=url, model="m", api_key=KEY, max_retries=0, timeout_s=5)
    assert KEY not in repr(config) and KEY not in str(config.model_dump())
    llm = OpenAICompatLLM(config)
    assert llm.where == redact_url(url) and "pa55word" not in llm.where
    clone = pickle.loads(pickle.dumps(llm))  # what an actor gets: the key still works there
    assert clone.config.api_key.get_secret_value() == KEY
    with pytest.raises(LLMError) as info:
        llm.complete([Message(role="user", content="hi")])
    message = str(info.value)
    assert "pa55word" not in message and "alice" not in message and KEY not in message
    assert "127.0.0.1" in message  # still says which server
