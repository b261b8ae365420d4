# kmemleak after the whole suite: with sroce's devices gone and the module
# unloaded, no object allocated since the run began is unreferenced (a
# leaked MR map, umem, QP, skb, ...). Runs last, in make check-debug only:
# it needs a kernel with CONFIG_DEBUG_KMEMLEAK (scripts/guest/guest-check.sh
# cleared the suspects of the boot before the first case).
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
k=/sys/kernel/debug/kmemleak
[ -w $k ] || fail "$k missing: not a kernel with kmemleak"
remove_all_links
sroce_loaded && { rmmod sroce || fail "rmmod sroce"; }
modprobe -r rdma_rxe nvme-rdma nvmet-rdma 2>/dev/null
# Two scans: an object must look unreferenced in both to be reported.
echo scan > $k
sleep 6
echo scan > $k
leaks=$(cat $k)
[ -z "$leaks" ] || fail "kmemleak: $(grep -c '^unreferenced object' <<<"$leaks") suspected leaks:"$'\n'"$(head -n 150 <<<"$leaks")"
