"""BC7 (BPTC UNORM) blocks decoded to RGBA8, every block of one mode at a time with numpy.

The layout, the partition and anchor tables and the interpolation weights are those of the Khronos
ARB_texture_compression_bptc specification (registry.khronos.org/OpenGL/extensions/ARB/
ARB_texture_compression_bptc.txt, tables M, P2, P3, A2, A3a, A3b); docs/wallpaper_engine.md §5 cites it. A block's
fields follow its mode bit, lowest bit first: partition, rotation, index selection, colour endpoints (by channel,
subset, endpoint), alpha endpoints, per-endpoint or shared P-bits, primary then secondary indices. Each subset's
anchor index is one bit shorter. A block whose first byte is 0 (no mode) decodes as transparent black.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import FormatError

BLOCK = 16

# mode: subsets, partition bits, rotation bits, index-selection bits, colour bits, alpha bits,
#       per-endpoint P-bits, shared P-bits, index bits, secondary index bits (table M)
MODES = ((3, 4, 0, 0, 4, 0, 1, 0, 3, 0), (2, 6, 0, 0, 6, 0, 0, 1, 3, 0), (3, 6, 0, 0, 5, 0, 0, 0, 2, 0),
         (2, 6, 0, 0, 7, 0, 1, 0, 2, 0), (1, 0, 2, 1, 5, 6, 0, 0, 2, 3), (1, 0, 2, 0, 7, 8, 0, 0, 2, 2),
         (1, 0, 0, 0, 7, 7, 1, 0, 4, 0), (2, 6, 0, 0, 5, 5, 1, 0, 2, 0))

WEIGHTS = {2: (0, 21, 43, 64), 3: (0, 9, 18, 27, 37, 46, 55, 64),
           4: (0, 4, 9, 13, 17, 21, 26, 30, 34, 38, 43, 47, 51, 55, 60, 64)}

# the subset of each texel (x-major within the 4×4 block), 64 partitions of 16 digits each (tables P2, P3)
_P2 = (
    "0011001100110011000100010001000101110111011101110001001100110111"
    "0000000100010011001101110111111100010011011111110000000100110111"
    "0000000000010011001101111111111100000001011111110000000000010111"
    "0001011111111111000000001111111100001111111111110000000000001111"
    "0000100011101111011100010000000000000000100011100111001100010000"
    "0011000100000000000010001100111000000000100011000111001100110001"
    "0011000100010000000010001000110001100110011001100011011001101100"
    "0001011111101000000011111111000001110001100011100011100110011100"
    "0101010101010101000011110000111101011010010110100011001111001100"
    "0011110000111100010101011010101001101001011010010101101010100101"
    "0111001111001110000100111100100000110010010011000011101111011100"
    "0110100110010110001111001100001101100110100110010000011001100000"
    "0100111001000000001001110010000000000010011100100000010011100100"
    "0110110010010011001101101100100101100011100111000011100111000110"
    "0110110011001001011000110011100101111110100000010001100011100111"
    "0000111100110011001100111111000000100010111011100100010001110111"
)
_P3 = (
    "0011001102212222000100112211222100002001221122110222002200110111"
    "0000000011221122001100110022002200220022111111110011001122112211"
    "0000000011112222000011111111222200001111222222220012001200120012"
    "0112011201120112012201220122012200110112112212220011200122002220"
    "0001001101121122011100112001220000001122112211220022002200221111"
    "0111011102220222000100012221222100000011012201220000110022102210"
    "0122012200110000001200121122222201101221122101100000011012211221"
    "0022110211020022011001102002222200110122012200110000200022112221"
    "0000000211221222022200220012001100110012002202220120012001200120"
    "0000111122220000012012012012012001202012120101200011220011220011"
    "0011112222000011010101012222222200000000212121210022112200221122"
    "0022001100220011022012210220122101012222222201010000212121212121"
    "0101010101012222022201110222011100021112000211120000211221122112"
    "0222011101110222000211121112000201100110011022220000000021122112"
    "0110011022222222002200110011002200221122112200220000000000002112"
    "0002000100020001022212220222122201012222222222220111201122012220"
)
PARTITIONS = {2: np.frombuffer("".join(_P2).encode(), np.uint8).reshape(64, 16) - ord("0"),
              3: np.frombuffer("".join(_P3).encode(), np.uint8).reshape(64, 16) - ord("0")}

# anchor texel of subset 1 (two subsets: A2) and of subsets 1 and 2 (three subsets: A3a, A3b); subset 0's is 0
ANCHOR_2 = (15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
            15, 2, 8, 2, 2, 8, 8, 15, 2, 8, 2, 2, 8, 8, 2, 2,
            15, 15, 6, 8, 2, 8, 15, 15, 2, 8, 2, 2, 2, 15, 15, 6,
            6, 2, 6, 8, 15, 15, 2, 2, 15, 15, 15, 15, 15, 2, 2, 15)
ANCHOR_3A = (3, 3, 15, 15, 8, 3, 15, 15, 8, 8, 6, 6, 6, 5, 3, 3,
             3, 3, 8, 15, 3, 3, 6, 10, 5, 8, 8, 6, 8, 5, 15, 15,
             8, 15, 3, 5, 6, 10, 8, 15, 15, 3, 15, 5, 15, 15, 15, 15,
             3, 15, 5, 5, 5, 8, 5, 10, 5, 10, 8, 13, 15, 12, 3, 3)
ANCHOR_3B = (15, 8, 8, 3, 15, 15, 3, 8, 15, 15, 15, 15, 15, 15, 15, 8,
             15, 8, 15, 3, 15, 8, 15, 8, 3, 15, 6, 10, 15, 15, 10, 8,
             15, 3, 15, 10, 10, 8, 9, 10, 6, 15, 8, 15, 3, 6, 6, 8,
             15, 3, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 3, 15, 15, 8)


def _anchors(subsets: int) -> np.ndarray:
    """(64 partitions, 16 texels) bool: the texels whose index is one bit shorter."""
    a = np.zeros((64, 16), bool)
    a[:, 0] = True
    if subsets == 2:
        a[np.arange(64), ANCHOR_2] = True
    elif subsets == 3:
        a[np.arange(64), ANCHOR_3A] = True
        a[np.arange(64), ANCHOR_3B] = True
    return a


class _Bits:
    """The blocks of one mode as (N, 128) bits, read field by field from a running position."""

    def __init__(self, blocks: np.ndarray, start: int):
        self.bits = np.unpackbits(blocks, axis=1, bitorder="little").astype(np.int64)
        self.pos = start

    def take(self, n: int) -> np.ndarray:
        if n == 0:
            return np.zeros(len(self.bits), np.int64)
        v = self.bits[:, self.pos:self.pos + n] @ (1 << np.arange(n, dtype=np.int64))
        self.pos += n
        return v

    def indices(self, bits: int, short: np.ndarray) -> np.ndarray:
        """16 indices per block of `bits` bits each, one bit fewer where `short` (N, 16) is set."""
        width = bits - short.astype(np.int64)
        start = self.pos + np.concatenate([np.zeros((len(width), 1), np.int64), np.cumsum(width, 1)[:, :-1]], 1)
        out = np.zeros(width.shape, np.int64)
        rows = np.arange(len(width))[:, None]
        for k in range(bits):
            bit = self.bits[rows, np.minimum(start + k, 127)]
            out |= np.where(k < width, bit, 0) << k
        self.pos += int(width[0].sum())  # every block has the same count of shortened indices
        return out


def _expand(value: np.ndarray, bits: int) -> np.ndarray:
    """A `bits`-bit value as 8 bits: shifted to the top, its high bits repeated below."""
    v = value << (8 - bits)
    return v | (v >> bits)


def _endpoints(r: _Bits, mode: tuple, n: int) -> np.ndarray:
    """(N, subsets, 2 endpoints, RGBA) as 8-bit values."""
    subsets, _, _, _, cb, ab, epb, spb, _, _ = mode
    raw = np.zeros((n, subsets, 2, 4), np.int64)
    for c in range(3):
        for s in range(subsets):
            for e in range(2):
                raw[:, s, e, c] = r.take(cb)
    if ab:
        for s in range(subsets):
            for e in range(2):
                raw[:, s, e, 3] = r.take(ab)
    pbit = np.zeros((n, subsets, 2), np.int64)
    if epb:
        for s in range(subsets):
            for e in range(2):
                pbit[:, s, e] = r.take(1)
    elif spb:
        for s in range(subsets):
            pbit[:, s, :] = r.take(1)[:, None]
    extra = 1 if epb or spb else 0
    out = np.empty_like(raw)
    out[..., :3] = _expand((raw[..., :3] << extra) | pbit[..., None] * extra, cb + extra)
    out[..., 3] = _expand((raw[..., 3] << extra) | pbit * extra, ab + extra) if ab else 255
    return out


def _decode_mode(blocks: np.ndarray, m: int) -> np.ndarray:
    """(N, 16 texels, RGBA) uint8 of blocks that all have mode `m`."""
    mode = MODES[m]
    subsets, pb, rb, isb, _, _, _, _, ib, ib2 = mode
    n = len(blocks)
    r = _Bits(blocks, m + 1)
    partition, rotation, select = r.take(pb), r.take(rb), r.take(isb)
    ends = _endpoints(r, mode, n)
    subset = PARTITIONS[subsets][partition] if subsets > 1 else np.zeros((n, 16), np.int64)
    primary = r.indices(ib, _anchors(subsets)[partition])
    colour_w = np.asarray(WEIGHTS[ib], np.int64)[primary]
    alpha_w = colour_w
    if ib2:
        secondary = r.indices(ib2, _anchors(1)[partition])
        second_w = np.asarray(WEIGHTS[ib2], np.int64)[secondary]
        swap = (select == 1)[:, None]
        colour_w, alpha_w = np.where(swap, second_w, colour_w), np.where(swap, colour_w, second_w)
    e = np.take_along_axis(ends, subset[:, :, None, None].astype(np.intp), axis=1)  # (N, 16, 2, 4)
    w = np.concatenate([np.repeat(colour_w[..., None], 3, -1), alpha_w[..., None]], -1)
    px = ((64 - w) * e[:, :, 0] + w * e[:, :, 1] + 32) >> 6
    if rb:
        for rot, ch in ((1, 0), (2, 1), (3, 2)):
            hit = rotation == rot
            px[hit, :, 3], px[hit, :, ch] = px[hit, :, ch], px[hit, :, 3].copy()
    return px.astype(np.uint8)


def decode(data: bytes, width: int, height: int) -> np.ndarray:
    """BC7 blocks → (height, width, 4) uint8 RGBA, rows top first (as stored)."""
    bw, bh = max((width + 3) // 4, 1), max((height + 3) // 4, 1)
    need = bw * bh * BLOCK
    if len(data) < need:
        raise FormatError(f"{len(data)} bytes of BC7 data, a {width}×{height} image needs {need}", None, "mip data")
    blocks = np.frombuffer(data, np.uint8, need).reshape(-1, BLOCK)
    low = blocks[:, 0].astype(np.int64)
    mode = np.full(len(blocks), 8)  # 8: no mode bit set, a reserved block
    for m in range(7, -1, -1):
        mode[(low >> m) & 1 == 1] = m
    px = np.zeros((len(blocks), 16, 4), np.uint8)
    for m in range(8):
        hit = np.nonzero(mode == m)[0]
        if len(hit):
            px[hit] = _decode_mode(blocks[hit], m)
    img = px.reshape(bh, bw, 4, 4, 4).transpose(0, 2, 1, 3, 4).reshape(bh * 4, bw * 4, 4)
    return np.ascontiguousarray(img[:height, :width])
