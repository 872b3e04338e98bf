/*
 * The decision writer's queue (tp_plugin.h): a ring of records that may
 * drop its oldest, and the ends of held jobs, which it may not.
 *
 * Notes: why the ends stay bounded. A job becomes held when the writer
 * takes its record with track set, and stops being held when the writer
 * takes its end. Ends are taken before any record, so when a record is
 * taken no end is waiting: every held job is one whose end has not been
 * queued yet, i.e. one the plugin still counts as running (RUNNING_MAX).
 * An end is kept only for a held job and only once, so the ends never
 * outnumber held_max. A job ended while its record waits is never held:
 * tp_wqueue_end clears that record's track flag instead.
 */
#include "config.h"

#include <string.h>

#include "tp_plugin.h"

struct tp_wqueue {
	size_t cap, head, len;
	uint32_t *job; /* per slot: the record's job */
	bool *track;   /* per slot: its traffic joins when taken */
	size_t held_max, nheld, nends;
	uint32_t *held; /* jobs whose traffic the writer holds */
	uint32_t *ends; /* held jobs ended, for the writer */
	size_t dropped;
};

tp_wqueue_t *tp_wqueue_create(size_t cap, size_t held_max)
{
	tp_wqueue_t *q;

	if (!cap || !held_max || !(q = tp_calloc(1, sizeof(*q))))
		return NULL;
	q->cap = cap;
	q->held_max = held_max;
	q->job = tp_calloc(cap, sizeof(*q->job));
	q->track = tp_calloc(cap, sizeof(*q->track));
	q->held = tp_calloc(held_max, sizeof(*q->held));
	q->ends = tp_calloc(held_max, sizeof(*q->ends));
	if (!q->job || !q->track || !q->held || !q->ends) {
		tp_wqueue_destroy(q);
		return NULL;
	}
	return q;
}

void tp_wqueue_destroy(tp_wqueue_t *q)
{
	if (!q)
		return;
	tp_free(q->job);
	tp_free(q->track);
	tp_free(q->held);
	tp_free(q->ends);
	tp_free(q);
}

size_t tp_wqueue_push(tp_wqueue_t *q, uint32_t job_id, bool track,
		      bool *dropped_p)
{
	size_t slot;

	*dropped_p = q->len == q->cap;
	if (*dropped_p) {
		q->head = (q->head + 1) % q->cap;
		q->len--;
		q->dropped++;
	}
	slot = (q->head + q->len) % q->cap;
	q->job[slot] = job_id;
	q->track[slot] = track;
	q->len++;
	return slot;
}

static bool has(const uint32_t *ids, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

void tp_wqueue_end(tp_wqueue_t *q, uint32_t job_id)
{
	for (size_t k = 0; k < q->len; k++) {
		size_t slot = (q->head + k) % q->cap;

		if (q->job[slot] == job_id)
			q->track[slot] = false;
	}
	/* ends are a subset of held: room for one more */
	if (has(q->held, q->nheld, job_id) && !has(q->ends, q->nends, job_id))
		q->ends[q->nends++] = job_id;
}

tp_wqueue_item_t tp_wqueue_next(tp_wqueue_t *q, uint32_t *job_id_p,
				size_t *slot_p, bool *track_p)
{
	if (q->nends) {
		uint32_t id = q->ends[0];

		memmove(q->ends, q->ends + 1, --q->nends * sizeof(*q->ends));
		for (size_t i = 0; i < q->nheld; i++)
			if (q->held[i] == id) {
				q->held[i] = q->held[--q->nheld];
				break;
			}
		*job_id_p = id;
		return TP_WQUEUE_END;
	}
	if (!q->len)
		return TP_WQUEUE_EMPTY;
	*slot_p = q->head;
	*job_id_p = q->job[q->head];
	*track_p = q->track[q->head];
	q->head = (q->head + 1) % q->cap;
	q->len--;
	if (*track_p && !has(q->held, q->nheld, *job_id_p)) {
		if (q->nheld < q->held_max)
			q->held[q->nheld++] = *job_id_p;
		else
			*track_p = false; /* its end could not be kept */
	}
	return TP_WQUEUE_RECORD;
}

size_t tp_wqueue_len(const tp_wqueue_t *q)
{
	return q->len + q->nends;
}

size_t tp_wqueue_take_dropped(tp_wqueue_t *q)
{
	size_t n = q->dropped;

	q->dropped = 0;
	return n;
}

void tp_wqueue_forget(tp_wqueue_t *q)
{
	q->nheld = q->nends = 0;
}
