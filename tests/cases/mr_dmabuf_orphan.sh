# mr_orphan_release.sh's orphan_pinned for a dma-buf MR (udmabuf where
# sroce maps it, else the system heap; the exporter on the runner's
# line): an ibv_dereg_mr() killed while it waits for an access the test
# holds (the first RDMA WRITE of a stream, tests/src/orphan.h) queues the
# release of its pin (the device's release_queued +1) once that access
# let go, and within 5 s it ran and ended (release_backlog_pages back),
# and kmem_bytes and the kernel's count of dma-bufs (debugfs'
# dma_buf/bufinfo) are what they were before the MR. Needs the hold (the
# debug kernel's hold_map) and an exporter sroce maps; without
# either the case is skipped.
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
trap orphan_unprobe EXIT
link_add sroce0 eth0
xfer_all sroce0 rc 4096 orphan_dmabuf
