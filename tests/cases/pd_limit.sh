# max_pd is what the device enforces, the PD ib_mad holds included: PD number
# max_pd+1 fails with ENOMEM.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
"$check" limit sroce0 pd "$(kernel_objects pd sroce0)" || fail "max_pd not enforced as reported"
