# Memory windows (ibv_bind_mw(3)): type 1 bound with ibv_bind_mw (a new key
# each bind; its own range; not a local key; its MR cannot be deregistered or
# re-registered while bound; length 0 unbinds; zero-based with
# IBV_ACCESS_ZERO_BASED, as the page lists it) and type 2 bound by a
# IBV_WR_BIND_MW WQE (zero-based; no second bind while bound; invalidated by
# IBV_WR_LOCAL_INV and by a peer's SEND_WITH_INV, reported in the receive);
# neither invalidates a key it may not (a window that is gone, a type 1
# window, an MR, another generation's key): an error completion, no byte
# moved, every key still good. A type 2 bind naming a window that is gone,
# or an MR's key as a window: MW_BIND_ERR, nothing changes.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
link_add sroce0 eth0
xfer_all sroce0 rc 1024 mw_type1 mw_type1_zero_based mw_type2 \
	inv_bad_key bind_bad_window
