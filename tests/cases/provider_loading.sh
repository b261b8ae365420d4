# libibverbs loads libsroce for sroce devices: ibv_devinfo shows the
# firmware version our provider formats and the port as RoCE.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
out=$(ibv_devinfo -v -d sroce0) || fail "ibv_devinfo failed"
echo "$out" | grep -q 'fw_ver:[[:space:]]*0.1.0' || fail "fw_ver: $out"
echo "$out" | grep -q 'link_layer:[[:space:]]*Ethernet' || fail "link_layer: $out"
echo "$out" | grep -q 'GID\[  1\]:[[:space:]]*::ffff:10.0.2.15, RoCE v2' ||
	fail "GID[1]: $out"
