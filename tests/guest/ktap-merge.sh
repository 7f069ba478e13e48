# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# The one KTAP aggregator of flexmmap's tests (Documentation/dev-tools/
# ktap.rst), sourced by the guest suite (tests/guest/suite: one nested
# subtest per test file, then that file's result) and by tests/check on the
# host (its host-side tests, then the suite's per-file results lifted into
# the same list).  It numbers the top-level results, passes nested lines
# through, judges each nested document, and ends with the plan (last, if not
# given up front), "# N skipped" and the line "P passed, F failed" (CI and
# the README rely on it; it counts top-level results: test files and host
# tests).
#
#   km_header                  "KTAP version 1"
#   km_plan N                  "1..N" up front (else km_finish prints it)
#   km_allow_skip PREFIX...    skip reasons that do not fail a nested file
#                              (a reason starting with one of them)
#   km_result ok|fail|skip NAME [DATA]   one top-level result ("# DATA": the
#                              SKIP reason, or diagnostic data)
#   km_begin NAME              a nested document: one test file's output,
#                              shown indented two spaces under "# Subtest:"
#   km_line LINE               one line of the current document
#   km_why TEXT [DETAIL...]    a reason the document fails that its own
#                              output cannot show (kernel problems, taint, a
#                              time-out, ...): "# NAME: TEXT", details below
#   km_end STATUS              the document's result, judged from its
#                              results, its plan and its exit STATUS
#   km_lift NAME               a KTAP document whose top-level results
#                              become ours, renumbered (the suite, seen from
#                              the host); its nested lines pass through
#   km_lift_end STATUS         a result of its own only if it went wrong
#                              outside its results (exit STATUS, no result,
#                              a short count against its plan)
#   km_finish                  the end; returns 1 if anything failed
#
# A nested document (km_end) fails if one of its results failed, it skipped
# for a reason not allowed, it exited neither 0 nor KSFT_SKIP (4), it
# reported no result, it printed no plan before its first result, its count
# differs from its plan, or km_why gave a reason.  It is skipped if it
# exited KSFT_SKIP (its first SKIP result's reason, which must be allowed),
# else it passed.
KM_N=0 KM_PASS=0 KM_FAIL=0 KM_SKIP=0 KM_PLANNED=''
KM_ALLOWED=()
# The files' own results, for a "#" line at the end.
KM_LPASS=0 KM_LFAIL=0 KM_LSKIP=0
km_mode='' km_name='' km_whys=()
km_got=0 km_fails=0 km_plan='' km_plan_first=0 km_skip_reason=''

# A result line: "ok"/"not ok", an optional number, TAP13's optional "-",
# the rest (description and "# directive").
km_re_result='^(not ok|ok)( [0-9]+)?( -)?( (.*))?$'
km_re_skip='#[[:space:]]*[Ss][Kk][Ii][Pp]([[:space:]]+(.*[^[:space:]]))?[[:space:]]*$'

km_header() { echo "KTAP version 1"; }

km_plan() {
	KM_PLANNED=$1
	echo "1..$1"
}

km_allow_skip() { KM_ALLOWED+=("$@"); }

km_skip_allowed() { # REASON
	local r
	for r in ${KM_ALLOWED[@]+"${KM_ALLOWED[@]}"}; do
		[[ $1 == "$r"* ]] && return 0
	done
	return 1
}

km_result() { # ok|fail|skip NAME [DATA]
	KM_N=$((KM_N + 1))
	case $1 in
	ok)
		KM_PASS=$((KM_PASS + 1))
		echo "ok $KM_N $2${3:+ # $3}"
		;;
	skip)
		KM_SKIP=$((KM_SKIP + 1))
		echo "ok $KM_N $2 # SKIP${3:+ $3}"
		;;
	*)
		KM_FAIL=$((KM_FAIL + 1))
		echo "not ok $KM_N $2${3:+ # $3}"
		;;
	esac
}

# A top-level result line of a lifted document, renumbered.
km_lift_result() { # RESULT REST
	local rest=$2
	KM_N=$((KM_N + 1))
	if [ "$1" = "not ok" ]; then
		KM_FAIL=$((KM_FAIL + 1))
	elif [[ $rest =~ $km_re_skip ]]; then
		KM_SKIP=$((KM_SKIP + 1))
	else
		KM_PASS=$((KM_PASS + 1))
	fi
	echo "$1 $KM_N${rest:+ $rest}"
}

km_begin() { # NAME
	km_mode=nest km_name=$1 km_whys=()
	km_got=0 km_fails=0 km_plan='' km_plan_first=0 km_skip_reason=''
	echo "# Subtest: $1"
}

km_lift() { # NAME
	km_mode=lift km_name=$1 km_whys=()
	km_got=0 km_fails=0 km_plan='' km_plan_first=0 km_skip_reason=''
}

km_line() { # LINE
	local line=$1 status rest reason
	if [[ $line =~ $km_re_result ]]; then
		status=${BASH_REMATCH[1]} rest=${BASH_REMATCH[5]}
		[ "$km_got" != 0 ] || [ -z "$km_plan" ] || km_plan_first=1
		km_got=$((km_got + 1))
		if [ "$km_mode" = lift ]; then
			[ "$status" = ok ] || km_fails=$((km_fails + 1))
			km_lift_result "$status" "$rest"
			return
		fi
		if [ "$status" = "not ok" ]; then
			km_fails=$((km_fails + 1))
			KM_LFAIL=$((KM_LFAIL + 1))
		elif [[ $rest =~ $km_re_skip ]]; then
			KM_LSKIP=$((KM_LSKIP + 1))
			reason=${BASH_REMATCH[2]}
			[ -n "$km_skip_reason" ] || km_skip_reason=${reason:-(no reason)}
			km_skip_allowed "$reason" ||
				km_whys+=("skipped for a reason the suite does not allow: ${reason:-(none)}")
		else
			KM_LPASS=$((KM_LPASS + 1))
		fi
		echo "  $line"
	elif [[ $line =~ ^1\.\.([0-9]+)$ ]] && [ -z "$km_plan" ]; then
		km_plan=${BASH_REMATCH[1]}
		[ "$km_got" != 0 ] || km_plan_first=1
		if [ "$km_mode" = lift ]; then echo "# $km_name: $line"; else echo "  $line"; fi
	elif [ "$km_mode" = lift ] && [[ $line =~ ^(K?TAP\ version\ [0-9]+|[0-9]+\ passed,\ [0-9]+\ failed)$ ]]; then
		echo "# $km_name: $line"
	elif [ "$km_mode" = lift ] && [[ $line =~ ^#\ ([0-9]+\ skipped|the\ test\ files\'\ own\ results:\ .*)$ ]]; then
		echo "# $km_name: ${BASH_REMATCH[1]}"
	elif [ "$km_mode" = lift ]; then
		# The files' results, two spaces in.
		if [[ $line =~ ^\ \ (not\ ok|ok)\ [0-9]+ ]]; then
			if [ "${BASH_REMATCH[1]}" = "not ok" ]; then
				KM_LFAIL=$((KM_LFAIL + 1))
			elif [[ $line =~ $km_re_skip ]]; then
				KM_LSKIP=$((KM_LSKIP + 1))
			else
				KM_LPASS=$((KM_LPASS + 1))
			fi
		fi
		if [[ $line =~ ^[[:space:]]|^# ]] || [ -z "$line" ]; then
			printf '%s\n' "$line"
		else
			printf '# %s\n' "$line"
		fi
	elif [ -z "$line" ]; then
		echo
	elif [[ $line =~ ^[[:space:]]|^#|^K?TAP\ version\ [0-9]+$ ]]; then
		echo "  $line"
	else
		# Not KTAP: the file's stray output, as a diagnostic line.
		echo "  # $line"
	fi
}

km_why() { # TEXT [DETAIL...]
	km_whys+=("$1")
	echo "# $km_name: $1"
	shift
	[ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/#   /'
}

# The reasons any document fails, from its count, plan and exit STATUS.
km_judge() { # STATUS
	local rc=$1
	if [ "$km_mode" = lift ]; then
		[ "$rc" = 0 ] || [ "$km_fails" != 0 ] || km_why "exit status $rc (see the log above)"
	else
		case $rc in
		0) ;;
		4) [ -n "$km_skip_reason" ] || km_why "exited KSFT_SKIP (4) with no skipped result" ;;
		*) km_why "exit status $rc" ;;
		esac
	fi
	if [ "$km_got" = 0 ]; then
		km_why "reported no result"
	elif [ -z "$km_plan" ]; then
		km_why "declared no plan (t_plan N before its first result)"
	elif [ "$km_plan_first" = 0 ]; then
		km_why "declared its plan after its first result (t_plan N before it)"
	elif [ "$km_got" != "$km_plan" ]; then
		km_why "planned $km_plan results and reported $km_got"
	fi
}

km_end() { # STATUS
	local rc=$1 data
	km_judge "$rc"
	data=$(printf '%s; ' ${km_whys[@]+"${km_whys[@]}"})
	data=${data%; }
	if [ "$km_fails" != 0 ]; then
		km_result fail "$km_name" "$km_fails of $km_got results failed${data:+; $data}"
	elif [ -n "$data" ]; then
		km_result fail "$km_name" "$data"
	elif [ "$rc" = 4 ]; then
		km_result skip "$km_name" "$km_skip_reason"
	else
		km_result ok "$km_name"
	fi
	km_mode=''
}

km_lift_end() { # STATUS
	local data
	km_judge "$1"
	data=$(printf '%s; ' ${km_whys[@]+"${km_whys[@]}"})
	data=${data%; }
	[ -z "$data" ] || km_result fail "$km_name" "$data"
	km_mode=''
}

km_finish() {
	if [ -z "$KM_PLANNED" ]; then
		echo "1..$KM_N"
	elif [ "$KM_PLANNED" != "$KM_N" ]; then
		echo "# planned $KM_PLANNED results and reported $KM_N"
		KM_FAIL=$((KM_FAIL + 1))
	fi
	[ $((KM_LPASS + KM_LFAIL + KM_LSKIP)) = 0 ] ||
		echo "# the test files' own results: $KM_LPASS passed, $KM_LFAIL failed, $KM_LSKIP skipped"
	[ "$KM_SKIP" = 0 ] || echo "# $KM_SKIP skipped"
	echo "$KM_PASS passed, $KM_FAIL failed"
	[ "$KM_FAIL" = 0 ]
}
