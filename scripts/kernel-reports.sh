# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# What in a kernel log is a report that fails a run (sourced by the host's
# judge and by the guest's runner, so that both read a log the same way).
#
# report_re: an extended regular expression for the lines that start or
# make up a report: oops, BUG, WARN, KASAN, UBSAN, lockdep's reports, RCU
# stalls, soft and hard lockups, hung tasks, refcount and list corruption,
# kmemleak, DEBUG_OBJECTS, sleeping in atomic context, panics.
report_re='Oops|BUG:|WARNING:|KASAN|UBSAN|possible (recursive|circular) locking|'
report_re+='inconsistent lock state|possible irq lock inversion|INFO: lockdep|'
report_re+='lock held when returning to user space|held lock freed|'
report_re+='Kernel panic|blocked for more than|general protection fault|Call Trace:|'
report_re+='refcount_t:|list_(add|del) corruption|unreferenced object|kernel BUG|'
report_re+='ODEBUG:|rcu_sched self-detected stall|rcu: INFO:|soft lockup|hard LOCKUP|'
report_re+='sleeping function called from invalid context|scheduling while atomic'

# tainted_bad OLD NEW: the taint bits NEW has and OLD had not, less the two
# an out-of-tree, unsigned module sets when it loads (O = 4096, E = 8192).
# Prints nothing when there are none.
tainted_bad() {
	local bits=$(( ($2 & ~$1) & ~(4096 | 8192) ))
	[ "$bits" = 0 ] || echo "$bits"
}
