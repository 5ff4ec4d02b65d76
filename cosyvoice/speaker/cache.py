"""Bounded, thread-safe LRU cache, and speaker embeddings cached by audio content."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

import numpy as np

logger = logging.getLogger(__name__)

V = TypeVar("V")


class LruCache(Generic[V]):
    """At most ``maxsize`` entries; the least recently used one is dropped first.

    ``maxsize <= 0`` disables caching (every ``get`` misses). All methods take one lock,
    so the cache may be shared by request threads.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = int(maxsize)
        self._data: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, default: V | None = None) -> V | None:
        with self._lock:
            if key not in self._data:
                self.misses += 1
                return default
            self._data.move_to_end(key)
            self.hits += 1
            return self._data[key]

    def put(self, key: Hashable, value: V) -> None:
        if self.maxsize <= 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry (and with it every reference to the cached values)."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data


def audio_key(wav: np.ndarray, sr: int) -> str:
    """SHA-256 of the float32 samples' bytes and the sample rate: identical audio, same key."""
    samples = np.ascontiguousarray(wav, dtype=np.float32)
    digest = hashlib.sha256(samples.tobytes())
    digest.update(f"|{samples.shape}|{int(sr)}".encode())
    return digest.hexdigest()


class Embedder(Protocol):
    def embed(self, wav: np.ndarray, sr: int) -> np.ndarray: ...


class EmbeddingCache:
    """Speaker embeddings ``(E,)`` keyed by :func:`audio_key`; sized by ``embedding_cache_size``.

    Cached arrays are made read-only, so that a caller cannot change what later callers get.
    """

    def __init__(self, maxsize: int) -> None:
        self._cache: LruCache[np.ndarray] = LruCache(maxsize)

    def embed(self, encoder: Embedder, wav: np.ndarray, sr: int) -> np.ndarray:
        key = audio_key(wav, sr)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        embedding = np.asarray(encoder.embed(wav, sr), dtype=np.float32)
        embedding.setflags(write=False)
        self._cache.put(key, embedding)
        return embedding

    def clear(self) -> None:
        self._cache.clear()

    def __len__(self) -> int:
        return len(self._cache)

    @property
    def hits(self) -> int:
        return self._cache.hits

    @property
    def misses(self) -> int:
        return self._cache.misses


def embed_cached(encoder: Embedder, wav: np.ndarray, sr: int,
                 cache: EmbeddingCache) -> np.ndarray:
    """``cache.embed(encoder, wav, sr)``: the embedding, computed at most once per audio."""
    return cache.embed(encoder, wav, sr)
