/*
 * Request text ("nodes=4,gpus-per-node=8,exclusive,bytes=256M") and
 * collective algorithm names.
 *
 * The request grammar mirrors Slurm's options (-N, --gpus-per-node,
 * --gpus, --exclusive) so that a job script translates token by token.
 * Every error names the token it is about: the text usually comes from a
 * command line or a job comment, where "invalid request" alone would send
 * the user hunting.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "placement_int.h"

/* Bounds well above any real cluster, low enough that products of them
 * (nodes x GPUs per node) fit in an int. */
#define MAX_NODES	  1000000
#define MAX_GPUS_PER_NODE 1024
#define MAX_GPUS	  16777216

static bool parse_int(const char *s, long lo, long hi, int *v_p)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*v_p = (int)v;
	return true;
}

double tp_request_bytes(const tp_request_t *r)
{
	return r->bytes > 0 ? r->bytes : TP__DEFAULT_BYTES;
}

tp_err_t tp_request_parse(const char *text, tp_request_t *r, char **err_p)
{
	tp_request_t q = {0};
	bool seen_excl = false, seen_shared = false, seen_bytes = false;
	bool seen_nodes = false, seen_gpn = false, seen_gpus = false;
	char *buf, *t, *tok, *save = NULL;
	tp_err_t err = TP_OK;

	if (err_p)
		*err_p = NULL;
	if (!text || !r)
		return TP_ERR_INVAL;
	if (!(buf = tp_strdup(text)))
		return TP_ERR_NOMEM;
	t = tp_strtrim(buf);
	if (!*t) {
		err = tp_fail(err_p, TP_ERR_PARSE,
			      "empty request: give nodes=N or gpus=T");
		goto out;
	}
	/* strtok would merge ",," silently; an empty item is a typo */
	if (t[0] == ',' || t[strlen(t) - 1] == ',' || strstr(t, ",,")) {
		err = tp_fail(err_p, TP_ERR_PARSE, "\"%s\": empty item", t);
		goto out;
	}
	for (char *p = t;; p = NULL) {
		const char *val;
		char *eq;
		bool *seen;

		tok = strtok_r(p, ",", &save);
		if (!tok)
			break;
		tok = tp_strtrim(tok);
		if (!*tok) {
			err = tp_fail(err_p, TP_ERR_PARSE, "empty item");
			goto out;
		}
		eq = strchr(tok, '=');
		val = eq ? tp_strtrim(eq + 1) : NULL;
		if (eq) {
			*eq = '\0';
			tp_strtrim(tok);
		}
		if (!strcmp(tok, "nodes"))
			seen = &seen_nodes;
		else if (!strcmp(tok, "gpus-per-node"))
			seen = &seen_gpn;
		else if (!strcmp(tok, "gpus"))
			seen = &seen_gpus;
		else if (!strcmp(tok, "bytes"))
			seen = &seen_bytes;
		else if (!strcmp(tok, "exclusive"))
			seen = &seen_excl;
		else if (!strcmp(tok, "shared"))
			seen = &seen_shared;
		else {
			err =
			    tp_fail(err_p, TP_ERR_PARSE,
				    "\"%s\": unknown item (expected nodes=, "
				    "gpus-per-node=, gpus=, bytes=, exclusive "
				    "or shared)",
				    tok);
			goto out;
		}
		if (*seen) {
			err = tp_fail(err_p, TP_ERR_PARSE, "\"%s\" given twice",
				      tok);
			goto out;
		}
		*seen = true;
		if (seen == &seen_excl || seen == &seen_shared) {
			if (val) {
				err = tp_fail(err_p, TP_ERR_PARSE,
					      "\"%s=%s\": %s takes no value",
					      tok, val, tok);
				goto out;
			}
			q.exclusive = seen == &seen_excl;
			continue;
		}
		if (!val || !*val) {
			err = tp_fail(err_p, TP_ERR_PARSE,
				      "\"%s\": expected %s=VALUE", tok, tok);
			goto out;
		}
		if (seen == &seen_nodes &&
		    !parse_int(val, 1, MAX_NODES, &q.nodes))
			err = tp_fail(err_p, TP_ERR_RANGE,
				      "\"nodes=%s\": expected a whole number "
				      "1..%d",
				      val, MAX_NODES);
		else if (seen == &seen_gpn &&
			 !parse_int(val, 1, MAX_GPUS_PER_NODE,
				    &q.gpus_per_node))
			err = tp_fail(err_p, TP_ERR_RANGE,
				      "\"gpus-per-node=%s\": expected a whole "
				      "number 1..%d",
				      val, MAX_GPUS_PER_NODE);
		else if (seen == &seen_gpus &&
			 !parse_int(val, 1, MAX_GPUS, &q.gpus))
			err = tp_fail(
			    err_p, TP_ERR_RANGE,
			    "\"gpus=%s\": expected a whole number 1..%d", val,
			    MAX_GPUS);
		else if (seen == &seen_bytes &&
			 !tp_parse_bytes(val, 1, TP_BYTES_MAX, &q.bytes))
			err = tp_fail(err_p, TP_ERR_RANGE,
				      "\"bytes=%s\": expected a size such as "
				      "4096, 256M or 1G (binary units, 1 B .. "
				      "1 PiB)",
				      val);
		if (err)
			goto out;
	}
	if (seen_excl && seen_shared) {
		err = tp_fail(
		    err_p, TP_ERR_PARSE,
		    "\"exclusive\" and \"shared\" contradict each other");
		goto out;
	}
	/* Slurm derives the missing one of -N / --gpus-per-node / --gpus
	 * from the other two; so do we, when it divides evenly */
	if (q.gpus && q.gpus_per_node && !q.nodes) {
		if (q.gpus % q.gpus_per_node) {
			err = tp_fail(err_p, TP_ERR_RANGE,
				      "\"gpus=%d\" is not a multiple of "
				      "\"gpus-per-node=%d\"",
				      q.gpus, q.gpus_per_node);
			goto out;
		}
		q.nodes = q.gpus / q.gpus_per_node;
	} else if (q.gpus && q.nodes && !q.gpus_per_node) {
		if (q.gpus % q.nodes) {
			err = tp_fail(err_p, TP_ERR_RANGE,
				      "\"gpus=%d\" does not split evenly over "
				      "\"nodes=%d\"",
				      q.gpus, q.nodes);
			goto out;
		}
		q.gpus_per_node = q.gpus / q.nodes;
	} else if (q.gpus && q.nodes &&
		   (long)q.nodes * q.gpus_per_node != q.gpus) {
		err = tp_fail(err_p, TP_ERR_RANGE,
			      "\"gpus=%d\" is not nodes x gpus-per-node (%d x "
			      "%d)",
			      q.gpus, q.nodes, q.gpus_per_node);
		goto out;
	}
	if (!q.nodes && !q.gpus) {
		err =
		    tp_fail(err_p, TP_ERR_PARSE,
			    seen_gpn ? "\"gpus-per-node\" needs nodes= or gpus="
				     : "request needs nodes=N or gpus=T");
		goto out;
	}
	if ((long)q.nodes * q.gpus_per_node > MAX_GPUS) {
		err = tp_fail(err_p, TP_ERR_RANGE,
			      "nodes=%d x gpus-per-node=%d: more than %d GPUs",
			      q.nodes, q.gpus_per_node, MAX_GPUS);
		goto out;
	}
	if (q.nodes && q.gpus_per_node)
		q.gpus = q.nodes * q.gpus_per_node;
	*r = q;
out:
	tp_free(buf);
	return err;
}

static const char *const algo_names[] = {
    [TP_ALGO_RING] = "ring",
    [TP_ALGO_HIERARCHICAL] = "hierarchical",
    [TP_ALGO_TREE] = "tree",
    [TP_ALGO_REDUCE_SCATTER] = "reduce-scatter",
    [TP_ALGO_ALL_GATHER] = "all-gather",
};

#define NALGOS (sizeof(algo_names) / sizeof(algo_names[0]))

const char *tp_algo_name(tp_algo_t a)
{
	if ((unsigned)a >= NALGOS)
		return "unknown";
	return algo_names[a];
}

tp_err_t tp_algo_parse(const char *s, tp_algo_t *a_p)
{
	if (!s || !a_p)
		return TP_ERR_INVAL;
	for (size_t i = 0; i < NALGOS; i++)
		if (!strcmp(s, algo_names[i])) {
			*a_p = (tp_algo_t)i;
			return TP_OK;
		}
	return TP_ERR_NOTFOUND;
}
