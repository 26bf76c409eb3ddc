/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * uiwarp-stat: what a running uiwarp program holds, asked while it runs. The drop-in
 * libraries listen on DIR/PID.sock (DIR: $UIWARP_STAT_DIR, else /tmp/uiwarp-UID) and answer
 * with their gauges, non-zero counters and every QP (addresses, TCP and MPA state, queue
 * depths, counters, why it left RTS). Without a PID: the programs that answer.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char *stat_dir(char *own, size_t len)
{
	const char *d = getenv("UIWARP_STAT_DIR");

	if (d != NULL && *d != '\0')
		return d;
	snprintf(own, len, "/tmp/uiwarp-%u", (unsigned)getuid());
	return own;
}

/* Connects to @p path. @return the socket, or -1 with errno. */
static int stat_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		fd = -1;
	}
	return fd;
}

/* Copies what the program answers to stdout. @return 0, or 1 when it said nothing in
 * @p timeout_ms (its progress thread looks every 100 ms). */
static int relay(int fd, int timeout_ms)
{
	char buf[65536];
	size_t total = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, timeout_ms) <= 0)
			break;
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0)
			break;
		fwrite(buf, 1, (size_t)n, stdout);
		total += (size_t)n;
	}
	return total > 0 ? 0 : 1;
}

static int list(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	if (d == NULL) {
		fprintf(stderr, "no uiwarp program is running (no %s)\n", dir);
		return 1;
	}
	while ((e = readdir(d)) != NULL) {
		char path[512];
		int pid, fd;

		if (sscanf(e->d_name, "%d.sock", &pid) != 1)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		fd = stat_connect(path);
		if (fd < 0) {
			if (errno == ECONNREFUSED)
				unlink(path);   /* the process is gone */
			continue;
		}
		close(fd);
		printf("%d\n", pid);
		found++;
	}
	closedir(d);
	if (found == 0)
		fprintf(stderr, "no uiwarp program is running (nothing answers in %s)\n", dir);
	return found > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	char own[64], path[512];
	const char *dir = stat_dir(own, sizeof(own));
	int fd, pid;

	if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		printf("usage: uiwarp-stat [PID]\n"
		       "  PID: print what that uiwarp program (drop-in libraries) holds now: gauges,\n"
		       "       non-zero counters, every QP with its connection, queues and counters\n"
		       "  no PID: list the uiwarp programs that answer\n"
		       "  Sockets are in $UIWARP_STAT_DIR, else /tmp/uiwarp-UID; a program started\n"
		       "  with UIWARP_STAT=0 has none.\n");
		return 0;
	}
	if (argc < 2)
		return list(dir);
	if (argc != 2 || sscanf(argv[1], "%d", &pid) != 1 || pid <= 0) {
		fprintf(stderr, "usage: uiwarp-stat [PID] (--help)\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/%d.sock", dir, pid);
	fd = stat_connect(path);
	if (fd < 0) {
		if (errno == ENOENT)
			fprintf(stderr, "uiwarp-stat: process %d has no uiwarp instance (no %s; it "
				"may not have made its first verbs call yet, or runs with "
				"UIWARP_STAT=0 or another UIWARP_STAT_DIR)\n", pid, path);
		else if (errno == ECONNREFUSED && unlink(path) == 0)
			fprintf(stderr, "uiwarp-stat: process %d is gone (its socket %s was left; "
				"removed)\n", pid, path);
		else
			fprintf(stderr, "uiwarp-stat: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (relay(fd, 3000) != 0) {
		fprintf(stderr, "uiwarp-stat: process %d did not answer within 3 s (its progress "
			"thread is stuck, or the process is stopped)\n", pid);
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}
