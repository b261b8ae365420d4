# active_mtu follows the netdev MTU less the RoCEv2 headers.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap 'set_mtu eth0 1500' EXIT
link_add sroce0 eth0
for pair in 600:1 1100:2 1500:3 2200:4 4200:5 9000:5 1500:3; do
	set_mtu eth0 "${pair%:*}"
	expect_eq "active_mtu at netdev mtu ${pair%:*}" "${pair#*:}" \
		"$(port_field sroce0 active_mtu)"
done
