// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// sroce-keyflood: a remote peer that forges RoCEv2 packets gets nothing.
// The program is both sides: the victim, QPs of device DEV (whose address
// is MY_IP); and the attacker, a raw socket in network namespace NETNS
// (address PEER_IP) that sends packets built here to the ICRC, and a UDP
// socket on PEER_IP:4791 where answers come back.
//
//   sroce-keyflood DEV NETNS MY_IP PEER_IP [N]
//   sroce-keyflood DEV NETNS MY_IP PEER_IP phantom [N]
//
// Both print "N failures" and exit non-zero on any.
//
// Guessed rkeys (the first form). The victim's RC QPs are in RTR,
// connected to the attacker's address and QP numbers, with memory
// registered for remote writes, so each packet is a request the responder
// must judge by its rkey alone. First one WRITE with a valid key must land
// (the packets are right, so the refusals below are the keys'). Then N
// RDMA WRITE ONLYs (default 100,000), in rounds of one per QP (a QP
// answers a remote access error with a NAK and goes to error; each round
// resets and connects them again, at a new PSN), each with one of:
//   - a random rkey (the registered keys excluded): counted rkey_invalid,
//     or rkey_stale_tag in the rare case its index is a live key's;
//   - a live key's index with another tag: rkey_stale_tag;
//   - the key of an MR registered without remote write:
//     rkey_access_refused;
//   - a valid key, bytes past the MR's end: rkey_out_of_range.
// Every WRITE must be answered by a NAK "remote access error" (AETH
// syndrome 0x62) with its PSN, each class counted exactly, and no byte of
// the registered memory may change.
//
// Phantom packets (phantom): each half of XRC takes one direction of the
// traffic only (IBTA vol 1 annex A14). The victim: an XRC target QP (in an
// XRC domain, with an XRC SRQ of it) and an XRC initiator QP, both in RTS,
// connected to the attacker, and an RC QP in the initiator's PD; every QP
// has every remote access flag, the MR they share every remote access
// right, so no drop below is the flags' or the key's. First the packets
// are proven right: the XRC target takes one of each XRC request (SEND
// ONLY into a receive of the SRQ, its payload checked on the SRQ's CQ;
// RDMA WRITE ONLY, RDMA READ REQUEST, FETCH_ADD, CMP_SWAP in the MR, each
// answered and its effect checked), and the RC QP lands the same WRITE.
// Then, N of each (default 1000), at the QP's own PSN, the next, the one
// before and random ones, in batches:
//   - at the XRC target, which sends nothing and so awaits no response:
//     ACKs, NAKs (PSN sequence, invalid request, remote access, remote
//     operation, RNR), RDMA READ RESPONSE ONLYs with a payload and ATOMIC
//     ACKNOWLEDGEs (XRC opcodes; responses carry no XRCETH);
//   - at the XRC initiator, which has no responder: SEND ONLY, RDMA WRITE
//     ONLY, RDMA READ REQUEST, FETCH_ADD and CMP_SWAP, each with the real
//     SRQ's number in its XRCETH and the MR's valid rkey (the SENDs last:
//     kernels that took them crashed).
// Every packet must be dropped: counted in drop_qp_state (each batch
// waited for, so no receive queue overflows) and in no other drop counter,
// not one answered to the attacker, no completion on any CQ, no byte of
// the MR or the SRQ's receive buffers changed, and both QPs still in RTS.
#include "check.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
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

// What both modes share: the wire, the attacker, the device.

constexpr uint16_t kRocePort = 4791;
constexpr uint32_t kPsnMask = 0xffffff;
// Opcodes: the transport in the top 3 bits, the operation in the low 5
// (kernel/sroce_hdr.h). XRC has all of RC's.
constexpr uint8_t kRc = 0x00, kXrc = 0xa0;
constexpr uint8_t kSendOnly = 0x04, kWriteOnly = 0x0a, kReadReq = 0x0c,
		  kReadRespOnly = 0x10, kAck = 0x11, kAtomicAck = 0x12,
		  kCmpSwap = 0x13, kFetchAdd = 0x14;
// AETH syndromes: below 0x20 an ACK.
constexpr uint8_t kAckSyndrome = 0x1f, kRnrNak = 0x20, kNakRemAccess = 0x62;

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

uint64_t get64(const uint8_t *p)
{
	return uint64_t(get32(p)) << 32 | get32(p + 4);
}

// PSNs compare within half of their 2^24 space: is @a before @b?
bool psn_before(uint32_t a, uint32_t b)
{
	return ((a - b) & 0x800000) != 0;
}

// The transport headers and payload of a packet, in wire order: the BTH,
// then what its opcode carries (XRCETH, RETH, AtomicETH, AETH,
// AtomicAckETH, payload; kernel/sroce_hdr.c has the table). All of it is
// in 4-byte words here: no pad.
struct Transport {
	std::vector<uint8_t> b;

	Transport(uint8_t opcode, uint32_t qpn, uint32_t psn, bool ackreq)
		: b(12)
	{
		b[0] = opcode;
		put16(&b[2], 0xffff);	// the default P_Key
		put32(&b[4], qpn & 0xffffff);
		put32(&b[8], (ackreq ? 0x80000000 : 0) | (psn & kPsnMask));
	}
	Transport &u32(uint32_t v)
	{
		b.resize(b.size() + 4);
		put32(&b[b.size() - 4], v);
		return *this;
	}
	Transport &u64(uint64_t v)
	{
		return u32(v >> 32).u32(v);
	}
	Transport &bytes(const uint8_t *p, size_t n)
	{
		b.insert(b.end(), p, p + n);
		return *this;
	}
};

// IPv4 + UDP + @t + ICRC. The ICRC covers the headers with the fields
// routers change (TOS, TTL, IP and UDP checksums, BTH's reserved byte) all
// ones, after 8 bytes of ones (IBTA annex A17, RoCEv2).
std::vector<uint8_t> roce_packet(in_addr src, in_addr dst, uint16_t ipid,
				 const std::vector<uint8_t> &t)
{
	const size_t ulen = 8 + t.size() + 4, tot = 20 + ulen;
	std::vector<uint8_t> pkt(tot);
	uint8_t *ip = pkt.data(), *udp = ip + 20;

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
	memcpy(udp + 8, t.data(), t.size());

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

struct Args {
	const char *dev, *ns;
	in_addr me, peer;
	long n;
	int scale;	// SROCE_TIME_SCALE: a slower kernel gets more time
	int wait_ms;	// for what the victim surely does at once
};

// The attacker's sockets, made in namespace NETNS: a raw socket packets go
// out of, and a UDP socket on PEER_IP:4791 where the answers come back.
struct Attacker {
	int tx = -1, rx = -1;
	in_addr me{}, peer{};	// the victim's address, the attacker's
	uint16_t ipid = 0;

	~Attacker()
	{
		if (tx >= 0)
			close(tx);
		if (rx >= 0)
			close(rx);
	}

	// setns() moves the calling thread only: a thread of its own does it.
	bool open(const Args &a)
	{
		bool ok = false;
		me = a.me;
		peer = a.peer;
		std::thread t([&] {
			std::string path = std::string("/var/run/netns/") +
					   a.ns;
			int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
			if (fd < 0 || setns(fd, CLONE_NEWNET)) {
				perror(path.c_str());
				return;
			}
			close(fd);
			tx = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC,
				    IPPROTO_RAW);
			rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			int big = 16 << 20;
			sockaddr_in sa{};
			sa.sin_family = AF_INET;
			sa.sin_port = htons(kRocePort);
			sa.sin_addr = peer;
			ok = tx >= 0 && rx >= 0 &&
			     !setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big,
					 sizeof(big)) &&
			     !bind(rx, reinterpret_cast<sockaddr *>(&sa),
				   sizeof(sa));
			if (!ok)
				perror("attacker sockets");
		});
		t.join();
		return ok;
	}

	// Send transport headers and payload @t to the victim.
	void send(const std::vector<uint8_t> &t)
	{
		auto pkt = roce_packet(peer, me, ++ipid ? ipid : ++ipid, t);
		sockaddr_in to{};
		to.sin_family = AF_INET;
		to.sin_addr = me;
		ssize_t n = sendto(tx, pkt.data(), pkt.size(), 0,
				   reinterpret_cast<sockaddr *>(&to),
				   sizeof(to));
		CHECK(n == ssize_t(pkt.size()), "sendto: %s", strerror(errno));
	}

	// The next packet that comes back within @ms, BTH to ICRC, in @pkt.
	bool recv(int ms, std::vector<uint8_t> &pkt)
	{
		pollfd p = { rx, POLLIN, 0 };
		if (poll(&p, 1, ms) <= 0)
			return false;
		pkt.resize(2048);
		ssize_t len = ::recv(rx, pkt.data(), pkt.size(), 0);
		if (len < 0)
			return false;
		pkt.resize(len);
		return true;
	}
};

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

// The path to the attacker: from GID index @sgid to @peer, IPv4-mapped.
void set_path(ibv_ah_attr &ah, int sgid, in_addr peer)
{
	ah.is_global = 1;
	ah.port_num = 1;
	ah.grh.sgid_index = sgid;
	ah.grh.hop_limit = 64;
	ah.grh.dgid.raw[10] = ah.grh.dgid.raw[11] = 0xff;
	memcpy(&ah.grh.dgid.raw[12], &peer, 4);
}

// Guessed rkeys.

constexpr int kQps = 256;
constexpr uint32_t kPeerQpn = 0x1000;	// the attacker's QPNs: kPeerQpn + i
constexpr size_t kWriteLen = 64;
constexpr size_t kMrLen = 65536;

enum Class { RANDOM, STALE, ACCESS, RANGE, NCLASS };
const char *const class_counter[NCLASS] = {
	"rkey_invalid", "rkey_stale_tag", "rkey_access_refused",
	"rkey_out_of_range",
};

// An RC RDMA WRITE ONLY of kWriteLen bytes to QP @qpn at @psn.
std::vector<uint8_t> write_only(uint32_t qpn, uint32_t psn, uint64_t va,
				uint32_t rkey, const uint8_t *data)
{
	return Transport(kRc | kWriteOnly, qpn, psn, true)
		.u64(va).u32(rkey).u32(kWriteLen).bytes(data, kWriteLen).b;
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
	set_path(a.ah_attr, v.sgid, v.peer);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER))
		return false;
	v.psn[i] = psn;
	return true;
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
		if (len < 12 + 4 + 4 || buf[0] != (kRc | kAck)) {
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

int key_flood(const Args &a)
{
	const char *dev = a.dev;
	const long total = a.n;
	Victim v;
	v.peer = a.peer;
	v.ctx = open_device(dev);
	if (!v.ctx) {
		fprintf(stderr, "no device %s\n", dev);
		return 1;
	}
	v.sgid = gid_index(v.ctx, a.me);
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

	Attacker atk;
	if (!atk.open(a))
		return 1;
	auto send = [&](uint32_t qpn, uint32_t psn, uint64_t va, uint32_t key,
			const uint8_t *data) {
		atk.send(write_only(qpn, psn, va, key, data));
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
		acked = receive(atk.rx, 1000 * a.scale, [&](int i, uint32_t psn,
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
		receive(atk.rx, a.wait_ms, [&](int i, uint32_t psn,
					       uint8_t syn) {
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
	printf("%d failures\n", failures);
	return failures != 0;
}

// Phantom packets.

// The attacker's QPNs: the XRC target's peer, the initiator's, the RC QP's.
constexpr uint32_t kTgtPeer = 0x2000, kIniPeer = 0x2001, kRcPeer = 0x2002;
constexpr size_t kLen = 64;		// a SEND's, WRITE's or READ's bytes
constexpr size_t kMemLen = 65536;
constexpr size_t kFloodFrom = 4096;	// proofs below, phantoms from here
constexpr uint8_t kSentinel = 0xa5;	// the MR's bytes; no payload's
constexpr uint64_t kSentinel64 = 0xa5a5a5a5a5a5a5a5ULL;
constexpr int kSrqRecvs = 8;		// posted for the phantoms
constexpr int kBatch = 256;		// far below a QP's receive queue
constexpr int kRemote = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;
// Dropped for another reason than the QP's type: none may count.
const char *const other_drops[] = {
	"drop_icrc_err", "drop_malformed", "drop_bad_source", "drop_no_qp",
	"drop_rx_queue_full", "drop_ghost_response",
};

// What a request does: a SEND or WRITE carries kLen bytes of @data, a
// WRITE or READ moves them at @va, an atomic takes the 8 bytes at @va,
// adding @swap_add (FETCH_ADD) or swapping it in if they equal @compare
// (CMP_SWAP).
struct Access {
	uint64_t va;
	uint32_t rkey;
	const uint8_t *data;
	uint64_t swap_add, compare;
};

// A request of @transport (kRc or kXrc) and operation @op to QP @qpn at
// @psn, AckReq set. An XRC request names XRC SRQ @srqn in the XRCETH
// after its BTH.
std::vector<uint8_t> request(uint8_t transport, uint8_t op, uint32_t qpn,
			     uint32_t psn, uint32_t srqn, const Access &x)
{
	Transport t(transport | op, qpn, psn, true);

	if (transport == kXrc)
		t.u32(srqn);
	switch (op) {
	case kSendOnly:
		t.bytes(x.data, kLen);
		break;
	case kWriteOnly:
		t.u64(x.va).u32(x.rkey).u32(kLen).bytes(x.data, kLen);
		break;
	case kReadReq:
		t.u64(x.va).u32(x.rkey).u32(kLen);
		break;
	default:	// CMP_SWAP, FETCH_ADD
		t.u64(x.va).u32(x.rkey).u64(x.swap_add).u64(x.compare);
		break;
	}
	return t.b;
}

// An XRC response of operation @op (ACK or NAK, READ RESPONSE ONLY with
// kLen bytes of @data, ATOMIC ACKNOWLEDGE with @orig) to QP @qpn at @psn,
// AETH syndrome @syn and MSN @msn. Responses carry no XRCETH.
std::vector<uint8_t> response(uint8_t op, uint32_t qpn, uint32_t psn,
			      uint8_t syn, uint32_t msn, const uint8_t *data,
			      uint64_t orig)
{
	Transport t(kXrc | op, qpn, psn, false);

	t.u32(uint32_t(syn) << 24 | (msn & 0xffffff));
	if (op == kReadRespOnly)
		t.bytes(data, kLen);
	else if (op == kAtomicAck)
		t.u64(orig);
	return t.b;
}

// The @i-th PSN around @psn: the PSN itself, the next, the one before, or
// any.
uint32_t psn_near(uint32_t psn, long i, std::mt19937_64 &rnd)
{
	switch (i % 4) {
	case 0:
		return psn;
	case 1:
		return (psn + 1) & kPsnMask;
	case 2:
		return (psn - 1) & kPsnMask;
	default:
		return rnd() & kPsnMask;
	}
}

// kLen random bytes, none of them the sentinel.
void fill_payload(uint8_t *p, std::mt19937_64 &rnd)
{
	for (size_t i = 0; i < kLen; i++)
		do
			p[i] = uint8_t(rnd());
		while (p[i] == kSentinel);
}

struct Phantom {
	const Args &a;
	Attacker atk;
	std::mt19937_64 rnd{ std::random_device{}() };
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_xrcd *xrcd = nullptr;
	ibv_cq *srq_cq = nullptr, *ini_cq = nullptr, *rc_cq = nullptr;
	ibv_srq *srq = nullptr;
	uint32_t srqn = 0;
	ibv_qp *tgt = nullptr, *ini = nullptr, *rc = nullptr;
	int sgid = -1;
	// The MR every request aims at; the SRQ's receive buffers, one slot
	// of kLen bytes per receive.
	std::vector<uint8_t> mem, rbuf;
	ibv_mr *mem_mr = nullptr, *rbuf_mr = nullptr;
	// The next request PSN each QP expects; the XRC target's send PSN.
	uint32_t tgt_psn = 0, tgt_sq_psn = 0, ini_psn = 0, rc_psn = 0;
	long sent = 0;	// phantoms sent, all to be dropped

	explicit Phantom(const Args &args) : a(args) {}
};

// RESET to RTS, connected to attacker QP @dest, with what each type needs
// (ib_modify_qp_is_ok()): an XRC initiator has no responder, an XRC target
// no send queue. Every remote access flag.
bool connect_rts(const Phantom &p, ibv_qp *qp, uint32_t dest, uint32_t rq_psn,
		 uint32_t sq_psn)
{
	const bool ini = qp->qp_type == IBV_QPT_XRC_SEND;
	const bool tgt = qp->qp_type == IBV_QPT_XRC_RECV;
	ibv_qp_attr a{};
	int mask;

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = kRemote;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return false;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	set_path(a.ah_attr, p.sgid, p.a.peer);
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	       IBV_QP_RQ_PSN;
	if (!ini)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (ibv_modify_qp(qp, &a, mask))
		return false;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = scaled_qp_timeout();
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT;
	if (!tgt)
		mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	return !ibv_modify_qp(qp, &a, mask);
}

// The victim: in one PD the MR, an XRC initiator and an RC QP; an XRC
// domain with an XRC SRQ (in that PD, with a CQ of its own) and a target
// QP; each QP connected to the attacker and in RTS.
bool phantom_setup(Phantom &p)
{
	p.ctx = open_device(p.a.dev);
	if (!p.ctx) {
		fprintf(stderr, "no device %s\n", p.a.dev);
		return false;
	}
	p.sgid = gid_index(p.ctx, p.a.me);
	p.pd = ibv_alloc_pd(p.ctx);
	ibv_xrcd_init_attr xa{};
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	p.xrcd = ibv_open_xrcd(p.ctx, &xa);
	p.srq_cq = ibv_create_cq(p.ctx, 16, nullptr, nullptr, 0);
	p.ini_cq = ibv_create_cq(p.ctx, 16, nullptr, nullptr, 0);
	p.rc_cq = ibv_create_cq(p.ctx, 16, nullptr, nullptr, 0);
	if (p.sgid < 0 || !p.pd || !p.xrcd || !p.srq_cq || !p.ini_cq ||
	    !p.rc_cq) {
		fprintf(stderr, "setup: gid index %d: %s\n", p.sgid,
			strerror(errno));
		return false;
	}

	p.mem.assign(kMemLen, kSentinel);
	p.rbuf.assign((1 + kSrqRecvs) * kLen, kSentinel);
	p.mem_mr = ibv_reg_mr(p.pd, p.mem.data(), p.mem.size(),
			      IBV_ACCESS_LOCAL_WRITE | kRemote);
	p.rbuf_mr = ibv_reg_mr(p.pd, p.rbuf.data(), p.rbuf.size(),
			       IBV_ACCESS_LOCAL_WRITE);
	if (!p.mem_mr || !p.rbuf_mr) {
		fprintf(stderr, "reg_mr: %s\n", strerror(errno));
		return false;
	}

	ibv_srq_init_attr_ex sa{};
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
		       IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
	sa.srq_type = IBV_SRQT_XRC;
	sa.xrcd = p.xrcd;
	sa.cq = p.srq_cq;
	sa.pd = p.pd;
	sa.attr.max_wr = 2 * (1 + kSrqRecvs);
	sa.attr.max_sge = 1;
	p.srq = ibv_create_srq_ex(p.ctx, &sa);
	if (!p.srq || ibv_get_srq_num(p.srq, &p.srqn)) {
		fprintf(stderr, "XRC SRQ: %s\n", strerror(errno));
		return false;
	}

	ibv_qp_init_attr_ex ta{};
	ta.qp_type = IBV_QPT_XRC_RECV;
	ta.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	ta.xrcd = p.xrcd;
	p.tgt = ibv_create_qp_ex(p.ctx, &ta);
	ibv_qp_init_attr_ex ia{};
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = p.pd;
	ia.send_cq = p.ini_cq;
	ia.cap.max_send_wr = ia.cap.max_send_sge = 1;
	p.ini = ibv_create_qp_ex(p.ctx, &ia);
	ibv_qp_init_attr ra{};
	ra.qp_type = IBV_QPT_RC;
	ra.send_cq = ra.recv_cq = p.rc_cq;
	ra.cap.max_send_wr = ra.cap.max_recv_wr = 1;
	ra.cap.max_send_sge = ra.cap.max_recv_sge = 1;
	p.rc = ibv_create_qp(p.pd, &ra);
	if (!p.tgt || !p.ini || !p.rc) {
		fprintf(stderr, "create QPs: target %p, initiator %p, RC %p: "
			"%s\n", static_cast<void *>(p.tgt),
			static_cast<void *>(p.ini), static_cast<void *>(p.rc),
			strerror(errno));
		return false;
	}
	p.tgt_psn = p.rnd() & kPsnMask;
	p.tgt_sq_psn = p.rnd() & kPsnMask;
	p.ini_psn = p.rnd() & kPsnMask;
	p.rc_psn = p.rnd() & kPsnMask;
	if (!connect_rts(p, p.tgt, kTgtPeer, p.tgt_psn, p.tgt_sq_psn) ||
	    !connect_rts(p, p.ini, kIniPeer, p.ini_psn, p.rnd() & kPsnMask) ||
	    !connect_rts(p, p.rc, kRcPeer, p.rc_psn, p.rnd() & kPsnMask)) {
		fprintf(stderr, "connect QPs: %s\n", strerror(errno));
		return false;
	}
	return p.atk.open(p.a);
}

// Post a receive of rbuf's slot @slot (its wr_id) to the XRC SRQ.
bool post_srq_recv(Phantom &p, int slot)
{
	ibv_sge sge{ uintptr_t(p.rbuf.data() + slot * kLen), uint32_t(kLen),
		     p.rbuf_mr->lkey };
	ibv_recv_wr wr{}, *bad;

	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return !ibv_post_srq_recv(p.srq, &wr, &bad);
}

// One completion of @cq within @ms.
bool poll_one(ibv_cq *cq, int ms, ibv_wc &wc)
{
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::milliseconds(ms);
	do {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n)
			return n == 1;
		usleep(1000);
	} while (std::chrono::steady_clock::now() < end);
	return false;
}

// @cq has no completion; @what names it.
void cq_empty(ibv_cq *cq, const char *what)
{
	ibv_wc wc[4];
	int n = ibv_poll_cq(cq, 4, wc);
	CHECK(n == 0, "%s: %d completions, the first %s, wr_id %llu, QPN %#x",
	      what, n, n > 0 ? ibv_wc_status_str(wc[0].status) : "-",
	      n > 0 ? (unsigned long long)wc[0].wr_id : 0ULL,
	      n > 0 ? wc[0].qp_num : 0);
}

int qp_state(ibv_qp *qp)
{
	ibv_qp_attr a{};
	ibv_qp_init_attr ia{};

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

// The answer to attacker QP @qpn at @psn, within @ms each packet, in @pkt
// (BTH to ICRC). Answers at earlier PSNs of that QP (to a request sent
// again) are passed over; anything else is a failure.
bool answer(Phantom &p, int ms, uint32_t qpn, uint32_t psn,
	    std::vector<uint8_t> &pkt)
{
	while (p.atk.recv(ms, pkt)) {
		if (pkt.size() < 12 + 4 + 4) {
			CHECK(false, "a %zu-byte packet came back", pkt.size());
			continue;
		}
		uint32_t q = get32(&pkt[4]) & 0xffffff;
		uint32_t s = get32(&pkt[8]) & kPsnMask;
		if (q == qpn && s == psn)
			return true;
		CHECK(q == qpn && psn_before(s, psn),
		      "opcode %#x to QPN %#x PSN %u came back, awaiting QPN "
		      "%#x PSN %u", pkt[0], q, s, qpn, psn);
	}
	return false;
}

// Send request @req and take its answer, an ACK (AETH syndrome below 0x20)
// of opcode @want to attacker QP @qpn at @psn, into @ans.
bool ask(Phantom &p, const std::vector<uint8_t> &req, uint32_t qpn,
	 uint32_t psn, uint8_t want, std::vector<uint8_t> &ans,
	 const char *what)
{
	p.atk.send(req);
	if (!answer(p, p.a.wait_ms, qpn, psn, ans)) {
		CHECK(false, "%s: no answer at PSN %u", what, psn);
		return false;
	}
	CHECK(ans[0] == want && ans[12] < kRnrNak,
	      "%s: answered with opcode %#x, syndrome %#x; expected %#x, an "
	      "ACK", what, ans[0], ans[12], want);
	return ans[0] == want && ans[12] < kRnrNak;
}

// The packets are right, so the drops after are the QP types': the XRC
// target takes one of each XRC request the initiator will get (the same
// bytes but for the QPN), the RC QP of the initiator's PD lands the same
// WRITE. They change the MR below kFloodFrom only.
bool phantom_prove(Phantom &p)
{
	uint8_t data[kLen];
	std::vector<uint8_t> ans;
	const uint64_t mem = uintptr_t(p.mem.data());
	const uint32_t tgt = p.tgt->qp_num, rkey = p.mem_mr->rkey;
	const uint64_t add = 0x0101010101010101ULL;
	const uint64_t swap = ~kSentinel64;

	fill_payload(data, p.rnd);
	// A SEND, into the SRQ's receive. Sent again until answered (the
	// first may wait for neighbour resolution); a repeat is a duplicate
	// the target acknowledges again.
	if (!post_srq_recv(p, 0)) {
		CHECK(false, "post SRQ receive: %s", strerror(errno));
		return false;
	}
	Access x{ mem, rkey, data, 0, 0 };
	bool acked = false;
	for (int t = 0; t < 10 && !acked; t++) {
		p.atk.send(request(kXrc, kSendOnly, tgt, p.tgt_psn, p.srqn, x));
		acked = answer(p, 1000 * p.a.scale, kTgtPeer, p.tgt_psn, ans);
	}
	CHECK(acked, "the XRC SEND was not answered");
	if (!acked)
		return false;
	CHECK(ans[0] == (kXrc | kAck) && ans[12] < kRnrNak,
	      "the XRC SEND: answered with opcode %#x, syndrome %#x",
	      ans[0], ans[12]);
	ibv_wc wc{};
	bool done = poll_one(p.srq_cq, p.a.wait_ms, wc);
	CHECK(done && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_RECV && wc.byte_len == kLen &&
		      wc.wr_id == 0 && wc.qp_num == tgt,
	      "the XRC SEND's completion: %s, status %s, opcode %d, %u "
	      "bytes, wr_id %llu, QPN %#x (the target's %#x)",
	      done ? "polled" : "none", ibv_wc_status_str(wc.status),
	      wc.opcode, wc.byte_len, (unsigned long long)wc.wr_id,
	      wc.qp_num, tgt);
	CHECK(!memcmp(p.rbuf.data(), data, kLen),
	      "the XRC SEND's payload did not arrive");
	p.tgt_psn = (p.tgt_psn + 1) & kPsnMask;

	// A WRITE lands, a READ reads it back.
	if (ask(p, request(kXrc, kWriteOnly, tgt, p.tgt_psn, p.srqn, x),
		kTgtPeer, p.tgt_psn, kXrc | kAck, ans, "the XRC WRITE"))
		CHECK(!memcmp(p.mem.data(), data, kLen),
		      "the XRC WRITE did not land");
	p.tgt_psn = (p.tgt_psn + 1) & kPsnMask;
	if (ask(p, request(kXrc, kReadReq, tgt, p.tgt_psn, p.srqn, x),
		kTgtPeer, p.tgt_psn, kXrc | kReadRespOnly, ans,
		"the XRC READ"))
		CHECK(ans.size() == 12 + 4 + kLen + 4 &&
			      !memcmp(&ans[16], data, kLen),
		      "the XRC READ's response: %zu bytes, not the WRITE's "
		      "data", ans.size());
	p.tgt_psn = (p.tgt_psn + 1) & kPsnMask;

	// FETCH_ADD then CMP_SWAP on the 8 bytes after.
	uint64_t *word = reinterpret_cast<uint64_t *>(p.mem.data() + kLen);
	x = { mem + kLen, rkey, nullptr, add, 0 };
	if (ask(p, request(kXrc, kFetchAdd, tgt, p.tgt_psn, p.srqn, x),
		kTgtPeer, p.tgt_psn, kXrc | kAtomicAck, ans,
		"the XRC FETCH_ADD"))
		CHECK(ans.size() == 12 + 4 + 8 + 4 &&
			      get64(&ans[16]) == kSentinel64 &&
			      *word == kSentinel64 + add,
		      "the XRC FETCH_ADD: %zu bytes, original %#llx, now "
		      "%#llx", ans.size(),
		      ans.size() >= 24 ? (unsigned long long)get64(&ans[16]) :
					 0ULL, (unsigned long long)*word);
	p.tgt_psn = (p.tgt_psn + 1) & kPsnMask;
	x = { mem + kLen, rkey, nullptr, swap, kSentinel64 + add };
	if (ask(p, request(kXrc, kCmpSwap, tgt, p.tgt_psn, p.srqn, x),
		kTgtPeer, p.tgt_psn, kXrc | kAtomicAck, ans,
		"the XRC CMP_SWAP"))
		CHECK(ans.size() == 12 + 4 + 8 + 4 &&
			      get64(&ans[16]) == kSentinel64 + add &&
			      *word == swap,
		      "the XRC CMP_SWAP: %zu bytes, original %#llx, now "
		      "%#llx", ans.size(),
		      ans.size() >= 24 ? (unsigned long long)get64(&ans[16]) :
					 0ULL, (unsigned long long)*word);
	p.tgt_psn = (p.tgt_psn + 1) & kPsnMask;

	// The RC QP of the initiator's PD lands the WRITE (its RC opcode).
	x = { mem + 2 * kLen, rkey, data, 0, 0 };
	if (ask(p, request(kRc, kWriteOnly, p.rc->qp_num, p.rc_psn, 0, x),
		kRcPeer, p.rc_psn, kRc | kAck, ans, "the RC WRITE"))
		CHECK(!memcmp(p.mem.data() + 2 * kLen, data, kLen),
		      "the RC WRITE did not land");
	p.rc_psn = (p.rc_psn + 1) & kPsnMask;
	cq_empty(p.rc_cq, "the RC QP's CQ after the WRITE");
	return failures == 0;
}

// What came back to the attacker during a flood: how many, the first.
struct Back {
	long n = 0;
	uint8_t opcode = 0;
	uint32_t qpn = 0, psn = 0;
};

// Take what comes back within @ms of each packet into @back.
void drain(Phantom &p, int ms, Back &back)
{
	std::vector<uint8_t> pkt;

	while (p.atk.recv(ms, pkt)) {
		if (!back.n++ && pkt.size() >= 12) {
			back.opcode = pkt[0];
			back.qpn = get32(&pkt[4]) & 0xffffff;
			back.psn = get32(&pkt[8]) & kPsnMask;
		}
	}
}

// Counter @name of the device once it reaches @want, or its value after
// @ms.
long long wait_counter(const char *dev, const char *name, long long want,
		       int ms)
{
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::milliseconds(ms);
	long long v;

	while ((v = counter(dev, name)) >= 0 && v < want &&
	       std::chrono::steady_clock::now() < end)
		usleep(1000);
	return v;
}

// @n phantoms made by @make(i), at QP @qp, which must drop every one: in
// batches, each waited for until drop_qp_state has counted it. Nothing may
// come back, and @qp must stay in RTS.
template <typename F>
void flood(Phantom &p, ibv_qp *qp, const char *what, F make)
{
	const char *drops = "drop_qp_state";
	const long long base = counter(p.a.dev, drops);
	long sent = 0;
	Back back;

	while (sent < p.a.n) {
		long b = std::min<long>(kBatch, p.a.n - sent);
		for (long i = 0; i < b; i++)
			p.atk.send(make(sent + i));
		sent += b;
		long long got = wait_counter(p.a.dev, drops, base + sent,
					     p.a.wait_ms) - base;
		if (got < sent) {
			CHECK(false, "%s: %lld of %ld counted in %s after "
			      "%d ms", what, got, sent, drops, p.a.wait_ms);
			break;
		}
		drain(p, 0, back);
	}
	drain(p, 200 * p.a.scale, back);
	CHECK(back.n == 0, "%s: %ld of %ld answered, the first with opcode "
	      "%#x to QPN %#x PSN %u", what, back.n, sent, back.opcode,
	      back.qpn, back.psn);
	int state = qp_state(qp);
	CHECK(state == IBV_QPS_RTS, "%s: the QP is in state %d, not RTS",
	      what, state);
	p.sent += sent;
}

// At the XRC target, which awaits no response: responses of each kind.
void phantom_responses(Phantom &p)
{
	const uint32_t q = p.tgt->qp_num, s = p.tgt_sq_psn;
	static const uint8_t naks[] = { 0x60, 0x61, kNakRemAccess, 0x63,
					kRnrNak | 12 };
	uint8_t data[kLen];

	fill_payload(data, p.rnd);
	flood(p, p.tgt, "ACKs at the XRC target", [&](long i) {
		return response(kAck, q, psn_near(s, i, p.rnd), kAckSyndrome,
				i, nullptr, 0);
	});
	flood(p, p.tgt, "NAKs at the XRC target", [&](long i) {
		return response(kAck, q, psn_near(s, i, p.rnd), naks[i % 5], i,
				nullptr, 0);
	});
	flood(p, p.tgt, "READ RESPONSE ONLYs at the XRC target", [&](long i) {
		return response(kReadRespOnly, q, psn_near(s, i, p.rnd),
				kAckSyndrome, i, data, 0);
	});
	flood(p, p.tgt, "ATOMIC ACKNOWLEDGEs at the XRC target", [&](long i) {
		return response(kAtomicAck, q, psn_near(s, i, p.rnd),
				kAckSyndrome, i, nullptr, kSentinel64);
	});
	cq_empty(p.srq_cq, "the XRC SRQ's CQ after the responses");
}

// At the XRC initiator, which has no responder: requests of each kind with
// the MR's key, aimed at its sentinel bytes (a CMP_SWAP would match). The
// SENDs last: kernels that took them crashed.
void phantom_requests(Phantom &p)
{
	static const struct {
		uint8_t op;
		const char *what;
	} kinds[] = {
		{ kWriteOnly, "RDMA WRITE ONLYs at the XRC initiator" },
		{ kReadReq, "RDMA READ REQUESTs at the XRC initiator" },
		{ kFetchAdd, "FETCH_ADDs at the XRC initiator" },
		{ kCmpSwap, "CMP_SWAPs at the XRC initiator" },
		{ kSendOnly, "SEND ONLYs at the XRC initiator" },
	};
	const uint32_t q = p.ini->qp_num, s = p.ini_psn;
	const uint64_t from = uintptr_t(p.mem.data()) + kFloodFrom;
	const uint64_t words = (kMemLen - kFloodFrom - kLen) / 8;
	uint8_t data[kLen];

	fill_payload(data, p.rnd);
	for (const auto &k : kinds) {
		Access x{ 0, p.mem_mr->rkey, data, 0, kSentinel64 };
		x.swap_add = k.op == kCmpSwap ? ~kSentinel64 : 1;
		flood(p, p.ini, k.what, [&](long i) {
			x.va = from + p.rnd() % words * 8;
			return request(kXrc, k.op, q, psn_near(s, i, p.rnd),
				       p.srqn, x);
		});
	}
	cq_empty(p.ini_cq, "the XRC initiator's CQ after the requests");
	cq_empty(p.srq_cq, "the XRC SRQ's CQ after the requests");
}

// Destroy what phantom_setup() made, in reverse.
void phantom_teardown(Phantom &p)
{
	for (ibv_qp *qp : { p.rc, p.ini, p.tgt })
		CHECK(ibv_destroy_qp(qp) == 0, "destroy QP %#x: %s",
		      qp->qp_num, strerror(errno));
	CHECK(ibv_destroy_srq(p.srq) == 0, "destroy the XRC SRQ");
	CHECK(ibv_dereg_mr(p.rbuf_mr) == 0 && ibv_dereg_mr(p.mem_mr) == 0,
	      "dereg MRs");
	for (ibv_cq *cq : { p.rc_cq, p.ini_cq, p.srq_cq })
		CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
	CHECK(ibv_close_xrcd(p.xrcd) == 0, "close the XRCD");
	CHECK(ibv_dealloc_pd(p.pd) == 0, "dealloc PD");
	ibv_close_device(p.ctx);
}

int phantom(const Args &a)
{
	Phantom p(a);

	if (!phantom_setup(p))
		return 1;
	if (!phantom_prove(p)) {
		printf("%d failures\n", failures);
		return 1;
	}
	// Late answers to a proof sent again, then what must not change.
	Back late;
	drain(p, 100 * a.scale, late);
	for (int i = 1; i <= kSrqRecvs; i++)
		CHECK(post_srq_recv(p, i), "post SRQ receive: %s",
		      strerror(errno));
	const std::vector<uint8_t> mem_was = p.mem, rbuf_was = p.rbuf;
	long long others = 0;
	for (const char *c : other_drops)
		others -= counter(a.dev, c);
	const long long drops = counter(a.dev, "drop_qp_state");
	const long long rcvd = counter(a.dev, "rcvd_pkts");

	phantom_responses(p);
	long responses = p.sent;
	CHECK(p.mem == mem_was, "the MR changed under phantom responses");
	phantom_requests(p);

	for (const char *c : other_drops)
		others += counter(a.dev, c);
	const long long dropped = counter(a.dev, "drop_qp_state") - drops;
	const long long got = counter(a.dev, "rcvd_pkts") - rcvd;
	printf("%ld phantom responses at an XRC target, %ld requests at an "
	       "XRC initiator: %lld received, %lld counted in drop_qp_state, "
	       "%lld in other drop counters\n", responses, p.sent - responses,
	       got, dropped, others);
	CHECK(got == p.sent, "%lld packets received for %ld sent", got,
	      p.sent);
	CHECK(dropped >= p.sent, "drop_qp_state counted %lld for %ld sent",
	      dropped, p.sent);
	CHECK(others == 0, "%lld dropped for another reason than the QP "
	      "type (bad ICRC, malformed, bad source, no QP, queue full, "
	      "ghost response)", others);
	CHECK(p.mem == mem_was, "the MR changed under phantom requests");
	CHECK(p.rbuf == rbuf_was, "a phantom landed in the SRQ's buffers");
	int st = qp_state(p.tgt), si = qp_state(p.ini);
	CHECK(st == IBV_QPS_RTS && si == IBV_QPS_RTS,
	      "QP states after the phantoms: target %d, initiator %d; "
	      "expected RTS (%d)", st, si, IBV_QPS_RTS);
	cq_empty(p.rc_cq, "the RC QP's CQ");
	phantom_teardown(p);
	printf("%d failures\n", failures);
	return failures != 0;
}

} // namespace

int main(int argc, char **argv)
{
	Args a{};
	bool ph = argc > 5 && !strcmp(argv[5], "phantom");
	int nth = ph ? 6 : 5;

	if (argc < 5 || argc > nth + 1) {
		fprintf(stderr, "usage: %s DEV NETNS MY_IP PEER_IP [N]\n"
			"       %s DEV NETNS MY_IP PEER_IP phantom [N]\n",
			argv[0], argv[0]);
		return 2;
	}
	a.dev = argv[1];
	a.ns = argv[2];
	a.n = argc > nth ? atol(argv[nth]) : ph ? 1000 : 100000;
	if (!inet_aton(argv[3], &a.me) || !inet_aton(argv[4], &a.peer) ||
	    a.n <= 0) {
		fprintf(stderr, "bad address or count\n");
		return 2;
	}
	// SROCE_TIME_SCALE: a slower kernel (debug, TCG) gets more time.
	const char *scale = getenv("SROCE_TIME_SCALE");
	a.scale = std::max(1, scale ? atoi(scale) : 1);
	a.wait_ms = 10000 * a.scale;
	crc_init();
	return ph ? phantom(a) : key_flood(a);
}
