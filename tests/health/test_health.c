/* health/: the link-health rules, counter deltas and the monitor's files. */
#include "config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "tp_health.h"
#include "tp_placement.h"
#include "tp_test.h"
#include "tp_test_fabric.h"

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
	/* the near end is up but the far node does not answer: lossy */
	cur[0].up = true;
	tp_health_eval(NULL, &hdr, NULL, cur, b_gone, 1, &out);
	assert_true(out.health == 0.5);
	assert_string_equal(out.reason, "b end up but not answering");
	/* ... but only from its second silent sweep on */
	tp_health_port_t prev[2];
	link_ok(prev);
	tp_health_eval(NULL, &hdr, prev, cur, b_gone, 1, &out);
	assert_false(out.alarm);
	assert_true(out.health == 1);
	tp_health_eval(NULL, &hdr, cur, cur, b_gone, 1, &out);
	assert_true(out.health == 0.5);

	/* neither end's node found: another subnet, no verdict */
	tp_health_eval(NULL, &hdr, NULL, cur, none, 1, &out);
	assert_false(out.seen);
	assert_false(out.alarm);
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
}

static void test_utilisation(void **unused)
{
	tp_health_port_t prev[2], cur[2];
	tp_health_link_t out;

	(void)unused;
	link_ok(prev);
	link_ok(cur);
	/* 200 Gb/s for 2 s at half rate: 100e9 * 2 / 32 words from a */
	cur[0].c[TP_HC_XMIT_DATA] = (uint64_t)(100e9 * 2 / 32);
	cur[1].c[TP_HC_XMIT_DATA] = (uint64_t)(20e9 * 2 / 32);
	eval(prev, cur, 2, &out);
	assert_true(fabs(out.util[0] - 0.5) < 1e-9);
	assert_true(fabs(out.util[1] - 0.1) < 1e-9);
	assert_false(out.alarm);
	/* 32-bit data counters (no extended ones) going back were reset */
	prev[0].wide_data = cur[0].wide_data = false;
	prev[0].c[TP_HC_XMIT_DATA] = UINT32_MAX - 99;
	cur[0].c[TP_HC_XMIT_DATA] = 100;
	eval(prev, cur, 2, &out);
	assert_true(out.util[0] == 100.0 * 32 / 2 / 200e9);
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
	free(h);
	tp_fabric_destroy(f);
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
	assert_int_equal(tp_health_prom_text(f, h, 0.5, 1e9, &text), TP_OK);
	assert_non_null(strstr(text, "# TYPE topoplace_link_health gauge\n"));
	assert_non_null(strstr(text, "topoplace_link_health{link=\"0\","));
	assert_null(strstr(text, "link=\"1\""));
	assert_non_null(strstr(text, ",counter=\"symbol_errors\"} 42\n"));
	assert_non_null(strstr(text, ",direction=\"ba\"} 0.25\n"));
	assert_non_null(strstr(text, "topoplace_health_sweep_seconds 0.5\n"));
	tp_free(text);

	assert_int_equal(tp_health_links_json(f, h, &text), TP_OK);
	root = cJSON_Parse(text);
	assert_non_null(root);
	links = cJSON_GetObjectItem(root, "links");
	assert_int_equal(cJSON_GetArraySize(links), (int)nl - 1);
	assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(links, 0), "health")
			->valuedouble == 0.5);
	assert_int_equal(cJSON_GetObjectItem(root, "alarms")->valueint, 1);
	cJSON_Delete(root);
	tp_free(text);
	free(h);
	tp_fabric_destroy(f);
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
	    cmocka_unit_test(test_reset_no_alarm),
	    cmocka_unit_test(test_utilisation),
	    cmocka_unit_test(test_no_false_alarm),
	    cmocka_unit_test(test_state_json),
	    cmocka_unit_test(test_prom_and_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
