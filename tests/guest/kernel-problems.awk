# SPDX-License-Identifier: GPL-2.0
# The lines of a kernel log that show a problem: those matching the
# expression "bad" (the pattern of tests/guest/kernel-problems), except
# the reports the kernel makes when it works as designed:
# - an allocation that failed (fault injection makes them on purpose: "page
#   allocation failure", "vmalloc error", "FAULT_INJECTION: forcing a
#   failure") or the OOM killer: their "Call Trace" lines are set aside up
#   to the next line that is a problem of its own, whose trace counts again;
# - the WARN of kprobes when ftrace could not allocate to disarm or arm a
#   probe ("Failed to disarm kprobe-ftrace at SYM (error -12)": the kernel
#   gives unregister_kprobe() no way to fail, the module keeps the kprobe
#   allocated and says so): the whole report, to its "end trace" line (or
#   the next "cut here", or 200 lines).  The same WARN with any other error
#   counts.
# Run only by tests/guest/kernel-problems, the one entry point:
#   awk -v bad="$pattern" -f kernel-problems.awk [LOG]
dump {
	# Its end; a report that starts or 200 lines without one end it too.
	if (/---\[ end trace/ || /------------\[ cut here \]------------/ || ++dump > 200)
		dump = 0
	else
		next
}
/Failed to (dis)?arm kprobe-ftrace at .* \(error -12\)/ {
	dump = 1
	next
}
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
