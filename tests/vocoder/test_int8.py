"""The int8 resblock convs of the CPU fast path (``--vocoder-precision int8``)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from cosyvoice.audio.io import read_audio, resample, to_mono
from cosyvoice.audio.mel import MelAnalyzer
from cosyvoice.kernels.int8 import Int8Conv, int8_ops_available
from cosyvoice.kernels.tiling import CL
from cosyvoice.vocoder.cpu_generator import CpuGenerator
from cosyvoice.vocoder.loader import PRECISIONS, HifiGanVocoder, resolve_precision

pytestmark = pytest.mark.skipif(not int8_ops_available(),
                                reason="this torch build has no oneDNN int8 conv")


def _dequantized_reference(ic: Int8Conv, conv: torch.nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
    """The conv of exactly the operands Int8Conv rounds to, in float64."""
    u8, scale, zero = Int8Conv.quantize(x)
    xd = (u8.double() - zero) * scale
    wq = torch.round(conv.weight.double() / ic.w_scale.double()[:, None, None])
    wd = (wq.clamp(-ic.WEIGHT_MAX, ic.WEIGHT_MAX) * ic.w_scale.double()[:, None, None])
    return F.conv2d(xd, wd.unsqueeze(2), conv.bias.double(), 1, ic.padding, ic.dil2d)


@pytest.mark.parametrize("amplitude", [0.01, 1.0, 50.0])
@pytest.mark.parametrize("kernel,dilation", [(3, 1), (7, 3), (11, 5)])
def test_int8_conv_is_the_conv_of_its_rounded_operands(amplitude, kernel, dilation):
    """One prepacked weight serves every activation scale, and nothing else is lost."""
    torch.manual_seed(kernel)
    conv = torch.nn.Conv1d(48, 48, kernel, dilation=dilation, padding=dilation * (kernel - 1) // 2)
    ic = Int8Conv(conv)
    x = F.leaky_relu(torch.randn(1, 48, 1, 3000) * amplitude, 0.1).contiguous(memory_format=CL)
    with torch.inference_mode():
        got = ic(x).double()
        ref = _dequantized_reference(ic, conv, x)
        exact = conv(x.squeeze(2)).unsqueeze(2).double()
    assert got.shape == ref.shape == (1, 48, 1, 3000)
    assert float((got - ref).abs().max()) <= 1e-5 * float(ref.abs().max()) + 1e-6
    rel = float(((got - exact).pow(2).mean() / exact.pow(2).mean()).sqrt())
    assert 1e-4 < rel < 0.03, rel  # really rounded, and by about a percent


def test_int8_conv_cannot_saturate_int16_pairs():
    """Worst case for AVX2's u8×s8 pair sums: every input at the top code, every weight at
    the largest magnitude with one sign. 8-bit weights would overflow int16 here on CPUs
    without VNNI; 7-bit ones cannot anywhere."""
    conv = torch.nn.Conv1d(32, 8, 3, padding=1)
    with torch.no_grad():
        conv.weight.fill_(0.5)
        conv.bias.zero_()
    ic = Int8Conv(conv)
    x = torch.full((1, 32, 1, 64), 4.0)
    x[..., 0] = -0.4  # sets the zero point away from 0; the rest sit at code 255
    x = x.contiguous(memory_format=CL)
    with torch.inference_mode():
        got = ic(x).double()
        ref = _dequantized_reference(ic, conv, x)
    assert float((got - ref).abs().max()) <= 1e-5 * float(ref.abs().max())


def test_int8_conv_pre_post_slopes_and_add_to():
    torch.manual_seed(1)
    conv = torch.nn.Conv1d(16, 16, 5, padding=2)
    ic = Int8Conv(conv)
    x = torch.randn(1, 16, 1, 500).contiguous(memory_format=CL)
    acc = torch.randn(1, 16, 1, 500).contiguous(memory_format=CL)
    with torch.inference_mode():
        pre = F.leaky_relu(x, 0.1)
        plain = ic(pre)
        torch.testing.assert_close(ic(x, 0.1), plain)
        torch.testing.assert_close(ic(x, 0.1, 0.2), F.leaky_relu(plain, 0.2))
        expected = acc + plain
        out = ic.add_to_(x, acc, 0.1)
    assert out.data_ptr() == acc.data_ptr()
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("length", [Int8Conv.TILE, 2 * Int8Conv.TILE + 700, 513])
def test_int8_tiles_join_without_seams(length):
    """Tiles of two fixed lengths (one oneDNN kernel each, whatever the request's length)
    give the conv of the whole input: no seam at a tile edge, the tail cut exactly."""
    torch.manual_seed(length)
    conv = torch.nn.Conv1d(24, 24, 11, dilation=5, padding=25)
    ic = Int8Conv(conv)
    assert {n for _, n in ic.tiles(length)} <= {ic.TILE, ic.SMALL}
    x = torch.randn(1, 24, 1, length).contiguous(memory_format=CL)
    acc = torch.randn(1, 24, 1, length).contiguous(memory_format=CL)
    with torch.inference_mode():
        ref = _dequantized_reference(ic, conv, x)
        got = ic(x).double()
        expected = acc.double() + ref
        summed = ic.add_to_(x, acc).double()
    tol = 1e-5 * float(ref.abs().max()) + 1e-6
    assert got.shape == ref.shape
    assert float((got - ref).abs().max()) <= tol
    assert float((summed - expected).abs().max()) <= tol + 1e-5 * float(expected.abs().max())


def test_warm_up_reaches_both_tile_lengths_in_every_int8_stage(fp32_vocoder):
    gen = CpuGenerator(fp32_vocoder.generator, int8_stages=PRECISIONS["int8"])
    frames = gen.warm_up_frames()
    rates = [u.stride for u in gen.ups]
    for stage in gen.int8_stages:
        t = frames * int(torch.tensor(rates[: stage + 1]).prod())
        convs = [c for blk in gen.blocks[3 * stage:3 * stage + 3] for pair in blk
                 for c in pair]
        assert convs and all(isinstance(c, Int8Conv) for c in convs)
        assert {n for _, n in convs[0].tiles(t)} == {Int8Conv.TILE, Int8Conv.SMALL}


def test_int8_conv_refuses_non_finite_activations():
    ic = Int8Conv(torch.nn.Conv1d(4, 4, 3, padding=1))
    x = torch.zeros(1, 4, 1, 10).contiguous(memory_format=CL)
    x[0, 1, 0, 3] = float("nan")
    with torch.inference_mode(), pytest.raises(ValueError, match="non-finite"):
        ic(x)


@pytest.fixture(scope="module")
def fp32_vocoder() -> HifiGanVocoder:
    return HifiGanVocoder.load(precision="fp32")


@pytest.fixture(scope="module")
def speech(fp32_vocoder, real_female_prompt) -> torch.Tensor:
    data, sr = read_audio(real_female_prompt)
    sr_out = fp32_vocoder.sample_rate
    wav = resample(to_mono(data), sr, sr_out)[: 5 * sr_out]
    return MelAnalyzer(fp32_vocoder.mel_config)(wav)


def test_int8_generator_reconstructs_real_speech_as_well_as_fp32(fp32_vocoder, speech):
    """5 s of a real recording: mel → vocode → mel, the default int8 stages. Measured:
    fp32 0.2537, int8 0.2538, 28 dB SNR between them; bench/vocoder_int8.py repeats this
    on 8 prompts with DNSMOS. The 0.01 margin is what the bench allows too."""
    analyzer = MelAnalyzer(fp32_vocoder.mel_config)
    int8 = CpuGenerator(fp32_vocoder.generator, int8_stages=PRECISIONS["int8"])
    with torch.inference_mode():
        a = fp32_vocoder._fast(speech)[0, 0]
        b = int8(speech)[0, 0]
    l1 = {k: float((analyzer(w) - speech).abs().mean()) for k, w in (("fp32", a), ("int8", b))}
    assert l1["int8"] <= l1["fp32"] + 0.01, l1
    assert float((a - b).abs().max()) > 1e-3  # int8 really ran: it is not bit-identical
    snr = float(10 * torch.log10(a.pow(2).sum() / (a - b).pow(2).sum()))
    assert snr > 20.0, snr


def test_vocoder_precision_setting(fp32_vocoder):
    assert fp32_vocoder.precision == "fp32" and not fp32_vocoder._fast.int8_stages
    int8 = HifiGanVocoder(fp32_vocoder.generator, fp32_vocoder.config, "cpu", "int8")
    assert int8.precision == "int8" and int8._fast.int8_stages == (1, 2)
    auto = HifiGanVocoder(fp32_vocoder.generator, fp32_vocoder.config, "cpu")
    assert auto.precision == resolve_precision("auto")
    with pytest.raises(ValueError, match="auto, int8 or fp32"):
        HifiGanVocoder.load(precision="int4")


@pytest.mark.parametrize("flags,expected", [
    ("fpu sse2 avx2 fma", "fp32"),                           # Zen 2: int8 was 1.21 × fp32
    ("fpu avx2 avx512f avx512_vnni amx_int8", "int8"),       # Sapphire Rapids: 0.63 ×
    ("fpu avx2 avx_vnni", "int8"),
    (None, "fp32"),                                          # no flags line
])
def test_auto_precision_takes_int8_only_with_int8_dot_instructions(flags, expected):
    cpuinfo = "processor\t: 0\n" + ("" if flags is None else f"flags\t\t: {flags}\n")
    assert resolve_precision("auto", cpuinfo) == expected
    assert resolve_precision("fp32", cpuinfo) == "fp32"
    assert resolve_precision("int8", cpuinfo) == "int8"
