/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An MPI program of two ranks whose every transfer is checked (tests/integration/mpi.sh runs
 * it with Open MPI on the drop-in libraries):
 * - first, both ranks send to each other at once (MPI_Sendrecv of 64 KiB): each starts a
 *   connection to the other, and libfabric's RXM settles the collision by rejecting one
 *   and destroying the id that lost, its rejection perhaps still on its way;
 * - ping-pong with MPI_Send/MPI_Recv from 1 octet to 4 MiB, each message a pattern of its
 *   sender, size and turn, checked octet by octet by its receiver;
 * - MPI_Bcast of 1 MiB and MPI_Allreduce of a vector, checked on both ranks;
 * - one-sided MPI_Put and MPI_Get of 1 MiB in a window, between fences, checked;
 * - then, timed: a ping-pong of 8 octets (the one-way time is half a round trip) and
 *   1 MiB messages streamed with 8 in flight (Gb/s at the receiver).
 * With more than two ranks: MPI_Alltoall of 64 KiB blocks and an allreduce, 20 times, every
 * block checked by the rank that receives it (each pair of ranks connects, most of them at
 * once).
 * Each rank prints "mpi_check: ok rank R ..." or "mpi_check: FAIL rank R ..." and exits 0
 * or 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MSG (4u << 20)
#define BIG (1u << 20)
#define WINDOW 8

static int rank;

static uint8_t pattern(int from, size_t size, int turn, size_t i)
{
	return (uint8_t)(from * 131 + size * 7 + (size_t)turn * 29 + i * 13 + (i >> 9));
}

static void fill(uint8_t *b, int from, size_t size, int turn)
{
	for (size_t i = 0; i < size; i++)
		b[i] = pattern(from, size, turn, i);
}

/* @return 0, or 1 with the first octet that differs said. */
static int check(const uint8_t *b, int from, size_t size, int turn, const char *what)
{
	for (size_t i = 0; i < size; i++)
		if (b[i] != pattern(from, size, turn, i)) {
			printf("mpi_check: FAIL rank %d: %s of %zu octets (turn %d): octet %zu is %u, not %u\n",
			       rank, what, size, turn, i, b[i], pattern(from, size, turn, i));
			return 1;
		}
	return 0;
}

static int both_at_once(uint8_t *b)
{
	const size_t size = 65536;
	uint8_t *in = b + size;

	fill(b, rank, size, 50);
	memset(in, 0, size);
	MPI_Sendrecv(b, (int)size, MPI_BYTE, 1 - rank, 50, in, (int)size, MPI_BYTE, 1 - rank, 50,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return check(in, 1 - rank, size, 50, "a message sent at once");
}

static int ping_pong(uint8_t *b)
{
	int peer = 1 - rank, bad = 0;

	for (size_t size = 1; size <= MAX_MSG; size *= 4)
		for (int turn = 0; turn < 4; turn++) {
			if (rank == 0) {
				fill(b, 0, size, turn);
				MPI_Send(b, (int)size, MPI_BYTE, peer, turn, MPI_COMM_WORLD);
				memset(b, 0, size);
				MPI_Recv(b, (int)size, MPI_BYTE, peer, turn, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				bad |= check(b, 1, size, turn, "a reply");
			} else {
				memset(b, 0, size);
				MPI_Recv(b, (int)size, MPI_BYTE, peer, turn, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				bad |= check(b, 0, size, turn, "a message");
				fill(b, 1, size, turn);
				MPI_Send(b, (int)size, MPI_BYTE, peer, turn, MPI_COMM_WORLD);
			}
		}
	return bad;
}

static int collectives(uint8_t *b)
{
	long v[64], sum[64];
	int bad = 0;

	if (rank == 0)
		fill(b, 0, BIG, 100);
	else
		memset(b, 0, BIG);
	MPI_Bcast(b, BIG, MPI_BYTE, 0, MPI_COMM_WORLD);
	bad |= check(b, 0, BIG, 100, "the broadcast");
	for (int i = 0; i < 64; i++)
		v[i] = (long)(rank + 1) * (i + 1);
	MPI_Allreduce(v, sum, 64, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < 64; i++)
		if (sum[i] != 3L * (i + 1)) {
			printf("mpi_check: FAIL rank %d: allreduce element %d is %ld, not %ld\n", rank, i,
			       sum[i], 3L * (i + 1));
			bad = 1;
			break;
		}
	return bad;
}

static int one_sided(uint8_t *b)
{
	uint8_t *w = calloc(BIG, 1);
	MPI_Win win;
	int bad = 0;

	if (w == NULL)
		return 1;
	MPI_Win_create(w, BIG, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	fill(b, rank, BIG, 200);
	MPI_Win_fence(0, win);
	MPI_Put(b, BIG, MPI_BYTE, 1 - rank, 0, BIG, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	bad |= check(w, 1 - rank, BIG, 200, "what the peer put");
	memset(b, 0, BIG);
	MPI_Get(b, BIG, MPI_BYTE, 1 - rank, 0, BIG, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	bad |= check(b, rank, BIG, 200, "what was got back");
	MPI_Win_free(&win);
	free(w);
	return bad;
}

/* Every rank sends each other rank a block of its own pattern, 20 times. */
static int all_to_all(uint8_t *b, int n)
{
	const size_t blk = 65536;
	uint8_t *in = b + (size_t)n * blk;
	int bad = 0;

	for (int turn = 0; turn < 20 && !bad; turn++) {
		long v = rank, sum = 0;

		for (int d = 0; d < n; d++)
			fill(b + (size_t)d * blk, rank * 64 + d, blk, turn);
		memset(in, 0, (size_t)n * blk);
		MPI_Alltoall(b, (int)blk, MPI_BYTE, in, (int)blk, MPI_BYTE, MPI_COMM_WORLD);
		for (int f = 0; f < n && !bad; f++)
			bad |= check(in + (size_t)f * blk, f * 64 + rank, blk, turn, "an all-to-all block");
		MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
		if (sum != (long)n * (n - 1) / 2) {
			printf("mpi_check: FAIL rank %d: allreduce gave %ld\n", rank, sum);
			bad = 1;
		}
	}
	return bad;
}

static double latency_us(uint8_t *b)
{
	const int n = 2000;
	double t0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int i = 0; i < n; i++) {
		if (rank == 0) {
			MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / (2.0 * n) * 1e6;
}

/* Rank 0 streams @p n messages of 1 MiB, WINDOW in flight, to rank 1. @return Gb/s as rank
 * 1 saw them arrive (0 on rank 0), or -1 when the last one was not as sent. */
static double bandwidth_gbps(uint8_t *b, int n)
{
	MPI_Request r[WINDOW];
	double t0;
	int bad = 0;

	if (rank == 0)
		fill(b, 0, BIG, 300);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int i = 0; i < n; i += WINDOW) {
		int k = n - i < WINDOW ? n - i : WINDOW;

		for (int j = 0; j < k; j++)
			if (rank == 0)
				MPI_Isend(b, BIG, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &r[j]);
			else
				MPI_Irecv(b, BIG, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r[j]);
		MPI_Waitall(k, r, MPI_STATUSES_IGNORE);
	}
	double t = MPI_Wtime() - t0;

	if (rank == 1)
		bad = check(b, 0, BIG, 300, "a streamed message");
	return bad ? -1 : rank == 0 ? 0 : (double)n * BIG * 8 / t / 1e9;
}

int main(int argc, char **argv)
{
	int size, bad = 0;
	uint8_t *b;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	b = malloc(MAX_MSG);
	if (size < 2 || size > 16 || b == NULL) {
		printf("mpi_check: FAIL rank %d: needs 2 to 16 ranks (has %d) and %u octets\n", rank,
		       size, MAX_MSG);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (size > 2) {
		bad = all_to_all(b, size);
		if (bad)
			printf("mpi_check: FAIL rank %d\n", rank);
		else
			printf("mpi_check: ok rank %d of %d: all-to-all and allreduce checked\n", rank, size);
		free(b);
		MPI_Finalize();
		return bad;
	}
	bad |= both_at_once(b);
	bad |= ping_pong(b);
	bad |= collectives(b);
	bad |= one_sided(b);
	double lat = latency_us(b), bw = bandwidth_gbps(b, 400);

	bad |= bw < 0;
	if (bad)
		printf("mpi_check: FAIL rank %d\n", rank);
	else if (rank == 0)
		printf("mpi_check: ok rank 0: both at once, ping-pong 1 B to 4 MiB, broadcast, allreduce, put and get "
		       "checked; 8 B one-way %.2f us\n", lat);
	else
		printf("mpi_check: ok rank 1: both at once, ping-pong 1 B to 4 MiB, broadcast, allreduce, put and get "
		       "checked; 8 B one-way %.2f us, 1 MiB messages streamed at %.2f Gb/s\n", lat, bw);
	free(b);
	MPI_Finalize();
	return bad;
}
