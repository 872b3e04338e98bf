/*
 * tp_health.h - link health from the fabric's own reports: port state,
 * active width and speed, and the Performance Management (PMA) counters of
 * both ends of every link, turned into a health in [0, 1] per link with a
 * reason a person can read, plus the two files the monitor writes (the
 * topoplace-state/1 `links` the placement reads, a Prometheus textfile).
 *
 * Pieces:
 *   tp_health_eval()      pure rules: two sweeps of one link -> health
 *   tp_health_sweep_*()   one sweep of a fabric through libibmad: PortInfo
 *                         (state, width, speed) and PMA PortCounters +
 *                         PortCountersExtended of every link end, by LIDs
 *                         one libibnetdisc discovery learnt at creation
 *   tp_health_state_json(), tp_health_prom_text()   the monitor's outputs
 *
 * The rules (tp_health_eval), in order; health is the product of what
 * fires, the reason lists each rule that fired ("ok" when none did):
 *  1. Down: either end not found by the sweep while the other end's node
 *     was, or an end's port not up (logical state Down or physical state
 *     not LinkUp) -> health 0, reason "down".
 * 1b. Not answering: an end's node not answering in this sweep and the
 *     previous one while the other end's port is up (the cable trains but
 *     drops what crosses it, or the far node hangs) -> health x0.5, reason
 *     "b end up but not answering". One missed sweep is no alarm: a query
 *     lost on a busy fabric (or machine) is not a fault.
 * 1c. Neither end answering in this sweep and the previous one, both
 *     ends on the monitor's subnet (tp_health_port_t.known: a dead leaf
 *     switch and the hosts behind it) -> health 0, reason "down (neither
 *     end answering)". Ends no walk found (another subnet's link) are
 *     "not reachable" and keep what the state file said.
 *  2. Width / speed: active Gb/s (lanes x lane rate) of the slower end
 *     below the model's (cabled) Gb/s -> health x active / cabled,
 *     reason "running 2x/4x lanes" or "running 100/200 Gb/s". An end
 *     whose active width or lane rate is unknown (0: a code the tables
 *     lack, XDR say) is left out; unknown at both ends, like a model
 *     rate unknown, is no rate to judge.
 *  3. Errors: per counter below, the delta since the previous sweep of
 *     both ends together. A counter fires when its delta is over
 *     max(min_count, per_min x interval / 60): the threshold is a rate,
 *     but a short interval needs at least min_count errors so that a lone
 *     error in a 1 s sweep is no alarm. A counter that fired degrades the
 *     link by its level: over 1x the threshold -> x0.75, over 10x ->
 *     x0.5, over 100x -> x0.25; the worst counter sets the factor.
 *     LinkDownedCounter moving at all (min_count 0, per_min 0) is a flap:
 *     x0.5 (x0.25 past 10 flaps). Reason: "symbol_errors +42 (> 10)".
 *  4. Counter reset or wrap: a counter lower than in the previous sweep
 *     was reset (perfquery -R, a port reset): its delta is the new value.
 *     A 64-bit data counter that was within 2^62 of its end wrapped: the
 *     delta counts through 2^64. A counter at its maximum (the basic
 *     counters saturate) gives max - previous and the reason says
 *     "saturated"; one at its maximum in both sweeps counts nothing more
 *     and keeps an alarm at x0.75 ("symbol_errors saturated, not
 *     counting") until it is cleared, unless it was at its maximum since
 *     the monitor's first sweep (prev's sat_old; a sweep that read no
 *     counters from the port keeps it, tp_health_saturated_since). A data
 *     counter read 64-bit in one sweep and 32-bit in the other
 *     (PortCountersExtended lost once) gives no delta.
 *  5. Utilisation (never lowers health): PortXmitData per direction (in
 *     4-byte words, PortCountersExtended where the port answers it, else
 *     the 32-bit PortCounters field) x 32 bits / interval / cabled Gb/s;
 *     unknown (NaN) on a first sweep or a one-shot check, for a link of
 *     unknown rate, and when an end's counters were not read in both
 *     sweeps, were read at two widths, or the 32-bit one is at its
 *     maximum (it saturates: 1.4 s at 100 Gb/s after a clear).
 * The first sweep has no previous one: only rules 1 and 2 apply. A
 * one-shot check passes all-zero previous counters and interval 0: the
 * counters are then totals since their last reset (what ibqueryerrors
 * reads), held against min_count alone (LinkDownedCounter against more
 * than 10: a far host's every reboot adds one; levelled as other
 * counters, not as flaps), worded "symbol_errors =42 (> 10)", and
 * utilisation is unknown.
 *
 * Errors: tp_err_t; the sweep's detail string is tp_health_sweep_error().
 * Ownership: results are caller-owned arrays; strings returned through
 * *_p pointers are freed with tp_free(). Thread safety: the pure functions
 * are; a sweep handle is used by one thread at a time. The library never
 * prints: sweep warnings go to the log sink.
 */
#ifndef TP_HEALTH_H
#define TP_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tp_common.h"
#include "tp_topology.h"

/* The counters kept per port: X(id, name, bits, per_min, min_count).
 * name is the Prometheus / JSON name; bits the width of the basic
 * PortCounters field (64: PortCountersExtended); per_min and min_count the
 * default error threshold (rule 3), 0/0 for the data counters, which are
 * not errors. Defaults follow ibqueryerrors' (10 per counter) for the
 * physical errors; discards are congestion as much as faults, so they get
 * 100 per minute. */
#define TP_HEALTH_COUNTERS(X)                                                  \
	X(SYMBOL_ERR, "symbol_errors", 16, 10, 10)                             \
	X(LINK_RECOVER, "link_error_recoveries", 8, 1, 2)                      \
	X(LINK_DOWNED, "link_downed", 8, 0, 0)                                 \
	X(RCV_ERR, "rcv_errors", 16, 10, 10)                                   \
	X(RCV_REMOTE_PHYS, "rcv_remote_phys_errors", 16, 10, 10)               \
	X(RCV_SWITCH_RELAY, "rcv_switch_relay_errors", 16, 100, 100)           \
	X(XMIT_DISCARDS, "xmit_discards", 16, 100, 100)                        \
	X(XMIT_CONSTRAINT, "xmit_constraint_errors", 8, 10, 10)                \
	X(RCV_CONSTRAINT, "rcv_constraint_errors", 8, 10, 10)                  \
	X(LOCAL_INTEGRITY, "local_link_integrity_errors", 4, 1, 2)             \
	X(BUF_OVERRUN, "excessive_buffer_overrun_errors", 4, 1, 2)             \
	X(VL15_DROPPED, "vl15_dropped", 16, 100, 100)                          \
	X(XMIT_DATA, "xmit_data_words", 64, 0, 0)                              \
	X(RCV_DATA, "rcv_data_words", 64, 0, 0)                                \
	X(XMIT_PKTS, "xmit_packets", 64, 0, 0)                                 \
	X(RCV_PKTS, "rcv_packets", 64, 0, 0)

typedef enum tp_health_counter {
#define TP_HEALTH_ENUM(id, name, bits, per_min, min_count) TP_HC_##id,
	TP_HEALTH_COUNTERS(TP_HEALTH_ENUM)
#undef TP_HEALTH_ENUM
	    TP_HC_N,
	/* The first counter that is data, not an error. */
	TP_HC_FIRST_DATA = TP_HC_XMIT_DATA,
} tp_health_counter_t;

/* Name ("symbol_errors"), NULL out of range. */
const char *tp_health_counter_name(tp_health_counter_t c);

/* Error thresholds (rule 3); tp_health_rules_default() fills the table's. */
typedef struct tp_health_rules {
	double per_min[TP_HC_N];
	uint64_t min_count[TP_HC_N];
} tp_health_rules_t;
void tp_health_rules_default(tp_health_rules_t *r);

/* What a sweep saw of one port. */
typedef struct tp_health_port {
	bool seen;	  /* the sweep found the node and this port */
	bool up;	  /* logical state not Down, physical LinkUp */
	int width;	  /* active lanes */
	double lane_gbps; /* active per-lane rate */
	bool counters;	  /* the PMA answered */
	bool wide_data;	  /* the data counters are the 64-bit extended ones */
	/* the node is on this monitor's subnet (a walk gave it a LID) and the
	 * sweep reached most such nodes: its silence is a fault, not
	 * another subnet's link (rule 1c) */
	bool known;
	/* basic counters (bit c) at their maximum since the monitor's first
	 * sweep: saturated before it, no news (tp_health_saturated_since) */
	uint32_t sat_old;
	uint64_t c[TP_HC_N];
} tp_health_port_t;

/* One link's verdict. delta sums both ends; util[d] is the share of the
 * cabled rate used in direction d (0: node[0] -> node[1]), NaN where the
 * sweep could make no count (rule 5). */
typedef struct tp_health_link {
	bool seen;	  /* false: neither end reachable (another subnet) */
	double health;	  /* [0, 1] */
	char reason[160]; /* "ok", "down", "running 2x/4x lanes; ..." */
	bool alarm;	  /* any of rules 1-3 fired */
	uint64_t delta[TP_HC_N];
	double util[2];
} tp_health_link_t;

/* Delta of a counter of the given width from prev to cur (rule 4);
 * *saturated_p (may be NULL) is set when cur is at the counter's maximum. */
uint64_t tp_health_counter_delta(uint64_t prev, uint64_t cur, int bits,
				 bool *saturated_p);

/* Rules 1-5 for one link of the model. cur[0], cur[1]: its node[0] and
 * node[1] ends now; prev: the same a sweep earlier, or NULL (first sweep);
 * interval_s > 0 the time between them. node_seen[e] tells whether the
 * sweep found end e's node at all (rule 1 needs it to tell "down" from
 * "another subnet"). interval_s 0: see the one-shot note above. Pure; r
 * NULL means the defaults. */
void tp_health_eval(const tp_health_rules_t *r, const tp_link_t *link,
		    const tp_health_port_t prev[2],
		    const tp_health_port_t cur[2], const bool node_seen[2],
		    double interval_s, tp_health_link_t *out);

/* ---- topology diff ------------------------------------------------------ */

/* What became of one model link in a live fabric (tp_health_diff). */
typedef enum tp_health_change {
	TP_HEALTH_PRESENT = 0, /* the same two ports are cabled together */
	TP_HEALTH_GONE = 1,    /* not cabled, while an end's node is there
				* and so is a switch of the link's subnet */
	TP_HEALTH_MOVED = 2,   /* the CA end's port is cabled elsewhere */
	TP_HEALTH_UNSEEN = 3,  /* neither end's node in the live fabric, or
				* none of the model's switches of its subnet
				* (not discovered: another subnet, a dual-port
				* HCA's other rail, or a walk that never
				* reached it) */
	TP_HEALTH_RATE = 4,    /* the same two ports, but another width or
				* lane rate than the model's (a cable or port
				* trained down, a new HCA generation) */
} tp_health_change_t;

/* A model against a live fabric, both finalized; links are matched by
 * the GUID and port of both ends, so names and link order do not matter.
 * link[l] is model link l's fate; to[l] the live link a MOVED or RATE
 * link now is (SIZE_MAX otherwise); fresh[] the live links no model link
 * matches or moved to (new cables, new nodes, rewired switches). A host
 * cabled to another port or switch is MOVED, not GONE plus new. A link
 * in place is RATE when its width or lane rate differs from the model's,
 * each compared only where both sides know it (width 0, lane_gbps 0:
 * unknown, as "??" and "???" in a dump). */
typedef struct tp_health_diff {
	size_t nlinks; /* model links */
	tp_health_change_t *link;
	size_t *to;
	size_t *fresh; /* live link indices, ascending */
	size_t nfresh;
	size_t ngone, nmoved, nunseen, nrate;
} tp_health_diff_t;

/* Fill *d (caller frees with tp_health_diff_free). TP_ERR_MISMATCH
 * (*d left empty) when none of the model's switches and CAs is in live:
 * a model of another fabric, not one whose links are all unseen.
 * TP_ERR_NOMEM. Pure. */
tp_err_t tp_health_diff(const tp_fabric_t *model, const tp_fabric_t *live,
			tp_health_diff_t *d);
void tp_health_diff_free(tp_health_diff_t *d);
/* Anything to report: a link gone, moved or at another rate, a fresh
 * one. */
bool tp_health_diff_changed(const tp_health_diff_t *d);

/* The report, JSON ({"format":"topoplace-diff/1","changed","gone":[..],
 * "back":[..],"moved":[..],"new":[..],"rate":[..],"unseen":N}; gone/back
 * entries {"link","a","b"}, moved {"link","host","from","to"}, new
 * {"a","b"}, rate {"link","a","b","from","to","from_gbps","to_gbps"} with
 * from/to the model's and the live rate as "4x EDR" ("??x", "???" for
 * what is unknown) and *_gbps their width x lane rate (0: unknown); ends
 * as "desc:port") or text (one line per change, "" when none). prev (may
 * be NULL) is the previous diff against the same model: links it had GONE
 * or MOVED that are PRESENT or RATE in d are "back" (a RATE one also in
 * "rate"). */
tp_err_t tp_health_diff_json(const tp_fabric_t *model, const tp_fabric_t *live,
			     const tp_health_diff_t *d,
			     const tp_health_diff_t *prev, char **json_p);
tp_err_t tp_health_diff_text(const tp_fabric_t *model, const tp_fabric_t *live,
			     const tp_health_diff_t *d,
			     const tp_health_diff_t *prev, char **text_p);

/* Applies d to a sweep's verdicts (a RATE link is left to the sweep's
 * own rate rule, which prices it): a GONE or MOVED link gets health 0,
 * an alarm and the reason "gone (re-discovery)" or "host moved to
 * DESC:PORT; regenerate the fabric" - unless it is GONE and the sweep saw
 * both its ends up (the diff is older than the sweep; *stale_p, may be
 * NULL, is then set). A MOVED link's ends stay up when hosts swap ports,
 * so a move holds until a walk finds the host back. links has one entry
 * per model link. */
void tp_health_diff_apply(const tp_fabric_t *model, const tp_fabric_t *live,
			  const tp_health_diff_t *d,
			  const tp_health_port_t *ports,
			  tp_health_link_t *links, bool *stale_p);

/* An end "up but not answering" (its node silent at its LID while the
 * other end's port is up; rule 1b from the second sweep) may only have a
 * new LID (a subnet manager restarted without its cache, a standby taken
 * over). What a sweep does at the misses-th such sweep in a row, as flags:
 * TP_HEALTH_SILENT_RELID every TP_HEALTH_RELID_MISSES sweeps: ask the node
 * its LID by directed route, and at a new one take it and ask again at
 * once (so a changed LID costs TP_HEALTH_RELID_MISSES sweeps and no
 * alarm); TP_HEALTH_SILENT_WALK at 1, 2, 4, 8 ... x TP_HEALTH_WALK_MISSES
 * sweeps: walk the fabric (the LID right but not routed, or the walk's
 * path stale), backing off for a host that hangs for good. Pure. */
enum {
	TP_HEALTH_RELID_MISSES = 2,
	TP_HEALTH_WALK_MISSES = 8,
	TP_HEALTH_SILENT_RELID = 1,
	TP_HEALTH_SILENT_WALK = 2,
};
unsigned tp_health_silent_action(unsigned misses);

/* What a silent end's node answered by directed route along the last
 * walk's path, as the sweep reads it: guid the end's node in the model,
 * answer_guid the GUID in the NodeInfo that came back, lid the LID the
 * sweep asks it at, new_lid the LID in its PortInfo by that path (not
 * asked, 0, when the GUID differs). The GUID is judged first: a LID from
 * another node (a host moved, a cable changed) is never taken. Pure. */
typedef enum tp_health_relid {
	TP_HEALTH_RELID_OTHER_NODE, /* another node answers: the path is
				     * stale, a walk is wanted */
	TP_HEALTH_RELID_NO_LID,	    /* no LID yet (port Init, the subnet
				     * manager has not swept it) */
	TP_HEALTH_RELID_SAME,	    /* the same LID: not routed (yet) */
	TP_HEALTH_RELID_NEW,	    /* a new LID: take it */
} tp_health_relid_t;
tp_health_relid_t tp_health_relid_verdict(uint64_t guid, uint64_t answer_guid,
					  unsigned lid, unsigned new_lid);

/* ---- sweeps (libibmad; TP_ERR_UNSUPPORTED when built without it) ------- */

typedef struct tp_health_sweep tp_health_sweep_t;

/* Discover the fabric once through the local port (ca NULL: the default,
 * port 0: the first active) to learn LIDs, then open that port for the
 * sweeps. TP_ERR_IO when discovery fails or no port has a LID (no subnet
 * manager). *s_p set only on success; on failure *err_p (may be NULL)
 * receives a one-line reason to free with tp_free(). Close with
 * tp_health_sweep_destroy() (NULL is a no-op). */
tp_err_t tp_health_sweep_create(const tp_fabric_t *f, const char *ca, int port,
				tp_health_sweep_t **s_p, char **err_p);
void tp_health_sweep_destroy(tp_health_sweep_t *s);
/* One sweep: PortInfo and PMA of both ends of every model link whose node
 * had a LID at creation. ports[2 * l + e] receives end e of link l;
 * node_seen likewise (both arrays 2 * tp_fabric_nlinks(f) long): false
 * when the node does not answer its PortInfo (or had no LID). A port whose
 * PMA does not answer has counters false (a warning is logged once per
 * sweep with the count). */
tp_err_t tp_health_sweep_run(tp_health_sweep_t *s, tp_health_port_t *ports,
			     bool *node_seen);
/* tp_health_sweep_run in its two passes, for a caller that acts on a
 * link's state before the counters are in (about a third of a sweep's
 * queries): _states fills every end's seen, up, width and lane rate
 * (counters false), _counters then adds the PMA counters of each end
 * node_seen marks. An end whose link's a end answered with its port down
 * is not queried (node_seen false: rule 1 already says down, and its node
 * would mostly wait out the MAD timeouts). */
tp_err_t tp_health_sweep_states(tp_health_sweep_t *s, tp_health_port_t *ports,
				bool *node_seen);
tp_err_t tp_health_sweep_counters(tp_health_sweep_t *s, tp_health_port_t *ports,
				  const bool *node_seen);
/* The fabric the last discovery (creation or tp_health_sweep_rediscover)
 * walked, finalized; borrowed, valid until the next rediscovery or
 * destroy. */
const tp_fabric_t *tp_health_sweep_live(const tp_health_sweep_t *s);
/* The cheap check: PortInfo of every port of every model switch with a
 * LID; *changed_p is true when the set of ports up differs from the one
 * right after the last discovery, or when that discovery found a model
 * node without a LID yet (a subnet manager still at work). One SMP per
 * switch port, no directed-route walk. */
tp_err_t tp_health_sweep_changed(tp_health_sweep_t *s, bool *changed_p);
/* True when an end "up but not answering" reached a walk in
 * tp_health_silent_action(): a walk (below) is due whatever the cheap
 * check says. Cleared by tp_health_sweep_rediscover(). */
bool tp_health_sweep_walk_wanted(const tp_health_sweep_t *s);
/* Walk the fabric again through the creation's CA and port: LIDs are
 * learnt anew (a node unreachable before is swept from now on) and
 * tp_health_sweep_live() is replaced. The MAD port is closed during the
 * walk (libumad2sim crashes when one process closes one of two open
 * ports). On failure the previous LIDs and live fabric are kept. Every
 * MAD agent the walk and the port registered is freed, also under
 * libumad2sim (ibsim), so walks in one process are not limited. A walk
 * costs a directed-route discovery: call it on tp_health_sweep_changed(). */
tp_err_t tp_health_sweep_rediscover(tp_health_sweep_t *s);
/* Detail of the last failure; borrowed. */
const char *tp_health_sweep_error(const tp_health_sweep_t *s);

/* ---- outputs ------------------------------------------------------------- */

/* topoplace-state/1 text: old (NULL or the text of the existing state
 * file) with its "links" array replaced by one entry {"link", "health",
 * "reason"} per link whose health is below 1 (a link the sweep did not
 * see keeps the entry old had for it) and its "links_digest" set to f's
 * (tp_fabric_links_digest_hex: a reader on another fabric refuses the
 * file); its other fields are kept. A
 * "reason" is ignored by the state loader. TP_ERR_PARSE when old is not a
 * JSON object, or is one the state loader refuses (text after it, a key
 * given twice at its top or in a "links" entry), TP_ERR_FORMAT when it
 * names another "format" than topoplace-state/1 (a fabric model, say: not
 * rewritten, whatever follows it); the caller names the file.
 * tp_health_state_check(old) answers the same question alone (TP_OK,
 * TP_ERR_PARSE, TP_ERR_FORMAT with the format found into *format_p when not
 * NULL, freed with tp_free), before any sweep. */
tp_err_t tp_health_state_check(const char *old, char **format_p);
/* old (a state file's text) carries a "links_digest" other than f's: it
 * was written for another fabric, and tp_health_state_json drops its
 * "links" entries (their numbers name other cables) instead of keeping
 * the unseen ones. */
bool tp_health_state_other_fabric(const char *old, const tp_fabric_t *f);

/* cur->sat_old from the previous sweep's end (prev; NULL at the first
 * sweep): the basic counters at their maximum now that were at it at the
 * first sweep and every sweep since. Rule 4 keeps no alarm for those. A
 * sweep that read no counters from the end (cur->counters false: link
 * down, node or PMA reply lost) keeps prev's bits; an end not read at the
 * first sweep takes its first reading as that sweep's. */
void tp_health_saturated_since(const tp_health_port_t *prev,
			       tp_health_port_t *cur);
tp_err_t tp_health_state_json(const char *old, const tp_fabric_t *f,
			      const tp_health_link_t *links, char **json_p);

/* Prometheus text exposition (node_exporter textfile collector): gauges
 * topoplace_link_health, topoplace_link_utilization{direction} and
 * counters' deltas topoplace_link_errors_delta{counter} for every seen link,
 * labelled link, a/b ends ("switch-desc:port"), plus
 * topoplace_health_sweep_seconds (sweep_s), the first pass's
 * topoplace_health_sweep_state_seconds (state_s: port states, after which
 * the monitor writes a changed link; omitted when negative) and
 * topoplace_health_last_sweep_timestamp_seconds.
 */
tp_err_t tp_health_prom_text(const tp_fabric_t *f,
			     const tp_health_link_t *links, double sweep_s,
			     double state_s, double now, char **text_p);

/* JSON of one sweep: {"links":[{"link","health","reason","a","b",
 * "utilization":[..],"deltas":{..}}...]} for every seen link. */
tp_err_t tp_health_links_json(const tp_fabric_t *f,
			      const tp_health_link_t *links, char **json_p);

#endif /* TP_HEALTH_H */
