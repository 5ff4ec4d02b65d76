"""Fixed-shape tiles in the CPU fast path: the same outputs as untiled convs, and no
oneDNN kernel built after warm-up, whatever a request's length (each new one cost
memory that was never given back: ``bench/vocoder_memory.py``)."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
import torch
import torch.nn.functional as F

from cosyvoice.kernels.direct import DirectConv, UpConv, _mkldnn_bytes, fused_ops_available
from cosyvoice.kernels.int8 import int8_ops_available
from cosyvoice.kernels.tiling import CL, runs_both_tiles, tile_plan, tile_sizes
from cosyvoice.vocoder.cpu_generator import CpuGenerator
from cosyvoice.vocoder.cpu_spectral import SpectralConv
from cosyvoice.vocoder.loader import PRECISIONS, HifiGanVocoder

pytestmark = pytest.mark.skipif(not fused_ops_available(),
                                reason="this torch build has no oneDNN fused convs")


def _cl(x: torch.Tensor) -> torch.Tensor:
    return x.unsqueeze(2).contiguous(memory_format=CL)


@pytest.mark.parametrize("t", [1, 31, 32, 128, 129, 1000, 4097])
@pytest.mark.parametrize("rate", [1, 8, 64, 256])
def test_tile_plan_covers_every_output_once_with_two_lengths(t, rate):
    tile, small = tile_sizes(rate)
    plan = tile_plan(t, tile, small)
    assert plan[0][0] == 0
    assert all(a + n == b for (a, n), (b, _) in pairwise(plan))  # contiguous
    end = plan[-1][0] + plan[-1][1]
    assert t <= end < t + small  # covers t, wastes less than one small tile
    assert {n for _, n in plan} <= {tile, small}


@pytest.mark.parametrize("length", [1, 37, 128, 160, 1000, 2111])
@pytest.mark.parametrize("kernel,dilation", [(7, 1), (3, 5), (11, 3)])
def test_tiled_direct_conv_equals_conv1d(length, kernel, dilation):
    torch.manual_seed(length + kernel)
    conv = torch.nn.Conv1d(32, 32, kernel, dilation=dilation,
                           padding=dilation * (kernel - 1) // 2)
    dc = DirectConv(conv, fused=True, tile=(256, 32))
    x = torch.randn(1, 32, length)
    acc = torch.randn(1, 32, length)
    with torch.inference_mode():
        pre = F.leaky_relu(x, 0.1)
        ref = conv(pre)
        got = dc(_cl(x), 0.1, 0.2).squeeze(2)
        summed = dc.add_to_(_cl(x), _cl(acc.clone()), 0.1).squeeze(2)
    torch.testing.assert_close(got, F.leaky_relu(ref, 0.2), atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(summed, acc + ref, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("length", [1, 7, 40, 200])
@pytest.mark.parametrize("stride,kernel,padding", [(8, 16, 4), (2, 4, 1), (5, 11, 3), (4, 4, 0)])
def test_up_conv_equals_conv_transpose1d(length, stride, kernel, padding):
    torch.manual_seed(stride * length)
    up = torch.nn.ConvTranspose1d(24, 16, kernel, stride, padding=padding)
    uc = UpConv(up, fused=True, tile=(32, 8))
    x = torch.randn(1, 24, length)
    with torch.inference_mode():
        ref = up(F.leaky_relu(x, 0.1))
        got = uc(_cl(x), 0.1).squeeze(2)
    assert got.shape == ref.shape and uc.out_len(length) == ref.shape[-1]
    torch.testing.assert_close(got, ref, atol=2e-5, rtol=1e-5)


def test_up_conv_refuses_layers_it_does_not_handle():
    with pytest.raises(ValueError, match="plain ConvTranspose1d"):
        UpConv(torch.nn.ConvTranspose1d(4, 4, 4, 2, output_padding=1), True, (32, 8))


@pytest.fixture(scope="module")
def fp32_vocoder() -> HifiGanVocoder:
    return HifiGanVocoder.load(precision="fp32")


def _stages(name: str) -> tuple[int, ...]:
    if name == "int8" and not int8_ops_available():
        pytest.skip("this torch build has no oneDNN int8 conv")
    return PRECISIONS[name]


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_warm_up_frames_reach_both_tile_lengths_of_every_tiled_conv(fp32_vocoder, precision):
    gen = CpuGenerator(fp32_vocoder.generator, int8_stages=_stages(precision))
    frames = gen.warm_up_frames()
    convs = gen.tiled_lengths(frames)
    # pre, post, 4 upsamplers, and every direct or int8 resblock conv (the spectral
    # ones have no tiles)
    direct = [c for blk in gen.blocks for pair in blk for c in pair
              if getattr(c, "tile", None) is not None]
    assert len(convs) == 2 + len(gen.ups) + len(direct)
    assert runs_both_tiles(convs)
    assert not runs_both_tiles(gen.tiled_lengths(frames - 1))  # the shortest such mel


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_no_onednn_kernel_is_built_after_warm_up(fp32_vocoder, precision, capfd):
    """oneDNN's verbose log names each kernel it builds (``create:cache_miss``). After
    warm-up, requests of new lengths must all be cache hits. Before tiling, each new
    length built ~60 (fp32) kernels."""
    gen = CpuGenerator(fp32_vocoder.generator, int8_stages=_stages(precision))
    gen.warm_up(fp32_vocoder.mel_config.n_mels)
    torch.manual_seed(3)
    mel = torch.randn(1, 80, 300) * 2 - 6
    capfd.readouterr()
    with torch.inference_mode(), torch.backends.mkldnn.verbose(
            torch.backends.mkldnn.VERBOSE_ON_CREATION):
        for frames in (3, 151, 297):
            gen(mel[..., :frames])
    log = capfd.readouterr().out
    assert "onednn_verbose" in log and "cache_hit" in log  # the log is really on
    misses = [line for line in log.splitlines()
              if re.search(r"create:cache_miss.*convolution", line)]
    assert not misses, f"{len(misses)} kernels built after warm-up, e.g. {misses[0][:300]}"


def test_no_conv_weight_is_reordered_per_call_after_warm_up(fp32_vocoder, capfd):
    """Each tiled conv keeps its weight packed in the layout oneDNN picks for each tile
    width. One packed layout for both widths was right with AVX-512, but with AVX2
    oneDNN wanted another layout for the small tiles and converted the weight at every
    tile (6.6 ms per 0.45 ms tile of a 256-channel conv, 2 Zen 2 cores). The log's
    reorders of shape ``OxIx1xk`` with ``O > 1`` are such conversions (activations and
    conv_post's 1-channel weight have a leading 1)."""
    gen = CpuGenerator(fp32_vocoder.generator)
    gen.warm_up(fp32_vocoder.mel_config.n_mels)
    torch.manual_seed(4)
    mel = torch.randn(1, 80, 300) * 2 - 6
    capfd.readouterr()
    with torch.inference_mode(), torch.backends.mkldnn.verbose(
            torch.backends.mkldnn.VERBOSE_ON):
        for frames in (3, 151, 297):
            gen(mel[..., :frames])
    log = capfd.readouterr().out
    assert "primitive,exec,cpu,convolution" in log  # the log is really on
    weights = [line for line in log.splitlines() if ",reorder," in line
               and re.search(r",([2-9]|\d\d+)x\d+x1x\d+,", line)]
    assert not weights, f"{len(weights)} weight reorders per request, e.g. {weights[0][:300]}"


def test_widths_with_identical_packed_layouts_share_one_weight():
    conv = torch.nn.Conv1d(256, 256, 3, padding=1)
    dc = DirectConv(conv, fused=True, tile=(1024, 128))
    widths = (1026, 130, 258, 1030)
    packed = [dc._weight(w) for w in widths]
    raw = [_mkldnn_bytes(p) for p in packed]
    for i in range(len(widths)):
        for j in range(len(widths)):
            assert (packed[i] is packed[j]) == (raw[i] == raw[j])
    assert dc.packed_bytes == sum(len(r) for r in {r: 0 for r in raw})
    x = torch.randn(1, 256, 1000)
    with torch.inference_mode():
        torch.testing.assert_close(dc(_cl(x)).squeeze(2), conv(x), atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("length", [1, 5, 37, 129, 1000, 2111])
@pytest.mark.parametrize("dilation", [1, 3, 5])
def test_fused_pair_equals_two_convs(length, dilation):
    """The resblock pair computed tile by tile, middle activation kept per tile (with
    its halo recomputed and the rows outside the signal zeroed), gives
    ``acc + c2(lrelu(c1(lrelu(acc))))`` at every length, the edges included."""
    from cosyvoice.kernels.direct import fused_pair_

    torch.manual_seed(length * 7 + dilation)
    c1 = torch.nn.Conv1d(32, 32, 3, dilation=dilation, padding=dilation)
    c2 = torch.nn.Conv1d(32, 32, 3, padding=1)
    d1, d2 = (DirectConv(c, fused=True, tile=(256, 32)) for c in (c1, c2))
    x = torch.randn(1, 32, length)
    with torch.inference_mode():
        ref = x + c2(F.leaky_relu(c1(F.leaky_relu(x, 0.1)), 0.1))
        got = fused_pair_(d1, d2, _cl(x.clone()), 0.1).squeeze(2)
    torch.testing.assert_close(got, ref, atol=3e-5, rtol=1e-5)


@pytest.mark.parametrize("length", [1, 57, 58, 59, 1000])
@pytest.mark.parametrize("kernel,dilation,block", [(7, 1, 64), (11, 3, 128), (11, 1, 32)])
def test_spectral_conv_equals_conv1d(length, kernel, dilation, block):
    """Overlap-save by DFT matrices, the inverse written into the output (``__call__``)
    or added into the accumulator (``add_to_``), whole blocks and the partial last one."""
    torch.manual_seed(length + kernel + block)
    conv = torch.nn.Conv1d(64, 64, kernel, dilation=dilation,
                           padding=dilation * (kernel - 1) // 2)
    sc = SpectralConv(conv, block)
    x, acc = torch.randn(1, 64, length), torch.randn(1, 64, length)
    with torch.inference_mode():
        ref = conv(F.leaky_relu(x, 0.1))
        got = sc(_cl(x), 0.1, 0.2).squeeze(2)
        summed = sc.add_to_(_cl(x), _cl(acc.clone()), 0.1).squeeze(2)
    torch.testing.assert_close(got, F.leaky_relu(ref, 0.2), atol=5e-5, rtol=1e-4)
    torch.testing.assert_close(summed, acc + ref, atol=5e-5, rtol=1e-4)


@pytest.mark.parametrize("length", [1, 57, 58, 59, 300, 1000])
@pytest.mark.parametrize("first", ["spectral", "direct"])
def test_chain_into_spectral_equals_two_convs(length, first):
    """``CpuGenerator._chain``: the first conv (spectral blocks or direct tiles) writes its
    output straight into the zero-padded buffer the spectral second conv reads; rows it
    computes past the signal's end must be zeroed there, whatever the two block sizes."""
    from cosyvoice.vocoder.cpu_generator import _writes_into

    torch.manual_seed(length + len(first))
    c1 = torch.nn.Conv1d(64, 64, 7, dilation=3, padding=9)
    c2 = torch.nn.Conv1d(64, 64, 11, padding=5)
    a = SpectralConv(c1, 128) if first == "spectral" else DirectConv(c1, True, tile=(256, 32))
    b = SpectralConv(c2, 64)
    x = torch.randn(1, 64, length)
    acc = _cl(x.clone())
    assert _writes_into(a, b, acc)
    with torch.inference_mode():
        ref = x + c2(F.leaky_relu(c1(F.leaky_relu(x, 0.1)), 0.1))
        CpuGenerator._chain(a, b, acc)
    torch.testing.assert_close(acc.squeeze(2), ref, atol=3e-5, rtol=1e-5)


@pytest.mark.parametrize("channels,kernel,dilation,block", [
    (256, 7, 1, 32), (256, 11, 1, 32),   # 20 MB cap: blocks of 32 for 256 channels
    (256, 7, 3, None), (256, 11, 5, None),  # a block of 32 is under 2 × span: direct
    (128, 3, 1, None), (128, 7, 1, 64), (128, 7, 3, 64), (128, 7, 5, 128), (128, 11, 5, 128),
    (64, 7, 1, None), (64, 11, 1, 64), (64, 11, 3, 128), (64, 11, 5, 256),
    (32, 11, 1, None), (32, 3, 1, None),
])
def test_speed_rule_picks_what_the_resblock_timings_chose(channels, kernel, dilation, block):
    """The plan SpeedRule's docstring gives (bench/vocoder_blocks.py, 2026-12-04)."""
    from cosyvoice.vocoder.cpu_generator import SpeedRule

    conv = torch.nn.Conv1d(channels, channels, kernel, dilation=dilation)
    assert SpeedRule().spectral_block(conv) == block
