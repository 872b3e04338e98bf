#!/bin/sh
# 8-byte all-reduce latency on one host, topoplace (shared memory, algo
# auto: the host segment's one-shot) against Open MPI 4.1 (vader) in the
# same run, measured alike: barrier, one call, the slowest rank per
# iteration, the median. Issue 9's goal: < 2x Open MPI's at np = 8.
#   TP_BENCH_NP ("4 8"), TP_BENCH_ITERS (2000), TP_BENCH_PORT (26100)
# Exit 77 without mpicc/mpirun; 0 otherwise (the figures are reported,
# not judged: this box is shared and small). Run it from the build tree:
#   TOPOPLACE=build/cli/topoplace TP_BUILDDIR=build sh tests/bench/bench_latency.sh
. "$(dirname "$0")/../integration/lib.sh"
T=$TOPOPLACE
B=${TP_BUILDDIR:?}/coll/topoplace-coll-bench
NPS=${TP_BENCH_NP:-4 8}
IT=${TP_BENCH_ITERS:-2000}
port=${TP_BENCH_PORT:-26100}
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
	skip_all "no Open MPI (apt-get install openmpi-bin libopenmpi-dev)"

cat >"$tmp/lat.c" <<'EOC'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}
int main(int argc, char **argv)
{
	int iters = atoi(argv[1]), rank, n;
	float in[2] = {1, 2}, out[2];
	double *t = malloc(sizeof(double) * iters);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	for (int it = -200; it < iters; it++) {
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		MPI_Allreduce(in, out, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		if (it >= 0)
			t[it] = MPI_Wtime() - t0;
	}
	MPI_Allreduce(MPI_IN_PLACE, t, iters, MPI_DOUBLE, MPI_MAX,
		      MPI_COMM_WORLD);
	qsort(t, iters, sizeof(double), cmp);
	if (rank == 0)
		printf("%.1f\n", t[iters / 2] * 1e6);
	MPI_Finalize();
	return 0;
}
EOC
mpicc -O2 -o "$tmp/lat" "$tmp/lat.c" || bad "mpicc"
$T fabric generate fat-tree --leaves 1 --spines 1 --hosts-per-leaf 1 \
	--gpus-per-host 8 -o "$tmp/f.json" >/dev/null 2>&1 || bad "fabric"
for np in $NPS; do
	$T plan --fabric "$tmp/f.json" --nodes node001 --gpus-per-host $np \
		--json -o "$tmp/p$np.json" >/dev/null 2>&1 || bad "plan"
	r=1
	while [ $r -lt $np ]; do
		"$B" --plan "$tmp/p$np.json" --rank $r --master 127.0.0.1:$port \
			--min-bytes 8 --max-bytes 8 --iters $IT --warmup 200 >/dev/null &
		r=$((r + 1))
	done
	tp=$("$B" --plan "$tmp/p$np.json" --rank 0 --master 127.0.0.1:$port \
		--min-bytes 8 --max-bytes 8 --iters $IT --warmup 200 | awk '$1 == 8 {print $2}')
	wait
	port=$((port + 1))
	ompi=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		mpirun --oversubscribe -np $np --mca btl self,vader \
		--mca mpi_yield_when_idle 1 "$tmp/lat" $IT 2>/dev/null | tail -1)
	echo "# np=$np 8 B all-reduce: topoplace ${tp} us, Open MPI ${ompi} us" \
		"(ratio $(echo "$tp $ompi" | awk '{printf "%.2f", $1 / $2}'))"
	[ -n "$tp" ] && [ -n "$ompi" ] && ok "np=$np measured" || bad "np=$np"
done
finish
