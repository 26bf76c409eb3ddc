/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fi_rma: RDMA Writes and Reads through libfabric's RMA calls (fi_write, fi_read) over an
 * FI_EP_MSG endpoint, as a libfabric program does them, with every byte checked, then a
 * bandwidth run of each with a window of operations in flight.
 *
 *   server: fi_rma [-p PROV] [-P PORT] [-b ADDR] [-s SIZE] [-n ITERS] [-w WINDOW]
 *   client: fi_rma [same options] SERVER_ADDR
 *
 * The client writes SIZE octets of a pattern into the server's registered region; the
 * server checks every octet, fills the region with another pattern and says so; the client
 * reads it back and checks every octet. Then ITERS Writes and ITERS Reads of SIZE with
 * WINDOW in flight, each timed. Keys and addresses travel in Sends on the same endpoint,
 * so nothing but libfabric's connection manager is needed. Exit status 0 only when every
 * check passed on this side.
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define MAX_WINDOW 64
#define TIMEOUT_S 30

enum { MSG_REGION = 1, MSG_CHECK, MSG_CHECKED, MSG_DONE };

struct msg {
	uint32_t type, status;
	uint64_t addr, key, len, seed;
};

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fid_pep *pep;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_mr *mr;
static struct fi_info *info;
static uint8_t *region, *local, *msgs;   /* msgs: [0] to send, [1] received */
static size_t size = 1u << 20;
static unsigned iters = 2000, window = 16;
static struct fi_context ctx[MAX_WINDOW + 2];

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fi_rma: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static void ck(int rc, const char *what)
{
	if (rc != 0)
		die("%s: %s (%d)", what, fi_strerror(-rc), rc);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint8_t pattern(uint64_t seed, size_t i)
{
	return (uint8_t)((i * 131u + seed * 7u + (i >> 8)) & 0xff);
}

static void fill(uint8_t *b, uint64_t seed)
{
	for (size_t i = 0; i < size; i++)
		b[i] = pattern(seed, i);
}

/* @return the first octet that differs from the pattern, or size. */
static size_t check(const uint8_t *b, uint64_t seed)
{
	for (size_t i = 0; i < size; i++)
		if (b[i] != pattern(seed, i))
			return i;
	return size;
}

/* Waits for @p n completions. */
static void reap(unsigned n)
{
	struct fi_cq_entry e[16];
	double limit = now_s() + TIMEOUT_S;

	while (n > 0) {
		ssize_t got = fi_cq_read(cq, e, n < 16 ? n : 16);

		if (got > 0) {
			n -= (unsigned)got;
			continue;
		}
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(cq, &err, 0);
			die("completion error: %s (prov_errno %d)",
			    fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0), err.prov_errno);
		}
		if (got != -FI_EAGAIN)
			die("fi_cq_read: %s", fi_strerror((int)-got));
		if (now_s() > limit)
			die("no completion in %d s", TIMEOUT_S);
	}
}

static void post_recv(void)
{
	ck((int)fi_recv(ep, msgs + sizeof(struct msg), sizeof(struct msg), fi_mr_desc(mr), 0,
			&ctx[MAX_WINDOW + 1]), "fi_recv");
}

static void send_msg(const struct msg *m)
{
	memcpy(msgs, m, sizeof(*m));
	ck((int)fi_send(ep, msgs, sizeof(*m), fi_mr_desc(mr), 0, &ctx[MAX_WINDOW]), "fi_send");
	reap(1);
}

/* Waits for the next message (its receive and our Sends share the CQ: one completion
 * here is the receive, as every Send was reaped when posted), and posts the next receive. */
static struct msg recv_msg(uint32_t type)
{
	struct msg m;

	reap(1);
	memcpy(&m, msgs + sizeof(struct msg), sizeof(m));
	post_recv();
	if (m.type != type)
		die("message %u where %u was expected", m.type, type);
	return m;
}

static void wait_event(uint32_t want, struct fi_eq_cm_entry *entry)
{
	uint32_t event;
	ssize_t rc = fi_eq_sread(eq, &event, entry, sizeof(*entry), TIMEOUT_S * 1000, 0);

	if (rc == -FI_EAVAIL) {
		struct fi_eq_err_entry err = { 0 };

		fi_eq_readerr(eq, &err, 0);
		die("connection event error: %s", fi_eq_strerror(eq, err.prov_errno, err.err_data, NULL, 0));
	}
	if (rc < 0)
		die("fi_eq_sread: %s", fi_strerror((int)-rc));
	if (event != want)
		die("connection event %u where %u was expected", event, want);
}

static void open_ep(struct fi_info *fi)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT, .size = 256 };
	uint64_t access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV;

	if (domain == NULL)
		ck(fi_domain(fabric, fi, &domain, NULL), "fi_domain");
	ck(fi_endpoint(domain, fi, &ep, NULL), "fi_endpoint");
	ck(fi_cq_open(domain, &cq_attr, &cq, NULL), "fi_cq_open");
	ck(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind cq");
	ck(fi_ep_bind(ep, &eq->fid, 0), "fi_ep_bind eq");
	ck(fi_enable(ep), "fi_enable");
	/* One region: the target, then the local source and sink, then two message slots. */
	if ((region = aligned_alloc(4096, 2 * size + 4096)) == NULL)
		die("no memory for %zu octets", 2 * size);
	local = region + size;
	msgs = local + size;
	ck(fi_mr_reg(domain, region, 2 * size + 4096, access, 0, 0, 0, &mr, NULL), "fi_mr_reg");
	post_recv();
}

/* Times iters Writes (or Reads) of size octets, window of them in flight. @return Gb/s. */
static double run(bool write, const struct msg *peer)
{
	unsigned posted = 0, done = 0;
	double t0 = now_s();

	while (done < iters) {
		while (posted < iters && posted - done < window) {
			ssize_t rc = write
				     ? fi_write(ep, local, size, fi_mr_desc(mr), 0, peer->addr, peer->key,
						&ctx[posted % window])
				     : fi_read(ep, local, size, fi_mr_desc(mr), 0, peer->addr, peer->key,
					       &ctx[posted % window]);

			if (rc == -FI_EAGAIN)
				break;
			ck((int)rc, write ? "fi_write" : "fi_read");
			posted++;
		}
		reap(1);
		done++;
	}
	return (double)size * iters * 8 / (now_s() - t0) / 1e9;
}

int main(int argc, char **argv)
{
	const char *prov = "verbs", *port = "18520", *bind_addr = NULL, *server;
	struct fi_info *hints;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_cm_entry entry;
	struct msg m;
	int opt;

	while ((opt = getopt(argc, argv, "p:P:b:s:n:w:")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'P': port = optarg; break;
		case 'b': bind_addr = optarg; break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'n': iters = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'w': window = (unsigned)strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: fi_rma [-p PROV] [-P PORT] [-b ADDR] [-s SIZE] [-n ITERS] "
				"[-w WINDOW] [SERVER_ADDR]\n");
			return 2;
		}
	}
	if (size == 0 || size > (1u << 30) || window == 0 || window > MAX_WINDOW || iters == 0)
		die("-s 1 to 1 GiB, -w 1 to %d, -n at least 1", MAX_WINDOW);
	server = optind < argc ? argv[optind] : NULL;

	if ((hints = fi_allocinfo()) == NULL)
		die("fi_allocinfo");
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	if (server != NULL)
		ck(fi_getinfo(FI_VERSION(1, 9), server, port, 0, hints, &info), "fi_getinfo");
	else
		ck(fi_getinfo(FI_VERSION(1, 9), bind_addr, port, FI_SOURCE, hints, &info), "fi_getinfo");
	printf("fi_rma: provider %s, domain %s, mr_mode 0x%x\n", info->fabric_attr->prov_name,
	       info->domain_attr->name, (unsigned)info->domain_attr->mr_mode);
	ck(fi_fabric(info->fabric_attr, &fabric, NULL), "fi_fabric");
	ck(fi_eq_open(fabric, &eq_attr, &eq, NULL), "fi_eq_open");

	if (server == NULL) {
		ck(fi_passive_ep(fabric, info, &pep, NULL), "fi_passive_ep");
		ck(fi_pep_bind(pep, &eq->fid, 0), "fi_pep_bind");
		ck(fi_listen(pep), "fi_listen");
		printf("fi_rma: listening on port %s\n", port);
		fflush(stdout);
		wait_event(FI_CONNREQ, &entry);
		open_ep(entry.info);
		ck(fi_accept(ep, NULL, 0), "fi_accept");
		wait_event(FI_CONNECTED, &entry);
		fi_freeinfo(entry.info);
		/* The region's address and key, then answer the client's checks. */
		m = (struct msg){ .type = MSG_REGION, .len = size, .key = fi_mr_key(mr),
				  .addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uintptr_t)region : 0 };
		send_msg(&m);
		struct msg c = recv_msg(MSG_CHECK);
		size_t at = check(region, c.seed);

		printf("fi_rma: the client's Write of %zu octets: %s\n", size,
		       at == size ? "every octet as sent" : "DIFFERS");
		if (at != size)
			printf("fi_rma: octet %zu is 0x%02x, not 0x%02x\n", at, region[at], pattern(c.seed, at));
		fill(region, c.seed + 1);
		m = (struct msg){ .type = MSG_CHECKED, .status = at == size, .seed = c.seed + 1 };
		send_msg(&m);
		recv_msg(MSG_DONE);
		printf("fi_rma: %s\n", at == size ? "PASS" : "FAIL");
		return at == size ? 0 : 1;
	}

	open_ep(info);
	ck(fi_connect(ep, info->dest_addr, NULL, 0), "fi_connect");
	wait_event(FI_CONNECTED, &entry);
	struct msg peer = recv_msg(MSG_REGION);

	if (peer.len < size)
		die("the server's region holds %" PRIu64 " octets, not %zu", peer.len, size);
	uint64_t seed = (uint64_t)getpid();

	fill(local, seed);
	ck((int)fi_write(ep, local, size, fi_mr_desc(mr), 0, peer.addr, peer.key, &ctx[0]), "fi_write");
	reap(1);
	m = (struct msg){ .type = MSG_CHECK, .seed = seed };
	send_msg(&m);
	struct msg r = recv_msg(MSG_CHECKED);

	printf("fi_rma: Write of %zu octets %s by the server\n", size,
	       r.status ? "checked, every octet" : "FOUND WRONG");
	memset(local, 0, size);
	ck((int)fi_read(ep, local, size, fi_mr_desc(mr), 0, peer.addr, peer.key, &ctx[0]), "fi_read");
	reap(1);
	size_t at = check(local, r.seed);

	printf("fi_rma: Read of %zu octets: %s\n", size,
	       at == size ? "checked, every octet" : "DIFFERS");
	if (at != size)
		printf("fi_rma: octet %zu is 0x%02x, not 0x%02x\n", at, local[at], pattern(r.seed, at));
	printf("fi_rma: fi_write %zu octets, %u in flight: %.2f Gb/s (%u)\n", size, window,
	       run(true, &peer), iters);
	printf("fi_rma: fi_read %zu octets, %u in flight: %.2f Gb/s (%u)\n", size, window,
	       run(false, &peer), iters);
	m = (struct msg){ .type = MSG_DONE };
	send_msg(&m);
	bool ok = r.status && at == size;

	printf("fi_rma: %s\n", ok ? "PASS" : "FAIL");
	fi_shutdown(ep, 0);
	return ok ? 0 : 1;
}
