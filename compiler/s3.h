/* compiler/s3.h — a small S3 client over libcurl (SigV4 via CURLOPT_AWS_SIGV4).
 *
 * Configuration from the standard AWS variables: AWS_REGION (else
 * AWS_DEFAULT_REGION, else us-east-1), AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL
 * (a custom endpoint is addressed path-style: <endpoint>/<bucket>/<key>;
 * AWS itself virtual-host style: https://<bucket>.s3.<region>.amazonaws.com/<key>).
 * Credentials come from the AWS credential chain (compiler/aws_creds.h) at
 * the first request, and again when temporary ones near their expiry or S3
 * says ExpiredToken; without any, nx_s3_request fails (nothing is sent).
 *
 * Every request retries on transport errors, 500/502/503/504, 429 and
 * SlowDown, at most NX_S3_TRIES times with exponential backoff and full
 * jitter (base NXCC_S3_BACKOFF_MS, default 100 ms, capped at 5 s), all within
 * one time budget (NXCC_S3_TIMEOUT seconds, default 5). A GET answered 200
 * with an XML error body or a body that disagrees with its Content-Length is
 * retried like a transport error, never returned as the object. */
#ifndef NX_S3_H
#define NX_S3_H

#include "ir/ir.h"

#define NX_S3_TRIES 5

typedef struct nx_s3 nx_s3;

typedef struct nx_s3_resp {
	long status;    /* HTTP status of the last try */
	uint8_t *body;  /* malloc'd, NUL-terminated (for XML), or NULL */
	size_t len;
	int tries;      /* how many requests were sent */
} nx_s3_resp;

nx_s3 *nx_s3_new(const char *bucket, nx_diag *d);
void nx_s3_free(nx_s3 *s);

/* Sends one request (with retries). key is the object key, unencoded (may
 * be "" for the bucket); query is an already canonical query string
 * (sorted, encoded) or NULL. Returns NX_OK when some HTTP response came back
 * (any status; see r->status), NX_ERR_IO when none did. Free r->body. */
nx_status nx_s3_request(nx_s3 *s, const char *method, const char *key, const char *query,
                        const void *body, size_t len, nx_s3_resp *r, nx_diag *d);

/* Limits for the next request only: a body over max_body bytes (0: the
 * 64 MiB default) fails it, and extra_ms is added to its time budget
 * (NXCC_S3_TIMEOUT seconds, default 5, for the request and all its retries). */
void nx_s3_set_limits(nx_s3 *s, int64_t max_body, long extra_ms);

/* Percent-encodes s as SigV4 wants (unreserved kept; '/' kept when
 * keep_slash). Caller frees. */
char *nx_s3_encode(const char *s, bool keep_slash);
/* The text of the first <tag>...</tag> in xml (entities decoded), or NULL. Caller frees. */
char *nx_s3_xml_get(const char *xml, const char *tag, const char **after);
/* "S3 error 403 AccessDenied: Access Denied" from a response. Caller frees. */
char *nx_s3_error_text(const nx_s3_resp *r);

#endif
