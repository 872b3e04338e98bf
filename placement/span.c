/*
 * Spans (how many hosts, NVLink domains, level-1 and level-2 groups a
 * host set touches), the least span any placement of the same size could
 * have, and ring order.
 *
 * Missing levels: a host outside any group at some level (no level-2
 * groups in a one-level fabric, a host with no IB link, a GPU-less host
 * with no NVLink domain) counts as being in one shared "no group" unit at
 * that level. So a fabric with a single group level reports spine span 1
 * for every non-empty placement, which reads right ("the job stays inside
 * one spine group: the only one") and keeps span >= min_span >= 1
 * whenever a placement exists.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "placement_int.h"

/* Host sets up to these sizes use the stack, not the heap: fewer
 * allocations per decision (the pricing orders a ring for every
 * candidate); bench_place_cold times the whole call. */
#define SMALL_SET  64
#define SMALL_RING 32

/* Unit of host h at a span level; units are 0..nunits-1, the last one
 * standing for "none". */
static uint32_t unit_of(const tp_fabric_t *f, uint32_t h, int lv,
			uint32_t *nunits_p)
{
	const tp_host_t *hp = tp_fabric_host(f, h);
	uint32_t u, n;

	switch (lv) {
	case TP_SPAN_HOSTS:
		n = (uint32_t)tp_fabric_nhosts(f);
		u = h;
		break;
	case TP_SPAN_NVDOMAINS:
		n = (uint32_t)tp_fabric_nnvdomains(f);
		u = hp->nvdomain;
		break;
	case TP_SPAN_GROUPS:
		n = (uint32_t)tp_fabric_ngroups(f);
		u = hp->group[0];
		break;
	default:
		n = (uint32_t)tp_fabric_ngroups(f);
		u = hp->group[1];
		break;
	}
	*nunits_p = n + 1;
	return u == TP_ID_NONE || u >= n ? n : u;
}

static size_t distinct(const tp_fabric_t *f, const uint32_t *hosts, size_t n,
		       int lv, uint32_t *tmp)
{
	uint32_t nu;
	size_t c = 0;

	if (!tmp) {
		/* no memory for a sort: quadratic, but still the answer */
		for (size_t i = 0; i < n; i++) {
			uint32_t u = unit_of(f, hosts[i], lv, &nu);
			size_t j = 0;
			while (j < i && unit_of(f, hosts[j], lv, &nu) != u)
				j++;
			c += j == i;
		}
		return c;
	}
	for (size_t i = 0; i < n; i++)
		tmp[i] = unit_of(f, hosts[i], lv, &nu);
	tp_sort(tmp, n, sizeof(*tmp), tp_u32_cmp);
	for (size_t i = 0; i < n; i++)
		c += !i || tmp[i] != tmp[i - 1];
	return c;
}

void tp_span_of(const tp_fabric_t *f, const uint32_t *hosts, size_t n,
		size_t span[TP_SPAN_NLEVELS])
{
	uint32_t small[SMALL_SET], *tmp = small;

	memset(span, 0, TP_SPAN_NLEVELS * sizeof(size_t));
	if (!f || !hosts || !n)
		return;
	if (n > SMALL_SET)
		tmp = tp_malloc(n * sizeof(uint32_t));
	for (int lv = 0; lv < TP_SPAN_NLEVELS; lv++)
		span[lv] = distinct(f, hosts, n, lv, tmp);
	if (tmp != small)
		tp_free(tmp);
}

static int size_desc(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	return a > b ? -1 : a < b;
}

/* Fewest units whose capacities add up to need: taking the biggest first
 * is exact for this (any k units hold at most the k biggest). 0 when even
 * all of them fall short. Capacities are usually small (hosts, GPUs of a
 * host), so a histogram replaces the sort: this runs twice per placement
 * and must not cost more than the decision on a 16k-host fabric. hist
 * (NULL: sort instead) has room for every capacity, all zero, and is left
 * so. */
static size_t fewest(size_t *cap, size_t n, size_t need, size_t *hist)
{
	size_t sum = 0, max = 0, k = 0;

	if (hist) {
		for (size_t i = 0; i < n; i++) {
			hist[cap[i]]++;
			if (cap[i] > max)
				max = cap[i];
		}
		for (size_t c = max; c > 0 && sum < need; c--)
			for (size_t j = 0; j < hist[c] && sum < need; j++) {
				sum += c;
				k++;
			}
		for (size_t i = 0; i < n; i++)
			hist[cap[i]] = 0;
		return sum >= need ? k : 0;
	}
	tp_sort(cap, n, sizeof(*cap), size_desc);
	for (size_t i = 0; i < n && cap[i]; i++) {
		sum += cap[i];
		if (sum >= need)
			return i + 1;
	}
	return 0;
}

/* Minimum spans on the empty fabric (span0, may be NULL) and on the free
 * state s (spans, s may be NULL: then the empty fabric too) in one pass
 * over the hosts: every placement needs both, and the pass is most of
 * their cost. One allocation for all the counts. */
void tp__span_min2(const tp_fabric_t *f, const tp_state_t *s,
		   const tp_request_t *r, const int *offers,
		   size_t span[TP_SPAN_NLEVELS], size_t span0[TP_SPAN_NLEVELS])
{
	tp__policy_in_t in = {.f = f, .s = s, .r = r};
	size_t nh, need, nc = span0 ? 2 : 1, ncap = 0, at = 0, hmax = 0;
	size_t *cap[2][TP_SPAN_NLEVELS] = {{NULL}}, *block, *hist = NULL;
	uint32_t nu[TP_SPAN_NLEVELS];

	memset(span, 0, TP_SPAN_NLEVELS * sizeof(size_t));
	if (span0)
		memset(span0, 0, TP_SPAN_NLEVELS * sizeof(size_t));
	if (!f || !r || (s && tp_state_fabric(s) != f))
		return;
	/* the same normalisation as tp_place_run */
	if (r->nodes > 0) {
		in.nhosts = (size_t)r->nodes;
		in.gpus_per_host = r->gpus_per_node;
		need = in.nhosts;
	} else if (r->gpus > 0) {
		in.total_gpus = r->gpus;
		need = (size_t)r->gpus;
	} else {
		return;
	}
	in.exclusive = r->exclusive;
	tp__policy_in_t empty = in;
	empty.s = NULL;
	nh = tp_fabric_nhosts(f);
	if (!nh)
		return;
	for (int lv = 0; lv < TP_SPAN_NLEVELS; lv++) {
		unit_of(f, 0, lv, &nu[lv]);
		ncap += nc * (nu[lv] + 1);
	}
	if (!(block = tp_calloc(ncap, sizeof(size_t))))
		return;
	for (int lv = 0; lv < TP_SPAN_NLEVELS; lv++)
		for (size_t k = 0; k < nc; k++, at += nu[lv] + 1)
			cap[k][lv] = block + at;
	for (uint32_t h = 0; h < nh; h++) {
		const tp_host_t *hp = tp_fabric_host(f, h);
		/* unit_of() inlined by hand: this loop is the hot part */
		uint32_t u[TP_SPAN_NLEVELS] = {
		    h,
		    hp->nvdomain < nu[TP_SPAN_NVDOMAINS]
			? hp->nvdomain
			: nu[TP_SPAN_NVDOMAINS] - 1,
		    hp->group[0] < nu[TP_SPAN_GROUPS] ? hp->group[0]
						      : nu[TP_SPAN_GROUPS] - 1,
		    hp->group[1] < nu[TP_SPAN_GROUPS] ? hp->group[1]
						      : nu[TP_SPAN_GROUPS] - 1};
		for (size_t k = 0; k < nc; k++) {
			int g = offers ? offers[k * nh + h]
				       : tp__host_offer(k ? &empty : &in, h);
			size_t c = in.nhosts ? 1 : (size_t)g;
			if (g <= 0)
				continue;
			for (int lv = 0; lv < TP_SPAN_NLEVELS; lv++)
				cap[k][lv][u[lv]] += c;
		}
	}
	for (size_t i = 0; i < ncap; i++)
		if (block[i] > hmax)
			hmax = block[i];
	/* a histogram for every level's count (the sort without memory or
	 * past 65536) */
	if (hmax <= 65536)
		hist = tp_calloc(hmax + 1, sizeof(size_t));
	for (int lv = 0; lv < TP_SPAN_NLEVELS; lv++) {
		span[lv] = fewest(cap[0][lv], nu[lv], need, hist);
		if (span0)
			span0[lv] = fewest(cap[1][lv], nu[lv], need, hist);
	}
	tp_free(hist);
	tp_free(block);
}

void tp_span_min(const tp_fabric_t *f, const tp_state_t *s,
		 const tp_request_t *r, size_t span[TP_SPAN_NLEVELS])
{
	tp__span_min2(f, s, r, NULL, span, NULL);
}

typedef struct ring_item {
	uint32_t key[TP_MAX_LEVELS + 1]; /* top group first, then nvdomain */
	uint32_t host;
	int gpus;
} ring_item_t;

static int ring_cmp(const void *x, const void *y)
{
	const ring_item_t *a = x, *b = y;

	for (int i = 0; i <= TP_MAX_LEVELS; i++)
		if (a->key[i] != b->key[i])
			return a->key[i] < b->key[i] ? -1 : 1;
	return a->host < b->host ? -1 : a->host > b->host;
}

void tp_ring_order(const tp_fabric_t *f, uint32_t *hosts, int *gpus, size_t n)
{
	ring_item_t small[SMALL_RING], *v = small;

	if (!f || !hosts || n < 2)
		return;
	/* Without memory the order stays as given: still a valid ring, only
	 * one that may cross group boundaries more often. */
	if (n > SMALL_RING && !(v = tp_malloc(n * sizeof(*v))))
		return;
	for (size_t i = 0; i < n; i++) {
		const tp_host_t *hp = tp_fabric_host(f, hosts[i]);
		/* TP_ID_NONE sorts last: hosts outside groups close the ring */
		for (int l = 0; l < TP_MAX_LEVELS; l++)
			v[i].key[l] = hp->group[TP_MAX_LEVELS - 1 - l];
		v[i].key[TP_MAX_LEVELS] = hp->nvdomain;
		v[i].host = hosts[i];
		v[i].gpus = gpus ? gpus[i] : 0;
	}
	tp_sort(v, n, sizeof(*v), ring_cmp);
	for (size_t i = 0; i < n; i++) {
		hosts[i] = v[i].host;
		if (gpus)
			gpus[i] = v[i].gpus;
	}
	if (v != small)
		tp_free(v);
}
