/* SPDX-License-Identifier: BSD-3-Clause */
/* Configuration parsing, error messages naming the key, and the EAL arguments it gives. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_common.h"
#include "uiw_config.h"
#include "uiw_log.h"

static struct uiw_config cfg;
static char err[256];

static void setup(void)
{
	uiw_config_defaults(&cfg);
	err[0] = '\0';
	unsetenv("UIWARP_CONF");
	unsetenv("UIWARP_CONFIG");
}

START_TEST(full_text_parsed)
{
	const char *text = "# a comment\n"
			   "port = net_af_packet0,iface=veth1,qdisc_bypass=1\n"
			   "ip = 10.1.2.3/16 ; gateway = 10.1.0.1\n"
			   "mtu=9000\n\n"
			   "mac = 02:aa:bb:cc:dd:ee  # trailing comment\n"
			   "hugepages = off; memory = 512; lcores = 1; log = debug\n"
			   "eal = --vdev=net_null0 --iova-mode=va\n"
			   "arp_retries = 5\n";

	ck_assert_int_eq(uiw_config_parse_text(&cfg, text, "t", err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.port, "net_af_packet0,iface=veth1,qdisc_bypass=1");
	ck_assert_uint_eq(cfg.ip, 0x0a010203);
	ck_assert_uint_eq(cfg.prefix_len, 16);
	ck_assert_uint_eq(cfg.gateway, 0x0a010001);
	ck_assert_uint_eq(cfg.mtu, 9000);
	ck_assert(cfg.mac_set);
	ck_assert_uint_eq(cfg.mac[0], 0x02);
	ck_assert_uint_eq(cfg.mac[5], 0xee);
	ck_assert_int_eq(cfg.hugepages, UIW_HUGE_OFF);
	ck_assert_uint_eq(cfg.memory_mb, 512);
	ck_assert_str_eq(cfg.lcores, "1");
	ck_assert_int_eq(cfg.log_level, UIW_LOG_DEBUG);
	ck_assert_str_eq(cfg.eal_args, "--vdev=net_null0 --iova-mode=va");
	ck_assert_uint_eq(cfg.arp_retries, 5);
	ck_assert_int_eq(uiw_config_validate(&cfg, err, sizeof(err)), 0);
}
END_TEST

/* rx_buf_size: left to the port unless set, a number, or given back to the port by "auto". */
START_TEST(rx_buf_size_auto_or_number)
{
	ck_assert_uint_eq(cfg.rx_buf_size, UIW_RX_BUF_AUTO);
	ck_assert_int_eq(uiw_config_parse_text(&cfg, "rx_buf_size = 4096", "t", err, sizeof(err)), 0);
	ck_assert_uint_eq(cfg.rx_buf_size, 4096);
	ck_assert_int_eq(uiw_config_parse_text(&cfg, "rx_buf_size = 0", "t", err, sizeof(err)), 0);
	ck_assert_uint_eq(cfg.rx_buf_size, 0);
	ck_assert_int_eq(uiw_config_parse_text(&cfg, "rx_buf_size = auto", "t", err, sizeof(err)), 0);
	ck_assert_uint_eq(cfg.rx_buf_size, UIW_RX_BUF_AUTO);
}
END_TEST

/* pair_link: a ring pair unless vhost is asked for; back to the ring by "ring". */
START_TEST(pair_link_ring_or_vhost)
{
	ck_assert_uint_eq(cfg.pair_vhost, 0);
	ck_assert_int_eq(uiw_config_parse_text(&cfg, "pair_link = vhost", "t", err, sizeof(err)), 0);
	ck_assert_uint_eq(cfg.pair_vhost, 1);
	ck_assert_int_eq(uiw_config_parse_text(&cfg, "pair_link = ring", "t", err, sizeof(err)), 0);
	ck_assert_uint_eq(cfg.pair_vhost, 0);
}
END_TEST

struct bad {
	const char *text;
	const char *must_contain;
};

static const struct bad bads[] = {
	{ "mtux = 1500", "unknown key 'mtux'" },
	{ "mtu = 100", "key 'mtu'" },
	{ "mtu = 1500x", "key 'mtu'" },
	{ "mtu = -1", "key 'mtu'" },
	{ "ip = 10.0.0.1/33", "key 'ip'" },
	{ "ip = 10.0.0", "key 'ip'" },
	{ "ip = 0.0.0.0/8", "key 'ip'" },
	{ "gateway = nowhere", "key 'gateway'" },
	{ "mac = 01:00:5e:00:00:01", "key 'mac'" },
	{ "mac = 02:00:00:00:00", "key 'mac'" },
	{ "hugepages = maybe", "key 'hugepages'" },
	{ "log = loud", "key 'log'" },
	{ "mbufs = 99999999999999999999", "key 'mbufs'" },
	{ "rx_burst = 0", "key 'rx_burst'" },
	{ "rx_buf_size = big", "key 'rx_buf_size'" },
	{ "rx_buf_size = 60001", "key 'rx_buf_size'" },
	{ "port = ", "key 'port'" },
	{ "pair_link = memif", "key 'pair_link'" },
	{ "lcores = 0 1", "key 'lcores'" },
	{ "just words", "expected key = value" },
	{ "mtu = 1500\n\nmtu = 1", "t:3:" },
	{ "mtu = 1500; mtu = 1", "t:1:" },
};

/* The log threshold holds for every line, whether written through the macros or by a
 * direct uiw_log() call (a QP's orderly close is logged at debug level that way). */
START_TEST(log_threshold_holds_for_direct_calls)
{
	char buf[256] = "";
	int saved = dup(2), fds[2];
	ssize_t n;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_ge(saved, 0);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	dup2(fds[1], 2);
	uiw_log_level_set(UIW_LOG_WARN);
	uiw_log(UIW_LOG_DEBUG, "hidden %d", 1);
	UIW_INFO("hidden %d", 2);
	uiw_log(UIW_LOG_WARN, "shown %d", 3);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	uiw_log_level_set(UIW_LOG_INFO);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(buf, "uiwarp warn: shown 3\n");
}
END_TEST

START_TEST(bad_entry_named_in_error)
{
	const struct bad *b = &bads[_i];

	ck_assert_int_eq(uiw_config_parse_text(&cfg, b->text, "t", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, b->must_contain) != NULL, "'%s' gave '%s'", b->text, err);
}
END_TEST

START_TEST(validate_names_missing_keys)
{
	ck_assert_int_eq(uiw_config_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "'port'"));
	ck_assert_int_eq(uiw_config_set(&cfg, "port", "net_ring0", err, sizeof(err)), 0);
	ck_assert_int_eq(uiw_config_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "'ip'"));
	ck_assert_int_eq(uiw_config_set(&cfg, "ip", "10.0.0.1/24", err, sizeof(err)), 0);
	ck_assert_int_eq(uiw_config_set(&cfg, "gateway", "10.0.1.1", err, sizeof(err)), 0);
	ck_assert_int_eq(uiw_config_validate(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "'gateway'"));
}
END_TEST

START_TEST(environment_file_then_inline)
{
	char path[] = "/tmp/uiw-config-XXXXXX";
	int fd = mkstemp(path);
	const char *text = "port = net_ring0\nip = 10.9.9.9/24\nmtu = 1400\n";

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
	close(fd);
	setenv("UIWARP_CONF", path, 1);
	setenv("UIWARP_CONFIG", "mtu = 1300; log = warn", 1);
	ck_assert_int_eq(uiw_config_load_env(&cfg, err, sizeof(err)), 0);
	unlink(path);
	ck_assert_str_eq(cfg.port, "net_ring0");
	ck_assert_uint_eq(cfg.ip, 0x0a090909);
	ck_assert_uint_eq(cfg.mtu, 1300);
	ck_assert_int_eq(cfg.log_level, UIW_LOG_WARN);
}
END_TEST

START_TEST(environment_errors_name_source)
{
	setenv("UIWARP_CONFIG", "mtu = 1500; colour = blue", 1);
	ck_assert_int_eq(uiw_config_load_env(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "$UIWARP_CONFIG"));
	ck_assert_ptr_nonnull(strstr(err, "'colour'"));
	setenv("UIWARP_CONF", "/nonexistent/uiwarp.conf", 1);
	ck_assert_int_eq(uiw_config_load_env(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/uiwarp.conf"));
}
END_TEST

static int argv_has(char **argv, int argc, const char *a)
{
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], a) == 0)
			return i;
	return -1;
}

START_TEST(eal_args_for_virtual_port_without_hugepages)
{
	char *argv[64];
	char store[2048];
	int argc, i;

	uiw_config_set(&cfg, "port", "net_pcap0,rx_pcap=a.pcap", err, sizeof(err));
	uiw_config_set(&cfg, "hugepages", "off", err, sizeof(err));
	uiw_config_set(&cfg, "lcores", "1", err, sizeof(err));
	uiw_config_set(&cfg, "eal", "--iova-mode=va  --vdev=net_null0", err, sizeof(err));
	argc = uiw_eal_build_args(&cfg, "prog", argv, 64, store, sizeof(store));
	ck_assert_int_gt(argc, 0);
	ck_assert_ptr_null(argv[argc]);
	ck_assert_str_eq(argv[0], "prog");
	i = argv_has(argv, argc, "-l");
	ck_assert_int_gt(i, 0);
	ck_assert_str_eq(argv[i + 1], "1");
	ck_assert_int_gt(argv_has(argv, argc, "--no-pci"), 0);
	ck_assert_int_gt(argv_has(argv, argc, "--no-huge"), 0);
	ck_assert_int_gt(argv_has(argv, argc, "--no-shconf"), 0);
	i = argv_has(argv, argc, "-m");
	ck_assert_str_eq(argv[i + 1], "256");
	ck_assert_int_lt(argv_has(argv, argc, "--in-memory"), 0);
	ck_assert_str_eq(argv[argc - 2], "--iova-mode=va");
	ck_assert_str_eq(argv[argc - 1], "--vdev=net_null0");
}
END_TEST

START_TEST(eal_args_for_pci_port_with_hugepages)
{
	char *argv[64];
	char store[2048];
	int argc, i;

	uiw_config_set(&cfg, "port", "0000:3b:00.1,rxq_pkt_fill_thresh=8", err, sizeof(err));
	uiw_config_set(&cfg, "hugepages", "on", err, sizeof(err));
	argc = uiw_eal_build_args(&cfg, "prog", argv, 64, store, sizeof(store));
	ck_assert_int_lt(argv_has(argv, argc, "--no-pci"), 0);
	i = argv_has(argv, argc, "-a");
	ck_assert_int_gt(i, 0);
	ck_assert_str_eq(argv[i + 1], "0000:3b:00.1");
	ck_assert_int_gt(argv_has(argv, argc, "--in-memory"), 0);
	ck_assert_int_lt(argv_has(argv, argc, "--no-huge"), 0);
}
END_TEST

/* memif's zero-copy client needs the EAL's memory in one file: asked for a memif client
 * only, when key memif_zero_copy or the devargs ask for it (the key is off by default). */
START_TEST(eal_args_for_memif_zero_copy_client)
{
	static const struct {
		const char *port, *zc;
		bool one_file;
	} cases[] = {
		{ "net_memif0,role=client,socket=/tmp/m.sock", "1", true },
		{ "net_memif0,socket=/tmp/m.sock,role=client", "1", true },
		{ "net_memif0,role=client,zero-copy=no", "1", false },
		{ "net_memif0,role=client", "0", false },
		{ "net_memif0,role=client,zero-copy=yes", "0", true },
		{ "net_memif0,role=server,socket=/tmp/role=client", "1", false },
		{ "net_memif0", "1", false },
		{ "net_ring0", "1", false },
	};
	char *argv[64];
	char store[2048];

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int argc;

		uiw_config_defaults(&cfg);
		ck_assert_int_eq(uiw_config_set(&cfg, "port", cases[k].port, err, sizeof(err)), 0);
		ck_assert_int_eq(uiw_config_set(&cfg, "hugepages", "off", err, sizeof(err)), 0);
		ck_assert_int_eq(uiw_config_set(&cfg, "memif_zero_copy", cases[k].zc, err,
						sizeof(err)), 0);
		argc = uiw_eal_build_args(&cfg, "prog", argv, 64, store, sizeof(store));
		ck_assert_int_gt(argc, 0);
		ck_assert_msg((argv_has(argv, argc, "--single-file-segments") > 0) ==
				      cases[k].one_file,
			      "%s, memif_zero_copy=%s", cases[k].port, cases[k].zc);
		ck_assert_int_gt(argv_has(argv, argc, "--no-huge"), 0);
	}
	uiw_config_defaults(&cfg);
	uiw_config_set(&cfg, "port", "net_memif0,role=client", err, sizeof(err));
	uiw_config_set(&cfg, "hugepages", "off", err, sizeof(err));
	int argc = uiw_eal_build_args(&cfg, "prog", argv, 64, store, sizeof(store));

	ck_assert_int_gt(argc, 0);
	ck_assert_int_lt(argv_has(argv, argc, "--single-file-segments"), 0);
	ck_assert_int_ne(uiw_config_set(&cfg, "memif_zero_copy", "2", err, sizeof(err)), 0);
}
END_TEST

START_TEST(eal_args_overflow_refused)
{
	char *argv[8];
	char store[2048];

	uiw_config_set(&cfg, "eal", "a b c d e f g h i j", err, sizeof(err));
	ck_assert_int_eq(uiw_eal_build_args(&cfg, "prog", argv, 8, store, sizeof(store)), -1);
}
END_TEST

START_TEST(pci_addresses_recognised)
{
	ck_assert(uiw_devargs_is_pci("0000:00:03.0"));
	ck_assert(uiw_devargs_is_pci("3b:00.1"));
	ck_assert(uiw_devargs_is_pci("0000:af:00.0,foo=1"));
	ck_assert(!uiw_devargs_is_pci("net_ring0"));
	ck_assert(!uiw_devargs_is_pci("net_af_packet0,iface=veth0"));
	ck_assert(!uiw_devargs_is_pci("net_memif0,socket=/tmp/a.b:c"));
	ck_assert(!uiw_devargs_is_pci("dead.beef"));
	ck_assert(!uiw_devargs_is_pci(""));
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_with_leak_check("config", setup, NULL);

	tcase_add_test(tc, full_text_parsed);
	tcase_add_test(tc, rx_buf_size_auto_or_number);
	tcase_add_test(tc, pair_link_ring_or_vhost);
	tcase_add_test(tc, log_threshold_holds_for_direct_calls);
	tcase_add_loop_test(tc, bad_entry_named_in_error, 0, (int)(sizeof(bads) / sizeof(bads[0])));
	tcase_add_test(tc, validate_names_missing_keys);
	tcase_add_test(tc, environment_file_then_inline);
	tcase_add_test(tc, environment_errors_name_source);
	tcase_add_test(tc, eal_args_for_virtual_port_without_hugepages);
	tcase_add_test(tc, eal_args_for_pci_port_with_hugepages);
	tcase_add_test(tc, eal_args_for_memif_zero_copy_client);
	tcase_add_test(tc, eal_args_overflow_refused);
	tcase_add_test(tc, pci_addresses_recognised);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(config_suite());
}
