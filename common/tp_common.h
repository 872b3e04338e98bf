/*
 * tp_common.h - errors, logging and memory: what libtopoplace-coll exports
 * and installs of this header (its first part, up to "the rest is
 * internal"); then the allocation, hash maps, host lists and file helpers
 * every topoplace module shares, which the build keeps to itself.
 *
 * Thread safety: tp_strerror() and the hash maps/host lists (per object) are
 * safe to use from several threads as long as one object is not modified by
 * two threads at once. tp_log_set() (and, internally, tp_alloc_set())
 * change process-wide state: call them once at start-up, before other
 * threads use the library.
 *
 * Nothing here prints, exits or aborts; allocation failure is reported as
 * TP_ERR_NOMEM.
 */
#ifndef TP_COMMON_H
#define TP_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ---------------------------------------------------------- */

/* One table, one enum, one strerror (X-macro). Values are negative. */
#define TP_ERROR_MAP(X)                                                        \
	X(NOMEM, -1, "out of memory")                                          \
	X(IO, -2, "I/O error")                                                 \
	X(PARSE, -3, "malformed input")                                        \
	X(INVAL, -4, "invalid argument")                                       \
	X(NOTFOUND, -5, "not found")                                           \
	X(UNSUPPORTED, -6, "not supported by this build")                      \
	X(FORMAT, -7, "unsupported format or version")                         \
	X(RANGE, -8, "value out of range")                                     \
	X(EXISTS, -9, "already exists")                                        \
	X(PEER_LOST, -10, "peer lost")                                         \
	X(TIMEOUT, -11, "timed out")                                           \
	X(MISMATCH, -12, "peers disagree")                                     \
	X(ADDRINUSE, -13, "address in use")                                    \
	X(CUDA, -14, "CUDA runtime error")                                     \
	X(NOTREG, -15, "not a regular file")

typedef enum tp_err {
	TP_OK = 0,
#define TP__ERR_ENUM(name, val, msg) TP_ERR_##name = (val),
	TP_ERROR_MAP(TP__ERR_ENUM)
#undef TP__ERR_ENUM
} tp_err_t;

/* Static description of an error code; never NULL. */
const char *tp_strerror(tp_err_t err);

/* ---- logging ---------------------------------------------------------- */

typedef enum tp_log_level {
	TP_LOG_ERROR = 0,
	TP_LOG_WARN = 1,
	TP_LOG_INFO = 2,
	TP_LOG_DEBUG = 3,
} tp_log_level_t;

/* Receives one formatted message without trailing newline. The string is
 * borrowed for the duration of the call. */
typedef void (*tp_log_fn_t)(tp_log_level_t level, const char *msg, void *arg);

/* Install the process-wide log sink; NULL discards all messages (default). */
void tp_log_set(tp_log_fn_t fn, void *arg);

/* ---- memory and sizes -------------------------------------------------- */

/* Free what the library allocated for the caller (strings, arrays, an
 * error's text). NULL is fine. */
void tp_free(void *p);

/* Parse a size in bytes: a decimal number that starts with a digit
 * ("4096", "1.5"; not ".5", " 1", "+1" or 0x10), with '.' as its decimal
 * point in every locale, and an exponent taken ("1e9", "1e3K": trace CSVs
 * carry them, and `topoplace trace` writes 1e+15); then an optional
 * binary unit K, M, G, T or P (powers of 1024, any case, an optional "i"
 * after: "2GiB"), then an optional B or b (bytes: "1Kb" is 1024), a whole
 * number of bytes in all (1.5G, not 0.4). True and *v_p set when the
 * value lies in lo..hi; false, *v_p untouched, otherwise. Callers word
 * the error: it names their option or token. */
bool tp_parse_bytes(const char *s, double lo, double hi, double *v_p);
/* The largest size a request (bytes=) or a command's --bytes takes: 1 PiB,
 * far beyond any one collective, still exact in a double. */
#define TP_BYTES_MAX 1125899906842624.0

/* ---- the rest is internal: libtopoplace-coll installs this header only
 * up to here (coll/Makefile.am), what it exports. -------------------- */

/* Internal: format and deliver one message to the sink. */
void tp__log(tp_log_level_t level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- allocation -------------------------------------------------------- */

/* Replaceable allocator (for tests that inject failures). tp_alloc_set
 * copies *alloc, whose four functions must all be set; tp_alloc_set(NULL)
 * restores libc's. Process-wide: call it before other threads use the
 * library, and free blocks with the allocator that made them. */
typedef struct tp_allocator {
	void *(*malloc_fn)(size_t size);
	void *(*calloc_fn)(size_t n, size_t size);
	void *(*realloc_fn)(void *p, size_t size);
	void (*free_fn)(void *p);
} tp_allocator_t;

void tp_alloc_set(const tp_allocator_t *alloc);
void *tp_malloc(size_t size);
void *tp_calloc(size_t n, size_t size);
void *tp_realloc(void *p, size_t size);
/* Grow *arr so it holds at least need elements of size elem; doubles the
 * capacity in *cap_p. Returns TP_ERR_NOMEM (also when need * elem bytes
 * would exceed PTRDIFF_MAX) or TP_ERR_INVAL (elem 0, need above *cap_p)
 * and leaves *arr and *cap_p intact on failure. */
tp_err_t tp_grow(void **arr, size_t *cap_p, size_t need, size_t elem);
/* Sort n elements of size bytes at base by cmp, stably (equal elements
 * keep their order, on every libc): an insertion sort without allocation
 * for the short arrays a placement decision sorts many times, a merge
 * sort above TP_SORT_SHORT elements. Never fails: without memory for the
 * merge it sorts by insertion (quadratic). NULL base or cmp: nothing. */
#define TP_SORT_SHORT 24
void tp_sort(void *base, size_t n, size_t size,
	     int (*cmp)(const void *, const void *));
/* Ascending order of two uint32_t, for tp_sort() and qsort(). */
int tp_u32_cmp(const void *x, const void *y);
char *tp_strdup(const char *s);
char *tp_strndup(const char *s, size_t n);
/* printf into a new string; caller frees with tp_free(). NULL on NOMEM. */
char *tp_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *tp_vasprintf(const char *fmt, va_list ap);
/* A reader's first error as "NAME: message" in *slot (caller frees with
 * tp_free): once one is there later ones are its consequences and are
 * dropped. Returns err, so `return tp_first_error(...)` reads as a fail. */
tp_err_t tp_first_error(char **slot, const char *name, tp_err_t err,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A library call's failure: when err_p is not NULL, *err_p becomes a new
 * one-line message (tp_oneline; NULL without memory; caller frees with
 * tp_free). Returns err, so `return tp_fail(...)` reads as a fail. */
tp_err_t tp_fail(char **err_p, tp_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- directories -------------------------------------------------------- */

/* Names of the entries in dir that end in ext after a non-empty stem,
 * sorted by strcmp, in *names_p (free with tp_names_free). Hidden
 * entries are skipped; others are listed whatever they are (a directory,
 * a device, a dangling link), so that the reader refuses them by name
 * instead of the file going missing unsaid. TP_ERR_NOTFOUND when dir does
 * not exist, TP_ERR_IO when it cannot be opened (errno says why),
 * TP_ERR_NOMEM. */
tp_err_t tp_list_dir(const char *dir, const char *ext, char ***names_p,
		     size_t *n_p);
void tp_names_free(char **names, size_t n);

/* ---- string buffer ------------------------------------------------------ */

/* Growable string. A failed append (out of memory, or a length size_t
 * cannot hold) sets failed and leaves buf untouched; check failed once at
 * the end. Free buf with tp_free(). */
typedef struct tp_strbuf {
	char *buf;
	size_t len;
	size_t cap;
	bool failed;
} tp_strbuf_t;

/* printf onto sb in the "C" locale (a '.' decimal point whatever
 * LC_NUMERIC the process set): it writes file formats. */
void tp_strbuf_printf(tp_strbuf_t *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tp_strbuf_append(tp_strbuf_t *sb, const char *s, size_t n);

/* ---- numbers in file formats ------------------------------------------- */

/* snprintf, vsnprintf and strtod as in the "C" locale, whatever LC_NUMERIC
 * the process set (de_DE's "0,5" is not a JSON number): for every number a
 * file format, JSON or a signature carries. The locale is switched for the
 * calling thread only, for the duration of the call; thread-safe. Same
 * returns and errno as the libc functions. */
int tp_snprintf_c(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int tp_vsnprintf_c(char *buf, size_t size, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
double tp_strtod_c(const char *s, char **end_p);
/* The shortest text of v that reads back as the same double, in the "C"
 * locale (%.0f for whole numbers below 1e15, else %.15g, else %.17g),
 * onto sb: a JSON number for every finite v (callers write NaN and Inf
 * as their formats say). */
void tp_strbuf_num(tp_strbuf_t *sb, double v);

/* ---- hash maps ---------------------------------------------------------- */

/* Open-addressing maps to uint32_t values. Keys of tp_strmap are borrowed:
 * they must outlive the map (the fabric keeps its strings). */
/* Key and value side by side: one cache miss per probe. */
typedef struct tp_u64map_slot {
	uint64_t key;
	uint32_t val; /* TP_MAP_NONE (UINT32_MAX) marks an empty slot */
} tp_u64map_slot_t;

typedef struct tp_u64map {
	tp_u64map_slot_t *slot; /* cap slots; iterate and skip empty ones */
	size_t cap;
	size_t len;
} tp_u64map_t;

typedef struct tp_strmap {
	const char **keys;
	uint32_t *vals;
	size_t cap;
	size_t len;
} tp_strmap_t;

#define TP_MAP_NONE UINT32_MAX

/* Map key to val, replacing the value of a key already there. val must
 * not be TP_MAP_NONE (the empty-slot mark, equal to TP_ID_NONE and
 * TP_PLAN_NONE): TP_ERR_INVAL, the map unchanged. TP_ERR_NOMEM when the
 * table cannot grow, the map unchanged. */
tp_err_t tp_u64map_put(tp_u64map_t *m, uint64_t key, uint32_t val);
/* Make room for n keys in all without rehashing on the way. TP_ERR_NOMEM
 * (the map unchanged) when the table cannot grow, or its size in bytes
 * would exceed PTRDIFF_MAX. */
tp_err_t tp_u64map_reserve(tp_u64map_t *m, size_t n);
/* The value of key, or TP_MAP_NONE when it is not in the map. */
uint32_t tp_u64map_get(const tp_u64map_t *m, uint64_t key);
/* Free the table; the map is empty and reusable after. */
void tp_u64map_clear(tp_u64map_t *m);
/* As tp_u64map_put, key borrowed (see above): TP_ERR_INVAL for val
 * TP_MAP_NONE or a NULL key, the map unchanged. */
tp_err_t tp_strmap_put(tp_strmap_t *m, const char *key, uint32_t val);
/* The value of key, or TP_MAP_NONE when it is not in the map (a NULL key
 * is in none). */
uint32_t tp_strmap_get(const tp_strmap_t *m, const char *key);
void tp_strmap_clear(tp_strmap_t *m);
/* 64-bit FNV-1a of the string s (NULL hashes as ""): the same on every
 * host and build, so it may go on the wire or into a file. Not a defence
 * against chosen collisions. */
uint64_t tp_hash_str(const char *s);

/* ---- host lists ----------------------------------------------------------- */

/* Expand a Slurm-style host list ("gpu[001-004,7],cpu1") into names.
 * On success *names_p is an array of *n_p strings; free with
 * tp_hostlist_free(). On error returns TP_ERR_PARSE (syntax), TP_ERR_RANGE
 * (more than 1,000,000 names, a name longer than 255 bytes, or more than
 * 64 MiB of names: checked before anything is built), TP_ERR_INVAL (NULL
 * argument) or TP_ERR_NOMEM and leaves outputs untouched. */
tp_err_t tp_hostlist_expand(const char *list, char ***names_p, size_t *n_p);
/* How many names tp_hostlist_expand would give, with the same checks and
 * errors, building nothing: to compare an untrusted list with a trusted
 * count before expanding it. */
tp_err_t tp_hostlist_count(const char *list, size_t *n_p);
void tp_hostlist_free(char **names, size_t n);
/* Compress names into Slurm's bracket form ("gpu[001-003,007]"), keeping
 * zero padding. Caller frees with tp_free(); NULL on NOMEM. */
char *tp_hostlist_compress(const char *const *names, size_t n);

/* ---- files ---------------------------------------------------------- */

/* Largest file tp_file_read takes (a 65k-host fabric is ~30 MB). */
#define TP_FILE_MAX ((size_t)1 << 30)
/* Read a whole file into a NUL-terminated buffer (binary safe: *len_p is the
 * byte count). Caller frees with tp_free(). TP_ERR_NOTFOUND: no such
 * file; TP_ERR_INVAL: a device, directory or socket (pipes and FIFOs are
 * read, and opening a FIFO waits for its writer: for the command line, not
 * for a daemon); TP_ERR_RANGE: more than TP_FILE_MAX bytes; TP_ERR_IO,
 * NOMEM. */
tp_err_t tp_file_read(const char *path, char **buf_p, size_t *len_p);
/* The bytes of a text of len bytes at buf to skip for its UTF-8 byte order
 * mark (a file saved by a Windows editor): 3 or 0. */
size_t tp_text_bom(const char *buf, size_t len);
/* Whether a text's lines end in CR alone (a file saved on a classic Mac,
 * or converted by a tool that turned each newline into a CR): no newline
 * anywhere, and a CR with more than blanks after it. Read as lines, it
 * is one line; the reader says this instead. */
bool tp_text_cr_only(const char *buf, size_t len);
/* The bytes of JSON white space (RFC 8259: space, tab, LF, CR) at the
 * start of the len bytes at buf. A reader whose parser stopped after the
 * value at buf + off (cJSON_ParseWithLengthOpts' end) takes anything at
 * off + tp_json_space(buf + off, len - off) < len as text after the
 * document: not valid JSON there. */
size_t tp_json_space(const char *buf, size_t len);
/* The offset of the first of the len bytes at buf that cJSON would read
 * otherwise than written, len when none: a control byte (below 0x20)
 * other than tab, LF and CR, invalid anywhere (a string must escape it;
 * cJSON skips it as white space between tokens and keeps it inside a
 * string), or a \u0000 escape (cJSON ends the string there, so
 * "a\u0000b" would read as "a"). A raw tab, LF or CR inside a string,
 * invalid JSON too, passes: cJSON keeps it as written. *esc_p (when not
 * NULL): true for the escape. */
size_t tp_json_bad_byte(const char *buf, size_t len, bool *esc_p);
/* tp_json_bad_byte's find said for an error line: true and the reason
 * in why (n bytes: "control byte 0x01 at byte 5", "\u0000 in a string at
 * byte 9") when the text has such a byte, else false. */
bool tp_json_bad_text(const char *buf, size_t len, char *why, size_t n);
/* Open path for reading the way a daemon must: without waiting (a FIFO's
 * open does not block) and only when it is a regular file. On TP_OK *fd_p
 * is a blocking, close-on-exec descriptor the caller closes, and *size_p
 * (if not NULL) the file's size. TP_ERR_NOTFOUND: no such file;
 * TP_ERR_NOTREG: a FIFO, device, directory or socket; TP_ERR_IO (errno
 * says why), TP_ERR_INVAL. Never blocks on the file's kind. */
tp_err_t tp_file_open_regular(const char *path, int *fd_p, uint64_t *size_p);
/* Whether path is a regular file, found as tp_file_open_regular finds it
 * (without waiting on a FIFO): TP_OK or its error. For a reader that
 * would block on another kind (a directory walk's entries). */
tp_err_t tp_file_check_regular(const char *path);
/* tp_file_read for daemon inputs: a regular file only (as
 * tp_file_open_regular) of at most max bytes (capped at TP_FILE_MAX;
 * TP_ERR_RANGE beyond: callers word the limit, tp_file_strerror says
 * 1 GiB). Same buffer and errors as tp_file_read, TP_ERR_NOTREG in place
 * of TP_ERR_INVAL. */
tp_err_t tp_file_read_regular(const char *path, size_t max, char **buf_p,
			      size_t *len_p);
/* Why tp_file_read* failed, for "FILE: cannot read: ..." (static or
 * strerror's text for TP_ERR_IO, read right after the call). */
const char *tp_file_strerror(tp_err_t err);

/* ---- misc ---------------------------------------------------------------- */

/* Trim leading and trailing ASCII whitespace in place; returns s. */
char *tp_strtrim(char *s);
/* Untrusted text for a log or error line: at most max bytes of src into
 * dst (len bytes, always terminated), with control bytes, quotes,
 * backslashes and bytes >= 0x80 written as \xNN and "..." when cut, so
 * one value is always one printable ASCII line. src NULL reads as "".
 * Returns dst. */
char *tp_quote(char *dst, size_t len, const char *src, size_t max);

/* ---- UTF-8 ----------------------------------------------------------------
 */

/* The replacement character U+FFFD, UTF-8 encoded, for a byte that starts
 * no well-formed sequence (descriptions from dumps and node-name maps
 * edited in another encoding: a Latin-1 0xE9). */
#define TP_UTF8_REPLACEMENT "\xef\xbf\xbd"
/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, surrogates or code points above U+10FFFF): 1 for an ASCII byte
 * other than NUL, 2..4, or 0 for NUL and a byte that starts none. Reads
 * no further than a NUL. Pure. */
size_t tp_utf8_len(const char *s);
/* src as UTF-8 into dst (size bytes, always terminated when size > 0):
 * each byte that starts no well-formed sequence becomes U+FFFD, and a cut
 * (dst too small) falls between sequences, never inside one. For text
 * that JSON (RFC 8259) or a Prometheus exposition must carry as UTF-8;
 * escaping is the writer's. src NULL reads as "". Returns the bytes
 * written, the NUL not counted. */
size_t tp_utf8_copy(char *dst, size_t size, const char *src);

/* Work for tp_child_run: append the result to out, return a tp_err_t. */
typedef tp_err_t (*tp_child_fn_t)(void *arg, tp_strbuf_t *out);
/* Run fn(arg, ...) in a forked child, for code that may crash or hang on
 * hostile input. What fn appends (its result, or a message on error) is
 * appended to out in the parent; fn's return value is returned. Else
 * TP_ERR_TIMEOUT (after limit_ms the child is killed), TP_ERR_IO with
 * *sig_p the signal that ended the child (a crash), or *sig_p 0 when
 * pipe/fork failed, TP_ERR_RANGE (over TP_FILE_MAX bytes of output),
 * TP_ERR_NOMEM. out may hold a partial result on error. Not for threaded
 * processes (fn runs after fork(): see child.c). */
tp_err_t tp_child_run(tp_child_fn_t fn, void *arg, unsigned limit_ms,
		      tp_strbuf_t *out, int *sig_p);

/* Most threads tp_threads_run starts. */
#define TP_THREADS_MAX 16
/* Run fn(arg) on up to max threads at once (no more than the CPUs online
 * and TP_THREADS_MAX, at least one), the calling thread one of them, and
 * return when every one has returned: fn takes its work from arg under
 * its own lock until none is left. A thread that cannot be started is
 * left out (the others do its share). Returns how many ran fn. */
size_t tp_threads_run(void *(*fn)(void *), void *arg, size_t max);

/* Make an error or warning line one line of UTF-8 text: control bytes
 * (newlines, escapes, DEL), C1 controls and the line separators U+2028 /
 * U+2029 (each of their bytes), and bytes that are not part of a UTF-8
 * character (a Latin-1 0xE9, a stray 0xFF) that came from the input become
 * '?', in place; other valid UTF-8 is kept. NULL is a no-op. Returns s. Every
 * reader's detail string goes through it. */
char *tp_oneline(char *s);
/* A printable excerpt of input text for a message, into buf (size >= 4
 * bytes): at most size - 4 bytes of s, a byte outside printable ASCII as
 * '?', and "..." when s was longer. Returns buf. */
#define TP_EXCERPT_SIZE 44
const char *tp_excerpt(const char *s, char *buf, size_t size);

/* Parse a GUID ("0x0002c90300a1b2c3" or "0002c90300a1b2c3"). */
bool tp_parse_guid(const char *s, uint64_t *guid_p);

#ifdef __cplusplus
}
#endif

#endif /* TP_COMMON_H */
