/* SPDX-License-Identifier: BSD-3-Clause */
#include "check_common.h"

#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_lcore.h>

#include "mbuf_exact.h"
#include "uiw_lcore_id.h"
#include "uiw_log.h"

static struct rte_mempool *pool;

struct rte_mempool *test_pool(void)
{
	return pool;
}

unsigned test_pool_in_use(void)
{
	return rte_mempool_in_use_count(pool);
}

static uint16_t fake_tx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	struct fake_port *fp = port->user;
	uint16_t take = n < fp->accept ? n : (uint16_t)fp->accept;

	for (uint16_t i = 0; i < take; i++) {
		ck_assert_uint_lt(fp->nsent, FAKE_PORT_MAX);
		fp->sent[fp->nsent++] = pkts[i];
	}
	return take;
}

static uint16_t fake_rx(struct uiw_port *port, struct rte_mbuf **pkts, uint16_t n)
{
	(void)port;
	(void)pkts;
	(void)n;
	return 0;
}

void fake_port_init(struct fake_port *fp, const uint8_t mac[6])
{
	struct rte_ether_addr a;

	memset(fp, 0, sizeof(*fp));
	memcpy(a.addr_bytes, mac, 6);
	uiw_port_init_test(&fp->port, pool, &a, 1500, fake_rx, fake_tx, fp);
	fp->accept = UINT32_MAX;
}

void fake_port_clear(struct fake_port *fp)
{
	for (unsigned i = 0; i < fp->nsent; i++)
		rte_pktmbuf_free(fp->sent[i]);
	fp->nsent = 0;
}

struct rte_mbuf *frame_copy(const void *bytes, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(rte_pktmbuf_append(m, (uint16_t)len));
	memcpy(rte_pktmbuf_mtod(m, void *), bytes, len);
	return m;
}

struct rte_mbuf *frame_exact(const void *bytes, size_t len)
{
	struct rte_mbuf *m = mbuf_exact(pool, bytes, len);

	ck_assert_ptr_nonnull(m);
	return m;
}

struct rte_mbuf *frame_split(const void *bytes, size_t len, size_t first)
{
	struct rte_mbuf *a = frame_copy(bytes, first);
	struct rte_mbuf *b = frame_copy((const uint8_t *)bytes + first, len - first);

	ck_assert_int_eq(rte_pktmbuf_chain(a, b), 0);
	return a;
}

size_t frame_bytes(const struct rte_mbuf *m, uint8_t *out, size_t outlen)
{
	const void *p;

	ck_assert_uint_le(m->pkt_len, outlen);
	p = rte_pktmbuf_read(m, 0, m->pkt_len, out);
	ck_assert_ptr_nonnull(p);
	if (p != out)
		memcpy(out, p, m->pkt_len);
	return m->pkt_len;
}

static unsigned in_use_at_setup;
static void (*user_setup)(void);
static void (*user_teardown)(void);

static void leak_setup(void)
{
	in_use_at_setup = test_pool_in_use();
	if (user_setup != NULL)
		user_setup();
}

static void leak_teardown(void)
{
	if (user_teardown != NULL)
		user_teardown();
	ck_assert_msg(test_pool_in_use() == in_use_at_setup, "mbufs leaked: %u in use, %u before",
		      test_pool_in_use(), in_use_at_setup);
}

TCase *tcase_with_leak_check(const char *name, void (*setup)(void), void (*teardown)(void))
{
	TCase *tc = tcase_create(name);

	/* One fixture per binary: the user's set-up and tear-down run inside it. */
	if (user_setup != NULL && user_setup != setup)
		abort();
	user_setup = setup;
	user_teardown = teardown;
	tcase_add_checked_fixture(tc, leak_setup, leak_teardown);
	tcase_set_timeout(tc, 60);
	return tc;
}

int run_suite(Suite *s)
{
	static char a0[] = "uiw-unit", a1[] = "-l", a2[] = "0", a3[] = "--no-pci",
		    a4[] = "--no-huge", a5[] = "--no-shconf", a6[] = "-m", a7[] = "128",
		    a8[] = "--no-telemetry", a9[] = "--log-level=error";
	char *eal_argv[] = { a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, NULL };
	SRunner *sr;
	int failed;

	uiw_log_level_set(UIW_LOG_ERR);
	if (rte_eal_init((int)(sizeof(eal_argv) / sizeof(eal_argv[0])) - 1, eal_argv) < 0) {
		fprintf(stderr, "EAL init failed\n");
		return 1;
	}
	uiw_lcore_id_sync();   /* as uiw_eal_init() does: this thread's lcore for the stack */
	pool = rte_pktmbuf_pool_create("unit_pool", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	if (pool == NULL) {
		fprintf(stderr, "pool creation failed\n");
		return 1;
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	rte_mempool_free(pool);
	rte_eal_cleanup();
	return failed == 0 ? 0 : 1;
}
