# SPDX-License-Identifier: GPL-2.0
# The lines of a kernel log that show a problem: those matching the
# expression "bad" (the pattern of tests/guest/kernel-problems), except
# the stack trace of a report the kernel makes when it works as designed: an
# allocation that failed (fault injection makes them on purpose: "page
# allocation failure", "vmalloc error", "FAULT_INJECTION: forcing a
# failure") or the OOM killer.  Their "Call Trace" lines are set aside up to
# the next line that is a problem of its own, whose trace counts again.
# Run only by tests/guest/kernel-problems, the one entry point:
#   awk -v bad="$pattern" -f kernel-problems.awk [LOG]
/page allocation failure|vmalloc error|FAULT_INJECTION: forcing a failure|invoked oom-killer/ {
	aside = 1
	next
}
$0 ~ bad {
	if (aside && /Call Trace/)
		next
	aside = 0
	print
}
