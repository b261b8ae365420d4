// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-xfer: moves data between two QPs of one device (the packets loop
// back through sroce's RoCEv2 path) and checks the bytes that arrived and
// the completions, as an application would.
//
//   sroce-xfer DEV TEST [QP_TYPE] [MTU] [ARG]
//
// TEST is one of the names in the tables of the feature files, over the
// harness in xfer.h:
//   xfer_ops.cpp     SEND, WRITE, READ, atomics, streams, UD multicast
//   xfer_errors.cpp  error completions, RNR and transport retries
//   xfer_rereg.cpp   ibv_rereg_mr
//   xfer_keys.cpp    stale keys, the top of the iova space, a 1 GiB MR
//   xfer_odp.cpp     on-demand paging, ibv_advise_mr, implicit ODP
//   xfer_mw.cpp      memory windows, type 1 and type 2
//   xfer_harden.cpp  what a code review of the kernel found
//   xfer_sec.cpp     what a security review found: refusals that land nothing
//   xfer_verbs.cpp   SRQ limits, bad invalidations, a full CQ, AH refusals,
//                    object limits
//   xfer_orphan.cpp  a killed dereg's orphaned pin released on its user's
//                    work item
//   xfer_dmabuf.cpp  dma-buf MRs (ibv_reg_dmabuf_mr) over udmabuf or the
//                    system heap
//   xfer_nullmr.cpp  null MRs (ibv_alloc_null_mr)
// QP_TYPE is rc (default) or uc; MTU is 256..4096 (default 1024); ARG is
// the test's own (port_down: the network device whose IPv4 GID its QPs
// use, the port's own by default; the dma-buf data tests: the exporter,
// udmabuf or system, chosen by the kernel by default). A test that cannot
// run here (no dma-buf exporter) says "SKIP: why" and exits 77; what a
// test chose to run on, it says in "NOTE: TEST: text" lines.
#include "xfer.h"

using namespace xfer;

int main(int argc, char **argv)
{
	Pair p;

	if (argc < 3) {
		fprintf(stderr,
			"usage: sroce-xfer DEV TEST [rc|uc] [MTU] [ARG]\n");
		return 2;
	}
	if (argc > 3 && std::string_view(argv[3]) == "uc")
		p.type = IBV_QPT_UC;
	if (argc > 4)
		p.mtu = ibv_mtu(__builtin_ctz(atoi(argv[4]) / 128));
	if (argc > 5)
		p.arg = argv[5];
	return run_test(argv[1], argv[2], p,
			{ ops_tests, errors_tests, rereg_tests, keys_tests,
			  odp_tests, mw_tests, harden_tests, sec_tests,
			  verbs_tests, dmabuf_tests, nullmr_tests,
			  orphan_tests });
}
