/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file rsockets' stream protocol (rdma-core, librdmacm/docs/rsocket): the connection data
 * each side puts in the rdma_cm private data, the buffer descriptors it RDMA-Writes into the
 * peer's target list, and the 32-bit messages. On iWARP, which has no immediate data, each
 * message is a 4-octet Send of its own, in the sender's byte order (rdma-core's "MSG_SEND"
 * mode; both x86 ends are little-endian).
 */
#ifndef UIW_RSOCKET_WIRE_H
#define UIW_RSOCKET_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "uiw_be_wire.h"

#define UIW_RS_VERSION 1
#define UIW_RS_FLAG_NET 0x01     /* the sender is big-endian: its descriptors are too */
#define UIW_RS_FLAG_IOMAP 0x02   /* target_iomap_size is meaningful */
#define UIW_RS_SGL_SIZE 2        /* entries in each side's target list */
#define UIW_RS_MSG_LEN 4u        /* one message: op in bits 31:29, data in 28:0 */

/* Message types (bits 31:29). */
#define UIW_RS_OP_DATA 0u        /* data: bytes written into the next receive buffer */
#define UIW_RS_OP_SGL 4u         /* credits: the sequence number sends may reach */
#define UIW_RS_OP_IOMAP_SGL 6u   /* an iomap entry was written (not used here) */
#define UIW_RS_OP_CTRL 7u        /* control: one of UIW_RS_CTRL_* */
#define UIW_RS_CTRL_DISCONNECT 0u
#define UIW_RS_CTRL_KEEPALIVE 1u
#define UIW_RS_CTRL_SHUTDOWN 2u
#define UIW_RS_MSG(op, data) (((uint32_t)(op) << 29) | ((uint32_t)(data) & 0x1fffffffu))
#define UIW_RS_MSG_OP(m) ((uint32_t)(m) >> 29)
#define UIW_RS_MSG_DATA(m) ((uint32_t)(m) & 0x1fffffffu)

/* A buffer descriptor in the connection data: network byte order. */
struct uiw_rs_sge_net {
	uiw_be64 addr;
	uiw_be32 key;
	uiw_be32 length;
} __attribute__((packed));
static_assert(sizeof(struct uiw_rs_sge_net) == 16, "rs_sge is 16 octets");

/* The same descriptor as RDMA-Written into the peer's target list: the writer's byte order,
 * swapped by the writer when the reader's UIW_RS_FLAG_NET differs. */
struct uiw_rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};
static_assert(sizeof(struct uiw_rs_sge) == 16, "rs_sge is 16 octets");

/* The rdma_cm private data of the connect and the accept. */
struct uiw_rs_conn_data {
	uint8_t version;
	uint8_t flags;
	uiw_be16 credits;                    /* receive queue depth: initial send credits */
	uint8_t reserved[3];
	uint8_t target_iomap_size;           /* scaled; 0: none */
	struct uiw_rs_sge_net target_sgl;    /* the sender's target list (length: entries) */
	struct uiw_rs_sge_net data_buf;      /* its first receive buffer */
} __attribute__((packed));
static_assert(sizeof(struct uiw_rs_conn_data) == 40, "rs_conn_data is 40 octets");
static_assert(offsetof(struct uiw_rs_conn_data, target_sgl) == 8, "target_sgl at 8");
static_assert(offsetof(struct uiw_rs_conn_data, data_buf) == 24, "data_buf at 24");

#endif
