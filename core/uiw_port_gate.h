/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The control gate of ports whose PMD changes their data path from the EAL interrupt
 * thread (net_memif).
 *
 * memif's control channel runs on the EAL interrupt thread. When the peer goes away that
 * thread unmaps the shared rings (memif_disconnect()) with nothing to keep it from doing
 * so while another thread is inside rte_eth_rx_burst() or rte_eth_tx_burst() on the same
 * rings: the burst then reads unmapped memory and the process dies of SIGSEGV. A peer
 * process that exits while this one still polls (both ends of a test exiting together,
 * a crashed peer) is enough.
 *
 * The gate makes the two take turns. It holds the interrupt thread in a callback of its
 * own (registered on an eventfd), and gated ports burst only while it is held. Every
 * UIW_GATE_HOLD_NS (UIW_GATE_SETUP_NS while a gated port's link is down, so a connection
 * in set-up proceeds) the gate waits for the bursts in progress, lets the thread go, and
 * bursts nothing until the thread has run what was waiting (a disconnect included) and is
 * held again. While no gated port's link is up the thread runs freely and nothing bursts.
 * Once the last gated port has closed, the thread is held for good.
 *
 * There is one interrupt thread per process, so one gate: every gated port shares it,
 * from any number of threads.
 */
#ifndef UIW_PORT_GATE_H
#define UIW_PORT_GATE_H

#include <stdbool.h>
#include <stdint.h>

/** How long the interrupt thread is held at a time while every gated link is up. */
#define UIW_GATE_HOLD_NS (50 * 1000 * 1000ull)
/** The same while a gated port's link is down (its peer is connecting, or gone). */
#define UIW_GATE_SETUP_NS (1000 * 1000ull)
/** Ports one process can gate. */
#define UIW_GATE_MAX_PORTS 8

/** Puts ethdev @p port_id behind the gate (created on first use). @return 0, or -1. */
int uiw_port_gate_attach(uint16_t port_id);

/**
 * Takes @p port_id from behind the gate. After the last one the interrupt thread stays
 * held (rte_eal_cleanup() frees memory it would touch) until a gated port is opened again
 * and bursts or waits for its link.
 */
void uiw_port_gate_detach(uint16_t port_id);

/**
 * Before a burst on a gated port: one step of the gate (while every gated link is up and
 * the kernel has membarrier(2), a thread's bursts step it only now and then, and take no
 * lock). @return true if the burst may go ahead; then uiw_port_gate_leave() must follow
 * it, on the same thread, before this thread enters again.
 */
bool uiw_port_gate_enter(void);

/** After a burst uiw_port_gate_enter() let through. */
void uiw_port_gate_leave(void);

/** True while the interrupt thread is held (no other interrupt callback can run). */
bool uiw_port_gate_held(void);

/**
 * Enters the pages [@p lo, @p hi) of a shared mapping (@p page apart, aligned) in this
 * process's page tables (MADV_POPULATE_WRITE where the kernel has it) and writes each once,
 * by an atomic add of 0 to its first octet, which changes nothing whatever another process
 * writes meanwhile: under a hypervisor the first write to a page can trap even once it is
 * entered. What memif's region and a vhost-user guest's memory get before their first
 * frames. The mapping must stay mapped meanwhile.
 */
void uiw_pages_touch(uintptr_t lo, uintptr_t hi, uintptr_t page);

/**
 * uiw_pages_touch() over the pages of [@p lo, @p lo + @p len) that are resident (mincore():
 * some process has used them), from the top down (DPDK's heap carves each block from the
 * end of the free space, so a guest's pools and rings lie at the top of its memory),
 * @p budget octets at most, and none once the clock (uiw_now_ns()) reaches @p end_ns,
 * looked at every 256 pages: the deadline a vhost-user side keeps while its port's bursts
 * wait (a peer's ARP request among them).
 * @return the octets touched.
 */
uint64_t uiw_pages_touch_resident(uintptr_t lo, uint64_t len, uintptr_t page, uint64_t budget,
				  uint64_t end_ns);

/** Times the interrupt thread has been let go between bursts. */
uint64_t uiw_port_gate_windows(void);

#endif
