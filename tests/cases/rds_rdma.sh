# RDS over RDMA on loopback: two RDS sockets bound to eth0's IPv4 address
# (ports 4000 and 4001) talk through rds_rdma on sroce0. One socket gets
# the InfiniBand transport from bind alone (RDS picks it because the
# address belongs to an RDMA device), the other asks for it with
# SO_RDS_TRANSPORT; getsockopt must say RDS_TRANS_IB for both, and RDS's
# connection list must show the connection as "infiniband", connected.
# 1000 messages of 1 byte to 64 KiB go each way at once and every byte of
# every message must arrive, in order, from the right port. Meanwhile
# sroce0 has rds_rdma's QPs and CQs, and its payload counters grew by at
# least the bytes sent; closing the sockets and unloading rds_rdma and rds
# leave sroce0's resources as they were.
#
# Passes on Debian 6.1 and 6.12 (about 15 s under TCG; first run 2026-11-26).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
# Not where lockdep runs (make check-debug's kernel): Linux's RDS has a
# cycle of lock classes of its own there. bind() holds rds_trans_sem while
# it destroys the cm_id of its address check (rds_ib_laddr_check():
# rdma_destroy_id() takes that id's handler_mutex); a passive connect
# holds a listener's handler_mutex and the new id's (handler_mutex/1), and
# RDS's CM handler takes rds_trans_sem under them. The check's cm_id is
# its own, so no deadlock; but lockdep, which tracks classes, reports it
# on every run (6.1.192 debug kernel, no sroce frame in it) and is off for
# the rest of the boot. make check runs this case on 6.1 and 6.12.
[ -e /proc/lockdep ] && skip "lockdep is on: Linux's RDS reports a" \
	"cycle of its own (rds_trans_sem, rdma_cm's handler_mutex) and lockdep" \
	"would be off for every case after it; make check runs rds_rdma"
py=/tmp/rds-rdma.py out=/tmp/rds-rdma.out
ready=/tmp/rds-rdma.ready go=/tmp/rds-rdma.go

cleanup() {
	[ -n "${pypid:-}" ] && kill "$pypid" 2>/dev/null
	sleep 0.5
	modprobe -r rds_rdma 2>/dev/null
	modprobe -r rds 2>/dev/null
	rm -f $py $out $ready $go
}
trap cleanup EXIT

of_module() { # TYPE MODULE: sroce0's kernel objects of TYPE that MODULE made
	rdma -d resource show "$1" dev sroce0 | grep -c "comm \[$2\]"
}

link_add sroce0 eth0
ip=$(ipv4_of eth0)
[ -n "$ip" ] || fail "eth0 has no IPv4 address"
ulp_base_save kernel_objects
modprobe -a rds rds_rdma || fail "modprobe rds rds_rdma"
expect_eq "rds_rdma PDs on sroce0" 1 "$(of_module pd rds_rdma)"

cat > $py <<'EOF'
# The RDS peers: argv IP READY GO SECONDS. Sends and checks the messages,
# checks the transport and the connection, touches READY with the payload
# byte count, then holds the sockets open until GO exists.
import os
import random
import select
import socket
import struct
import sys
import threading
import time

SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_IB = 276, 8, 0  # uapi/linux/rds.h
RDS_INFO_CONNECTIONS = 10001
RDS_INFO_CONNECTION_FLAG_CONNECTED = 0x04
# struct rds_info_connection: next_tx_seq, next_rx_seq, laddr, faddr,
# transport[16], flags, tos (packed)
INFO_CONN = struct.Struct("<QQ4s4s16sBB")
N = 1000
PORTS = (4000, 4001)
EDGES = [1, 2, 4095, 4096, 4097, 8192, 65535, 65536]
ip, ready, go, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr, flush=True)
    os._exit(1)


def sizes(seed):
    r = random.Random(seed)
    return [EDGES[i] if i < len(EDGES) else r.randint(1, 65536)
            for i in range(N)]


def payload(seed, i, n):
    return random.Random(seed * 100003 + i).randbytes(n)


def rds_socket(port, force):
    how = "asked for with SO_RDS_TRANSPORT" if force else "chosen by bind"
    s = socket.socket(socket.AF_RDS, socket.SOCK_SEQPACKET, 0)
    try:
        if force:
            s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_IB)
        s.bind((ip, port))
    except OSError as e:
        fail(f"bind to {ip}:{port} (transport {how}): {e}")
    t = s.getsockopt(SOL_RDS, SO_RDS_TRANSPORT)
    if t != RDS_TRANS_IB:
        fail(f"socket on {ip}:{port}, transport {how}: expected "
             f"{RDS_TRANS_IB} (RDS_TRANS_IB), got {t}")
    return s


def send_all(s, dport, seed):
    try:
        for i, n in enumerate(sizes(seed)):
            s.sendto(payload(seed, i, n), (ip, dport))
    except OSError as e:
        fail(f"send of message {i} ({n} bytes) to port {dport}: {e}")


def recv_all(s, sport, seed):
    for i, n in enumerate(sizes(seed)):
        if not select.select([s], [], [], limit)[0]:
            fail(f"message {i} of {N} from port {sport}: nothing within "
                 f"{limit} s")
        data, addr = s.recvfrom(65536 + 1)
        if addr != (ip, sport):
            fail(f"message {i}: expected it from {(ip, sport)}, got it "
                 f"from {addr}")
        want = payload(seed, i, n)
        if len(data) != n:
            fail(f"message {i} from port {sport}: expected {n} bytes, got "
                 f"{len(data)}")
        if data != want:
            k = next(k for k in range(n) if data[k] != want[k])
            fail(f"message {i} from port {sport} ({n} bytes): byte {k} "
                 f"expected {want[k]:#04x}, got {data[k]:#04x}")


a = rds_socket(PORTS[0], False)
b = rds_socket(PORTS[1], True)
threads = [threading.Thread(target=f, args=args, daemon=True) for f, args in (
    (send_all, (a, PORTS[1], 1)), (send_all, (b, PORTS[0], 2)),
    (recv_all, (b, PORTS[0], 1)), (recv_all, (a, PORTS[1], 2)))]
for t in threads:
    t.start()
for t in threads:
    t.join()

buf = a.getsockopt(SOL_RDS, RDS_INFO_CONNECTIONS, 1024)
conns = [INFO_CONN.unpack_from(buf, o)
         for o in range(0, len(buf) - INFO_CONN.size + 1, INFO_CONN.size)]
me = socket.inet_aton(ip)
shown = [(socket.inet_ntoa(c[2]), socket.inet_ntoa(c[3]),
          c[4].rstrip(b"\0").decode(), hex(c[5])) for c in conns]
if not any(c[2] == me and c[3] == me and
           c[4].rstrip(b"\0") == b"infiniband" and
           c[5] & RDS_INFO_CONNECTION_FLAG_CONNECTED for c in conns):
    fail(f"expected a connected infiniband connection {ip} to {ip}, RDS "
         f"lists {shown}")
print("connections", shown)
total = sum(sizes(1)) + sum(sizes(2))
with open(ready, "w") as f:
    f.write(f"{total}\n")
end = time.monotonic() + 4 * limit
while not os.path.exists(go):
    if time.monotonic() > end:
        fail(f"{go} never came")
    time.sleep(0.2)
a.close()
b.close()
EOF

sent0=$(port_counter sent_bytes)
timeout "$(tmo 240)" python3 $py "$ip" $ready $go "$(tmo 60)" > $out 2>&1 &
pypid=$!
settled() { [ -e $ready ] || ! kill -0 "$pypid" 2>/dev/null; }
wait_for 240 settled || fail "RDS peers still busy after $(tmo 240) s: $(cat $out)"
if [ ! -e $ready ]; then
	wait "$pypid"
	fail "RDS peers (exit $?): $(cat $out)"
fi
bytes=$(cat $ready)

# While the sockets are open: rds_rdma's objects on sroce0, the payload in
# its counters.
qps=$(kernel_objects qp sroce0)
[ "$qps" -ge $((ulp_base[qp] + 2)) ] ||
	fail "kernel QPs on sroce0: expected at least $((ulp_base[qp] + 2)) (2 of RDS's loopback connection), got $qps: $(rdma resource show qp link sroce0/1)"
cqs=$(of_module cq rds_rdma)
[ "$cqs" -ge 4 ] ||
	fail "rds_rdma CQs on sroce0: expected at least 4, got $cqs: $(rdma -d resource show cq dev sroce0)"
moved=$(( $(port_counter sent_bytes) - sent0 ))
[ "$moved" -ge "$bytes" ] ||
	fail "sroce0 sent $moved payload bytes for $bytes bytes of RDS messages"

touch $go
wait "$pypid"
rc=$?
pypid=
[ $rc = 0 ] || fail "RDS peers (exit $rc): $(cat $out)"

# Unloading takes the connections down; sroce0 is as it was.
wait_for 30 unload rds_rdma ||
	fail "modprobe -r rds_rdma (refcount $(cat /sys/module/rds_rdma/refcnt 2>/dev/null))"
wait_for 30 unload rds ||
	fail "modprobe -r rds (refcount $(cat /sys/module/rds/refcnt 2>/dev/null))"
ulp_base_check "after unloading RDS"
