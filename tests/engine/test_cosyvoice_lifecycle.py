"""The CosyVoice engine's model lifecycle on tiny folders of our own making
(tests/cosyvoice_folder.py, no oracle), in-process: an unload or a reload closes the synth and
nothing keeps it (a weakref dies); a request in flight finishes on the model it started with,
which is freed when it ends; a request that takes hold of an already-closed model gets a clear
503 (ModelError), never an AttributeError; a failed default engine sends even the first
request to the offline engine."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

from cosyvoice.engine.cosyvoice.engine import model_spec, torch_dtype
from cosyvoice.errors import ModelError
from cosyvoice.lifecycle.manager import ModelManager
from cosyvoice.pipeline import SynthesisRequest
from tests.conftest import local_services

TEXT = "Hello there. How are you today? Fine, thanks."  # three sentences: three engine calls


def _dead(ref: weakref.ref) -> bool:
    gc.collect()
    return ref() is None


def test_unload_closes_the_synth_and_nothing_keeps_it(cv_folder_v3):
    manager = ModelManager("cpu", [model_spec(3, str(cv_folder_v3))])
    synth = manager.get("cosyvoice3")
    ref, llm = weakref.ref(synth), weakref.ref(synth.llm)
    del synth
    assert manager.unload("cosyvoice3")["freed"] is True
    assert _dead(ref) and _dead(llm)
    assert manager.states()[0]["state"] == "UNLOADED"


def test_reload_swaps_and_frees_the_old_model(cv_folder_v3):
    manager = ModelManager("cpu", [model_spec(3, str(cv_folder_v3))])
    old = manager.get("cosyvoice3")
    ref = weakref.ref(old)
    manager.reload("cosyvoice3")
    assert old.closed and old.llm is None  # closed at the swap: nobody held it
    del old
    assert _dead(ref) and manager.get("cosyvoice3").llm is not None


def _stream(services, **fields):
    return services.synth.stream(SynthesisRequest(text=TEXT, engine="cosyvoice3",
                                                  voice="tiny-male", seed=5, **fields))


def test_a_request_in_flight_finishes_on_its_model_then_frees_it(tmp_path, cv_folder_v3):
    services = local_services(tmp_path, engine="cosyvoice3", model_dir=str(cv_folder_v3))
    manager = services.manager
    whole = np.concatenate([c.wav for c in _stream(services)])  # the same request, undisturbed
    ref = weakref.ref(manager.get("cosyvoice3"))
    chunks = _stream(services)
    first = next(chunks)  # the first token hop of sentence 1; the rest to come
    manager.unload("cosyvoice3")
    assert manager.states()[[m["name"] for m in manager.states()].index("cosyvoice3")][
        "state"] == "UNLOADED"
    assert ref() is not None and ref().closed and ref().llm is not None  # still held
    rest = list(chunks)
    assert [c.index for c in [first, *rest] if c.final] == [0, 1, 2]  # every sentence ends
    np.testing.assert_array_equal(np.concatenate([first.wav, *[c.wav for c in rest]]), whole)
    del chunks, first, rest
    assert _dead(ref)  # the last hold's end freed it; no copy kept


def test_reload_during_a_request_keeps_one_model_after_it_ends(tmp_path, cv_folder_v3):
    services = local_services(tmp_path, engine="cosyvoice3", model_dir=str(cv_folder_v3))
    manager = services.manager
    old = weakref.ref(manager.get("cosyvoice3"))
    chunks = _stream(services)
    first = next(chunks)
    manager.reload("cosyvoice3")  # swapped now; the old one serves this request to its end
    new = manager.get("cosyvoice3")
    assert new is not old() and old() is not None and old().llm is not None
    assert [c.index for c in [first, *chunks] if c.final] == [0, 1, 2]
    del first
    del chunks
    assert _dead(old) and new.llm is not None


class _UnloadAfterGet(ModelManager):
    """A manager whose unload lands between a request's lookup of the model and its hold
    (the race window), once."""

    armed = False

    def get(self, name):
        instance = super().get(name)
        if self.armed and name == "cosyvoice3":
            self.armed = False
            self.unload(name)
        return instance


def test_a_request_racing_an_unload_gets_a_clear_503(tmp_path, cv_folder_v3):
    services = local_services(tmp_path, engine="cosyvoice3", model_dir=str(cv_folder_v3))
    manager = services.manager
    manager.__class__ = _UnloadAfterGet
    manager.get("cosyvoice3")
    manager.armed = True
    with pytest.raises(ModelError, match="closed .unloaded or replaced.; load it again"):
        list(_stream(services))
    wav = np.concatenate([c.wav for c in _stream(services)])  # the next one loads it again
    assert len(wav) > 0 and manager.get("cosyvoice3").llm is not None


def test_requests_racing_unloads_finish_or_get_503(tmp_path, cv_folder_v3):
    """Three requests at once while another thread unloads the model every 0.2 s: each one
    either finishes or gets a ModelError; nothing else (no AttributeError on a closed model)."""
    services = local_services(tmp_path, engine="cosyvoice3", model_dir=str(cv_folder_v3))
    manager = services.manager
    manager.get("cosyvoice3")
    outcomes: list[str] = []
    stop = threading.Event()

    def request(seed: int) -> None:
        try:
            req = SynthesisRequest(text=TEXT, engine="cosyvoice3", voice="tiny-female", seed=seed)
            wav = np.concatenate([c.wav for c in services.synth.stream(req)])
            outcomes.append("ok" if len(wav) else "empty")
        except ModelError:
            outcomes.append("503")
        except Exception as e:  # the failure this test is for
            outcomes.append(f"{type(e).__name__}: {e}")

    def unloader() -> None:
        while not stop.wait(0.2):
            manager.unload("cosyvoice3")

    workers = [threading.Thread(target=request, args=(s,)) for s in range(3)]
    churn = threading.Thread(target=unloader)
    churn.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join(300)
    stop.set()
    churn.join()
    assert len(outcomes) == 3 and set(outcomes) <= {"ok", "503"}, outcomes


def test_the_first_request_falls_back_when_the_default_folder_fails(tmp_path):
    """No preload: the default engine's model is UNLOADED when the first request comes. Its
    folder fails to load then, and the request (naming no engine) is answered by the offline
    engine with the note — not a 503; a request naming the engine gets the 503 with the
    reason."""
    services = local_services(tmp_path, engine="cosyvoice3",
                              model_dir=str(tmp_path / "no-such-folder"), preload=False)
    synth = services.synth
    assert synth.engine_state("cosyvoice3")["state"] == "UNLOADED"
    result = synth.synthesize(SynthesisRequest(text="Hello there."))
    assert result.sample_rate == 22050 and len(result.wav) > 0.3 * 22050
    assert "cosyvoice3 engine is not available" in result.notes[0]
    assert "does not exist" in result.notes[0]
    with pytest.raises(ModelError, match="cosyvoice3 engine is not available.*does not exist"):
        synth.synthesize(SynthesisRequest(text="Hello there.", engine="cosyvoice3"))


@pytest.mark.parametrize("name, device, dtype", [
    ("auto", "cpu", "float32"), ("auto", "cuda:1", "float16"), ("bf16", "cuda", "bfloat16"),
    ("fp32", "cuda", "float32"), ("float16", "cpu", "float16")])
def test_the_dtype_setting(name, device, dtype):
    assert str(torch_dtype(name, device)) == f"torch.{dtype}"


def test_an_unknown_dtype_is_refused():
    with pytest.raises(ValueError, match="unknown CosyVoice dtype 'int4'"):
        torch_dtype("int4", "cpu")
