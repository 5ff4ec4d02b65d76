"""The evaluation harness (``python -m bench eval``): its test set is fixed and unseen by what
the app was tuned on, its scoring normalises text the same way on both sides, and one row
runs end to end into JSON and markdown with every column."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.eval import report, testset
from bench.eval.metrics import error_rate, tokens
from tests.conftest import ROOT


def _clauses(text: str) -> set[tuple[str, ...]]:
    """A text's clauses as token tuples (a tuning sentence reused inside a test item shows)."""
    import re

    return {tuple(tokens(c)) for c in re.split(r"[,.;:!?，。；：！？]", text) if tokens(c)}


def test_the_test_set_loads_with_its_recorded_hash():
    ts = testset.load()
    assert ts.version == testset.VERSION
    assert {"en", "zh", "mixed", "long_en", "long_zh"} <= set(ts.parts)
    assert len(ts.items("en")) == len(ts.items("zh")) == 20
    assert len(ts.clone_cases) == 9
    assert len({i.text for p in ts.parts.values() for i in p}) == sum(map(len, ts.parts.values()))


def test_an_edited_test_set_is_refused_until_it_is_a_new_version(tmp_path, monkeypatch):
    data = json.loads((testset.HERE / "testset_v1.json").read_text("utf-8"))
    data["parts"]["en"]["items"][0] = "A different sentence."
    (tmp_path / "testset_v1.json").write_text(json.dumps(data), "utf-8")
    monkeypatch.setattr(testset, "HERE", tmp_path)
    with pytest.raises(ValueError, match="new version"):
        testset.load()


def test_no_test_sentence_is_one_the_app_was_tuned_on():
    from cosyvoice.engine.offline.engine import CALIBRATION_PARTS
    from cosyvoice.voice.space import SENTENCES

    tuned = [s for group in SENTENCES.values() for s in group]
    tuned += [s for group in CALIBRATION_PARTS.values() for s in group]
    seen = set().union(*(_clauses(s) for s in tuned))
    for part in testset.load().parts.values():
        for item in part:
            assert not _clauses(item.text) & seen, item.text


@pytest.mark.parametrize("reference, hypothesis, expected", [
    ("We meet at 8, near the old bridge.", "we meet at eight near the old bridge", (0, 8)),
    ("我们明天早上八点集合。", "我们明天早上8点集合", (0, 10)),  # digits spelled on both sides
    ("今天天气很好。", "今天天汽很好", (1, 6)),  # one character of six
    ("请把这份 report 发到我的 email 里。", "请把这份Report发到我的e-mail里", (2, 11)),
    ("It's twenty-one.", "It's twenty one!", (0, 3)),
    ("Hello there.", "", (2, 2)),
])
def test_error_rate_normalises_both_sides_the_same_way(reference, hypothesis, expected):
    assert error_rate(reference, hypothesis) == expected


def test_tokens_are_cjk_characters_and_latin_words():
    assert tokens("我用 Python 写了 2 个程序。") == ["我", "用", "python", "写", "了", "二", "个",
                                                 "程", "序"]


def test_an_unknown_row_is_refused_naming_the_rows():
    proc = subprocess.run([sys.executable, "-m", "bench", "eval", "--rows", "nobody"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "nobody" in proc.stderr and "af_heart" in proc.stderr


@pytest.mark.slow
def test_one_cloning_row_runs_end_to_end_into_json_and_markdown(tmp_path):
    """One row, one case, one sentence: every column is in both outputs, and the figures a
    cloning row has are real numbers in their ranges."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "eval", "--rows", "clone", "--cases", "cate_blanch",
         "--per-case", "1", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "latest.json").read_text("utf-8"))
    markdown = (tmp_path / "latest.md").read_text("utf-8")
    assert set(doc["columns"]) == set(report.COLUMNS)
    for header, _ in report.COLUMNS.values():
        assert header in markdown
    assert doc["complete"] and doc["machine"]["model"] and doc["load"]["start"] >= 0
    assert doc["testset"]["version"] == testset.VERSION
    clone, ceiling = doc["rows"]
    assert clone["name"] == "clone" and ceiling["name"] == "prompt (ceiling)"
    s = clone["summary"]
    assert set(report.COLUMNS) <= set(s)
    assert s["cer_zh"] is None and s["long"] is None  # an English-only row
    assert 0.0 <= s["wer_en"] <= 30.0, clone["items"]
    assert 2.0 <= s["dnsmos"] <= 5.0
    assert 0.0 < s["ge2e"] < 1.0 and 0.0 < s["dvector"] < 1.0
    item = clone["items"][0]
    assert s["rtf"] > 0 and s["cpu_rtf"] > 0 and 0 < s["first_chunk_s"] <= item["wall_s"]
    assert s["peak_rss_mb"] > 200
    assert item["case"] == "cate_blanch" and item["transcript"]
    assert any("nearest voices" in n for n in item["notes"]), item["notes"]  # the blend spoke
    assert 0.0 < ceiling["summary"]["dvector"] <= 1.0
    assert "RESULT eval_clone_wer_en=" in proc.stdout
