/* SPDX-License-Identifier: BSD-3-Clause */
#include "uiw_fault.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "uiw_mbuf.h"
#include "uiw_time.h"

static uint64_t next_rand(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static bool chance(struct uiw_fault *f, uint32_t p)
{
	return p != 0 && (uint32_t)(next_rand(&f->rng) >> 32) < p;
}

static int parse_percent(const char *v, uint32_t *out)
{
	char *end;
	double p = strtod(v, &end);

	if (end == v || *end != '\0' || p < 0 || p > 100)
		return -1;
	*out = (uint32_t)(p / 100.0 * 4294967295.0);
	return 0;
}

static int parse_us(const char *v, uint32_t *out)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);

	if (end == v || *end != '\0' || n > 10000000)
		return -1;
	*out = (uint32_t)n;
	return 0;
}

int uiw_fault_parse(const char *spec, struct uiw_fault_dir *d, char *err, size_t errlen)
{
	char buf[128];
	char *save = NULL;

	memset(d, 0, sizeof(*d));
	d->reorder_us = 100;
	if (strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "fault spec too long");
		return -1;
	}
	strcpy(buf, spec);
	for (char *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		int rc = -1;

		if (eq != NULL) {
			*eq = '\0';
			if (strcmp(item, "drop") == 0)
				rc = parse_percent(eq + 1, &d->drop);
			else if (strcmp(item, "dup") == 0)
				rc = parse_percent(eq + 1, &d->dup);
			else if (strcmp(item, "corrupt") == 0)
				rc = parse_percent(eq + 1, &d->corrupt);
			else if (strcmp(item, "reorder") == 0)
				rc = parse_percent(eq + 1, &d->reorder);
			else if (strcmp(item, "delay_us") == 0)
				rc = parse_us(eq + 1, &d->delay_us);
			else if (strcmp(item, "reorder_us") == 0)
				rc = parse_us(eq + 1, &d->reorder_us);
		}
		if (rc != 0) {
			snprintf(err, errlen, "fault spec: bad item '%s' (drop, dup, corrupt, reorder "
				 "in percent; delay_us, reorder_us)", item);
			return -1;
		}
	}
	return 0;
}

/* Flips one bit past the Ethernet header, so the damage reaches the checksums above. */
static void corrupt(struct uiw_fault *f, struct rte_mbuf *m)
{
	uint32_t len = m->data_len;

	if (len > 14 && RTE_MBUF_DIRECT(m) && rte_mbuf_refcnt_read(m) == 1) {
		uint32_t off = 14 + (uint32_t)(next_rand(&f->rng) % (len - 14));

		rte_pktmbuf_mtod(m, uint8_t *)[off] ^= (uint8_t)(1u << (next_rand(&f->rng) & 7));
	}
}

static void hold(struct uiw_fault_dir *d, struct rte_mbuf *m, uint64_t due)
{
	if (d->qn == UIW_FAULT_QUEUE) {
		rte_pktmbuf_free(m);
		d->dropped++;
		return;
	}
	d->q[d->qn].m = m;
	d->q[d->qn++].due = due;
}

/* Applies the faults of @p d to @p n frames; what survives is held with its due time. */
static void inject(struct uiw_fault *f, struct uiw_fault_dir *d, struct rte_mbuf **pkts,
		   uint16_t n, struct rte_mempool *pool, uint64_t now)
{
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint64_t due = now + (uint64_t)d->delay_us * 1000;

		if (m == NULL) {   /* no mbuf for the copy of a frame on lent memory */
			d->dropped++;
			continue;
		}
		if (chance(f, d->drop)) {
			rte_pktmbuf_free(m);
			d->dropped++;
			continue;
		}
		if (chance(f, d->dup)) {
			struct rte_mbuf *copy = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX);

			if (copy != NULL) {
				hold(d, copy, due);
				d->duplicated++;
			}
		}
		if (chance(f, d->corrupt)) {
			corrupt(f, m);
			d->corrupted++;
		}
		if (chance(f, d->reorder)) {
			due += (uint64_t)d->reorder_us * 1000;
			d->reordered++;
		} else if (d->delay_us != 0) {
			d->delayed++;
		}
		hold(d, m, due);
	}
}

/* Moves frames that are due to @p out (at most @p max), keeping the others in order. */
static uint16_t release(struct uiw_fault_dir *d, struct rte_mbuf **out, uint16_t max, uint64_t now)
{
	uint16_t n = 0;
	unsigned keep = 0;

	for (unsigned i = 0; i < d->qn; i++) {
		if (n < max && d->q[i].due <= now)
			out[n++] = d->q[i].m;
		else
			d->q[keep++] = d->q[i];
	}
	d->qn = keep;
	return n;
}

/* Sends what the transmit side holds and is due. */
static void tx_release(struct uiw_port *port, struct uiw_fault *f, uint64_t now)
{
	struct rte_mbuf *out[UIW_PORT_TX_BUF];
	uint16_t k, sent;

	do {
		k = release(&f->tx, out, UIW_PORT_TX_BUF, now);
		sent = k > 0 ? f->inner_tx(port, out, k) : 0;
		for (uint16_t i = sent; i < k; i++) {
			rte_pktmbuf_free(out[i]);
			port->counters[UIW_PORT_C_tx_drop_full]++;
		}
	} while (k == UIW_PORT_TX_BUF);
}

/*
 * Each poll's receive also sends the held transmit frames that are due: a frame held back
 * (reorder_us, delay_us) must leave when its time comes, not when the stack next transmits.
 * An ACK held that way while the stack had nothing else to send waited for the peer's
 * retransmission timeout, and its old TSecr then gave the peer an RTT sample of seconds.
 */
static uint16_t fault_rx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct uiw_fault *f = port->fault;
	uint64_t now = uiw_now_ns();
	uint16_t got = f->inner_rx(port, pkts, n);

	if (f->tx.qn > 0)
		tx_release(port, f, now);
	inject(f, &f->rx, pkts, got, port->pool, now);
	return release(&f->rx, pkts, n, now);
}

static uint16_t fault_tx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct uiw_fault *f = port->fault;
	uint64_t now = uiw_now_ns();
	const struct uiw_fault_dir *d = &f->tx;

	/* No faults on transmit (those on receive only): the frames go to the port as they
	 * are, and what it refuses stays the stack's. */
	if (d->drop == 0 && d->dup == 0 && d->corrupt == 0 && d->reorder == 0 && d->delay_us == 0 &&
	    d->qn == 0)
		return f->inner_tx(port, pkts, n);
	/* The wrapper holds frames past tx_burst, which a frame pointing into lent memory
	 * (uiw_port.tx_ext) must not outlive: such frames are held as copies. */
	for (uint16_t i = 0; i < n; i++) {
		if (!uiw_mbuf_has_extbuf(pkts[i]))
			continue;
		struct rte_mbuf *copy = rte_pktmbuf_copy(pkts[i], port->pool, 0, UINT32_MAX);

		rte_pktmbuf_free(pkts[i]);
		pkts[i] = copy;
	}
	inject(f, &f->tx, pkts, n, port->pool, now);
	tx_release(port, f, now);
	return n; /* every frame handed in is now the wrapper's */
}

int uiw_fault_attach(struct uiw_port *port, struct uiw_fault *f, const struct uiw_config *cfg,
		     char *err, size_t errlen)
{
	if (cfg->fault_rx[0] == '\0' && cfg->fault_tx[0] == '\0')
		return 0;
	memset(f, 0, sizeof(*f));
	if (uiw_fault_parse(cfg->fault_rx, &f->rx, err, errlen) != 0 ||
	    uiw_fault_parse(cfg->fault_tx, &f->tx, err, errlen) != 0)
		return -1;
	f->rng = 0x9E3779B97F4A7C15ull ^ cfg->fault_seed;
	if (f->rng == 0)
		f->rng = 1;
	f->inner_rx = port->rx_burst;
	f->inner_tx = port->tx_burst;
	port->rx_burst = fault_rx;
	port->tx_burst = fault_tx;
	port->fault = f;
	return 0;
}

void uiw_fault_detach(struct uiw_port *port)
{
	struct uiw_fault *f = port->fault;

	if (f == NULL)
		return;
	for (unsigned i = 0; i < f->rx.qn; i++)
		rte_pktmbuf_free(f->rx.q[i].m);
	for (unsigned i = 0; i < f->tx.qn; i++)
		rte_pktmbuf_free(f->tx.q[i].m);
	f->rx.qn = f->tx.qn = 0;
	port->rx_burst = f->inner_rx;
	port->tx_burst = f->inner_tx;
	port->fault = NULL;
}

void uiw_fault_print(FILE *out, const struct uiw_fault *f)
{
	fprintf(out, "  faults rx: dropped %" PRIu64 " duplicated %" PRIu64 " corrupted %" PRIu64
		     " reordered %" PRIu64 "\n", f->rx.dropped, f->rx.duplicated, f->rx.corrupted,
		f->rx.reordered);
	fprintf(out, "  faults tx: dropped %" PRIu64 " duplicated %" PRIu64 " corrupted %" PRIu64
		     " reordered %" PRIu64 "\n", f->tx.dropped, f->tx.duplicated, f->tx.corrupted,
		f->tx.reordered);
}
