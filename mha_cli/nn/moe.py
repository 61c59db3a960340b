"""Mixture-of-experts MLP: a router picks k of E experts per token; shared experts see every token.

Shape glossary: ``n`` tokens (batch * sequence flattened), ``d`` d_model, ``E`` routed experts,
``k`` experts per token, ``f`` one expert's hidden width (this rank's slice with tensor parallelism).

Routing (``TopKRouter``, the ``gate`` submodule), as the model families define it:
- softmax over all E logits, then the top k (Mixtral, Qwen2/Qwen3-MoE; DeepSeek-V2 with ``greedy``);
- ``group_limited_greedy`` (DeepSeek-V2): experts split into ``n_group`` groups; only the
  ``topk_group`` groups with the highest max score compete;
- ``noaux_tc`` (DeepSeek-V3): sigmoid scores; the choice uses score + ``e_score_correction_bias``
  (a buffer, learned outside backprop), groups are ranked by the sum of their two best biased
  scores, and the chosen experts are weighted by their unbiased scores.
Then optionally renormalise the k weights to sum 1 (``norm_topk_prob``) and multiply them by
``routed_scaling_factor``.

State-dict names follow transformers 5's modules (DeepseekV3MoE, Qwen3MoeSparseMoeBlock,
Qwen2MoeSparseMoeBlock, Mixtral): ``gate.weight`` (E, d), ``gate.e_score_correction_bias`` (E,)
for noaux_tc, the routed experts fused into 3-D tensors ``experts.gate_up_proj`` (E, 2f, d) (gate rows
then up rows) and ``experts.down_proj`` (E, d, f); shared experts as one SwiGLU MLP of width
n_shared * f named ``shared_experts`` (DeepSeek), or ``shared_expert`` + ``shared_expert_gate`` (Qwen2-MoE).

Tensor parallelism (Megatron style): the router is replicated; every routed and shared expert is
split by width like a dense MLP (rank r holds hidden units [r*f/tp, (r+1)*f/tp) of each expert, so
its ``gate_up_proj`` holds that block of gate rows followed by that block of up rows). Each rank's
combined output is a partial sum; one ``all_reduce`` after it completes the layer.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from mha_cli.core.schemas import MoESpec

AllReduce = Callable[[torch.Tensor], torch.Tensor]


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


def _split_width(width: int, tp_size: int, what: str) -> int:
    if width % tp_size:
        raise ValueError(f"{what} ({width}) must be divisible by the tensor-parallel size ({tp_size})")
    return width // tp_size


class TopKRouter(nn.Module):
    """Chooses ``k`` experts per token and their weights; scores in fp32 whatever the model dtype."""

    def __init__(self, d_model: int, spec: MoESpec, *, dtype=None, device=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.n_experts, self.top_k = spec.n_experts, spec.n_active_experts
        self.scoring_func, self.topk_method = spec.scoring_func, spec.topk_method
        self.norm_topk_prob, self.routed_scaling_factor = spec.norm_topk_prob, spec.routed_scaling_factor
        self.n_group, self.topk_group = spec.n_group, spec.topk_group
        self.weight = nn.Parameter(torch.empty(spec.n_experts, d_model, dtype=dtype, device=device))
        nn.init.normal_(self.weight, std=d_model**-0.5)
        if self.topk_method == "noaux_tc":
            self.register_buffer("e_score_correction_bias", torch.zeros(spec.n_experts, device=device))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (n, d) -> (weights (n, k) fp32, expert indices (n, k) long)."""
        logits = F.linear(x.float(), self.weight.float())  # (n, E)
        scores = logits.softmax(dim=-1) if self.scoring_func == "softmax" else logits.sigmoid()  # (n, E)
        choice = scores  # (n, E): what the top-k ranks
        if self.topk_method == "noaux_tc":
            choice = scores + self.e_score_correction_bias.float()  # (n, E)
        if self.topk_method != "greedy" and self.n_group > 1:
            choice = self._keep_best_groups(choice)  # (n, E), experts of other groups at -inf
        indices = choice.topk(self.top_k, dim=-1).indices  # (n, k)
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
    """E SwiGLU experts stored as 3-D tensors; each token runs only its k chosen experts."""

    def __init__(self, d_model: int, n_experts: int, d_ff: int, *, bias: bool = False, dtype=None, device=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.n_experts, self.d_ff = n_experts, d_ff
        self.gate_up_proj = nn.Parameter(torch.empty(n_experts, 2 * d_ff, d_model, **factory))  # (E, 2f, d)
        self.down_proj = nn.Parameter(torch.empty(n_experts, d_model, d_ff, **factory))  # (E, d, f)
        nn.init.normal_(self.gate_up_proj, std=d_model**-0.5)
        nn.init.normal_(self.down_proj, std=d_ff**-0.5)
        if bias:
            self.gate_up_proj_bias = nn.Parameter(torch.zeros(n_experts, 2 * d_ff, **factory))  # (E, 2f)
            self.down_proj_bias = nn.Parameter(torch.zeros(n_experts, d_model, **factory))  # (E, d)
        self.bias = bias

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
            gate_up = rows @ self.gate_up_proj[expert].T  # (count_e, 2f)
            if self.bias:
                gate_up = gate_up + self.gate_up_proj_bias[expert]
            gate, up = gate_up.chunk(2, dim=-1)  # (count_e, f) each
            outputs.append((F.silu(gate) * up) @ self.down_proj[expert].T)  # (count_e, d)
        weighted = torch.cat(outputs) * weights.reshape(-1)[order, None].to(x.dtype)  # (n * k, d)
        return torch.zeros_like(x).index_add_(0, token, weighted)  # (n, d)

    def bias_term(self, weights: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        """sum over k of weight * down_proj_bias[expert], (n, d): added once, after the all_reduce."""
        return torch.einsum("nk,nkd->nd", weights.to(self.down_proj_bias.dtype), self.down_proj_bias[indices])


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)) with Llama's names; ``d_ff`` is this rank's width."""

    def __init__(self, d_model: int, d_ff: int, *, dtype=None, device=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False, **factory)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False, **factory)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False, **factory)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # (..., d)


class MoE(nn.Module):
    """Routed experts (+ shared experts): x (b, s, d) -> (b, s, d).

    ``all_reduce`` is called once on the combined partial output (identity unless tensor parallel);
    pass a function that looks up the model's current reducer if that can be replaced later.
    """

    def __init__(
        self,
        d_model: int,
        spec: MoESpec,
        *,
        tp_size: int = 1,
        all_reduce: AllReduce | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.spec = spec
        self.all_reduce = all_reduce or _identity
        d_ff = _split_width(spec.d_ff_expert, tp_size, "d_ff_expert")
        self.gate = TopKRouter(d_model, spec, **factory)
        self.experts = RoutedExperts(d_model, spec.n_experts, d_ff, bias=spec.expert_bias, **factory)
        if spec.n_shared_experts and spec.shared_expert_gate:  # Qwen2-MoE: one gated shared expert
            shared_width = spec.n_shared_experts * (spec.d_ff_shared or spec.d_ff_expert)
            self.shared_expert = SwiGLU(d_model, _split_width(shared_width, tp_size, "shared expert width"), **factory)
            self.shared_expert_gate = nn.Linear(d_model, 1, bias=False, **factory)
        elif spec.n_shared_experts:  # DeepSeek: the shared experts fused into one wider MLP
            shared_width = spec.n_shared_experts * (spec.d_ff_shared or spec.d_ff_expert)
            self.shared_experts = SwiGLU(d_model, _split_width(shared_width, tp_size, "shared expert width"), **factory)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        tokens = x.reshape(-1, shape[-1])  # (n, d)
        weights, indices = self.gate(tokens)  # (n, k) each
        out = self.experts(tokens, weights, indices)  # (n, d), partial over ranks
        if hasattr(self, "shared_experts"):
            out = out + self.shared_experts(tokens)  # (n, d)
        elif hasattr(self, "shared_expert"):
            out = out + torch.sigmoid(self.shared_expert_gate(tokens)) * self.shared_expert(tokens)  # (n, d)
        out = self.all_reduce(out)  # (n, d), whole
        if self.experts.bias:
            out = out + self.experts.bias_term(weights, indices)  # (n, d)
        return out.reshape(shape)  # (b, s, d)
