/* health/: the link-health rules, counter deltas and the monitor's files. */
#include "config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tp_health.h"
#include "tp_placement.h"
#include "tp_test.h"
#include "tp_test_fabric.h"
#include "topology_int.h"

/* A 4x HDR cable (200 Gb/s) between switch 0 port 1 and CA 0 port 1. */
static const tp_link_t hdr = {
    .kind = {TP_NODE_SWITCH, TP_NODE_CA},
    .port = {1, 1},
    .width = 4,
    .lane_gbps = 50,
    .gbps = 200,
    .active = true,
};
static const bool both_seen[2] = {true, true};

static void port_ok(tp_health_port_t *p)
{
	memset(p, 0, sizeof(*p));
	p->seen = p->up = p->counters = p->wide_data = true;
	p->width = 4;
	p->lane_gbps = 50;
}

static void link_ok(tp_health_port_t p[2])
{
	port_ok(&p[0]);
	port_ok(&p[1]);
}

static void eval(const tp_health_port_t prev[2], const tp_health_port_t cur[2],
		 double interval, tp_health_link_t *out)
{
	tp_health_eval(NULL, &hdr, prev, cur, both_seen, interval, out);
}

static void test_counter_delta(void **unused)
{
	bool sat;

	(void)unused;
	assert_int_equal(tp_health_counter_delta(5, 9, 16, &sat), 4);
	assert_false(sat);
	/* reset (perfquery -R): counting restarted from 0 */
	assert_int_equal(tp_health_counter_delta(1000, 7, 16, &sat), 7);
	/* basic counters saturate at all ones */
	assert_int_equal(tp_health_counter_delta(65000, 65535, 16, &sat), 535);
	assert_true(sat);
	assert_int_equal(tp_health_counter_delta(3, 15, 4, &sat), 12);
	assert_true(sat);
	/* a 64-bit counter near its end wraps through 2^64 */
	assert_int_equal(tp_health_counter_delta(UINT64_MAX - 9, 5, 64, &sat),
			 15);
	assert_false(sat);
	/* a 64-bit counter far from its end going back was reset */
	assert_int_equal(tp_health_counter_delta(1ull << 40, 100, 64, NULL),
			 100);
}

static void test_healthy_first_sweep(void **unused)
{
	tp_health_port_t cur[2];
	tp_health_link_t out;

	(void)unused;
	link_ok(cur);
	eval(NULL, cur, 0, &out);
	assert_true(out.seen);
	assert_false(out.alarm);
	assert_true(out.health == 1);
	assert_string_equal(out.reason, "ok");
}

static void test_down(void **unused)
{
	tp_health_port_t cur[2];
	tp_health_link_t out;
	bool b_gone[2] = {true, false}, none[2] = {false, false};

	(void)unused;
	link_ok(cur);
	cur[1].up = false;
	eval(cur, cur, 1, &out);
	assert_true(out.health == 0);
	assert_true(out.alarm);
	assert_non_null(strstr(out.reason, "down (b end port not up)"));

	link_ok(cur);
	memset(&cur[1], 0, sizeof(cur[1]));
	cur[0].up = false;
	tp_health_eval(NULL, &hdr, NULL, cur, b_gone, 1, &out);
	assert_true(out.health == 0);
	assert_string_equal(out.reason, "down (a end port not up)");
	/* the near end is up but the far node does not answer: lossy, but
	 * only from its second silent sweep on - not on the first sweep
	 * (no previous one: one lost query raised an alarm there), nor
	 * after one that saw it */
	cur[0].up = true;
	tp_health_eval(NULL, &hdr, NULL, cur, b_gone, 1, &out);
	assert_false(out.alarm);
	assert_true(out.health == 1);
	tp_health_port_t prev[2];
	link_ok(prev);
	tp_health_eval(NULL, &hdr, prev, cur, b_gone, 1, &out);
	assert_false(out.alarm);
	assert_true(out.health == 1);
	tp_health_eval(NULL, &hdr, cur, cur, b_gone, 1, &out);
	assert_true(out.health == 0.5);
	assert_string_equal(out.reason, "b end up but not answering");

	/* neither end's node found: another subnet, no verdict */
	tp_health_eval(NULL, &hdr, NULL, cur, none, 1, &out);
	assert_false(out.seen);
	assert_false(out.alarm);
	assert_true(out.health == 1);

	/* neither end answering, both on our subnet (a dead leaf and its
	 * host): down from the second silent sweep on (rule 1c) */
	tp_health_port_t sil[2];
	memset(sil, 0, sizeof(sil));
	sil[0].known = sil[1].known = true;
	tp_health_eval(NULL, &hdr, NULL, sil, none, 1, &out);
	assert_false(out.seen);
	tp_health_eval(NULL, &hdr, prev, sil, none, 1, &out);
	assert_false(out.seen);
	assert_true(out.health == 1);
	tp_health_eval(NULL, &hdr, sil, sil, none, 1, &out);
	assert_true(out.seen);
	assert_true(out.alarm);
	assert_true(out.health == 0);
	assert_string_equal(out.reason, "down (neither end answering)");
	/* one end another subnet's: no verdict */
	sil[1].known = false;
	tp_health_eval(NULL, &hdr, sil, sil, none, 1, &out);
	assert_false(out.seen);
	assert_true(out.health == 1);
}

static void test_width_and_speed(void **unused)
{
	tp_health_port_t cur[2];
	tp_health_link_t out;

	(void)unused;
	link_ok(cur);
	cur[0].width = 1;
	eval(NULL, cur, 0, &out);
	assert_true(fabs(out.health - 0.25) < 1e-12);
	assert_string_equal(out.reason, "running 1x/4x lanes");

	link_ok(cur);
	cur[1].lane_gbps = 25; /* EDR on an HDR cable */
	eval(NULL, cur, 0, &out);
	assert_true(fabs(out.health - 0.5) < 1e-12);
	assert_string_equal(out.reason, "running 100/200 Gb/s");

	/* a model link of unknown speed carries an assumed rate (finalize:
	 * the fabric's most common): no rate is judged against it */
	tp_link_t unk = hdr;
	unk.lane_gbps = 0;
	tp_health_eval(NULL, &unk, NULL, cur, both_seen, 0, &out);
	assert_true(out.health == 1);
	assert_false(out.alarm);

	/* a live width or speed the sweep cannot read (a new width code,
	 * XDR) is no rate either: not health 0 */
	link_ok(cur);
	cur[0].lane_gbps = 0;
	eval(NULL, cur, 0, &out);
	assert_true(out.health == 1);
	assert_false(out.alarm);
	link_ok(cur);
	cur[1].width = 0;
	eval(NULL, cur, 0, &out);
	assert_true(out.health == 1);
	cur[0].width = 0;
	eval(NULL, cur, 0, &out);
	assert_true(out.health == 1);
	assert_string_equal(out.reason, "ok");
	/* ... while the other end, known, still tells a slow link */
	link_ok(cur);
	cur[0].lane_gbps = 0;
	cur[1].width = 2;
	eval(NULL, cur, 0, &out);
	assert_true(fabs(out.health - 0.5) < 1e-12);
	assert_string_equal(out.reason, "running 2x/4x lanes");
}

/* Each error counter fires alone, over its threshold, and says how much. */
static void test_each_error_rule(void **unused)
{
	tp_health_rules_t r;

	(void)unused;
	tp_health_rules_default(&r);
	for (int c = 0; c < TP_HC_FIRST_DATA; c++) {
		tp_health_port_t prev[2], cur[2];
		tp_health_link_t out;
		uint64_t limit = r.min_count[c];

		link_ok(prev);
		link_ok(cur);
		/* at the threshold: nothing */
		cur[0].c[c] = limit;
		eval(prev, cur, 1, &out);
		assert_false(out.alarm);
		assert_int_equal(out.delta[c], limit);
		/* one more, split over both ends: degraded */
		cur[0].c[c] = limit / 2 + 1;
		cur[1].c[c] = limit - limit / 2;
		eval(prev, cur, 1, &out);
		assert_true(out.alarm);
		assert_true(out.health < 1);
		assert_non_null(strstr(out.reason, tp_health_counter_name(c)));
	}
}

static void test_error_levels(void **unused)
{
	tp_health_port_t prev[2], cur[2];
	tp_health_link_t out;

	(void)unused;
	link_ok(prev);
	link_ok(cur);
	cur[1].c[TP_HC_SYMBOL_ERR] = 42; /* 1 s: limit is min_count 10 */
	eval(prev, cur, 1, &out);
	assert_true(out.health == 0.75);
	assert_string_equal(out.reason, "symbol_errors +42 (> 10)");
	cur[1].c[TP_HC_SYMBOL_ERR] = 101;
	eval(prev, cur, 1, &out);
	assert_true(out.health == 0.5);
	cur[1].c[TP_HC_SYMBOL_ERR] = 1001;
	eval(prev, cur, 1, &out);
	assert_true(out.health == 0.25);
	/* 600 s: the rate sets the limit (10/min -> 100) */
	cur[1].c[TP_HC_SYMBOL_ERR] = 100;
	eval(prev, cur, 600, &out);
	assert_false(out.alarm);
	/* a flap, with half the lanes left: factors multiply */
	cur[1].c[TP_HC_SYMBOL_ERR] = 0;
	cur[0].c[TP_HC_LINK_DOWNED] = 1;
	cur[0].width = 2;
	eval(prev, cur, 60, &out);
	assert_true(out.health == 0.25);
	assert_string_equal(out.reason,
			    "running 2x/4x lanes; link_downed +1 (> 0)");
	/* the worst error counter sets the factor, not their product */
	link_ok(cur);
	cur[0].c[TP_HC_SYMBOL_ERR] = 50;
	cur[0].c[TP_HC_RCV_ERR] = 50;
	cur[0].c[TP_HC_LINK_RECOVER] = 30;
	eval(prev, cur, 1, &out);
	assert_true(out.health == 0.5);
}

/* A flap (link_downed moving at all) is x0.5, x0.25 past 10 flaps: 10 is
 * still 0.5, 11 is 0.25, counted over both ends together. */
static void test_flap_levels(void **unused)
{
	tp_health_port_t prev[2], cur[2];
	tp_health_link_t out;

	(void)unused;
	link_ok(prev);
	link_ok(cur);
	cur[0].c[TP_HC_LINK_DOWNED] = 10;
	eval(prev, cur, 60, &out);
	assert_true(out.alarm);
	assert_true(out.health == 0.5);
	assert_string_equal(out.reason, "link_downed +10 (> 0)");
	cur[0].c[TP_HC_LINK_DOWNED] = 11;
	eval(prev, cur, 60, &out);
	assert_true(out.health == 0.25);
	assert_string_equal(out.reason, "link_downed +11 (> 0)");
	/* 6 at one end, 5 at the other: 11 flaps */
	cur[0].c[TP_HC_LINK_DOWNED] = 6;
	cur[1].c[TP_HC_LINK_DOWNED] = 5;
	eval(prev, cur, 60, &out);
	assert_true(out.health == 0.25);
	/* from a previous count of 100: +10 again */
	prev[0].c[TP_HC_LINK_DOWNED] = 100;
	prev[1].c[TP_HC_LINK_DOWNED] = 0;
	cur[0].c[TP_HC_LINK_DOWNED] = 110;
	cur[1].c[TP_HC_LINK_DOWNED] = 0;
	eval(prev, cur, 60, &out);
	assert_true(out.health == 0.5);
	assert_string_equal(out.reason, "link_downed +10 (> 0)");
}

/* A one-shot check (interval 0, previous counters zero) reads totals
 * since the last clear: a LinkDowned total of a few is the far host's
 * reboots, no flap, and a total is worded "=N", not "+N". */
static void test_one_shot_totals(void **unused)
{
	tp_health_port_t prev[2], cur[2];
	tp_health_link_t out;

	(void)unused;
	link_ok(prev);
	link_ok(cur);
	memset(prev[0].c, 0, sizeof(prev[0].c));
	memset(prev[1].c, 0, sizeof(prev[1].c));
	cur[0].c[TP_HC_LINK_DOWNED] = 1;
	eval(prev, cur, 0, &out);
	assert_false(out.alarm);
	assert_true(out.health == 1);
	assert_int_equal(out.delta[TP_HC_LINK_DOWNED], 1);
	cur[1].c[TP_HC_LINK_DOWNED] = 9;
	eval(prev, cur, 0, &out);
	assert_false(out.alarm);
	cur[1].c[TP_HC_LINK_DOWNED] = 10;
	eval(prev, cur, 0, &out);
	assert_true(out.alarm);
	assert_true(out.health == 0.75);
	assert_string_equal(out.reason, "link_downed =11 (> 10)");
	link_ok(cur);
	cur[1].c[TP_HC_SYMBOL_ERR] = 42;
	eval(prev, cur, 0, &out);
	assert_true(out.health == 0.75);
	assert_string_equal(out.reason, "symbol_errors =42 (> 10)");
}

static void test_reset_no_alarm(void **unused)
{
	tp_health_port_t prev[2], cur[2];
	tp_health_link_t out;

	(void)unused;
	link_ok(prev);
	link_ok(cur);
	/* perfquery -R between two sweeps: big old values, small new ones */
	prev[0].c[TP_HC_SYMBOL_ERR] = 5000;
	prev[0].c[TP_HC_XMIT_DATA] = 1ull << 40;
	cur[0].c[TP_HC_SYMBOL_ERR] = 3;
	cur[0].c[TP_HC_XMIT_DATA] = 1000;
	eval(prev, cur, 1, &out);
	assert_false(out.alarm);
	assert_int_equal(out.delta[TP_HC_SYMBOL_ERR], 3);
	assert_int_equal(out.delta[TP_HC_XMIT_DATA], 1000);
	/* a saturated counter says so */
	prev[0].c[TP_HC_RCV_ERR] = 60000;
	cur[0].c[TP_HC_RCV_ERR] = 65535;
	eval(prev, cur, 1, &out);
	assert_non_null(strstr(out.reason, "saturated"));
	/* still at its maximum a sweep later: no count, the alarm stays */
	prev[0].c[TP_HC_RCV_ERR] = 65535;
	eval(prev, cur, 1, &out);
	assert_int_equal(out.delta[TP_HC_RCV_ERR], 0);
	assert_true(out.alarm);
	assert_true(out.health == 0.75);
	assert_non_null(strstr(out.reason, "rcv_errors saturated, not"));
	/* ... unless it was at its maximum since the monitor's first sweep
	 * (old news: a year of peer reboots on link_downed) */
	tp_health_saturated_since(NULL, &prev[0]);
	assert_true(prev[0].sat_old & (1u << TP_HC_RCV_ERR));
	eval(prev, cur, 1, &out);
	assert_false(out.alarm);
	assert_true(out.health == 1);
	/* a reset in between: a new saturation is news again */
	cur[0].c[TP_HC_RCV_ERR] = 0;
	tp_health_saturated_since(&prev[0], &cur[0]);
	assert_false(cur[0].sat_old & (1u << TP_HC_RCV_ERR));
	prev[0].sat_old = 0;
	/* a one-shot check (interval 0) holds totals as they are */
	memset(prev, 0, sizeof(prev));
	prev[0].counters = prev[1].counters = true;
	cur[0].c[TP_HC_RCV_ERR] = 5;
	eval(prev, cur, 0, &out);
	assert_false(out.alarm);
}

/* Rule 4's "at its maximum since the monitor's first sweep" survives a
 * sweep that read no counters from the end (link down, node or PMA reply
 * lost): after a flap the old saturation is still no news. */
static void test_saturated_old_across_gap(void **unused)
{
	tp_health_port_t s1[2], s2[2], s3[2], s4[2];
	tp_health_link_t out;

	(void)unused;
	link_ok(s1);
	s1[1].c[TP_HC_SYMBOL_ERR] = 65535;
	tp_health_saturated_since(NULL, &s1[0]);
	tp_health_saturated_since(NULL, &s1[1]);
	/* the link goes down: the CA end's PMA is not asked */
	link_ok(s2);
	s2[0].up = false;
	memset(&s2[1], 0, sizeof(s2[1]));
	tp_health_saturated_since(&s1[0], &s2[0]);
	tp_health_saturated_since(&s1[1], &s2[1]);
	assert_true(s2[1].sat_old & (1u << TP_HC_SYMBOL_ERR));
	/* back up, the counter still at its maximum, two sweeps running */
	link_ok(s3);
	s3[1].c[TP_HC_SYMBOL_ERR] = 65535;
	tp_health_saturated_since(&s2[0], &s3[0]);
	tp_health_saturated_since(&s2[1], &s3[1]);
	eval(s2, s3, 1, &out);
	assert_false(out.alarm);
	link_ok(s4);
	s4[1].c[TP_HC_SYMBOL_ERR] = 65535;
	tp_health_saturated_since(&s3[0], &s4[0]);
	tp_health_saturated_since(&s3[1], &s4[1]);
	eval(s3, s4, 1, &out);
	assert_false(out.alarm);
	assert_true(out.health == 1);
	assert_string_equal(out.reason, "ok");
	/* an end first read after the monitor's first sweep: what that first
	 * reading finds at its maximum is old news too */
	memset(&s1[1], 0, sizeof(s1[1]));
	tp_health_saturated_since(NULL, &s1[1]);
	tp_health_saturated_since(&s1[1], &s3[1]);
	tp_health_saturated_since(&s3[1], &s4[1]);
	eval(s3, s4, 1, &out);
	assert_false(out.alarm);
	/* a counter cleared after the gap and saturating again is news */
	s3[1].c[TP_HC_SYMBOL_ERR] = 0;
	tp_health_saturated_since(&s2[1], &s3[1]);
	tp_health_saturated_since(&s3[1], &s4[1]);
	assert_false(s4[1].sat_old & (1u << TP_HC_SYMBOL_ERR));
	s3[1] = s4[1];
	eval(s3, s4, 1, &out);
	assert_true(out.alarm);
	assert_non_null(strstr(out.reason, "symbol_errors saturated, not"));
}

static void test_utilisation(void **unused)
{
	tp_health_port_t prev[2], cur[2];
	tp_health_link_t out;

	(void)unused;
	link_ok(prev);
	link_ok(cur);
	/* no interval (a one-shot check; a first sweep is one too): no
	 * count, unknown (it read 0, an idle link, before) */
	cur[0].c[TP_HC_XMIT_DATA] = 1000;
	eval(prev, cur, 0, &out);
	assert_true(isnan(out.util[0]) && isnan(out.util[1]));
	/* 200 Gb/s for 2 s at half rate: 100e9 * 2 / 32 words from a */
	cur[0].c[TP_HC_XMIT_DATA] = (uint64_t)(100e9 * 2 / 32);
	cur[1].c[TP_HC_XMIT_DATA] = (uint64_t)(20e9 * 2 / 32);
	eval(prev, cur, 2, &out);
	assert_true(fabs(out.util[0] - 0.5) < 1e-9);
	assert_true(fabs(out.util[1] - 0.1) < 1e-9);
	assert_false(out.alarm);
	/* a model link of unknown speed (its gbps finalize's assumption,
	 * here twice the real rate): against the rate the ports run */
	{
		tp_link_t unk = hdr;
		unk.lane_gbps = 0;
		unk.gbps = 400;
		tp_health_eval(NULL, &unk, prev, cur, both_seen, 2, &out);
		assert_true(fabs(out.util[0] - 0.5) < 1e-9);
		assert_true(fabs(out.util[1] - 0.1) < 1e-9);
	}
	/* 32-bit data counters (no extended ones) going back were reset */
	prev[0].wide_data = cur[0].wide_data = false;
	prev[0].c[TP_HC_XMIT_DATA] = UINT32_MAX - 99;
	cur[0].c[TP_HC_XMIT_DATA] = 100;
	eval(prev, cur, 2, &out);
	assert_true(out.util[0] == 100.0 * 32 / 2 / 200e9);
	/* PortCountersExtended lost in one sweep: 32-bit against 64-bit
	 * values are no count */
	prev[0].wide_data = true;
	prev[0].c[TP_HC_XMIT_DATA] = 1000;
	cur[0].c[TP_HC_XMIT_DATA] = 1ull << 40;
	eval(prev, cur, 2, &out);
	assert_int_equal(out.delta[TP_HC_XMIT_DATA], cur[1].c[TP_HC_XMIT_DATA]);
	assert_true(isnan(out.util[0]));
	assert_true(fabs(out.util[1] - 0.1) < 1e-9);
	prev[0].wide_data = false;
	cur[0].wide_data = true;
	eval(prev, cur, 2, &out);
	assert_true(isnan(out.util[0]));
	/* a 32-bit counter at its maximum saturated: what it sent since is
	 * unknown, not 0 (it stays there until cleared), nor the little it
	 * moved before it stopped */
	prev[0].wide_data = cur[0].wide_data = false;
	prev[0].c[TP_HC_XMIT_DATA] = UINT32_MAX - 99;
	cur[0].c[TP_HC_XMIT_DATA] = UINT32_MAX;
	eval(prev, cur, 2, &out);
	assert_true(isnan(out.util[0]));
	prev[0].c[TP_HC_XMIT_DATA] = UINT32_MAX;
	eval(prev, cur, 2, &out);
	assert_true(isnan(out.util[0]));
	/* an end not read this sweep */
	cur[0].counters = false;
	eval(prev, cur, 2, &out);
	assert_true(isnan(out.util[0]));
	assert_true(fabs(out.util[1] - 0.1) < 1e-9);
}

/* 100 sweeps of counters moving at normal rates on busy links: no alarm.
 * Normal: errors well under their per-minute rate (a few symbol errors a
 * minute, the odd discard burst of a congested port), data at 0-90%. */
static void test_no_false_alarm(void **unused)
{
	tp_health_port_t prev[2], cur[2];
	tp_health_link_t out;
	unsigned seed = 12345;

	(void)unused;
	link_ok(cur);
	for (int interval = 1; interval <= 60; interval += 59)
		for (int i = 0; i < 100; i++) {
			memcpy(prev, cur, sizeof(cur));
			for (int e = 0; e < 2; e++) {
				seed = seed * 1103515245u + 12345u;
				/* at most 5 a minute, never a 1 s burst of 10
				 */
				cur[e].c[TP_HC_SYMBOL_ERR] +=
				    (seed >> 16) % (interval == 1 ? 2 : 6);
				cur[e].c[TP_HC_XMIT_DISCARDS] +=
				    (seed >> 8) % 50;
				cur[e].c[TP_HC_RCV_ERR] += (seed >> 20) % 3;
				cur[e].c[TP_HC_XMIT_DATA] +=
				    (uint64_t)((seed % 90) / 100.0 * 200e9 *
					       interval / 32);
				cur[e].c[TP_HC_XMIT_PKTS] += seed % 100000;
			}
			eval(prev, cur, interval, &out);
			assert_false(out.alarm);
			assert_true(out.health == 1);
			assert_string_equal(out.reason, "ok");
		}
}

static tp_fabric_t *small_fabric(void)
{
	return tp_test_rail(2, 2, 1, 1, 1);
}

/* The state file keeps what others wrote and loads in the placement. */
static void test_state_json(void **unused)
{
	tp_fabric_t *f = small_fabric();
	size_t nl = tp_fabric_nlinks(f);
	tp_health_link_t *h = calloc(nl, sizeof(*h));
	const char *old = "{\"format\":\"topoplace-state/1\",\"down\":[],"
			  "\"links\":[{\"link\":0,\"health\":0.5},"
			  "{\"link\":1,\"background_gbps\":7}]}";
	char *json = NULL, *msg = NULL, path[] = "/tmp/tp-health-XXXXXX";
	tp_state_t *s = NULL;
	FILE *fp;
	int fd;

	(void)unused;
	assert_true(nl >= 3);
	for (size_t l = 0; l < nl; l++) {
		h[l].seen = true;
		h[l].health = 1;
	}
	h[0].seen = false; /* keeps its old entry */
	h[2].health = 0;
	snprintf(h[2].reason, sizeof(h[2].reason), "down (b end port not up)");
	assert_int_equal(tp_health_state_json(old, f, h, &json), TP_OK);
	assert_non_null(strstr(json, "\"down\":[]"));
	assert_non_null(strstr(json, "\"background_gbps\":7"));
	assert_non_null(
	    strstr(json, "\"reason\":\"down (b end port not up)\""));
	/* the fabric the link numbers are this one's */
	char dig[TP_LINKS_DIGEST_LEN], want[64];
	tp_fabric_links_digest_hex(f, dig);
	snprintf(want, sizeof(want), "\"links_digest\":\"%s\"", dig);
	assert_non_null(strstr(json, want));
	assert_false(tp_health_state_other_fabric(json, f));
	/* an old file written for another fabric: its entries (the unseen
	 * link 0's 0.5, link 1's traffic) are dropped, not carried over
	 * under this fabric's digest */
	char *other = NULL;
	const char *old2 = "{\"format\":\"topoplace-state/1\","
			   "\"links_digest\":\"0123456789abcdef\","
			   "\"links\":[{\"link\":0,\"health\":0.5},"
			   "{\"link\":1,\"background_gbps\":7}]}";
	assert_true(tp_health_state_other_fabric(old2, f));
	assert_int_equal(tp_health_state_json(old2, f, h, &other), TP_OK);
	assert_null(strstr(other, "\"health\":0.5"));
	assert_null(strstr(other, "background_gbps"));
	assert_non_null(strstr(other, want));
	tp_free(other);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	fp = fdopen(fd, "w");
	fputs(json, fp);
	fclose(fp);
	assert_int_equal(tp_state_load_json(f, path, &s, &msg), TP_OK);
	assert_true(tp_state_link_health(s, 0) == 0.5);
	assert_true(tp_state_link_health(s, 1) == 1);
	assert_true(tp_state_link_background(s, 1) == 7);
	assert_true(tp_state_link_health(s, 2) == 0);
	tp_state_destroy(s);
	unlink(path);
	tp_free(json);

	/* no old file: a fresh state; a non-object: PARSE */
	assert_int_equal(tp_health_state_json(NULL, f, h, &json), TP_OK);
	assert_non_null(strstr(json, "\"format\":\"topoplace-state/1\""));
	tp_free(json);
	assert_int_equal(tp_health_state_json("[1]", f, h, &json),
			 TP_ERR_PARSE);
	assert_int_equal(tp_health_state_json("{trunc", f, h, &json),
			 TP_ERR_PARSE);
	/* one the state loader refuses (text after the object, a key given
	 * twice) is no object to keep fields of: the monitor starts afresh */
	static const char *const damaged[] = {
	    "{\"format\":\"topoplace-state/1\",\"down\":[]} garbage {",
	    "{\"down\":[]}{\"down\":[]}",
	    "{\"format\":\"topoplace-state/1\",\"links\":[],\"links\":[]}",
	    "{\"links\":[{\"link\":0,\"health\":0,\"health\":1}]}",
	    /* in a "jobs" entry, and deeper (the loader refuses these too) */
	    ("{\"format\":\"topoplace-state/1\",\"jobs\":[{\"id\":1,"
	     "\"hosts\":{},\"id\":2}]}"),
	    "{\"jobs\":[{\"id\":1,\"hosts\":{\"node001\":1,\"node001\":2}}]}",
	};
	for (size_t i = 0; i < sizeof(damaged) / sizeof(damaged[0]); i++) {
		assert_int_equal(tp_health_state_json(damaged[i], f, h, &json),
				 TP_ERR_PARSE);
		assert_int_equal(tp_health_state_check(damaged[i], NULL),
				 TP_ERR_PARSE);
	}
	assert_int_equal(
	    tp_health_state_json("{\"down\":[]} \r\n\t", f, h, &json), TP_OK);
	tp_free(json);
	assert_false(
	    tp_health_state_other_fabric("{\"links_digest\":\"0123\"} x", f));
	/* another format (a fabric model given by mistake) is not merged
	 * into: its cables would be replaced by link health */
	assert_int_equal(tp_health_state_json(
			     "{\"format\":\"topoplace-fabric/1\",\"links\":[]}",
			     f, h, &json),
			 TP_ERR_FORMAT);
	assert_int_equal(tp_health_state_json("{\"format\":7}", f, h, &json),
			 TP_ERR_FORMAT);
	/* ... whatever follows it */
	assert_int_equal(
	    tp_health_state_json("{\"format\":\"topoplace-fabric/1\"} x", f, h,
				 &json),
	    TP_ERR_FORMAT);
	assert_int_equal(tp_health_state_check(
			     "{\"format\":\"topoplace-fabric/1\"} x", NULL),
			 TP_ERR_FORMAT);
	free(h);
	tp_fabric_destroy(f);
}

/* A state file's objects are checked for a repeated key in O(k log k) at
 * worst, not O(k^2): a job of 100,000 hosts is one "hosts" object of that
 * many keys, read at the monitor's start and on every sweep (pairwise, it
 * took about 15 s; 40,000 keys took 2.5 s). A repeat among them is still
 * found, first or last. */
static void test_state_big_object(void **unused)
{
	const size_t n = 100000;
	size_t cap = n * 24 + 128, len;
	char *doc = malloc(cap);
	clock_t t0;

	(void)unused;
	assert_non_null(doc);
	len = (size_t)snprintf(doc, cap,
			       "{\"format\":\"topoplace-state/1\",\"jobs\":[{"
			       "\"id\":1,\"hosts\":{");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(doc + len, cap - len, "%s\"h%zu\":1",
					i ? "," : "", i);
	snprintf(doc + len, cap - len, "}}]}");
	t0 = clock();
	assert_int_equal(tp_health_state_check(doc, NULL), TP_OK);
	if ((double)(clock() - t0) / CLOCKS_PER_SEC > 2)
		fail_msg("%zu keys took %.1f s", n,
			 (double)(clock() - t0) / CLOCKS_PER_SEC);
	/* the last key repeats the first */
	char *last = strrchr(doc, '"');
	last = memrchr(doc, '"', (size_t)(last - doc));
	memcpy(last, "\"h0\":1}}]}", 11);
	assert_int_equal(tp_health_state_check(doc, NULL), TP_ERR_PARSE);
	free(doc);
}

static void test_prom_and_json(void **unused)
{
	tp_fabric_t *f = small_fabric();
	size_t nl = tp_fabric_nlinks(f);
	tp_health_link_t *h = calloc(nl, sizeof(*h));
	char *text = NULL;
	cJSON *root, *links;

	(void)unused;
	for (size_t l = 0; l < nl; l++) {
		h[l].seen = l != 1;
		h[l].health = 1;
		snprintf(h[l].reason, sizeof(h[l].reason), "ok");
	}
	h[0].health = 0.5;
	h[0].alarm = true;
	h[0].delta[TP_HC_SYMBOL_ERR] = 42;
	h[0].util[1] = 0.25;
	h[0].util[0] = NAN; /* unknown: no sample, null in the JSON */
	assert_int_equal(tp_health_prom_text(f, h, 0.5, 0.125, 1e9, &text),
			 TP_OK);
	assert_null(strstr(text, "nan"));
	const char *u0 = strstr(text, "topoplace_link_utilization{link=\"0\",");
	assert_non_null(u0); /* link 0's "ba" sample only */
	assert_null(strstr(u0 + 1, "topoplace_link_utilization{link=\"0\","));
	assert_non_null(strstr(text, "# TYPE topoplace_link_health gauge\n"));
	assert_non_null(strstr(text, "topoplace_link_health{link=\"0\","));
	assert_null(strstr(text, "link=\"1\""));
	assert_non_null(strstr(text, ",counter=\"symbol_errors\"} 42\n"));
	assert_non_null(strstr(text, ",direction=\"ba\"} 0.25\n"));
	assert_non_null(strstr(text, "topoplace_health_sweep_seconds 0.5\n"));
	assert_non_null(
	    strstr(text, "topoplace_health_sweep_state_seconds 0.125\n"));
	tp_free(text);

	assert_int_equal(tp_health_links_json(f, h, &text), TP_OK);
	root = cJSON_Parse(text);
	assert_non_null(root);
	links = cJSON_GetObjectItem(root, "links");
	assert_int_equal(cJSON_GetArraySize(links), (int)nl - 1);
	assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(links, 0), "health")
			->valuedouble == 0.5);
	cJSON *u =
	    cJSON_GetObjectItem(cJSON_GetArrayItem(links, 0), "utilization");
	assert_true(cJSON_IsNull(cJSON_GetArrayItem(u, 0)));
	assert_true(cJSON_GetArrayItem(u, 1)->valuedouble == 0.25);
	assert_int_equal(cJSON_GetObjectItem(root, "alarms")->valueint, 1);
	cJSON_Delete(root);
	tp_free(text);
	free(h);
	tp_fabric_destroy(f);
}

/* ---- topology diff (ibnetdiscover -p dump, edited line by line) ---- */

#define DUMP "ib/treydock-infiniband_exporter/ibnetdiscover-p-test.out"
/* o0002's cable: ib-i1l1s01 (lid 1719) port 11 */
#define O2_PORT "1719 11 0x7cfe9003009ce5b0"

/* The dump with, on every line holding `on`, `from` replaced by `to`
 * (from NULL: the line dropped); a static buffer. */
static const char *edit(const char *text, const char *on, const char *from,
			const char *to)
{
	static char out[8192];
	size_t n = 0;

	out[0] = '\0';
	for (const char *l = text; *l;) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l + 1) : strlen(l);
		char line[512];
		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		l += len;
		if (on && strstr(line, on)) {
			char *at;
			if (!from)
				continue;
			while ((at = strstr(line, from))) {
				char rest[512];
				snprintf(rest, sizeof(rest), "%s",
					 at + strlen(from));
				snprintf(at, sizeof(line) - (size_t)(at - line),
					 "%s%s", to, rest);
			}
		}
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s", line);
	}
	return out;
}

static tp_fabric_t *dump_fabric(const char *text)
{
	tp_fabric_t *f = tp_fabric_create();

	assert_non_null(f);
	assert_int_equal(
	    tp_fabric_parse_ibnetdiscover(f, "edited", text, strlen(text)),
	    TP_OK);
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	return f;
}

/* Model link whose CA end is host's. */
static size_t host_link(const tp_fabric_t *f, const char *host)
{
	for (size_t l = 0; l < tp_fabric_nlinks(f); l++) {
		const tp_link_t *k = tp_fabric_link(f, l);
		for (int e = 0; e < 2; e++) {
			const tp_ca_t *c;
			if (k->kind[e] != TP_NODE_CA)
				continue;
			c = tp_fabric_ca(f, k->node[e]);
			if (c->role == TP_CA_HOST &&
			    !strcmp(tp_fabric_host(f, c->host)->name, host))
				return l;
		}
	}
	fail_msg("no link of %s", host);
	return 0;
}

static char *slurp_fixture(void **state)
{
	char *text = NULL;
	size_t len;
	const char *path = tp_test_fixture(DUMP);

	(void)state;
	if (!path)
		return NULL;
	assert_int_equal(tp_file_read(path, &text, &len), TP_OK);
	return text;
}

static void diff_of(const char *model_text, const char *live_text,
		    tp_fabric_t **m_p, tp_fabric_t **l_p, tp_health_diff_t *d)
{
	*m_p = dump_fabric(model_text);
	*l_p = dump_fabric(live_text);
	assert_int_equal(tp_health_diff(*m_p, *l_p, d), TP_OK);
	assert_int_equal(d->nlinks, tp_fabric_nlinks(*m_p));
}

static void diff_done(tp_fabric_t *m, tp_fabric_t *l, tp_health_diff_t *d)
{
	tp_health_diff_free(d);
	tp_fabric_destroy(m);
	tp_fabric_destroy(l);
}

static void test_diff_same(void **state)
{
	char *text = slurp_fixture(state);
	tp_fabric_t *m, *l;
	tp_health_diff_t d;
	char *out = NULL;

	if (!text)
		skip();
	diff_of(text, text, &m, &l, &d);
	assert_false(tp_health_diff_changed(&d));
	assert_int_equal(d.ngone + d.nmoved + d.nfresh + d.nunseen, 0);
	assert_int_equal(tp_health_diff_text(m, l, &d, NULL, &out), TP_OK);
	assert_string_equal(out, "");
	tp_free(out);
	diff_done(m, l, &d);
	tp_free(text);
}

static void test_diff_gone_back_new(void **state)
{
	char *text = slurp_fixture(state), *out = NULL;
	tp_fabric_t *m, *l, *m2, *l2;
	tp_health_diff_t gone, back, fresh;
	tp_health_port_t ports[64] = {0};
	tp_health_link_t links[32] = {0};
	size_t o2;
	bool stale = false;

	if (!text)
		skip();
	/* o0002's cable pulled: gone, the other links present */
	diff_of(text, edit(text, "o0002", NULL, NULL), &m, &l, &gone);
	o2 = host_link(m, "o0002");
	assert_int_equal(gone.link[o2], TP_HEALTH_GONE);
	assert_int_equal(gone.ngone, 1);
	assert_int_equal(gone.nmoved + gone.nfresh + gone.nunseen, 0);
	assert_int_equal(tp_health_diff_text(m, l, &gone, NULL, &out), TP_OK);
	assert_non_null(strstr(out, "gone: link"));
	assert_non_null(strstr(out, "o0002 HCA-1:1"));
	assert_non_null(strstr(out, "ib-i1l1s01:11"));
	tp_free(out);

	/* applied: health 0 unless the sweep saw both ends up (stale) */
	tp_health_diff_apply(m, l, &gone, ports, links, &stale);
	assert_false(stale);
	assert_true(links[o2].health == 0 && links[o2].alarm);
	assert_string_equal(links[o2].reason, "gone (re-discovery)");
	memset(links, 0, sizeof(links));
	port_ok(&ports[2 * o2]);
	port_ok(&ports[2 * o2 + 1]);
	links[o2].health = 1;
	tp_health_diff_apply(m, l, &gone, ports, links, &stale);
	assert_true(stale);
	assert_true(links[o2].health == 1);

	/* cabled again: "back" against the previous diff */
	l2 = dump_fabric(text);
	assert_int_equal(tp_health_diff(m, l2, &back), TP_OK);
	assert_false(tp_health_diff_changed(&back));
	assert_int_equal(tp_health_diff_json(m, l2, &back, &gone, &out), TP_OK);
	cJSON *root = cJSON_Parse(out);
	assert_non_null(root);
	cJSON *b = cJSON_GetObjectItem(root, "back");
	assert_int_equal(cJSON_GetArraySize(b), 1);
	assert_int_equal(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(b, 0), "link")->valueint,
	    (int)o2);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(root, "changed")));
	cJSON_Delete(root);
	tp_free(out);

	/* a model without o0002 sees its cable as new */
	tp_fabric_destroy(l);
	diff_of(edit(text, "o0002", NULL, NULL), text, &m2, &l, &fresh);
	assert_int_equal(fresh.nfresh, 1);
	assert_int_equal(fresh.ngone + fresh.nmoved, 0);
	assert_int_equal(tp_health_diff_text(m2, l, &fresh, NULL, &out), TP_OK);
	assert_non_null(strstr(out, "new: "));
	assert_non_null(strstr(out, "o0002 HCA-1:1"));
	tp_free(out);
	diff_done(m2, l, &fresh);
	tp_health_diff_free(&back);
	tp_fabric_destroy(l2);
	tp_health_diff_free(&gone);
	tp_fabric_destroy(m);
	tp_free(text);
}

static void test_diff_moved(void **state)
{
	char *text = slurp_fixture(state), *out = NULL;
	tp_fabric_t *m, *l;
	tp_health_diff_t d;
	tp_health_port_t ports[64] = {0};
	tp_health_link_t links[32] = {0};
	size_t o2;
	char edited[8192];

	if (!text)
		skip();
	/* to another port of the same switch */
	diff_of(text,
		edit(text, "o0002", O2_PORT, "1719 12 0x7cfe9003009ce5b0"), &m,
		&l, &d);
	o2 = host_link(m, "o0002");
	assert_int_equal(d.link[o2], TP_HEALTH_MOVED);
	assert_int_equal(d.nmoved, 1);
	assert_int_equal(d.ngone + d.nfresh, 0);
	assert_int_equal(tp_health_diff_text(m, l, &d, NULL, &out), TP_OK);
	assert_non_null(strstr(out, "moved: o0002 (link"));
	assert_non_null(strstr(out, "from ib-i1l1s01:11 to ib-i1l1s01:12"));
	assert_non_null(strstr(out, "regenerate the fabric"));
	tp_free(out);
	tp_health_diff_apply(m, l, &d, ports, links, NULL);
	assert_true(links[o2].health == 0);
	assert_non_null(strstr(links[o2].reason, "moved to ib-i1l1s01:12"));
	/* both ends of the model's link up (two hosts swapped ports): the
	 * move still holds, and the diff is not stale */
	bool stale = false;
	ports[2 * o2].seen = ports[2 * o2].up = true;
	ports[2 * o2 + 1].seen = ports[2 * o2 + 1].up = true;
	memset(links, 0, sizeof(links));
	tp_health_diff_apply(m, l, &d, ports, links, &stale);
	assert_false(stale);
	assert_true(links[o2].health == 0);
	memset(ports, 0, sizeof(ports));
	diff_done(m, l, &d);

	/* to another switch */
	snprintf(edited, sizeof(edited), "%s",
		 edit(text, "o0002", O2_PORT, "2052 36 0x506b4b03005c2740"));
	diff_of(text, edit(edited, "o0002", "ib-i1l1s01", "ib-i4l1s01"), &m, &l,
		&d);
	assert_int_equal(d.link[o2], TP_HEALTH_MOVED);
	assert_int_equal(tp_health_diff_json(m, l, &d, NULL, &out), TP_OK);
	assert_non_null(strstr(out, "\"moved\":[{\"link\":"));
	assert_non_null(strstr(out,
			       "\"host\":\"o0002\",\"from\":\"ib-i1l1s01:11\","
			       "\"to\":\"ib-i4l1s01:36\""));
	tp_free(out);
	diff_done(m, l, &d);
	tp_free(text);
}

/* o0002's cable in place at 1x SDR where the model says 4x EDR: a change
 * with both rates; "???" (speed unknown) is none. */
static void test_diff_rate(void **state)
{
	char *text = slurp_fixture(state), *out = NULL;
	tp_fabric_t *m, *l, *l2;
	tp_health_diff_t d, gone, back;
	size_t o2;
	cJSON *root, *r;

	if (!text)
		skip();
	diff_of(text, edit(text, "o0002", "4x EDR", "1x SDR"), &m, &l, &d);
	o2 = host_link(m, "o0002");
	assert_int_equal(d.link[o2], TP_HEALTH_RATE);
	assert_int_equal(d.nrate, 1);
	assert_int_equal(d.ngone + d.nmoved + d.nfresh + d.nunseen, 0);
	assert_true(tp_health_diff_changed(&d));
	assert_int_equal(tp_health_diff_text(m, l, &d, NULL, &out), TP_OK);
	assert_non_null(strstr(out, "rate: link "));
	assert_non_null(strstr(out, "o0002 HCA-1:1 - ib-i1l1s01:11 runs 1x "
				    "SDR (2.5 Gb/s), the model says 4x EDR "
				    "(100 Gb/s)\n"));
	tp_free(out);
	assert_int_equal(tp_health_diff_json(m, l, &d, NULL, &out), TP_OK);
	assert_non_null(root = cJSON_Parse(out));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(root, "changed")));
	r = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "rate"), 0);
	assert_non_null(r);
	assert_int_equal(cJSON_GetObjectItem(r, "link")->valueint, (int)o2);
	assert_string_equal(cJSON_GetObjectItem(r, "from")->valuestring,
			    "4x EDR");
	assert_string_equal(cJSON_GetObjectItem(r, "to")->valuestring,
			    "1x SDR");
	assert_true(cJSON_GetObjectItem(r, "from_gbps")->valuedouble == 100);
	assert_true(cJSON_GetObjectItem(r, "to_gbps")->valuedouble == 2.5);
	cJSON_Delete(root);
	tp_free(out);

	/* after a pull, back at the lower rate: both "back" and "rate" */
	l2 = dump_fabric(edit(text, "o0002", NULL, NULL));
	assert_int_equal(tp_health_diff(m, l2, &gone), TP_OK);
	assert_int_equal(tp_health_diff_json(m, l, &d, &gone, &out), TP_OK);
	assert_non_null(root = cJSON_Parse(out));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "back")),
			 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "rate")),
			 1);
	cJSON_Delete(root);
	tp_free(out);
	tp_health_diff_free(&gone);
	tp_fabric_destroy(l2);
	diff_done(m, l, &d);

	/* the width alone, and the speed alone */
	diff_of(text, edit(text, "o0002", "4x EDR", "1x EDR"), &m, &l, &d);
	assert_int_equal(d.link[o2], TP_HEALTH_RATE);
	diff_done(m, l, &d);
	diff_of(text, edit(text, "o0002", "4x EDR", "4x FDR"), &m, &l, &d);
	assert_int_equal(d.link[o2], TP_HEALTH_RATE);
	diff_done(m, l, &d);

	/* what the walk does not know is no change */
	diff_of(text, edit(text, "o0002", "4x EDR", "4x ???"), &m, &l, &back);
	assert_int_equal(back.link[o2], TP_HEALTH_PRESENT);
	assert_false(tp_health_diff_changed(&back));
	diff_done(m, l, &back);
	tp_free(text);
}

/* A two-host dump; the switch's description, in Latin-1 with a quote and
 * a backslash, and a third host's are no UTF-8. */
static const char u8_good[] =
    "CA 3 1 0x0002c90300000011 4x EDR - SW 1 1 0x0002c90300000001 "
    "( 'node001 HCA-1' - 'leaf01' )\n"
    "CA 4 1 0x0002c90300000012 4x EDR - SW 1 2 0x0002c90300000001 "
    "( 'node002 HCA-1' - 'leaf01' )\n";
static const char u8_bad[] =
    "CA 3 1 0x0002c90300000011 4x EDR - SW 1 1 0x0002c90300000001 "
    "( 'node001 HCA-1' - 'leaf\xe9\"\\01' )\n"
    "CA 4 1 0x0002c90300000012 4x EDR - SW 1 2 0x0002c90300000001 "
    "( 'node002 HCA-1' - 'leaf\xe9\"\\01' )\n"
    "CA 5 1 0x0002c90300000013 4x EDR - SW 1 3 0x0002c90300000001 "
    "( 'node003 HCA-\xff' - 'leaf\xe9\"\\01' )\n";

static bool utf8_ok(const char *s)
{
	for (size_t n; *s; s += n)
		if (!(n = tp_utf8_len(s)))
			return false;
	return true;
}

/* Descriptions that are no UTF-8 reach the diff's JSON and the Prometheus
 * exposition as U+FFFD, escaped where the format says. */
static void test_names_utf8(void **unused)
{
	tp_fabric_t *m, *l;
	tp_health_diff_t d;
	tp_health_link_t h[3] = {0};
	char *out = NULL;

	(void)unused;
	diff_of(u8_good, u8_bad, &m, &l, &d);
	assert_int_equal(d.nfresh, 1);
	assert_int_equal(tp_health_diff_json(m, l, &d, NULL, &out), TP_OK);
	assert_true(utf8_ok(out));
	assert_non_null(strstr(out, "\"a\":\"node003 HCA-\xef\xbf\xbd:1\","
				    "\"b\":\"leaf\xef\xbf\xbd\\\"\\\\01:3\""));
	tp_free(out);
	diff_done(m, l, &d);

	m = dump_fabric(u8_bad);
	assert_int_equal(tp_fabric_nlinks(m), 3);
	for (size_t i = 0; i < 3; i++)
		h[i].seen = true;
	assert_int_equal(tp_health_prom_text(m, h, 0.5, -1, 1e9, &out), TP_OK);
	assert_true(utf8_ok(out));
	assert_non_null(strstr(out, "a=\"node003 HCA-\xef\xbf\xbd:1\","
				    "b=\"leaf\xef\xbf\xbd\\\"\\\\01:3\"}"));
	tp_free(out);
	tp_fabric_destroy(m);

	/* a description longer than a name holds: cut between two
	 * characters, the port kept */
	char dump[512], desc[121];
	for (size_t i = 0; i < 60; i++)
		memcpy(desc + 2 * i, "\xc3\xa9", 2);
	desc[120] = '\0';
	snprintf(dump, sizeof(dump),
		 "CA 3 1 0x0002c90300000011 4x EDR - SW 1 7 "
		 "0x0002c90300000001 ( 'node001 HCA-1' - '%s' )\n",
		 desc);
	m = dump_fabric(dump);
	assert_int_equal(tp_health_prom_text(m, h, 0.5, -1, 1e9, &out), TP_OK);
	assert_true(utf8_ok(out));
	assert_non_null(strstr(out, "\xc3\xa9:7\"}"));
	tp_free(out);
	tp_fabric_destroy(m);
}

/* A switch and its host missing altogether: another subnet, not gone. */
static void test_diff_unseen(void **state)
{
	char *text = slurp_fixture(state);
	tp_fabric_t *m, *l;
	tp_health_diff_t d;

	if (!text)
		skip();
	diff_of(text, edit(text, "ib-i4l1s01", NULL, NULL), &m, &l, &d);
	assert_int_equal(d.link[host_link(m, "p0001")], TP_HEALTH_UNSEEN);
	assert_int_equal(d.nunseen, 1);
	assert_false(tp_health_diff_changed(&d));
	diff_done(m, l, &d);
	tp_free(text);
}

/* A walk from a host whose own cable is down finds that host's CA and
 * nothing else: its link is gone (it read "0 gone, every link unseen",
 * exit 0), the others unseen. */
static void test_diff_own_cable_down(void **state)
{
	char *text = slurp_fixture(state);
	tp_fabric_t *m, *l = tp_fabric_create();
	tp_health_diff_t d;
	uint32_t ca;

	if (!text)
		skip();
	m = dump_fabric(text);
	size_t o2 = host_link(m, "o0002");
	const tp_link_t *k = tp_fabric_link(m, o2);
	int e = k->kind[0] == TP_NODE_CA ? 0 : 1;
	assert_non_null(l);
	assert_int_equal(tp__fabric_add_ca(l, tp__fabric_new_subnet(l),
					   tp_fabric_link_end_guid(m, k, e),
					   "o0002 mlx5_0", 1, &ca),
			 TP_OK);
	assert_int_equal(tp_fabric_finalize(l, NULL), TP_OK);
	assert_int_equal(tp_health_diff(m, l, &d), TP_OK);
	assert_int_equal(d.link[o2], TP_HEALTH_GONE);
	assert_int_equal(d.ngone, 1);
	assert_int_equal(d.nunseen, tp_fabric_nlinks(m) - 1);
	assert_true(tp_health_diff_changed(&d));
	diff_done(m, l, &d);
	tp_free(text);
}

/* Two rails: hx's dual-port HCA (one GUID) on swA and swB, hy on swA, hz
 * on swB, each rail a subnet of its own. */
static const char rail_a[] =
    "CA 2 1 0x0000000000000100 4x EDR - SW 1 1 0x00000000000000a0 "
    "( 'hx mlx5_0' - 'swA' )\n"
    "CA 3 1 0x0000000000000200 4x EDR - SW 1 2 0x00000000000000a0 "
    "( 'hy mlx5_0' - 'swA' )\n";
static const char rail_b[] =
    "CA 2 2 0x0000000000000100 4x EDR - SW 1 1 0x00000000000000b0 "
    "( 'hx mlx5_0' - 'swB' )\n"
    "CA 3 1 0x0000000000000300 4x EDR - SW 1 2 0x00000000000000b0 "
    "( 'hz mlx5_0' - 'swB' )\n";

static tp_fabric_t *rails_fabric(const char *a, const char *b)
{
	tp_fabric_t *f = tp_fabric_create();

	assert_non_null(f);
	assert_int_equal(tp_fabric_parse_ibnetdiscover(f, "a", a, strlen(a)),
			 TP_OK);
	if (b)
		assert_int_equal(
		    tp_fabric_parse_ibnetdiscover(f, "b", b, strlen(b)), TP_OK);
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	return f;
}

/* Model link with an end at (guid, port). */
static size_t link_at(const tp_fabric_t *f, uint64_t guid, int port)
{
	for (size_t l = 0; l < tp_fabric_nlinks(f); l++) {
		const tp_link_t *k = tp_fabric_link(f, l);
		for (int e = 0; e < 2; e++)
			if (tp_fabric_link_end_guid(f, k, e) == guid &&
			    k->port[e] == port)
				return l;
	}
	fail_msg("no link at 0x%016llx:%d", (unsigned long long)guid, port);
	return 0;
}

/* A walk of one rail finds hx by its GUID; its link on the other rail is
 * unseen, not gone (the monitor would put the other rail's cable at 0). */
static void test_diff_other_rail(void **unused)
{
	tp_fabric_t *m = rails_fabric(rail_a, rail_b), *l;
	tp_health_diff_t d;
	size_t hx_b = link_at(m, 0x100, 2);

	(void)unused;
	assert_int_equal(tp_fabric_nsubnets(m), 2);
	l = rails_fabric(rail_a, NULL);
	assert_int_equal(tp_health_diff(m, l, &d), TP_OK);
	assert_int_equal(d.link[hx_b], TP_HEALTH_UNSEEN);
	assert_int_equal(d.link[link_at(m, 0x300, 1)], TP_HEALTH_UNSEEN);
	assert_int_equal(d.link[link_at(m, 0x100, 1)], TP_HEALTH_PRESENT);
	assert_int_equal(d.ngone, 0);
	assert_int_equal(d.nunseen, 2);
	assert_false(tp_health_diff_changed(&d));
	tp_health_diff_free(&d);
	tp_fabric_destroy(l);

	/* rail b walked without hx's cable: that one is gone */
	l = rails_fabric(strchr(rail_b, '\n') + 1, NULL);
	assert_int_equal(tp_health_diff(m, l, &d), TP_OK);
	assert_int_equal(d.link[hx_b], TP_HEALTH_GONE);
	assert_int_equal(d.link[link_at(m, 0x200, 1)], TP_HEALTH_UNSEEN);
	assert_int_equal(d.ngone, 1);
	diff_done(m, l, &d);
}

/* A walk sharing no node with the model is another fabric, not a model
 * whose every link is unseen (no change). */
static void test_diff_other_fabric(void **unused)
{
	tp_fabric_t *m = rails_fabric(rail_a, NULL), *l;
	tp_health_diff_t d;

	(void)unused;
	/* rail b without hx */
	l = rails_fabric(strchr(rail_b, '\n') + 1, NULL);
	d.nlinks = 7;
	assert_int_equal(tp_health_diff(m, l, &d), TP_ERR_MISMATCH);
	assert_int_equal(d.nlinks, 0);
	assert_null(d.link);
	tp_fabric_destroy(l);
	/* one node in common is enough */
	l = rails_fabric(rail_b, NULL);
	assert_int_equal(tp_health_diff(m, l, &d), TP_OK);
	assert_int_equal(d.nunseen, 2);
	diff_done(m, l, &d);
}

/* Back to back: hx's second port cabled to hy. hy moved to a switch
 * port is hy's move, named from hx's port, whichever end the model lists
 * first. */
static void test_diff_moved_b2b(void **unused)
{
	static const char b2b[] =
	    "CA 2 1 0x0000000000000100 4x EDR - SW 1 1 0x00000000000000a0 "
	    "( 'hx mlx5_0' - 'swA' )\n"
	    "CA 2 2 0x0000000000000100 4x EDR - CA 3 1 0x0000000000000200 "
	    "( 'hx mlx5_0' - 'hy mlx5_0' )\n";
	static const char moved[] =
	    "CA 2 1 0x0000000000000100 4x EDR - SW 1 1 0x00000000000000a0 "
	    "( 'hx mlx5_0' - 'swA' )\n"
	    "CA 3 1 0x0000000000000200 4x EDR - SW 1 5 0x00000000000000a0 "
	    "( 'hy mlx5_0' - 'swA' )\n";
	tp_fabric_t *m, *l;
	tp_health_diff_t d;
	tp_health_port_t ports[4] = {0};
	tp_health_link_t links[2] = {0};
	size_t k;
	char *out = NULL;

	(void)unused;
	diff_of(b2b, moved, &m, &l, &d);
	k = link_at(m, 0x200, 1);
	assert_int_equal(d.link[k], TP_HEALTH_MOVED);
	assert_int_equal(d.nmoved, 1);
	assert_int_equal(tp_health_diff_text(m, l, &d, NULL, &out), TP_OK);
	assert_non_null(strstr(out, "moved: hy (link 1) from hx mlx5_0:2 to "
				    "swA:5;"));
	tp_free(out);
	assert_int_equal(tp_health_diff_json(m, l, &d, NULL, &out), TP_OK);
	assert_non_null(strstr(out, "\"host\":\"hy\",\"from\":\"hx "
				    "mlx5_0:2\",\"to\":\"swA:5\""));
	tp_free(out);
	tp_health_diff_apply(m, l, &d, ports, links, NULL);
	assert_true(links[k].health == 0);
	assert_string_equal(links[k].reason,
			    "host moved to swA:5; regenerate the fabric");
	tp_health_diff_free(&d);
	tp_fabric_destroy(l);

	/* hx's port moved instead: hx's move */
	l = dump_fabric(edit(moved, "hy", "CA 3 1 0x0000000000000200",
			     "CA 2 2 0x0000000000000100"));
	assert_int_equal(tp_health_diff(m, l, &d), TP_OK);
	assert_int_equal(d.link[k], TP_HEALTH_MOVED);
	assert_int_equal(tp_health_diff_text(m, l, &d, NULL, &out), TP_OK);
	assert_non_null(strstr(out, "moved: hx (link 1) from hy mlx5_0:1 to "
				    "swA:5;"));
	tp_free(out);
	diff_done(m, l, &d);
}

/* An end up but not answering: its LID asked by directed route every 2nd
 * sweep, walks at 8, 16, 32, 64 sweeps and never between. */
static void test_silent_action(void **unused)
{
	unsigned walks = 0;

	(void)unused;
	assert_int_equal(tp_health_silent_action(0), 0);
	assert_int_equal(tp_health_silent_action(1), 0);
	assert_int_equal(tp_health_silent_action(2), TP_HEALTH_SILENT_RELID);
	assert_int_equal(tp_health_silent_action(3), 0);
	assert_int_equal(tp_health_silent_action(8),
			 TP_HEALTH_SILENT_RELID | TP_HEALTH_SILENT_WALK);
	assert_int_equal(tp_health_silent_action(24), TP_HEALTH_SILENT_RELID);
	for (unsigned m = 1; m <= 64; m++) {
		unsigned act = tp_health_silent_action(m);
		assert_int_equal(!!(act & TP_HEALTH_SILENT_RELID), m % 2 == 0);
		if (act & TP_HEALTH_SILENT_WALK) {
			assert_true(m == 8 || m == 16 || m == 32 || m == 64);
			walks++;
		}
	}
	assert_int_equal(walks, 4);
}

/* A silent end's directed-route answer: a LID is taken only from the
 * node the end is (the walk's path may now reach another), LID 0 is no
 * LID yet, the same LID is not routed. */
static void test_relid_verdict(void **unused)
{
	const uint64_t g = 0x0002c90300000001ull;
	const struct {
		uint64_t answer;
		unsigned new_lid;
		tp_health_relid_t want;
	} cases[] = {
	    {g, 200, TP_HEALTH_RELID_NEW},
	    {g, 3, TP_HEALTH_RELID_SAME},
	    {g, 0, TP_HEALTH_RELID_NO_LID},
	    /* another node: whatever LID it has, the GUID decides */
	    {g + 1, 200, TP_HEALTH_RELID_OTHER_NODE},
	    {g + 1, 3, TP_HEALTH_RELID_OTHER_NODE},
	    {g + 1, 0, TP_HEALTH_RELID_OTHER_NODE},
	    /* no NodeInfo answer leaves GUID 0: never this end */
	    {0, 200, TP_HEALTH_RELID_OTHER_NODE},
	};

	(void)unused;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		assert_int_equal(tp_health_relid_verdict(g, cases[i].answer, 3,
							 cases[i].new_lid),
				 cases[i].want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counter_delta),
	    cmocka_unit_test(test_healthy_first_sweep),
	    cmocka_unit_test(test_down),
	    cmocka_unit_test(test_width_and_speed),
	    cmocka_unit_test(test_each_error_rule),
	    cmocka_unit_test(test_error_levels),
	    cmocka_unit_test(test_flap_levels),
	    cmocka_unit_test(test_one_shot_totals),
	    cmocka_unit_test(test_reset_no_alarm),
	    cmocka_unit_test(test_saturated_old_across_gap),
	    cmocka_unit_test(test_utilisation),
	    cmocka_unit_test(test_no_false_alarm),
	    cmocka_unit_test(test_state_json),
	    cmocka_unit_test(test_state_big_object),
	    cmocka_unit_test(test_prom_and_json),
	    cmocka_unit_test(test_diff_same),
	    cmocka_unit_test(test_diff_gone_back_new),
	    cmocka_unit_test(test_diff_moved),
	    cmocka_unit_test(test_diff_moved_b2b),
	    cmocka_unit_test(test_diff_unseen),
	    cmocka_unit_test(test_diff_own_cable_down),
	    cmocka_unit_test(test_diff_other_rail),
	    cmocka_unit_test(test_diff_other_fabric),
	    cmocka_unit_test(test_diff_rate),
	    cmocka_unit_test(test_names_utf8),
	    cmocka_unit_test(test_silent_action),
	    cmocka_unit_test(test_relid_verdict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
