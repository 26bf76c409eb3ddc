/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The lower half of the stack: Ethernet demux, ARP, IPv4 and ICMP echo for one port.
 *
 * Ownership: every function taking an mbuf consumes it (it is sent, queued or freed),
 * unless its comment says it borrows it. Time is passed in as @p now (ns, uiw_now_ns()).
 * Internal errors are negative errno values.
 *
 * IPv4 fragments are dropped and counted (ip_drop_frag): iWARP peers send DF segments no
 * larger than the path MTU, and reassembly would be memory an attacker can pin.
 */
#ifndef UIW_NET_H
#define UIW_NET_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "eth_wire.h"
#include "ipv4_wire.h"
#include "uiw_config.h"
#include "uiw_counters.h"
#include "uiw_port.h"

#define UIW_NET_COUNTERS(X)                                                                \
	X(eth_rx, "frames into the stack")                                                 \
	X(eth_drop_short, "frame shorter than its headers")                                \
	X(eth_drop_split_hdr, "headers not contiguous in the first segment")               \
	X(eth_drop_not_ours, "destination MAC neither ours nor broadcast")                 \
	X(eth_drop_ethertype, "EtherType neither IPv4 nor ARP (VLAN tags included)")       \
	X(arp_rx, "ARP packets received")                                                  \
	X(arp_drop_format, "ARP not IPv4-over-Ethernet (htype, ptype, hlen, plen)")        \
	X(arp_drop_op, "ARP operation neither request nor reply")                          \
	X(arp_drop_bad_sender, "ARP sender MAC or IP not a unicast host address")          \
	X(arp_conflict, "ARP from another MAC claiming our IP")                            \
	X(arp_not_for_us, "ARP for another target (merged into the cache only)")           \
	X(arp_request_answered, "ARP requests for our IP answered")                        \
	X(arp_reply_rx, "ARP replies for us")                                              \
	X(arp_request_tx, "ARP requests sent to resolve a neighbour")                      \
	X(arp_gratuitous_tx, "gratuitous ARP announcements sent")                          \
	X(arp_resolve_failed, "neighbours that never answered ARP")                        \
	X(arp_hold_drop, "packets dropped while waiting for ARP")                          \
	X(arp_evict, "ARP entries evicted because the cache was full")                     \
	X(arp_table_full, "packets dropped: the ARP cache is full of neighbours confirmed lately") \
	X(arp_not_learnt, "ARP requests answered without learning the sender: the cache is half full") \
	X(ip_rx, "IPv4 packets received")                                                  \
	X(ip_drop_version, "IPv4 version not 4")                                           \
	X(ip_drop_ihl, "IPv4 header length below 20 or past the frame")                   \
	X(ip_drop_len, "IPv4 total length below the header or past the frame")             \
	X(ip_drop_cksum, "IPv4 header checksum wrong")                                     \
	X(ip_drop_ttl, "IPv4 TTL zero")                                                    \
	X(ip_drop_not_ours, "IPv4 destination not our address or a broadcast")             \
	X(ip_drop_src, "IPv4 source not a valid unicast host (martian)")                   \
	X(ip_drop_frag, "IPv4 fragments (not reassembled)")                                \
	X(ip_drop_proto, "IPv4 protocol not handled")                                      \
	X(ip_tx, "IPv4 packets sent")                                                      \
	X(ip_tx_no_route, "IPv4 packets dropped: no route (off-link, no gateway)")         \
	X(icmp_rx, "ICMP messages received")                                               \
	X(icmp_drop_short, "ICMP message shorter than its header")                         \
	X(icmp_drop_cksum, "ICMP checksum wrong")                                          \
	X(icmp_drop_bcast, "ICMP echo requests to a broadcast address (not answered)")     \
	X(icmp_drop_type, "ICMP types not handled")                                        \
	X(icmp_echo_answered, "ICMP echo requests answered")                               \
	X(icmp_echo_reply_rx, "ICMP echo replies received")                                \
	X(icmp_echo_tx, "ICMP echo requests sent")                                         \
	X(hand_out, "TCP segments handed to the engine that owns them (they came in on another's queue)") \
	X(hand_in, "TCP segments another engine handed to this one")                       \
	X(hand_drop_full, "frames dropped: the owning engine's hand-off ring was full")    \
	X(arp_shared, "ARP packets another engine received, learnt from here too")

#define UIW_NET_C_(name, help) UIW_NET_C_##name,
enum uiw_net_counter { UIW_NET_COUNTERS(UIW_NET_C_) UIW_NET_C__COUNT };
#undef UIW_NET_C_

extern const struct uiw_counter_desc uiw_net_counter_desc[UIW_NET_C__COUNT];

#define UIW_ARP_SLOTS 256          /* power of two */
#define UIW_ARP_MAX_ENTRIES 192    /* at most 3/4 full; then a stale or unresolved entry
				    * makes room, never one confirmed lately */
#define UIW_ARP_LEARN_MAX 96       /* a new sender of a request is learnt only below this */
#define UIW_ARP_HOLD 64            /* packets held per unresolved neighbour */
#define UIW_ARP_HOLD_TOTAL 512     /* packets held for all of them */
#define UIW_NET_TIMER_NS 10000000ull /* timer walk at most every 10 ms */

enum uiw_arp_state {
	UIW_ARP_FREE = 0,
	UIW_ARP_INCOMPLETE,        /* requests sent, no answer yet; packets held */
	UIW_ARP_REACHABLE,         /* confirmed within arp_reachable_ms */
	UIW_ARP_STALE,             /* not confirmed lately; still used, refreshed on use */
	UIW_ARP_PROBE,             /* in use, a refresh request outstanding */
};

struct uiw_arp_entry {
	uint32_t ip;               /* host order; 0 when free */
	uint8_t state;             /* enum uiw_arp_state */
	uint8_t tries;             /* requests sent in this resolution */
	uint8_t mac[6];
	uint16_t nheld;            /* packets for it in uiw_net.hold */
	uint64_t deadline;         /* next request (INCOMPLETE, PROBE) or expiry */
};

/** A packet waiting for its next hop's address. */
struct uiw_arp_held {
	uint32_t ip;
	struct rte_mbuf *m;
};

/**
 * Called for each ICMP echo reply addressed to us (borrows @p m: the whole frame).
 */
typedef void (*uiw_net_echo_fn)(void *arg, uint32_t src, uint16_t id, uint16_t seq,
				const struct rte_mbuf *m);

/**
 * Receives an IPv4 datagram for a transport protocol (consumes @p m: the whole frame, its
 * IPv4 header already checked, trimmed to the datagram; the payload starts at
 * UIW_ETH_HDR_LEN + @p ihl).
 */
typedef void (*uiw_net_l4_fn)(void *ctx, struct rte_mbuf *m, unsigned ihl, uint64_t now);

/**
 * Ends a receive burst for a transport that held segments to join them with the ones after
 * them (uiw_net.l4_held): what it holds goes in now.
 */
typedef void (*uiw_net_l4_flush_fn)(void *ctx, uint64_t now);

struct uiw_net {
	struct uiw_port *port;
	uint32_t ip;               /* host order */
	uint32_t netmask;
	uint32_t gateway;          /* 0: none */
	uint64_t arp_reachable_ns;
	uint64_t arp_retry_ns;
	unsigned arp_retries;
	unsigned rx_burst;
	unsigned arp_used;         /* entries not FREE */
	uint64_t next_timer;
	uint16_t ip_id;
	uiw_net_echo_fn on_echo_reply;
	void *cb_arg;
	uiw_net_l4_fn tcp_input;   /* set by the TCP engine */
	uiw_net_l4_flush_fn tcp_flush;
	void *tcp_ctx;
	uint16_t rx_more;          /* frames of the burst in hand after the one going in */
	bool l4_held;              /* TCP holds segments until the burst ends (tcp_flush) */
	/* Engines of one instance (uiw_net_set_engines()): frames that came in on this
	 * engine's queue but belong to another's connections are handed to it. */
	unsigned engine, nengines;
	bool handed;               /* the frame being processed was handed in */
	struct rte_ring *inbox;    /* frames handed to this engine (multi-producer) */
	struct uiw_net *engines[UIW_MAX_ENGINES];
	void (*wake)(void *arg);   /* ends the nap of the thread that polls this engine */
	void *wake_arg;
	uint64_t counters[UIW_NET_C__COUNT];
	struct uiw_arp_entry arp[UIW_ARP_SLOTS];
	/* Packets waiting for ARP, oldest first, for any neighbour (a burst of connections
	 * to one peer waits together; a scan on resolution is cheap at this size). */
	unsigned nhold;
	struct uiw_arp_held hold[UIW_ARP_HOLD_TOTAL];
};

/** Sets up the instance on @p port with the addresses and ARP settings of @p cfg. */
void uiw_net_init(struct uiw_net *net, struct uiw_port *port, const struct uiw_config *cfg);

/**
 * Makes the @p n lower halves @p nets the engines of one instance, each with a ring for
 * frames the others hand to it: a TCP segment that came in on the wrong engine's queue
 * (a PMD that spreads frames by its own hash) goes to the engine that owns its
 * connection, and every ARP packet is learnt from by every engine.
 * @return 0, or -ENOMEM.
 */
int uiw_net_set_engines(struct uiw_net **nets, unsigned n);

/** Sets what ends the nap of the thread polling @p net, after a frame is handed to it. */
void uiw_net_set_wake(struct uiw_net *net, void (*wake)(void *arg), void *arg);

/**
 * Hands @p m (the whole frame, headers checked) to engine @p owner (consumed).
 * @return true when queued there; false when its ring was full (freed, counted).
 */
bool uiw_net_hand(struct uiw_net *net, unsigned owner, struct rte_mbuf *m);

/** Processes the frames other engines handed to @p net. @return frames processed. */
unsigned uiw_net_take_handed(struct uiw_net *net, uint64_t now);

/** Whether other engines handed @p net frames it has not taken yet. */
static inline bool uiw_net_handed_waiting(const struct uiw_net *net)
{
	return net->inbox != NULL && !rte_ring_empty(net->inbox);
}

/** Frees every held packet. The port is not closed. */
void uiw_net_fini(struct uiw_net *net);

/** Announces our address with a gratuitous ARP request (RFC 5227 §3). */
void uiw_net_start(struct uiw_net *net, uint64_t now);

/** Processes received frames (consumes all @p n). Replies are queued on the port. */
void uiw_net_input(struct uiw_net *net, struct rte_mbuf **pkts, uint16_t n, uint64_t now);

/** ARP retries and expiry; cheap when called more often than every 10 ms. */
void uiw_net_timer(struct uiw_net *net, uint64_t now);

/** uiw_net_timer() when it is due: a poll pass's check. */
static inline void uiw_net_timer_due(struct uiw_net *net, uint64_t now)
{
	if (now >= net->next_timer)
		uiw_net_timer(net, now);
}

/**
 * One poll pass: one RX burst (at most cfg rx_burst frames), input, timers, TX flush.
 * @return frames received.
 */
unsigned uiw_net_poll(struct uiw_net *net, uint64_t now);

/**
 * Sends an IPv4 packet. @p m holds the IP payload and has headroom for the IPv4 and
 * Ethernet headers (consumed). The next hop is resolved by ARP; the packet is held while
 * resolution is under way.
 * @return 0 when sent or held; -EHOSTUNREACH with no route; -ENOBUFS when the hold queue
 *         is full or there is no headroom.
 */
int uiw_net_output(struct uiw_net *net, struct rte_mbuf *m, uint32_t dst, uint8_t proto,
		   uint64_t now);

/**
 * The Ethernet and IPv4 headers of a run of packets to one destination, sent in one pass
 * (uiw_net_run_start()): the same for each but the IPv4 length, identification and
 * checksum, which uiw_net_run_fill() writes.
 */
struct uiw_net_run {
	uint8_t hdr[UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN];
	uint32_t sum;              /* the IPv4 header's sum without length and identification */
};

/**
 * Readies @p r for packets of protocol @p proto to @p dst. Only where they would leave at
 * once: a route, and the next hop's address known and current (REACHABLE, or PROBE with
 * a refresh already asked for) with nothing held for it; else such packets go by
 * uiw_net_output(), which resolves, holds and drops as it must.
 * @return true when @p r may be used for this pass.
 */
bool uiw_net_run_start(struct uiw_net *net, uint32_t dst, uint8_t proto, struct uiw_net_run *r);

/**
 * Writes the headers of @p r at @p frame (UIW_ETH_HDR_LEN + UIW_IPV4_HDR_LEN octets) for a
 * packet of @p payload_len octets after its IPv4 header, with the next identification.
 */
static inline void uiw_net_run_fill(struct uiw_net *net, const struct uiw_net_run *r,
				    uint8_t *frame, uint16_t payload_len)
{
	struct uiw_ipv4_hdr *ih = (struct uiw_ipv4_hdr *)(frame + UIW_ETH_HDR_LEN);
	uint16_t id = net->ip_id++;
	uint32_t sum = r->sum + UIW_IPV4_HDR_LEN + payload_len + id;   /* as uiw_ipv4_build() */

	memcpy(frame, r->hdr, sizeof(r->hdr));
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ih->total_len = uiw_be16_of((uint16_t)(UIW_IPV4_HDR_LEN + payload_len));
	ih->id = uiw_be16_of(id);
	ih->cksum = uiw_inet_cksum_of((uint16_t)sum);
}

/** Queues @p m, a frame whose headers uiw_net_run_fill() wrote, on the port (consumed). */
static inline void uiw_net_run_send(struct uiw_net *net, struct rte_mbuf *m)
{
	m->l2_len = UIW_ETH_HDR_LEN;
	m->l3_len = UIW_IPV4_HDR_LEN;
	net->counters[UIW_NET_C_ip_tx]++;
	uiw_port_tx(net->port, m);
}

/**
 * Sends an ICMP echo request with @p payload_len bytes of pattern data.
 * @return as uiw_net_output(), or -ENOMEM when no mbuf is free.
 */
int uiw_net_ping(struct uiw_net *net, uint32_t dst, uint16_t id, uint16_t seq,
		 uint16_t payload_len, uint64_t now);

/**
 * Whether the link-layer address of the next hop to @p dst is known; when not, an ARP
 * resolution starts (as a packet to it would start one, but nothing is held).
 * @return 1 when known, 0 while it is being resolved, -EHOSTUNREACH with no route,
 * -ENOBUFS when the cache is full.
 */
int uiw_net_resolve(struct uiw_net *net, uint32_t dst, uint64_t now);

/** The cache entry for @p ip, or NULL. */
const struct uiw_arp_entry *uiw_net_arp_lookup(const struct uiw_net *net, uint32_t ip);

/**
 * One line describing a frame, tcpdump style ("ARP who-has 10.0.0.2 tell 10.0.0.1").
 * Reads only the frame's own bytes (borrows @p m). @return the length written.
 */
size_t uiw_net_describe(const struct rte_mbuf *m, char *out, size_t outlen);

/** Formats a host-order IPv4 address. @return @p buf. */
const char *uiw_ip_str(uint32_t ip, char buf[16]);

#endif
