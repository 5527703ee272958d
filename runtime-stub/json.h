/* runtime-stub/json.h — a small JSON reader for the .neff's own metadata
 * (untrusted: bounded depth, every malformed input is an error). */
#ifndef NX_RT_JSON_H
#define NX_RT_JSON_H

#include <stddef.h>
#include <stdint.h>

enum { NX_J_NULL, NX_J_BOOL, NX_J_NUM, NX_J_STR, NX_J_ARR, NX_J_OBJ };

typedef struct nx_json nx_json;
struct nx_json {
	int type;
	double num;
	int64_t inum;  /* exact when the number is an integer */
	int is_int;
	char *str;
	int n;         /* array/object members */
	char **keys;   /* objects */
	nx_json *items;
};

/* NULL on error, with a message in err. */
nx_json *nx_json_parse(const char *s, size_t len, char *err, size_t errlen);
void nx_json_free(nx_json *j);
const nx_json *nx_json_get(const nx_json *obj, const char *key);

#endif
