#!/usr/bin/env bash
# Cross-platform checks, called by .ci/run (see README "Platforms"):
#   1. Windows (x86_64-pc-windows-gnu): build with build-std, build the test executables, run them
#      under Wine; run every suite with osgauge.exe under Wine and check the exported records.
#   2. macOS (aarch64-apple-darwin, x86_64-apple-darwin): type-check every target (no SDK here).
# Uses Debian's Rust (rustc-web: newer than bookworm's rustc, with its std sources for build-std)
# and installs it, MinGW and Wine with apt when missing. Nothing is cached between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

T_START=$(date +%s)
# Each step names the free disk space: CI once ran out of disk in the Windows tests (stop 45, "Disk
# full." with 9.9 MiB left) and nothing said how full it had been before.
step() {
    echo "== cross: $* ($(($(date +%s) - T_START)) s since start; $(df -h --output=avail "$ROOT" | tail -1 | tr -d ' ') free on the build disk)"
}

# ---------------------------------------------------------------------------------------------
step "toolchain"
need_install=0
[ -x /usr/bin/rustc ] && [ -x /usr/bin/cargo ] || need_install=1
[ -d /usr/lib/rustlib/src/rust/library ] || need_install=1
command -v x86_64-w64-mingw32-gcc >/dev/null || need_install=1
[ -x /usr/lib/wine/wine64 ] || need_install=1
if [ "$need_install" = 1 ]; then
    echo "installing rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 wine64 with apt"
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get update -q
    timeout 1200 apt-get install -y -q --no-install-recommends \
        rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 wine64 python3
fi
command -v python3 >/dev/null || { echo "python3 missing"; exit 1; }

# Debian's toolchain, not rustup's: build-std needs the matching std sources.
export RUSTC=/usr/bin/rustc
export RUSTC_BOOTSTRAP=1
CARGO=/usr/bin/cargo
export CARGO_TARGET_DIR="$ROOT/target-cross"
# A one-off build: no incremental state (2.5 GB of it for the Windows build) and line tables for
# the backtraces instead of full debug info (the test executables were 250-390 MB each).
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
$CARGO --version
$RUSTC --version
BUILD_STD=(-Zbuild-std=std,panic_abort)
WIN=x86_64-pc-windows-gnu
WINE=/usr/lib/wine/wine64

# ---------------------------------------------------------------------------------------------
step "macOS type-check (aarch64-apple-darwin, x86_64-apple-darwin)"
for t in aarch64-apple-darwin x86_64-apple-darwin; do
    $CARGO check "${BUILD_STD[@]}" --target "$t" --all-targets
    # Nothing of a type-check is used again: its 0.7 GB per target go before the Windows build.
    rm -rf "${CARGO_TARGET_DIR:?}/$t"
done

# ---------------------------------------------------------------------------------------------
step "Windows build ($WIN)"
$CARGO build "${BUILD_STD[@]}" --target "$WIN" --bins
EXE="$CARGO_TARGET_DIR/$WIN/debug/osgauge.exe"
test -f "$EXE"

step "Windows test executables"
$CARGO test "${BUILD_STD[@]}" --target "$WIN" --no-run --message-format=json >"$CARGO_TARGET_DIR/win-tests.json"
mapfile -t TESTS < <(python3 - "$CARGO_TARGET_DIR/win-tests.json" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["executable"])
EOF
)
[ "${#TESTS[@]}" -ge 2 ] || { echo "expected the lib and integration test executables, got: ${TESTS[*]:-none}"; exit 1; }
printf '  %s\n' "${TESTS[@]}"

step "ProcessPrng shim (Wine 8 has no bcryptprimitives.dll)"
SHIM="$CARGO_TARGET_DIR/bcryptprimitives.dll"
x86_64-w64-mingw32-gcc -shared -O2 -o "$SHIM" .ci/wine/processprng.c -ladvapi32
for f in "$EXE" "${TESTS[@]}"; do cp "$SHIM" "$(dirname "$f")/"; done

step "Wine prefix"
export WINEDEBUG=-all
# Neither Mono nor Gecko: no test needs them, and without them wineboot never looks for their
# installers (which it would try to download; this machine reaches no such site).
export WINEDLLOVERRIDES="mscoree,mshtml="
WINESERVER=/usr/lib/wine/wineserver64
[ -x "$WINESERVER" ] || WINESERVER=wineserver
WINEPREFIX=""
drop_prefix() {
    if [ -n "$WINEPREFIX" ]; then
        timeout 30 "$WINESERVER" -k >/dev/null 2>&1 || true
        rm -rf "$WINEPREFIX"
    fi
}
trap drop_prefix EXIT
# The prefix lives beside the build (the same disk as the executables it runs, not a /tmp that may
# be small). wineboot on a fresh machine has failed once in CI with its output unseen (stop 19), so
# its output is kept, shown on failure with the free disk space, and a fresh prefix is tried up to
# three times; a boot that needed a retry is reported.
booted=0
for try in 1 2 3; do
    WINEPREFIX=$(mktemp -d "$CARGO_TARGET_DIR/wine-prefix.XXXXXX")
    export WINEPREFIX
    log="$CARGO_TARGET_DIR/wineboot-$try.log"
    rc=0
    timeout 300 "$WINE" wineboot -i >"$log" 2>&1 || rc=$?
    # Wait for the server to write the prefix out and exit, so the tests start from a settled prefix.
    [ "$rc" = 0 ] && { timeout 120 "$WINESERVER" -w || rc=$?; }
    if [ "$rc" = 0 ]; then
        booted=1
        [ "$try" = 1 ] || echo "!! wineboot succeeded on try $try (earlier tries' logs above)"
        break
    fi
    echo "!! wineboot try $try failed (exit $rc$([ "$rc" = 124 ] && echo ': timed out after 300 s')); its last lines:"
    tail -n 40 "$log" | sed 's/^/!!   /'
    df -h "$CARGO_TARGET_DIR" /tmp | sed 's/^/!!   /'
    drop_prefix
    WINEPREFIX=""
done
[ "$booted" = 1 ] || { echo "wineboot failed three times with a fresh prefix each time"; exit 1; }

# ---------------------------------------------------------------------------------------------
step "Windows tests under Wine"
# One test at a time under Wine (its process creation and file locks are flakier under
# concurrency than Windows'; the integration tests' serial groups keep a parallel run correct, not
# Wine calm). The integration tests' CI-only group (slow end-to-end checks, ignored by a default
# run) is run as a second run of that executable with `--ci-only`, as .ci/run does on Linux.
export RUST_TEST_THREADS=1
RUN_EXE=()
RUN_ARGS=()
for t in "${TESTS[@]}"; do
    RUN_EXE+=("$t")
    RUN_ARGS+=("")
    case "$(basename "$t")" in
    it-*.exe)
        RUN_EXE+=("$t")
        RUN_ARGS+=("--ci-only")
        ;;
    esac
done
# Wine itself sometimes fails a CreateProcess ("Internal error (os error 1359)") or a file lock
# that Windows would not. The tests that failed are therefore run once more, by exact name (one
# executable holds ~150 tests: re-running all of them gives every other test a chance of its own
# Wine flake); a failure on both tries fails CI, a pass on the second try is reported loudly with
# the first failure kept. An executable that failed without naming a test is run whole again.
FLAKY=()
for i in "${!RUN_EXE[@]}"; do
    t=${RUN_EXE[$i]}
    # Empty, or the one harness flag (`--ci-only`): word splitting of an unquoted empty string
    # passes nothing.
    extra=${RUN_ARGS[$i]}
    name="$(basename "$t")${extra:+ $extra}"
    echo "-- $name"
    log="$CARGO_TARGET_DIR/wine-$(basename "$t")${extra}.log"
    # Run from the executable's folder (a Z: drive path), with a bound per executable.
    # shellcheck disable=SC2086
    if (cd "$(dirname "$t")" && timeout 900 "$WINE" "$t" $extra 2>&1 | tee "$log"; exit "${PIPESTATUS[0]}"); then
        continue
    fi
    # The integration tests' harness pads names to one column: `test NAME   ... FAILED`.
    mapfile -t FAILED < <(sed -n -E 's/^test ([^ ]+) +\.\.\. FAILED\r?$/\1/p' "$log")
    if [ "${#FAILED[@]}" -gt 0 ]; then
        echo "-- $name FAILED under Wine (${FAILED[*]}); running those once more, by exact name, to tell a Wine flake from a real failure"
        # shellcheck disable=SC2086
        (cd "$(dirname "$t")" && timeout 900 "$WINE" "$t" $extra --exact "${FAILED[@]}")
    else
        echo "-- $name FAILED under Wine without naming a test; running it whole once more"
        # shellcheck disable=SC2086
        (cd "$(dirname "$t")" && timeout 900 "$WINE" "$t" $extra)
    fi
    FLAKY+=("$name: $(grep -m1 -E "^test .* FAILED|panicked at" "$log" || echo "exit without a test failure line")")
done
if [ "${#FLAKY[@]}" -gt 0 ]; then
    echo "!! FLAKY under Wine (failed once, passed on the second try):"
    printf '!!   %s\n' "${FLAKY[@]}"
fi

# ---------------------------------------------------------------------------------------------
step "osgauge.exe: every suite under Wine (micro cpu proc mem frame, micro net, micro fs, the whole interactivity matrix, latency and noise, a policy study, the application model)"
OUT=$(mktemp -d /tmp/osgauge-wine-out.XXXXXX)
(cd "$OUT" && timeout 300 "$WINE" "$EXE" list --json >list.json)
# Exit 0 = all measured, 1 = some benchmarks unsupported/failed (the check below decides).
# Wine itself sometimes fails a CreateProcess ("Internal error. (os error 1359)", seen in a policy
# cell), which Windows would not: as for the test executables above, a run whose record holds that
# error is run once more, said loudly, and the second record is the one checked.
wine_run() {
    local rc=0 json="" prev=""
    for a in "$@"; do
        [ "$prev" = --export-json ] && json=$a
        prev=$a
    done
    (cd "$OUT" && timeout 900 "$WINE" "$EXE" "$@" --no-store) || rc=$?
    case $rc in 0 | 1) ;; *) echo "osgauge.exe $* exited $rc"; exit 1 ;; esac
    # A load that got no CPU at all fails its cell ("did not really run": osgauge refuses to pass
    # off figures measured without their load). Under Wine on a busy machine this happened to all
    # four 300 ms cells with the video load once (load average 12 on 2 CPUs; 7-12 frames each in
    # two reruns at load 7-9): it too is run once more, loudly.
    local flake='(os error 1359)|did not really run'
    if [ -n "$json" ] && grep -Eq "$flake" "$OUT/$json"; then
        echo "!! FLAKY under Wine: osgauge.exe $* recorded Wine's CreateProcess error (os error 1359) or a load that got no CPU; running it once more"
        # Where it was recorded varies (a benchmark's error message, a load's failure in a cell's
        # params): show the first lines that hold it; never let this report end the script.
        grep -Eo "[^\"]{0,160}($flake)[^\"]{0,60}" "$OUT/$json" | head -4 | sed 's/^/!!   /' || true
        rc=0
        (cd "$OUT" && timeout 900 "$WINE" "$EXE" "$@" --no-store) || rc=$?
        case $rc in 0 | 1) ;; *) echo "osgauge.exe $* exited $rc"; exit 1 ;; esac
    fi
}
wine_run micro cpu proc mem frame --runs 3 --timeout 120s --max-size 64MiB --export-json micro.json
# The net suite over loopback (in-process osgauge serve peer), run time kept short.
wine_run micro net --runs 3 --run-time 100ms --timeout 120s --export-json net.json
wine_run interactivity --task audio,video,x,gaming,custom \
    --load none,video,x,burn,write,read,ring,compile,memload \
    --duration 300ms --runs 2 --warmup 0 --export-json interactivity.json
# The fs suite in a directory on disk (Wine's Z: drive), small sizes.
FSDIR=$(mktemp -d "$CARGO_TARGET_DIR/osgauge-wine-fs.XXXXXX")
wine_run micro fs --runs 3 --timeout 120s --max-size 16MiB --sizes 32KiB,256KiB \
    --dir "Z:$FSDIR" --export-json fs.json
if find "$FSDIR" -mindepth 1 | grep -q .; then echo "micro fs left files in $FSDIR"; exit 1; fi
rm -rf "$FSDIR"
# The latency suite: wake-up latency per CPU with the idle wake-up cost, with no load and with
# the burn load beside it (`--load`: started, verified and stopped as interactivity's), and OS noise.
wine_run latency --load none,burn --duration 600ms --runs 3 --warmup 0 --idle-wakeup --export-json latency.json
wine_run noise --duration 300ms --runs 3 --warmup 0 --export-json noise.json
wine_run policy --work cpu,io,mixed,sleepy \
    --policy other,idle,below-normal,above-normal,high,realtime,fifo \
    --procs 2 --runs 2 --warmup 0 --work-time 5ms --export-json policy.json \
    --export-significance policy-sig.json --export-markdown policy.md
# The application model: the thesis reproduced from its published figures, and a prediction on
# the record just measured (the inputs it lacks are listed as missing).
(cd "$OUT" && timeout 300 "$WINE" "$EXE" model "$ROOT/examples/thesis-2009.toml" >model-thesis.txt)
grep -q "6.6    maximum fps .* 43.29 .* 43.28" "$OUT/model-thesis.txt" || { echo "model: thesis tables not printed under Wine"; exit 1; }
(cd "$OUT" && timeout 300 "$WINE" "$EXE" model "$ROOT/examples/imaging-pipeline.toml" micro.json --export-json model.json >model-run.txt)
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); assert a['schema']=='osgauge.appmodel/1' and a['predictions'][0]['resources']" "$OUT/model.json"
# model validate: a tiny profile (every activity, context switches), exit 0 (agrees / not judged)
# or 1 (disagrees): structure only, never speed. Its file I/O goes through the cache
# (disk_io = "buffered"): Wine does not honour the cache-bypass flag, and the app refuses a
# bypass it cannot have.
printf '[app]\nname = "tiny"\nunit = "req"\ntarget_rate = 10\n[demand]\ndisk_io = "buffered"\nnet_rx_mb = 0.2\nnet_tx_mb = 0.1\ndisk_write_mb = 0.2\ndisk_read_mb = 0.1\nframes = 1\nframe_mb = 0.5\napp_cpu_s = 0.004\napp_mem_mb = 2\ncontext_switches = 4\n[capacity]\ndisplay_link_mb_s = 5000\n' >"$OUT/tiny.toml"
# The timeout guards against a hang only: the probes move ~12 GB through Wine, which took more
# than 300 s on a busy 2-CPU machine (every step done, cut short while finishing).
rc=0; (cd "$OUT" && timeout 900 "$WINE" "$EXE" model validate tiny.toml --step-s 0.2 --max-rate 20 --export-json validate.json >validate.txt) || rc=$?
[ "$rc" -le 1 ] || { echo "model validate under Wine: exit $rc"; cat "$OUT/validate.txt"; exit 1; }
python3 -c "import json,sys; v=json.load(open(sys.argv[1])); assert v['schema']=='osgauge.appmodel.validate/1' and len(v['steps'])==7 and v['exit_code']==int(sys.argv[2]), v['verdict']" "$OUT/validate.json" "$rc"
python3 - "$OUT" <<'EOF'
import itertools, json, sys
out = sys.argv[1]
listed = [b["id"] for b in json.load(open(f"{out}/list.json")) if b["suite"] in ("cpu", "proc", "mem", "frame")]
fs_listed = [b["id"] for b in json.load(open(f"{out}/list.json")) if b["suite"] == "fs"]
tasks = ["audio", "video", "x", "gaming", "custom"]
loads = ["none", "video", "x", "burn", "write", "read", "ring", "compile", "memload"]
matrix = [f"interactivity/{t}/{l}" for t, l in itertools.product(tasks, loads)]
net = [b["id"] for b in json.load(open(f"{out}/list.json")) if b["suite"] == "net"]
bad = []


def check(path, expected, runs):
    rec = json.load(open(path))
    assert rec["schema"].startswith("osgauge.run/"), rec["schema"]
    assert rec["machine"]["os"] == "windows", rec["machine"]["os"]
    got = {b["id"]: b for b in rec["benchmarks"]}
    for bid in expected:
        b = got.get(bid)
        if b is None:
            bad.append(f"{bid}: missing from the record")
            continue
        err = b.get("error")
        if err:
            if err["kind"] == "unsupported" and err["message"].startswith("unsupported on Windows: "):
                print(f"  {bid:40} unsupported: {err['message']}")
            else:
                bad.append(f"{bid}: error {err['kind']}: {err['message']}")
            continue
        if not b["metrics"]:
            bad.append(f"{bid}: no metrics and no error")
        # Every run measured; a metric may miss runs only where the run found nothing to report
        # (a cache level the latency curve did not show), never every metric of a benchmark.
        full = [m for m in b["metrics"] if m.get("summary") and len(m["runs"]) == runs]
        if b["metrics"] and not full:
            bad.append(f"{bid}: no metric has all {runs} runs")
        for m in b["metrics"]:
            if len(m["runs"]) > runs:
                bad.append(f"{bid}/{m['name']}: {len(m['runs'])} runs, expected {runs}")
        if b["metrics"]:
            print(f"  {bid:40} measured: " + ", ".join(m["name"] for m in b["metrics"]))
    extra = set(got) - set(expected)
    if extra:
        bad.append(f"{path}: benchmarks not expected: {sorted(extra)}")


check(f"{out}/micro.json", listed, 3)
check(f"{out}/latency.json", ["latency/wakeup", "latency/wakeup/burn", "latency/idle_wakeup"], 3)
# Host steal on Windows: not measured, with the reason — never a 0.
for b in json.load(open(f"{out}/latency.json"))["benchmarks"]:
    if b["id"].startswith("latency/wakeup") and not b.get("error"):
        for f in b["run_facts"]:
            st = f.get("steal", {})
            if st.get("measured") is not False or not st.get("reason"):
                bad.append(f"{b['id']}: steal {st} (expected not measured, with the reason)")
check(f"{out}/noise.json", ["latency/noise"], 3)
check(f"{out}/interactivity.json", matrix, 2)
check(f"{out}/net.json", net, 3)
check(f"{out}/fs.json", fs_listed, 3)
works = ["cpu", "io", "mixed", "sleepy"]
policies = ["other", "idle", "below-normal", "above-normal", "high", "realtime", "fifo"]
cells = [f"policy/{w}/{p}/2" for w, p in itertools.product(works, policies)]
check(f"{out}/policy.json", cells, 2)
# Priority classes read back: each measured cell reports the class it really got; REALTIME may
# only come back as itself or, marked, as HIGH.
for b in json.load(open(f"{out}/policy.json"))["benchmarks"]:
    if b.get("error"):
        continue
    want = b["id"].split("/")[2]
    for f in b["run_facts"]:
        got = f.get("policy_applied")
        if got == want or (want == "realtime" and got == "high" and f.get("policy_downgraded")):
            continue
        bad.append(f"{b['id']}: priority class {want} requested, {got} read back")
# Which policy differences are significant: a makespan row for every pair of measured cells of
# a workload (2 runs each), in the --export-significance file and the Markdown export.
sig = json.load(open(f"{out}/policy-sig.json"))
measured = [b["id"] for b in json.load(open(f"{out}/policy.json"))["benchmarks"] if not b.get("error")]
for w in works:
    got = {(r["a"], r["b"]) for r in sig["rows"] if r["group"] == f"{w}/2" and r["metric"] == "makespan"}
    mine = [i.split("/")[2] for i in measured if i.split("/")[1] == w]
    want = {(a, b) for i, a in enumerate(mine) for b in mine[i + 1:]}
    if got != want:
        bad.append(f"policy significance {w}/2: pairs {sorted(got)}, expected {sorted(want)}")
if "## Which policy differences are significant" not in open(f"{out}/policy.md", encoding="utf-8").read():
    bad.append("policy.md: no significance section")
print(f"  policy significance: {len(sig['rows'])} rows, {sum(r['significant'] for r in sig['rows'])} significant")
# The total context switches: measured, or unsupported with the reason (Wine's counter reads 0);
# the voluntary/involuntary split is unsupported on Windows, never a 0.
for b in json.load(open(f"{out}/policy.json"))["benchmarks"]:
    if b.get("error"):
        continue
    ms = {m["name"]: m for m in b["metrics"]}
    for name in ("switches", "voluntary", "involuntary"):
        m = ms.get(name)
        why = (m or {}).get("not_measured") or ""
        if m is None or (name != "switches" and not why.startswith("unsupported on Windows: ")) \
                or (name == "switches" and why and not why.startswith("unsupported ")):
            bad.append(f"{b['id']}: {name}: {why or 'measured' if m else 'missing'}")
print("  policy cells: switches " + ", ".join(sorted({
    (b_ms.get("not_measured") or "measured")
    for b in json.load(open(f"{out}/policy.json"))["benchmarks"] if not b.get("error")
    for b_ms in b["metrics"] if b_ms["name"] == "switches"})))
print("  policy cells: priority classes read back " + ", ".join(sorted({
    f"{b['id'].split('/')[2]}→{b['run_facts'][0].get('policy_applied')}"
    for b in json.load(open(f"{out}/policy.json"))["benchmarks"] if not b.get("error")})))
if bad:
    print("Windows record check FAILED:\n  " + "\n  ".join(bad))
    sys.exit(1)
print(f"Windows record check: {len(listed)} micro-benchmarks, {len(net)} network benchmarks, "
      f"{len(fs_listed)} fs benchmarks, {len(matrix)} interactivity cells and {len(cells)} policy "
      "cells, each measured or unsupported with a reason")
EOF
(cd "$OUT" && timeout 300 "$WINE" "$EXE" system show >system.txt) && sed 's/^/  /' "$OUT/system.txt"
rm -rf "$OUT"

step "done"
