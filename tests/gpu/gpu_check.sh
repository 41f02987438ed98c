#!/usr/bin/env bash
# The GPU check of the cuda option, run on a machine with a GPU (docs/GPU.md), under five minutes:
#   tests/gpu/gpu_check.sh BUNDLE OUT_DIR
# BUNDLE is what tests/gpu/bundle.sh made of a build (bin/leakscope, lib/libleakscope.so and the
# libraries they need), or a build directory on a machine that has those. Builds its CUDA programs
# with nvcc, runs each untraced and under `leakscope run --cuda`, checks the leak sites and bytes,
# compares c10_cuda with torch.cuda.memory_allocated() and cuda with memory_reserved() and the
# device peak with max_memory_allocated(), times both runs, and writes everything to OUT_DIR/gpu_check.txt. Exits 1 when a check fails.
set -uo pipefail
bundle=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
log="$out/gpu_check.txt"
leakscope="$bundle/bin/leakscope"
python=${PYTHON:-python3}
failures=0

say() { printf '%s\n' "$*" | tee -a "$log"; }
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then say "PASS $name"; else say "FAIL $name"; failures=$((failures + 1)); fi
}
timed() {  # timed SECONDS-VAR COMMAND...: runs it, stores the wall time
  local var=$1; shift
  local start end
  start=$(date +%s.%N)
  "$@" >>"$log" 2>&1
  local status=$?
  end=$(date +%s.%N)
  printf -v "$var" '%.2f' "$("$python" -c "print($end - $start)")"
  return $status
}
json() { "$python" -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

: >"$log"
say "leakscope GPU check, $(date -u '+%Y-%m-%d %H:%M UTC')"
say "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
say "nvcc: $(nvcc --version 2>&1 | tail -1)"
say "torch: $("$python" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1 | tail -1)"
say "libraries not found: $(ldd "$bundle/lib/libleakscope.so" "$leakscope" 2>&1 | grep -c 'not found')"

work=$(mktemp -d)
nvcc -g -O1 -o "$work/leak_cuda_malloc" "$here/leak_cuda_malloc.cu" >>"$log" 2>&1 || { say "FAIL nvcc"; exit 1; }

for mode in sync async; do
  timed untraced "$work/leak_cuda_malloc" "$mode"
  timed traced "$leakscope" run --cuda -o "$work/$mode.lsc" -- "$work/leak_cuda_malloc" "$mode"
  "$leakscope" dump --format json "$work/$mode.lsc" >"$work/$mode.json" 2>>"$log"
  kept=$(json "$work/$mode.json" "sum(s['live_bytes'] for s in d['sites'] if s['domain']=='cuda' and any('keep_buffer' in (f.get('function') or '') for f in s['frames']))")
  say "cudaMalloc ($mode): keep_buffer cuda bytes $kept (expected $((20 * 8 << 20))); untraced ${untraced}s, traced ${traced}s"
  check "cuda-$mode-leak-site" [ "$kept" = "$((20 * 8 << 20))" ]
  "$leakscope" report "$work/$mode.lsc" | head -40 >>"$log"
done

for mode in keep reserve; do
  timed untraced "$python" "$here/torch_cuda_service.py" "$mode" "$work/untraced-$mode.json"
  timed traced "$leakscope" run --cuda -o "$work/torch-$mode.lsc" -- "$python" "$here/torch_cuda_service.py" "$mode" "$work/$mode-figures.json"
  "$leakscope" dump --format json "$work/torch-$mode.lsc" >"$work/torch-$mode.json" 2>>"$log"
  c10=$(json "$work/torch-$mode.json" "d['live_bytes_by_domain'].get('c10_cuda', 0)")
  cuda=$(json "$work/torch-$mode.json" "d['live_bytes_by_domain'].get('cuda', 0)")
  allocated=$(json "$work/$mode-figures.json" "d['memory_allocated']")
  reserved=$(json "$work/$mode-figures.json" "d['memory_reserved']")
  say "torch ($mode): c10_cuda $c10 vs memory_allocated $allocated; cuda $cuda vs memory_reserved $reserved; untraced ${untraced}s, traced ${traced}s"
  check "torch-$mode-c10-equals-allocated" [ "$c10" = "$allocated" ]
  check "torch-$mode-cuda-covers-reserved" [ "$cuda" -ge "$reserved" ]
  # The folded export counts each device byte once: the tensors, and of the segments only the cache.
  "$leakscope" export "$work/torch-$mode.lsc" --at end --folded "$work/torch-$mode.folded" 2>>"$log"
  "$leakscope" dump --at end --format json "$work/torch-$mode.lsc" >"$work/torch-$mode-end.json" 2>>"$log"
  folded=$(awk '{total += $NF} END {printf "%.0f", total}' "$work/torch-$mode.folded")
  once=$(json "$work/torch-$mode-end.json" "sum(d['live_bytes_by_domain'].values()) - sum(x.get('c10_cuda_inside_cuda_bytes', 0) for x in d['devices'])")
  check "torch-$mode-export-counts-device-bytes-once" [ "$folded" = "$once" ]
  "$leakscope" report "$work/torch-$mode.lsc" >"$work/torch-$mode.txt" 2>&1
  head -60 "$work/torch-$mode.txt" >>"$log"
  if [ "$mode" = keep ]; then
    check "torch-keep-leak-at-remember" grep -q "remember_output\|serve (torch_cuda_service.py" "$work/torch-$mode.txt"
  else
    check "torch-reserve-not-leaked" grep -q "reserved by the caching allocator, not leaked" "$work/torch-$mode.txt"
    check "torch-reserve-passes-gate" "$leakscope" check "$work/torch-$mode.lsc" --max-leaked 1MiB
  fi
done

# A 2 GiB batch held for half a second between periodic snapshots 4 s apart: the device peak, from
# a high-water snapshot, is torch's own high-water mark within the least rise.
"$leakscope" run --cuda --interval 4s --option ramp=0 -o "$work/torch-burst.lsc" -- "$python" "$here/torch_cuda_service.py" burst "$work/burst-figures.json" >>"$log" 2>&1
"$leakscope" report --format json "$work/torch-burst.lsc" >"$work/torch-burst-report.json" 2>>"$log"
device_peak=$(json "$work/torch-burst-report.json" "(d['device_peak'] or {}).get('tracked_bytes', 0)")
most=$(json "$work/burst-figures.json" "d['max_memory_allocated']")
say "torch (burst): device peak $device_peak vs max_memory_allocated $most"
check "torch-burst-device-peak-near-torchs-own" [ "$device_peak" -ge $((most - (64 << 20))) ]
check "torch-burst-device-peak-not-above-it" [ "$device_peak" -le $((most + (64 << 20))) ]
# The device's own peak counts what the driver gave: the caching allocator's segments at their most.
device0=$(json "$work/torch-burst-report.json" "next((p['bytes'] for p in d['device_peaks'] if p['device'] == 0), 0)")
reserved_most=$(json "$work/burst-figures.json" "d['max_memory_reserved']")
say "torch (burst): device 0 peak $device0 vs max_memory_reserved $reserved_most"
check "torch-burst-device-0-peak-covers-reserved" [ "$device0" -ge $((reserved_most - (64 << 20))) ]
"$leakscope" report "$work/torch-burst.lsc" | grep -A3 "^device peak" >>"$log"

say "checks failed: $failures"
cp "$work"/*.lsc "$out/" 2>/dev/null
rm -rf "$work"
[ "$failures" -eq 0 ]
