"""What every step of the recommender reads: the request, the target and the trace it appends to."""

from typing import NamedTuple

from mha_cli.core.kv import KvFootprint, footprint_for
from mha_cli.core.memory import MemoryPlan, plan_memory, resolve_tp
from mha_cli.core.recommend.result import RecommendRequest
from mha_cli.core.rules import catalog as C
from mha_cli.core.rules.engine import Trace
from mha_cli.core.schemas import DeploymentSpec, ModelSpec
from mha_cli.core.targets import ResolvedTarget, resolve_target


# A NamedTuple rather than a frozen dataclass, for start-up time (see ``core.record``).
class Context(NamedTuple):
    """The request and its target (an explicit --tp checked against the target's devices). Only ``trace`` changes,
    by appending findings."""

    request: RecommendRequest
    target: ResolvedTarget | None
    trace: Trace

    @classmethod
    def of(cls, request: RecommendRequest) -> "Context":
        target = resolve_target(request.target) if request.target else None
        resolve_tp(request.tp, target)  # refuses a --tp that does not divide the target's devices
        return cls(request=request, target=target, trace=Trace())

    @property
    def small(self) -> bool:
        """MHA012: a dense budget below ``SMALL_MODEL_PARAMS``."""
        return self.request.active_params is None and self.request.params < C.SMALL_MODEL_PARAMS

    def balanced(self) -> "Context":
        """The same request under --priority balanced, with a trace of its own (nothing it decides is recorded)."""
        return self._replace(request=self.request.model_copy(update={"priority": "balanced"}), trace=Trace())

    def deployment(self, tp: int) -> DeploymentSpec:
        r = self.request
        return DeploymentSpec(
            target=r.target, seq_len=r.seq_len, batch=r.batch, kv_dtype=r.kv_dtype, kv_fp8_variant=r.kv_fp8_variant,
            weight_dtype=r.weight_dtype, tp=tp,
            engine=r.engine, engine_generation=r.engine_generation, engine_version=r.engine_version,
            gpu_memory_utilization=r.gpu_memory_utilization,
            max_num_batched_tokens=r.max_num_batched_tokens, max_num_seqs=r.max_num_seqs,
            kv_cache_memory_bytes=r.kv_cache_memory_bytes, async_scheduling=r.async_scheduling,
        )  # fmt: skip

    def footprint(self, model: ModelSpec, tp: int) -> KvFootprint:
        return footprint_for(model, self.deployment(tp), tp)

    def plan(self, model: ModelSpec, tp: int, kv: KvFootprint | None = None) -> MemoryPlan | None:
        """The memory plan on the target (None without one); ``kv`` when already known. The design as its files say
        it (``written``): its RoPE table as long as the context."""
        if self.target is None:
            return None
        kv = kv or self.footprint(model, tp)
        return plan_memory(
            self.target, model=self.written(model), weight_dtype=self.request.weight_dtype, kv=kv,
            deployment=self.deployment(kv.tp),
        )  # fmt: skip

    def written(self, model: ModelSpec) -> ModelSpec:
        """``model`` with the context it is designed for, as ``--out`` writes it (the YAML's ``context_length``, the
        config.json's ``max_position_embeddings``): the engine sizes its RoPE cos/sin table by it, which a design
        without one left out of the plan while the config.json written for it priced it (found by newuser trial
        238)."""
        if model.context_length is not None:
            return model
        return model.model_copy(update={"context_length": self.request.seq_len})
