"""ModelManager: every model the app uses, with its state, device, load time and memory.

States follow Triton's model repository: UNLOADED → LOADING → READY → UNLOADING →
UNLOADED, or FAILED(reason). A reload builds the new instance first and swaps it in
only on success, so a failed reload leaves the old model serving.

One manager is created in ``app.py`` and passed to the pipeline, UI and API; nothing
else holds model instances for longer than one request.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cosyvoice.errors import ModelActionError, ModelError
from cosyvoice.lifecycle import resources

logger = logging.getLogger(__name__)


class ModelState(str, enum.Enum):
    UNLOADED = "UNLOADED"
    LOADING = "LOADING"
    READY = "READY"
    UNLOADING = "UNLOADING"
    FAILED = "FAILED"


@dataclass
class ModelLocation:
    """Where a model that users point at a folder loads from (a released CosyVoice folder);
    its loader reads ``path`` at each load, :meth:`ModelManager.load_from` changes it."""

    path: str = ""


@dataclass
class ModelSpec:
    """How to build one model: ``loader(device) -> instance``; ``warmup(instance)`` optional.
    ``location``: set for a model loaded from a folder the user chooses. ``close(instance)``:
    called when an unload or a reload lets go of an instance (free what it holds; requests
    still using it are the instance's business)."""

    name: str
    loader: Callable[[str], Any]
    description: str = ""
    warmup: Callable[[Any], None] | None = None
    required: bool = True  # readiness waits for required models only
    location: ModelLocation | None = None
    lazy: bool = False  # loaded on first use only: the app's preload leaves it UNLOADED
    close: Callable[[Any], None] | None = None


@dataclass
class ModelRecord:
    spec: ModelSpec
    state: ModelState = ModelState.UNLOADED
    reason: str = ""
    device: str = ""
    load_seconds: float = 0.0
    loaded_at: float = 0.0
    memory_bytes: int = 0
    last_used: float = 0.0
    instance: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.spec.name,
            "description": self.spec.description,
            "state": self.state.value,
            "reason": self.reason,
            "device": self.device,
            "load_seconds": round(self.load_seconds, 3),
            "memory_mb": round(self.memory_bytes / 2**20, 1),
            "memory_bytes": self.memory_bytes,
            "required": self.spec.required,
            "lazy": self.spec.lazy,
            "location": self.spec.location.path if self.spec.location else None,
            "idle_s": round(time.time() - self.last_used, 1) if self.last_used else None,
        }


class ModelManager:
    """Thread-safe registry of models; load lazily with :meth:`get` or eagerly."""

    def __init__(self, device: str = "cpu", specs: list[ModelSpec] | None = None) -> None:
        self.device = device
        self._records: dict[str, ModelRecord] = {}
        self._lock = threading.Lock()
        for spec in specs or []:
            self.register(spec)

    def register(self, spec: ModelSpec) -> None:
        with self._lock:
            if spec.name in self._records:
                raise ValueError(f"model {spec.name!r} is registered twice")
            self._records[spec.name] = ModelRecord(spec=spec)

    def names(self) -> list[str]:
        with self._lock:
            return list(self._records)

    def _record(self, name: str) -> ModelRecord:
        with self._lock:
            rec = self._records.get(name)
        if rec is None:
            raise ModelError(f"unknown model {name!r}; known: {', '.join(self.names())}")
        return rec

    def get(self, name: str) -> Any:
        """The READY instance of ``name``, loading it first if needed."""
        rec = self._record(name)
        rec.last_used = time.time()
        instance = rec.instance
        if rec.state is ModelState.READY and instance is not None:
            return instance
        return self.load(name)

    def load(self, name: str) -> Any:
        """Load ``name`` if it is not READY; raises :class:`ModelError` on failure."""
        rec = self._record(name)
        with rec.lock:
            return self._load_locked(rec)

    def settle(self, name: str) -> ModelState:
        """Load ``name`` unless it is READY or FAILED (a load in progress is waited for; a
        FAILED model is not retried); its state afterwards — a failure is recorded, not
        raised. What a request checks before it picks the engine that answers it."""
        rec = self._record(name)
        with rec.lock:
            if rec.state is not ModelState.FAILED:
                try:
                    self._load_locked(rec)
                except ModelError:
                    pass
            return rec.state

    def _load_locked(self, rec: ModelRecord) -> Any:
        if rec.state is ModelState.READY and rec.instance is not None:
            return rec.instance
        name = rec.spec.name
        rec.state, rec.reason = ModelState.LOADING, ""
        try:
            instance, seconds, mem = self._build(rec.spec)
        except Exception as e:
            rec.state, rec.reason = ModelState.FAILED, _reason(e)
            logger.error("loading %s failed: %s", name, rec.reason)
            raise ModelError(f"model {name} failed to load: {rec.reason}") from None
        self._install(rec, instance, seconds, mem)
        return instance

    def reload(self, name: str, free: bool = True) -> dict[str, Any]:
        """Build a fresh instance, then swap it in; on failure the old one keeps serving.

        ``free=False`` skips the collection afterwards (the caller frees once for many).
        """
        rec = self._record(name)
        with rec.lock:
            try:
                instance, seconds, mem = self._build(rec.spec)
            except Exception as e:
                reason = _reason(e)
                logger.error("reloading %s failed, old instance kept: %s", name, reason)
                if rec.instance is None:
                    rec.state, rec.reason = ModelState.FAILED, reason
                else:
                    rec.reason = f"reload failed, previous instance still serving: {reason}"
                raise ModelError(f"reload of {name} failed: {reason}") from None
            old = rec.instance
            self._install(rec, instance, seconds, mem)
        _close(rec.spec, old)  # the swap is done: only requests still using it keep it
        del old
        freed = {}
        if free:
            freed = resources.free_memory()
            resources.trim_heap()
        return {"name": name, "load_seconds": round(seconds, 3), **freed}

    def load_from(self, name: str, path: str) -> dict[str, Any]:
        """Point ``name`` at the folder ``path`` and load it from there: a READY model is
        reloaded (swapped only on success — the old folder and instance keep serving on
        failure); otherwise it is loaded, and a failure leaves it FAILED with the new path.
        ModelError for a model that loads from no folder, or when loading fails."""
        rec = self._record(name)
        location = rec.spec.location
        if location is None:
            raise ModelActionError(_no_folder_message(name, self.folder_models()))
        with rec.lock:
            serving = rec.state is ModelState.READY and rec.instance is not None
            old, location.path = location.path, str(path)
        if not serving:
            self.unload(name)  # a FAILED record is cleared; then load from the new folder
            self.load(name)
            return {"name": name, "location": location.path}
        try:
            report = self.reload(name)
        except ModelError:
            location.path = old
            raise
        return {**report, "location": location.path}

    def location(self, name: str) -> str | None:
        """The folder ``name`` loads from (None for a model that loads from no folder)."""
        location = self._record(name).spec.location
        return location.path if location is not None else None

    def folder_models(self) -> list[str]:
        """Models loaded from a folder the user chooses (:meth:`load_from`)."""
        with self._lock:
            return [n for n, r in self._records.items() if r.spec.location is not None]

    def unload(self, name: str) -> dict[str, Any]:
        """Drop every reference the manager holds, collect, and report what was freed."""
        rec = self._record(name)
        with rec.lock:
            if rec.instance is None and rec.state is not ModelState.FAILED:
                return {"name": name, "freed": False}
            if rec.instance is None:  # FAILED: only the record to clear, no memory to free
                rec.state, rec.reason = ModelState.UNLOADED, ""
                return {"name": name, "freed": False}
            rec.state = ModelState.UNLOADING
            before = resources.memory_snapshot()
            old, rec.instance = rec.instance, None
            rec.state, rec.reason, rec.memory_bytes, rec.device = ModelState.UNLOADED, "", 0, ""
        _close(rec.spec, old)
        del old
        freed = resources.free_memory()
        resources.trim_heap()  # the freed weights' pages back to the OS (glibc keeps them)
        after = resources.memory_snapshot()
        logger.info("unloaded %s", name)
        return {"name": name, "freed": True, **resources.diff(before, after), **freed}

    def load_all(self, required_only: bool = False) -> dict[str, str]:
        """Load every model; returns name → final state (errors are recorded, not raised)."""
        out: dict[str, str] = {}
        for name in self.names():
            rec = self._record(name)
            if required_only and not rec.spec.required:
                continue
            try:
                self.load(name)
            except ModelError:
                pass
            out[name] = rec.state.value
        return out

    def load_many(self, names: list[str], reload: bool = False) -> dict[str, str]:
        """Load (or reload) several models at once, one thread each (loading is mostly
        I/O and torch work that releases the GIL); name → "READY" or the error message."""
        from concurrent.futures import ThreadPoolExecutor

        def one(name: str) -> str:
            try:
                self.reload(name, free=False) if reload else self.load(name)
            except ModelError as e:
                return str(e)
            return ModelState.READY.value

        if not names:
            return {}
        with ThreadPoolExecutor(len(names), thread_name_prefix="load") as pool:
            out = dict(zip(names, pool.map(one, names), strict=True))
        if reload:
            resources.free_memory()  # once for all the replaced instances
        return out

    def unload_idle(self, idle_s: float) -> list[dict[str, Any]]:
        """Unload READY models not used for ``idle_s`` seconds; they load again on use."""
        now = time.time()
        with self._lock:
            idle = [r.spec.name for r in self._records.values()
                    if r.state is ModelState.READY and now - (r.last_used or r.loaded_at) >= idle_s]
        return [self.unload(name) for name in idle]

    def unload_all(self) -> None:
        for name in self.names():
            self.unload(name)

    def states(self) -> list[dict[str, Any]]:
        with self._lock:
            records = list(self._records.values())
        return [r.summary() for r in records]

    def ready(self) -> bool:
        """True when every required model is READY."""
        with self._lock:
            records = list(self._records.values())
        return all(r.state is ModelState.READY for r in records if r.spec.required)

    def _build(self, spec: ModelSpec) -> tuple[Any, float, int]:
        t0 = time.perf_counter()
        before = resources.memory_snapshot()
        instance = spec.loader(self.device)
        if spec.warmup is not None:
            spec.warmup(instance)
        seconds = time.perf_counter() - t0
        mem = resources.model_bytes(instance, before, resources.memory_snapshot())
        return instance, seconds, mem

    def _install(self, rec: ModelRecord, instance: Any, seconds: float, mem: int) -> None:
        rec.instance = instance
        rec.state, rec.reason = ModelState.READY, ""
        rec.device = getattr(instance, "device", self.device) or self.device
        rec.device = str(rec.device)
        rec.load_seconds, rec.loaded_at, rec.memory_bytes = seconds, time.time(), mem
        logger.info("model %s READY on %s in %.2f s (%.1f MB)", rec.spec.name, rec.device,
                    seconds, mem / 2**20)


def _no_folder_message(name: str, folder_models: list[str]) -> str:
    """Why ``name`` cannot load from a folder, and which models can."""
    if not folder_models:
        return (f"model {name} does not load from a folder, and no model of this app does: "
                "start the app with --model-dir FOLDER (a released CosyVoice2/3 folder) to "
                "add one")
    which = ", ".join(folder_models)
    verb = "does" if len(folder_models) == 1 else "do"
    return f"model {name} does not load from a folder; only {which} {verb}"


def _close(spec: ModelSpec, instance: Any) -> None:
    """``spec.close(instance)`` where both exist; a failure is logged, never raised (the
    manager has already let go of the instance)."""
    if spec.close is None or instance is None:
        return
    try:
        spec.close(instance)
    except Exception:
        logger.exception("closing %s failed", spec.name)


def _reason(e: BaseException) -> str:
    """A short message for FAILED(reason), without keeping the exception (and its frames)."""
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= 300 else text[:297] + "..."
