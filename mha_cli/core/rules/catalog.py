"""Every rule of the configurator skill, as data. The skill document is generated from this list.

Thresholds live here as named constants so the code that applies a rule and the text that
explains it quote the same number.
"""

from __future__ import annotations

from mha_cli.core.rules.model import Rule

BUDGET_TOLERANCE = 0.05
"""The recommended model's total parameter count stays within +-5% of the budget."""
HEAD_DIM_FLOOR = 32
"""Below 32 values per head, heads fight the 1/sqrt(head_dim) scaling of the scores."""
HEAD_DIM_CEILING = 256
"""Above 256, the benefit of many small specialist heads fades."""
WIDE_MODEL_D_MODEL = 2048
"""From this width on, heads are 128 wide; below it, 64 (and 32 only under ``NARROW_MODEL_D_MODEL``)."""
NARROW_MODEL_D_MODEL = 256
"""Below this width heads may be 32 wide (toy models); from it on, never below 64."""
DEPTH_BY_WIDTH: tuple[tuple[int, int, str], ...] = (
    (576, 30, "SmolLM2-135M 576 x 30"),
    (1024, 28, "Qwen3-0.6B 1024 x 28"),
    (2048, 26, "median of Llama-3.2-1B 16, SmolLM2-1.7B 24, Qwen3-1.7B 28, Qwen2.5-3B 36"),
    (3072, 28, "Llama-3.2-3B 3072 x 28"),
    (4096, 32, "Llama-3-8B, Mistral-7B, OLMo-2-7B 4096 x 32"),
    (5120, 40, "Qwen3-14B, OLMo-2-13B 5120 x 40"),
    (8192, 80, "Llama-3-70B, Qwen2.5-72B 8192 x 80"),
    (16384, 126, "Llama-3.1-405B 16384 x 126"),
)
"""(d_model, n_layers, source): the depth public designs use at a width; MHA001 interpolates it in log(width)."""
ASPECT_BANDS: tuple[tuple[float, int, int, str], ...] = (
    (1e9, 12, 80, "SmolLM2-135M 19, SmolLM2-360M 30, Qwen2.5-0.5B 37, Qwen3-0.6B 37, GPT-2 small 64"),
    (10e9, 32, 160, "Qwen3-30B-A3B 43, Qwen2.5-1.5B 55, Qwen3-4B 71, Gemma-2-9B 85, Llama-3.2-3B 110, Llama-3-8B 128"),
    (float("inf"), 40, 160, "Qwen3-235B-A22B 44, Qwen2.5-32B 80, Llama-3-70B 102, DeepSeek-V3 118, Llama-3.1-405B 130"),
)
"""(budget up to, lowest d_model / n_layers, highest, public designs in the band): MHA005's aspect-ratio band."""
ROPE_THETA = 500_000.0
"""MHA042: the RoPE base of a new design (Llama 3's; Llama 2's was 10,000)."""
FFN_MULTIPLIER = 3.5
"""Gated MLP hidden width over d_model (Llama 3: 14336 / 4096 = 28672 / 8192 = 3.5)."""
FFN_ROUND = 256
SMALL_MODEL_PARAMS = 500_000_000
"""MHA012: below this budget (dense), the small-model shape: a narrower MLP and GQA with about 3 heads per KV head
(the 125M-360M designs share it; from Qwen2.5-0.5B and Qwen3-0.6B on the MLP is 3-5x d_model again)."""
SMALL_FFN_MULTIPLIER = 8 / 3
"""MHA012: gated MLP width over d_model below 1B (SmolLM2-135M and MobileLLM-125M: 1536 / 576; SmolLM2-360M and
MobileLLM-350M: 2560 / 960; LLaMA-1's 2/3 x 4d)."""
SMALL_MODEL_GROUP = 3
"""MHA012: query heads per KV head public small models use (SmolLM2-135M 9/3, SmolLM2-360M 15/5, MobileLLM-125M
9/3, MobileLLM-350M 15/5)."""
LARGE_VOCAB_FROM_PARAMS = 1_000_000_000
SMALL_VOCAB = 50257
"""GPT-2 BPE: the tokenizer of the lesson's 125M and 350M reference designs."""
LARGE_VOCAB = 128256
"""Llama 3 tokenizer."""
TIE_EMBEDDINGS_BELOW_PARAMS = 4_000_000_000
"""Llama 3.2 1B/3B, Qwen small models and GPT-2 tie the output head to the embedding; Llama 3 8B does not."""
BALANCED_KV_HEADS = 8
"""MHA020: the balanced cache is at most that of 8 KV heads (or group 8 when n_heads / 8 is more)."""
MLA_LATENT_PER_HEAD_DIM = 4
"""MHA030: DeepSeek-V2/V3's kv_lora_rank 512 = 4 x head_dim 128."""
MLA_Q_LATENT_FROM_D_MODEL = 4096
"""MHA030: models this wide also compress queries (DeepSeek-V3: q_lora_rank 1536 = 3 x 512); narrower ones do not
(V2-Lite)."""
MLA_Q_LATENT_PER_KV_LATENT = 3
MAX_QUALITY_GROUP = 8
"""Query heads per KV head up to which GQA stays at near-MHA quality (Llama 3 70B: 64 / 8)."""
FEW_HEADS = 8
"""With this many query heads or fewer, GQA saves little and MHA is kept."""
MHA_LONG_CONTEXT_TOKENS = 32768
MHA_LONG_CONTEXT_MAX_HEADS = 16
MLA_MIN_PARAMS = 1_000_000_000
MOE_DEFAULT_TOP_K = 8
"""Routed experts per token when --top-k is not given: Qwen3-30B-A3B, Qwen3-235B-A22B, DeepSeek-V3 all use 8."""
MOE_MANY_EXPERTS = 64
"""From this many experts the default top-k is 8; below it, a quarter of the experts (Mixtral-8x7B: 2 of 8)."""
MOE_MAX_EXPERTS = 4096
"""The most routed experts a layer a design takes, asked (--experts) or derived to fill the total: public designs
have at most 512 (Qwen3-Next-80B-A3B), and past a few thousand an expert is narrower than a few dozen columns."""
MOE_MAX_TOP_K = 32
"""The most routed experts per token --top-k takes: public designs route at most 10 (Qwen3-Next-80B-A3B: 10 of 512;
DeepSeek-V3, Kimi K2: 8), and past 32 the expert width the rule gives (3 x d_model / k) falls to a few dozen."""
EP_FRIENDLY_EXPERTS = (8, 16, 32, 64, 128, 160, 256, 384, 512)
"""MHA007: routed-expert counts 8-way expert parallelism divides and public MoE designs use (Mixtral 8, OLMoE 64,
Qwen3-MoE 128, DeepSeek-V2 160, DeepSeek-V3 256, Kimi K2 384); from 32 on, 16- and 32-way divide them too."""
FRIENDLY_WIDTH_SPREAD = 1.5
"""MHA007: an expert count expert parallelism divides is kept first when the expert width it re-solves stays within
1.5x of the rule's (3 x d_model / k)."""
COARSE_EXPERT_SPREAD = 2.0
"""MHA007: experts more than 2x off the rule's width are coarse: the count that fills the total at the rule's
width is taken instead when it lands, and a width whose experts stay coarse is ranked after the others."""
EP_WIDE_DIVISOR = 32
"""MHA007: counts 32-way expert parallelism divides (so 8- and 16-way too) are preferred; 8 and 16 only when no
such count lands the budgets."""
MOE_SPARSE_RATIO = 8.0
"""MHA008: an MoE design whose total is at least this many times its active parameters is sparse."""
MOE_SPARSE_DEPTH_FACTOR = 1.8
"""MHA008: sparse MoE designs are deeper than the dense designs of their width, by the median of n_layers over
MHA001's depth at that width across nine public sparse designs (1.81): Kimi-K2 and DeepSeek-V3 0.93, gpt-oss-120b
1.30, GLM-4.5-Air 1.44, GLM-4.7-Flash 1.81, Qwen3-30B-A3B 1.85, MiniMax-M2 2.21, GLM-4.7 2.30, Qwen3-235B-A22B 2.94.
Below the ratio public designs keep the dense depth (median 1.02: OLMoE 0.62, gpt-oss-20b 0.87, Mixtral 1.00,
ERNIE-4.5-21B-A3B 1.03, DeepSeek-V2-Lite 1.04, Llama-4-Scout 1.20)."""
MOE_SPARSE_QUERY_MULTIPLE = 2
"""MHA008: a sparse MoE's query heads are together this many times d_model wide (the median over its GQA designs:
Qwen3-30B-A3B 32 x 128 = 2 x 2048, Qwen3-235B-A22B 64 x 128 = 2 x 4096, MiniMax-M2 48 x 128 = 2 x 3072, GLM-4.7
96 x 128 = 2.4 x 5120, GLM-4.5-Air 96 x 128 = 3 x 4096; gpt-oss-120b 64 x 64 = 1.4 x 2880); below the ratio 1x
(Mixtral, OLMoE, ERNIE-4.5-21B-A3B, Llama-4-Scout)."""
MOE_ACTIVE_FFN_MULTIPLIER = 3.0
"""The k active experts together are this many times d_model wide (Qwen3-30B-A3B: 8 x 768 = 3 x 2048;
Qwen3-235B-A22B: 8 x 1536 = 3 x 4096; DeepSeek-V3: 9 x 2048 = 2.6 x 7168)."""
WINDOW_MIN_CONTEXT = 32768
"""MHA028: from this context on, local:global window patterns join the trade-off (below it the global layers'
cache is small enough that public designs rarely window: Llama 3, Qwen3 and OLMo 2 at 8K-32K)."""
WINDOW_PATTERNS: tuple[tuple[int, int, int, str], ...] = (
    (1, 1, 4096, "Gemma 2: local and global layers alternate, window 4,096 (Gemma Team 2024)"),
    (3, 1, 4096, "Command R7B: 3 sliding-window layers of 4,096 per global layer (Cohere 2024 model card)"),
    (5, 1, 1024, "Gemma 3: 5 local layers of 1,024 per global layer; its ablations find perplexity barely moves from"
     " 1:1 to 7:1 and with windows down to 1,024 (Gemma Team 2025, sec. 5)"),
)  # fmt: skip
"""(local layers, global layers, window tokens, source): the local:global patterns MHA028 prices, mildest first."""
TEST_ACCURACY = 0.95
MAX_LAYERS = 256
"""The deepest design the recommender fills a budget with: twice Llama 3.1 405B's 126 layers, rounded up."""
EXPLICIT_VARIANT_NOTE = "explicit: variant "
"""Prefix of the note ``mha recommend --variant X --out`` writes (``explicit: variant MHA``); ``mha check`` reads it
as the explicit request MHA091 allows."""


def _n(value: int) -> str:
    return f"{value:,}"


RULES: tuple[Rule, ...] = (
    # Shape from the budget ---------------------------------------------------------------------
    Rule(
        id="MHA001", name="width-and-depth-together", topic="shape", severity="info", scope="recommend",
        condition="Always, unless --d-model fixes the width.",
        action="At every width of the ladder (n_heads x head_dim, head_dim by MHA010, head counts public designs "
        "use) solve the depth that spends the budget (MHA002); keep the width whose depth is nearest, in log, the "
        "depth public designs use at that width ("
        + ", ".join(f"{w}: {d}" for w, d, _ in DEPTH_BY_WIDTH)
        + ", interpolated in log(width)), inside the aspect band of MHA005.",
        rationale="Width and depth are one decision: a width snapped first leaves depth to absorb the rounding "
        "(1B at 13 layers, 3B at 20). Public designs at a given width sit within a narrow range of depths, and "
        "small current models go deep and narrow (MobileLLM); solving both together lands on their shapes.",
        reference="; ".join(source for _, _, source in DEPTH_BY_WIDTH)
        + " (config.json files); Liu et al. 2024 (MobileLLM: deep and thin at small scale); Kaplan et al. 2020.",
    ),
    Rule(
        id="MHA002", name="layers-fill-budget", topic="shape", severity="info", scope="recommend",
        condition="Always.",
        action=f"At a width, choose n_layers so the total (MoE: active) parameter count is nearest the budget, "
        f"preferring an even count; the total must land within +-{BUDGET_TOLERANCE:.0%} of the budget. Where that "
        "depth falls outside MHA005's aspect band but one inside it is within the tolerance too, the one inside "
        "(dense: 150B at 12288 is 78 layers, +2.9%, not 76 just outside). The trade-off step re-solves it for each "
        "attention candidate, so the budget stays spent.",
        rationale="Depth is the knob that spends the budget once width, heads and MLP ratio are set; an even depth "
        "splits evenly into pipeline stages.",
        reference="Llama 3 8B: 32 layers at 4096; Llama 3 70B: 80 layers at 8192.",
    ),
    Rule(
        id="MHA003", name="gated-mlp-width", topic="shape", severity="info", scope="recommend",
        condition="Always.",
        action=f"SwiGLU MLP with d_ff = {FFN_MULTIPLIER} x d_model rounded up to a multiple of {FFN_ROUND}.",
        rationale="Gated MLPs beat GELU at equal compute; Llama 3's ratio of 3.5 gives its 8B and 70B shapes exactly "
        "(405B's 53,248 is 3.25 x 16,384).",
        reference="Shazeer 2020 (GLU variants); Llama 3 config.json (14336 = 3.5 x 4096).",
    ),
    Rule(
        id="MHA004", name="vocab-and-tying", topic="shape", severity="info", scope="recommend",
        condition="Always; --vocab overrides the size.",
        action=f"Vocabulary {_n(SMALL_VOCAB)} (GPT-2 BPE) under {LARGE_VOCAB_FROM_PARAMS / 1e9:g}B parameters, "
        f"{_n(LARGE_VOCAB)} (Llama 3) from there; tie the output head to the embedding under "
        f"{TIE_EMBEDDINGS_BELOW_PARAMS / 1e9:g}B.",
        rationale="Embeddings are a large share of a small model: tying halves them; large models can afford an "
        "untied head and a large vocabulary that shortens sequences.",
        reference="GPT-2 (tied, 50257); Llama 3.2 1B/3B (tied, 128256); Llama 3 8B (untied).",
    ),
    Rule(
        id="MHA012", name="small-model-shape", topic="shape", severity="info", scope="recommend",
        condition=f"A dense budget below {SMALL_MODEL_PARAMS // 1_000_000}M (no explicit --variant for the attention).",
        action=f"The gated MLP is {SMALL_FFN_MULTIPLIER:.3g} x d_model (rounded up to {FFN_ROUND}), and the balanced "
        f"attention is GQA with the KV heads (more than 1, fewer than the query heads) whose group is nearest "
        f"{SMALL_MODEL_GROUP} query heads, however few the heads (fewer KV heads on a tie); where no such count divides "
        "the heads (5 or 7 of them) the other rules decide (MHA at 8 heads or fewer); MHA001 then solves width and "
        "depth, deep and thin.",
        rationale="At small scale the embedding takes a large share of the budget and depth buys more than width "
        "(MobileLLM); the public small models share one shape: 576 x 30 with 9 query and 3 KV heads and a 1,536-wide "
        "MLP at 125-135M, 960 x 32 with 15 / 5 and 2,560 at 350-360M.",
        reference="Liu et al. 2024 (MobileLLM: deep and thin, GQA, shared embeddings); SmolLM2-135M and -360M, "
        "MobileLLM-125M and -350M config.json files; Touvron et al. 2023 (LLaMA: SwiGLU at 2/3 x 4d).",
    ),
    # Head geometry -----------------------------------------------------------------------------
    Rule(
        id="MHA005", name="aspect-ratio-band", topic="shape", severity="info", scope="recommend",
        condition="Always; a --d-model whose budget-filling depth falls outside the band is refused (exit 2).",
        action="Keep d_model / n_layers inside the band of public designs of that size: "
        + "; ".join(
            f"{'up to ' + format(upper / 1e9, 'g') + 'B' if upper != float('inf') else 'above'}: {lo}-{hi}"
            for upper, lo, hi, _ in ASPECT_BANDS
        )
        + ". A --d-model outside it is refused with the nearest width inside it.",
        rationale="Shapes far outside what has been trained (2 layers of 65 heads at 1B, 256 layers of 12 heads) "
        "waste the budget: too shallow to compose features, or too narrow to carry them.",
        reference="; ".join(source for _, _, _, source in ASPECT_BANDS) + " (config.json files).",
    ),
    Rule(
        id="MHA007", name="moe-budget", topic="shape", severity="info", scope="recommend",
        condition="--active-params is given (--params is then the total); --experts, --top-k, --shared-experts "
        "and --dense-layers optional.",
        action=f"Width, depth and attention spend the active budget; top-k defaults to {MOE_DEFAULT_TOP_K} "
        f"(a quarter of the experts below {MOE_MANY_EXPERTS}); without --experts the count is one expert "
        "parallelism divides ("
        + ", ".join(str(c) for c in EP_FRIENDLY_EXPERTS)
        + f"), its width re-solved to fill the total: kept first a width within {FRIENDLY_WIDTH_SPREAD:g}x of "
        f"{MOE_ACTIVE_FFN_MULTIPLIER:g} x d_model / k (fine-grained), then a count {EP_WIDE_DIVISOR}-way expert "
        "parallelism divides, then the width nearest; when none lands within "
        f"{COARSE_EXPERT_SPREAD:g}x of that width, the count that fills the total at it (a multiple of 8, else "
        "itself), and widths whose experts stay coarse rank last. With --experts the expert width fills the total. No shared expert and no "
        "dense layer by default (Qwen3-MoE, MiniMax-M2, gpt-oss); --shared-experts N adds N experts every token "
        "uses, each as wide as a routed one, and --dense-layers N makes the first N layers dense (MHA003's d_ff), "
        "both counted in the active budget. Its attention (not MLA) normalises each query and key head (QK-norm, "
        "one RMSNorm of head_dim weights each for the queries and the keys a layer, counted in attention), as "
        "Qwen3-MoE does, so the design writes as a qwen3_moe config. "
        "The trace cites this rule, not MHA003, for the MLP. Budgets that "
        "cannot describe an MoE (active >= total, k >= E, total / active above E / k) are refused in one line.",
        rationale="Most large designs of 2025-26 are mixtures of experts: attention and the residual stream are "
        "sized by what one token computes, memory by every expert. Counts 8-, 16- and 32-way expert parallelism "
        "divide spread the experts evenly over the ranks. Qwen3-MoE dropped Qwen2-MoE's shared expert; DeepSeek, "
        "Kimi and GLM keep one and a few dense first layers, so both are options, not defaults.",
        reference="Qwen3-30B-A3B (128 experts, top-8, 768 = 3 x 2048 / 8), Qwen3-235B-A22B (128, top-8, 1536), "
        "DeepSeek-V3 (256 + 1 shared, top-8, 3 dense layers), Kimi-K2 (384 + 1, 1 dense), GLM-4.5 (160 + 1, 3 dense),"
        " MiniMax-M2 (256, top-8), Mixtral-8x7B (8, top-2), gpt-oss (32/128, top-4) config.json files; Yang et al. "
        "2025 (Qwen3 technical report: no shared experts, QK-norm); Muennighoff et al. 2024 (OLMoE: QK-norm for "
        "stable MoE training).",
    ),
    Rule(
        id="MHA008", name="sparse-moe-shape", topic="shape", severity="info", scope="recommend",
        condition=f"An MoE budget whose total is at least {MOE_SPARSE_RATIO:g}x its active parameters.",
        action=f"The query heads are {MOE_SPARSE_QUERY_MULTIPLE} x d_model / head_dim (MLA keeps its own), and "
        f"MHA001 looks for the width whose budget-filling depth is nearest {MOE_SPARSE_DEPTH_FACTOR:g} x the depth "
        "dense designs use at it.",
        rationale="Public sparse MoE designs put more of the active budget into attention and depth than dense "
        "designs of their width: their query heads are 2-3x d_model wide and their stacks 1.3-2.9x deeper (median "
        "1.8x over nine designs), while those activating an eighth or more of their parameters keep the dense "
        "shape (median 1.02x over six).",
        reference="Qwen3-30B-A3B 2048 x 48 (32 x 128 heads), Qwen3-235B-A22B 4096 x 94 (64 x 128), MiniMax-M2 "
        "3072 x 62 (48 x 128), GLM-4.5-Air 4096 x 46 (96 x 128), GLM-4.7 5120 x 92 (96 x 128), GLM-4.7-Flash 2048 x "
        "47, gpt-oss-120b 2880 x 36, DeepSeek-V3 and Kimi-K2 7168 x 61; Mixtral, OLMoE, ERNIE-4.5-21B-A3B, "
        "DeepSeek-V2-Lite, Llama-4-Scout, gpt-oss-20b (config.json files; tests/fixtures/public_designs.yaml).",
    ),
    Rule(
        id="MHA010", name="head-dim-by-width", topic="heads", severity="info", scope="recommend",
        condition="Always; a --d-model that cannot give such heads is refused (exit 2) with the nearest that can.",
        action=f"head_dim = 128 from d_model {_n(WIDE_MODEL_D_MODEL)} (a multiple of 128), 64 below; 32 only for "
        f"widths under {NARROW_MODEL_D_MODEL}, never below 64 from there. 256 is never chosen: Gemma 2's "
        "256-wide heads come with logit soft-capping and a query scale of their own, which these rules do not set.",
        rationale=f"head_dim is almost always 64 or 128: below {HEAD_DIM_FLOOR} heads fight the sqrt(head_dim) "
        f"scaling, above {HEAD_DIM_CEILING} the many-small-specialists benefit fades; 128 suits attention kernels "
        "from 2048 on (Qwen2.5-3B, Qwen3-1.7B, Llama 3), 64 below (SmolLM2, Qwen2.5-0.5B).",
        reference="SmolLM2 and Qwen2.5-0.5B (64); Qwen2.5/Qwen3 from 1536-2048, Llama 3, Mistral (128); Gemma 2 (256).",
    ),
    Rule(
        id="MHA011", name="heads-from-width", topic="heads", severity="info", scope="recommend",
        condition="Always.",
        action="n_heads = d_model / head_dim, so the concatenated heads are exactly as wide as the residual stream. A "
        "--d-model whose heads 8 devices do not split (at or past the small-model budget) is warned of, with the "
        "degrees that do split them and the nearest width inside the aspect band whose heads 8 devices split.",
        rationale="Keeps the output projection square and the parameter count of attention at 4 d_model^2 for MHA.",
        reference="Vaswani et al. 2017; Llama 3 8B (32 x 128 = 4096), 70B (64 x 128 = 8192).",
    ),
    # Projection variant ------------------------------------------------------------------------
    Rule(
        id="MHA020", name="gqa-default", topic="variant", severity="info", scope="recommend",
        condition=f"More than {FEW_HEADS} query heads, priority balanced or training above "
        f"{MHA_LONG_CONTEXT_MAX_HEADS} heads (with --variant GQA too: it sets the KV-head count within the variant).",
        action=f"The balanced goal: the lowest-risk candidate whose cache is at most that of the balanced KV-head "
        f"count: the fewest KV heads from max({BALANCED_KV_HEADS}, n_heads / {MAX_QUALITY_GROUP}) up that divide "
        f"n_heads (else the most below), from 16 heads on only counts that tensor parallelism of 2, 4 and 8 splits "
        f"(they divide 8 or 8 divides them) when one keeps the group at most 8; with --tp N that does not split that "
        f"count (5, 7), the most N splits at or below it, else the fewest above. In practice GQA-8 for 32-64 heads, GQA-4 for 20 or 28, GQA-16 for "
        "96-128; MQA when n_heads has no divisor and MHA is excluded (MHA091).",
        rationale="GQA divides the cache by n_heads / n_kv_heads at near-MHA quality, which buys batch size and "
        "context on the same device; 8 KV heads is today's default.",
        reference="Ainslie et al. 2023 (GQA); Llama 3 70B: 64 query heads, 8 KV heads; Qwen2.5-7B: 28 / 4; "
        "Llama 3.1 405B: 128 / 8 (a group of 16, past this rule's 8: it gives 128 heads 16 KV heads, twice 405B's "
        "cache).",
    ),
    Rule(
        id="MHA021", name="mha-when-few-heads", topic="variant", severity="info", scope="recommend",
        condition=f"{FEW_HEADS} query heads or fewer, or --priority training (no explicit --variant).",
        action=f"Keep MHA with few heads. --priority training puts quality first: MHA up to "
        f"{MHA_LONG_CONTEXT_MAX_HEADS} heads at or under {_n(MHA_LONG_CONTEXT_TOKENS)} tokens; above that the trace "
        "says so and the balanced pick stands (MHA's cache at more heads or longer context is what MHA091 refuses).",
        rationale="With few heads the cache is small and sharing K/V saves little; when training quality matters more "
        "than serving cost, MHA is the reference point GQA approximates.",
        reference="GPT-2 small (12 heads, MHA); OLMo-2 7B/13B (MHA, 4K context); Vaswani et al. 2017.",
    ),
    Rule(
        id="MHA022", name="fit-the-batch", topic="variant", severity="info", scope="recommend",
        condition="--priority inference (no explicit --variant).",
        action="The serving goal: among the candidates within the balanced cache, the lowest quality risk whose "
        "weights and requested batch fit the target (at the smallest tp that fits), ties by the smaller group "
        "(more KV heads), then the smaller cache (from 32K tokens, in the lowest risk class: the most sequences the "
        "engine admits at the context, then the design without windows, then the smallest cache, MHA028); when "
        "none fits, the one the engine admits most sequences of, then the lowest risk (the lowest risk alone when the "
        "weights are what does not fit), flagged with the ways out (MHA026).",
        rationale="For a serving-first design the KV cache limit decides; a smaller cache is cheaper than another "
        "device, and the trade-off rows (MHA027) show the quality risk taken.",
        reference="Shazeer 2019 (MQA); DeepSeek-V2 2024 (MLA: 93% smaller cache than MHA).",
    ),
    Rule(
        id="MHA023", name="explicit-variant", topic="variant", severity="info", scope="recommend",
        condition="--variant is given.",
        action="Use it (hard rules still apply; MLA below 1B becomes allowed because it was asked for). The "
        "balanced cache (MHA020) still picks within it: --variant GQA is GQA at the balanced KV-head count (GQA-8 for "
        "32 heads), not the smallest group.",
        rationale="The user may know constraints the budget does not show (kernels, an existing checkpoint).",
        reference="The lesson's mha-configurator skill.",
    ),
    Rule(
        id="MHA024", name="tp-divisibility", topic="deployment", severity="hard", scope="both",
        condition="A tensor-parallel degree above 1, or a target with several devices.",
        action="n_heads must be divisible by tp, and n_kv_heads by tp or tp by n_kv_heads (then each KV head is "
        "replicated on tp / n_kv_heads ranks). Without --tp the architecture does not depend on the device count: "
        "recommend designs at the smallest degree of the target at which the weights and the requested batch fit, "
        "and the other devices hold data-parallel replicas. With --tp, widths whose heads it cannot split are skipped "
        "(the trace names them); check reports a broken split, exit 1. Without --tp check judges the target's device "
        "count, or where that does not split the heads the largest degree that divides the devices and does, with "
        "replicas on the rest: a warning (exit 0 unless --strict).",
        rationale="Each rank holds whole heads; with tp > n_kv_heads the KV heads are replicated, which costs memory "
        "but works; any other split does not. Splitting a model that fits one device only adds communication.",
        reference="Megatron-LM (Shoeybi et al. 2019); vLLM tensor-parallel KV-head replication.",
    ),
    Rule(
        id="MHA025", name="weights-exceed-device", topic="deployment", severity="warning", scope="both",
        condition="The weights alone exceed the usable memory of one device of the target (after tensor parallelism).",
        action="Flag the plan (not an error) and give the way out: the tensor-parallel degree that fits, or "
        "quantised weights.",
        rationale="A plan that does not fit is still a useful answer when it says what would make it fit.",
        reference="vLLM gpu_memory_utilization (0.90) sets the usable share.",
    ),
    Rule(
        id="MHA026", name="kv-exceeds-device", topic="deployment", severity="warning", scope="both",
        condition="The weights fit but the requested batch at the target context does not run at once: its cache "
        "exceeds the pool, or the engine's max_num_seqs caps it where the pool holds it.",
        action="Flag the plan and give the way out: --max-num-seqs N where the cap alone is the limit, the batch that "
        "fits, an fp8 cache, a shorter context, or more devices.",
        rationale="The KV cache, not the weights, limits long-context serving; its size is the figure to act on.",
        reference="Pope et al. 2022 (Efficiently Scaling Transformer Inference).",
    ),
    # Trade-off ---------------------------------------------------------------------------------
    Rule(
        id="MHA027", name="trade-off-candidates", topic="variant", severity="info", scope="recommend",
        condition="Always: one row per candidate.",
        action="Every candidate at the chosen width (MHA, GQA at each KV-head count that divides the heads and the "
        "tp, MQA, MLA at its latent) is solved for depth, placed at its smallest fitting tp and priced: cache per "
        "token, max batch, quality risk (none < low: group <= 8 < low with more FLOPs: MLA < moderate: group <= 16 "
        "< high), and a verdict (chosen, excluded by a rule, above the balanced cache, does not fit, higher risk).",
        rationale="One step over all candidates, sorted by risk then cache, cannot contradict its own labels the way "
        "a fixed fallback order can.",
        reference="Ainslie et al. 2023 (GQA quality by group); Shazeer 2019; DeepSeek-V2 2024.",
    ),
    Rule(
        id="MHA028", name="local-global-windows", topic="variant", severity="info", scope="recommend",
        condition=f"A dense design without MLA at a context of {_n(WINDOW_MIN_CONTEXT)} tokens or more.",
        action="The balanced attention is also priced with local:global patterns ("
        + ", ".join(f"{lo}:{gl} w{_n(w)}" for lo, gl, w, _ in WINDOW_PATTERNS)
        + "; a local layer caches at most its window, every global layer the whole context), each at its "
        "attention's quality risk. Under --priority inference the pick, within the lowest risk class that meets "
        "the goal (MHA022), patterns included, is the one the engine admits most sequences of at the context (a "
        "smaller cache the engine's pages do not turn into sequences buys nothing), then, where that ties, the design "
        "without windows (simpler, and no quality risk from the window), then the smallest cache; under balanced and "
        "training they are alternatives only.",
        rationale="At long context the biggest KV lever of recent designs is local attention on most layers, not "
        "fewer KV heads: Gemma 3's 5:1 with 1,024 tokens caches about a sixth of a global-only stack at 128K.",
        reference="; ".join(source for *_, source in WINDOW_PATTERNS) + "; Beltagy et al. 2020 (Longformer).",
    ),
    # MLA ---------------------------------------------------------------------------------------
    Rule(
        id="MHA030", name="mla-latent-rank", topic="mla", severity="info", scope="recommend",
        condition="MLA is chosen.",
        action=f"kv_lora_rank = {MLA_LATENT_PER_HEAD_DIM} x head_dim, decoupled RoPE key head_dim / 2, per-head "
        f"nope and value widths head_dim; a query latent of 3 x kv_lora_rank from d_model "
        f"{_n(MLA_Q_LATENT_FROM_D_MODEL)}. The cache holds latent + RoPE key per token per layer.",
        rationale="DeepSeek-V2's proportions (512 latent, 64 RoPE for 128-wide heads) keep MHA-level quality at a "
        "cache of 576 values per token per layer; the absorbed form never materialises per-head K/V.",
        reference="DeepSeek-V2 (kv_lora_rank 512, q_lora_rank 1536); DeepSeek-V3 config.json.",
    ),
    # Initialisation and biases ------------------------------------------------------------------
    Rule(
        id="MHA040", name="xavier-qkv-scaled-o", topic="init", severity="info", scope="recommend",
        condition="Always.",
        action="Q, K, V: Xavier (Glorot) normal, std = sqrt(2 / (fan_in + fan_out)); O: the same scale divided by "
        "sqrt(2 x n_layers).",
        rationale="The projections are linear (no ReLU follows), so Xavier, not Kaiming, preserves variance; scaling "
        "the residual-writing O projection keeps the residual stream's variance flat with depth.",
        reference="Glorot & Bengio 2010; GPT-2 (residual projections scaled by 1/sqrt(N)).",
    ),
    Rule(
        id="MHA041", name="no-projection-bias", topic="bias", severity="info", scope="recommend",
        condition="Always.",
        action="No biases on Q, K, V or O.",
        rationale="Biases add parameters and a shift that pre-norm models do not need; most current models drop "
        "them (Qwen2 keeps a QKV bias, an exception).",
        reference="PaLM (Chowdhery et al. 2022); Llama 3, Mistral config.json.",
    ),
    Rule(
        id="MHA042", name="rope-base", topic="heads", severity="info", scope="recommend",
        condition="Always (the design's positions are RoPE on every head dimension).",
        action=f"RoPE base theta {_n(int(ROPE_THETA))} (Llama 3's) or, where the context needs more, the first of 1, "
        "2 and 5 x 10^k above it that keeps B(m) = sum over the head's rotated frequency pairs of cos(m theta_i) at 0 "
        "or above for every distance m up to the context (the power of two at or above it): with head_dim 128 "
        "500,000 to 16K tokens, 2,000,000 at 32K, 10,000,000 at 128K, 1,000,000,000 at 1M; head_dim 64 needs more "
        "(10,000,000 at 32K). No scaling; an MLA design keeps 500,000. The config file and the config.json carry it.",
        rationale="A larger base turns the slowest frequencies more slowly. Men et al. derive that attention prefers "
        "a key similar to the query over a random one at distance m only while B(m) >= 0, so a base below the bound "
        "for the training context gives a long context in name only (low perplexity, failed retrieval). Models "
        "raise the base with the context, if less than the bound asks: Llama 3 500,000 at 8K, Qwen3 1,000,000 at "
        "32K, SmolLM3 5,000,000 at 64K, Qwen3-Next 10,000,000 at 256K (Llama 3.1 reached 128K by scaling, not by "
        "its base). MLA's similarity runs through unrotated dimensions, which the bound does not count.",
        reference="Men et al. 2024 (Base of RoPE Bounds Context Length, arXiv 2405.14591); benchmarks/"
        "rope_base_bound.py (the table); Llama 3 (Dubey et al. 2024, Table 3: RoPE theta = 500,000); Qwen3-8B, "
        "SmolLM3-3B, Qwen3-Next-80B-A3B config.json rope_theta.",
    ),
    # Testability -------------------------------------------------------------------------------
    Rule(
        id="MHA050", name="induction-hook", topic="testability", severity="info", scope="recommend",
        condition="Always.",
        action=f"A 2-layer model with the recommended head geometry must solve the induction task "
        f"(A B ... A -> B) at >= {TEST_ACCURACY:.0%} accuracy; `mha verify CONFIG --hook` trains that copy on the "
        "config `mha recommend --out CONFIG` wrote and checks the threshold.",
        rationale="Induction needs two attention layers that compose (a previous-token head and an induction "
        "head): a cheap test that the heads, masks and positions are wired correctly.",
        reference="Olsson et al. 2022 (In-context learning and induction heads).",
    ),
    # Hard rules --------------------------------------------------------------------------------
    Rule(
        id="MHA090", name="head-dim-floor", topic="refusal", severity="hard", scope="both",
        condition=f"head_dim < {HEAD_DIM_FLOOR}.",
        action="Never recommend it (a --d-model that forces it is refused, exit 2); check reports it, exit 1.",
        rationale=f"Below {HEAD_DIM_FLOOR} values per head the dot products are too short for the 1/sqrt(head_dim) "
        "scaling to keep scores well spread: heads collapse.",
        reference="The lesson's mha-configurator skill; no public LLM uses heads under 64.",
    ),
    Rule(
        id="MHA091", name="no-wide-mha-at-long-context", topic="refusal", severity="hard", scope="both",
        condition=f"MHA with more than {MHA_LONG_CONTEXT_MAX_HEADS} heads whose layers hold more than "
        f"{_n(MHA_LONG_CONTEXT_TOKENS)} tokens each: its global (full-context) layers, or windows or chunks as long as "
        "the context (a model whose every layer holds a shorter window never does).",
        action="Never chosen by default; when asked for with --variant MHA it is kept only with its KV cost priced "
        "and GQA/MLA offered beside it; check reports it, exit 1, unless the file records the request (the note "
        f"`{EXPLICIT_VARIANT_NOTE}MHA` that recommend --variant MHA --out writes): then a warning, priced the same.",
        rationale="The MHA cache grows with n_heads x context; at long context it dwarfs the weights, while GQA at "
        "MHA020's count (the one the finding prices) costs a fraction of it at near-MHA quality.",
        reference="Llama 3.1 70B (128K context, GQA 64 / 8); Ainslie et al. 2023.",
    ),
    Rule(
        id="MHA092", name="no-mla-under-1b", topic="refusal", severity="hard", scope="both",
        condition=f"MLA below {MLA_MIN_PARAMS / 1e9:g}B parameters without an explicit request.",
        action="Never chosen by default; kept with --variant MLA (recommend) and accepted in a file whose model "
        "states MLA (check reports a warning).",
        rationale="Below 1B the cache is small already; MLA's extra up-projections, FLOPs and kernel complexity buy "
        "little.",
        reference="The lesson's mha-configurator skill; DeepSeek-V2-Lite (15.7B) is the smallest public MLA model.",
    ),
    Rule(
        id="MHA093", name="budget-too-small", topic="refusal", severity="hard", scope="recommend",
        condition=f"No width on the ladder reaches the budget within +-{BUDGET_TOLERANCE:.0%} (the embeddings "
        "alone exceed it, or it is below one layer).",
        action="Refuse with one line naming the smallest possible design, exit 2.",
        rationale="A budget no transformer of this vocabulary can meet is a typo or a unit mistake (1K for 1B).",
        reference="parse_param_count: 7B = 7,000,000,000.",
    ),
    Rule(
        id="MHA094", name="budget-too-large", topic="refusal", severity="hard", scope="recommend",
        condition=f"Even the widest width on the ladder needs more than {MAX_LAYERS} layers to spend the budget "
        "(or --d-model fixes a width that does).",
        action="Refuse with one line giving the range of budgets the rules can shape, exit 2.",
        rationale=f"The rules are calibrated on public designs up to 405B; a design deeper than {MAX_LAYERS} layers "
        "is an extrapolation no one has trained, and a budget that needs it is usually a unit mistake (1000T).",
        reference="Llama 3.1 405B: 126 layers at 16384, the deepest public dense decoder of the anchors.",
    ),
    Rule(
        id="MHA095", name="odd-rotary-width", topic="refusal", severity="hard", scope="check",
        condition="RoPE rotates an odd number of values a head: head_dim x partial_rotary_factor (as transformers "
        "rounds it) of the global RoPE or of rope_local on the local layers, or MLA's qk_rope_head_dim (itself, and "
        "x partial_rotary_factor).",
        action="Report it, exit 1, naming the width and the fields to change.",
        rationale="RoPE turns values in pairs (rotate-half splits the rotated width in two halves); an odd width "
        "has a value with no partner, so neither transformers nor mha verify can build the model.",
        reference="transformers' rotate_half; Llama's head_dim 128 and DeepSeek-V3's qk_rope_head_dim 64.",
    ),
    # Lint-only ---------------------------------------------------------------------------------
    Rule(
        id="MHA060", name="kv-larger-than-weights", topic="lint", severity="warning", scope="check",
        condition="One sequence's KV cache at the stated context is larger than the weights.",
        action="Warn, with the ratio and the cache of MHA020's GQA (GQA-8 for 32-64 heads, GQA-4 for 28) and MLA "
        "at the same shape.",
        rationale="Serving such a design is bound by its cache: every sequence costs more memory than the model.",
        reference="Pope et al. 2022; DeepSeek-V2 2024.",
    ),
    Rule(
        id="MHA061", name="head-dim-unusual", topic="lint", severity="warning", scope="check",
        condition=f"head_dim is not 64, 128 or 256, or above {HEAD_DIM_CEILING}.",
        action=f"Warn with the head_dim found (MLA's heads are exempt: their query/key width is a nope part and a RoPE"
        f" part, DeepSeek's 128 + 64 = 192, its kernels its own; so is {HEAD_DIM_FLOOR} below width"
        f" {NARROW_MODEL_D_MODEL}, which MHA010 recommends there).",
        rationale="Attention kernels are tuned for 64/128/256; above 256 the benefit of more, smaller heads fades.",
        reference="FlashAttention-2 supported head dims; the lesson's facts.",
    ),
    Rule(
        id="MHA062", name="large-gqa-group", topic="lint", severity="warning", scope="check",
        condition=f"GQA or MQA with more than {MAX_QUALITY_GROUP} query heads per KV head.",
        action="Warn: quality risk grows as the group widens towards MQA, and is largest at MQA itself.",
        rationale="Ainslie et al. report near-MHA quality at group 8; wider groups trend towards MQA's loss.",
        reference="Ainslie et al. 2023; Llama 3.1 405B uses 16 (128 / 8) with a very wide model.",
    ),
    Rule(
        id="MHA064", name="mla-latent-compresses-nothing", topic="lint", severity="warning", scope="check",
        condition="MLA with kv_lora_rank at least d_model, or a latent and RoPE key at least as wide as the heads' own "
        "K and V (n_heads x (qk_nope + qk_rope + v_head_dim)).",
        action="Warn with the latent's width, d_model and the heads' K and V width.",
        rationale="MLA pays an extra up-projection to cache a narrow latent; a latent as wide as the residual stream "
        "or as the heads' keys and values saves nothing, so plain GQA or MHA of the same heads is cheaper.",
        reference="DeepSeek-V2 2024 (latent 512 against d_model 5,120 and 128 heads x (192 + 128)); trial 319 #5.",
    ),
    Rule(
        id="MHA063", name="projection-bias", topic="lint", severity="info", scope="check",
        condition="Q, K, V or O carry biases.",
        action="Note it: allowed, but most current designs drop them.",
        rationale="See MHA041.",
        reference="Qwen2 (QKV bias) and GPT-2 (all biases) are the public exceptions.",
    ),
)  # fmt: skip

_BY_ID = {rule.id: rule for rule in RULES}


def get_rule(rule_id: str) -> Rule:
    """The rule with id ``rule_id`` (KeyError for an unknown id: ids are cited from code)."""
    return _BY_ID[rule_id]
