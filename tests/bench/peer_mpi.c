/*
 * Open MPI's all-reduce, measured the way topoplace-coll-bench measures
 * topoplace (peer_common.h): float sum, sizes min..max by factor, median over
 * iterations of the slowest rank.
 *
 * --algo NAME forces Open MPI 4.1's tuned all-reduce algorithm (sets
 * OMPI_MCA_coll_tuned_use_dynamic_rules=1 and
 * OMPI_MCA_coll_tuned_allreduce_algorithm before MPI_Init): default,
 * basic_linear, nonoverlapping, recursive_doubling, ring, segmented_ring,
 * rabenseifner (or their numbers 0..6). Without --algo the label comes from the
 * environment mpirun passed, so `--mca coll_tuned_allreduce_algorithm 4` is
 * reported as "ring".
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#include "peer_common.h"

static const char *const algo_names[] = {
    "default", "basic_linear",	 "nonoverlapping", "recursive_doubling",
    "ring",    "segmented_ring", "rabenseifner"};
#define N_ALGOS ((int)(sizeof(algo_names) / sizeof(algo_names[0])))

static int algo_index(const char *s)
{
	int i;

	for (i = 0; i < N_ALGOS; i++)
		if (!strcmp(s, algo_names[i]) || (s[0] == '0' + i && !s[1]))
			return i;
	return -1;
}

static void on_alarm(int sig)
{
	static const char msg[] = "peer_mpi: --timeout expired\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(124);
	_exit(124);
}

/* Distinct processor names over the communicator. */
static int count_hosts(int rank, int size)
{
	char name[MPI_MAX_PROCESSOR_NAME] = {0}, *all = NULL;
	int len, i, j, hosts = 0;

	MPI_Get_processor_name(name, &len);
	if (rank == 0)
		all = calloc((size_t)size, MPI_MAX_PROCESSOR_NAME);
	MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
		   MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (i = 0; i < size; i++) {
			for (j = 0; j < i; j++)
				if (!strcmp(all + (size_t)i *
						      MPI_MAX_PROCESSOR_NAME,
					    all + (size_t)j *
						      MPI_MAX_PROCESSOR_NAME))
					break;
			hosts += j == i;
		}
		free(all);
	}
	MPI_Bcast(&hosts, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return hosts;
}

static int run_size(const struct peer_opts *o, int rank, int size, int hosts,
		    size_t bytes, float *in, float *out, double *t,
		    double *tmax)
{
	size_t count = bytes / 4, k;
	long wrong = 0;
	int it;

	for (k = 0; k < count; k++)
		in[k] = peer_value(rank, k);
	for (it = 0; it < o->warmup + o->iters; it++) {
		double t0;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM,
			      MPI_COMM_WORLD);
		if (it >= o->warmup)
			t[it - o->warmup] = MPI_Wtime() - t0;
		if (it == 0 && o->check)
			wrong = peer_check(out, count, size);
	}
	MPI_Reduce(t, tmax, o->iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (o->check)
		MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM,
			      MPI_COMM_WORLD);
	if (rank == 0 && peer_report("openmpi", o, size, hosts, bytes,
				     peer_median(tmax, o->iters), wrong))
		return -1;
	return wrong ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct peer_opts o;
	int rank, size, hosts, ai = 0, rc = 0;
	const char *env;
	float *in, *out;
	double *t, *tmax;
	size_t b;

	if (peer_parse(argc, argv, &o,
		       " (Open MPI: --algo default|ring|rabenseifner|...)"))
		return 2;
	if (strcmp(o.algo, "default")) {
		char num[16];

		ai = algo_index(o.algo);
		if (ai < 0) {
			fprintf(stderr,
				"--algo: unknown Open MPI all-reduce algorithm "
				"'%s'\n",
				o.algo);
			return 2;
		}
		snprintf(num, sizeof(num), "%d", ai);
		setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 1);
		setenv("OMPI_MCA_coll_tuned_allreduce_algorithm", num, 1);
	} else if ((env = getenv("OMPI_MCA_coll_tuned_allreduce_algorithm")) &&
		   (ai = algo_index(env)) < 0) {
		ai = 0;
	}
	o.algo = algo_names[ai];
	if (o.timeout > 0) {
		signal(SIGALRM, on_alarm);
		alarm((unsigned)o.timeout);
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	hosts = o.hosts ? o.hosts : count_hosts(rank, size);
	in = malloc(o.max_bytes);
	out = malloc(o.max_bytes);
	t = malloc(sizeof(*t) * (size_t)o.iters);
	tmax = malloc(sizeof(*tmax) * (size_t)o.iters);
	if (!in || !out || !t || !tmax) {
		fprintf(stderr, "peer_mpi: out of memory for %zu bytes\n",
			o.max_bytes);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(out, 0, o.max_bytes);
	if (rank == 0)
		peer_header("openmpi", &o, size, hosts);
	for (b = o.min_bytes & ~(size_t)3; b <= o.max_bytes;
	     b = peer_next_size(b, o.factor)) {
		/* Every rank runs every size, whatever rank 0's report did: no
		 * rank may leave early. */
		if (run_size(&o, rank, size, hosts, b, in, out, t, tmax))
			rc = 1;
	}
	free(in);
	free(out);
	free(t);
	free(tmax);
	MPI_Finalize();
	return rc;
}
