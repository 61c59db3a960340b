"""Rich renderings shared by several commands: model geometry, KV figures, the memory plan."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mha_cli.core.engine.plan import WOULD_NOT_START, EnginePlan
from mha_cli.core.engine.release_numbers import ENGINE_NAMES
from mha_cli.core.kv import KvFootprint
from mha_cli.core.memory import MemoryPlan
from mha_cli.core.quantities import format_bytes, format_count
from mha_cli.core.rules.engine import counted
from mha_cli.core.schemas import ModelSpec
from mha_cli.core.targets import CPU_TARGET_ID, gb_shown_binary


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` with its caption below it as a dim paragraph of the console's width: a caption rich draws
    itself wraps at the table's width, mid-phrase when the table is narrow."""
    caption, table.caption = table.caption, None
    console.print(table)
    if caption:
        console.print(caption, style="dim", justify="left")


def bytes_cell(n: int) -> str:
    """'1,073,741,824 B (1.0 GiB)': exact for scripts-minded readers, readable for the rest."""
    return f"{n:,} B ({format_bytes(n)})" if n >= 1024 else f"{n:,} B"


def size_cell(n: int) -> str:
    """'1.0 GiB', or '131,072 B' below 1 MiB where the exact count is short enough to read."""
    return f"{n:,} B" if abs(n) < 2**20 else format_bytes(n)


def model_table(model: ModelSpec, title: str) -> Table:
    """Geometry of ``model``: widths, heads, variant, windows."""
    table = Table(title=title, show_header=False, title_justify="left", box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    if model.attention_free:
        return _attention_free_table(model, table)
    heads = (
        f"{model.attention.n_heads} query / {model.attention.n_kv_heads} KV ({model.attention.q_per_kv} per KV head)"
        if model.attention.mla is None
        else f"{model.attention.n_heads} query; no KV heads: one shared latent (below)"
    )
    derived = model.d_model // model.attention.n_heads if model.d_model % model.attention.n_heads == 0 else None
    mla = model.attention.mla
    head_note = (
        ""
        if derived == model.attention.head_dim
        else f"  (qk_nope_head_dim + qk_rope_head_dim: {mla.qk_nope_head_dim} + {mla.qk_rope_head_dim})"
        if mla is not None and model.attention.head_dim == mla.qk_head_dim
        else f"  (explicit; d_model / n_heads = {model.d_model / model.attention.n_heads:g})"
    )  # fmt: skip
    table.add_row("variant", model.attention.variant or "")
    table.add_row("d_model x layers", f"{model.d_model} x {model.n_layers}")
    table.add_row("heads", heads)
    table.add_row("head_dim", f"{model.attention.head_dim}{head_note}")
    if model.attention.per_kind_geometry:  # Gemma 4's full-attention layers
        attention = model.attention
        v_note = "; V is K's projection (no v_proj)" if attention.global_k_eq_v else ""
        table.add_row(
            "global layers",
            f"{attention.kv_heads_of('global')} KV heads of {attention.head_dim_of('global')}{v_note}",
        )
    if model.attention.mla is not None:
        mla = model.attention.mla
        table.add_row(
            "MLA",
            f"latent {mla.kv_lora_rank} + RoPE key {mla.qk_rope_head_dim}; per head: nope "
            f"{mla.qk_nope_head_dim}, v {mla.v_head_dim}; q latent {mla.q_lora_rank or 'none'}",
        )
    spans = [f"{model.n_global_layers} global"]
    if model.layers.sliding_window:
        spans.append(f"{model.n_local_layers} local (window {model.layers.sliding_window:,})")
    if model.layers.attention_chunk:
        spans.append(f"{model.count_layers('chunked')} chunked (chunk {model.layers.attention_chunk:,})")
    if model.recurrent is not None:
        state = model.recurrent
        where = "beside attention in every layer" if state.on_attention_layers else "layers"
        spans.append(f"{model.count_layers('linear')} {state.kind} {where}" if not state.on_attention_layers
                     else f"{state.kind} {where}")  # fmt: skip
    if model.layers.n_kv_shared_layers:
        wide = model.layers.shared_d_ff  # Gemma 4 E2B's double-wide MLP on them (review 376 #2)
        spans.append(
            f"last {model.layers.n_kv_shared_layers} share earlier K/V" + (f" (MLP {wide:,} wide)" if wide else "")
        )
    if len(spans) > 1:
        table.add_row("layers", ", ".join(spans))
    if model.block.moe is not None:
        moe = model.block.moe
        table.add_row(
            "MoE",
            f"{moe.n_experts} experts, {moe.n_active_experts} active"
            f" + {moe.n_shared_experts} shared, width {moe.d_ff_expert}" + _dense_layers_words(model),
        )
    return table


def _dense_layers_words(model: ModelSpec) -> str:
    """Which layers keep a dense MLP: the first few (DeepSeek's first_k_dense_replace), or, under a period, every
    layer between the MoE ones (Llama 4 Maverick's interleave step 2: MoE on layers 1, 3, ..., not "the first 1")."""
    moe = model.block.moe
    assert moe is not None
    if moe.layer_period > 1:
        first = next((layer for layer in range(model.n_layers) if moe.is_moe_layer(layer)), None)
        if first is None:  # a period past the last layer: every layer dense
            return f"; MoE on none of {model.n_layers} layers (period {moe.layer_period}), all dense (d_ff {model.block.d_ff})"
        return (
            f"; MoE on {model.n_moe_layers} of {model.n_layers} layers (every {moe.layer_period} from layer {first}),"
            f" the others dense (d_ff {model.block.d_ff})"
        )
    if moe.n_dense_layers:
        return f"; first {counted(moe.n_dense_layers, 'layer')} dense (d_ff {model.block.d_ff})"
    return ""


def _attention_free_table(model: ModelSpec, table: Table) -> Table:
    """An attention-free model's geometry: no heads, every layer its mixer's fixed state."""
    state = model.recurrent
    assert state is not None  # every layer is linear, which ModelSpec requires a recurrent block for
    table.add_row("variant", "attention-free (no KV heads, nothing cached per token)")
    table.add_row("d_model x layers", f"{model.d_model} x {model.n_layers}")
    shape = f"{state.n_heads} x {state.head_dim} x {state.state_dim}" if state.head_dim > 1 else (
        f"{state.n_heads} channels x {state.state_dim}")  # fmt: skip
    conv = f", conv {state.conv_dim} x {state.conv_kernel}" if state.conv_dim else ""
    conv += " + n, m per head" if state.kind == "mlstm" else ""
    table.add_row("layers", f"{model.n_layers} {state.kind} layers: state {shape}{conv}")
    return table


def _shares(dp_attention: bool) -> str:
    """What a layout's replicas are called: one server's DP-attention ranks, or replicas."""
    return "attention ranks" if dp_attention else "replicas"


def kv_table(
    kv: KvFootprint,
    replicas: int = 1,
    sequences_per_replica: int | None = None,
    *,
    dp_attention: bool = False,
    engine: EnginePlan | None = None,
) -> Table:
    """Per layer, per token, per sequence, per batch; per rank under tensor parallelism. ``total_bytes`` is the whole
    batch at one tp rank's share of each sequence: with ``replicas`` > 1 the row says a device holds only
    ``sequences_per_replica`` of it. ``engine``: the memory plan's engine, whose blocks are named where they differ
    from the ``--block-size`` the footprint is rounded to (an MLA kernel's forced block, Gemma 4's raised page)."""
    table = Table(title="KV cache", title_justify="left")
    table.add_column("scope")
    table.add_column("bytes", justify="right")
    table.add_column("", justify="right")
    table.add_column("how", style="dim")

    def row(scope: str, n: int, how: str, style: str | None = None) -> None:
        table.add_row(scope, f"{n:,}", format_bytes(n), how, style=style)

    mode = f", {kv.mla_cache} MLA cache" if kv.mla_cache else ""
    indexer = (
        f", {kv.indexer_bytes_per_token_per_layer} of it indexer key" if kv.indexer_bytes_per_token_per_layer else ""
    )
    if kv.n_token_layers:
        if kv.global_bytes_per_token_per_layer is None:
            row("per token, per layer", kv.bytes_per_token_per_layer, f"{kv.kv_dtype}{mode}{indexer}")
        else:  # Gemma 4: the global layers' own KV heads and head width
            row("per token, per local layer", kv.bytes_per_token_per_layer, kv.kv_dtype)
            row("per token, per global layer", kv.global_bytes_per_token_per_layer, f"{kv.kv_dtype}, own head geometry")
        row("per token (all layers)", kv.bytes_per_token, f"bytes_per_token: {kv.n_token_layers} layers cache tokens")
    else:  # attention-free: no per-token figure at all, rather than a 0 B "cache"
        table.title = "Cache: fixed state only (no layer caches tokens)"
        table.add_row("per token", "none", "", "no layer attends: nothing grows with the context")
    spans = []
    cached = kv.token_layers_by_kind  # the layers that cache tokens (not Gemma-3n's KV-sharing ones)
    if cached.get("global"):
        spans.append(f"{counted(cached['global'], 'layer')} x {kv.tokens_held_global:,} tokens")
    if cached.get("local"):
        spans.append(f"{counted(cached['local'], 'layer')} x {kv.tokens_held_local:,} (window)")
    if cached.get("chunked"):
        spans.append(f"{counted(cached['chunked'], 'layer')} x {kv.tokens_held_chunked:,} (chunk)")
    if kv.n_state_layers:
        spans.append(f"{counted(kv.n_state_layers, 'layer')} x {kv.state_bytes_per_layer:,} B fixed state")
    span = " + ".join(spans)
    if kv.block_size:
        span += f", blocks of {kv.block_size}"
        if engine is not None and engine_blocks(engine) != str(kv.block_size):
            span += f" as asked; {ENGINE_TITLES[engine.name]} allocates blocks of {engine_blocks(engine)}"
    if kv.n_state_layers:
        row("fixed state per sequence", kv.state_bytes_per_seq, "state_bytes_per_seq: does not grow with the context")
    row(f"per sequence ({kv.seq_len:,} tokens)", kv.bytes_per_sequence, span)
    if kv.tp > 1 and kv.n_token_layers:
        heads = f"{kv.kv_heads_per_rank} KV head(s)"
        if kv.mla_cache == "absorbed":  # an MLA latent: no KV heads, every rank holds it whole (trial 338 #10)
            heads = "the latent on every rank (not sharded)"
        row(
            "per token, per rank",
            kv.bytes_per_token_per_rank,
            f"tp={kv.tp}: {heads}"
            + ("" if kv.global_kv_heads_per_rank is None else f", {kv.global_kv_heads_per_rank} in a global layer"),
        )
        row("per sequence, per rank", kv.bytes_per_sequence_per_rank, "")
    scope = f"batch of {kv.batch:,}" + (", per tp rank" if kv.tp > 1 else "")
    split = (
        f": all {replicas} {_shares(dp_attention)}' sequences; a device holds {sequences_per_replica} of them"
        " (memory plan)"
        if replicas > 1
        else ""
    )
    row(scope, kv.total_bytes, f"total_bytes{split}", style="bold")
    return table


def layout_words(plan: MemoryPlan) -> str:
    """The layout ``plan`` prices: one server's DP-attention ranks, or tp x replicas; for MoE the experts a device
    holds (which the weights per device count)."""
    if plan.dp_attention:
        layout = f"one server of {plan.n_devices} GPUs, {plan.replicas} DP-attention ranks of tp {plan.tp}"
    else:
        layout = f"tp {plan.tp}" + (f" x {plan.replicas} replicas" if plan.replicas > 1 else "")
    if plan.expert_ranks is not None and plan.expert_ranks > 1:
        layout += f"; each device holds {plan.experts_per_device}"
    return layout


def engine_blocks(engine: EnginePlan) -> str:
    """Tokens per block as the engine allocates them (``EnginePlan.block_size``, settled: an MLA kernel's forced
    block), each page kind's where they differ (Gemma 4: vLLM raises the smaller page's block, ``KvGroup``)."""
    sizes = {group.kind: group.block_size for group in engine.groups}
    if len(set(sizes.values())) <= 1:
        return str(engine.block_size)
    return ", ".join(f"{size} ({kind} layers)" for kind, size in sizes.items())


def memory_table(plan: MemoryPlan) -> Table:
    """The engine's budget on one device, line by line with where each figure comes from, then its KV pool."""
    engine = plan.engine
    devices = f"{plan.n_devices} x " if plan.n_devices > 1 else ""
    layout = f": {layout_words(plan)}" if plan.dp_attention or plan.n_devices > 1 else ""
    table = Table(
        title=f"Memory plan ({ENGINE_TITLES[engine.name]}) on {devices}{plan.target_name}{layout}", title_justify="left"
    )
    table.add_column("per device")
    table.add_column("bytes", justify="right")
    table.add_column("", justify="right")
    table.add_column("from", style="dim")
    for line in engine.budget:
        style = "bold" if line.label.startswith("=") else None
        table.add_row(line.label, f"{line.bytes:,}", format_bytes(line.bytes), line.how, style=style)
    unit = _shares(plan.dp_attention)[:-1]
    share = f"{plan.sequences_per_replica} of the batch per {unit}" if plan.replicas > 1 else "this batch"
    cache = "KV cache" if engine.kv_bytes_per_token_per_rank else "fixed state"
    apart = "with each request's state, which the state pool above holds" if engine.state_pool_bytes else ""
    table.add_row(f"{cache} ({share})", f"{plan.kv_bytes_per_device:,}", format_bytes(plan.kv_bytes_per_device), apart)
    batch = "this batch"
    allocated = plan.allocated_kv_bytes_per_device
    if allocated != plan.kv_bytes_per_device:  # whole blocks in every group, state pages: what headroom is against
        batch = "as allocated"
        how = f"whole blocks of {engine_blocks(engine)}"
        if engine.running_kv_bytes is not None:
            how += ": the batch decoding, its windows' blocks alone, the last one's admission ask"
        if engine.state_pool_bytes:  # the states are priced in their own pool, not here (review 282 #6)
            how += "; the states apart"
        table.add_row("  as allocated", f"{allocated:,}", format_bytes(allocated), how)
    style = "green" if plan.fits else "bold red"
    if plan.headroom_bytes >= 0:
        headroom = ("headroom", plan.headroom_bytes, f"available - {batch}")
    else:  # a shortfall is named as one, its figure positive (headroom_bytes keeps the sign)
        short = f"{batch} + the deficit" if engine.deficit_bytes else f"{batch} - available"
        headroom = ("short by", -plan.headroom_bytes, short)
    label, shown, how = headroom
    table.add_row(label, f"{shown:,}", format_bytes(shown), how, style=style)
    if engine.name == "vllm" and engine.cuda_graph_bytes and not engine.cuda_graph_in_budget:  # 0.21: a budget line
        graphs = engine.cuda_graph_bytes
        estimate = engine.cuda_graph_estimate
        why = (
            "vLLM < 0.21"
            if estimate is None
            else "Model Runner V2 < 0.29 estimates none"
            if not estimate.before_pool
            else "vLLM skips its estimate when the pool is set"
        )
        table.add_row("CUDA graphs (outside)", f"{graphs:,}", format_bytes(graphs), f"taken after the pool ({why})")
    blocks = f"{engine.kv_blocks:,} blocks of {engine_blocks(engine)}"
    if engine.layers_per_group and len(engine.groups) > 1:
        blocks += f" x {len(engine.groups)} groups of {engine.layers_per_group} layers"
        if engine.name == "vllm" and engine.kv_tokens == int(engine.max_concurrency * engine.max_model_len):
            # vLLM 0.21+ logs a hybrid's tokens so, not blocks x block size (trial 338 #9: the row did not add up)
            blocks = f"max concurrency x {engine.max_model_len:,}, as vLLM logs it ({blocks})"
    if engine.kv_bytes_per_token_per_rank:
        table.add_row("KV cache size (tokens)", f"{engine.kv_tokens:,}", "", blocks)
    else:  # attention-free: the pool holds states, not tokens
        table.add_row("KV cache size (tokens)", "none", "", "no layer caches tokens: requests by state bytes")
    ideal = f"per-layer ideal {engine.ideal_max_concurrency:.2f}x" if len(engine.groups) > 1 else ""
    table.add_row(f"max concurrency at {engine.max_model_len:,} tokens", f"{engine.max_concurrency:.2f}x", "", ideal)
    table.add_row("verdict", verdict_cell(plan), "", "", style=style)
    across = f" (all {plan.replicas} {_shares(plan.dp_attention)})" if plan.replicas > 1 else ""
    table.add_row(f"max sequences at this length{across}", f"{plan.max_sequences:,}", "", "run at once; more queue")
    if plan.target_id == CPU_TARGET_ID:  # this machine's memory: no torch figure, no datasheet
        table.caption = f"memory as /proc/meminfo reports it ({plan.device_memory_bytes / 2**30:.2f} GiB); GiB = 2^30 B"
    else:
        gb = plan.vendor_memory_gb
        binary = (
            f": DRAM is sized in binary GB, {gb:g} x 2^30 B" if gb_shown_binary(gb, plan.device_memory_bytes) else ""
        )
        table.caption = (
            f"device memory as torch reports it ({plan.device_memory_bytes / 2**30:.2f} GiB of the datasheet's"
            f" {gb:g} GB{binary}); GiB = 2^30 B"
        )
    return table


def verdict_cell(plan: MemoryPlan) -> str:
    """fits; the engine would not start (weights, or not one request); or how much of the batch runs at once."""
    if plan.fits:
        return "fits"
    if not plan.weights_fit:
        return "weights do not fit"
    if not plan.engine.starts:
        return "does not start" if plan.engine.refused_as == WOULD_NOT_START else "no request fits"
    batch = plan.sequences_per_replica * plan.replicas
    return f"{plan.max_sequences:,} of {batch:,} at once"


def print_engine_plan(console: Console, plan: MemoryPlan) -> None:
    """The memory table, then what the engine's start-up log would say and the plan's notes."""
    print_table(console, memory_table(plan))
    stops = not plan.engine.starts and plan.engine.refused_as == WOULD_NOT_START
    verb = "would stop at start-up" if stops else "would log"
    console.print(f"[bold]{ENGINE_TITLES[plan.engine.name]} {verb}[/bold]")
    for line in plan.engine.log_lines:
        console.print(f"  {escape(line)}")
    if not plan.engine.starts and not stops:  # it starts: why no request of this length is served
        console.print(f"  [red]{escape(plan.engine.refused_as)}:[/red] {escape(plan.engine.refusal or '')}")
    print_assumptions(console, plan.engine.notes, title="engine")


ENGINE_TITLES = ENGINE_NAMES


def print_assumptions(console: Console, notes: list[str], title: str = "assumed") -> None:
    for note in notes:
        console.print(f"[yellow]{title}:[/yellow] {escape(note)}")


def count_cell(n: int) -> str:
    return f"{n:,} ({format_count(n)})"
