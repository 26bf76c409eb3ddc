/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uiw_verbs.h"
#include "verbs_app.h"

int app_verbs_open(struct uiw_stack *a, struct uiw_stack *b, struct uiw_config *cfg,
		   const struct app_mode *m, const char *name, unsigned link_wait_ms)
{
	if (m->pair ? app_stack_pair(a, b, cfg, UIW_STACK_MPA, name, true) != 0
		    : app_stack_open(a, cfg, UIW_STACK_MPA, link_wait_ms, true) != 0)
		return -1;
	if (uiw_verbs_add_device(a) != 0 || (m->pair && uiw_verbs_add_device(b) != 0))
		return -1;
	return 0;
}

struct rdma_event_channel *app_nonblocking_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (ch == NULL || fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) != 0) {
		fprintf(stderr, "rdma_cm event channel: %s\n", strerror(errno));
		exit(1);
	}
	return ch;
}
