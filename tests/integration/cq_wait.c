/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_get_cq_event() on a channel no completion ever reaches, as a program sees it through
 * the drop-in libibverbs.so.1 (run with LD_LIBRARY_PATH at the drop-in and UIWARP_CONFIG):
 *
 *   cq_wait signal    a SIGALRM whose handler was installed without SA_RESTART, due while
 *                     the call runs the stack itself (cq_spin_us set longer than the
 *                     alarm), ends the wait with EINTR, as it ends a kernel read(); a wait
 *                     that missed the signal would sleep for ever (the caller's timeout)
 *   cq_wait nonblock  on an O_NONBLOCK channel the call returns EAGAIN
 *
 * Exit status 0 when the call behaved so; the line printed says what it did.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static int wait_signal(struct ibv_comp_channel *ch)
{
	struct sigaction sa = { .sa_handler = on_alarm };   /* no SA_RESTART */
	struct itimerval it = { .it_value = { .tv_usec = 100 * 1000 } };
	struct ibv_cq *cq;
	void *ctx;
	int rc, err;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) != 0 || setitimer(ITIMER_REAL, &it, NULL) != 0) {
		perror("cq_wait: alarm");
		return 1;
	}
	rc = ibv_get_cq_event(ch, &cq, &ctx);
	err = errno;
	printf("signal: ibv_get_cq_event %d, errno %s, alarms %d\n", rc, strerror(err), (int)alarms);
	return rc == -1 && err == EINTR && alarms == 1 ? 0 : 1;
}

static int wait_nonblock(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *ctx;
	int rc, err;

	if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) != 0) {
		perror("cq_wait: O_NONBLOCK");
		return 1;
	}
	rc = ibv_get_cq_event(ch, &cq, &ctx);
	err = errno;
	printf("nonblock: ibv_get_cq_event %d, errno %s\n", rc, strerror(err));
	return rc == -1 && err == EAGAIN ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *vctx;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	int n, rc;

	if (argc != 2 || (strcmp(argv[1], "signal") != 0 && strcmp(argv[1], "nonblock") != 0)) {
		fprintf(stderr, "usage: cq_wait signal|nonblock\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1 || (vctx = ibv_open_device(list[0])) == NULL) {
		perror("cq_wait: no device");
		return 1;
	}
	ch = ibv_create_comp_channel(vctx);
	cq = ch != NULL ? ibv_create_cq(vctx, 16, NULL, ch, 0) : NULL;
	if (cq == NULL || ibv_req_notify_cq(cq, 0) != 0) {
		perror("cq_wait: channel or CQ");
		return 1;
	}
	rc = strcmp(argv[1], "signal") == 0 ? wait_signal(ch) : wait_nonblock(ch);
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(ch);
	ibv_close_device(vctx);
	ibv_free_device_list(list);
	return rc;
}
