/* Open-addressing hash maps (linear probing). Tables stay under 50% load so
 * probes are short even for 64k-host fabrics. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "tp_common.h"

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

uint64_t tp_hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static uint64_t hash_str(const char *s)
{
	return mix64(tp_hash_str(s));
}

static tp_err_t u64_rehash(tp_u64map_t *m, size_t cap)
{
	tp_u64map_slot_t *slot;

	if (cap > PTRDIFF_MAX / sizeof(*slot))
		return TP_ERR_NOMEM;
	slot = tp_malloc(cap * sizeof(*slot));
	if (!slot)
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < cap; i++)
		slot[i].val = TP_MAP_NONE;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->slot[i].val == TP_MAP_NONE)
			continue;
		size_t j = mix64(m->slot[i].key) & (cap - 1);
		while (slot[j].val != TP_MAP_NONE)
			j = (j + 1) & (cap - 1);
		slot[j] = m->slot[i];
	}
	tp_free(m->slot);
	m->slot = slot;
	m->cap = cap;
	return TP_OK;
}

tp_err_t tp_u64map_put(tp_u64map_t *m, uint64_t key, uint32_t val)
{
	size_t j;

	/* the empty-slot mark: stored, it would hide the key and break the
	 * probe chains that pass through its slot */
	if (val == TP_MAP_NONE)
		return TP_ERR_INVAL;
	if ((m->len + 1) * 2 > m->cap) {
		tp_err_t err = u64_rehash(m, m->cap ? m->cap * 2 : 64);
		if (err)
			return err;
	}
	j = mix64(key) & (m->cap - 1);
	while (m->slot[j].val != TP_MAP_NONE) {
		if (m->slot[j].key == key) {
			m->slot[j].val = val;
			return TP_OK;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->slot[j].key = key;
	m->slot[j].val = val;
	m->len++;
	return TP_OK;
}

tp_err_t tp_u64map_reserve(tp_u64map_t *m, size_t n)
{
	size_t cap = m->cap ? m->cap : 64;

	/* 2n + 2 slots: refused before the sum or the doubling can wrap */
	if (n > PTRDIFF_MAX / sizeof(*m->slot) / 2 - 1)
		return TP_ERR_NOMEM;
	while (cap < 2 * n + 2)
		cap *= 2;
	return cap > m->cap ? u64_rehash(m, cap) : TP_OK;
}

uint32_t tp_u64map_get(const tp_u64map_t *m, uint64_t key)
{
	size_t j;

	if (!m->cap)
		return TP_MAP_NONE;
	j = mix64(key) & (m->cap - 1);
	while (m->slot[j].val != TP_MAP_NONE) {
		if (m->slot[j].key == key)
			return m->slot[j].val;
		j = (j + 1) & (m->cap - 1);
	}
	return TP_MAP_NONE;
}

void tp_u64map_clear(tp_u64map_t *m)
{
	tp_free(m->slot);
	memset(m, 0, sizeof(*m));
}

static tp_err_t str_rehash(tp_strmap_t *m, size_t cap)
{
	const char **keys;
	uint32_t *vals;

	if (cap > PTRDIFF_MAX / sizeof(*keys))
		return TP_ERR_NOMEM;
	keys = tp_malloc(cap * sizeof(*keys));
	vals = tp_malloc(cap * sizeof(*vals));
	if (!keys || !vals) {
		tp_free(keys);
		tp_free(vals);
		return TP_ERR_NOMEM;
	}
	memset(vals, 0xff, cap * sizeof(*vals));
	for (size_t i = 0; i < m->cap; i++) {
		if (m->vals[i] == TP_MAP_NONE)
			continue;
		size_t j = hash_str(m->keys[i]) & (cap - 1);
		while (vals[j] != TP_MAP_NONE)
			j = (j + 1) & (cap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	tp_free(m->keys);
	tp_free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return TP_OK;
}

tp_err_t tp_strmap_put(tp_strmap_t *m, const char *key, uint32_t val)
{
	size_t j;

	if (val == TP_MAP_NONE || !key)
		return TP_ERR_INVAL;
	if ((m->len + 1) * 2 > m->cap) {
		tp_err_t err = str_rehash(m, m->cap ? m->cap * 2 : 64);
		if (err)
			return err;
	}
	j = hash_str(key) & (m->cap - 1);
	while (m->vals[j] != TP_MAP_NONE) {
		if (strcmp(m->keys[j], key) == 0) {
			m->vals[j] = val;
			return TP_OK;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->keys[j] = key;
	m->vals[j] = val;
	m->len++;
	return TP_OK;
}

uint32_t tp_strmap_get(const tp_strmap_t *m, const char *key)
{
	size_t j;

	if (!m->cap || !key)
		return TP_MAP_NONE;
	j = hash_str(key) & (m->cap - 1);
	while (m->vals[j] != TP_MAP_NONE) {
		if (strcmp(m->keys[j], key) == 0)
			return m->vals[j];
		j = (j + 1) & (m->cap - 1);
	}
	return TP_MAP_NONE;
}

void tp_strmap_clear(tp_strmap_t *m)
{
	tp_free(m->keys);
	tp_free(m->vals);
	memset(m, 0, sizeof(*m));
}
