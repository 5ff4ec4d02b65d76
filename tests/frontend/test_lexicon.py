"""The user lexicon file: checked writes, atomic replace, reads that follow edits."""

import json
import threading

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cosyvoice.errors import NotFoundError, TextError
from cosyvoice.frontend.lexicon import Lexicon
from cosyvoice.frontend.plan import plan_text
from cosyvoice.server.errors import install_error_handlers
from cosyvoice.server.lexicon_api import lexicon_router
from cosyvoice.state_files import DAMAGED


def test_put_delete_and_the_file(tmp_path):
    lex = Lexicon(tmp_path / "lexicon.json")
    assert lex.readings() == {}
    lex.put("朝阳", "cháo yáng")
    lex.put("Nguyen", "W IH1 N")
    assert json.loads((tmp_path / "lexicon.json").read_text("utf-8")) == {
        "zh": {"朝阳": "chao2 yang2"}, "en": {"Nguyen": "W IH1 N"}}
    [s] = plan_text("朝阳公园。", 100, lexicon=lex.readings())
    assert s.runs[0].readings["朝阳"].phones == ("chao2", "yang2")
    lex.delete("nguyen")
    assert list(lex.readings()) == ["朝阳"]
    with pytest.raises(NotFoundError):
        lex.delete("Nguyen")


def test_a_bad_entry_writes_nothing_and_quotes_it(tmp_path):
    lex = Lexicon(tmp_path / "lexicon.json")
    lex.put("重要", "zhong4 yao4")
    with pytest.raises(TextError, match=r"\{长大\|zhang da4\}"):
        lex.replace({"zh": {"朝阳": "chao2 yang2", "长大": "zhang da4"}})
    assert lex.to_dict() == {"zh": {"重要": "zhong4 yao4"}, "en": {}}
    assert not list(tmp_path.glob(".*.tmp"))


def test_concurrent_writers_lose_no_entry(tmp_path):
    lex = Lexicon(tmp_path / "lexicon.json")
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    threads = [threading.Thread(target=Lexicon(lex.path).put, args=(w, "AE1 B"))
               for w in words]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(lex.readings()) == words


def test_rest_routes(tmp_path):
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(lexicon_router(Lexicon(tmp_path / "lexicon.json")))
    client = TestClient(app)
    r = client.post("/api/v1/lexicon", json={"word": "tomato", "reading": "T AH0 M AA1 T OW2"})
    assert r.status_code == 201 and r.json()["lang"] == "en"
    r = client.put("/api/v1/lexicon", json={"zh": {"行": "hang2"}, "en": {}})
    assert r.status_code == 200 and r.json()["entries"] == [
        {"word": "行", "reading": "hang2", "lang": "zh"}]
    r = client.post("/api/v1/lexicon", json={"word": "行", "reading": "hang"})
    assert r.status_code == 422 and "{行|hang}" in r.json()["error"]["message"]
    assert client.get("/api/v1/lexicon").json()["zh"] == {"行": "hang2"}
    assert client.delete("/api/v1/lexicon/行").status_code == 200
    assert client.delete("/api/v1/lexicon/行").status_code == 404
    assert client.put("/api/v1/lexicon", content=b"{").status_code == 400


@pytest.mark.parametrize("damage", [b"", b"{", b"[1, 2]", b"\xff\xfe\x00garbage",
                                    b'{"zh": "not a map"}', b'{"fr": {}}',
                                    b'{"en": {"tomato": "NOT ARPABET!"}}'])
def test_a_damaged_file_is_set_aside_and_never_overwritten(tmp_path, damage):
    path = tmp_path / "lexicon.json"
    path.write_bytes(damage)
    lex = Lexicon(path)
    assert lex.readings() == {}  # empty, and the file is no longer where a write goes
    [aside] = tmp_path.glob("lexicon.json" + DAMAGED + "*")
    lex.put("tomato", "T AH0 M AA1 T OW2")
    assert list(lex.readings()) == ["tomato"] and aside.read_bytes() == damage


def test_writes_set_a_damaged_file_aside_before_replacing_it(tmp_path):
    path = tmp_path / "lexicon.json"
    for write in (lambda lex: lex.replace({"en": {"Nguyen": "W IH1 N"}}),
                  lambda lex: lex.put("Nguyen", "W IH1 N"),
                  lambda lex: pytest.raises(NotFoundError, lex.delete, "Nguyen")):
        for old in tmp_path.iterdir():
            old.unlink()
        path.write_bytes(b"{truncated")
        write(Lexicon(path))  # no read came first: the write itself checks the file
        [aside] = tmp_path.glob("lexicon.json" + DAMAGED + "*")
        assert aside.read_bytes() == b"{truncated"


def test_a_full_lexicon_keeps_the_text_pass_fast(tmp_path):
    """MAX_ENTRIES words at the longest (issue #35, 5): the text pass of a short request took
    seconds (a regex compiled per word, every request); a substring test comes first now.
    The words that occur are still found, the longest first, whole words only."""
    import time

    from cosyvoice.frontend.lexicon import MAX_ENTRIES, READING_MAX, WORD_MAX

    letters = "abcdefghijklmnopqrstuvwxyz"
    tail = "x" * (WORD_MAX - 33)
    words = {("".join(letters[(i // 26**k) % 26] for k in range(4)) + " phrase") * 3 + tail:
             ("AH0 " * (READING_MAX // 4)).strip() for i in range(MAX_ENTRIES - 2)}
    words["tomato"] = "T AH0 M AA1 T OW2"
    lex = Lexicon(tmp_path / "lexicon.json")
    lex.replace({"en": words, "zh": {"朝阳": "chao2 yang2"}})
    readings = lex.readings()
    text = "A tomato in 朝阳, and tomatoes. Hello there, how are you today?"
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        sentences = plan_text(text, 1000, lexicon=readings)
        times.append(time.perf_counter() - t0)
    found = {w for s in sentences for run in s.runs for w in run.readings}
    assert found == {"tomato", "朝阳"}
    assert sorted(times)[2] < 0.25, times  # was ~4.5 s on 2 busy cores
