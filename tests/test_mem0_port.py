"""The README's promise, checked: mem0's documented OSS examples run on memstore with only the
import changed (`from mem0 import Memory` -> `from memstore import Memory`).

Each snippet below is copied verbatim from mem0's docs (mem0ai/mem0, docs/, commit 8d5b786) and run
with `exec` in a fresh folder: mem0's `Memory()` default store becomes memstore's
data/memstore.duckdb there. Where a snippet names an LLM provider, the scripted OpenAI-compatible
server stands in for it through OPENAI_BASE_URL / OPENAI_API_KEY, the variables mem0 reads. Where
a doc names a memory id that exists only in the doc ("mem_123"), the test substitutes a real one
(the only other change, said where it happens). What memstore refuses (the Cohere reranker of the
configuration page) is checked as a refusal that names the alternative.
"""
from __future__ import annotations

import json
import re

import pytest

from memstore.core.errors import ConfigError
from memstore.core.mem0_config import Mem0ConfigWarning
from memstore.testing.openai_server import ScriptedOpenAIServer

# docs/open-source/python-quickstart.mdx (the three steps)
QUICKSTART = '''
from mem0 import Memory

m = Memory()
messages = [
    {"role": "user", "content": "Hi, I'm Alex. I love basketball and gaming."},
    {"role": "assistant", "content": "Hey Alex! I'll remember your interests."}
]
m.add(messages, user_id="alex")
results = m.search("What do you know about me?", filters={"user_id": "alex"})
print(results)
'''

# docs/core-concepts/memory-operations/add.mdx (Python OSS)
ADD = '''
import os
from mem0 import Memory

os.environ["OPENAI_API_KEY"] = "your-api-key"

m = Memory()

messages = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future."}
]

# Store inferred memories (default behavior)
result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"})

# Optionally store raw messages without inference
result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"}, infer=False)

# Optionally set an expiration date (YYYY-MM-DD)
result = m.add(messages, user_id="alice", expiration_date="2030-01-31")
'''

# docs/core-concepts/memory-operations/search.mdx (Python OSS, then the explain example)
SEARCH = '''
from mem0 import Memory

m = Memory()

# Simple search: entity IDs go in `filters`
related_memories = m.search("Should I drink coffee or tea?", filters={"user_id": "alice"})

# Search with additional metadata filters (combine entity + metadata in the same dict)
memories = m.search(
    "food preferences",
    filters={"user_id": "alice", "categories": {"contains": "diet"}},
)
results = m.search(
    "food preferences",
    filters={"user_id": "alice"},
    explain=True,
)

print(results["results"][0]["score_details"])
'''

# docs/core-concepts/memory-operations/update.mdx and delete.mdx (Python OSS)
UPDATE = '''
from mem0 import Memory

memory = Memory()

# Replace the content
memory.update(
    memory_id="mem_123",
    text="Alex now prefers decaf coffee",
)

# Update content plus metadata and an expiration date (None clears it)
memory.update(
    memory_id="mem_123",
    text="Alex now prefers decaf coffee",
    metadata={"category": "preferences"},
    expiration_date="2030-01-31",
)
'''
DELETE = '''
from mem0 import Memory

memory = Memory()

memory.delete(memory_id="mem_123")
memory.delete_all(user_id="alice")
'''

# docs/core-concepts/memory-types.mdx (both examples)
PROCEDURAL = '''
from mem0 import Memory

memory = Memory()

memory.add(
    [
        {"role": "user", "content": "Book a flight from SFO to NYC"},
        {"role": "assistant", "content": "1. Search flights. 2. Filter by price. 3. Confirm booking."},
    ],
    agent_id="travel-agent",
    memory_type="procedural_memory",
)
'''
SCOPED = '''
from mem0 import Memory

memory = Memory()

memory.add(
    "I'm Alex and I prefer boutique hotels.",
    user_id="alex",
    run_id="trip-planning-2025",
)

results = memory.search(
    "Any hotel preferences?",
    filters={"user_id": "alex", "run_id": "trip-planning-2025"},
)
'''

# docs/open-source/configuration.mdx ("Define your configuration", then the YAML variant)
CONFIGURATION = '''
from mem0 import Memory

config = {
    "vector_store": {
        "provider": "qdrant",
        "config": {"host": "localhost", "port": 6333},
    },
    "llm": {
        "provider": "openai",
        "config": {"model": "gpt-5-mini", "temperature": 0.1},
    },
    "embedder": {
        "provider": "openai",
        "config": {"model": "text-embedding-3-small"},
    },
    "reranker": {
        "provider": "cohere",
        "config": {"model": "rerank-v3.5"},
    },
}

memory = Memory.from_config(config)
'''
YAML_CONFIG = '''
import yaml
from mem0 import Memory

with open("config.yaml") as f:
    config = yaml.safe_load(f)

memory = Memory.from_config(config)
'''

# docs/open-source/features/custom-instructions.mdx (the config, then the two adds)
CUSTOM_INSTRUCTIONS = '''
from mem0 import Memory

config = {
    "llm": {
        "provider": "openai",
        "config": {
            "model": "gpt-5-mini",
            "temperature": 0.2,
            "max_tokens": 2000,
        }
    },
    "custom_instructions": custom_instructions,
}

m = Memory.from_config(config)
m.add("Yesterday, I ordered a laptop, the order id is 12345", user_id="alice")
m.add("I like going to hikes", user_id="alice")
'''

# docs/open-source/features/multimodal-support.mdx (the vision config, the URL and base64 examples)
VISION_CONFIG = '''
config = {"llm": {"provider": "openai", "config": {"enable_vision": True, "vision_details": "auto"}}}
client = Memory.from_config(config)
'''
IMAGE_URL = '''
from mem0 import Memory

client = Memory()

messages = [
    {"role": "user", "content": "Hi, my name is Alice."},
    {
        "role": "user",
        "content": {
            "type": "image_url",
            "image_url": {
                "url": "https://example.com/menu.jpg"
            }
        }
    }
]

client.add(messages, user_id="alice")
'''
IMAGE_BASE64 = '''
import base64
from mem0 import Memory

def encode_image(image_path):
    with open(image_path, "rb") as image_file:
        return base64.b64encode(image_file.read()).decode("utf-8")

client = Memory()
base64_image = encode_image("path/to/your/image.jpg")

messages = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What's in this image?"},
            {
                "type": "image_url",
                "image_url": {
                    "url": f"data:image/jpeg;base64,{base64_image}"
                }
            }
        ]
    }
]

client.add(messages, user_id="alice")
'''


def ported(snippet: str) -> str:
    """The only change a port makes: the import."""
    return snippet.replace("from mem0 import Memory", "from memstore import Memory")


def run(snippet: str, ns: dict | None = None) -> dict:
    ns = {} if ns is None else ns
    exec(compile(ported(snippet), "<mem0 docs>", "exec"), ns)
    return ns


def _answer(body: dict) -> str:
    """The scripted model: describes images, scores reranks, and extracts one fact per line a
    person said (deterministic, so the tests can say what must be stored)."""
    system = body["messages"][0]["content"]
    last = body["messages"][-1]["content"]
    if isinstance(last, list):
        return "A restaurant menu listing vegan ramen."
    if isinstance(system, str) and system.startswith("You extract durable facts"):
        new = last.split("New messages:\n", 1)[1]
        said = [line.split(": ", 1)[1] for line in new.splitlines() if ": " in line
                and not line.startswith("assistant")]
        return json.dumps({"facts": [{"text": f"User said: {s}"} for s in said]})
    return "0.5"


@pytest.fixture
def docs_env(tmp_path, monkeypatch):
    """A fresh folder as the working directory, and the LLM mem0's docs configure (OpenAI) served by
    the scripted OpenAI-compatible server through the variables mem0 reads."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMSTORE_PATH", raising=False)
    with ScriptedOpenAIServer(chat_responder=_answer, embed_dim=1536) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield srv


def _close(ns: dict) -> None:
    for v in ns.values():
        if type(v).__name__ == "Memory":
            v.close()


def test_quickstart(docs_env, capsys):
    ns = run(QUICKSTART)
    _close(ns)
    hits = ns["results"]["results"]
    assert any("basketball" in h["memory"] for h in hits) and all(h["user_id"] == "alex" for h in hits)
    assert "basketball" in capsys.readouterr().out
    assert (docs_env.chat_calls, docs_env.embed_calls) == (0, 0)     # memstore's Memory() is offline


def test_add_search_update_delete_pages(docs_env):
    ns = run(ADD)
    texts = [r["memory"] for r in ns["m"].get_all(user_id="alice")["results"]]
    assert "Alice loves sci-fi movies" in texts
    assert "I'm not a big fan of thriller movies but I love sci-fi movies." in texts      # infer=False
    _close(ns)
    ns = run(SEARCH)
    assert ns["related_memories"]["results"] and ns["memories"]["results"] == []          # no diet category
    assert set(ns["results"]["results"][0]["score_details"]) >= {"semantic_score", "bm25_score", "final_score"}
    some_id = ns["related_memories"]["results"][0]["id"]
    _close(ns)
    ns = run(UPDATE.replace("mem_123", some_id))          # the doc's id exists only in the doc
    got = ns["memory"].get(some_id)
    assert got["memory"] == "Alex now prefers decaf coffee" and got["metadata"]["category"] == "preferences"
    assert got["expiration_date"].startswith("2030-01-31")
    _close(ns)
    ns = run(DELETE.replace("mem_123", some_id))
    assert ns["memory"].get(some_id) is None and ns["memory"].get_all(user_id="alice")["results"] == []
    _close(ns)


def test_memory_types_page(docs_env):
    ns = run(PROCEDURAL)
    [proc] = ns["memory"].get_all(agent_id="travel-agent")["results"]
    assert proc["metadata"]["memory_type"] == "procedural_memory"
    assert "1. Search flights. 2. Filter by price. 3. Confirm booking." in proc["memory"]
    _close(ns)
    ns = run(SCOPED)
    assert [r["memory"] for r in ns["results"]["results"]] == ["Alex prefers boutique hotels"]
    _close(ns)


def test_configuration_page(docs_env):
    with pytest.raises(ConfigError) as err:
        run(CONFIGURATION)
    assert "'cohere'" in str(err.value) and '"provider": "llm"' in str(err.value)
    # the same configuration without the Cohere reranker, loaded from YAML as the page shows
    import yaml

    config = run(CONFIGURATION.split("memory = ")[0])["config"]
    del config["reranker"]
    with open("config.yaml", "w") as f:
        yaml.safe_dump(config, f)
    with pytest.warns(Mem0ConfigWarning, match=r"vector_store \(qdrant"):
        ns = run(YAML_CONFIG)
    with ns["memory"] as memory:
        assert memory.add("I love sci-fi movies", user_id="alice")["results"][0]["memory"] == \
            "User said: I love sci-fi movies"
    chats = [r["json"] for r in docs_env.requests if r["path"].endswith("/chat/completions")]
    embeds = [r["json"] for r in docs_env.requests if r["path"].endswith("/embeddings")]
    assert chats[0]["model"] == "gpt-5-mini" and chats[0]["temperature"] == 0.1
    assert embeds and all(e["model"] == "text-embedding-3-small" for e in embeds)


def test_custom_instructions_page(docs_env):
    ns = {"custom_instructions": "Please only extract entities containing customer support information."}
    with pytest.warns(Mem0ConfigWarning, match="llm.config.max_tokens"):
        run(CUSTOM_INSTRUCTIONS, ns)
    _close(ns)
    chats = [r["json"] for r in docs_env.requests if r["path"].endswith("/chat/completions")]
    assert len(chats) == 2 and all(ns["custom_instructions"] in c["messages"][0]["content"] for c in chats)


def test_multimodal_page(docs_env, tmp_path):
    (tmp_path / "path/to/your").mkdir(parents=True)
    (tmp_path / "path/to/your/image.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    ns = run(IMAGE_URL)                          # no vision configured: the image is noted
    assert "[image]" in ns["client"].frame("messages", user_id="alice")["content"].to_list()
    _close(ns)
    ns = run(IMAGE_BASE64)
    _close(ns)
    # the page's vision config, then its URL example on that client
    ns = run("from mem0 import Memory\n" + VISION_CONFIG)
    run(IMAGE_URL.split("client = Memory()")[1], ns)
    with ns["client"] as client:
        stored = client.frame("messages", user_id="alice")["content"].to_list()
    assert "[image: A restaurant menu listing vegan ramen.]" in stored
    vision = [r["json"] for r in docs_env.requests if isinstance(r["json"]["messages"][-1]["content"], list)]
    assert [p["image_url"] for p in vision[0]["messages"][-1]["content"] if p["type"] == "image_url"] == \
        [{"url": "https://example.com/menu.jpg", "detail": "auto"}]
    assert not any(re.search("base64", json.dumps(r["json"] or {})) for r in docs_env.requests)
