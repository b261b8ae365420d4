# ibv_import_device/pd/mr and unimport: in one process (dup'ed fd; bad fds
# and handles refused) and across a fork (the child may not use write()
# commands: everything it does goes through ioctl methods), moving data with
# the imported MR as local buffer and as remote target; afterwards the
# owner deregisters and nothing is left in rdma resource.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
out=$(timeout "$(tmo 120)" "$repo/tests/bin/sroce-import" sroce0 2>&1) ||
	fail "$out"
for t in pd mr cq qp; do
	n=$(user_objects $t sroce0)
	expect_eq "$t objects left" 0 "$n"
done
