/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * One stack instance: a port (with the configured faults), the lower half (Ethernet, ARP,
 * IPv4, ICMP), TCP and MPA, built from one configuration, polled as one and closed as one.
 * RDMAP queue pairs ride on its MPA connections; the verbs layer makes it a device. Every
 * tool, the verbs layer, the drop-in libraries and the pair tests build their instances
 * here.
 */
#ifndef UIW_STACK_H
#define UIW_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mpa.h"
#include "net.h"
#include "tcp.h"
#include "uiw_config.h"
#include "uiw_capture.h"
#include "uiw_fault.h"
#include "uiw_port.h"

/*
 * Engines (docs/ENGINES.md). With key 'engines' N > 1 an instance is N engines, each a
 * whole stack of its own (lower half, ARP cache, TCP and its connection table, MPA) on its
 * own RX/TX queue pair of the one port. The instance's struct is engine 0, which owns the
 * port; engines 1..N-1 hang from it. A connection lives on one engine from its SYN on:
 * the side that opens it picks the engine (and a local port of that engine's share), and
 * the queue its frames travel on brings them to the same engine on the other side (memif
 * and ring pairs keep queue q to queue q).
 */
struct uiw_stack {
	struct uiw_config cfg;
	struct uiw_port port;
	struct uiw_fault fault;
	struct uiw_capture capture;   /**< key pcap: engine 0's owns the file */
	struct uiw_net net;
	struct uiw_tcp *tcp;          /**< NULL when built only to the lower half */
	struct uiw_mpa *mpa;          /**< NULL when built only to TCP */
	unsigned engine;              /**< this engine's number: its queue pair */
	unsigned nengines;            /**< engines of the instance (on engine 0; 1 on others) */
	struct uiw_stack *more[UIW_MAX_ENGINES - 1];   /**< engine 0: engines 1..nengines-1 */
};

/** Engine @p i of the instance @p s (engine 0 is @p s itself). */
static inline struct uiw_stack *uiw_stack_engine(struct uiw_stack *s, unsigned i)
{
	return i == 0 ? s : s->more[i - 1];
}

/** How far up an instance is built. */
enum uiw_stack_top { UIW_STACK_NET, UIW_STACK_TCP, UIW_STACK_MPA };

/** The port uiw_stack_open() brings up: the configuration's ... */
#define UIW_STACK_PORT_CONFIG UINT16_MAX
/** ... or the one the caller already set up in the instance (a test's in-memory port). */
#define UIW_STACK_PORT_READY (UINT16_MAX - 1)

struct uiw_stack_opts {
	enum uiw_stack_top top;
	uint16_t port_id;             /**< an ethdev (a ring pair's end), or UIW_STACK_PORT_* */
	unsigned link_wait_ms;        /**< wait this long for the link (0: not at all) */
	bool defer_start;             /**< the caller wraps the port first (a trace, a capture),
				       *   then calls uiw_stack_start() */
	bool engines;                 /**< the caller spreads connections over engines (the
				       *   verbs layer): key 'engines' above 1 is refused otherwise */
};

/**
 * Builds the instance from @p cfg (the EAL is up: uiw_eal_init()). A link still down after
 * the wait is logged, not an error (a memif server's peer may come later).
 * @return 0, or a negative errno with @p err saying why; nothing is left open then.
 */
int uiw_stack_open(struct uiw_stack *s, const struct uiw_config *cfg,
		   const struct uiw_stack_opts *o, char *err, size_t errlen);

/** Starts the lower half (the RFC 5227 announcement) and sends what it queued; done by
 *  uiw_stack_open() unless deferred. */
void uiw_stack_start(struct uiw_stack *s);

#define UIW_STACK_PAIR_IP_A 0x0a000001u   /* 10.0.0.1 */
#define UIW_STACK_PAIR_IP_B 0x0a000002u   /* 10.0.0.2 */

/** Two instances joined by a DPDK ring pair named @p name (a ring each way per engine), or
 *  with key pair_link=vhost by a vhost-user port (A) and a virtio-user port (B) on a socket
 *  under /tmp, at 10.0.0.1/24 and 10.0.0.2/24. */
int uiw_stack_open_pair(struct uiw_stack *a, struct uiw_stack *b, const struct uiw_config *cfg,
			enum uiw_stack_top top, const char *name, char *err, size_t errlen);

/** One poll pass of one engine: receive and demultiplex, timers, MPA timeouts, transmit.
 *  @return frames received. */
static inline unsigned uiw_stack_poll_engine(struct uiw_stack *e, uint64_t now)
{
	unsigned n = e->tcp != NULL ? uiw_tcp_poll(e->tcp, now) : uiw_net_poll(&e->net, now);

	if (e->mpa != NULL)
		uiw_mpa_run(e->mpa, now);
	return n;
}

/** One poll pass of every engine of the instance. @return frames received. */
static inline unsigned uiw_stack_poll(struct uiw_stack *s, uint64_t now)
{
	unsigned n = uiw_stack_poll_engine(s, now);

	for (unsigned i = 1; i < s->nengines; i++)
		n += uiw_stack_poll_engine(s->more[i - 1], now);
	return n;
}

/** TCP connections of every engine. */
unsigned uiw_stack_conn_count(const struct uiw_stack *s);

/** The steps of a process's exit, over every engine: close every connection left open
 *  (its FIN behind what it has queued); count those that still owe their peer octets or
 *  a FIN, and the frames the port has not taken yet; reset the connections that owe. */
enum uiw_stack_exit { UIW_STACK_EXIT_CLOSE, UIW_STACK_EXIT_OWED, UIW_STACK_EXIT_RESET };
/** @return connections owed plus frames held (OWED), connections reset (RESET), or 0. */
unsigned uiw_stack_exit_step(struct uiw_stack *s, enum uiw_stack_exit step);

/** Offers every engine's queued frames to the port. */
void uiw_stack_flush(struct uiw_stack *s);

/** Closes every layer of every engine, top first (MPA aborts what is left without
 *  callbacks). */
void uiw_stack_close(struct uiw_stack *s);

/** Prints the non-zero counters of every layer built (and the faults injected) to @p f. */
void uiw_stack_print_counters(FILE *f, struct uiw_stack *s);

/**
 * Prints what the instance holds now, one "name value" line each: mbufs of the pool in use
 * and in total, connections (TCP, of them half-open, MPA), mbufs held by TCP's receive and
 * send sides, ARP entries. Idle, each is back to its level before the first peer came.
 */
void uiw_stack_print_gauges(FILE *f, const struct uiw_stack *s);

#endif
