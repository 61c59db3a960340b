"""Mixture-of-experts MLP: a router picks k of E experts per token; shared experts see every token.

Shape glossary: ``n`` tokens (batch * sequence flattened), ``d`` d_model, ``E`` routed experts,
``k`` experts per token, ``f`` one expert's hidden width (this rank's slice with tensor parallelism).

Routing (``TopKRouter``, the ``gate`` submodule), as the model families define it:
- softmax over all E logits, then the top k (Mixtral, Qwen2/Qwen3-MoE; DeepSeek-V2 with ``greedy``);
- ``group_limited_greedy`` (DeepSeek-V2): experts split into ``n_group`` groups; only the
  ``topk_group`` groups with the highest max score compete;
- ``noaux_tc`` (DeepSeek-V3): sigmoid scores; the choice uses score + ``e_score_correction_bias``
  (a buffer, learned outside backprop), groups are ranked by the sum of their two best biased
  scores, and the chosen experts are weighted by their unbiased scores;
- ``noaux_logits`` (Kolibri): the experts chosen by logit + ``e_score_correction_bias``, before the scoring
  function, weighted by their scores.
PhiMoE's sparsemixer (``MoESpec.sparsemixer_eps``) picks and weights its experts otherwise (``nn.sparsemixer``).
A router may add a bias per expert to its logits (gpt-oss's ``gate.bias``). Then optionally renormalise the k
weights to sum 1 (``norm_topk_prob``) and multiply them by ``routed_scaling_factor``.

State-dict names follow transformers 5's modules (DeepseekV3MoE, Qwen3MoeSparseMoeBlock,
Qwen2MoeSparseMoeBlock, Mixtral): ``gate.weight`` (E, d), ``gate.e_score_correction_bias`` (E,)
for noaux_tc, the routed experts fused into 3-D tensors ``experts.gate_up_proj`` (E, 2f, d) (gate rows
then up rows) and ``experts.down_proj`` (E, d, f); shared experts as one SwiGLU MLP of width
n_shared * f named ``shared_experts`` (DeepSeek), or ``shared_expert`` + ``shared_expert_gate`` (Qwen2-MoE).
Plain experts (the spec's ``mlp`` plain, Nemotron-H's: down(act(up(x))), its ``activation``) hold
``experts.up_proj`` (E, f, d) instead, and their shared experts are plain MLPs too.

Tensor parallelism (Megatron style): the router is replicated; every routed and shared expert is
split by width like a dense MLP (rank r holds hidden units [r*f/tp, (r+1)*f/tp) of each expert, so
its ``gate_up_proj`` holds that block of gate rows followed by that block of up rows). Each rank's
combined output is a partial sum; one ``all_reduce`` after it completes the layer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.core.schemas import BIASED_CHOICE, Activation, ModelSpec, MoESpec
from mha_cli.nn.mlp import MLP, activation_fn
from mha_cli.nn.norms import RMSNorm
from mha_cli.nn.row_parallel import Reduce
from mha_cli.nn.sparsemixer import sparsemixer_route

INIT_STD = 0.02
"""Standard deviation of the router and expert weights at initialisation (as ``build_model``'s linears)."""


def _split_width(width: int, tp_size: int, what: str) -> int:
    if width % tp_size:
        raise ValueError(f"{what} ({width}) must be divisible by the tensor-parallel size ({tp_size})")
    return width // tp_size


class TopKRouter(nn.Module):
    """Chooses ``k`` experts per token and their weights; scores in fp32 whatever the model dtype."""

    def __init__(
        self, d_model: int, spec: MoESpec, *, dtype: torch.dtype | None = None, device: torch.device | str | None = None
    ) -> None:
        super().__init__()
        self.n_experts, self.top_k = spec.n_experts, spec.n_active_experts
        self.scoring_func, self.topk_method = spec.scoring_func, spec.topk_method
        self.norm_topk_prob, self.routed_scaling_factor = spec.norm_topk_prob, spec.routed_scaling_factor
        self.n_group, self.topk_group = spec.n_group, spec.topk_group
        self.sparsemixer_eps = spec.sparsemixer_eps
        self.weight = nn.Parameter(torch.empty(spec.n_experts, d_model, dtype=dtype, device=device))
        self.bias = None
        if spec.router_bias:  # gpt-oss: a learned bias per expert on the logits
            self.bias = nn.Parameter(torch.empty(spec.n_experts, dtype=dtype, device=device))
        if self.topk_method in BIASED_CHOICE:  # a buffer, as in transformers: saved, not trained by backprop
            self.register_buffer("e_score_correction_bias", torch.empty(spec.n_experts, device=device))
        if self.weight.device.type != "meta":
            self.init_weights()

    def init_weights(self) -> None:
        """N(0, INIT_STD) router weights, zero correction bias."""
        nn.init.normal_(self.weight, std=INIT_STD)
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        if self.topk_method in BIASED_CHOICE:
            nn.init.zeros_(self.e_score_correction_bias)

    def forward(self, x: torch.Tensor, chosen: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """x (n, d) -> (weights (n, k) fp32, expert indices (n, k) long); ``chosen`` (n, k) forces the indices."""
        bias = None if self.bias is None else self.bias.float()
        logits = F.linear(x.float(), self.weight.float(), bias)  # (n, E)
        if self.sparsemixer_eps is not None:  # PhiMoE
            weights, indices = sparsemixer_route(logits, self.sparsemixer_eps, self.top_k, chosen)  # (n, k) each
            return weights * self.routed_scaling_factor, indices
        scores = logits.softmax(dim=-1) if self.scoring_func == "softmax" else logits.sigmoid()  # (n, E)
        choice = scores  # (n, E): what the top-k ranks
        if self.topk_method == "noaux_tc":
            choice = scores + self.e_score_correction_bias.float()  # (n, E)
        elif self.topk_method == "noaux_logits":  # Kolibri: the bias on the logits, before the scoring
            choice = logits + self.e_score_correction_bias.float()  # (n, E)
        if self.topk_method != "greedy" and self.n_group > 1:
            choice = self._keep_best_groups(choice)  # (n, E), experts of other groups at -inf
        indices = choice.topk(self.top_k, dim=-1).indices if chosen is None else chosen  # (n, k)
        weights = scores.gather(-1, indices)  # (n, k)
        if self.norm_topk_prob:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)  # (n, k)
        return weights * self.routed_scaling_factor, indices

    def _keep_best_groups(self, choice: torch.Tensor) -> torch.Tensor:
        n = choice.shape[0]
        grouped = choice.view(n, self.n_group, self.n_experts // self.n_group)  # (n, G, E/G)
        if self.topk_method == "noaux_tc":
            group_scores = grouped.topk(min(2, grouped.shape[-1]), dim=-1).values.sum(dim=-1)  # (n, G)
        else:
            group_scores = grouped.amax(dim=-1)  # (n, G)
        best = group_scores.topk(self.topk_group, dim=-1).indices  # (n, topk_group)
        keep = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, best, True)  # (n, G)
        return grouped.masked_fill(~keep[..., None], float("-inf")).view(n, self.n_experts)  # (n, E)


class RoutedExperts(nn.Module):
    """E SwiGLU experts (or plain ones: ``gated`` false) stored as 3-D tensors; each token runs only its k chosen
    experts."""

    def __init__(
        self,
        d_model: int,
        n_experts: int,
        d_ff: int,
        *,
        bias: bool = False,
        swiglu_limit: float | None = None,
        swiglu_alpha: float = 1.702,
        gated: bool = True,
        activation: Activation | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.n_experts, self.d_ff, self.gated = n_experts, d_ff, gated
        self.swiglu_limit, self.swiglu_alpha = swiglu_limit, swiglu_alpha
        self.activation = activation_fn(activation, gated=gated)
        self.in_name = "gate_up_proj" if gated else "up_proj"
        width = 2 * d_ff if gated else d_ff
        setattr(self, self.in_name, nn.Parameter(torch.empty(n_experts, width, d_model, **factory)))  # (E, 2f|f, d)
        self.down_proj = nn.Parameter(torch.empty(n_experts, d_model, d_ff, **factory))  # (E, d, f)
        if bias:
            setattr(self, f"{self.in_name}_bias", nn.Parameter(torch.empty(n_experts, width, **factory)))  # (E, 2f|f)
            self.down_proj_bias = nn.Parameter(torch.empty(n_experts, d_model, **factory))  # (E, d)
        self.bias = bias
        if self.down_proj.device.type != "meta":
            self.init_weights()

    @property
    def in_proj(self) -> nn.Parameter:
        """The experts' input projection: ``gate_up_proj`` (E, 2f, d), or a plain expert's ``up_proj`` (E, f, d)."""
        return getattr(self, self.in_name)

    def init_weights(self) -> None:
        """N(0, INIT_STD) expert weights, zero biases."""
        nn.init.normal_(self.in_proj, std=INIT_STD)
        nn.init.normal_(self.down_proj, std=INIT_STD)
        if self.bias:
            nn.init.zeros_(getattr(self, f"{self.in_name}_bias"))
            nn.init.zeros_(self.down_proj_bias)

    def forward(self, x: torch.Tensor, weights: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        """x (n, d), weights and indices (n, k) -> sum over k of weight * expert(x), (n, d).

        Without the down-projection bias (see ``bias_term``), so a tensor-parallel partial sum stays linear.
        """
        k = indices.shape[1]
        flat_expert = indices.reshape(-1)  # (n * k,)
        order = flat_expert.argsort()  # (n * k,): assignments grouped by expert
        token = order // k  # (n * k,): the token of each sorted assignment
        counts = torch.bincount(flat_expert, minlength=self.n_experts).tolist()
        rows_by_expert = x[token].split(counts)  # E tensors (count_e, d)
        outputs = []
        for expert, rows in enumerate(rows_by_expert):
            if rows.shape[0] == 0:
                continue
            projected = rows @ self.in_proj[expert].T  # (count_e, 2f) gated, (count_e, f) plain
            if self.bias:
                projected = projected + getattr(self, f"{self.in_name}_bias")[expert]
            if self.gated:
                gate, up = projected.chunk(2, dim=-1)  # (count_e, f) each
                hidden = self._glu(gate, up)  # (count_e, f)
            else:
                hidden = self.activation(projected)  # (count_e, f)
            outputs.append(hidden @ self.down_proj[expert].T)  # (count_e, d)
        weighted = torch.cat(outputs) * weights.reshape(-1)[order, None].to(x.dtype)  # (n * k, d)
        return torch.zeros_like(x).index_add_(0, token, weighted)  # (n, d)

    def _glu(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        """SiLU(gate) * up, or gpt-oss's clamped SwiGLU (see ``MoESpec.swiglu_limit``); (count_e, f)."""
        if self.swiglu_limit is None:
            return F.silu(gate) * up
        gate = gate.clamp(max=self.swiglu_limit)
        up = up.clamp(-self.swiglu_limit, self.swiglu_limit)
        return (up + 1) * gate * torch.sigmoid(self.swiglu_alpha * gate)

    def bias_term(self, weights: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        """sum over k of weight * down_proj_bias[expert], (n, d): added once, after the all_reduce."""
        return torch.einsum("nk,nkd->nd", weights.to(self.down_proj_bias.dtype), self.down_proj_bias[indices])


class RoutingTape:
    """Expert choices recorded on one pass and replayed on another, position by position.

    Routing is discontinuous: two passes whose hidden states differ only by rounding (a cached decode and
    the full forward, in bf16) can pick different experts at a near-tie, and their outputs then differ by
    far more than the rounding. ``mha verify``'s numerics check records the full forward's choices and
    replays them in the cached decode, so it compares the cache path, not the ties; ``differing`` counts
    the (token, layer) choices the replayed pass would have made differently on its own.
    """

    def __init__(self) -> None:
        self.recorded: torch.Tensor | None = None  # (b, s, k) of the recording pass
        self.replaying = False
        self.position = 0
        self.differing = 0

    def chosen(self, batch: int, seq: int) -> torch.Tensor | None:
        """The recorded indices (batch * seq, k) for the next ``seq`` positions when replaying, else None."""
        if not self.replaying or self.recorded is None:
            return None
        chosen = self.recorded[:, self.position : self.position + seq]  # (b, seq, k)
        self.position += seq
        return chosen.reshape(batch * seq, -1)  # (n, k)

    def record(self, indices: torch.Tensor, batch: int, seq: int) -> None:
        """Keep a recording pass's indices (n, k) as (b, s, k)."""
        if not self.replaying:
            self.recorded = indices.reshape(batch, seq, -1)


@contextmanager
def replayed_routing(model: nn.Module) -> Iterator[list[RoutingTape]]:
    """One ``RoutingTape`` on each MoE layer of ``model`` for the ``with`` block (none for a dense model)."""
    layers = [module for module in model.modules() if isinstance(module, MoE)]
    tapes = [RoutingTape() for _ in layers]
    for layer, tape in zip(layers, tapes, strict=True):
        layer.routing_tape = tape
    try:
        yield tapes
    finally:
        for layer in layers:
            layer.routing_tape = None


class MoE(nn.Module):
    """Routed experts (+ shared experts): ``forward(x, reduce=None)``, x (b, s, d) -> (b, s, d).

    ``reduce`` (the model's all-reduce; identity on one rank) is called once, on the combined partial
    output of the routed and shared experts; an output norm (``MoESpec.output_norm``) applies after it.
    """

    def __init__(
        self,
        d_model: int,
        spec: MoESpec,
        *,
        tp_size: int = 1,
        norm_eps: float = 1e-6,
        gated: bool = True,
        activation: Activation | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.spec = spec
        if spec.output_norm:  # A.X K1: the block's whole output normed (after the sum over ranks)
            self.post_mlp_layernorm = RMSNorm(d_model, norm_eps, **factory)
        self.routing_tape: RoutingTape | None = None  # set by verify's numerics check only
        d_ff = _split_width(spec.d_ff_expert, tp_size, "d_ff_expert")
        self.gate = TopKRouter(d_model, spec, **factory)
        self.experts = RoutedExperts(
            d_model,
            spec.n_experts,
            d_ff,
            bias=spec.expert_bias,
            swiglu_limit=spec.swiglu_limit,
            swiglu_alpha=spec.swiglu_alpha,
            gated=gated,
            activation=activation,
            **factory,
        )
        shared_width = spec.n_shared_experts * (spec.d_ff_shared or spec.d_ff_expert)
        if shared_width:
            width = _split_width(shared_width, tp_size, "shared expert width")
            shared = MLP(d_model, width, gated=gated, activation=activation, **factory)
            if spec.shared_expert_gate:  # Qwen2-MoE: one shared expert behind a sigmoid gate
                self.shared_expert = shared
                self.shared_expert_gate = nn.Linear(d_model, 1, bias=False, **factory)
            else:  # DeepSeek: the shared experts fused into one wider MLP
                self.shared_experts = shared

    def forward(self, x: torch.Tensor, reduce: Reduce | None = None) -> torch.Tensor:
        shape = x.shape
        tokens = x.reshape(-1, shape[-1])  # (n, d)
        weights, indices = self._route(tokens, batch=shape[0], seq=tokens.shape[0] // shape[0])  # (n, k) each
        out = self.experts(tokens, weights, indices)  # (n, d), this rank's partial sum
        if hasattr(self, "shared_experts"):
            out = out + self.shared_experts(tokens)  # (n, d)
        elif hasattr(self, "shared_expert"):
            out = out + torch.sigmoid(self.shared_expert_gate(tokens)) * self.shared_expert(tokens)  # (n, d)
        if reduce is not None:
            out = reduce(out)  # (n, d), summed over ranks
        if self.experts.bias:
            out = out + self.experts.bias_term(weights, indices)  # (n, d), once, after the sum
        if hasattr(self, "post_mlp_layernorm"):
            out = self.post_mlp_layernorm(out)  # (n, d)
        return out.reshape(shape)  # (b, s, d)

    def _route(self, tokens: torch.Tensor, *, batch: int, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        tape = self.routing_tape
        if tape is None:
            return self.gate(tokens)  # (n, k) each
        chosen = tape.chosen(batch, seq)  # (n, k) or None
        weights, indices = self.gate(tokens, chosen)  # (n, k) each
        if chosen is not None:
            own = self.gate(tokens)[1]  # (n, k): what this pass would have chosen
            tape.differing += int((own.sort(dim=-1).values != chosen.sort(dim=-1).values).any(dim=-1).sum())
        tape.record(indices, batch, seq)
        return weights, indices


def build_moe(
    spec: ModelSpec,
    *,
    tp_rank: int = 0,
    tp_size: int = 1,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
) -> MoE:
    """The MoE MLP of a MoE layer of ``spec``, rank ``tp_rank``'s slice of every expert: SwiGLU experts, or plain
    ones with the spec's activation when its ``mlp`` is plain (Nemotron-H's squared ReLU)."""
    if spec.block.moe is None:
        raise ValueError(f"{spec.name} has no moe block")
    if not 0 <= tp_rank < tp_size:
        raise ValueError(f"tp_rank ({tp_rank}) must be in [0, {tp_size})")
    gated = spec.block.mlp == "gated"
    if not gated and (spec.block.moe.swiglu_limit is not None or spec.block.activation == "xielu"):
        raise ValueError(f"{spec.name}: plain experts take a plain activation, not a clamped SwiGLU or xIELU")
    return MoE(
        spec.d_model, spec.block.moe, tp_size=tp_size, norm_eps=spec.block.norm_eps, gated=gated,
        activation=None if gated else spec.block.activation, dtype=dtype, device=device,
    )  # fmt: skip
