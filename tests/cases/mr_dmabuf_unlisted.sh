# A dma-buf of an exporter sroce does not map is refused with EOPNOTSUPP
# before anything is mapped or charged, whatever the access: vgem's,
# exported through DRM PRIME (exporter "drm"); a bad range on it is still
# EINVAL; no MR, no sroce kernel memory, no dma-buf left behind. Needs
# vgem (CONFIG_DRM_VGEM, a module of Debian's 6.1 and 6.12, loaded here;
# the debug kernel of make check-debug has no DRM): without it the case
# says why and is counted as skipped, never as passed. The exporters
# sroce maps: mr_dmabuf.sh.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
# vgem as it was when the case ends.
vgem_was_loaded=
[ ! -d /sys/module/vgem ] || vgem_was_loaded=1
cleanup() {
	[ -n "$vgem_was_loaded" ] || unload vgem
}
trap cleanup EXIT
modprobe -q vgem || true
link_add sroce0 eth0
xfer_all sroce0 rc 1024 dmabuf_unlisted
no_user_objects sroce0
