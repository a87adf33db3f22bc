"""Capacity of a logged start-up: where each GiB went and what capped the server's concurrency.

A healthy start-up log already says how SGLang spent each GPU: free memory after distributed
init (``Load weight begin. avail mem=``), the weights (``Load weight end ... mem usage=``), the
recurrent-state pool (``Mamba Cache is allocated``), the KV pool (``KV Cache is allocated``),
CUDA graphs (``Capture ... graph end ... mem usage=``) and what stayed free
(``max_total_num_tokens=... available_gpu_mem=``).  This module reads those figures of one
rank, names what capped ``max_running_requests`` and ``max_total_num_tokens`` (a flag, the
speculative-decoding default, the mamba state pool, SGLang's token-based default, the KV
budget), says which flag raises each cap and at what cost, and sets the planner's prediction
(anchored on the log's figures, and from the flags alone on an idle GPU) beside what SGLang
logged.  Without a model config it still explains from the log alone.

Nothing here changes the planner; it calls ``planner.plan`` / ``planner.resolve`` as any
caller does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sglang_doctor.model import Launch, Milestone
from sglang_doctor.remedy import planner
from sglang_doctor.remedy.hardware import GPUProfile

GIB = 1 << 30
MIB = 1 << 20


@dataclass
class Row:
    """One line of the per-GPU budget: ``gb`` GiB, read from the log or derived from its figures."""

    name: str
    gb: float
    source: str  # "log" | "derived" (arithmetic on the log's figures)
    predicted_gb: float | None = None  # the planner's figure for the same item, when it has one

    def to_json(self) -> dict:
        out = {"name": self.name, "gb": round(self.gb, 3), "source": self.source}
        if self.predicted_gb is not None:
            out["predicted_gb"] = round(self.predicted_gb, 3)
        return out


@dataclass
class Cap:
    """What bounded one of SGLang's capacity figures, and how to move it."""

    name: str  # "max_running_requests" | "max_total_num_tokens"
    logged: int | None
    capped_by: str  # short key: flag | speculative_default | mamba_pool | token_default | kv_budget | ...
    explanation: str
    raise_with: list[str] = field(default_factory=list)  # flags that raise it (valid for the release)
    cost: str = ""
    predicted: int | None = None  # planner, anchored on the log's figures
    predicted_from_flags: int | None = None  # planner, from the flags alone on an idle GPU

    def to_json(self) -> dict:
        return {"name": self.name, "logged": self.logged, "predicted": self.predicted,
                "predicted_from_flags": self.predicted_from_flags, "capped_by": self.capped_by,
                "explanation": self.explanation, "raise_with": list(self.raise_with), "cost": self.cost}


@dataclass
class Capacity:
    launch_index: int
    rank: str | None
    version: str | None
    rows: list[Row]
    caps: list[Cap]
    figures: dict[str, Any]  # the log's figures this was computed from
    notes: list[str] = field(default_factory=list)
    headline: str = ""
    plan: Any = None  # planner.Plan anchored on the log's figures (None without a model config)
    flags_plan: Any = None  # planner.Plan from the flags alone

    def cap(self, name: str) -> Cap | None:
        return next((c for c in self.caps if c.name == name), None)

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "event": "capacity", "launch": self.launch_index, "rank": self.rank, "sglang_version": self.version,
            "headline": self.headline, "per_gpu_gb": [r.to_json() for r in self.rows],
            "caps": {c.name: c.to_json() for c in self.caps}, "figures": dict(self.figures), "notes": list(self.notes),
        }
        for c in self.caps:  # the numbers themselves, flat, as numbers
            out[c.name] = c.logged
        if self.plan is not None:
            out["predicted"] = {"weights_gb": self.figures.get("weights_estimate_gb"),
                                "max_total_num_tokens": self.plan.max_total_num_tokens,
                                "max_running_requests": self.plan.max_running_requests,
                                "mamba_cache_size": self.plan.mamba_cache_size}
        if self.flags_plan is not None:
            out["predicted_from_flags"] = {"max_total_num_tokens": self.flags_plan.max_total_num_tokens,
                                           "max_running_requests": self.flags_plan.max_running_requests,
                                           "mamba_cache_size": self.flags_plan.mamba_cache_size,
                                           "mem_fraction_static": round(self.flags_plan.mem_fraction_static, 4)}
        return out


# --------------------------------------------------------------------------------------------
# The log's figures
# --------------------------------------------------------------------------------------------

def _rank_of(launch: Launch) -> str | None:
    """The rank whose figures are read: TP0 when it reported its weights, else the first that did."""
    ranks = [m.rank for m in launch.milestones if m.name == "load_weights_end"]
    for rank in ranks:
        if rank and rank.split()[-1] in ("TP0", "TP0 EP0") or (rank and "TP0" in rank.split()):
            return rank
    if ranks:
        return ranks[0]
    return launch.milestones[0].rank if launch.milestones else None


def _of_rank(launch: Launch, rank: str | None) -> list[Milestone]:
    return [m for m in launch.milestones if m.rank == rank]


def log_figures(launch: Launch) -> dict[str, Any]:
    """The memory and capacity figures one rank of a launch logged (GiB, tokens, slots).

    Works across releases: a ``Load weight end`` without ``mem usage=`` (0.4.0-0.4.3.post2)
    takes ``begin - end``; a ``KV Cache is allocated`` without ``#tokens`` (0.4.1.post6-0.4.3.post2)
    leaves the token count to ``max_total_num_tokens=``.  The first weights/pool milestones are
    the target model's; later ones (a speculative draft worker) are counted as draft.
    """
    rank = _rank_of(launch)
    ms = _of_rank(launch, rank)
    f: dict[str, Any] = {}
    begins = [m for m in ms if m.name == "load_weights_begin" and "avail_mem_gb" in m.figures]
    ends = [m for m in ms if m.name == "load_weights_end"]
    for m in ms:
        if m.name in ("distributed_end", "memory_baseline") and "mem_usage_gb" in m.figures:
            f["init_gb"] = m.figures["mem_usage_gb"]
            break
    if begins:
        f["pre_gb"] = begins[0].figures["avail_mem_gb"]
    weights = []
    for i, end in enumerate(ends):
        used = end.figures.get("mem_usage_gb")
        begin = _last_before(ms, "load_weights_begin", end)
        if used is None and begin is not None and "avail_mem_gb" in end.figures:
            used = round(begin.figures["avail_mem_gb"] - end.figures["avail_mem_gb"], 2)
        if used is not None:
            weights.append(float(used))
        if i == 0 and "avail_mem_gb" in end.figures:
            f["after_weights_gb"] = end.figures["avail_mem_gb"]
        if i == 0 and end.figures.get("quant"):
            f["quant"] = end.figures["quant"]
    if weights:
        f["weights_gb"] = weights[0]
        if "pre_gb" not in f and "after_weights_gb" in f:  # an excerpt without "Load weight begin"
            f["pre_gb"] = round(f["after_weights_gb"] + weights[0], 2)
            f["pre_derived"] = True
        if len(weights) > 1:
            f["draft_weights_gb"] = round(sum(weights[1:]), 2)
    kvs = [m for m in ms if m.name == "kv_cache"]
    if kvs:
        first = kvs[0].figures
        size = first.get("kv_gb", (first.get("k_gb") or 0) + (first.get("v_gb") or 0))
        f["kv_gb"] = size
        if "tokens" in first:
            f["kv_tokens"] = first["tokens"]
        if "k_gb" in first:
            f["k_gb"] = first["k_gb"]
        if len(kvs) > 1:
            f["draft_kv_gb"] = round(sum(m.figures.get("kv_gb", (m.figures.get("k_gb") or 0) + (m.figures.get("v_gb") or 0))
                                         for m in kvs[1:]), 2)
    swa = next((m for m in ms if m.name == "swa_kv_cache"), None)
    if swa is not None:  # 0.5.3.post3-0.5.17 sliding-window models: one figure for both pools
        f["kv_gb"] = swa.figures.get("kv_gb", f.get("kv_gb"))
        f["kv_tokens"] = swa.figures.get("tokens", f.get("kv_tokens"))
        f["swa_tokens"] = swa.figures.get("swa_tokens")
        f.pop("draft_kv_gb", None)
    mamba = next((m for m in ms if m.name == "mamba_cache"), None)
    if mamba is not None:
        fig = mamba.figures
        f["mamba_state_gb"] = round((fig.get("conv_state_gb") or 0) + (fig.get("ssm_state_gb") or 0), 2)
        inter = (fig.get("intermediate_ssm_gb") or 0) + (fig.get("intermediate_conv_gb") or 0)
        if inter:
            f["mamba_intermediate_gb"] = round(inter, 2)
        if "max_mamba_cache_size" in fig:
            f["mamba_cache_size"] = fig["max_mamba_cache_size"]
    cap = next((m for m in launch.milestones if m.name == "mamba_running_cap"), None)
    if cap is not None:  # 0.5.17+: SGLang says so itself
        for key, out in (("slots_per_request", "mamba_slots_per_request"), ("max_running_requests", "mamba_running_cap"),
                         ("max_mamba_cache_size", "mamba_cache_size")):
            if key in cap.figures:
                f.setdefault(out, cap.figures[key])
    pool_end = next((m for m in ms if m.name == "memory_pool_end" and "avail_mem_gb" in m.figures), None)
    if pool_end is not None:
        f["after_pools_gb"] = pool_end.figures["avail_mem_gb"]
    graphs = [m for m in ms if m.name == "cuda_graph_end" and "mem_usage_gb" in m.figures]
    if graphs:
        f["cuda_graph_gb"] = round(sum(max(float(m.figures["mem_usage_gb"]), 0.0) for m in graphs), 2)
    sched = next((m for m in reversed(launch.milestones) if m.name == "max_total_num_tokens"
                  and "max_total_num_tokens" in m.figures and m.rank == rank), None)
    if sched is None:
        sched = next((m for m in reversed(launch.milestones) if m.name == "max_total_num_tokens"
                      and "max_total_num_tokens" in m.figures), None)
    if sched is not None:
        for key in ("max_total_num_tokens", "max_running_requests", "context_len", "chunked_prefill_size",
                    "max_prefill_tokens"):
            if key in sched.figures:
                f[key] = sched.figures[key]
        if "available_mem_gb" in sched.figures:
            f["free_at_serving_gb"] = sched.figures["available_mem_gb"]
    if "max_running_requests" not in f and "mamba_running_cap" in f:
        f["max_running_requests"] = f["mamba_running_cap"]
    if "free_at_serving_gb" not in f:
        last = [m for m in ms if m.name in ("cuda_graph_end", "memory_pool_end") and "avail_mem_gb" in m.figures]
        if last:
            f["free_at_serving_gb"] = last[-1].figures["avail_mem_gb"]
    f["rank"] = rank
    return f


def _last_before(ms: list[Milestone], name: str, end: Milestone) -> Milestone | None:
    found = None
    for m in ms:
        if m is end:
            break
        if m.name == name:
            found = m
    return found


def observed(launch: Launch) -> dict:
    """``planner.observed_from_launch`` with the figures older formats leave out filled in.

    0.4.0-0.4.3.post2 print ``Load weight end`` without ``mem usage=``; the planner's reader then
    reports 0 GiB of weights, so the weights become ``begin - end`` here.
    """
    obs = planner.observed_from_launch(launch)
    f = log_figures(launch)
    if not obs.get("weights_gb") and "weights_gb" in f:
        obs["weights_gb"] = f["weights_gb"]
    if "avail_mem_before_weights_gb" not in obs and "weights_gb" in f and "after_weights_gb" in f:
        # an excerpt without "Load weight begin": mem usage = before - after (model_runner.py, every release)
        obs["avail_mem_before_weights_gb"] = round(f["after_weights_gb"] + f["weights_gb"], 2)
    return obs


# --------------------------------------------------------------------------------------------
# Building the explanation
# --------------------------------------------------------------------------------------------

def _flag_names(version: str | None, candidates: list[str]) -> list[str]:
    """The candidates that exist in that release's flag catalogue (all of them when unknown)."""
    if not version:
        return candidates
    try:
        from sglang_doctor.remedy import flags

        catalog = flags.load_catalog(version, prefer_shipped=True)
    except Exception:  # noqa: BLE001 - no catalogue: do not filter
        return candidates
    out = []
    for name in candidates:
        try:
            spec = catalog.spec(name)
        except Exception:  # noqa: BLE001 - an ambiguous prefix is not this flag
            spec = None
        if spec is not None:
            out.append(spec.name if getattr(spec, "name", None) else name)
    return out


def from_launch(launch: Launch, model_config: dict | None = None, version: str | None = None,
                hw: GPUProfile | None = None) -> Capacity | None:
    """The capacity explanation of a launch that got its pools sized, else None."""
    f = log_figures(launch)
    if "max_total_num_tokens" not in f and "kv_gb" not in f:
        return None
    args = dict(launch.server_args or {})
    rows = _rows(f)
    plan = flags_plan = st = None
    notes: list[str] = []
    if model_config is not None and version:
        try:
            from sglang_doctor.remedy import hardware as hardware_mod

            shape = planner.model_shape(model_config)
            # the launch's measured memory, else the --gpus profile; either with the GPU the log names
            hw_used = hardware_mod.from_log(launch) or hardware_mod.with_machine(
                hw, hardware_mod.read_machine(launch.machine_lines))
            if hw_used is not None:
                st = planner.resolve(shape, hw_used, args, version)
                plan = planner.plan(model_config, hw_used, args, version, observed(launch))
                flags_plan = planner.plan(model_config, hw_used, args, version)
                f["weights_estimate_gb"] = round(planner.weights_gb(shape, st.tp, attn_tp=st.attn_tp) / st.pp, 2)
                if plan.cell_bytes:
                    f["kv_bytes_per_token_predicted"] = plan.cell_bytes
        except (KeyError, ValueError, TypeError, ZeroDivisionError) as exc:
            notes.append(f"the planner could not read the model config ({type(exc).__name__}: {exc})")
            plan = flags_plan = st = None
    elif model_config is None:
        notes.append("pass --model-config (the model's config.json) for the planner's prediction beside the log's")
    if "kv_tokens" not in f and f.get("max_total_num_tokens") and f.get("kv_gb"):
        f["kv_tokens"] = f["max_total_num_tokens"]
    if f.get("kv_bytes_per_token_predicted"):
        f["kv_bytes_per_token"] = f["kv_bytes_per_token_predicted"]
    elif f.get("kv_tokens") and f.get("kv_gb"):  # from GiB printed with two decimals: approximate
        f["kv_bytes_per_token"] = round(f["kv_gb"] * GIB / f["kv_tokens"])
    caps = [_tokens_cap(f, args, st, version), _running_cap(f, args, st, version)]
    for c in caps:
        if plan is not None:
            c.predicted = plan.max_total_num_tokens if c.name == "max_total_num_tokens" else plan.max_running_requests
        if flags_plan is not None:
            c.predicted_from_flags = (flags_plan.max_total_num_tokens if c.name == "max_total_num_tokens"
                                      else flags_plan.max_running_requests)
    caps = [c for c in caps if c.logged is not None or c.explanation]
    if plan is not None:
        _add_predictions(rows, plan, f)
    cap = Capacity(launch.index, f.get("rank"), version, rows, caps, f, notes, plan=plan, flags_plan=flags_plan)
    cap.headline = _headline(f)
    return cap


def _rows(f: dict) -> list[Row]:
    rows: list[Row] = []
    pre = f.get("pre_gb")
    if "init_gb" in f and pre is not None:
        rows.append(Row("distributed init (NCCL, CUDA context)", f["init_gb"], "log"))
    if "weights_gb" in f:
        rows.append(Row("weights" + (f" ({f['quant']})" if f.get("quant") else ""), f["weights_gb"], "log"))
    if "draft_weights_gb" in f:
        rows.append(Row("draft model weights", f["draft_weights_gb"], "log"))
    if "mamba_state_gb" in f:
        slots = f.get("mamba_cache_size")
        rows.append(Row("mamba state pool" + (f" ({slots} slots)" if slots else ""), f["mamba_state_gb"], "log"))
    if "mamba_intermediate_gb" in f:
        rows.append(Row("mamba speculative intermediate states", f["mamba_intermediate_gb"], "log"))
    if "kv_gb" in f:
        tokens = f.get("kv_tokens") or f.get("max_total_num_tokens")
        rows.append(Row("KV cache pool" + (f" ({tokens} tokens)" if tokens else ""), f["kv_gb"], "log"))
    if "draft_kv_gb" in f:
        rows.append(Row("other KV pools (draft model, labelled pools)", f["draft_kv_gb"], "log"))
    after_w, after_p = f.get("after_weights_gb"), f.get("after_pools_gb")
    if after_w is not None and after_p is not None:
        pools = sum(f.get(k, 0.0) for k in ("mamba_state_gb", "mamba_intermediate_gb", "kv_gb"))
        other = after_w - after_p - pools
        if other > 0.005:
            rows.append(Row("other pool buffers (req_to_token, allocator)", other, "derived"))
    if "cuda_graph_gb" in f:
        rows.append(Row("CUDA graphs", f["cuda_graph_gb"], "log"))
    free = f.get("free_at_serving_gb")
    if pre is not None and free is not None:
        accounted = sum(r.gb for r in rows if not r.name.startswith("distributed init"))
        rest = pre - accounted - free
        if abs(rest) > 0.005:
            parts = [] if after_p is not None else ["request pool"]
            if "cuda_graph_gb" not in f:
                parts.append("CUDA graphs")
            parts += ["backend buffers", "rounding"]
            rows.append(Row(f"other ({', '.join(parts)})", rest, "derived"))
    if free is not None:
        rows.append(Row("free while serving (activations, prefill)", free, "log"))
    return rows


def _add_predictions(rows: list[Row], plan, f: dict) -> None:
    """The planner's figure beside each logged row: weights from the config, pools from the log's budget."""
    planned = {name.split(" (")[0]: gb for name, gb in plan.rows}
    for row in rows:
        key = row.name.split(" (")[0]
        if key == "weights" and "weights_estimate_gb" in f:
            row.predicted_gb = f["weights_estimate_gb"]
        elif key in ("mamba state pool", "KV cache pool") and key in planned:
            row.predicted_gb = planned[key]
        elif key == "CUDA graphs" and "cuda graphs" in planned:
            row.predicted_gb = planned["cuda graphs"]


def _tokens_cap(f: dict, args: dict, st, version: str | None) -> Cap:
    logged = f.get("max_total_num_tokens") or f.get("kv_tokens")
    flag_value = args.get("max_total_tokens")
    if flag_value and logged is not None and int(flag_value) >= logged and int(flag_value) - logged < 4096:
        return Cap("max_total_num_tokens", logged, "flag",
                   f"--max-total-tokens {flag_value} (the pool holds {logged} tokens, page-aligned)",
                   _flag_names(version, ["--max-total-tokens"]), "more KV memory, less free memory")
    pre, after = f.get("pre_gb"), f.get("after_weights_gb")
    mfs = args.get("mem_fraction_static") or (st.mfs if st is not None else None)
    per_token = f.get("kv_bytes_per_token") or f.get("kv_bytes_per_token_predicted")
    parts = []
    if pre is not None and after is not None and mfs:
        reserve = pre * (1 - float(mfs))
        parts.append(f"the pools may use what the weights left ({after:.2f} GiB) minus SGLang's reserve "
                     f"for activations and graphs, {pre:.2f} x (1 - {float(mfs):.3f}) = {reserve:.2f} GiB, "
                     f"i.e. {after - reserve:.2f} GiB")
    if f.get("mamba_state_gb"):
        parts.append(f"the mamba state pool took {f['mamba_state_gb'] + f.get('mamba_intermediate_gb', 0):.2f} GiB "
                     f"of that first")
    if per_token and logged:
        approx = "" if f.get("kv_bytes_per_token_predicted") else "~"
        parts.append(f"{f.get('kv_gb', logged * per_token / GIB):.2f} GiB of KV at {approx}{int(per_token)} bytes "
                     f"per token = {logged} tokens")
    raise_with = _flag_names(version, ["--mem-fraction-static", "--kv-cache-dtype"])
    cost = ""
    if pre is not None and per_token:
        step = int(pre * 0.01 * GIB / per_token)
        cost = (f"each +0.01 of --mem-fraction-static moves {pre * 0.01:.2f} GiB from the free reserve to the KV pool "
                f"(+{step} tokens); an fp8 KV cache (--kv-cache-dtype fp8_e5m2) doubles the tokens per GiB")
    if f.get("mamba_state_gb"):
        raise_with += _flag_names(version, ["--mamba-full-memory-ratio", "--max-mamba-cache-size"])
        cost += ("; a smaller mamba pool (--mamba-full-memory-ratio, --max-mamba-cache-size) gives its memory to KV "
                 "but lowers max_running_requests")
    explanation = "the KV budget: " + "; ".join(parts) if parts else "the KV budget left after weights and reserve"
    ctx = f.get("context_len")
    if logged and ctx:
        explanation += f"; {_full_requests(logged, ctx)}"
    return Cap("max_total_num_tokens", logged, "kv_budget", explanation, raise_with, cost)


def _running_cap(f: dict, args: dict, st, version: str | None) -> Cap:
    logged = f.get("max_running_requests")
    tokens = f.get("max_total_num_tokens")
    ctx = f.get("context_len")
    flag = args.get("max_running_requests")
    spec = args.get("speculative_algorithm")
    dp = int(args.get("dp_size") or 1) if args.get("enable_dp_attention") else 1
    K = f.get("mamba_cache_size")
    ratio = f.get("mamba_slots_per_request") or (st.mamba_ratio if st is not None and K else None)
    if K and ratio is None and logged:
        ratio = max(1, K // logged) if K >= logged else None
    candidates: list[tuple[str, int]] = []
    if K and ratio:
        candidates.append(("mamba_pool", K // ratio))
    if flag and spec and int(flag) == 48:
        # the dump shows the resolved value: 48 is also what speculative decoding sets when the flag is
        # absent (0.5.9 server_args.py:2365; 0.5.23 arg_groups/speculative_hook.py:1093)
        candidates.append(("speculative_default", 48 // dp))
    elif flag:
        candidates.append(("flag", int(flag) // dp))
    elif spec:
        candidates.append(("speculative_default", 48 // dp))
    if tokens and ctx:
        est = min(max(int(tokens / ctx * 512), 2048), 4096)
        old = version is not None and planner._vtuple(version) < (0, 4, 7)
        candidates.append(("token_default", est + 1 if old else est))
        if not old and logged == est + 1:  # 0.4.0-0.4.6 size the request pool one larger: a sign of the release
            candidates.append(("token_default_plus_one", est + 1))
        candidates.append(("half_the_tokens", tokens // 2))
    binding = next((name for name, value in candidates if logged is not None and value == logged), None)
    values = dict(candidates)
    if logged is None:  # an excerpt without the scheduler's line: the smallest known cap binds
        if not candidates or (K and not ratio):
            return Cap("max_running_requests", None, "unknown", "")
        binding, expected = min(candidates, key=lambda kv: kv[1])
        cap = _running_cap({**f, "max_running_requests": expected}, args, st, version)
        cap.logged = None
        cap.explanation += " (the log excerpt does not print max_running_requests; this is what these figures give)"
        return cap
    if binding == "mamba_pool":
        per_req = ""
        if st is not None and f.get("mamba_state_gb") and K:
            slot = f["mamba_state_gb"] * GIB / K
            per_req_bytes = slot * ratio
            per_token = f.get("kv_bytes_per_token") or 0
            tok = f" = {int(per_req_bytes / per_token)} KV tokens" if per_token else ""
            per_req = (f"each extra running request costs {ratio} x {slot / MIB:.2f} MiB = {per_req_bytes / MIB:.2f} MiB "
                       f"of state{tok}")
        elif f.get("mamba_state_gb") and K:
            slot = f["mamba_state_gb"] * GIB / K
            per_req = f"each extra running request costs {ratio} x {slot / MIB:.2f} MiB of state"
        why = (f"the mamba state pool: {K} slots / {ratio} per request = {logged} requests"
               + (" (the radix cache keeps extra state copies per request)" if ratio > 1 else ""))
        return Cap("max_running_requests", logged, "mamba_pool", why,
                   _flag_names(version, ["--max-mamba-cache-size", "--mamba-full-memory-ratio"]),
                   per_req + (" taken from the KV pool" if per_req else ""))
    if binding == "flag":
        return Cap("max_running_requests", logged, "flag", f"--max-running-requests {flag}"
                   + (f" / dp {dp}" if dp > 1 else ""), _flag_names(version, ["--max-running-requests"]),
                   "more concurrent requests share the same KV pool")
    if binding == "speculative_default":
        return Cap("max_running_requests", logged, "speculative_default",
                   f"speculative decoding ({spec}): SGLang sets max_running_requests to 48 when "
                   "--max-running-requests is not given" + (" (the dump cannot tell that from the flag set to 48)"
                                                            if flag else ""),
                   _flag_names(version, ["--max-running-requests"]),
                   "more requests need more draft-token state and KV per step")
    if binding in ("token_default", "half_the_tokens", "token_default_plus_one"):
        why = (f"SGLang's default from the KV pool: {tokens} tokens / context {ctx} x 512, clamped to 2048..4096"
               if binding != "half_the_tokens" else f"half the KV pool's tokens ({tokens} // 2)")
        if binding == "token_default_plus_one":
            why += (", plus one: the request pool of 0.4.0-0.4.6 (this log is likely from those releases, "
                    f"not {version})")
            binding = "token_default"
        room = f"; {_full_requests(tokens, ctx)}" if tokens and ctx else ""
        return Cap("max_running_requests", logged, binding, why + room,
                   _flag_names(version, ["--max-running-requests"]), "")
    expected = ", ".join(f"{k}={v}" for k, v in values.items())
    return Cap("max_running_requests", logged, "unexplained",
               f"logged {logged}; none of the known caps gives it ({expected or 'no figures to compare'})")


def _full_requests(tokens: int, ctx: int) -> str:
    """How many requests of the full context the KV pool holds at once, as a phrase."""
    n = tokens // ctx
    if n == 0:
        return f"the KV pool holds less than one full-context ({ctx}-token) request"
    return f"the KV pool holds {n} full-context ({ctx}-token) request{'s' if n != 1 else ''} at once"


def _headline(f: dict) -> str:
    mrr, tokens, ctx = f.get("max_running_requests"), f.get("max_total_num_tokens"), f.get("context_len")
    if mrr is None and tokens is None:
        return ""
    bits = []
    if mrr is not None:
        bits.append(f"at most {mrr} requests run at once")
    if tokens is not None:
        bits.append(f"{tokens} KV tokens" + (f" ({_full_requests(tokens, ctx)})" if ctx else ""))
    return "this server: " + "; ".join(bits)


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------

def render_text(c: Capacity, indent: str = "  ") -> str:
    lines = [f"{indent}capacity of launch {c.launch_index + 1}" + (f" (figures of {c.rank})" if c.rank else "")
             + (f", SGLang {c.version}" if c.version else "") + (f": {c.headline}" if c.headline else "")]
    pre = c.figures.get("pre_gb")
    if pre is not None:
        how = " (weights + what they left)" if c.figures.get("pre_derived") else ""
        lines.append(f"{indent}  per GPU, of {pre:.2f} GiB free after distributed init{how}:")
    for r in c.rows:
        mark = "" if r.source == "log" else "  (derived)"
        gb = 0.0 if abs(r.gb) < 0.005 else r.gb  # no "-0.00"
        pred = f"  (planner {r.predicted_gb:.2f})" if r.predicted_gb is not None else ""
        lines.append(f"{indent}    {r.name:<52} {gb:8.2f} GiB{mark}{pred}")
    for cap in c.caps:
        pred = []
        if cap.predicted is not None:
            pred.append(f"planner {cap.predicted}")
        if cap.predicted_from_flags is not None:
            pred.append(f"from flags alone {cap.predicted_from_flags}")
        shown = cap.logged if cap.logged is not None else "(not logged)"
        lines.append(f"{indent}  {cap.name}={shown}" + (f" (predicted: {', '.join(pred)})" if pred else "")
                     + f" - capped by {cap.explanation}")
        if cap.raise_with:
            lines.append(f"{indent}    raise it with {' / '.join(cap.raise_with)}"
                         + (f": {cap.cost.lstrip('; ')}" if cap.cost else ""))
    if c.plan is not None and "weights_estimate_gb" in c.figures and "weights_gb" in c.figures:
        lines.append(f"{indent}  weights: logged {c.figures['weights_gb']:.2f} GiB, "
                     f"config estimate {c.figures['weights_estimate_gb']:.2f} GiB")
    lines += [f"{indent}  note: {n}" for n in c.notes]
    return "\n".join(lines)
