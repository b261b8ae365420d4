// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-keyflood: a remote peer guessing rkeys gets nothing. The program is
// both sides: the victim, RC QPs of device DEV (whose address is MY_IP)
// with memory registered for remote writes; and the attacker, a raw socket
// in network namespace NETNS (address PEER_IP) that sends RoCEv2 RDMA WRITE
// ONLY packets, built here to the ICRC, with rkeys it does not know.
//
//   sroce-keyflood DEV NETNS MY_IP PEER_IP [N]
//
// The victim's QPs are in RTR, connected to the attacker's address and QP
// numbers, so each packet is a request the responder must judge by its
// rkey alone. First one WRITE with a valid key must land (the packets are
// right, so the refusals below are the keys'). Then N WRITEs (default
// 100,000), in rounds of one per QP (a QP answers a remote access error
// with a NAK and goes to error; each round resets and connects them again,
// at a new PSN), each with one of:
//   - a random rkey (the registered keys excluded): counted rkey_invalid,
//     or rkey_stale_tag in the rare case its index is a live key's;
//   - a live key's index with another tag: rkey_stale_tag;
//   - the key of an MR registered without remote write:
//     rkey_access_refused;
//   - a valid key, bytes past the MR's end: rkey_out_of_range.
// Every WRITE must be answered by a NAK "remote access error" (AETH
// syndrome 0x62) with its PSN, each class counted exactly, and no byte of
// the registered memory may change. Prints "N failures"; exits non-zero on
// any.
#include "check.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <random>
#include <sched.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

constexpr int kQps = 256;
constexpr uint32_t kPeerQpn = 0x1000;	// the attacker's QPNs: kPeerQpn + i
constexpr uint16_t kRocePort = 4791;
constexpr uint8_t kWriteOnly = 0x0a, kAck = 0x11;
constexpr uint8_t kNakRemAccess = 0x62;
constexpr size_t kWriteLen = 64;
constexpr size_t kMrLen = 65536;

enum Class { RANDOM, STALE, ACCESS, RANGE, NCLASS };
const char *const class_counter[NCLASS] = {
	"rkey_invalid", "rkey_stale_tag", "rkey_access_refused",
	"rkey_out_of_range",
};

uint32_t crc_table[256];

void crc_init()
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t crc32(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

uint32_t get32(const uint8_t *p)
{
	return uint32_t(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

// IPv4 + UDP + BTH + RETH + payload + ICRC of an RC RDMA WRITE ONLY to
// QP @qpn at @psn. The ICRC covers the headers with the fields routers
// change (TOS, TTL, IP and UDP checksums, BTH's reserved byte) all ones,
// after 8 bytes of ones (IBTA annex A17, RoCEv2).
std::vector<uint8_t> write_packet(in_addr src, in_addr dst, uint16_t ipid,
				  uint32_t qpn, uint32_t psn, uint64_t va,
				  uint32_t rkey, const uint8_t *data)
{
	const size_t ulen = 8 + 12 + 16 + kWriteLen + 4, tot = 20 + ulen;
	std::vector<uint8_t> pkt(tot);
	uint8_t *ip = pkt.data(), *udp = ip + 20, *bth = udp + 8;
	uint8_t *reth = bth + 12;

	ip[0] = 0x45;
	put16(ip + 2, tot);
	put16(ip + 4, ipid);
	put16(ip + 6, 0x4000);	// DF
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	put16(udp, 0xc000 | (ipid & 0x3fff));
	put16(udp + 2, kRocePort);
	put16(udp + 4, ulen);
	bth[0] = kWriteOnly;
	put16(bth + 2, 0xffff);	// the default P_Key
	put32(bth + 4, qpn);
	put32(bth + 8, 0x80000000 | psn);	// AckReq
	put32(reth, va >> 32);
	put32(reth + 4, va);
	put32(reth + 8, rkey);
	put32(reth + 12, kWriteLen);
	memcpy(reth + 16, data, kWriteLen);

	std::vector<uint8_t> masked(8 + tot - 4, 0xff);
	memcpy(masked.data() + 8, pkt.data(), tot - 4);
	uint8_t *m = masked.data() + 8;
	m[1] = 0xff;		// TOS
	m[8] = 0xff;		// TTL
	m[10] = m[11] = 0xff;	// IP checksum
	m[20 + 6] = m[20 + 7] = 0xff;	// UDP checksum
	m[28 + 4] = 0xff;	// BTH reserved byte
	uint32_t icrc = ~crc32(~0u, masked.data(), masked.size());
	for (int i = 0; i < 4; i++)
		pkt[tot - 4 + i] = icrc >> (8 * i);
	return pkt;
}

// A port counter of @dev (hw_counters in sysfs, as rdma statistic shows).
long long counter(const char *dev, const char *name)
{
	std::string path = std::string("/sys/class/infiniband/") + dev +
			   "/ports/1/hw_counters/" + name;
	FILE *f = fopen(path.c_str(), "r");
	long long v = -1;
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	CHECK(v >= 0, "counter %s unreadable", name);
	return v;
}

// The RoCEv2 GID index of IPv4 address @addr on port 1.
int gid_index(ibv_context *ctx, in_addr addr)
{
	ibv_port_attr pa;
	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		ibv_gid_entry e;
		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		const uint8_t *g = e.gid.raw;
		static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0,
						      0, 0, 0, 0, 0xff, 0xff };
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(g, v4mapped, 12) && !memcmp(g + 12, &addr, 4))
			return i;
	}
	return -1;
}

struct Victim {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	std::vector<ibv_qp *> qps;
	std::vector<uint32_t> psn;	// each QP's expected PSN
	int sgid = -1;
	in_addr peer{};
};

bool connect_qp(Victim &v, int i, uint32_t psn)
{
	ibv_qp *qp = v.qps[i];
	ibv_qp_attr a{};

	a.qp_state = IBV_QPS_RESET;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return false;
	a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return false;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = kPeerQpn + i;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = v.sgid;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = a.ah_attr.grh.dgid.raw[11] = 0xff;
	memcpy(&a.ah_attr.grh.dgid.raw[12], &v.peer, 4);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER))
		return false;
	v.psn[i] = psn;
	return true;
}

// The attacker's sockets, made in namespace @ns by a thread of its own
// (setns() moves the calling thread only): a raw socket packets go out of,
// and a UDP socket on PEER_IP:4791 where the NAKs come back.
bool attacker_sockets(const char *ns, in_addr peer, int &tx, int &rx)
{
	bool ok = false;
	std::thread t([&] {
		std::string path = std::string("/var/run/netns/") + ns;
		int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET)) {
			perror(path.c_str());
			return;
		}
		close(fd);
		tx = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
		rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int big = 16 << 20;
		sockaddr_in sa{};
		sa.sin_family = AF_INET;
		sa.sin_port = htons(kRocePort);
		sa.sin_addr = peer;
		ok = tx >= 0 && rx >= 0 &&
		     !setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big,
				 sizeof(big)) &&
		     !bind(rx, reinterpret_cast<sockaddr *>(&sa), sizeof(sa));
		if (!ok)
			perror("attacker sockets");
	});
	t.join();
	return ok;
}

// Receive ACKs/NAKs for up to @ms; for each, call @f(qp index, PSN, AETH
// syndrome). Return when @f returns true (all seen) or time is up.
template <typename F>
bool receive(int rx, int ms, F f)
{
	uint8_t buf[2048];
	for (;;) {
		pollfd p = { rx, POLLIN, 0 };
		int n = poll(&p, 1, ms);
		if (n <= 0)
			return false;
		ssize_t len = recv(rx, buf, sizeof(buf), 0);
		if (len < 12 + 4 + 4 || buf[0] != kAck) {
			CHECK(false, "unexpected packet: %zd bytes, opcode %#x",
			      len, len > 0 ? buf[0] : 0);
			continue;
		}
		uint32_t qpn = get32(buf + 4) & 0xffffff;
		uint32_t psn = get32(buf + 8) & 0xffffff;
		uint8_t syndrome = buf[12];
		int i = int(qpn - kPeerQpn);
		if (i < 0 || i >= kQps) {
			CHECK(false, "ACK to QPN %#x", qpn);
			continue;
		}
		if (f(i, psn, syndrome))
			return true;
	}
}

struct Mr {
	ibv_mr *mr;
	std::vector<uint8_t> *mem;
};

} // namespace

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s DEV NETNS MY_IP PEER_IP [N]\n",
			argv[0]);
		return 2;
	}
	const char *dev = argv[1];
	long total = argc > 5 ? atol(argv[5]) : 100000;
	in_addr me, peer;
	if (!inet_aton(argv[3], &me) || !inet_aton(argv[4], &peer)) {
		fprintf(stderr, "bad address\n");
		return 2;
	}
	// SROCE_TIME_SCALE: a slower kernel (debug, TCG) gets more time.
	int scale = getenv("SROCE_TIME_SCALE") ?
			    atoi(getenv("SROCE_TIME_SCALE")) : 1;
	const int wait_ms = 10000 * (scale > 0 ? scale : 1);
	crc_init();

	Victim v;
	v.peer = peer;
	v.ctx = open_device(dev);
	if (!v.ctx) {
		fprintf(stderr, "no device %s\n", dev);
		return 1;
	}
	v.sgid = gid_index(v.ctx, me);
	v.pd = ibv_alloc_pd(v.ctx);
	v.cq = ibv_create_cq(v.ctx, 16, nullptr, nullptr, 0);
	if (v.sgid < 0 || !v.pd || !v.cq) {
		fprintf(stderr, "setup: gid index %d: %s\n", v.sgid,
			strerror(errno));
		return 1;
	}

	// Memory: a writable MR the valid WRITE lands in, one the flood aims
	// at, and one without remote write; all patterned.
	std::mt19937_64 rnd(std::random_device{}());
	std::vector<uint8_t> ok_mem(kMrLen), w_mem(kMrLen), r_mem(kMrLen);
	for (auto *m : { &ok_mem, &w_mem, &r_mem })
		for (auto &b : *m)
			b = uint8_t(rnd());
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	Mr ok{ ibv_reg_mr(v.pd, ok_mem.data(), kMrLen, rw), &ok_mem };
	Mr w{ ibv_reg_mr(v.pd, w_mem.data(), kMrLen, rw), &w_mem };
	Mr r{ ibv_reg_mr(v.pd, r_mem.data(), kMrLen, IBV_ACCESS_REMOTE_READ),
	      &r_mem };
	if (!ok.mr || !w.mr || !r.mr) {
		fprintf(stderr, "reg_mr: %s\n", strerror(errno));
		return 1;
	}
	std::vector<uint8_t> ok_was = ok_mem;
	const std::vector<uint8_t> w_was = w_mem, r_was = r_mem;

	for (int i = 0; i < kQps; i++) {
		ibv_qp_init_attr ia{};
		ia.send_cq = ia.recv_cq = v.cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		ibv_qp *qp = ibv_create_qp(v.pd, &ia);
		if (!qp) {
			fprintf(stderr, "create_qp #%d: %s\n", i,
				strerror(errno));
			return 1;
		}
		v.qps.push_back(qp);
		v.psn.push_back(0);
		if (!connect_qp(v, i, rnd() & 0xffffff)) {
			fprintf(stderr, "connect QP #%d: %s\n", i,
				strerror(errno));
			return 1;
		}
	}

	int tx = -1, rx = -1;
	if (!attacker_sockets(argv[2], peer, tx, rx))
		return 1;
	sockaddr_in to{};
	to.sin_family = AF_INET;
	to.sin_addr = me;
	uint16_t ipid = 0;
	auto send = [&](uint32_t qpn, uint32_t psn, uint64_t va, uint32_t key,
			const uint8_t *data) {
		auto pkt = write_packet(peer, me, ++ipid ? ipid : ++ipid, qpn,
					psn, va, key, data);
		ssize_t n = sendto(tx, pkt.data(), pkt.size(), 0,
				   reinterpret_cast<sockaddr *>(&to),
				   sizeof(to));
		CHECK(n == ssize_t(pkt.size()), "sendto: %s", strerror(errno));
	};

	// One valid WRITE lands: the packets are right. Sent again until
	// answered (the first may wait for neighbour resolution); a repeat
	// is a duplicate the responder acknowledges again.
	uint8_t data[kWriteLen];
	for (auto &b : data)
		b = uint8_t(rnd());
	const uint64_t ok_va = uintptr_t(ok_mem.data()) + 4096;
	bool acked = false;
	for (int t = 0; t < 10 && !acked; t++) {
		send(v.qps[0]->qp_num, v.psn[0], ok_va, ok.mr->rkey, data);
		acked = receive(rx, 1000 * scale, [&](int i, uint32_t psn,
						      uint8_t syn) {
			CHECK(i == 0 && psn == v.psn[0] && syn < 0x20,
			      "answer to the valid WRITE: QP #%d, PSN %u "
			      "(sent %u), syndrome %#x", i, psn, v.psn[0],
			      syn);
			return true;
		});
	}
	CHECK(acked, "the valid WRITE was not acknowledged");
	CHECK(!memcmp(ok_mem.data() + 4096, data, kWriteLen),
	      "the valid WRITE did not land");
	memcpy(ok_was.data() + 4096, data, kWriteLen);
	if (!acked || failures) {
		printf("%d failures\n", failures);
		return 1;
	}

	// The flood.
	const char *naks = "nak_rem_access_sent";
	long long before[NCLASS], naks_before = counter(dev, naks);
	long long drops_before = counter(dev, "drop_icrc_err") +
				 counter(dev, "drop_malformed") +
				 counter(dev, "drop_bad_source");
	for (int c = 0; c < NCLASS; c++)
		before[c] = counter(dev, class_counter[c]);
	long sent[NCLASS] = {};
	const uint32_t live[] = { ok.mr->rkey, w.mr->rkey, r.mr->rkey };
	long done = 0;
	int rounds = 0;
	while (done < total && !failures) {
		int n = int(std::min<long>(kQps, total - done));
		for (int i = 0; i < n; i++) {
			if (!connect_qp(v, i, rnd() & 0xffffff)) {
				CHECK(false, "reconnect QP #%d: %s", i,
				      strerror(errno));
				break;
			}
		}
		std::vector<bool> got(n);
		for (int i = 0; i < n; i++) {
			uint64_t x = rnd();
			int k = x % 100;
			Class c = k < 94 ? RANDOM : k < 96 ? STALE :
				  k < 98 ? ACCESS : RANGE;
			uint64_t va = uintptr_t(w_mem.data()) +
				      (x >> 8) % (kMrLen - kWriteLen);
			uint32_t key = uint32_t(x >> 32);
			switch (c) {
			case RANDOM:
				while (std::find(std::begin(live),
						 std::end(live),
						 key) != std::end(live))
					key = uint32_t(rnd());
				break;
			case STALE:
				key = w.mr->rkey ^ (1 + (x >> 32) % 255);
				break;
			case ACCESS:
				key = r.mr->rkey;
				va = uintptr_t(r_mem.data()) +
				     (x >> 8) % (kMrLen - kWriteLen);
				break;
			default:
				key = w.mr->rkey;
				va = uintptr_t(w_mem.data()) + kMrLen -
				     kWriteLen / 2;
				break;
			}
			sent[c]++;
			send(v.qps[i]->qp_num, v.psn[i], va, key, data);
		}
		int left = n;
		receive(rx, wait_ms, [&](int i, uint32_t psn, uint8_t syn) {
			CHECK(i < n && !got[i] && psn == v.psn[i] &&
				      syn == kNakRemAccess,
			      "round %d: answer for QP #%d%s: PSN %u "
			      "(sent %u), syndrome %#x", rounds, i,
			      i < n && got[i] ? " again" : "", psn,
			      i < n ? v.psn[i] : 0, syn);
			if (i < n && !got[i]) {
				got[i] = true;
				left--;
			}
			return left == 0;
		});
		CHECK(left == 0, "round %d: %d of %d WRITEs not NAKed", rounds,
		      left, n);
		done += n;
		rounds++;
	}

	long long d[NCLASS];
	for (int c = 0; c < NCLASS; c++)
		d[c] = counter(dev, class_counter[c]) - before[c];
	printf("%ld WRITEs with guessed or wrong rkeys in %d rounds: sent "
	       "%ld random, %ld stale tag, %ld read-only, %ld out of range; "
	       "counted %lld invalid, %lld stale tag, %lld access refused, "
	       "%lld out of range, %lld NAKs\n",
	       done, rounds, sent[RANDOM], sent[STALE], sent[ACCESS],
	       sent[RANGE], d[RANDOM], d[STALE], d[ACCESS], d[RANGE],
	       counter(dev, naks) - naks_before);
	CHECK(done == total, "%ld of %ld WRITEs sent", done, total);
	CHECK(counter(dev, naks) - naks_before == done,
	      "%lld NAKs counted for %ld refused WRITEs",
	      counter(dev, naks) - naks_before, done);
	// A random key names a live MR's index one time in 2^24 per MR:
	// then it counts as a stale tag. Invalid and stale together are
	// exact.
	CHECK(d[RANDOM] + d[STALE] == sent[RANDOM] + sent[STALE],
	      "invalid + stale tag: counted %lld, sent %ld",
	      d[RANDOM] + d[STALE], sent[RANDOM] + sent[STALE]);
	CHECK(d[STALE] >= sent[STALE] && d[STALE] <= sent[STALE] + 2,
	      "stale tag: counted %lld, sent %ld", d[STALE], sent[STALE]);
	CHECK(d[ACCESS] == sent[ACCESS], "access refused: counted %lld, "
	      "sent %ld", d[ACCESS], sent[ACCESS]);
	CHECK(d[RANGE] == sent[RANGE], "out of range: counted %lld, sent %ld",
	      d[RANGE], sent[RANGE]);
	long long drops = counter(dev, "drop_icrc_err") +
			  counter(dev, "drop_malformed") +
			  counter(dev, "drop_bad_source") - drops_before;
	CHECK(drops == 0, "%lld packets dropped as malformed, bad ICRC or "
	      "bad source", drops);
	CHECK(ok_mem == ok_was, "the first MR changed beyond the valid WRITE");
	CHECK(w_mem == w_was, "a guessed or wrong rkey wrote into memory");
	CHECK(r_mem == r_was, "a WRITE landed in read-only memory");

	for (ibv_qp *qp : v.qps)
		ibv_destroy_qp(qp);
	for (auto *m : { ok.mr, w.mr, r.mr })
		ibv_dereg_mr(m);
	ibv_destroy_cq(v.cq);
	ibv_dealloc_pd(v.pd);
	ibv_close_device(v.ctx);
	close(tx);
	close(rx);
	printf("%d failures\n", failures);
	return failures != 0;
}
