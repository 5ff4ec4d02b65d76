"""The parametrisation of voice fitting: a few numbers ``theta`` → a whole Kokoro style pack.

A Kokoro pack is ``(510, 256)``: row ``len(phonemes) - 1`` styles an utterance of that
length; dimensions 0–127 condition the decoder (timbre), 128–255 the prosody predictor
(durations, F0, energy). Fitting 130,560 numbers to one recording would fit its noise, so
a fitted pack stays on the stock packs' manifold:

    pack(theta) = origin + sum_j theta_j * direction_j

- ``origin``: where the fit starts (the blend of the prompt's nearest voices);
- *toward* directions: ``pack_v - origin`` on one half only (timbre or prosody), for each
  of the prompt's nearest voices ``v`` — ``theta_j = 1`` moves that half all the way to
  ``v``, so timbre and prosody move separately;
- *spread* directions: the leading principal components of the stock packs (per half,
  over all rows at once), each scaled to the packs' standard deviation along it.

Every direction spans all 510 rows, so a fit scored on a few utterance lengths moves every
length the same way (never one row alone).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

HALVES = {"timbre": slice(0, 128), "prosody": slice(128, 256)}


@dataclass
class StyleBasis:
    """``origin`` ``(R, S)`` and ``directions`` ``(D, R, S)``, one label per direction."""

    origin: np.ndarray
    directions: np.ndarray
    labels: list[str] = field(default_factory=list)

    @property
    def dim(self) -> int:
        return int(self.directions.shape[0])

    def pack(self, theta: np.ndarray) -> np.ndarray:
        """``(D,)`` → the ``(R, S)`` float32 pack."""
        theta = np.asarray(theta, np.float32).reshape(-1)
        return (self.origin + np.tensordot(theta, self.directions, axes=1)).astype(np.float32)

    def rows(self, theta: np.ndarray, rows: list[int]) -> np.ndarray:
        """Only the ``rows`` of :meth:`pack` (what one evaluation speaks with): ``(len, S)``."""
        theta = np.asarray(theta, np.float32).reshape(-1)
        return (self.origin[rows] + np.tensordot(theta, self.directions[:, rows], axes=1)
                ).astype(np.float32)

    @classmethod
    def around(cls, origin: np.ndarray, packs: dict[str, np.ndarray], toward: list[str],
               n_spread: int = 0, halves: tuple[str, ...] = ("timbre", "prosody")
               ) -> StyleBasis:
        """The basis at ``origin``: toward each voice of ``toward`` per half, then
        ``n_spread`` principal components per half of all ``packs``."""
        origin = np.asarray(origin, np.float32)
        dirs, labels = [], []
        for half in halves:
            cut = HALVES[half]
            for name in toward:
                d = np.zeros_like(origin)
                d[:, cut] = packs[name][:, cut] - origin[:, cut]
                dirs.append(d)
                labels.append(f"{half}→{name}")
        if n_spread:
            stack = np.stack([packs[n] for n in sorted(packs)]).astype(np.float64)
            for half in halves:
                cut = HALVES[half]
                for i, comp in enumerate(spread_directions(stack[:, :, cut], n_spread)):
                    d = np.zeros_like(origin)
                    d[:, cut] = comp
                    dirs.append(d)
                    labels.append(f"{half} pc{i + 1}")
        return cls(origin, np.stack(dirs).astype(np.float32), labels)


def spread_directions(stack: np.ndarray, n: int) -> list[np.ndarray]:
    """The ``n`` leading principal components of ``(V, R, S)`` packs, each ``(R, S)`` and
    scaled to the packs' standard deviation along it."""
    v = stack.shape[0]
    flat = stack.reshape(v, -1)
    centred = flat - flat.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    scale = s[:n] / np.sqrt(max(v - 1, 1))
    return [(vt[i] * scale[i]).reshape(stack.shape[1:]) for i in range(min(n, len(s)))]
