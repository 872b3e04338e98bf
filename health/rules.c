/*
 * Link health rules: pure functions of two sweeps (tp_health.h lists the
 * rules). Notes:
 * - Both ends' deltas are summed: a bad cable shows as symbol errors at
 *   whichever end receives on the bad lane, discards at the sender.
 * - The error factor is the worst counter's, not a product: one fault
 *   usually moves several counters at once (symbol errors, receive errors,
 *   recoveries), and counting it three times would take a link that still
 *   carries most of its traffic to zero.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tp_health.h"

static const struct {
	const char *name;
	int bits;
	double per_min;
	uint64_t min_count;
} counters[TP_HC_N] = {
#define TP_HEALTH_ROW(id, name, bits, per_min, min_count)                      \
	[TP_HC_##id] = {name, bits, per_min, min_count},
    TP_HEALTH_COUNTERS(TP_HEALTH_ROW)
#undef TP_HEALTH_ROW
};

/* 64-bit counters closer than this to 2^64 wrap rather than reset. */
#define WRAP_WINDOW ((uint64_t)1 << 62)

/* A LinkDownedCounter total (one-shot check) is no flap up to this: every
 * reboot of the far host and every re-cabling adds one since the last
 * clear. */
#define DOWNED_TOTAL_MIN 10

const char *tp_health_counter_name(tp_health_counter_t c)
{
	return (unsigned)c < TP_HC_N ? counters[c].name : NULL;
}

void tp_health_rules_default(tp_health_rules_t *r)
{
	for (int c = 0; c < TP_HC_N; c++) {
		r->per_min[c] = counters[c].per_min;
		r->min_count[c] = counters[c].min_count;
	}
}

uint64_t tp_health_counter_delta(uint64_t prev, uint64_t cur, int bits,
				 bool *saturated_p)
{
	uint64_t max = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
	bool sat = bits < 64 && cur >= max;
	uint64_t d;

	if (cur >= prev)
		d = cur - prev;
	else if (bits >= 64 && prev > UINT64_MAX - WRAP_WINDOW)
		d = UINT64_MAX - prev + cur + 1;
	else
		d = cur; /* reset since the previous sweep */
	if (saturated_p)
		*saturated_p = sat;
	return d;
}

static void reason_add(tp_health_link_t *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void reason_add(tp_health_link_t *out, const char *fmt, ...)
{
	size_t len = strlen(out->reason);
	va_list ap;

	if (len && len + 2 < sizeof(out->reason)) {
		memcpy(out->reason + len, "; ", 3);
		len += 2;
	}
	if (len + 1 >= sizeof(out->reason))
		return;
	va_start(ap, fmt);
	vsnprintf(out->reason + len, sizeof(out->reason) - len, fmt, ap);
	va_end(ap);
}

static double port_gbps(const tp_health_port_t *p)
{
	return p->width * p->lane_gbps;
}

/* Rule 1; true when the link is down (health 0). An end whose node did
 * not answer (two sweeps running) while the other end's port is up is not
 * down: the cable trains but drops what crosses it (or the far node is
 * hung) - rule 1b. */
static bool rule_down(const tp_health_port_t prev[2],
		      const tp_health_port_t cur[2], const bool node_seen[2],
		      tp_health_link_t *out)
{
	for (int e = 0; e < 2; e++) {
		const tp_health_port_t *o = &cur[!e];

		if (!node_seen[e] && o->seen && o->up) {
			/* one lost query on a busy fabric is no fault: the
			 * end must have missed the previous sweep too (on the
			 * first sweep, none: the next one tells) */
			if (!prev || prev[e].seen)
				continue;
			out->health *= 0.5;
			out->alarm = true;
			reason_add(out, "%s end up but not answering",
				   e ? "b" : "a");
			continue;
		}
		if (!cur[e].seen || !cur[e].up) {
			out->health = 0;
			out->alarm = true;
			reason_add(out, "down (%s end %s)", e ? "b" : "a",
				   !node_seen[e]  ? "not reachable"
				   : !cur[e].seen ? "port not found"
						  : "port not up");
			return true;
		}
	}
	return false;
}

/* The port's active width and lane rate are both known: a width code or
 * a speed (XDR, say) the reader's tables lack reads as 0. */
static bool rate_known(const tp_health_port_t *p)
{
	return p->seen && p->width > 0 && p->lane_gbps > 0;
}

/* Rule 2. */
static void rule_rate(const tp_link_t *link, const tp_health_port_t cur[2],
		      tp_health_link_t *out)
{
	const tp_health_port_t *slow =
	    !rate_known(&cur[0]) || (rate_known(&cur[1]) &&
				     port_gbps(&cur[1]) < port_gbps(&cur[0]))
		? &cur[1]
		: &cur[0];
	double have = port_gbps(slow);

	/* a model rate assumed (width or lane unknown) is no rate to judge
	 * against, and a live one unknown at both ends no rate to judge */
	if (!tp_link_rate_known(link) || !(link->gbps > 0) ||
	    !rate_known(slow) || !(have < link->gbps * (1 - 1e-9)))
		return;
	out->health *= have / link->gbps;
	out->alarm = true;
	if (slow->width < link->width)
		reason_add(out, "running %dx/%dx lanes", slow->width,
			   link->width);
	else
		reason_add(out, "running %g/%g Gb/s", have, link->gbps);
}

/* Rule 3's factor for a delta against its threshold: 1 when under it. */
static double error_factor(uint64_t delta, double limit, bool flap)
{
	if (flap)
		return delta > 10 ? 0.25 : 0.5;
	if ((double)delta > 100 * limit)
		return 0.25;
	if ((double)delta > 10 * limit)
		return 0.5;
	return 0.75;
}

/* False for a data counter read from PortCountersExtended in one sweep
 * and from the 32-bit PortCounters in the other (the extended query lost
 * once): their difference is no count. */
static bool same_width(int c, const tp_health_port_t *prev,
		       const tp_health_port_t *cur)
{
	return c < TP_HC_FIRST_DATA || prev->wide_data == cur->wide_data;
}

/* Rules 3 and 4 (deltas), then rule 5. */
static void rule_counters(const tp_health_rules_t *r, const tp_link_t *link,
			  const tp_health_port_t prev[2],
			  const tp_health_port_t cur[2], double interval_s,
			  tp_health_link_t *out)
{
	/* interval 0: a one-shot check, the counters are totals */
	bool totals = !(interval_s > 0);
	double worst = 1;

	for (int c = 0; c < TP_HC_N; c++) {
		bool sat = false, pinned = false;

		for (int e = 0; e < 2; e++) {
			bool s = false;
			int bits = c >= TP_HC_FIRST_DATA && !cur[e].wide_data
				       ? 32
				       : counters[c].bits;

			if (!prev[e].counters || !cur[e].counters ||
			    !same_width(c, &prev[e], &cur[e]))
				continue;
			out->delta[c] += tp_health_counter_delta(
			    prev[e].c[c], cur[e].c[c], bits, &s);
			sat |= s;
			/* at its maximum in both sweeps: the errors since
			 * are not counted (interval 0: totals, held as
			 * they are; at it since before the monitor
			 * started: old news, a year of peer reboots) */
			pinned |= s && interval_s > 0 &&
				  prev[e].c[c] == cur[e].c[c] &&
				  !(prev[e].sat_old & (1u << c));
		}
		if (c >= TP_HC_FIRST_DATA)
			continue;
		double limit =
		    r->per_min[c] * (interval_s > 0 ? interval_s : 0) / 60;
		if (limit < (double)r->min_count[c])
			limit = (double)r->min_count[c];
		if (totals && c == TP_HC_LINK_DOWNED &&
		    limit < DOWNED_TOTAL_MIN)
			limit = DOWNED_TOTAL_MIN;
		if (!((double)out->delta[c] > limit)) {
			if (!pinned)
				continue;
			/* a saturated counter no longer moves: it keeps its
			 * alarm at the lowest level until it is cleared */
			if (0.75 < worst)
				worst = 0.75;
			out->alarm = true;
			reason_add(out,
				   "%s saturated, not counting (clear it: "
				   "perfquery -R LID PORT, or ibclearcounters)",
				   counters[c].name);
			continue;
		}
		/* a total is no rate of flaps: levelled as other totals */
		double fac = error_factor(out->delta[c], limit,
					  !totals && c == TP_HC_LINK_DOWNED);
		if (fac < worst)
			worst = fac;
		out->alarm = true;
		reason_add(out, "%s %c%llu (> %g)%s", counters[c].name,
			   totals ? '=' : '+',
			   (unsigned long long)out->delta[c], limit,
			   sat ? " saturated" : "");
	}
	out->health *= worst;
	/* left unknown (NaN) where no count can be made: the end not read,
	 * its width changed, or a 32-bit counter at its maximum (it
	 * saturates: at 100 Gb/s within 1.4 s of a clear, and stays there) */
	for (int e = 0; e < 2; e++) {
		uint64_t words = 0;
		bool known = prev[e].counters && cur[e].counters &&
			     same_width(TP_HC_XMIT_DATA, &prev[e], &cur[e]),
		     sat = false;

		if (known)
			words = tp_health_counter_delta(
			    prev[e].c[TP_HC_XMIT_DATA],
			    cur[e].c[TP_HC_XMIT_DATA],
			    cur[e].wide_data ? 64 : 32, &sat);
		/* against the model's rate, or where the model has none
		 * but an assumption (finalize), the rate the port runs */
		double cap =
		    tp_link_rate_known(link) ? link->gbps : port_gbps(&cur[e]);
		if (known && !sat && cap > 0 && interval_s > 0)
			out->util[e] =
			    (double)words * 32 / interval_s / (cap * 1e9);
	}
}

void tp_health_eval(const tp_health_rules_t *r, const tp_link_t *link,
		    const tp_health_port_t prev[2],
		    const tp_health_port_t cur[2], const bool node_seen[2],
		    double interval_s, tp_health_link_t *out)
{
	tp_health_rules_t def;

	memset(out, 0, sizeof(*out));
	out->health = 1;
	/* unknown until a count is made (rule 5): not on a first sweep or a
	 * one-shot check, nor for a link of unknown rate */
	out->util[0] = out->util[1] = NAN;
	out->seen = node_seen[0] || node_seen[1];
	if (!r) {
		tp_health_rules_default(&def);
		r = &def;
	}
	if (!out->seen) {
		/* rule 1c: silence on our own subnet, two sweeps running */
		if (prev && cur[0].known && cur[1].known && prev[0].known &&
		    prev[1].known && !prev[0].seen && !prev[1].seen) {
			out->seen = true;
			out->health = 0;
			out->alarm = true;
			snprintf(out->reason, sizeof(out->reason),
				 "down (neither end answering)");
			return;
		}
		snprintf(out->reason, sizeof(out->reason), "not reachable");
		return;
	}
	if (!rule_down(prev, cur, node_seen, out)) {
		rule_rate(link, cur, out);
		if (prev)
			rule_counters(r, link, prev, cur, interval_s, out);
	}
	if (!out->reason[0])
		snprintf(out->reason, sizeof(out->reason), "ok");
}

void tp_health_saturated_since(const tp_health_port_t *prev,
			       tp_health_port_t *cur)
{
	uint32_t at_max = 0;

	/* Not read this sweep (link down, node or PMA reply lost): nothing
	 * new is known, keep what was. Never read yet: the first reading
	 * stands for the first sweep. */
	if (!cur->counters) {
		cur->sat_old =
		    prev ? prev->sat_old : (1u << TP_HC_FIRST_DATA) - 1;
		return;
	}
	for (int c = 0; c < TP_HC_FIRST_DATA; c++) {
		bool s = false;
		tp_health_counter_delta(0, cur->c[c], counters[c].bits, &s);
		at_max |= s ? 1u << c : 0;
	}
	cur->sat_old = prev ? prev->sat_old & at_max : at_max;
}

unsigned tp_health_silent_action(unsigned misses)
{
	unsigned w = misses / TP_HEALTH_WALK_MISSES, act = 0;

	if (misses && misses % TP_HEALTH_RELID_MISSES == 0)
		act |= TP_HEALTH_SILENT_RELID;
	if (w && misses % TP_HEALTH_WALK_MISSES == 0 && !(w & (w - 1)))
		act |= TP_HEALTH_SILENT_WALK;
	return act;
}

tp_health_relid_t tp_health_relid_verdict(uint64_t guid, uint64_t answer_guid,
					  unsigned lid, unsigned new_lid)
{
	if (answer_guid != guid)
		return TP_HEALTH_RELID_OTHER_NODE;
	if (!new_lid)
		return TP_HEALTH_RELID_NO_LID;
	return new_lid == lid ? TP_HEALTH_RELID_SAME : TP_HEALTH_RELID_NEW;
}
