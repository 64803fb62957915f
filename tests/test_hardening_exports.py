"""Hostile chat exports are read with bounded memory: deep nesting, huge items, huge lines and zip
bombs give a recorded skip or a clear error naming the file, never a RecursionError or gigabytes of
RSS. Each input is read in a subprocess under an address-space cap (resource.setrlimit) that
reports its peak RSS."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = str(Path(__file__).resolve().parents[1])
RSS_LIMIT_MB = 1024
READER = textwrap.dedent("""
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))      # a runaway reader dies, not the machine
    from memstore.ingest.detect import detect_format
    from memstore.ingest.readers import read_source
    from memstore.ingest.types import SourceFormatError, UnknownFormatError
    path, fmt = sys.argv[1], sys.argv[2]
    problems, convs, error = [], 0, None
    try:
        fmt = detect_format(path) if fmt == "auto" else fmt
        for conv in read_source(path, fmt, problems):
            convs += 1
    except (SourceFormatError, UnknownFormatError) as exc:
        error = str(exc)
    # VmHWM, not ru_maxrss: ru_maxrss survives exec and would report the forking pytest's peak
    hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
    print(json.dumps({"format": fmt, "conversations": convs, "error": error,
                      "problems": [p.reason for p in problems], "rss_mb": hwm / 1024}))
""")


def read(path: Path, fmt: str = "auto") -> dict:
    out = subprocess.run([sys.executable, "-c", READER, str(path), fmt], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": REPO})
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(path.name, result["rss_mb"], "MB peak RSS", result["error"] or result["problems"][:2])
    assert result["rss_mb"] < RSS_LIMIT_MB
    return result


def chatgpt(title: str = "t", mapping: str | None = None) -> str:
    mapping = mapping or json.dumps({"a": {"id": "a", "parent": None, "children": [], "message": {
        "id": "a", "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["I like tea"]},
        "create_time": 1700000000}}})
    return f'{{"title": {json.dumps(title)}, "create_time": 1700000000, "current_node": "a", "mapping": {mapping}}}'


def test_a_conversation_nested_100k_levels_is_skipped_and_the_next_one_read(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "conversations.json"
    mapping = '{"x": {}, "deep": ' + deep + '}'
    path.write_text("[" + chatgpt(mapping=mapping) + ", " + chatgpt() + "]")
    out = read(path, "chatgpt")
    assert out["error"] is None and out["conversations"] == 1
    assert any("nested deeper than 64 levels" in p for p in out["problems"])


def test_message_content_that_is_deeply_nested_json_is_skipped(tmp_path):
    nested = "{\"a\": " * 50_000 + "1" + "}" * 50_000
    bad = chatgpt().replace('"parts": ["I like tea"]', f'"parts": [{nested}]')
    path = tmp_path / "conversations.json"
    path.write_text(f"[{bad}, {chatgpt()}]")
    out = read(path, "auto")
    assert out["conversations"] == 1 and any("nested deeper" in p for p in out["problems"])


def test_a_jsonl_line_nested_100k_deep_is_a_recorded_skip(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "hi", "conversation_id": "c"}\n'
                    + '{"role": "user", "content": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
                    + '{"role": "user", "content": "bye", "conversation_id": "c"}\n')
    out = read(path, "jsonl")
    assert out["error"] is None and any("line 2" in p for p in out["problems"])


def test_a_zip_bomb_is_refused_before_inflating(tmp_path):
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("conversations.json", "w", force_zip64=True) as fh:
            fh.write(b'[{"title": "')
            block = b"x" * (8 << 20)
            for _ in range(40):                                 # 320 MB of title from ~0.3 MB
                fh.write(block)
            fh.write(b'", "mapping": {}}]')
    assert path.stat().st_size < 2 << 20
    out = read(path, "chatgpt")
    assert out["error"] and "zip bomb" in out["error"] and "export.zip" in out["error"]


def test_a_huge_item_is_skipped_with_its_position_and_memory_stays_bounded(tmp_path):
    path = tmp_path / "conversations.json"
    with open(path, "w") as fh:
        fh.write("[" + chatgpt() + ", ")
        fh.write(chatgpt(title="y" * (100 << 20)))                # a 100 MB title
        fh.write(", " + chatgpt() + "]")
    out = read(path, "chatgpt")
    assert out["conversations"] == 2
    assert any("conversation #2" in p and "larger than" in p for p in out["problems"])


def test_a_huge_jsonl_line_and_a_huge_csv_field_are_bounded(tmp_path):
    jl = tmp_path / "big.jsonl"
    with open(jl, "w") as fh:
        fh.write('{"role": "user", "content": "' + "z" * (80 << 20) + '"}\n')
        fh.write('{"role": "user", "content": "small"}\n')
    out = read(jl, "jsonl")
    assert any("longer than" in p for p in out["problems"]) and out["conversations"] == 1
    csv = tmp_path / "big.csv"
    with open(csv, "w") as fh:
        fh.write("role,content\nuser,hello\nuser,\"" + "q" * (80 << 20) + "\"\n")
    out = read(csv, "csv")
    assert out["error"] and "big.csv" in out["error"]


@pytest.mark.parametrize("encoding", ["utf-8-sig"])
def test_a_bom_export_is_detected_and_read(tmp_path, encoding):
    path = tmp_path / "conversations.json"
    path.write_text(f"[{chatgpt()}]", encoding=encoding)
    out = read(path)
    assert out["format"] == "chatgpt" and out["conversations"] == 1
    jl = tmp_path / "c.jsonl"
    jl.write_text('{"role": "user", "content": "hi"}\n{"role": "user", "content": "yo"}\n', encoding=encoding)
    out = read(jl, "jsonl")
    assert out["problems"] == [] and out["conversations"] == 1


def test_a_csv_quote_that_never_closes_is_reported_not_merged_silently(tmp_path):
    path = tmp_path / "chat.csv"
    path.write_text('role,content,conversation_id\nuser,hello,c\nuser,"oops,c\nuser,second,c\nuser,third,c\n')
    out = read(path, "csv")
    assert any("never closed" in p and "row 5" in p for p in out["problems"]), out["problems"]
    ok = tmp_path / "ok.csv"
    ok.write_text('role,content,conversation_id\nuser,"two\nlines",c\nuser,"fine",c\n')
    assert read(ok, "csv")["problems"] == []
