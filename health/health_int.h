/* health_int.h - helpers shared by the health module's files; private. */
#ifndef TP_HEALTH_INT_H
#define TP_HEALTH_INT_H

#include <cjson/cJSON.h>

#include "tp_health.h"

/* "desc:port" of end e of link k (desc "" -> the GUID) in buf (size
 * bytes), as valid UTF-8: a byte of desc that starts no well-formed
 * sequence is U+FFFD, and a desc too long is cut between sequences. */
void tp__health_end_name(const tp_fabric_t *f, const tp_link_t *k, int e,
			 char *buf, size_t size);
/* root as unformatted JSON in a tp_malloc'ed string. */
tp_err_t tp__health_print_json(cJSON *root, char **json_p);

#endif
