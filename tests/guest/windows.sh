# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Load windows with fixed expectations, for the load/unload files (41, 60),
# sourced after lib.sh.  A cycle loop loads the module, pins one (layout, nx)
# for the window, unloads it; an exec loop runs probes all along.  The cycle
# loop publishes its state in $W/state, replaced whole (mv), one of
#   I C          insmod of cycle C under way
#   F C          (60) sysctls being flipped through every value
#   P C          pinning: sysctls set to the window's values, workers
#                re-targeted
#   L C LAYOUT NX  loaded, pinned: nothing changes until the state changes
#   R C          rmmod under way
#   N C          unloaded
# The exec loop reads the state before and after each probe.  A probe that
# starts in L or N runs with that window's fixed expectations: in L, layout
# 1 = bottom-up on module-bottomup (mode legacy), 2 = top-down on
# module-topdown (flexible), and fmm-nx --expect NX (3: EACCES required);
# in N, the kernel's own layout and fmm-nx --expect 0.  Its result counts
# only if the state is the same after it (it ran wholly inside the window):
# a probe still running when rmmod starts loses its /proc/flexmmap/self
# line and W^X, so its failure says nothing.  Probes that start in a
# transition run --print: the exec still races insmod, rmmod and the
# sysctl writes, and must exit 0.
#
# Probe specs for win_exec_loop: "layout STOCK CMD..." (STOCK: the layout
# without the module, topdown, or bottomup under setarch -L) or "nx CMD...".

W=${W:-/tmp/windows}
WIN_R=/proc/sys/vm/flexmmap_retarget
# The (layout, nx) of cycle C's window: every pair of layout 1/2 and nx 0/3
# once in any four cycles in a row.
WIN_LAYOUTS=(1 2 1 2)
WIN_NXS=(0 3 3 0)
win_pin() { # C: sets WIN_L and WIN_X
	local i=$((($1 - 1) % 4))
	# shellcheck disable=SC2034 # read by the sourcing file
	WIN_L=${WIN_LAYOUTS[i]} WIN_X=${WIN_NXS[i]}
}

win_init() {
	rm -rf "$W" && mkdir -p "$W"
	: >"$W/checked"
	: >"$W/fail"
	: >"$W/workers.fail"
	: >"$W/stats"
	win_set "N 0"
}

# One short write() to tmpfs: a reader sees the old line, nothing (a
# transition: not counted) or the new line, never part of one.
win_set() { echo "$*" >"$W/state"; }
win_state() { # sets WIN_S
	WIN_S=
	read -r WIN_S 2>/dev/null <"$W/state"
}

# The arguments that check a probe of KIND (stock layout STOCK) in STATE,
# into WIN_ARGS (no subshell: every fork is slow under TCG).
win_args() { # KIND STOCK STATE...
	local kind=$1 stock=$2 s=${3:-} layout=${5:-} nx=${6:-}
	case $s in
	L)
		if [ "$kind" = nx ]; then
			WIN_ARGS=(--expect "$nx")
		elif [ "$layout" = 1 ]; then
			WIN_ARGS=(--expect bottomup --expect-alloc module-bottomup --expect-mode legacy)
		else
			WIN_ARGS=(--expect topdown --expect-alloc module-topdown --expect-mode flexible)
		fi
		;;
	N) if [ "$kind" = nx ]; then WIN_ARGS=(--expect 0); else WIN_ARGS=(--expect "$stock"); fi ;;
	*) WIN_ARGS=(--print) ;;
	esac
}

# win_exec_loop SPEC...: until $W/stop exists.  Writes $W/checked (one line
# per counted probe: "L LAYOUT NX KIND RC" or "N - - KIND RC"), $W/fail
# (the output of each counted probe that failed), $W/seen.KIND (the last
# state a probe of that kind was counted in), and $W/execs at the end.
win_exec_loop() {
	local spec kind stock s1 s2 st l x out rc n=0 straddled=0 printed=0 pfail=0
	local -a a args
	local WIN_S WIN_ARGS
	while [ ! -e "$W/stop" ]; do
		for spec in "$@"; do
			read -r -a a <<<"$spec"
			kind=${a[0]}
			if [ "$kind" = layout ]; then
				stock=${a[1]}
				a=("${a[@]:2}")
			else
				stock=-
				a=("${a[@]:1}")
			fi
			win_state
			s1=$WIN_S
			# shellcheck disable=SC2086 # the state's words are arguments
			win_args "$kind" "$stock" $s1
			args=("${WIN_ARGS[@]}")
			out=$("${a[@]}" "${args[@]}" 2>&1)
			rc=$?
			win_state
			s2=$WIN_S
			n=$((n + 1))
			case $s1 in
			L* | N*)
				if [ "$s1" != "$s2" ]; then
					straddled=$((straddled + 1))
					continue
				fi
				read -r st _ l x <<<"$s1"
				echo "$st ${l:--} ${x:--} $kind $rc" >>"$W/checked"
				echo "$s1" >"$W/seen.$kind"
				[ "$rc" = 0 ] || printf '=== %s in "%s": %s\n%s\n' \
					"${a[*]} ${args[*]}" "$s1" "exit $rc" "$out" >>"$W/fail"
				;;
			*)
				printed=$((printed + 1))
				if [ "$rc" != 0 ]; then
					pfail=$((pfail + 1))
					printf '=== %s in "%s": exit %s\n%s\n' \
						"${a[*]} --print" "$s1" "$rc" "$out" >>"$W/printfail"
				fi
				;;
			esac
		done
	done
	echo "$n $straddled $printed $pfail" >"$W/execs"
}

# win_anchor C: in the first 4 cycles (each pair once) the cycle loop
# waits, in L and in N, until a probe of each kind was counted inside the
# window, so every (layout, nx) pair and the unloaded state are checked
# however the execs fall.  Later windows are as short as insmod and rmmod
# make them: probes that fall wholly inside still count.
win_anchor() { [ "$1" -le 4 ]; }
win_wait_seen() { # STATE: true if both kinds were counted in it (90 s)
	local t0=$SECONDS a b
	while :; do
		a='' b=''
		read -r a 2>/dev/null <"$W/seen.layout"
		read -r b 2>/dev/null <"$W/seen.nx"
		[ "$a" != "$*" ] || [ "$b" != "$*" ] || return 0
		[ $((SECONDS - t0)) -lt 90 ] || return 1
		sleep 0.1
	done
}

# win_retarget_one PID MODE: one retarget as a user would make it: EAGAIN
# (the target's mmap lock stayed held for the module's bounded wait, see
# fmm_mmap_write_lock_bounded()) is tried again, up to 5 writes, each retry
# one line in $W/eagain; any other refusal, or a sixth EAGAIN, is false with
# the shell's message in $W/retarget.err.
win_retarget_one() {
	local n
	for n in 1 2 3 4 5 6; do
		echo "$1 $2" 2>"$W/retarget.err" >$WIN_R && return 0
		grep -q 'temporarily unavailable' "$W/retarget.err" || return 1
		[ "$n" = 6 ] || echo "$1" >>"$W/eagain"
	done
	return 1
}

# win_retarget C LAYOUT PID...: re-target each worker to the window's
# allocator and check the module lists it there; mismatches to
# $W/workers.fail.
win_retarget() {
	local c=$1 layout=$2 mode alloc pid got
	shift 2
	if [ "$layout" = 1 ]; then
		mode=legacy alloc=module-bottomup
	else
		mode=flexible alloc=module-topdown
	fi
	for pid; do
		echo "$pid" >>"$W/retargeted"
		win_retarget_one "$pid" "$mode" ||
			echo "cycle $c: retarget $pid $mode refused: $(cat "$W/retarget.err")" \
				>>"$W/workers.fail"
		got=$(awk -v p="$pid" '$1 == p { print $2, $3 }' /proc/flexmmap/tasks)
		[ "$got" = "$mode $alloc" ] ||
			echo "cycle $c: $pid listed as '$got', want '$mode $alloc'" >>"$W/workers.fail"
	done
}

# win_stats C: the probe counters of the loaded module, one line to
# $W/stats: "C MISSED_LINES MISSED_SUM STRAY_INT3" (STRAY_INT3 "-" if the
# module prints no such line).
win_stats() {
	awk -v c="$1" '/^missed_/ { n++; s += $2 }
		$1 == "stray_int3" { st = $2 }
		END { print c, n + 0, s + 0, (st == "" ? "-" : st) }' \
		/proc/flexmmap/stats >>"$W/stats"
}

# win_retry_diags: what was tried again (rmmod refused while the module was
# in use, retargets refused with EAGAIN), one diagnostic line each.
win_retry_diags() {
	[ ! -s "$W/busy" ] || t_diag "rmmod refused $(wc -l <"$W/busy") time(s): module in use"
	[ ! -s "$W/eagain" ] ||
		t_diag "retarget refused with EAGAIN (mmap lock busy) and tried again $(wc -l <"$W/eagain") time(s)"
}

# win_rmmod: rmmod, retried for 30 s while it says the module is in use
# (a task inside the module's allocator holds a reference); false if the
# module is still loaded.  Refusals are counted in $W/busy.
win_rmmod() {
	local t0=$SECONDS
	until rmmod flexmmap 2>>"$W/rmmod.err"; do
		echo x >>"$W/busy"
		[ $((SECONDS - t0)) -lt 30 ] || return 1
		sleep 0.2
	done
}

# win_close C LAYOUT NX: end loaded window C (the workers re-targeted):
# state L (in an anchored cycle, until both probe kinds were counted in it),
# its counters, state R, rmmod, state N (anchored likewise).  Adds to the
# caller's $failed (rmmod) and $unanchored (an anchor wait that ran out).
win_close() {
	local c=$1
	win_set "L $c $2 $3"
	! win_anchor "$c" || win_wait_seen "L $c $2 $3" || unanchored=$((unanchored + 1))
	win_stats "$c"
	win_set "R $c"
	win_rmmod || failed=$((failed + 1))
	win_set "N $c"
	! win_anchor "$c" || win_wait_seen "N $c" || unanchored=$((unanchored + 1))
}

# win_failures ERE: the records of $W/fail whose "===" line matches, at
# most 40 lines.
win_failures() {
	awk -v re="$1" '/^=== / { f = ($0 ~ re) } f' "$W/fail" | head -n 40
}

# The results shared by 41 and 60, after the loops ended.
# win_report_windows: one result per (layout, nx) pair, and one for the
# unloaded windows (a control: it holds without the module too).
win_report_windows() {
	local i l x nl nx bad
	for i in 0 1 2 3; do
		l=${WIN_LAYOUTS[i]} x=${WIN_NXS[i]}
		nl=$(awk -v l="$l" -v x="$x" '$1 == "L" && $2 == l && $3 == x && $4 == "layout"' "$W/checked" | wc -l)
		nx=$(awk -v l="$l" -v x="$x" '$1 == "L" && $2 == l && $3 == x && $4 == "nx"' "$W/checked" | wc -l)
		bad=$(win_failures "in \"L [0-9]+ $l $x\"")
		if [ "$nl" -gt 0 ] && [ "$nx" -gt 0 ] && [ -z "$bad" ]; then
			t_ok "layout=$l nx=$x windows: $nl layout probes on module-$([ "$l" = 1 ] && echo bottomup || echo topdown), $nx NX probes under nx=$x's rules"
		else
			t_fail "layout=$l nx=$x windows: every probe exec'd inside got the pinned layout, allocator and NX rules" \
				"counted: $nl layout, $nx NX probes (both must be > 0)" "$bad"
		fi
	done
	nl=$(awk '$1 == "N"' "$W/checked" | wc -l)
	bad=$(win_failures 'in "N [0-9]+"')
	if [ "$nl" -gt 0 ] && [ -z "$bad" ]; then
		t_ok "control (stock kernel): $nl probes exec'd while unloaded got the kernel's layout and nx=0 rules"
	else
		t_fail "control (stock kernel): probes exec'd while unloaded got the kernel's layout and nx=0 rules" \
			"counted: $nl" "$bad"
	fi
}

# win_report_counters: missed_* present and 0 in every window, and
# stray_int3 0 (one result).  stray_int3 counts probe hits that came through the int3 of an
# already finished rewrite of a probed call site, which QEMU's
# multi-threaded TCG was seen to produce (docs/qemu-int3.md); qemu/run runs
# single-threaded TCG, where the guest's text patching is coherent, so any
# such hit is a failure here (a --tcg-threads multi run may see some).
win_report_counters() {
	local bad
	bad=$(awk '$2 == 0 || $3 != 0 || $4 != 0' "$W/stats")
	if [ -s "$W/stats" ] && [ -z "$bad" ]; then
		t_ok "missed_* probe hits and stray_int3 0 in every loaded window ($(wc -l <"$W/stats") windows, $(awk 'NR == 1 { print $2 }' "$W/stats") missed_* counters)"
	else
		t_fail "missed_* probe hits and stray_int3 0 in every loaded window" \
			"cycle, missed_* lines, their sum, stray_int3 (no missed_ lines: no counters):" "${bad:-no windows}"
	fi
}

# win_report_worker NAME PID RC OUTFILE: the worker exited 0 (every
# self-check held, no failed fork), forked, and was re-targeted to and
# listed on each window's module allocator.
win_report_worker() {
	local name=$1 pid=$2 rc=$3 f=$4 last forks errs wins wbad
	last=$(grep "^done " "$f" | tail -n 1)
	forks=$(sed -n 's/.* forks=\([0-9]*\).*/\1/p' <<<"$last")
	errs=$(sed -n 's/.* fork_errors=\([0-9]*\).*/\1/p' <<<"$last")
	wins=$(grep -cx "$pid" "$W/retargeted" 2>/dev/null)
	wbad=$(grep " $pid " "$W/workers.fail" | head -n 10)
	if [ "$rc" = 0 ] && [ "${forks:-0}" -gt 0 ] && [ "$errs" = 0 ] &&
		[ "${wins:-0}" -gt 0 ] && [ -z "$wbad" ]; then
		t_ok "$name: on the module's allocator in all $wins loaded windows, every self-check held, $forks forks, 0 fork errors"
	else
		t_fail "$name: on the module's allocator in every loaded window, every self-check held, forks > 0, 0 fork errors" \
			"exit status $rc; ${last:-no done line}; re-targeted in ${wins:-0} windows" \
			"$(grep '^fail' "$f" | head -n 8)" "$wbad"
	fi
}
