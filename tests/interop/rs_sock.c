/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A plain socket program for librspreload.so (rsockets under ordinary socket calls), with
 * its data checked: the client sends N octets of a generated stream in pieces of uneven
 * sizes (37 first); the server reads them, then sends M octets of a second stream, which
 * the client reads; the client then sends one octet, and the server closes once it has it.
 * Each side checks every octet it reads against the generator, so both directions are
 * verified end to end. No side closes while the other still sends: rdma-core's rsockets
 * turn a half close into a full disconnect, and a socket closed while the peer's credit
 * updates still arrive is reset by Linux, its unsent data dropped.
 *
 * usage: rs_sock -s ADDR PORT N M | -c ADDR PORT N M
 * Prints "rs_sock: ok ..." or "rs_sock: FAIL ...", exit 0 or 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF (1u << 20)

struct gen {
	uint64_t s;
};

static uint8_t gen_byte(struct gen *g)
{
	g->s ^= g->s << 13;
	g->s ^= g->s >> 7;
	g->s ^= g->s << 17;
	return (uint8_t)(g->s >> 32);
}

/* The next piece size of the sender's pattern. */
static size_t piece(struct gen *g, int first)
{
	static const size_t sizes[] = { 1, 100, 1448, 4096, 65536, 131072, 300001 };

	if (first)
		return 37;
	return sizes[gen_byte(g) % (sizeof(sizes) / sizeof(sizes[0]))];
}

static int send_stream(int fd, uint64_t seed, size_t n)
{
	struct gen data = { seed }, sizes = { seed * 7 + 1 };
	uint8_t *buf = malloc(BUF);
	size_t sent = 0;
	int first = 1;

	while (buf != NULL && sent < n) {
		size_t k = piece(&sizes, first), off = 0;

		first = 0;
		if (k > n - sent)
			k = n - sent;
		for (size_t i = 0; i < k; i++)
			buf[i] = gen_byte(&data);
		while (off < k) {
			ssize_t w = send(fd, buf + off, k - off, 0);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				printf("rs_sock: FAIL send after %zu octets: %s\n", sent + off, strerror(errno));
				free(buf);
				return -1;
			}
			off += (size_t)w;
		}
		sent += k;
	}
	free(buf);
	return buf == NULL ? -1 : 0;
}

/* Reads @p n octets, each checked. @return octets read, or -1 (said why). */
static long long read_stream(int fd, uint64_t seed, long long n)
{
	struct gen data = { seed };
	uint8_t *buf = malloc(BUF);
	long long got = 0;

	while (got < n) {
		ssize_t r = recv(fd, buf, (size_t)(n - got) < BUF ? (size_t)(n - got) : BUF, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			printf("rs_sock: FAIL recv after %lld octets: %s\n", got, strerror(errno));
			got = -1;
			break;
		}
		if (r == 0)
			break;
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != gen_byte(&data)) {
				printf("rs_sock: FAIL octet %lld differs\n", got + i);
				free(buf);
				return -1;
			}
		got += r;
	}
	free(buf);
	return got;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int server, fd, one = 1;
	long long n, m, got;

	if (argc != 6 || (strcmp(argv[1], "-s") != 0 && strcmp(argv[1], "-c") != 0) ||
	    inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) {
		fprintf(stderr, "usage: rs_sock -s|-c ADDR PORT N M\n");
		return 2;
	}
	server = argv[1][1] == 's';
	a.sin_port = htons((uint16_t)atoi(argv[3]));
	n = atoll(argv[4]);
	m = atoll(argv[5]);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		printf("rs_sock: FAIL socket: %s\n", strerror(errno));
		return 1;
	}
	if (server) {
		int l = fd;

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0 ||
		    (fd = accept(l, NULL, NULL)) < 0) {
			printf("rs_sock: FAIL bind/listen/accept: %s\n", strerror(errno));
			return 1;
		}
		got = read_stream(fd, 1, n);
		if (got != n) {
			printf("rs_sock: FAIL the server read %lld of %lld octets\n", got, n);
			return 1;
		}
		if (send_stream(fd, 2, (size_t)m) != 0)
			return 1;
		char c = 0;

		if (recv(fd, &c, 1, MSG_WAITALL) != 1 || c != '.') {
			printf("rs_sock: FAIL no closing octet from the client\n");
			return 1;
		}
		close(fd);
		close(l);
		printf("rs_sock: ok server read %lld octets as sent, sent %lld\n", got, m);
		return 0;
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		printf("rs_sock: FAIL connect: %s\n", strerror(errno));
		return 1;
	}
	if (send_stream(fd, 1, (size_t)n) != 0)
		return 1;
	got = read_stream(fd, 2, m);
	if (got != m) {
		printf("rs_sock: FAIL the client read %lld of %lld octets\n", got, m);
		return 1;
	}
	char c;

	/* The closing octet; then the server's close is the end of the stream. */
	if (send(fd, ".", 1, 0) != 1 || recv(fd, &c, 1, 0) != 0) {
		printf("rs_sock: FAIL the end: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	printf("rs_sock: ok client sent %lld octets, read %lld as sent\n", n, got);
	return 0;
}
