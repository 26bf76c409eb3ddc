/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * accept4() beside rdma-core 44's librspreload.so, which turns a program's socket calls into
 * rsockets but intercepts accept() and not accept4(): a program that accepts with accept4()
 * (netcat-openbsd's nc -l, Python's socket.accept) hands the preload's descriptor to the
 * kernel and gets ENOTSOCK. Preloaded beside it,
 *
 *     LD_PRELOAD="/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
 *                 <build>/lib/verbs/dropin/libuiw_rsaccept4.so"
 *
 * this library answers accept4() with accept(), which resolves to the preload's (an
 * rsocket listener hands out an rsocket, a kernel socket a kernel socket), then sets the
 * flags with fcntl(), which the preload turns into rfcntl() for an rsocket. Close-on-exec
 * is set after the accept, not with it (an rsocket's own descriptors are close-on-exec).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

int accept4(int s, struct sockaddr *addr, socklen_t *len, int flags)
{
	int fd, fl;

	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) {
		errno = EINVAL;
		return -1;
	}
	fd = accept(s, addr, len);
	if (fd < 0)
		return fd;
	if (flags & SOCK_NONBLOCK) {
		fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
			int e = errno;

			close(fd);
			errno = e;
			return -1;
		}
	}
	if (flags & SOCK_CLOEXEC)
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);   /* an rsocket may refuse it: already so */
	return fd;
}
