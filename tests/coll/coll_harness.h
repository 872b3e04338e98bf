/*
 * coll_harness.h - the multi-rank harness of the libtopoplace-coll tests:
 * plans on small generated fabrics, and every rank of a plan fork()ed as
 * a child talking TCP over 127.0.0.1. A child reports through its exit
 * status (and a line on stderr), never through CMocka, whose assertions
 * must stay in the parent.
 */
#ifndef TP_COLL_HARNESS_H
#define TP_COLL_HARNESS_H

#include "tp_test.h"

#include "tp_coll.h"
#include "tp_runtime.h"

/* 4 hosts, 4 GPUs each, alternating over 2 leaves: two level-1 groups of
 * two. Built once, kept for the program's life. */
tp_fabric_t *coll_fabric(void);
/* The same hosts with a NIC per GPU: 4 rails. */
tp_fabric_t *coll_fabric_nics(void);

/* Plan over hosts first .. first+nh-1 of f (coll_fabric() for plan_of),
 * L ranks each, no prediction; fails the test when the plan is refused.
 * Caller frees with tp_plan_destroy(). */
tp_plan_t *plan_on(tp_fabric_t *f, int nh, int L, int first);
/* plan_on's plans split each host's data by NIC rate
 * (tp_plan_opts_t.nics_by_rate) while set. */
extern bool plan_by_rate;
tp_plan_t *plan_of(int nh, int L, int first);

/* A rendezvous port in 10000-19999, different on each call and free
 * when drawn. */
int next_port(void);
/* Options for 127.0.0.1:port with this timeout and chunk size. */
void opts_for(tp_coll_opts_t *o, int port, double timeout_s, size_t chunk);

/* What a rank runs once joined; its return value is the exit status. */
typedef int (*rank_fn)(tp_coll_comm_t *c, void *arg);

/* This rank sets TOPOPLACE_COLL_SHM to shm_value before joining (0:
 * refuse shared memory, its pairs stay on TCP; nofifo: wake-ups over the
 * socket); -1: none. */
extern int refuse_shm_rank;
extern const char *shm_value;
/* Rank r waits r x join_delay_ms before joining (0: none). */
extern int join_delay_ms;

/* Fork every rank of p (at most 16); wait at most limit_s; exit statuses
 * into st[] (99: init failed, 128 + signal when killed). Kills the
 * stragglers (status -1). Returns the wall time. */
double run_ranks(const tp_plan_t *p, const tp_coll_opts_t *o, rank_fn fn,
		 void *arg, double limit_s, int *st);

/* Every rank of p exited 0, or the test fails naming what, the rank and
 * its status. */
void expect_ranks_ok(const tp_plan_t *p, const int *st, const char *what);

/* run_ranks on a fresh port with opts_for(timeout_s, chunk), then
 * expect_ranks_ok. */
void run_ranks_ok(const tp_plan_t *p, double timeout_s, size_t chunk,
		  rank_fn fn, void *arg, double limit_s, const char *what);

#endif
