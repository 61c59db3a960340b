"""An MoE layer's memory op (``core.cost.work.layer_ops``) prices the shared experts' activation beside the routed
experts': gate and up read, their product written, in bf16, over the rank's own tokens at its tp share of
n_shared x d_ff_shared (vLLM 0.11.0 ``DeepseekV2MLP`` / ``LlamaMLP``: ``SiluAndMul`` on the shared expert's
gate_up output). Before, only the routed experts' width counted (priors_2025.md, trtscout and sharedact)."""

from mha_cli.core.cost.work import layer_ops
from mha_cli.core.presets import get_preset
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.tensor_parallel import ExpertLayout, shared_width_per_rank

BF16 = 2
TINY = dict(
    family="custom", d_model=64, n_layers=3, attention=dict(n_heads=4, n_kv_heads=2, head_dim=16),
    block=dict(d_ff=256, moe=dict(n_experts=4, n_active_experts=2, n_shared_experts=2, d_ff_expert=32,
                                  d_ff_shared=48, n_dense_layers=1)),
    embeddings=dict(vocab_size=1000),
)  # fmt: skip
"""One dense layer, two MoE layers of 4 routed experts (top 2, 32 wide) and 2 shared ones (48 wide each)."""


def _memory(model: ModelSpec, tokens: int, **kwargs) -> tuple[float, float]:
    """(count, bytes) of the MoE layers' ``norms, residuals, routing`` op."""
    (op,) = [op for op in layer_ops(model, tokens, **kwargs) if op.name == "norms, residuals, routing"]
    return op.count, op.bytes


def test_a_tiny_moe_s_memory_op_counts_the_shared_experts_activation_by_hand():
    """5 tokens, tp 1: per token 2 norms (read and write, 4 d) and 2 residual adds (2 d), then the activation's
    3 reads and writes over the routed width (2 x 32) and the shared width (2 x 48); tp 2 halves both widths."""
    model = ModelSpec.model_validate(TINY)
    d = 64
    assert _memory(model, 5) == (2, 5 * BF16 * (6 * d + 3 * (2 * 32 + 2 * 48))) == (2, 8_640)
    assert _memory(model, 5, tp=2) == (2, 5 * BF16 * (6 * d + 3 * (32 + 48))) == (2, 6_240)
    # a prompt chunk of 40 tokens: the same rule per token
    assert _memory(model, 40)[1] == 8 * 8_640
    # without shared experts only the routed width is left (the rule before): 2 x 3 x 96 fewer bytes a token
    moe = model.block.moe
    assert moe is not None
    alone = model.model_copy(
        update={"block": model.block.model_copy(update={"moe": moe.model_copy(update={"n_shared_experts": 0})})}
    )
    assert _memory(alone, 5)[1] == 5 * BF16 * (6 * d + 3 * 2 * 32) == 8_640 - 5 * BF16 * 3 * 96


def test_shared_experts_see_the_rank_s_own_tokens_when_data_parallel_ranks_share_the_routed_ones():
    """DP attention over 4 ranks of tp 1 (whole experts): the routed rows are the 4 groups' tokens over the 4 ranks
    (2 x 32 x 4 / 4), the shared expert runs whole on each rank over its own 5 tokens (2 x 48)."""
    model = ModelSpec.model_validate(TINY)
    layout = ExpertLayout(4, whole=True, dp_attention=True)
    assert shared_width_per_rank(model, 1) == 96
    assert _memory(model, 5, experts=layout)[1] == 5 * BF16 * (6 * 64 + 3 * (2 * 32 * 4 // 4 + 96)) == 8_640


def test_llama_4_scout_s_decode_step_reads_its_shared_expert_s_activation():
    """Llama 4 Scout at tp 1, a 2,048-sequence decode step (trtscout's #173): per token 6 x 5,120 of norms and
    residuals and 3 x (8,192 routed + 8,192 shared); the shared expert's part 3 x 8,192 x 2 B x 2,048 tokens
    x 48 layers = 4.83 GB a step."""
    scout = get_preset("llama-4-scout")
    count, per_layer = _memory(scout, 2048)
    assert count == 48
    assert per_layer == 2048 * BF16 * (6 * 5120 + 3 * (8192 + 8192)) == 327_155_712  # was 226,492,416, routed alone
    assert count * (per_layer - 226_492_416) == 3 * 8192 * BF16 * 2048 * 48 == 4_831_838_208


def test_deepseek_v3_s_shared_expert_at_tp_8():
    """DeepSeek-V3 at tp 8, 32 decode tokens: 58 MoE layers, the routed 8 x 2,048 / 8 and the shared 2,048 / 8 wide."""
    v3 = get_preset("deepseek-v3")
    assert shared_width_per_rank(v3, 8) == 256
    assert _memory(v3, 32, tp=8) == (58, 32 * BF16 * (6 * 7168 + 3 * (2048 + 256))) == (58, 3_194_880)
