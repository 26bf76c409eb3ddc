/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * EAL start-up and port bring-up for any DPDK PMD, plus the port object the stack sends
 * and receives through.
 *
 * A port is either an ethdev (uiw_port_open(), uiw_port_open_ethdev()) or a test port
 * (uiw_port_init_test()) whose RX and TX are functions supplied by the caller. Protocol code
 * sees only struct uiw_port: it queues frames with uiw_port_tx() and the poll loop flushes
 * them with uiw_port_flush().
 */
#ifndef UIW_PORT_H
#define UIW_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include "uiw_config.h"
#include "uiw_counters.h"

#define UIW_PORT_NONE UINT16_MAX /**< port_id of a test port */
#define UIW_PORT_TX_BUF 64       /**< frames queued before a forced flush */
#define UIW_PORT_TSO_SEGS 64     /**< the most mbufs one TSO frame chains */

#define UIW_PORT_COUNTERS(X)                                                         \
	X(rx_packets, "frames received from the PMD")                                \
	X(rx_bytes, "bytes received from the PMD")                                   \
	X(rx_bursts, "receive bursts that brought frames (rx_packets / rx_bursts: frames a burst)") \
	X(tx_packets, "frames the PMD accepted")                                     \
	X(tx_bytes, "bytes the PMD accepted")                                        \
	X(tx_bursts, "transmit bursts the PMD took frames from (tx_packets / tx_bursts: frames a burst)") \
	X(tx_drop_full, "frames dropped: the PMD's TX ring and ours full, or the link down") \
	X(tx_busy, "frames the PMD refused for now (kept, offered again)")           \
	X(tx_drop_too_big, "frames dropped: longer than the port's MTU allows")         \
	X(tx_drop_lent, "unsent frames dropped: their memory was taken back by its owner") \
	X(tx_drop_nombuf, "frames not built: the mbuf pool was empty")                  \
	X(rx_missed, "frames the PMD dropped: RX queue full (ethdev imissed)")         \
	X(rx_errors, "frames the PMD received in error (ethdev ierrors)")              \
	X(rx_nombuf, "frames the PMD dropped: no mbuf to receive into")               \
	X(ctl_windows, "pauses of the data path for the PMD's control thread (memif)") \
	X(tx_drop_prepare, "frames dropped: the PMD refused to prepare them for its offloads") \
	X(link_down, "times the link went down (checked every 100 ms)")              \
	X(link_up, "times the link came back up")

#define UIW_PORT_C_(name, help) UIW_PORT_C_##name,
enum uiw_port_counter { UIW_PORT_COUNTERS(UIW_PORT_C_) UIW_PORT_C__COUNT };
#undef UIW_PORT_C_

extern const struct uiw_counter_desc uiw_port_counter_desc[UIW_PORT_C__COUNT];

struct uiw_port;

/** A burst function: returns how many frames it received into, or took from, @p pkts. */
typedef uint16_t (*uiw_burst_fn)(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n);

/** A NIC's receive-side scaling as the port runs it: which queue a TCP/IPv4 segment goes
 *  to (the Toeplitz hash of its 4-tuple under the key, indexing the redirection table). */
struct uiw_port_rss {
	uint8_t key[64];
	uint16_t reta_size;
	uint16_t reta[];              /**< queue of each hash % reta_size */
};

struct uiw_port {
	uint16_t port_id;             /**< ethdev port, or UIW_PORT_NONE */
	uint16_t queue;               /**< the RX/TX queue pair this handle bursts on */
	uint16_t nqueues;             /**< queue pairs the port was set up with */
	bool shared;                  /**< another handle owns the port (uiw_port_open_queue) */
	uint16_t mtu;                 /**< IP MTU in use */
	struct rte_ether_addr mac;
	struct rte_mempool *pool;     /**< frames built by the stack come from here */
	struct rte_mempool *rx_pool;  /**< the PMD receives into this one (key rx_buf_size;
	                               *   NULL: into pool) */
	bool own_pool;                /**< pool freed by uiw_port_close() */
	bool is_vdev;                 /**< removed by uiw_port_close() */
	uint64_t tx_offloads;         /**< RTE_ETH_TX_OFFLOAD_* enabled on the port */
	uint64_t rx_offloads;         /**< RTE_ETH_RX_OFFLOAD_* enabled on the port */
	uint32_t tso_max;             /**< TSO: the most TCP payload one frame may carry for the
	                               *   PMD to cut (0: no TSO) */
	uint16_t tso_segs;            /**< TSO: the most mbufs one such frame may chain */
	bool guest_touch;             /**< vhost-user: its guest's memory is touched as the guest
	                               *   comes up (an ethdev event callback) */
	bool tso_guest;               /**< vhost-user with key tso: tso_max follows whether
	                               *   the guest takes large frames (it negotiated
	                               *   VIRTIO_NET_F_GUEST_TSO4), read as the link is
	                               *   (uiw_port_link_check()) */
	struct rte_mempool *slabs;    /**< TSO: mbufs of 64 KiB that MPA builds FPDUs side by
	                               *   side in (key tso_slabs; NULL: none) */
	const struct uiw_port_rss *rss; /**< RSS over the queue pairs, when the PMD reports
	                               *   its key and table (NULL: none) */
	uiw_burst_fn rx_burst;
	uiw_burst_fn tx_burst;
	void *user;                   /**< for the burst functions of a test port */
	void *fault;                  /**< struct uiw_fault when faults are injected */
	void *capture;                /**< struct uiw_capture when key pcap is set */
	bool gated;                   /**< memif: bursts take turns with its control thread */
	bool tx_ext;                  /**< the PMD copies each frame as it takes it: frames may
	                               *   point into memory DPDK does not know (lent memory) */
	bool tx_dma;                  /**< a PCI NIC reading frames through the IOMMU with IOVA
	                               *   as the address: frames may point into registered
	                               *   memory mapped for it (uiw_dma.h) */
	bool tx_over;                 /**< the PMD keeps each frame until its peer has read
	                               *   it, then frees it inside a later tx_burst, in the
	                               *   sending thread (virtio-user): frames may be built
	                               *   over queued mbufs (uiw_mbuf_over()), as on tx_ext
	                               *   ports */
	bool tx_prepare;              /**< offloads on: rte_eth_tx_prepare() before each burst */
	uint16_t tx_n;
	uint64_t tx_retry_ns;         /**< a ring that took nothing is offered again from here */
	uint64_t link_check_ns;       /**< when uiw_port_link_check() next reads the link */
	int8_t link;                  /**< last link state read: 1 up, 0 down, -1 not yet */
	struct rte_mbuf *tx_buf[UIW_PORT_TX_BUF];
	uint64_t counters[UIW_PORT_C__COUNT];
	char name[64];
};

/**
 * The Toeplitz hash a NIC computes for a TCP/IPv4 segment from @p src:@p sport to
 * @p dst:@p dport (host order) under @p key (at least 16 octets are read).
 */
uint32_t uiw_port_rss_hash(const uint8_t *key, uint32_t src, uint16_t sport, uint32_t dst,
			   uint16_t dport);

/** The queue @p rss puts a TCP/IPv4 segment from @p src:@p sport to @p dst:@p dport on. */
static inline unsigned uiw_port_rss_queue(const struct uiw_port_rss *rss, uint32_t src,
					  uint16_t sport, uint32_t dst, uint16_t dport)
{
	return rss->reta[uiw_port_rss_hash(rss->key, src, sport, dst, dport) % rss->reta_size];
}

/**
 * Builds the EAL argument vector for @p cfg: core list, --no-pci unless the port is a PCI
 * address (then -a ADDR), hugepages or --no-huge as docs/CONFIG.md explains, log level,
 * then the configured extra arguments.
 * @param store  space the arguments are written into
 * @return the argument count (argv[0] = @p prog, argv[argc] = NULL), or -1 if they do
 *         not fit.
 */
int uiw_eal_build_args(const struct uiw_config *cfg, const char *prog, char **argv,
		       int max_args, char *store, size_t store_len);

/**
 * Removes the socket file of @p cfg's port if it is a memif server's with a path: for a
 * process about to exit without closing its port, so the next server finds no file.
 */
void uiw_port_forget_socket(const struct uiw_config *cfg);

/** Starts the EAL for @p cfg. @return 0, or -1 after logging why. */
int uiw_eal_init(const struct uiw_config *cfg, const char *prog);

/** True when @p devargs names a PCI device (DDDD:BB:DD.F or BB:DD.F). */
bool uiw_devargs_is_pci(const char *devargs);

/**
 * Brings up the port @p cfg->port names: a virtual device is created from its devargs
 * (net_ring, net_pcap, net_af_packet, net_tap, net_memif, net_virtio_user, net_vhost, ...),
 * a PCI device is looked up by address. Then as uiw_port_open_ethdev().
 * @return 0, or -1 after logging why.
 */
int uiw_port_open(struct uiw_port *port, const struct uiw_config *cfg);

/**
 * Configures and starts an existing ethdev: one RX and one TX queue, a mempool sized by
 * cfg->mbufs, checksum offloads the PMD offers, MTU and MAC from @p cfg where the PMD allows.
 * @return 0, or -1 after logging why.
 */
int uiw_port_open_ethdev(struct uiw_port *port, uint16_t port_id, const struct uiw_config *cfg);

/**
 * Waits until the PMD reports the link up (memif and vhost links come up when the peer
 * process connects). @return 0 when up, -1 after @p timeout_ms.
 */
/**
 * A handle on queue pair @p queue of the port @p base opened (with cfg->engines queue
 * pairs): its own transmit batch and counters, the port's pool, MAC, MTU and offloads.
 * Closing it leaves the port to @p base. @return 0, or -1 if the port has no such queue.
 */
int uiw_port_open_queue(struct uiw_port *q, const struct uiw_port *base, uint16_t queue);

int uiw_port_wait_link(const struct uiw_port *port, unsigned timeout_ms);

/**
 * Reads the link state at most every 100 ms (a PCI NIC's is a register read) and logs and
 * counts each change (port.link_down, port.link_up). What was sent while it was down is
 * lost on the wire, and TCP sends it again. Only the handle that owns the port looks.
 */
void uiw_port_link_check(struct uiw_port *port, uint64_t now);

/** Stops and closes the port, frees queued frames and its pool (pcap output is flushed). */
void uiw_port_close(struct uiw_port *port);

/**
 * Creates two ring ports joined back to back: what one sends, the other receives.
 * @return 0 and both port ids, or -1.
 */
int uiw_port_ringpair_create(const char *name, uint16_t nqueues, uint16_t *port_a, uint16_t *port_b);

/** Sets up a test port: no ethdev, frames go to @p tx_burst and come from @p rx_burst. */
void uiw_port_init_test(struct uiw_port *port, struct rte_mempool *pool,
			const struct rte_ether_addr *mac, uint16_t mtu, uiw_burst_fn rx_burst,
			uiw_burst_fn tx_burst, void *user);

/** The pool the PMD receives into. */
static inline struct rte_mempool *uiw_port_rx_pool(const struct uiw_port *port)
{
	return port->rx_pool != NULL ? port->rx_pool : port->pool;
}

/** Receives up to @p n frames (the caller owns them). */
static inline uint16_t uiw_port_rx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t got = port->rx_burst(port, pkts, n);

	port->counters[UIW_PORT_C_rx_packets] += got;
	port->counters[UIW_PORT_C_rx_bursts] += got != 0;
	for (uint16_t i = 0; i < got; i++)
		port->counters[UIW_PORT_C_rx_bytes] += pkts[i]->pkt_len;
	return got;
}

/** The offloads in use on @p port, as words ("tx-tcp-cksum tso ..." or "none"). */
const char *uiw_port_offloads_str(const struct uiw_port *port, char *buf, size_t len);

/** Copies the PMD's own drop counts (ethdev stats) into the port's counters. */
void uiw_port_read_pmd_counters(struct uiw_port *port);

/**
 * Hands queued frames to the PMD. Frames it refuses (its TX ring is full) stay queued, in
 * order, for the next flush: a full ring is back-pressure, not loss (uiw_port_tx_room()).
 * @return the frames the PMD took.
 */
uint16_t uiw_port_flush_queued(struct uiw_port *port);

/** uiw_port_flush_queued(), after the check a poll pass with nothing to send makes. */
static inline uint16_t uiw_port_flush(struct uiw_port *port)
{
	if (port->tx_n == 0 && port->fault == NULL)
		return 0;
	return uiw_port_flush_queued(port);
}

/** Flushes, then drops the queued frames the PMD did not take that refer to lent memory
 *  (counted as tx_drop_lent): their owner is taking the memory back. A frame over a pool
 *  mbuf's buffer (uiw_mbuf_over()) holds that mbuf, and stays. */
void uiw_port_drop_external(struct uiw_port *port);

/**
 * Queues one frame for transmission (consumes @p m). When the queue is full and a flush
 * frees no room, the frame is dropped and counted (tx_drop_full). A frame longer than the
 * MTU allows (an echo answered in place for a peer with a larger MTU) is dropped and
 * counted too: a PMD that cannot carry it would refuse it for ever, and the frames
 * behind it with it.
 */
static inline void uiw_port_tx(struct uiw_port *port, struct rte_mbuf *m)
{
	if (unlikely(m->pkt_len > (uint32_t)port->mtu + RTE_ETHER_HDR_LEN) &&
	    !(m->ol_flags & RTE_MBUF_F_TX_TCP_SEG)) {
		rte_pktmbuf_free(m);
		port->counters[UIW_PORT_C_tx_drop_too_big]++;
		return;
	}
	if (port->tx_n == UIW_PORT_TX_BUF && uiw_port_flush(port) == 0 &&
	    port->tx_n == UIW_PORT_TX_BUF) {
		rte_pktmbuf_free(m);
		port->counters[UIW_PORT_C_tx_drop_full]++;
		return;
	}
	port->tx_buf[port->tx_n++] = m;
}

/**
 * Frames uiw_port_tx() can take now without dropping one (a full queue is flushed first).
 * Senders that can wait (TCP data) hold back at 0 and try again on the next poll pass.
 */
static inline uint16_t uiw_port_tx_room(struct uiw_port *port)
{
	if (port->tx_n == UIW_PORT_TX_BUF)
		uiw_port_flush(port);
	return (uint16_t)(UIW_PORT_TX_BUF - port->tx_n);
}

/** Allocates a frame from the port's pool; counts a failure. @return NULL when empty. */
static inline struct rte_mbuf *uiw_port_alloc(struct uiw_port *port)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(port->pool);

	if (m == NULL)
		port->counters[UIW_PORT_C_tx_drop_nombuf]++;
	return m;
}

#endif
