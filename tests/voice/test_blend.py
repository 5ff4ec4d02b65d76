"""Voice blends as data: the written form, its canonical spec, the errors a user sees, and
blends kept in the voice store (no prompt, no profile)."""

from __future__ import annotations

import pytest

from cosyvoice.errors import ConflictError, TextError
from cosyvoice.voice.blend import Blend, is_blend_spec, parse_blend
from cosyvoice.voice.store import VoiceStore

VOICES = ("af_bella", "af_sky", "am_adam", "zf_xiaobei")


def test_weights_are_normalized_and_the_spec_is_canonical():
    b = parse_blend(" AF_BELLA : 2 + af_sky:1", VOICES)
    assert b.parts == (("af_bella", pytest.approx(2 / 3)), ("af_sky", pytest.approx(1 / 3)))
    assert b.spec == "af_bella:0.667+af_sky:0.333" and b.lead == "af_bella"
    again = parse_blend(b.spec, VOICES)  # the canonical form reads back as itself
    assert again.spec == b.spec
    assert parse_blend("af_sky+am_adam", VOICES).weights() == {"af_sky": 0.5, "am_adam": 0.5}
    assert parse_blend("zf_xiaobei:1+af_sky:3", VOICES).lead == "af_sky"


def test_what_counts_as_a_blend():
    assert is_blend_spec("af_bella:1") and is_blend_spec("a+b")
    assert not is_blend_spec("af_bella") and not is_blend_spec("") and not is_blend_spec(None)


@pytest.mark.parametrize("spec, message", [
    ("af_bella:2+nobody:1", "'nobody' in the blend is not a voice that can be blended"),
    ("af_bella:0+af_sky", "the weight of af_bella is 0; use 0.01–100"),
    ("af_bella:500", "the weight of af_bella is 500"),
    ("af_bella:2+af_bella:1", "af_bella appears twice"),
    ("af_bella:x", "cannot read 'af_bella:x'"),
    ("af_bella+", "cannot read ''"),
    ("+".join(["af_bella"] * 6), "a blend mixes at most 5 voices"),
    ("af_bella:" + "1" * 300, "the voice blend is 309 characters; use at most 200"),
])
def test_a_bad_blend_says_what_to_fix(spec, message):
    with pytest.raises(TextError, match="^" + message.replace("+", r"\+").replace("(", r"\(")):
        parse_blend(spec, VOICES)


def test_an_engine_without_blendable_voices_refuses():
    with pytest.raises(TextError, match="cannot be blended"):
        parse_blend("a:1", ())


def test_a_saved_blend_lists_reads_renames_and_deletes(tmp_path):
    store = VoiceStore(tmp_path, reserved=VOICES)
    saved = store.save_blend("Warm mix", parse_blend("af_bella:2+af_sky:1", VOICES))
    assert not saved.prompt_path.exists() and saved.profile is None
    assert saved.summary()["kind"] == "blend"
    assert saved.summary()["blend"] == "af_bella:0.667+af_sky:0.333"
    with pytest.raises(ConflictError, match="already saved"):
        store.save_blend("warm MIX", Blend.from_weights({"af_sky": 1}))
    assert store.rename("warm mix", "Cool mix").blend.spec == saved.blend.spec
    assert store.names() == ["Cool mix"]
    assert store.delete("cool mix") == "Cool mix" and store.names() == []


def test_a_tiny_share_survives_the_canonical_spelling():
    """af_sky's share here (0.005) is below what a user may type, but the canonical spec
    the engine receives reads back as the same blend."""
    b = parse_blend("af_bella:100+af_sky:0.5", VOICES)
    assert b.spec == "af_bella:0.995+af_sky:0.005"
    assert parse_blend("af_bella:100+af_sky:0.05", VOICES).spec == "af_bella:1+af_sky:0.0005"
    again = parse_blend(b.spec, VOICES, user=False)
    assert again.weights() == pytest.approx(b.weights(), abs=1e-3)  # 3 decimals
    with pytest.raises(TextError, match="the weight of af_sky is 0.005"):
        parse_blend(b.spec, VOICES)  # as user input it is out of range
