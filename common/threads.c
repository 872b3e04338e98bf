/*
 * threads.c - run one worker function on every CPU.
 */
#include "config.h"

#include <pthread.h>
#include <unistd.h>

#include "tp_common.h"

size_t tp_threads_run(void *(*fn)(void *), void *arg, size_t max)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nthr = ncpu > 1 ? (size_t)ncpu : 1, started = 0;
	pthread_t thr[TP_THREADS_MAX];

	if (nthr > TP_THREADS_MAX)
		nthr = TP_THREADS_MAX;
	if (nthr > max)
		nthr = max;
	for (size_t i = 1; i < nthr; i++)
		if (!pthread_create(&thr[started], NULL, fn, arg))
			started++;
	fn(arg);
	for (size_t i = 0; i < started; i++)
		pthread_join(thr[i], NULL);
	return started + 1;
}
