/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Configuration of one stack instance and of the DPDK EAL of the process.
 *
 * Text form: one `key = value` per line or separated by ';', `#` starts a comment.
 * Sources, later ones overriding earlier ones: built-in defaults, the file named by
 * $UIWARP_CONF, then the inline text in $UIWARP_CONFIG. Every error message names the
 * source, the position and the offending key. docs/CONFIG.md lists the keys.
 */
#ifndef UIW_CONFIG_H
#define UIW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uiw_log.h"

#define UIW_CONFIG_STR_MAX 512

/** Whether the EAL uses hugepages. */
enum uiw_hugepages {
	UIW_HUGE_AUTO = 0, /**< use them when some are free and hugetlbfs is mounted */
	UIW_HUGE_ON,       /**< require them */
	UIW_HUGE_OFF,      /**< anonymous memory (--no-huge) */
};

/** The most engines (queue pairs of one port) an instance runs. */
#define UIW_MAX_ENGINES 16

/** Key rx_buf_size left to the port: its own pool of 8 KiB buffers on vhost-user and
 *  virtio-user ports that take frames of many segments (uiw_port.c), else none. */
#define UIW_RX_BUF_AUTO UINT32_MAX

struct uiw_config {
	/* Process-wide: the EAL. */
	char eal_args[UIW_CONFIG_STR_MAX]; /**< extra EAL arguments, space separated */
	char lcores[64];                   /**< EAL -l; empty: the first CPU we may use */
	enum uiw_hugepages hugepages;
	unsigned memory_mb;                /**< EAL -m when hugepages are not used */
	enum uiw_log_level log_level;

	/* Per instance: the port and its addresses. */
	char port[UIW_CONFIG_STR_MAX];     /**< devargs: net_xxx0,k=v... or a PCI address */
	uint32_t ip;                       /**< host byte order; 0 = unset */
	uint8_t prefix_len;
	uint32_t gateway;                  /**< host byte order; 0 = none */
	uint16_t mtu;
	bool mac_set;
	uint8_t mac[6];
	unsigned mbufs;                    /**< mbufs in the port's pool */
	unsigned rx_buf_size;              /**< receive buffers of this many octets in a
	                                    *   pool of their own (0: the port's pool;
	                                    *   UIW_RX_BUF_AUTO: uiw_port decides) */
	unsigned rx_desc;
	unsigned tx_desc;
	unsigned rx_burst;                 /**< budget: frames per RX burst */
	unsigned engines;                  /**< engines, each on its own queue pair of the port */

	/* ARP behaviour. */
	unsigned arp_reachable_ms;         /**< how long a confirmed entry is trusted */
	unsigned arp_retry_ms;             /**< gap between resolution requests */
	unsigned arp_retries;              /**< requests before giving up */

	/* TCP. */
	unsigned tcp_max_conns;            /**< TCBs, preallocated */
	unsigned tcp_rcv_buf;              /**< receive window, bytes */
	unsigned tcp_snd_buf;              /**< send queue limit, bytes */
	unsigned tcp_notsent_max;          /**< of it, bytes not yet sent (0: no limit) */
	unsigned tcp_tx_runs;              /**< runs of whole records on headers built once */
	unsigned tcp_rx_join;              /**< the most of a receive burst's in-order segments
					     *   joined (0, 1: none) */
	unsigned tcp_sq_mbufs;             /**< mbufs an engine's send queues hold together */
	unsigned tcp_delack_us;            /**< delayed-ACK timeout; 0 = ACK every segment */
	unsigned tcp_min_rto_ms;
	unsigned tcp_init_rto_ms;          /**< RFC 6298 §2.1: 1 s */
	unsigned tcp_max_rto_ms;
	unsigned tcp_syn_retries;
	unsigned tcp_retries;              /**< data retransmissions before giving up */
	unsigned tcp_time_wait_ms;         /**< 2 MSL */
	unsigned tcp_sack;                 /**< offer SACK-permitted */
	unsigned tcp_timestamps;           /**< offer timestamps */
	unsigned tcp_syncookies;           /**< answer SYNs with cookies when a listen queue is full */
	unsigned tcp_window_scaling;       /**< offer window scaling */
	unsigned tcp_ooo_max;              /**< out-of-order segments held per connection */

	/* MPA policy (RFC 5044, RFC 6581; docs/CONFIG.md). */
	unsigned mpa_rev;                  /**< revision to ask for: 1 or 2 */
	unsigned mpa_crc;                  /**< ask for CRC32c */
	unsigned mpa_markers;              /**< ask the peer to send Markers */
	unsigned mpa_markers_ok;           /**< send Markers when the peer asks */
	unsigned mpa_p2p;                  /**< initiator: ask for peer-to-peer mode (rev 2) */
	unsigned mpa_rtr;                  /**< RTR types: 1 Send, 2 Write, 4 Read (a mask) */
	unsigned mpa_ird;                  /**< inbound Read Requests we serve at once */
	unsigned mpa_ord;                  /**< outbound Read Requests at once */
	unsigned mpa_pd_max;               /**< largest private data taken from a peer */
	unsigned mpa_tx_runs;              /**< a message's FPDUs queued to TCP in runs */
	unsigned rfc7306;                  /**< announce RFC 7306 (immediate data, atomics) in the
	                                    *   MPA private data; used when the peer does too */
	unsigned send_imm;                 /**< with rfc7306: announce Send with immediate data */
	unsigned recv_wait_ms;             /**< verbs QPs: a Send finding no receive waits this
	                                    *   long for one (0: Terminated at once) */
	unsigned cq_spin_us;               /**< ibv_get_cq_event(): run the stack this long for
	                                    *   the event before sleeping (0: sleep at once) */
	unsigned progress_nice;            /**< the drop-in's progress thread runs at nice
	                                    *   -N where permitted (0: as the program's) */
	unsigned tso;                      /**< TCP segmentation offload where the port has it */
	unsigned tso_slabs;                /**< with TSO: 64 KiB buffers FPDUs are built in */
	unsigned lro;                      /**< large receive (LRO, GSO frames) where the port has it */
	unsigned memif_zero_copy;          /**< a memif client lends its mbufs to the server
	                                    *   where the EAL allows it (docs/CONFIG.md) */
	unsigned tx_zero_copy;             /**< Sends and Writes go out from registered memory:
	                                    *   0 never (default), 1 where the port can, 2 always */
	unsigned mpa_reply_timeout_ms;     /**< initiator: wait for the Reply */
	unsigned mpa_request_timeout_ms;   /**< responder: wait for the Request (and RTR) */
	unsigned mpa_initiator_delay_us;   /**< initiator: first FPDU this long after the Reply */

	/* Fault injection on the port (docs/CONFIG.md); empty = none. */
	char fault_rx[128];
	char fault_tx[128];
	unsigned fault_seed;

	char pcap[256];                    /**< capture the instance's traffic here (empty: no) */
	unsigned pair_vhost;               /**< two instances in one process (--pair): joined
	                                    *   by vhost-user and virtio-user, not a ring pair */
};

/** Fills every key with its default. */
void uiw_config_defaults(struct uiw_config *cfg);

/**
 * Sets one key from its text value.
 * @return 0, or -1 with a message naming the key in err.
 */
int uiw_config_set(struct uiw_config *cfg, const char *key, const char *value,
		   char *err, size_t errlen);

/**
 * Applies a configuration text. @p origin names the source in messages.
 * @return 0, or -1 with "origin:line: ..." in err; keys before the bad one stay set.
 */
int uiw_config_parse_text(struct uiw_config *cfg, const char *text, const char *origin,
			  char *err, size_t errlen);

/** Applies a configuration file. @return 0, or -1 with a message in err. */
int uiw_config_load_file(struct uiw_config *cfg, const char *path, char *err, size_t errlen);

/** Applies $UIWARP_CONF (a file) then $UIWARP_CONFIG (inline text). @return 0 or -1. */
int uiw_config_load_env(struct uiw_config *cfg, char *err, size_t errlen);

/** Checks that an instance can be brought up (port and ip set). @return 0 or -1. */
int uiw_config_validate(const struct uiw_config *cfg, char *err, size_t errlen);

#endif
