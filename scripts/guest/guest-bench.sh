#!/bin/bash
# Inside the VM (see scripts/host/bench.sh): alternate rdma_rxe and sroce.
set -uo pipefail
rounds=$1
# PARTS: which of limits, perftest, mr, odp, dmabuf and clients to run
# (all of them by default); the table has the rows of those that ran.
# "profile" with clients runs their 4 KiB jobs under perf (fio_job).
parts=" ${2:-limits perftest mr odp dmabuf clients} "
want() { [[ $parts == *" $1 "* ]]; }
# shellcheck source=SCRIPTDIR/../../tests/lib.sh
. tests/lib.sh
# shellcheck source=SCRIPTDIR/bench-clients.sh
. scripts/guest/bench-clients.sh
# Jumbo frames: with eth0 at 9000, both devices' active MTU is 4096, and
# every perftest run asks for it (-m 4096; the table checks what they got).
ip link set eth0 mtu 9000
res=/tmp/out/results
# The perftest MTU of each run ("KIND NAME MTU"), and the machine's state
# at the start and end ("WHAT VALUE..."), for the table.
mtus=/tmp/out/mtus
state=/tmp/out/state
# The kernel clients' jobs ("KIND CLIENT JOB ok FIO_JSON", or "KIND CLIENT
# JOB failed WHY..."), what the machine did meanwhile ("KIND CLIENT JOB
# cpu BUSY%/BUSY%... CTXSW_PER_S", "KIND CLIENT - counters NAME DELTA...",
# "KIND CLIENT - rpcs NAME OPS QUEUE_MS RTT_MS EXECUTE_MS..."),
# their setup's and teardown's output, and fio's own reports.
clients=/tmp/out/clients
diag=/tmp/out/clients-diag
clog=/tmp/out/clients.log
fiodir=/tmp/out/fio
# sroce-dmabufbench's exporter and reasons ("exporter NAME", "why TEXT"),
# and what it said on stderr; its figures go to results.
dmabuf=/tmp/out/dmabuf
dmabuf_log=/tmp/out/dmabufbench.log
: > "$res"
: > "$mtus"
: > "$clients"
: > "$diag"
: > "$clog"
: > "$dmabuf"
: > "$dmabuf_log"
rm -rf "$fiodir"
mkdir -p "$fiodir"
{
	echo "cpus $(nproc)"
	echo "load_start $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$state"

use_rxe() {
	sroce_loaded && { remove_all_links; rmmod sroce; }
	modprobe -a crc32_generic rdma_rxe
	rdma link add rxe0 type rxe netdev eth0
	dev=rxe0
}
use_sroce() {
	rdma link delete rxe0 2>/dev/null
	rmmod rdma_rxe 2>/dev/null
	load_sroce
	link_add sroce0 eth0
	dev=sroce0
}
listening() { ss -ltn | grep -q ":$1 "; }
# lat_figures: from a perftest *_lat report on stdin, "TYPICAL P99 P99.9"
# (usec; NA for what is missing). The columns are found by their headers
# (perftest 4.5-0.17, src/perftest_parameters.h, RESULT_FMT_LAT:
# "#bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec]
# t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]"), two of
# whose names have a space: "% percentile" is made one word first.
lat_figures() {
	awk '
	function num(x) { return x ~ /^[0-9]+(\.[0-9]+)?$/ ? x : "NA" }
	/t_typical/ {
		gsub(/% percentile/, "%_percentile")
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^t_typical/) ct = i
			else if ($i ~ /^99%_percentile/) c99 = i
			else if ($i ~ /^99\.9%_percentile/) c999 = i
		}
		next
	}
	ct && /^[ \t]*[0-9]+[ \t]+[0-9]+[ \t]+[0-9.]+/ {
		t = num($ct)
		p = c99 ? num($c99) : "NA"
		q = c999 ? num($c999) : "NA"
	}
	END { print (t == "" ? "NA" : t), (p == "" ? "NA" : p), (q == "" ? "NA" : q) }'
}
# run NAME PROGRAM ARGS...: one perftest pair; records its figures: a
# bandwidth (MB/s) as NAME; a latency as NAME (typical), NAME_p99 and
# NAME_p999 (usec)
run() {
	local name=$1 prog=$2
	shift 2
	# Server and client each on a CPU of their own, the same for both
	# devices: without it, where the scheduler puts the two busy-polling
	# processes moves the latencies by half.
	taskset -c 0 "$prog" -d "$dev" -x 1 -m 4096 "$@" > /tmp/srv.log 2>&1 &
	local pid=$!
	wait_for 20 listening 18515
	local out
	out=$(timeout 120 taskset -c 1 "$prog" -d "$dev" -x 1 -m 4096 "$@" \
		localhost 2>&1)
	wait $pid
	local v t p99 p999
	v=$(echo "$out" | sed -n 's/^ *Mtu *: *\([0-9][0-9]*\)\[B\].*/\1/p' | head -1)
	echo "$kind $name ${v:-NA}" >> "$mtus"
	case $prog in
	*_bw)
		v=$(echo "$out" | awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ {print $4}' | tail -1)
		echo "$kind $name ${v:-NA}" >> "$res"
		;;
	*_lat)
		# (a here-string: the guest has no /dev/fd for "< <(...)")
		read -r t p99 p999 <<< "$(echo "$out" | lat_figures)"
		{
			echo "$kind $name ${t:-NA}"
			echo "$kind ${name}_p99 ${p99:-NA}"
			echo "$kind ${name}_p999 ${p999:-NA}"
		} >> "$res"
		;;
	esac
}
# limits: what bounds a software device's bandwidth on this machine, with
# no RDMA device (kind "host", MB/s as perftest counts them, 2^20 bytes a
# second): one thread's memcpy (sroce-memcpy), and one TCP stream over
# loopback (iperf3, server and client pinned as perftest's are).
limits() {
	local v pid
	v=$(timeout 120 taskset -c 1 tests/bin/sroce-memcpy 2>/dev/null |
		awk '$1 == "memcpy_1M" {print $2}')
	echo "host memcpy_1M ${v:-NA}" >> "$res"
	v=''
	if command -v iperf3 > /dev/null; then
		# One-off (-1), in the background rather than -D: its pid is
		# known, to be stopped if the client never came.
		taskset -c 0 iperf3 -s -1 -p 5201 > /tmp/iperf3-srv.log 2>&1 &
		pid=$!
		if wait_for 20 listening 5201; then
			v=$(timeout 60 taskset -c 1 iperf3 -c 127.0.0.1 -p 5201 \
				-t 5 -J 2>/dev/null | /usr/bin/python3 -c '
import json, sys
try:
    bps = json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]
    print(f"{bps / 8 / 2**20:.2f}")
except Exception:
    print("NA")')
		fi
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	echo "host tcp_loopback ${v:-NA}" >> "$res"
}
# dmabuf_bench: RDMA WRITE bandwidth into a dma-buf MR against a pinned
# MR of the same size (sroce-dmabufbench; issue 38): its MB/s to results,
# the exporter it measured and why it measured none, or not udmabuf, to
# $dmabuf.
dmabuf_bench() {
	local out rc=0 name v

	out=$(timeout 600 tests/bin/sroce-dmabufbench "$dev" \
		2>> "$dmabuf_log") || rc=$?
	grep -q '^dmabuf_exporter ' <<< "$out" ||
		echo "why sroce-dmabufbench gave no result (exit status $rc;" \
			"build/bench/dmabufbench.log)" >> "$dmabuf"
	while read -r name v; do
		case $name in
		dmabuf_exporter) echo "exporter $v" >> "$dmabuf" ;;
		dmabuf_why) echo "why $v" >> "$dmabuf" ;;
		dmabuf_*) echo "$kind $name $v" >> "$res" ;;
		esac
	done <<< "$out"
}
# Kernel clients (issue 35): NFS, NVMe-oF, SRP and iSER over $dev
# (scripts/guest/bench-clients.sh), each measured by fio with direct I/O
# on ulp_size_mb of its file or disk, iodepth 4, 2 s a job: a short run,
# for the time TCG gives it (the rounds' medians smooth it).
ulp_jobs=(randread_4k:randread:4k randwrite_4k:randwrite:4k
	seqread_1m:read:1M seqwrite_1m:write:1M)
# A client whose teardown failed may still hold the device: the clients
# after it are not run (their rows say why).
ulp_stuck=''
hz=$(getconf CLK_TCK)

# cpu_snap: each CPU's busy and total time in ticks, then the context
# switches so far: "BUSY0 TOTAL0 BUSY1 TOTAL1 ... CTXT"
cpu_snap() {
	awk '/^cpu[0-9]/ {
		t = 0
		for (i = 2; i <= 9; i++)
			t += $i
		printf "%d %d ", t - $5 - $6, t
	}
	/^ctxt / { print $2 }' /proc/stat
}
# cpu_use BEFORE AFTER: "BUSY%/BUSY%... CTXSW_PER_S" in between
cpu_use() {
	awk -v a="$1" -v b="$2" -v hz="$hz" 'BEGIN {
		n = split(a, x, " ")
		split(b, y, " ")
		for (i = 1; i < n; i += 2) {
			t = y[i + 1] - x[i + 1]
			u = t > 0 ? int(100 * (y[i] - x[i]) / t + 0.5) : 0
			s = s (i == 1 ? "" : "/") u
		}
		secs = (y[2] - x[2]) / hz
		printf "%s %d\n", s, (secs > 0 ? (y[n] - x[n]) / secs : 0)
	}'
}
# stat_snap FILE: the device's port counters now, "NAME VALUE" a line
stat_snap() {
	rdma statistic show link "$dev/1" 2>/dev/null | tr -s ' \n' '\n' |
		awk 'NR > 2 { if (n == "") n = $0; else { print n, $0; n = "" } }' \
		> "$1"
}
# stat_trouble BEFORE AFTER: the counters of errors, drops, NAKs, timeouts
# and resends that grew in between, "NAME DELTA ..."
stat_trouble() {
	awk 'NR == FNR { b[$1] = $2; next }
	$1 ~ /err|drop|nak|rnr|timeout|retr|seq|dup/ && $2 > b[$1] {
		printf "%s %d ", $1, $2 - b[$1]
	}' "$1" "$2"
}
# Part "profile": each 4 KiB job runs under perf record (every CPU, call
# graphs), which costs it some of its speed, so its figures are for
# comparing profiles, not for the table's ratios; the report of each is
# fio/KIND-ROUND-CLIENT-JOB.perf.txt (symbols of the kernel and of
# modules, sroce.ko's included, from /proc/kallsyms).
profiler=()
# perf resolves kernel and module symbols only with kptr_restrict 0.
if want profile && command -v perf > /dev/null; then
	sysctl -qw kernel.kptr_restrict=0 kernel.perf_event_paranoid=-1
	profiler=(perf record -a -g -F 999 -N -q)
fi
# fio_job CLIENT JOB RW BS: one fio run on ulp_target
fio_job() {
	local json=$fiodir/$kind-$round-$1-$2.json before
	local perfdata=$fiodir/$kind-$round-$1-$2.perf prof=()

	[ "${#profiler[@]}" -gt 0 ] && [ "$4" = 4k ] &&
		prof=("${profiler[@]}" -o "$perfdata" --)
	before=$(cpu_snap)
	if timeout 60 "${prof[@]}" fio --name="$1-$2" --filename="$ulp_target" \
		--rw="$3" --bs="$4" --size="${ulp_size_mb}M" --direct=1 \
		--ioengine=libaio --iodepth=4 --runtime=2 --time_based \
		--output-format=json --output="$json" > /tmp/fio.err 2>&1; then
		echo "$kind $1 $2 ok $json" >> "$clients"
	else
		echo "$kind $1 $2 failed fio: $(tail -1 /tmp/fio.err)" >> "$clients"
	fi
	echo "$kind $1 $2 cpu $(cpu_use "$before" "$(cpu_snap)")" >> "$diag"
	if [ -e "$perfdata" ]; then
		HOME=/tmp perf report -i "$perfdata" --no-children -q \
			--kallsyms=/proc/kallsyms --sort dso,sym \
			--percent-limit 0.3 --stdio -g none > "$perfdata.txt" 2>&1
		rm -f "$perfdata"
	fi
}
# client_run NAME: set the client NAME up over $dev, run the jobs through
# it, take it down; a job that could not run is a row that says why
client_run() {
	local c=$1 j name rw bs why=''

	echo "== $kind, round $round: $c" >> "$clog"
	if [ -n "$ulp_stuck" ]; then
		why="not run: a teardown before failed ($ulp_stuck)"
	elif "${c}_up" "$dev" >> "$clog" 2>&1; then
		stat_snap /tmp/stat0
		for j in "${ulp_jobs[@]}"; do
			IFS=: read -r name rw bs <<< "$j"
			fio_job "$c" "$name" "$rw" "$bs"
		done
		stat_snap /tmp/stat1
		echo "$kind $c - counters $(stat_trouble /tmp/stat0 /tmp/stat1)" \
			>> "$diag"
		# The client's own account of its requests, if it has one.
		if declare -F "${c}_rpcs" > /dev/null; then
			echo "$kind $c - rpcs $("${c}_rpcs" 2>> "$clog")" >> "$diag"
		fi
	else
		why="setup: $ulp_why"
		{ echo "setup failed: $ulp_why"; dmesg | tail -20; } >> "$clog"
	fi
	if [ -n "$why" ]; then
		for j in "${ulp_jobs[@]}"; do
			echo "$kind $c ${j%%:*} failed $why" >> "$clients"
		done
	fi
	[ -n "$ulp_stuck" ] && return
	if ! "${c}_down" >> "$clog" 2>&1; then
		ulp_stuck="$c on $dev: $ulp_why"
		echo "teardown failed: $ulp_why" >> "$clog"
	fi
}

for round in $(seq "$rounds"); do
	want limits && limits
	for kind in rxe sroce; do
		use_$kind
		want perftest && for sz in 4096 65536 1048576; do
			n=$((sz >= 1048576 ? 50 : 300))
			run "write_bw_$sz" ib_write_bw -s $sz -n $n
			run "read_bw_$sz" ib_read_bw -s $sz -n $n
			run "send_bw_$sz" ib_send_bw -s $sz -n $n
		done
		if want perftest; then
			run write_lat_8 ib_write_lat -s 8 -n 20000
			run send_lat_8 ib_send_lat -s 8 -n 20000
			# A READ's latency is its whole round trip (perftest
			# halves WRITE's and SEND's ping-pong).
			run read_lat_8 ib_read_lat -s 8 -n 20000
			# UC: the same WRITEs with no acknowledgment at all.
			run write_lat_uc_8 ib_write_lat -s 8 -n 20000 -c UC
		fi
		# Memory registration (ops/s).
		want mr && timeout 600 tests/bin/sroce-mrbench "$dev" 2>/dev/null |
			while read -r name v; do
				echo "$kind $name $v" >> "$res"
			done
		# On-demand paging against pinned memory (MB/s, ms).
		want odp && timeout 600 tests/bin/sroce-odpbench "$dev" 2>/dev/null |
			while read -r name v; do
				echo "$kind $name $v" >> "$res"
			done
		# dma-buf MRs against pinned ones: sroce only, rxe has none.
		[ "$kind" = rxe ] || { want dmabuf && dmabuf_bench; }
		if want clients; then
			for c in nfs nvme srp iser; do
				client_run $c
			done
		fi
	done
done
remove_all_links
sroce_loaded && rmmod sroce
echo "load_end $(cut -d' ' -f1-3 /proc/loadavg)" >> "$state"

# Medians and ratios (bandwidth in MB/s, latency in usec), then the limits,
# the goals, and the machine's state.
/usr/bin/python3 - "$res" "$mtus" "$state" "$clients" "$diag" "$dmabuf" \
	> /tmp/out/table <<'PY'
import json, sys, statistics
nan = float('nan')
d = {}
names = []      # the devices' rows, in the order run
def records(path):      # "KIND NAME VALUE" lines; anything else is skipped
    for line in open(path):
        f = line.split()
        if len(f) == 3:
            yield f
for kind, name, v in records(sys.argv[1]):
    # the dma-buf rows (sroce only) are a table of their own, below
    if kind != 'host' and not name.startswith('dmabuf_') and \
            name not in names:
        names.append(name)
    try:
        x = float(v)
    except ValueError:  # NA: a measurement that failed
        continue
    d.setdefault((name, kind), []).append(x)
def med_of(n, kind):
    v = d.get((n, kind))
    return statistics.median(v) if v else nan
def med(n):
    return med_of(n, 'sroce')
def rxe_med(n):
    return med_of(n, 'rxe')
def div(a, b):
    return a / b if b else nan
def num(x, width=10, prec=2):
    # A figure, or NA where a measurement failed (no median, no ratio).
    return f"{x:{width}.{prec}f}" if x == x else f"{'NA':>{width}}"
def times(x, prec=2):
    return f"{x:.{prec}f}x" if x == x else 'NA'
def unit(n):
    return ('usec' if 'lat' in n else 'ms' if 'munmap' in n else
            'ops/s' if 'reg' in n else 'MB/s')
w = max([18] + [len(n) for n in names])
print(f"{'test':{w}} {'rxe':>10} {'sroce':>10} {'sroce/rxe':>10}")
for n in names:
    r, s = rxe_med(n), med(n)
    print(f"{n:{w}} {num(r)} {num(s)} {num(div(s, r))}  "
          f"({unit(n)}, median of {len(d.get((n, 'sroce'), []))})")
# Kernel clients (issue 35): fio through NFS, NVMe-oF, SRP and iSER over
# each device, MB/s (2^20 bytes a second, as perftest's) and IOPS. A job
# whose client could not be set up, or whose fio failed, says why.
jobs = []       # (client, job), in the order run
fig = {}        # (client, job, kind): [(MB/s, IOPS)], one a round
why = {}        # (client, kind): {reason: times}
def fio_figures(path, job):
    j = json.load(open(path))['jobs'][0]
    if j.get('error'):
        raise ValueError(f"fio error {j['error']}")
    side = j['write' if 'write' in job else 'read']
    if not side['io_bytes']:
        raise ValueError('no I/O completed')
    return side['bw_bytes'] / 2**20, side['iops']
for line in open(sys.argv[4]):
    f = line.split(maxsplit=4)
    if len(f) < 4:
        continue
    kind, client, job, status = f[:4]
    rest = f[4].strip() if len(f) == 5 else ''
    if (client, job) not in jobs:
        jobs.append((client, job))
    if status == 'ok':
        try:
            fig.setdefault((client, job, kind), []).append(
                fio_figures(rest, job))
            continue
        except (OSError, ValueError, KeyError, IndexError) as e:
            rest = f"fio's report unreadable: {e}"
    reasons = why.setdefault((client, kind), {})
    reasons[rest] = reasons.get(rest, 0) + 1
def fio_med(client, job, kind, i):
    v = fig.get((client, job, kind))
    return statistics.median([x[i] for x in v]) if v else nan
def cell(x, prec=2):    # a figure, or "failed" where there is none
    return num(x, 10, prec) if x == x else f"{'failed':>10}"
if jobs:
    w2 = max([18] + [len(f"{c} {j}") for c, j in jobs])
    print()
    print("Kernel clients: fio, direct I/O, iodepth 4, 2 s a job; medians")
    print(f"{'client job':{w2}} {'rxe MB/s':>10} {'sroce MB/s':>10} "
          f"{'sroce/rxe':>10} {'rxe IOPS':>10} {'sroce IOPS':>10}")
    for n, (client, job) in enumerate(jobs):
        r, s = fio_med(client, job, 'rxe', 0), fio_med(client, job, 'sroce', 0)
        ratio = div(s, r)
        print(f"{client + ' ' + job:{w2}} {cell(r)} {cell(s)} {num(ratio)} "
              f"{cell(fio_med(client, job, 'rxe', 1), 0)} "
              f"{cell(fio_med(client, job, 'sroce', 1), 0)}"
              f"{'  sroce slower' if ratio < 1 else ''}")
        if n + 1 < len(jobs) and jobs[n + 1][0] == client:
            continue
        for kind in ('rxe', 'sroce'):
            for text, n_failed in why.get((client, kind), {}).items():
                print(f"    {kind} failed {n_failed} times: {text}")
    # What the machine did while each job ran: the busy share of each
    # CPU (one CPU at 100 and the other idle is a pipeline that runs on
    # one CPU), context switches, and the device's counters of trouble.
    cpus, ctx, trouble, rpcs = {}, {}, {}, {}
    for line in open(sys.argv[5]):
        f = line.split()
        if len(f) >= 6 and f[3] == 'cpu':
            cpus.setdefault((f[1], f[2], f[0]), []).append(
                [int(x) for x in f[4].split('/')])
            ctx.setdefault((f[1], f[2], f[0]), []).append(int(f[5]))
        elif len(f) >= 4 and f[3] == 'counters':
            t = trouble.setdefault((f[0], f[1]), {})
            for name, v in zip(f[4::2], f[5::2]):
                t[name] = t.get(name, 0) + int(v)
        elif len(f) >= 4 and f[3] == 'rpcs':
            # a round's mean milliseconds a request: queued, round trip,
            # in all
            for i in range(4, len(f) - 4, 5):
                ops = int(f[i + 1])
                if ops:
                    rpcs.setdefault((f[1], f[i], f[0]), []).append(
                        [int(x) / ops for x in f[i + 2:i + 5]])
    def busy(key):
        v = cpus.get(key)
        if not v:
            return 'NA'
        return '/'.join(f"{statistics.median(c):.0f}" for c in zip(*v))
    def ctx_med(key):
        v = ctx.get(key)
        return f"{statistics.median(v):.0f}" if v else 'NA'
    print()
    print("While each job ran: busy % of each CPU, context switches a "
          "second; medians")
    print(f"{'client job':{w2}} {'rxe CPUs':>10} {'ctxsw/s':>8} "
          f"{'sroce CPUs':>10} {'ctxsw/s':>8}")
    for client, job in jobs:
        print(f"{client + ' ' + job:{w2}} {busy((client, job, 'rxe')):>10} "
              f"{ctx_med((client, job, 'rxe')):>8} "
              f"{busy((client, job, 'sroce')):>10} "
              f"{ctx_med((client, job, 'sroce')):>8}")
    for client, op in dict.fromkeys((c, o) for c, o, _ in rpcs):
        figs = []
        for kind in ('rxe', 'sroce'):
            v = rpcs.get((client, op, kind))
            figs.append(f"{kind} " + ('/'.join(
                f"{statistics.median(x):.2f}" for x in zip(*v)) if v else 'NA'))
        print(f"{client} {op} RPCs, ms each (queued/round trip/in all): "
              + ', '.join(figs))
    grew = [f"{kind} {client}: " +
            ', '.join(f"{k} {v}" for k, v in sorted(t.items()))
            for (kind, client), t in trouble.items() if t]
    print("counters of errors, drops, NAKs, timeouts and resends that grew "
          "(sums of the rounds): " + ('; '.join(grew) or 'none'))
# rereg against dereg + reg of the same MR, sroce only (rxe has no rereg).
print()
for a, b in (('rereg_access_1G', 'reg_dereg_1073741824'),
             ('rereg_pd_1G', 'reg_dereg_1073741824'),
             ('rereg_trans_256M', 'dereg_reg_256M')):
    print(f"sroce {a} / {b}: {times(div(med(a), med(b)), 1)}")
# dma-buf MRs against pinned MRs (issue 38), sroce only: rxe has no
# dma-buf MRs. RDMA WRITE into each over two QPs of the device connected
# to each other; the exporter measured, or why none was (never a figure
# where none was measured).
exporters, dmabuf_why = {}, {}
for line in open(sys.argv[6]):
    k, _, v = line.strip().partition(' ')
    if k in ('exporter', 'why'):
        t = exporters if k == 'exporter' else dmabuf_why
        t[v] = t.get(v, 0) + 1
def counted(t):         # ["TEXT (in N rounds)", ...]
    return [f"{v} (in {n} round{'s' if n > 1 else ''})" for v, n in t.items()]
dmabuf_sizes = ('65536', '1048576')
print()
print("dma-buf MR against a pinned MR of the same size (issue 38), sroce "
      "only (rxe has no dma-buf MRs): RDMA WRITE into 32 MiB from a QP "
      "connected to another of the device, 16 in flight; exporter: "
      + ('; '.join(counted(exporters)) or 'none'))
print(f"{'request size':{w}} {'dma-buf':>10} {'pinned':>10} "
      f"{'dma-buf/pinned':>15}")
for s in dmabuf_sizes:
    a, b = med(f'dmabuf_write_{s}'), med(f'dmabuf_pinned_{s}')
    n = len(d.get((f'dmabuf_write_{s}', 'sroce'), []))
    if a == a or b == b:
        print(f"{s:{w}} {num(a)} {num(b)} {num(div(a, b), 15)}  "
              f"(MB/s, median of {n})")
    else:
        print(f"{s:{w}} {'not run':>10} {'not run':>10}")
for v in counted(dmabuf_why):
    print(f"    {v}")
# Limits (issue 37): one thread's memcpy and one TCP stream over loopback,
# in the same VM. A software device copies each byte twice (into a packet
# at the sender, out of it at the receiver), so the copy limit of its
# bandwidth is half of memcpy's.
copy, tcp = med_of('memcpy_1M', 'host'), med_of('tcp_loopback', 'host')
print()
print(f"limits: memcpy_1M {num(copy, 0)} MB/s, so a copy limit (memcpy/2) "
      f"of {num(copy / 2, 0)}; tcp_loopback {num(tcp, 0)} MB/s (iperf3, one "
      f"stream); medians of {len(d.get(('memcpy_1M', 'host'), []))} and "
      f"{len(d.get(('tcp_loopback', 'host'), []))}")
print(f"{'1 MiB bandwidth':{w}} {'rxe/copy':>10} {'sroce/copy':>10} "
      f"{'rxe/tcp':>10} {'sroce/tcp':>10}")
for n in ('write_bw_1048576', 'read_bw_1048576', 'send_bw_1048576'):
    r, s = rxe_med(n), med(n)
    print(f"{n:{w}} {num(div(r, copy / 2))} {num(div(s, copy / 2))} "
          f"{num(div(r, tcp))} {num(div(s, tcp))}")
# Goals (issue 15): latency against rxe, on-demand paging against pinned
# memory (sroce only); issue 38's, dma-buf MRs against pinned ones. Why
# those not met are not: testing.md, Speed.
def goal(text, ratio, ok):
    why = '' if ok else '; not met, see Documentation/testing.md, Speed'
    print(f"{text}: {times(ratio)}{why if ratio == ratio else ''}")
print()
for n in ('write_lat_8', 'send_lat_8'):
    r = div(med(n), rxe_med(n))
    goal(f"sroce {n} / rxe (goal <= 0.5)", r, r <= 0.5)
# What the acknowledgment costs at most: UC WRITEs have none.
print(f"sroce write_lat_uc_8 (no ACK) / rxe write_lat_8: "
      f"{times(div(med('write_lat_uc_8'), rxe_med('write_lat_8')))}")
for n in names:
    if n.startswith('reg_dereg_'):
        r = div(med(n), rxe_med(n))
        goal(f"sroce {n} / rxe (goal >= 1.0)", r, r >= 1.0)
for a, b, g in (('odp_write_first', 'odp_write_pinned', 0.5),
                ('odp_write_warm', 'odp_write_pinned', 0.9),
                ('odp_write_implicit', 'odp_write_pinned', 0.5),
                ('odp_prefetch_64M', 'odp_pin_64M', 0.8)):
    r = div(med(a), med(b))
    goal(f"sroce {a} / {b} (goal >= {g})", r, r >= g)
for s in dmabuf_sizes:
    a, b = f'dmabuf_write_{s}', f'dmabuf_pinned_{s}'
    r = div(med(a), med(b))
    if r == r:
        goal(f"sroce {a} / {b} (goal >= 0.9)", r, r >= 0.9)
    else:       # a figure missing: why, as the dma-buf rows say
        print(f"sroce {a} / {b} (goal >= 0.9): "
              f"{'NA' if med(a) == med(a) or med(b) == med(b) else 'not run'}"
              ": " + ('; '.join(counted(dmabuf_why)) or 'no figure'))
for a in ('odp_munmap_1G', 'odp_munmap_1G_implicit'):
    print(f"sroce {a}: {num(med(a), 0, 0)} ms, munmap_1G without an MR "
          f"{num(med('munmap_1G'), 0, 0)} ms")
# Whether every perftest run had the jumbo MTU it asked for (-m 4096).
print()
mtu = {}
for kind, name, v in records(sys.argv[2]):
    mtu.setdefault(v, []).append(f"{kind} {name}")
if list(mtu) == ['4096']:
    print(f"perftest MTU: 4096 in all {len(mtu['4096'])} runs")
else:
    for v, runs in sorted(mtu.items()):
        print(f"perftest MTU {v}: runs: {len(runs)}, e.g. {runs[0]}")
# The machine's state: a load above what the bench itself makes (its
# busy-polling pairs) means the figures are noisy.
st = {}
for line in open(sys.argv[3]):
    k, *v = line.split()
    st[k] = ' '.join(v)
print(f"guest: {st.get('cpus', '?')} CPUs, load average (1, 5, 15 min) "
      f"{st.get('load_start', '?')} at the start, "
      f"{st.get('load_end', '?')} at the end")
PY
cat /tmp/out/table
