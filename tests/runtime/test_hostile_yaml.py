"""The YAML reader's bounds and its child process (issue #35 item 2), on the hostile catalogue
of tests/hostile_folders.py: each variant is refused quickly with a reason naming the line or
key; the released configs read the same through the child as in process; and where a bound
is missed (the limits lifted here), the child is stopped by its timeout or its memory limit
while this process keeps running."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psutil
import pytest

from cosyvoice.runtime.hparams import CosyVoiceHParams
from cosyvoice.runtime.yaml_child import read_yaml
from cosyvoice.runtime.yaml_data import HParamsError, Limits, Tagged, load_yaml
from tests.cosyvoice_folder import yaml_text
from tests.hostile_folders import TEXT_VARIANTS, hostile_yaml
from tests.oracle.harness import oracle_dir

QUICK_S = 5.0  # each refusal, on 2 shared cores (≈ 0.05–1 s measured)
NO_BOUNDS = Limits(max_int_bits=10**12, max_values=10**12, max_chars=10**12, max_depth=10**6,
                   max_aliases=10**6, max_nodes=10**6)


def _refused(call, words: tuple[str, ...]) -> str:
    t0 = time.perf_counter()
    with pytest.raises(HParamsError) as info:
        call()
    elapsed = time.perf_counter() - t0
    message = str(info.value)
    assert elapsed < QUICK_S, f"refused after {elapsed:.1f} s: {message}"
    for word in words:
        assert word in message.lower(), f"{word!r} not in {message!r}"
    return message


@pytest.mark.parametrize("variant", list(TEXT_VARIANTS))
def test_each_hostile_yaml_is_refused_in_process(variant) -> None:
    _refused(lambda: load_yaml(hostile_yaml(variant)), TEXT_VARIANTS[variant][1])


@pytest.mark.parametrize("variant", ["power_tower", "alias_bomb", "ref_bomb", "huge_hex",
                                     "deep_flow_nesting", "object_tag"])
def test_the_child_gives_the_same_reason(tmp_path, variant) -> None:
    path = tmp_path / "cosyvoice3.yaml"
    path.write_text(hostile_yaml(variant), encoding="utf-8")
    in_child = _refused(lambda: read_yaml(path), TEXT_VARIANTS[variant][1])
    with pytest.raises(HParamsError) as here:
        load_yaml(hostile_yaml(variant))
    assert in_child == str(here.value)


def test_the_power_tower_names_line_key_and_bound() -> None:
    message = _refused(lambda: load_yaml(hostile_yaml("power_tower")), ())
    line = yaml_text(3).count("\n") + 2  # the appended line
    assert message.startswith(f"key boom (line {line}): the exponent 387420489 makes a number "
                              "of about 1,228,093,894 bits; the limit is 64"), message


def _tiny_and_released() -> list[str]:
    texts = [yaml_text(2), yaml_text(3)]
    base = oracle_dir()
    if base is not None:
        texts += [(base / "configs" / f"cosyvoice{v}.yaml").read_text() for v in (2, 3)]
    return texts


def test_real_configs_read_the_same_through_the_child(tmp_path) -> None:
    for i, text in enumerate(_tiny_and_released()):
        path = tmp_path / f"c{i}.yaml"
        path.write_text(text, encoding="utf-8")
        assert read_yaml(path) == load_yaml(text)
    hp = CosyVoiceHParams.from_file(path)
    assert hp.section("flow").kwargs["decoder"].kwargs["cfm_params"].kwargs["content"][
        "sigma_min"] == 1e-06


def test_data_of_every_kind_survives_the_json_round_trip(tmp_path) -> None:
    text = """
base: &base {a: 1, b: [x, 2.5, null, true]}
merged: {<<: *base, c: .inf}
ints: {1: one, null: none, "!odd": key}
call: !new:pkg.Mod
    size: !ref <base.a> * 3
    items: [!name:pkg.fn {k: v}]
"""
    path = tmp_path / "data.yaml"
    path.write_text(text, encoding="utf-8")
    doc = read_yaml(path)
    assert doc == load_yaml(text)
    assert doc["merged"] == {"a": 1, "b": ["x", 2.5, None, True], "c": float("inf")}
    assert doc["ints"] == {1: "one", None: "none", "!odd": "key"}
    assert doc["call"] == Tagged("new", "pkg.Mod", {"size": 3, "items": [
        Tagged("name", "pkg.fn", {"k": "v"})]})


def test_values_that_are_not_hyper_parameters_are_refused_by_the_child(tmp_path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_text("a: !!binary aGVsbG8=\n", encoding="utf-8")
    _refused(lambda: read_yaml(path), ("bytes", "not a hyper-parameter"))


@pytest.mark.parametrize("expr, value", [
    ("2 ** 63 - 1", 2**63 - 1), ("-(2 ** 63)", -(2**63)), ("10 ** 19", 10**19),
    ("(-2) ** 3", -8), ("2 ** -2", 0.25), ("1.5 ** 2", 2.25), ("7 // 2 + 7 % 2", 4),
    ("<n> * <n> / 4", 16.0), ("1 ** 1000000000000", 1),
])
def test_ordinary_arithmetic_still_works(expr, value) -> None:
    assert load_yaml(f"n: 8\nv: !ref {expr}\n")["v"] == value


def test_a_moderate_use_of_aliases_still_works() -> None:
    doc = load_yaml("a: &a [1, 2, 3]\n" + "".join(f"b{i}: *a\n" for i in range(50)))
    assert doc["b49"] == [1, 2, 3]


def _ticks_while(call) -> tuple[float, BaseException | None]:
    """Run ``call`` in a thread; the longest gap between this thread's 10 ms ticks meanwhile
    (a call that held the GIL would stretch it to the call's length)."""
    error: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            error.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    last, gap = time.perf_counter(), 0.0
    while thread.is_alive():
        time.sleep(0.01)
        now = time.perf_counter()
        gap, last = max(gap, now - last), now
    thread.join()
    return gap, (error[0] if error else None)


def test_a_missed_bound_is_stopped_by_the_timeout_and_this_process_runs_on(tmp_path) -> None:
    path = tmp_path / "cosyvoice3.yaml"
    path.write_text(hostile_yaml("power_tower"), encoding="utf-8")
    t0 = time.perf_counter()
    gap, error = _ticks_while(lambda: read_yaml(path, NO_BOUNDS, timeout_s=2.0))
    elapsed = time.perf_counter() - t0
    assert isinstance(error, HParamsError), error
    assert "took longer than 2 s and was stopped" in str(error)
    assert 2.0 <= elapsed < 6.0
    assert gap < 0.5, f"this process stalled {gap:.2f} s while the child computed"
    assert not [p for p in psutil.Process().children(recursive=True)
                if "yaml_child" in _cmdline(p)]  # killed, not left running


def _cmdline(process: psutil.Process) -> str:
    """A process's command line; empty for one that has ended (a zombie not yet reaped, such
    as another test's finished subprocess, runs nothing)."""
    try:
        return " ".join(process.cmdline())
    except (psutil.ZombieProcess, psutil.NoSuchProcess):
        return ""


def test_a_missed_bound_is_stopped_by_the_memory_limit(tmp_path) -> None:
    path = tmp_path / "cosyvoice3.yaml"
    path.write_text(hostile_yaml("alias_bomb"), encoding="utf-8")
    with pytest.raises(HParamsError, match="needed more than 64 MB and was stopped"):
        read_yaml(path, NO_BOUNDS, timeout_s=120.0, memory_bytes=64 * 2**20)


@pytest.mark.parametrize("make, words", [
    (lambda p: p.mkdir(), ("not a regular file",)),
    (lambda p: __import__("os").mkfifo(p), ("not a regular file",)),
    (lambda p: p.symlink_to("/dev/zero"), ("not a regular file",)),
    (lambda p: p.write_bytes(b"a: 1\n" + b"#" * (300 * 2**10)), ("kb",)),
    (lambda p: p.write_bytes(b"a: \xff\xfe\n"), ("not utf-8",)),
    (lambda p: p.symlink_to(p.parent / "absent.yaml"), ("cannot be opened",)),
], ids=["directory", "fifo", "link_to_dev_zero", "300_kB", "not_utf8", "dangling_link"])
def test_files_that_are_not_yaml_text_are_never_read(tmp_path, make, words) -> None:
    path = tmp_path / "cosyvoice3.yaml"
    make(path)
    _refused(lambda: read_yaml(Path(path)), words)
