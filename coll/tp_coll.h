/*
 * tp_coll.h - libtopoplace-coll: collectives that run a job's topoplace
 * plan (ring order, double binary trees, level-1 groups).
 *
 * A communicator joins the `world_size` processes of one plan. Global
 * ranks follow the plan: host by host in ring (node rank) order, local
 * rank l of host h being rank first_rank(h) + l. The algorithms use the
 * plan's schedule only:
 *
 *   ring          all-reduce as reduce-scatter + all-gather around the
 *                 global rank order (the plan's ring), chunked and
 *                 pipelined so a chunk is reduced while the next arrives.
 *   tree          NCCL-style double binary tree: the plan's two trees
 *                 over hosts, each carrying half of the data, reduce up
 *                 then broadcast down, pipelined by chunk. Inside a host
 *                 the local ranks form a chain from local rank 0 (tree
 *                 0) or from the last local rank (tree 1), which link
 *                 the hosts: the schedule sched/ prices. Below 8 KiB
 *                 tree 1 alone carries the data (half the messages).
 *   hierarchical  the plan's hierarchical schedule (topoplace's source:
 *                 sched/tp_sched.h), the one `topoplace plan` prices:
 *                 reduce-scatter inside the host, then inside each
 *                 level-1 group among the ranks with the same local rank,
 *                 a ring across the groups among corresponding ranks
 *                 (every rank carries its own shard), and all-gathers
 *                 back down. Groups of different sizes: as many
 *                 channels as the largest group has hosts, each host of
 *                 a smaller group holding a run of them; hosts with
 *                 different rank counts: the ring (sched/tp_sched.h).
 *                 Pipelined: a call of more than TOPOPLACE_COLL_SEGMENT
 *                 bytes (default 1 MiB; 0 never) is cut into segments
 *                 of at most that many (at most 16 segments: larger
 *                 ones for a call of more than 16 times it), and each
 *                 segment's exchange across the groups runs while the
 *                 groups reduce-scatter the later segments and
 *                 all-gather the earlier ones, so the up-links and the
 *                 host links work at once. Where the plan has a
 *                 prediction for the size, its choice instead
 *                 (tp_plan_hier_pipelined(): pipelined or in one piece,
 *                 whichever the model found faster; rank 0's for every
 *                 rank). Every rank must set the same
 *                 TOPOPLACE_COLL_SEGMENT (init fails with
 *                 TP_ERR_MISMATCH naming it; a value that is not a byte
 *                 count 0..1 GiB fails with TP_ERR_INVAL).
 *   auto          the plan's recommendation for the smallest predicted
 *                 size at or above the call's (the largest past them;
 *                 tp_plan_recommend()), rank 0's plan's for every rank
 *                 (see Rendezvous); except that on a
 *                 communicator whose ranks all share one host, an
 *                 all-reduce of at most 32 KiB (TP_SCHED_HOST_SMALL)
 *                 takes the shared-memory
 *                 one-shot: every rank copies its input into a
 *                 host-wide segment, the last to arrive reduces them in
 *                 rank order and wakes the others with one futex call,
 *                 who copy the result (one sleep per rank instead of
 *                 2(P-1) dependent ring steps; it moves nothing over a
 *                 fabric, so the plan has nothing to price). The barrier
 *                 uses it too.
 *
 * Rendezvous: one TCP port. Rank 0 listens on master_addr:master_port;
 * every other rank connects and sends its rank, the world size, a hash of
 * the plan's schedule (tp_plan_to_json_schedule(): the plan without the
 * cost model's predictions and recommendations) and the address peers
 * reach it at (the local address of its connection to the master, so it
 * works on loopback and inside network namespaces). Rank 0 checks them
 * and sends back the address table and its plan's recommendation per
 * size, which every rank then runs for auto (a host whose own differ says
 * so once through the log sink), or the reason it refused (a connection
 * that closes before its hello, a port probe, is no rank and is ignored);
 * then each rank connects directly to the peers its schedules need (ring,
 * tree and hierarchical neighbours only, never all pairs), the higher rank
 * connecting to the lower. IPv4 only. During the rendezvous rank 0 holds
 * one socket per rank: the world size must stay below its open-file limit.
 *
 * Addresses: a rank whose plan entry names an HCA (tp_plan_rank_t.hca)
 * makes and takes its peer connections on that HCA's IPv4 address - the
 * first address of a network interface of the device in
 * /sys/class/infiniband/DEV/device/net (IPoIB, RoCE) - so on a host with
 * several HCAs each rank's connections, and with them the hierarchical
 * schedule's per-rank cross-group rings, run on its own rail. The
 * environment's TOPOPLACE_COLL_HCA_ADDRS="dev=ip,..." names the
 * addresses instead (only those devices), "0" turns it off; an address
 * that is not local, or an entry that is not DEV=IPv4, fails init naming
 * it. TOPOPLACE_COLL_HCA_NAMES="fabric=local,..." (the SPANK plugin's,
 * where the node names its HCAs otherwise than the fabric) translates
 * the plan's device names first. Without one, the address its
 * connection to the master left from.
 *
 * Transport: TCP between hosts, non-blocking sockets driven by poll();
 * between ranks of one plan host, shared-memory rings (one POSIX shm
 * segment and two FIFOs per pair in /dev/shm, unlinked as soon as both
 * ends opened them) with wake-ups through the FIFOs, and on a
 * single-host communicator one more segment shared by all its ranks (the
 * small all-reduce of `auto`, the barrier, and the host phases of the
 * hierarchical all-reduce in 1 MiB blocks; on several hosts one such
 * segment per host carries the hierarchical host phases; its waits sleep
 * in FUTEX_WAIT in 50 ms slices that check the neighbours' connections).
 * A rank waiting for data sleeps in poll() or on the futex; before that
 * sleep, a wait on same-host peers only yields the CPU (sched_yield) for
 * up to TOPOPLACE_COLL_YIELD_US microseconds (default 100, 0 to 1000000;
 * 0 sleeps at once), so a peer that lacks a CPU gets ours. In the
 * environment,
 * TOPOPLACE_COLL_SHM=0 keeps same-host pairs on TCP over loopback (a pair
 * uses shared memory only when both ends allow it; the host segment only
 * when all do), =nofifo sends the wake-ups over the pair's TCP connection, and
 * TOPOPLACE_COLL_SHM_RING sets the ring size (bytes, a power of two,
 * default 2 MiB). TOPOPLACE_COLL_SOCKETS (tp_coll_opts_t.sockets)
 * stripes every message to a peer on another host over that many TCP
 * connections. A value of these variables (or of TOPOPLACE_COLL_YIELD_US)
 * that is not one fails init with TP_ERR_INVAL naming it.
 * TOPOPLACE_COLL_CHECK=1 (every rank alike, else init fails with
 * TP_ERR_MISMATCH) starts each call with an all-gather of every rank's
 * arguments: where a rank's call differs (collective, count, dtype, op,
 * algorithm, root; compressor and levels of a compressed call, with
 * block, segment and overlap for int8 / 1-bit (segment and overlap only
 * where it pipelines), top-k fraction and threshold for top-k: what the
 * call does not use may differ) or a rank refused its own, every rank
 * returns TP_ERR_MISMATCH (the refusing one its own error) naming a
 * differing rank, instead of hanging or reducing mismatched buffers; the
 * communicator stays usable.
 *
 * Errors: every function returns TP_OK or a negative tp_err_t
 * (tp_common.h; tp_strerror() describes it). A failed call leaves a
 * one-line reason in tp_coll_comm_detail() that names the call and, for
 * TP_ERR_PEER_LOST / TP_ERR_TIMEOUT, the peer by rank and host, e.g.
 * "allreduce: rank 3 (host node07) closed the connection". After a
 * transport error (PEER_LOST, TIMEOUT, IO) the communicator is broken: it
 * closes its connections, so its neighbours fail too (each naming the
 * peer it lost) instead of waiting, and every later call returns
 * TP_ERR_PEER_LOST at once. Only tp_coll_comm_destroy() remains useful.
 * A call this rank refuses (TP_ERR_INVAL: a NULL buffer, a bad dtype,
 * op, algorithm or root, a count too large; TP_ERR_UNSUPPORTED) breaks it
 * too, unless TOPOPLACE_COLL_CHECK is set: the other ranks went on into
 * the call, and this rank's next call would pair with it and return
 * TP_OK with wrong data on every rank; broken, its neighbours fail naming
 * it. With the check every rank learns of the refusal (TP_ERR_MISMATCH)
 * and the communicator stays usable. Any other failure once the call
 * began (out of memory for scratch or residuals, a CUDA error staging a
 * device buffer) breaks it as well, for the same reason.
 *
 * Timeouts: a call fails with TP_ERR_TIMEOUT when no byte has moved on
 * any of its connections for `timeout_s` seconds (default 30), or, while
 * it waits for the other ranks of its host in their shared segment, when
 * none of them has moved a byte either. A large transfer on a slow link
 * therefore never times out while it advances, nor do the ranks of its
 * host waiting for it.
 *
 * Memory: scratch buffers belong to the communicator; they are sized at
 * init (a few MiB of pipelining slots; shared memory of 2 x 2 MiB per
 * same-host peer of each ring and tree channel, and one host segment of
 * 2 x (the host's ranks + 1) MiB) and only reduce-scatter grows one, when it
 *sees a larger size than before, so calls in steady state do not allocate. User
 *buffers are borrowed for the duration of the call only.
 *
 * Thread safety: a communicator is used by one thread at a time (all
 * ranks must call collectives on it in the same order). Different
 * communicators are independent and may be used from different threads
 * concurrently. The library installs no signal handlers (sockets are
 * written with MSG_NOSIGNAL, so a closed peer never raises SIGPIPE),
 * prints nothing and never exits; log messages go to tp_log_set()'s sink.
 *
 * Fork: a process forked after init closes its copies of every
 * communicator's connections at once (so a dead rank's children cannot
 * hold them open and keep its peers waiting); there every call fails with
 * TP_ERR_INVAL, and tp_coll_comm_destroy() frees the child's memory only,
 * leaving the parent's communicator working. A communicator being made
 * while another thread forks is not covered.
 *
 * Example (every rank of the job runs it; the SPANK plugin exported the
 * TOPOPLACE_* variables, MASTER_ADDR/MASTER_PORT are optional):
 *
 *	tp_coll_comm_t *comm;
 *	char *why = NULL;
 *	float grad[1024];
 *
 *	if (tp_coll_comm_init_env(NULL, &comm, &why) != TP_OK) {
 *		fprintf(stderr, "coll: %s\n", why);
 *		tp_free(why);
 *		return 1;
 *	}
 *	if (tp_coll_allreduce(comm, grad, grad, 1024, TP_COLL_FP32,
 *			      TP_COLL_AVG, TP_COLL_ALGO_AUTO) != TP_OK)
 *		fprintf(stderr, "coll: %s\n", tp_coll_comm_detail(comm));
 *	tp_coll_comm_destroy(comm);
 *
 * Build with `pkg-config --cflags --libs topoplace-coll`.
 */
#ifndef TP_COLL_H
#define TP_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tp_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The interface this header describes: the number of the library's
 * SONAME (libtopoplace-coll.so.3), raised with every change a program
 * built against the previous one cannot survive (the option structs'
 * layout, a field's meaning). `#if TP_COLL_API_VERSION >= 3` tells a
 * program whether, e.g., tp_coll_comp_opts_t.topk_exact exists. */
#define TP_COLL_API_VERSION 3

/* The plan (tp_runtime.h); opaque here. */
typedef struct tp_plan tp_plan_t;
typedef struct tp_coll_comm tp_coll_comm_t;

typedef enum tp_coll_dtype {
	TP_COLL_FP32 = 0,
	TP_COLL_FP64 = 1,
	TP_COLL_FP16 = 2, /* IEEE binary16, reduced in fp32 per step */
	TP_COLL_BF16 = 3, /* bfloat16, reduced in fp32 per step */
	TP_COLL_INT32 = 4,
	TP_COLL_INT64 = 5,
} tp_coll_dtype_t;
#define TP_COLL_NDTYPES 6

typedef enum tp_coll_op {
	TP_COLL_SUM = 0,
	TP_COLL_AVG = 1, /* sum / world size (integer division for ints,
			  * of the sum as it wraps around on overflow) */
	TP_COLL_MAX = 2,
	TP_COLL_MIN = 3,
} tp_coll_op_t;
#define TP_COLL_NOPS 4

typedef enum tp_coll_algo {
	TP_COLL_ALGO_AUTO = 0,
	TP_COLL_ALGO_RING = 1,
	TP_COLL_ALGO_HIERARCHICAL = 2,
	TP_COLL_ALGO_TREE = 3,
} tp_coll_algo_t;

typedef struct tp_coll_opts {
	/* Rendezvous host (name or dotted IPv4). NULL: $MASTER_ADDR, else
	 * the plan's first host (node rank 0, where rank 0 runs). Copied. */
	const char *master_addr;
	/* Rendezvous port. 0: $MASTER_PORT, else 20000 + ($SLURM_JOB_ID +
	 * 7919 x $SLURM_STEP_ID) % 10000 (each step of a job its own port),
	 * else 29500. Each communicator being created at the same time on
	 * one host needs its own port; the port is released when init
	 * returns. */
	int master_port;
	/* Seconds without progress before a call (or init: no rank
	 * arrived, no byte moved) fails with TP_ERR_TIMEOUT; > 0. Default
	 * (and 0) 30. Values above 1e9 (about 31 years), INFINITY included,
	 * wait that long: no timeout. */
	double timeout_s;
	/* Pipelining unit in bytes, 8 .. 1 GiB (rounded down to a multiple
	 * of 8; less is TP_ERR_INVAL); default (and 0) 256 KiB. Every
	 * rank must use
	 * the same value. Each rank allocates 8 x (the most children it has
	 * in the plan's trees, at least 1) chunks at init: 2 MiB at the
	 * default on a ring, 24 GiB for 1 GiB chunks on a tree of 3
	 * children (init then fails with TP_ERR_NOMEM on that rank). */
	size_t chunk_bytes;
	/* TCP connections to each peer on another host, 1..8; every message
	 * is striped over them in equal parts. 0: $TOPOPLACE_COLL_SOCKETS,
	 * else 1. Every rank must use the same value. */
	int sockets;
} tp_coll_opts_t;

/* Defaults as described above (master_addr NULL, master_port 0): a
 * zeroed struct means the same. */
void tp_coll_opts_defaults(tp_coll_opts_t *o);

/* ---- communicators ----------------------------------------------------- */

/*
 * Join the communicator of `plan` as global rank `rank` (0 <= rank <
 * tp_plan_world_size(plan)). Collective: every rank of the plan must call
 * it with the same plan, chunk size and rendezvous address; it returns
 * when all ranks are connected, or fails after opts->timeout_s without
 * progress: rank 0 waits that long after the last rank arrived (and tells
 * the ranks already there it still gathers), so ranks may start over a
 * longer span, each within timeout_s of the one before. opts may be NULL
 * (defaults). The plan is copied (as its JSON
 * hash and the schedules); the caller keeps ownership of it.
 *
 * Returns TP_OK and sets *comm_p (free with tp_coll_comm_destroy()), or
 * one of TP_ERR_INVAL (bad rank or options), TP_ERR_MISMATCH (a rank
 * brought another plan, world size, chunk size or sockets count, or a
 * rank joined twice:
 * rank 0 and every rank already connected fail with it, later ones with
 * TP_ERR_TIMEOUT as rank 0 is gone), TP_ERR_ADDRINUSE (rank 0 cannot listen on
 * the port), TP_ERR_NOTFOUND (master address does not resolve), TP_ERR_TIMEOUT
 * (a rank never came), TP_ERR_PEER_LOST, TP_ERR_IO, TP_ERR_NOMEM. On
 * failure *err_p (when err_p is not NULL) gets a one-line reason the
 * caller frees with tp_free(); nothing else is written.
 */
tp_err_t tp_coll_comm_init(const tp_plan_t *plan, int rank,
			   const tp_coll_opts_t *opts, tp_coll_comm_t **comm_p,
			   char **err_p);

/* As tp_coll_comm_init(), loading the plan from a topoplace-plan/1 file.
 * A plan that does not load fails with the loader's code (TP_ERR_NOTFOUND
 * no such file, TP_ERR_INVAL not a regular file, TP_ERR_IO unreadable,
 * TP_ERR_PARSE or TP_ERR_FORMAT bad content) and its "file: element:
 * what" line. This and tp_coll_comm_init_env() are how programs outside
 * topoplace's tree start: tp_coll_comm_init() takes a plan in memory,
 * which only topoplace's own runtime library (not installed) makes. */
tp_err_t tp_coll_comm_init_file(const char *plan_path, int rank,
				const tp_coll_opts_t *opts,
				tp_coll_comm_t **comm_p, char **err_p);

/* As tp_coll_comm_init_file(), with the plan path from $TOPOPLACE_PLAN
 * and the rank from $TOPOPLACE_RANK (what the SPANK plugin exports). When
 * set, $TOPOPLACE_WORLD_SIZE must equal the plan's world size and
 * $TOPOPLACE_LOCAL_RANK the rank's local rank in the plan (TP_ERR_MISMATCH
 * otherwise). A missing or malformed variable is TP_ERR_INVAL naming it. */
tp_err_t tp_coll_comm_init_env(const tp_coll_opts_t *opts,
			       tp_coll_comm_t **comm_p, char **err_p);

/* Close the connections and free everything. Not collective: peers still
 * inside a call on this communicator fail with TP_ERR_PEER_LOST. NULL is
 * a no-op. */
void tp_coll_comm_destroy(tp_coll_comm_t *comm);

/* This rank, the ranks and the plan's hosts (NULL: -1, 0, 0). */
int tp_coll_comm_rank(const tp_coll_comm_t *comm);
int tp_coll_comm_size(const tp_coll_comm_t *comm);
int tp_coll_comm_nhosts(const tp_coll_comm_t *comm);
/* Reason for the last failed call ("" when none); borrowed, valid until
 * the next call on the communicator (NULL: a constant saying so). */
const char *tp_coll_comm_detail(const tp_coll_comm_t *comm);
/* Bytes this rank has handed to rank `peer` (over every connection to
 * it) since init or the last tp_coll_comm_stats_reset(); 0 for a peer
 * out of range. A debug accessor: with it a test or a benchmark checks
 * that the edges the library runs are the schedule's (in the source,
 * runtime's tp_plan_sched():
 * summed over the ranks of two hosts, the bytes of an all-reduce of S
 * bytes are S x the edges' fractions between those hosts). Counting
 * costs one addition per message. Same thread rules as the calls. */
uint64_t tp_coll_comm_sent_bytes(const tp_coll_comm_t *comm, int peer);
/* Zeroes the byte counters and the phase times. */
void tp_coll_comm_stats_reset(tp_coll_comm_t *comm);

/* Where the all-reduce calls' wall time went (a profile for benchmarks;
 * two clock reads per phase entered). CALL: whole tp_coll_allreduce()
 * and tp_coll_allreduce_compressed() calls. INNER and CROSS split the
 * hierarchical schedules (dense or compressed): INNER the reduce-scatter
 * and all-gather inside hosts and level-1 groups, CROSS the exchange
 * between groups; a flat compressed call counts wholly as CROSS. COMPRESS
 * and DECOMPRESS: encoding and decoding of compressed messages, included
 * in INNER or CROSS. Waiting for peers is part of the phase it stalls. */
typedef enum tp_coll_phase {
	TP_COLL_PHASE_CALL = 0,
	TP_COLL_PHASE_INNER,
	TP_COLL_PHASE_CROSS,
	TP_COLL_PHASE_COMPRESS,
	TP_COLL_PHASE_DECOMPRESS,
	TP_COLL_PHASES
} tp_coll_phase_t;

/* Nanoseconds spent in `phase` since init or the last
 * tp_coll_comm_stats_reset(); 0 for a bad phase or NULL. Same thread
 * rules as tp_coll_comm_sent_bytes(). */
uint64_t tp_coll_comm_phase_ns(const tp_coll_comm_t *comm,
			       tp_coll_phase_t phase);

/* ---- collectives --------------------------------------------------------
 * Collective: every rank calls the same function with the same count,
 * dtype, op, algo (and root). Buffers are host memory or, in a build with
 * CUDA, device memory of the current device (both buffers of a call on the
 * same side; found with cudaPointerGetAttributes): device buffers are
 * staged through host memory on the communicator's stream (see
 * tp_coll_comm_set_stream()) and the call returns once the stream has
 * finished. sendbuf may equal recvbuf (in place) where noted; otherwise
 * they must not overlap.
 * count 0 is a no-op that still returns TP_OK. Returns TP_OK,
 * TP_ERR_INVAL (NULL buffer with count > 0, bad dtype/op/algo/root),
 * TP_ERR_PEER_LOST, TP_ERR_TIMEOUT, TP_ERR_IO, TP_ERR_NOMEM (first use
 * of a larger scratch buffer) or TP_ERR_CUDA (device buffers: the CUDA
 * error string is in the detail); the detail string says which call and
 * which peer. On failure the contents of recvbuf are unspecified.
 */

/* CUDA stream (a cudaStream_t) that device-buffer collectives order
 * their copies and kernels on; NULL (the default) is the legacy default
 * stream. Returns TP_ERR_UNSUPPORTED (built without CUDA) or TP_ERR_CUDA
 * (no usable device; detail says why) for a non-NULL stream that cannot
 * be used; the communicator keeps its previous stream then. Not
 * collective; not while a call on the communicator is in progress. */
tp_err_t tp_coll_comm_set_stream(tp_coll_comm_t *comm, void *stream);

/* recvbuf[i] = op over ranks of sendbuf[i], count elements; in place
 * allowed. algo TP_COLL_ALGO_AUTO follows the plan's recommendation. */
tp_err_t tp_coll_allreduce(tp_coll_comm_t *comm, const void *sendbuf,
			   void *recvbuf, size_t count, tp_coll_dtype_t dtype,
			   tp_coll_op_t op, tp_coll_algo_t algo);

/* sendbuf holds size x recvcount elements; rank r receives block r of
 * the reduction in recvbuf (recvcount elements). Ring order. In place
 * when recvbuf == sendbuf + r x recvcount elements. */
tp_err_t tp_coll_reduce_scatter(tp_coll_comm_t *comm, const void *sendbuf,
				void *recvbuf, size_t recvcount,
				tp_coll_dtype_t dtype, tp_coll_op_t op);

/* recvbuf (size x sendcount elements) gets every rank's sendbuf in rank
 * order. In place when sendbuf == recvbuf + r x sendcount elements. */
tp_err_t tp_coll_allgather(tp_coll_comm_t *comm, const void *sendbuf,
			   void *recvbuf, size_t sendcount,
			   tp_coll_dtype_t dtype);

/* buf of root is copied to every rank's buf (pipelined along the ring
 * starting at root). */
tp_err_t tp_coll_broadcast(tp_coll_comm_t *comm, void *buf, size_t count,
			   tp_coll_dtype_t dtype, int root);

/* Returns once every rank has entered the barrier. */
tp_err_t tp_coll_barrier(tp_coll_comm_t *comm);

/* ---- compressed all-reduce ------------------------------------------------
 *
 * Gradient compression with error feedback, applied only on the hops the
 * caller names: by default only between level-1 groups (the oversubscribed
 * up-links), dense and exact inside a host and a group.
 *
 * Compressors (the CPU path of tp_cuda.h, the same bits as its CUDA
 * kernels): int8 with one fp32 scale per block (max |x| / 127; nearest or
 * stochastic rounding), 1-bit sign with the block's mean magnitude as the
 * scale, top-k (the ceil(fraction x n) largest |x| by a sampled threshold,
 * up to twice that many; indices delta-encoded). Every message carries a
 * versioned header and a checksum (the source's coll/comp_wire.h): a
 * corrupt,
 * truncated or mismatched message fails the call with TP_ERR_PARSE,
 * TP_ERR_FORMAT or TP_ERR_MISMATCH naming the peer, and breaks the
 * communicator as a lost peer does; it never yields a wrong gradient.
 * The header carries the sender's kind, block and effective pipeline
 * segment (rounded as below), so ranks that cut the buffer differently
 * fail the call with TP_ERR_MISMATCH naming the field and both values
 * (where they meet: the ranks of a host swap the call's header before
 * their dense host stage, so a rank cut differently from its host's
 * other ranks is named there at once), the others with TP_ERR_PEER_LOST
 * as it breaks; values that differ but cut it alike (top-k, a segment at
 * least the count) run as if they agreed.
 *
 * Algorithms, over the hops compression applies to:
 *   int8, 1-bit  reduce-scatter then all-gather of quantised segments
 *                around a ring (1-bit Adam's two stages): each hop of the
 *                reduce-scatter sends the partial sum quantised and the
 *                receiver adds it to its own dense values; the owner of
 *                a reduced segment quantises it again (with a second
 *                residual) and the quantised segment travels the ring,
 *                so every rank, the owner included, ends with the same
 *                bits. Bytes per rank: (n-1)/n of the quantised size each
 *                way, as a dense ring with 4x (int8) or ~28x (1-bit,
 *                block 256) smaller messages.
 *   top-k        all-gather of every member's (indices, values) around
 *                the ring, summed in member order on every rank.
 * Where (opts->levels):
 *   TP_COLL_LEVEL_CROSS alone (the default): the hierarchical schedule
 *                (see "hierarchical" above) with its cross-group rings
 *                compressed: dense reduce-scatter inside the host and the
 *                group, compressed all-reduce of each shard between the
 *                ranks that carry it across, dense all-gather back. A
 *                communicator of one group is then plain dense.
 *   + TP_COLL_LEVEL_GROUP: the group level's reduce-scatter and
 *                all-gather are compressed too (int8, 1-bit; top-k, which
 *                has no reduce-scatter, runs flat instead).
 *                int8 and 1-bit (with or without the group level) cut a
 *                buffer longer than opts->segment into segments and
 *                pipeline them: every segment's reduce-scatter inside
 *                the groups runs first, each queueing its compressed
 *                exchange across the groups, which runs behind the later
 *                reduce-scatters; each segment's all-gather starts once
 *                its exchange is back. The result is the same bits as
 *                running the segments one after another; it differs from
 *                segment 0 (one piece) within the compressor's error,
 *                as each rank's shard, and so which values share a
 *                block, moves with the segments. Top-k never pipelines.
 *   TP_COLL_LEVEL_HOST set (e.g. all three): flat, every hop of the
 *                plan's ring compressed.
 *   0, or kind TP_COLL_COMP_NONE: the dense all-reduce (TP_COLL_ALGO_AUTO).
 * A plan whose hosts run different rank counts has no hierarchy (its
 * hierarchical schedule is the ring): any level set compresses the ring.
 *
 * Error feedback (opts->error_feedback): what compression dropped is kept
 * per rank in residuals and added to the next call's input, so over
 * repeated calls the sum of the results approaches the sum of the dense
 * results (the error stays bounded instead of growing). The communicator
 * keeps the residuals per `key` (e.g. DDP's bucket index): four arrays of
 * count floats per key (a reduce-scatter and an all-gather residual for
 * each of the two stages that may be compressed), zero on first use, and
 * re-created (zero again) when the key comes with another count, kind,
 * block, levels or pipeline segment. Freed with the communicator or by
 * tp_coll_comm_comp_reset().
 *
 * NaN and Inf: an int8 or 1-bit block holding NaN or Inf, or whose scale
 * overflows though every value is finite (1-bit: the block's sum of |x|
 * past FLT_MAX, values of 1.3e36 and up in a 256 block; int8: max |x|
 * within rounding of FLT_MAX), is sent with a NaN scale, so the whole
 * block of the result is NaN on every rank (a loss scaler sees the
 * overflow) and its residual restarts at zero; top-k
 * selects NaN and Inf entries first, which then propagate as in a dense
 * sum (its sampled threshold sends every entry at or above it up to 2k, in
 * index order: only when ties at the threshold fill those 2k can a NaN or
 * Inf later in the buffer wait in the residual for the next call).
 *
 * Momentum correction (top-k, opts->momentum > 0, with error feedback;
 * Deep Gradient Compression, Lin et al. 2018): the communicator keeps a
 * velocity u per key beside the residual v, where this rank compresses:
 * u = momentum u + x, v += u, v's top-k sent; with momentum_masking both
 * u and v are cleared at the entries this rank sent, and only those (in
 * the hierarchical schedule, x is the group's dense sum of this rank's
 * shard, so u is the group's velocity, masked where the group sent). The
 * result is then the average of the sent velocities: run the optimizer
 * without momentum. One more array of count floats per key.
 *
 * Stochastic rounding (int8, opts->stochastic): the noise of an element is
 * a function of (seed, key, call number for the key, hop, rank, index);
 * without error feedback the call number is the communicator's count of
 * such calls (every rank makes the same calls).
 *
 * Memory: message buffers grow to the largest call and are reused; the
 * first call of a key allocates its residuals.
 */
typedef enum tp_coll_comp {
	TP_COLL_COMP_NONE = 0,
	TP_COLL_COMP_INT8,
	TP_COLL_COMP_1BIT,
	TP_COLL_COMP_TOPK
} tp_coll_comp_t;

#define TP_COLL_LEVEL_HOST 1u /* hops between ranks of one host */
#define TP_COLL_LEVEL_GROUP                                                    \
	2u /* hops between hosts of one level-1 group (leaf) */
#define TP_COLL_LEVEL_CROSS 4u /* hops across groups (the up-links) */

typedef struct tp_coll_comp_opts {
	tp_coll_comp_t kind;
	unsigned levels;      /* which hops are compressed; default
			       * TP_COLL_LEVEL_CROSS (hierarchical); all
			       * three = flat compressed */
	unsigned block;	      /* int8/1-bit block, default 256 (1-bit: a
			       * multiple of 32) */
	double topk_fraction; /* default 0.01; in (0, 1] */
	bool stochastic;      /* int8 stochastic rounding, default false */
	bool error_feedback;  /* default true */
	uint64_t seed;
	float momentum;	       /* top-k only: DGC's momentum correction,
				* factor in [0, 1); default 0 (off) */
	bool momentum_masking; /* with momentum: clear the velocity where
				* this rank sent (default true; for
				* fractions of about 2% and below: an
				* entry sent every step loses its
				* velocity's tail, so at 10% it cost
				* +14% of final loss against +1.6%
				* without, README) */
	size_t segment;	       /* hierarchical int8 / 1-bit: pipeline
				* segment in elements (rounded up to a
				* multiple of block x ranks); 0 = the whole
				* buffer at once. Default
				* TP_COLL_COMP_SEGMENT. Like block, the
				* same on every rank (where it cuts the
				* buffer differently the call fails: see
				* the messages above). */
	bool overlap;	       /* run the segments' stages at once (default
				* true); false: one after another, the same
				* bits (what the pipeline gains, measured) */
	bool topk_exact;       /* top-k: send exactly the k largest |x|
				* (ties to the lower index; a full
				* selection); default false: every entry at
				* or above the k-th largest of a sample
				* (65,536 entries), up to 2k, in index order,
				* which is faster on large buffers. The same
				* on every rank (a receiver refuses more
				* than its own mode's capacity). */
} tp_coll_comp_opts_t;

/* Default pipeline segment: 1 Mi elements (4 MiB of fp32): each segment
 * costs every stage a synchronisation, and at 64 Ki elements the
 * in-group stages of a 16.8 MB bucket took 1.5x longer (bench_ddp.sh
 * --comm-bound under load) than in one piece. */
#define TP_COLL_COMP_SEGMENT ((size_t)1048576)

/* Defaults as above (kind NONE). */
void tp_coll_comp_opts_defaults(tp_coll_comp_opts_t *o);
/* "none", "int8", "1bit", "topk"; NULL for a bad value. Static. */
const char *tp_coll_comp_name(tp_coll_comp_t kind);
/* Inverse of tp_coll_comp_name(); TP_ERR_INVAL for an unknown name. */
tp_err_t tp_coll_comp_parse(const char *name, tp_coll_comp_t *kind_p);

/* In-place all-reduce of count fp32 values in host memory, op TP_COLL_SUM
 * or TP_COLL_AVG, compressed on the hops opts->levels names (opts NULL:
 * the defaults, which compress nothing; with opts->kind TP_COLL_COMP_NONE
 * or levels 0 it is tp_coll_allreduce() of fp32, which takes every op).
 * Collective: every rank passes
 * the same count, op, opts and key. Returns TP_OK, TP_ERR_INVAL (NULL
 * buffer with count > 0, a count too large to size, another op, bad
 * options), TP_ERR_UNSUPPORTED
 * (device memory), TP_ERR_RANGE (top-k of 2^32 or more values, flat or
 * across the groups, refused before the buffer is touched), the
 * transport's errors as tp_coll_allreduce(), and the wire errors above.
 * The results are identical on every rank. */
tp_err_t tp_coll_allreduce_compressed(tp_coll_comm_t *comm, float *buf,
				      size_t count, tp_coll_op_t op,
				      const tp_coll_comp_opts_t *opts,
				      uint64_t key);

/* Free the error-feedback residuals of every key (the next call of each
 * starts from zero). Not collective. */
void tp_coll_comm_comp_reset(tp_coll_comm_t *comm);
/* Free the error-feedback state (residuals, velocity) of one key, e.g. a
 * gradient bucket that no longer exists; the next call with it starts
 * from zero. Nothing for a key without state. Not collective. */
void tp_coll_comm_comp_forget(tp_coll_comm_t *comm, uint64_t key);

/* Bytes this rank sent across groups (up-links) since the last stats
 * reset: tp_coll_comm_sent_bytes() summed over the ranks of other level-1
 * groups of the plan's hierarchical schedule. For benchmarks. */
uint64_t tp_coll_comm_cross_bytes(const tp_coll_comm_t *comm);

/* ---- helpers ------------------------------------------------------------ */

/* Bytes per element; 0 for a bad dtype. */
size_t tp_coll_dtype_size(tp_coll_dtype_t dtype);
/* The algorithm an all-reduce of `bytes` runs with TP_COLL_ALGO_AUTO
 * (never AUTO itself; NULL: TP_COLL_ALGO_RING). */
tp_coll_algo_t tp_coll_algo_select(const tp_coll_comm_t *comm, size_t bytes);
/* "auto", "ring", "hierarchical", "tree"; NULL for a bad value. Static. */
const char *tp_coll_algo_name(tp_coll_algo_t algo);
/* Inverse of tp_coll_algo_name(), in any case (as tp_coll_comp_parse());
 * TP_ERR_INVAL for an unknown name. */
tp_err_t tp_coll_algo_parse(const char *name, tp_coll_algo_t *algo_p);

#ifdef __cplusplus
}
#endif

#endif /* TP_COLL_H */
