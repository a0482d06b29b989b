#!/usr/bin/env bash
# Fuzzes the parsers that meet untrusted bytes with cargo-fuzz (libFuzzer), each target for a
# set time; by hand or on a schedule, not in .ci/run (ci/test.sh replays the committed seeds
# and regressions through `cargo test` instead).
#
#   bash ci/fuzz.sh [--seconds N] [TARGET...]     (default: every target, 120 s each)
#   bash ci/fuzz.sh --list
#
# TARGET is a name (`selectors`) or CRATE/NAME (`fakekube/selectors`, `programs/shell_run`,
# `adapter/kubeconfig`). The targets live in fakekube/fuzz, fakekube/runtime/fuzz,
# fakekube/programs/fuzz and adapter/fuzz; each starts from its committed seeds
# (fuzz/seeds/NAME) and regressions (fuzz/regressions/NAME) and grows a working corpus under
# the target directory. A crash leaves its input in <target dir>/fuzz/artifacts/NAME/ and
# fails the run: minimise it, fix the bug, and commit the input under fuzz/regressions/NAME/
# so cargo test replays it.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain for its sanitizer
# flags; without nightly it uses the stable one with RUSTC_BOOTSTRAP=1.
# Settings (environment): CARGO_TARGET_DIR (builds go to $CARGO_TARGET_DIR/fuzz), FUZZ_JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=120
list=0
wanted=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --seconds=*) seconds="${1#--seconds=}"; shift ;;
        --list) list=1; shift ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) wanted+=("$1"); shift ;;
    esac
done

crates=(fakekube/fuzz fakekube/runtime/fuzz fakekube/programs/fuzz adapter/fuzz)
short() {
    case "$1" in
        fakekube/fuzz) echo fakekube ;;
        fakekube/runtime/fuzz) echo runtime ;;
        fakekube/programs/fuzz) echo programs ;;
        adapter/fuzz) echo adapter ;;
    esac
}

# Every target as CRATE_DIR NAME lines.
all_targets() {
    for dir in "${crates[@]}"; do
        [ -d "$dir/fuzz_targets" ] || continue
        for f in "$dir"/fuzz_targets/*.rs; do
            echo "$dir $(basename "$f" .rs)"
        done
    done
}

if [ "$list" = 1 ]; then
    all_targets | while read -r dir name; do echo "$(short "$dir")/$name"; done
    exit 0
fi

selected=()
while read -r dir name; do
    if [ ${#wanted[@]} -eq 0 ]; then
        selected+=("$dir $name")
        continue
    fi
    for w in "${wanted[@]}"; do
        if [ "$w" = "$name" ] || [ "$w" = "$(short "$dir")/$name" ]; then
            selected+=("$dir $name")
        fi
    done
done < <(all_targets)
if [ ${#selected[@]} -eq 0 ]; then
    echo "fuzz: no target matches ${wanted[*]} (see --list)" >&2
    exit 2
fi

command -v cargo-fuzz >/dev/null 2>&1 ||
    { echo "fuzz: cargo-fuzz is missing: cargo install cargo-fuzz" >&2; exit 2; }
toolchain=(+nightly)
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    toolchain=()
    export RUSTC_BOOTSTRAP=1
fi
export CARGO_INCREMENTAL=0
target_dir="$(realpath -m "${CARGO_TARGET_DIR:-target}")/fuzz"
summary="$target_dir/summary.txt"
mkdir -p "$target_dir"
: >"$summary"
failed=0
for entry in "${selected[@]}"; do
    read -r dir name <<<"$entry"
    crate_dir="$(dirname "$dir")"
    corpus="$target_dir/corpus/$(short "$dir")/$name"
    artifacts="$target_dir/artifacts/$(short "$dir")/$name"
    mkdir -p "$corpus" "$artifacts"
    for seeds in "$dir/seeds/$name" "$dir/regressions/$name"; do
        if [ -d "$seeds" ]; then
            cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
        fi
    done
    echo "== fuzz $(short "$dir")/$name for ${seconds}s"
    log="$target_dir/$(short "$dir")-$name.log"
    set +e
    (cd "$crate_dir" && cargo "${toolchain[@]}" fuzz run --fuzz-dir fuzz --target-dir "$target_dir" \
        "$name" "$corpus" -- -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 \
        -artifact_prefix="$artifacts/" -print_final_stats=1) >"$log" 2>&1
    status=$?
    set -e
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)"
    if [ "$status" -ne 0 ]; then
        failed=1
        echo "$(short "$dir")/$name: FAILED after ${runs:-?} runs (artifacts in $artifacts)" | tee -a "$summary"
        grep -E 'panicked|ERROR: libFuzzer|SUMMARY' "$log" | head -5 >&2 || true
    else
        echo "$(short "$dir")/$name: ${runs:-?} runs, no crash" | tee -a "$summary"
    fi
done
echo "== summary ($summary)"
cat "$summary"
exit "$failed"
