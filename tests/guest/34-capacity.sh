#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 5, parts 1 and 2: the seed's capacity claims, measured with
# flexmmap-report (fmm-capacity-32 and fmm-pte-32 per layout) and checked
# against bounds derived from the figures the probe itself reports:
#   32-bit module flexible: the mmap-only total >= 95% and the largest
#     single mmap >= 90% of (task size - stack gap - image), the brk-only
#     total >= 97% of (task size - stack gap - start_brk) (brk cannot use
#     what lies below the program, 128 MiB for a static i386 binary at
#     0x08048000, nor the up to 32 MiB of its random start: on a 32-bit
#     kernel's 3 GiB that is over 5% of the space, stock reaches 94.9%);
#   module legacy: brk-only within 2 MiB below (legacy base - start_brk),
#     largest mmap <= (stack start - legacy base), and flexible's largest
#     beats it by >= 1 GiB; the module's layouts match the stock kernel's;
#   --3gb legacy brk-only within 5% of 896 MiB (stock and module);
#   VmPTE of a dynamic 32-bit program under setarch -R: legacy - flexible
#     >= 4 KiB;
#   every SVG parses (xml.etree) and shows one labelled rectangle per region
#     of the probe's maps snapshot, in address order, its height on the log
#     scale the picture states;
#   the tool restores the sysctls and the module state, and fails clearly
#     when not root, when the module is missing, on an unknown row.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 35

report=$FMM_PROBES/flexmmap-report
[ -x "$report" ] || t_fail_all "no $report (make probes)"
command -v python3 >/dev/null || t_fail_all "no python3 in the guest"
rmmod flexmmap 2>/dev/null
out=$(mktemp -d /tmp/34-capacity.XXXXXX)
# shellcheck disable=SC2016 # expanded at exit
t_atexit 'rm -rf "$out"'

oc0=$(sysctl -n vm.overcommit_memory)
lva0=$(sysctl -n vm.legacy_va_layout)
rows=stock,stock-legacy,module-legacy,module-flexible,stock-legacy-3gb,module-legacy-3gb
t0=$SECONDS
rc=0
"$report" --module "$FMM_KO" --bits 32 --rows "$rows" --out "$out" >"$out/stdout" 2>"$out/stderr" || rc=$?
secs=$((SECONDS - t0))
if [ "$rc" = 0 ] && [ -s "$out/capacity.json" ]; then
	t_ok "flexmmap-report --bits 32 ($rows) exits 0 in ${secs} s"
	t_sub <"$out/stdout"
else
	t_fail "flexmmap-report --bits 32 ($rows) exits 0" "exit status $rc after ${secs} s" \
		"$(cat "$out/stdout" "$out/stderr")"
	exit 1
fi

t_eq "flexmmap-report restored vm.overcommit_memory" "$oc0" "$(sysctl -n vm.overcommit_memory)"
t_eq "flexmmap-report restored vm.legacy_va_layout" "$lva0" "$(sysctl -n vm.legacy_va_layout)"
if [ -e /proc/sys/vm/flexmmap_layout ]; then
	t_fail "flexmmap-report removed the module it loaded" "flexmmap is still loaded"
	rmmod flexmmap
else
	t_ok "flexmmap-report removed the module it loaded"
fi

# The checks proper, on the tool's JSON and SVGs: "ok<TAB>NAME",
# "fail<TAB>NAME<TAB>WHY", "diag<TAB>TEXT", then "end".
check_py() {
	python3 - "$@" <<'PY'
import json, math, os, sys
import xml.etree.ElementTree as ET

out, rnd_bits = sys.argv[1], int(sys.argv[2])
# A compat task's task size on x86-64; on a 32-bit kernel (the i386 guest,
# native 32) the 3G/1G split's TASK_SIZE.
native32 = sys.argv[3] == "32"
TASK32 = 0xC0000000 if native32 else 0xFFFFE000
RND = "mmap_rnd_bits" if native32 else "mmap_rnd_compat_bits"
MiB, GiB, PAGE = 1 << 20, 1 << 30, 4096
data = json.load(open(os.path.join(out, "capacity.json")))
rows = {r["row"]: r for r in data["rows"] if r["bits"] == 32}


def emit(*fields):
    print("\t".join(str(f).replace("\t", " ").replace("\n", " ")
                    for f in fields), flush=True)


def check(ok, name, why=""):
    emit("ok", name) if ok else emit("fail", name, why)


def num(v):
    return int(v, 0)


def mb(n):
    return f"{n / MiB:.1f} MiB"


def cap(rid):
    r = rows.get(rid)
    if not r or r["errors"]:
        emit("fail", f"row {rid} measured",
             "missing" if not r else "; ".join(r["errors"]))
        return None
    return {k: (num(v) if k not in ("direction", "fmm_alloc", "fmm_mode",
                                    "maps", "stack_rlimit", "mmap_errno")
                else v) for k, v in r["capacity"].items()
            if not k.endswith("_error")}


want = {"stock": ("topdown", "none"), "stock-legacy": ("bottomup", "none"),
        "module-legacy": ("bottomup", "module-bottomup"),
        "module-flexible": ("topdown", "module-topdown"),
        "stock-legacy-3gb": ("bottomup", "none"),
        "module-legacy-3gb": ("bottomup", "module-bottomup")}
C = {}
for rid, (d, a) in want.items():
    c = cap(rid)
    if c is None:
        continue
    C[rid] = c
    ctl = "control (stock kernel): " if rid.startswith("stock") else ""
    check(c["direction"] == d and c["fmm_alloc"] == a,
          f"{ctl}32-bit {rid}: {d}, allocator {a}",
          f"saw {c['direction']}, allocator {c['fmm_alloc']}")

fl, lg = C.get("module-flexible"), C.get("module-legacy")
if fl:
    space = fl["task_size"] - fl["stack_gap"] - fl["image_size"]
    check(fl["task_size"] == TASK32,
          f"32-bit task size is {TASK32:#x} ({fl['task_size']:#x})",
          f"saw {fl['task_size']:#x}")
    what = (f"of {mb(space)} = task size {fl['task_size']:#x} - stack gap "
            f"{mb(fl['stack_gap'])} - image {fl['image_size'] // 1024} KiB")
    above = fl["task_size"] - fl["stack_gap"] - fl["start_brk"]
    above_what = (f"of {mb(above)} = task size {fl['task_size']:#x} - "
                  f"stack gap {mb(fl['stack_gap'])} - start_brk "
                  f"{fl['start_brk']:#x}")
    for key, name, pct, sp, w in (
            ("brk_max", "brk-only total", 97, above, above_what),
            ("mmap_total", "mmap-only total", 95, space, what),
            ("largest_mmap", "largest single mmap", 90, space, what)):
        v = fl[key]
        check(v >= sp * pct / 100,
              f"module flexible: {name} {mb(v)} = {100 * v / sp:.1f}% "
              f">= {pct}% {w}",
              f"{mb(v)} < {pct}% ({mb(sp * pct / 100)})")
if lg:
    base, nominal = lg["mmap_base"], lg["legacy_base"]
    rnd_max = ((1 << rnd_bits) - 1) * PAGE
    check(nominal <= base <= nominal + rnd_max + MiB,
          f"module legacy: legacy base {base:#x} = {nominal:#x} + random "
          f"{base - nominal:#x} ({RND} {rnd_bits})",
          f"expected in [{nominal:#x}, {nominal + rnd_max + MiB:#x}]")
    hi = base - lg["start_brk"]
    lo = hi - 2 * MiB
    v = lg["brk_max"]
    check(lo <= v <= hi,
          f"module legacy: brk-only total {mb(v)} in [{mb(lo)}, {mb(hi)}] "
          f"(legacy base {base:#x} - start_brk {lg['start_brk']:#x}, "
          f"stopped by the mapping at {lg['brk_next']:#x})",
          f"{v} bytes not in [{lo}, {hi}]")
    lim = lg["stack_start"] - base
    v = lg["largest_mmap"]
    check(v <= lim,
          f"module legacy: largest single mmap {mb(v)} <= stack start "
          f"{lg['stack_start']:#x} - legacy base {base:#x} = {mb(lim)}",
          f"{v} > {lim}")
    emit("diag", f"module legacy: malloc total {mb(lg['malloc_total'])} "
         f"({mb(lg['malloc_brk'])} of it from brk): glibc falls back from "
         f"mmap to brk, so it is near flexible's, not a limit; reported, "
         f"not asserted")
if fl and lg:
    # A compat task (4 GiB): flexible's >= 90% of ~3.9 GiB against
    # legacy's <= 4 GiB - 0x55555000 (2.67 GiB): over 1 GiB apart.  A
    # 32-bit kernel (3 GiB): >= 90% of 3 GiB - gap - image (~2.6 GiB)
    # against <= 3 GiB - 0x40000000 (2 GiB): the kernel's rules leave
    # about 0.6-0.8 GiB between them, so 512 MiB there.
    need = 512 * MiB if native32 else GiB
    d = fl["largest_mmap"] - lg["largest_mmap"]
    check(d >= need,
          f"largest single mmap: flexible {mb(fl['largest_mmap'])} beats "
          f"legacy {mb(lg['largest_mmap'])} by {mb(d)} >= {mb(need)}",
          f"difference {mb(d)} < {mb(need)}")

# The module's allocators reproduce the kernel's own (ASLR differs between
# runs: brk starts up to 32 MiB apart, mmap_base up to 1 MiB).
for mod, stock in (("module-legacy", "stock-legacy"),
                   ("module-flexible", "stock")):
    if mod in C and stock in C:
        diffs = {k: abs(C[mod][k] - C[stock][k])
                 for k in ("brk_max", "mmap_total", "largest_mmap")}
        check(max(diffs.values()) <= 64 * MiB,
              f"{mod} matches {stock} within 64 MiB: brk "
              f"{mb(C[mod]['brk_max'])}/{mb(C[stock]['brk_max'])}, mmap "
              f"{mb(C[mod]['mmap_total'])}/{mb(C[stock]['mmap_total'])}, "
              f"largest {mb(C[mod]['largest_mmap'])}/"
              f"{mb(C[stock]['largest_mmap'])}",
              "differences: " + ", ".join(f"{k} {mb(v)}"
                                          for k, v in diffs.items()))

for rid in ("stock-legacy-3gb", "module-legacy-3gb"):
    c = C.get(rid)
    if not c:
        continue
    v, seed = c["brk_max"], 896 * MiB
    ctl = "control (stock kernel): " if rid.startswith("stock") else ""
    check(c["task_size"] == 0xC0000000 and c["legacy_base"] == 0x40000000
          and abs(v - seed) <= seed * 0.05,
          f"{ctl}{rid}: brk-only {mb(v)} within 5% of 896 MiB "
          f"({100 * (v - seed) / seed:+.1f}%; task size {c['task_size']:#x}, "
          f"legacy base {c['legacy_base']:#x}); mmap-only "
          f"{mb(c['mmap_total'])}",
          f"task size {c['task_size']:#x}, legacy base "
          f"{c['legacy_base']:#x}, brk {mb(v)}")

pl = rows.get("module-legacy", {}).get("pte", {})
pf = rows.get("module-flexible", {}).get("pte", {})
ps = rows.get("stock", {}).get("pte", {})
psl = rows.get("stock-legacy", {}).get("pte", {})
if native32 and "vmpte_kb" in pl and "vmpte_kb" in pf:
    # i386 PAE: pgd_alloc() preallocates and accounts the three user PMD
    # pages (PREALLOCATED_PMDS), so VmPTE differs between layouts only by
    # PTE pages (2 MiB each), where the layouts do not differ: the saving
    # on x86-64 is a PMD page (1 GiB each).  The module's legacy-flexible
    # difference must be the stock kernel's legacy-topdown one.
    a, b = int(pl["vmpte_kb"]), int(pf["vmpte_kb"])
    sa, sb = int(psl.get("vmpte_kb", -1)), int(ps.get("vmpte_kb", -1))
    check(sa >= 0 and sb >= 0 and a - b == sa - sb,
          f"VmPTE of fmm-pte-32 under setarch -R: legacy {a} KiB - flexible "
          f"{b} KiB = {a - b} KiB = stock legacy {sa} - stock {sb} KiB "
          f"(PAE: user PMDs preallocated; libc at {pl.get('libc')} vs "
          f"{pf.get('libc')})",
          f"module {a - b} KiB, stock {sa - sb} KiB")
elif "vmpte_kb" in pl and "vmpte_kb" in pf:
    a, b = int(pl["vmpte_kb"]), int(pf["vmpte_kb"])
    check(a - b >= 4,
          f"VmPTE of fmm-pte-32 under setarch -R: legacy {a} KiB - flexible "
          f"{b} KiB = {a - b} KiB >= 4 KiB (stock {ps.get('vmpte_kb', '?')}, "
          f"stock legacy {psl.get('vmpte_kb', '?')} KiB; libc at "
          f"{pl.get('libc')} vs {pf.get('libc')})",
          f"legacy {a} KiB, flexible {b} KiB")
else:
    emit("fail", "VmPTE measured for module legacy and flexible",
         f"legacy {pl}, flexible {pf}")

# The pictures.
svgs = sorted(f for f in os.listdir(out) if f.endswith(".svg"))
check(sorted(f"capacity-32-{rid}.svg" for rid in rows) == svgs,
      f"one SVG per measured row ({len(svgs)})", f"saw {svgs}")
for name in svgs:
    rid = name[len("capacity-32-"):-len(".svg")]
    try:
        root = ET.parse(os.path.join(out, name)).getroot()
    except ET.ParseError as e:
        emit("fail", f"{name} parses as XML", str(e))
        continue
    ns = "{http://www.w3.org/2000/svg}"
    base = float(root.get("data-log-base-px"))
    step = float(root.get("data-log-px-per-doubling"))
    texts = [t for t in root.iter(ns + "text")]
    stated = any(f"{base:g} px + {step:g} px" in "".join(t.itertext()) and
                 "log2(size / 4 KiB)" in "".join(t.itertext())
                 for t in texts)
    labels = {t.get("data-for"): "".join(t.itertext()) for t in texts
              if t.get("data-for")}
    rects = [r for r in root.iter(ns + "rect")
             if (r.get("class") or "").split()[:1] in (["region"], ["gap"])]
    maps = sorted(rows[rid]["capacity"]["maps"], key=lambda m: m["start"])
    why = []
    if not stated:
        why.append("no text states the log scale")
    regions = sorted((r for r in rects if r.get("class").startswith("region")),
                     key=lambda r: -float(r.get("y")))
    if len(regions) != len(maps):
        why.append(f"{len(regions)} region rects for {len(maps)} maps lines")
    for r, m in zip(regions, maps):
        lo, hi = int(r.get("data-start"), 16), int(r.get("data-end"), 16)
        if (lo, hi) != (m["start"], m["end"]):
            why.append(f"rect {lo:#x}-{hi:#x} where maps has "
                       f"{m['start']:#x}-{m['end']:#x} (order or content)")
            break
        lbl = labels.get(r.get("id"), "")
        if f"{lo:08x}" not in lbl:
            why.append(f"region {lo:#x} has no label with its address "
                       f"(label: '{lbl}')")
    # Every segment, region or gap, on the stated scale; together they
    # tile the bar from the top (highest address) down, none overlapping.
    segs = sorted(rects, key=lambda r: int(r.get("data-start"), 16))
    prev_end, prev_y = 0, None
    for r in segs:
        lo, hi = int(r.get("data-start"), 16), int(r.get("data-end"), 16)
        y, h = float(r.get("y")), float(r.get("height"))
        want_h = base + step * math.log2((hi - lo) / 4096)
        if abs(h - want_h) > 0.01:
            why.append(f"{r.get('class')} {lo:#x}-{hi:#x}: height {h} px, "
                       f"the scale says {want_h:.3f}")
            break
        if lo != prev_end:
            why.append(f"segments do not tile: {prev_end:#x} then {lo:#x}")
            break
        if prev_y is not None and abs(y + h - prev_y) > 0.01:
            why.append(f"{lo:#x}-{hi:#x} at y {y}+{h} is not right above "
                       f"the segment below it (y {prev_y})")
            break
        prev_end, prev_y = hi, y
    check(not why,
          f"{name}: parses; {len(regions)} labelled region rects = the maps "
          f"snapshot, in address order (top = high), region and gap heights "
          f"{base:g} + {step:g} x log2(size / 4 KiB) px as stated",
          "; ".join(why[:4]))
emit("end")
PY
}

# The random bits of a 32-bit process's bases: a compat task's on x86-64,
# the kernel's own on a 32-bit kernel.
if [ "$FMM_NATIVE" = 32 ]; then
	rnd_bits=$(sysctl -n vm.mmap_rnd_bits)
else
	rnd_bits=$(sysctl -n vm.mmap_rnd_compat_bits)
fi
ended=0
while IFS=$'\t' read -r status name why; do
	case $status in
	ok) t_ok "$name" ;;
	fail) t_fail "$name" "$why" ;;
	diag) t_diag "$name" ;;
	end) ended=1 ;;
	*) t_diag "checker: $status $name $why" ;;
	esac
done < <(check_py "$out" "$rnd_bits" "$FMM_NATIVE" 2>&1)
[ "$ended" = 1 ] || t_fail "the JSON/SVG checker ran to its end" "see the '#' lines above"

# Bad input: a clear error and a non-zero exit, nothing left changed.
err=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$report" --out /tmp 2>&1)
rc=$?
if [ "$rc" != 0 ] && grep -q 'must run as root' <<<"$err"; then
	t_ok "flexmmap-report as nobody: exit $rc, '$err'"
else
	t_fail "flexmmap-report as nobody fails clearly" "exit $rc: $err"
fi
err=$("$report" --module /nonexistent/flexmmap.ko --bits 32 --rows module-legacy --out "$out/e" 2>&1)
rc=$?
if [ "$rc" != 0 ] && grep -q '/nonexistent/flexmmap.ko not found' <<<"$err" &&
	[ "$(sysctl -n vm.overcommit_memory)" = "$oc0" ]; then
	t_ok "flexmmap-report --module /nonexistent/flexmmap.ko: exit $rc, '$err'"
else
	t_fail "flexmmap-report with a missing module fails clearly, changing nothing" \
		"exit $rc: $err" "vm.overcommit_memory $(sysctl -n vm.overcommit_memory)"
fi
# The default word sizes follow the kernel's: a 32-bit kernel runs no
# 64-bit programs (make report GUEST=i386 once failed every 64-bit row).
kbits=64
case $(uname -m) in i?86) kbits=32 ;; esac
want="32 64"
[ $kbits = 64 ] || want=32
t_eq "flexmmap-report --list: by default the word sizes a $kbits-bit kernel runs ($want)" "$want" \
	"$("$report" --list | awk '{ print $1 }' | sort -u | xargs)"
err=$("$report" --list --bits 64 --rows stock 2>&1)
rc=$?
if [ $kbits = 64 ]; then
	t_eq "flexmmap-report --list --bits 64 on a 64-bit kernel: exit 0, '64 stock'" "0 64 stock" "$rc $err"
elif [ "$rc" = 2 ] && grep -q 'runs no 64-bit programs' <<<"$err"; then
	t_ok "flexmmap-report --bits 64 on a 32-bit kernel: usage error (exit 2), says why"
else
	t_fail "flexmmap-report --bits 64 on a 32-bit kernel: usage error (exit 2), says why" "exit $rc: $err"
fi
err=$("$report" --rows no-such-row --out "$out/e" 2>&1)
rc=$?
if [ "$rc" = 2 ] && grep -q 'unknown row' <<<"$err"; then
	t_ok "flexmmap-report --rows no-such-row: usage error (exit 2)"
else
	t_fail "flexmmap-report --rows no-such-row: usage error (exit 2)" "exit $rc: $err"
fi
