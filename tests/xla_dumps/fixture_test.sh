#!/usr/bin/env bash
# fixture_test.sh FXPLAIN — XLA's own dumps loaded as stages, on the committed fixture data/mlp
# (a real XLA:GPU dump of data/mlp.py made by make_dumps.py: the fusion pipeline's snapshots,
# before/after optimizations, and priority-fusion's decision log), then the bad dumps: each gets
# one clear error and the session goes on (--keep-going runs the next command).
set -u
FX=$1
D=tests/xla_dumps/data/mlp
fail=0
check() { # check NAME PATTERN TEXT
  if ! grep -qF -- "$2" <<<"$3"; then echo "FAIL $1: expected '$2' in:"; echo "$3" | head -40; fail=1; fi
}
out=$("$FX" -e "load $D; passes; goto 6; passes; goto priority-fusion; decisions --pass priority-fusion; why triton_softmax.3 exp.1.0; why tanh.0 exp.1.0; find mlp.py:10; find jit(f)/layer; back; stage; pipeline" 2>&1)
check listing "> 0001   jit_f" "$out"
check log_counts "XLA's priority-fusion log: 2 fusions, 4 ineligible producers, 3 priority updates; stage 2" "$out"
check stages "pipeline xla: 7 stages" "$out"
# XLA's counts and fxplain's apart (they were added up: "4 fused, 3 priority, 4 rejected").
check stage_summary "stage 2  priority-fusion: XLA: 2 fused, 4 ineligible, 3 priority updates; fxplain: 2 fused; they agree on every step" "$out"
check every_stage_loads "    6     adding_special-case_copies" "$out"
check xla_fusion "XLA fused triton_softmax.3 into exp.1.0, making fusion.5 (step 4; its cost model: 1.012 us fused vs 2.026 us unfused); fxplain agrees, it fuses it" "$out"
check xla_reason 'XLA: gemm_fusion_dot_general.1 is not fused: "the producer is not fusible" (step 3)' "$out"
check reason_code "priority-fusion  fuse  gemm_fusion_dot_general.1  rejected [not_fusible]" "$out"
check both_verdicts "fxplain-priority-fusion  fuse  triton_softmax.3 -> exp.1.0" "$out"
# fxplain names a fusion consumer by the instruction of its body that reads the producer
# (reduce_sum.1 inside triton_softmax.2), XLA by the fusion: the same pair, no DISAGREE.
check fusion_consumer_agrees "making triton_softmax.2 (step 7; its cost model: 1.029 us fused vs 2.018 us unfused); fxplain agrees, it fuses it" "$out"
if grep -qF "DISAGREE" <<<"$out"; then echo "FAIL no_spurious_disagree:"; grep -F DISAGREE <<<"$out"; fail=1; fi
check source_in_why "source of tanh.0: /tmp/fxplain-dumps/mlp.py:10 in f (jit(f)/layer/tanh)" "$out"
check find_line "5 instructions from mlp.py:10 at stage 2, in 1 kernel: gemm_fusion_dot_general.1" "$out"
check find_scope "5 instructions from jit(f)/layer at stage 2, in 1 kernel: gemm_fusion_dot_general.1" "$out"
check back "stage 1 of 6 (xla pipeline)" "$out"

out=$("$FX" --json -e "load $D" 2>&1)
check json '"fusion_log":{"fusions":2,"ineligible":4,"priority_updates":3}' "$out"

out=$("$FX" -e "load $D/module_0001.jit_f.priority_fusion_dump.txt; step; kernels" 2>&1)
check log_alone "loaded jit_f (module -)" "$out"
check replayed "stage 1  priority-fusion" "$out"

out=$("$FX" -e "load $D --module 7" 2>&1)
check no_such_module "the dump has no module '7' (modules: jit_f (0001))" "$out"

# Older dumps: metadata={source_file=... source_line=...} (a corpus module from openxla/xla).
out=$("$FX" -e "load tests/data/hlo-corpus/gemma3_1b_flax_call.hlo; find run_once_1b.py:22; find layer_9/attn" 2>&1)
check old_metadata "8102 instructions from run_once_1b.py:22 at stage 0, in 6331 kernels" "$out"
check old_scope "instructions from layer_9/attn at stage 0" "$out"
out=$("$FX" --json -e "load $D; goto priority-fusion; find mlp.py:10" 2>&1)
check find_json '"kernels":["gemm_fusion_dot_general.1"]' "$out"

out=$("$FX" -e "compare-modules $D $D" 2>&1)
check compare "XLA's priority-fusion: the same 2 fusions, in the same order, in both" "$out"
# Two stages of the same program: the kernels and the memory of intermediate buffers that changed
# (the dump's module before optimizations against its optimized module).
out=$("$FX" -e "compare-modules $D/module_0001.jit_f.before_optimizations.txt $D/module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt" 2>&1)
check compare_memory "memory for intermediate buffers: A " "$out"
out=$("$FX" --json -e "compare-modules $D/module_0001.jit_f.before_optimizations.txt $D/module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt" 2>&1)
check compare_memory_json '"memory_bytes":' "$out"
check compare_only_json '"only_in_b":[{"fusion":' "$out"
out=$(FXPLAIN_PYTHON=/nonexistent/python "$FX" -e "load tests/xla_dumps/data/forms/dotted_names.hlo; xla" 2>&1)
check xla_without_wheels "pip install jax==0.10.2 jaxlib==0.10.2 jax-cuda13-plugin==0.10.2 jax-cuda13-pjrt==0.10.2" "$out"
out=$("$FX" -e "load $D; goto priority-fusion; show graph" 2>&1)
check graph_sources "gemm_fusion_dot_general.1    mlp.py:10, mlp.py:11" "$out"
# The user's own names (XLA's op_name without jit(f)/) in show graph and why.
check graph_jax_names "JAX names: layer/dot_general layer/add layer/tanh mul" "$out"
out=$("$FX" -e "load $D; goto priority-fusion; why tanh.0" 2>&1)
check why_jax_name "tanh.0 (JAX: layer/tanh): tanh f32[64,32]{1,0}" "$out"
out=$("$FX" -e "load $D; goto priority-fusion; why tanh.0 exp.1.0" 2>&1)
check why_pair_jax_names "in your program: tanh.0 is layer/tanh, exp.1.0 is exp" "$out"

T=$(mktemp -d)
# The report steps through XLA's decisions in its order, fxplain's verdict beside each, offline.
out=$("$FX" -e "load $D; goto priority-fusion; report $T/xla.html" 2>&1)
html=$(cat "$T/xla.html" 2>/dev/null)
check report_steps "<h3>XLA's decisions, step by step</h3>" "$html"
check report_counts "XLA's own priority-fusion log: 2 fusions, 4 ineligible producers, 3 priority updates. Beside each, fxplain's verdict on the same pair: 0 disagreements." "$html"
check report_ineligible '<td>producer_ineligible</td><td><code>gemm_fusion_dot_general.1</code></td><td><code></code></td><td>the producer is not fusible</td>' "$html"
check report_times '<td class="num">1.029 / 2.018</td><td>fuses</td><td class="num">1.029 / 2.018</td>' "$html"
n=$(grep -c 'class="xs"' <<<"$html")
[ "$n" = 9 ] || { echo "FAIL report_rows: $n step rows, expected 9"; fail=1; }
if grep -qE '(src|href)="https?:' <<<"$html"; then echo "FAIL report_offline: fetches something"; fail=1; fi
# Each step has its picture (a template the page shows with the step): the pair highlighted on the
# module priority-fusion received, a fusion XLA made earlier in the pass drawn as its root.
n=$(grep -c '<template id="xla-steps-2-pic-' <<<"$html")
[ "$n" = 9 ] || { echo "FAIL report_step_pictures: $n pictures, expected one per step (9)"; fail=1; }
step7=$(sed -n '/<template id="xla-steps-2-pic-6">/,/<\/template>/p' <<<"$html")
check report_step_title '>decision #10</text>' "$step7"
check report_step_stage ' · stage 2 · priority&#45;fusion (XLA) · fusion</text>' "$step7"
check report_step_root 'XLA step 7: fusion, making triton_softmax.2; fusion.5 drawn as exp.1.0, its root' "$step7"
check report_step_highlight '<title>exp.1.0</title>' "$step7"
grep -A8 '<title>exp.1.0</title>' <<<"$step7" | grep -q 'stroke="#2a7a2a" stroke-width="3"' ||
  { echo "FAIL report_step_highlight: exp.1.0 is not drawn highlighted in step 7's picture"; fail=1; }
# `render --decision N` draws one of XLA's steps that names a fusion made earlier in the pass.
out=$("$FX" -e "load $D; goto priority-fusion; render $T/d10.dot --decision 10" 2>&1)
check render_xla_step "d10.dot: decision #10 (stage 2, priority-fusion accepted)" "$out"
check render_xla_step_root "fusion.5 is drawn as exp.1.0, its root; XLA fused fusion.5 into triton_softmax.2" "$(cat "$T/d10.dot" 2>/dev/null)"
# The steps as JSON in the page: XLA's counts, its words and times, fxplain's verdict.
python3 - "$T/xla.html" <<'PY' || fail=1
import json, re, sys
html = open(sys.argv[1]).read()
m = re.search(r'<script type="application/json" class="xla-steps-data">(.*?)</script>', html, re.S)
steps = json.loads(m.group(1)) if m else []
kinds = [s["kind"] for s in steps]
want = {"fusion": 2, "producer_ineligible": 4, "update_priority": 3}
got = {k: kinds.count(k) for k in want}
s7 = [s for s in steps if s["step"] == 7]
ok = got == want and len(steps) == 9 and all(s["picture"] for s in steps) and s7 and s7[0]["fusion"] == "triton_softmax.2" \
    and s7[0]["xla_us"] == {"fused": 1.02925, "unfused": 2.0185} and s7[0]["fxplain"]["verdict"] == "fuses" \
    and not any(s["disagree"] for s in steps)
if not ok:
    print("FAIL report_steps_json:", got, s7)
    sys.exit(1)
PY
out=$("$FX" -e "load $D; goto priority-fusion; render $T/scopes.dot --group scope; render $T/scopes1.dot --group scope --depth 1" 2>&1)
check scope_render "stage 2 by JAX name scope, 3 scopes" "$out"
check scope_dot "layer" "$(cat "$T/scopes.dot" 2>/dev/null)"
check scope_depth "scopes1.dot: stage 2 by JAX name scope" "$out"
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/empty" "$T/trunc" "$T/stranger" "$T/badlog"
cp $D/*.txt "$T/trunc/"
f=$(ls "$T"/trunc/*after_priority-fusion*)
head -c 1500 "$f" > "$f.cut" && mv "$f.cut" "$f"
cp $D/*.txt "$T/stranger/"
sed -i 's/producer_name: "gemm_fusion_dot_general.1"/producer_name: "no_such_instr.7"/' "$T"/stranger/*priority_fusion_dump.txt
cp $D/*.txt "$T/badlog/"
head -n 12 $D/module_0001.jit_f.priority_fusion_dump.txt > "$T"/badlog/module_0001.jit_f.priority_fusion_dump.txt

out=$("$FX" --keep-going -e "load $T/empty; echo still here" 2>&1)
check empty_dir "is a directory, and not an XLA dump: it holds no module_NNNN.NAME.*.txt files" "$out"
check goes_on "still here" "$out"
out=$("$FX" --keep-going -e "load $T/trunc; goto priority-fusion; stage; echo still here" 2>&1)
check truncated "stage 2: XLA's snapshot module_0001.jit_f.0001.fusion.after_priority-fusion.before_cse.txt does not load" "$out"
check truncated_goes_on "stage 0 of 6 (xla pipeline)" "$out"
out=$("$FX" --keep-going -e "load $T/stranger; echo still here" 2>&1)
check stranger "XLA's fusion log names 'no_such_instr.7', which is not an instruction of module jit_f" "$out"
check stranger_goes_on "still here" "$out"
out=$("$FX" --keep-going -e "load $T/badlog; echo still here" 2>&1)
check truncated_log "XLA's fusion log is malformed: the file ends inside a block (truncated?)" "$out"
check badlog_goes_on "still here" "$out"
[ $fail = 0 ] && echo "ok: xla dump fixture"
exit $fail
