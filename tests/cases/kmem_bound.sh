# The kernel memory users make sroce allocate (rings, QP state, ODP page
# lists; kernel/sroce_kmem.c) is bounded per user (max_user_kmem_mb) and
# per device (max_kmem_mb): past either (CQs; the largest QP and SRQ past
# the user's bound), ENOMEM, counted in kmem_refused, nothing charged;
# kmem_bytes and "rdma resource show cq -dd"'s kmem say what is held, and
# all of it goes with the objects. The uids of a user namespace root made
# (a container's, 0 and 1 mapped to 200000 and 200001) are one user, the
# uid its root is mapped to: what the namespace's root holds counts
# against what its uid 1 may have. Those of a sandbox root made whose root
# is host root (as systemd's PrivateUsers=: 0 to 0, 1 to 200001) are each
# their own user. A user's container in a sandbox that maps every uid to
# itself (uid 65534 of the sandbox unshares it, the sandbox's root maps 0
# and 1 to 200000 and 200001) is one user, uid 65534, as outside a
# sandbox. One user's bound is for all its devices together: uid 65534's
# 2 CQs on sroce0 leave it one on sroce1 (a veth's), not 3.
# sroce-check kmem sets the parameters; they are put back here. Each
# namespace's first process leaves the chroot the guest runs the tests in
# before it unshares (the kernel makes no user namespace for a chrooted
# task); where the machine gives it none (no CONFIG_USER_NS,
# kernel.unprivileged_userns_clone 0, user.max_user_namespaces reached),
# the case, its other checks passed, is skipped with why.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
params=/sys/module/sroce/parameters
link_add sroce0 eth0
ip link add skva type veth peer name skvb || fail "cannot create veth"
trap 'ip link del skva 2>/dev/null' EXIT
ip link set skva up && ip link set skvb up || fail "setting skva up"
link_add sroce1 skva
saved_dev=$(cat $params/max_kmem_mb) saved_user=$(cat $params/max_user_kmem_mb)
trap 'echo $saved_dev > $params/max_kmem_mb; echo $saved_user > $params/max_user_kmem_mb
	ip link del skva 2>/dev/null' EXIT
out=$(timeout "$(tmo 120)" "$check" kmem sroce0 sroce1 2>&1)
rc=$?
[ $rc = 0 ] || [ $rc = 77 ] || fail "$out"
no_user_objects sroce0
no_user_objects sroce1
[ $rc = 77 ] && skip "$(sed -n 's/^SKIP: //p' <<<"$out" | sort -u | paste -sd';')"
echo "$out"
