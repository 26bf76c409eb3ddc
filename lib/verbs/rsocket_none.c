/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets (rdma/rsocket.h) are not provided: each call fails with ENOSYS. They exist
 * because rping and ucmatose import rpoll, and programs are linked with immediate binding.
 */
#include <errno.h>
#include <stdarg.h>

#include <rdma/rsocket.h>

#define NONE(ret)                                                                            \
	do {                                                                                 \
		errno = ENOSYS;                                                              \
		return ret;                                                                  \
	} while (0)

int rsocket(int domain, int type, int protocol) { (void)domain, (void)type, (void)protocol; NONE(-1); }
int rbind(int s, const struct sockaddr *a, socklen_t l) { (void)s, (void)a, (void)l; NONE(-1); }
int rlisten(int s, int backlog) { (void)s, (void)backlog; NONE(-1); }
int raccept(int s, struct sockaddr *a, socklen_t *l) { (void)s, (void)a, (void)l; NONE(-1); }
int rconnect(int s, const struct sockaddr *a, socklen_t l) { (void)s, (void)a, (void)l; NONE(-1); }
int rshutdown(int s, int how) { (void)s, (void)how; NONE(-1); }
int rclose(int s) { (void)s; NONE(-1); }
ssize_t rrecv(int s, void *b, size_t n, int f) { (void)s, (void)b, (void)n, (void)f; NONE(-1); }
ssize_t rrecvfrom(int s, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l)
{
	(void)s, (void)b, (void)n, (void)f, (void)a, (void)l;
	NONE(-1);
}
ssize_t rrecvmsg(int s, struct msghdr *m, int f) { (void)s, (void)m, (void)f; NONE(-1); }
ssize_t rsend(int s, const void *b, size_t n, int f) { (void)s, (void)b, (void)n, (void)f; NONE(-1); }
ssize_t rsendto(int s, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l)
{
	(void)s, (void)b, (void)n, (void)f, (void)a, (void)l;
	NONE(-1);
}
ssize_t rsendmsg(int s, const struct msghdr *m, int f) { (void)s, (void)m, (void)f; NONE(-1); }
ssize_t rread(int s, void *b, size_t n) { (void)s, (void)b, (void)n; NONE(-1); }
ssize_t rreadv(int s, const struct iovec *v, int n) { (void)s, (void)v, (void)n; NONE(-1); }
ssize_t rwrite(int s, const void *b, size_t n) { (void)s, (void)b, (void)n; NONE(-1); }
ssize_t rwritev(int s, const struct iovec *v, int n) { (void)s, (void)v, (void)n; NONE(-1); }
int rpoll(struct pollfd *fds, nfds_t n, int timeout) { (void)fds, (void)n, (void)timeout; NONE(-1); }
int rselect(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
	(void)n, (void)r, (void)w, (void)e, (void)t;
	NONE(-1);
}
int rgetpeername(int s, struct sockaddr *a, socklen_t *l) { (void)s, (void)a, (void)l; NONE(-1); }
int rgetsockname(int s, struct sockaddr *a, socklen_t *l) { (void)s, (void)a, (void)l; NONE(-1); }
int rsetsockopt(int s, int level, int name, const void *v, socklen_t l)
{
	(void)s, (void)level, (void)name, (void)v, (void)l;
	NONE(-1);
}
int rgetsockopt(int s, int level, int name, void *v, socklen_t *l)
{
	(void)s, (void)level, (void)name, (void)v, (void)l;
	NONE(-1);
}
int rfcntl(int s, int cmd, ...) { (void)s, (void)cmd; NONE(-1); }
off_t riomap(int s, void *b, size_t n, int prot, int f, off_t off)
{
	(void)s, (void)b, (void)n, (void)prot, (void)f, (void)off;
	NONE(-1);
}
int riounmap(int s, void *b, size_t n) { (void)s, (void)b, (void)n; NONE(-1); }
size_t riowrite(int s, const void *b, size_t n, off_t off, int f)
{
	(void)s, (void)b, (void)n, (void)off, (void)f;
	errno = ENOSYS;
	return 0;
}
