/* compiler/s3.c — S3 requests over libcurl with SigV4, retries and timeouts. */
#include "compiler/s3.h"
#include "compiler/aws_creds.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct nx_s3 {
	CURL *curl;
	char *bucket;
	char *base;       /* "http://127.0.0.1:4568/bucket" or "https://b.s3.r.amazonaws.com" */
	char *sigv4;      /* "aws:amz:<region>:s3" */
	char *userpwd;    /* "key:secret", or NULL for unsigned */
	char *token;      /* session token or NULL */
	int backoff_ms;
	long budget_ms;   /* NXCC_S3_TIMEOUT: total time for one request, retries included */
	int64_t max_body; /* for the next request only (nx_s3_set_limits); 0 = default */
	long extra_ms;    /* for the next request only: added to the budget */
	nx_aws_creds creds; /* from the chain at the first request (compiler/aws_creds.h) */
	bool have_creds;
};

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

nx_s3 *nx_s3_new(const char *bucket, nx_diag *d)
{
	static bool inited;
	if (!inited) {
		/* not thread safe; nxcc opens its caches from the main thread */
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
			nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "libcurl initialization failed");
			return NULL;
		}
		inited = true;
	}
	nx_s3 *s = calloc(1, sizeof(*s));
	if (!s)
		abort();
	s->curl = curl_easy_init();
	if (!s->curl) {
		free(s);
		nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "libcurl: cannot create a handle");
		return NULL;
	}
	s->bucket = nx_xstrdup(bucket);
	const char *region = env("AWS_REGION");
	if (!region)
		region = env("AWS_DEFAULT_REGION");
	if (!region)
		region = "us-east-1";
	const char *ep = env("AWS_ENDPOINT_URL_S3");
	if (!ep)
		ep = env("AWS_ENDPOINT_URL");
	char buf[1024];
	if (ep) {
		size_t n = strlen(ep);
		while (n && ep[n - 1] == '/')
			n--;
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, ep, bucket);
	} else {
		snprintf(buf, sizeof(buf), "https://%s.s3.%s.amazonaws.com", bucket, region);
	}
	s->base = nx_xstrdup(buf);
	snprintf(buf, sizeof(buf), "aws:amz:%s:s3", region);
	s->sigv4 = nx_xstrdup(buf);
	/* credentials come from the chain at the first request: opening a
	 * cache costs no network (compiler/aws_creds.h) */
	const char *bo = env("NXCC_S3_BACKOFF_MS");
	s->backoff_ms = bo ? atoi(bo) : 100;
	const char *to = env("NXCC_S3_TIMEOUT");
	double sec = to ? atof(to) : 5.0;
	s->budget_ms = sec > 0 && sec < 86400 ? (long)(sec * 1000) : 5000;
	if (s->backoff_ms < 0)
		s->backoff_ms = 0;
	return s;
}

void nx_s3_free(nx_s3 *s)
{
	if (!s)
		return;
	curl_easy_cleanup(s->curl);
	free(s->bucket);
	free(s->base);
	free(s->sigv4);
	free(s->userpwd);
	free(s->token);
	nx_aws_creds_free(&s->creds);
	free(s);
}

char *nx_s3_encode(const char *s, bool keep_slash)
{
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *o = out;
	if (!out)
		abort();
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = *p;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
		    c == '_' || c == '.' || c == '~' || (keep_slash && c == '/'))
			*o++ = (char)c;
		else
			o += sprintf(o, "%%%02X", c);
	}
	*o = 0;
	return out;
}

char *nx_s3_xml_get(const char *xml, const char *tag, const char **after)
{
	char open[96], close[96];
	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	const char *a = strstr(xml, open);
	if (!a)
		return NULL;
	a += strlen(open);
	const char *b = strstr(a, close);
	if (!b)
		return NULL;
	if (after)
		*after = b + strlen(close);
	char *out = malloc((size_t)(b - a) + 1), *o = out;
	if (!out)
		abort();
	static const struct {
		const char *ent;
		char ch;
	} ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
	for (const char *p = a; p < b;) {
		bool done = false;
		for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]) && !done; i++) {
			size_t l = strlen(ents[i].ent);
			if ((size_t)(b - p) >= l && strncmp(p, ents[i].ent, l) == 0) {
				*o++ = ents[i].ch;
				p += l;
				done = true;
			}
		}
		if (!done)
			*o++ = *p++;
	}
	*o = 0;
	return out;
}

char *nx_s3_error_text(const nx_s3_resp *r)
{
	char *code = r->body ? nx_s3_xml_get((const char *)r->body, "Code", NULL) : NULL;
	char *msg = r->body ? nx_s3_xml_get((const char *)r->body, "Message", NULL) : NULL;
	char buf[512];
	snprintf(buf, sizeof(buf), "S3 error %ld%s%s%s%s", r->status, code ? " " : "", code ? code : "",
	         msg ? ": " : "", msg ? msg : "");
	free(code);
	free(msg);
	return nx_xstrdup(buf);
}

typedef struct {
	uint8_t *p;
	size_t n, cap;
	size_t max; /* a longer body is refused (an endless body must not grow RSS) */
	bool over;
} sink;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	sink *s = ud;
	size_t k = size * nmemb;
	if (s->n + k > s->max) {
		s->over = true;
		return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
	}
	if (s->n + k + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		while (s->n + k + 1 > cap)
			cap *= 2;
		uint8_t *np = realloc(s->p, cap);
		if (!np)
			return 0;
		s->p = np;
		s->cap = cap;
	}
	memcpy(s->p + s->n, ptr, k);
	s->n += k;
	s->p[s->n] = 0;
	return k;
}

static bool retryable_curl(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

static bool retryable_http(long status, const uint8_t *body)
{
	if (status == 500 || status == 502 || status == 503 || status == 504 || status == 429)
		return true;
	return body && strstr((const char *)body, "<Code>SlowDown</Code>");
}

/* Full jitter (AWS architecture blog): sleep uniform(0, min(cap, base·2^try)). */
static void backoff(const nx_s3 *s, int attempt, long left_ms)
{
	long cap = left_ms < 5000 ? left_ms / 2 : 5000, ms = (long)s->backoff_ms << attempt;
	if (ms > cap)
		ms = cap;
	static unsigned seed;
	if (!seed)
		seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	long j = ms ? (long)(rand_r(&seed) % (ms + 1)) : 0;
	/* keep at least half the step so retries do not bunch up at 0 */
	j = ms / 2 + j / 2;
	struct timespec ts = {j / 1000, (j % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

void nx_s3_set_limits(nx_s3 *s, int64_t max_body, long extra_ms)
{
	s->max_body = max_body;
	s->extra_ms = extra_ms;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A 200 whose body is an S3 XML error document (a broken proxy or store) is
 * not the object; neither is a body whose length differs from the
 * Content-Length the server announced. NULL when the response is usable. */
static const char *invalid_response(CURL *c, const char *method, long status, const sink *out)
{
	if (status != 200 || strcmp(method, "GET") != 0)
		return NULL;
	curl_off_t cl = -1;
	if (curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK && cl >= 0 &&
	    (size_t)cl != out->n)
		return "body length differs from Content-Length";
	char *ct = NULL;
	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
	bool xml_type = ct && (strstr(ct, "/xml") != NULL);
	const char *b = out->p ? (const char *)out->p : "";
	while (*b == ' ' || *b == '\n' || *b == '\r' || *b == '\t')
		b++;
	if (xml_type && (strncmp(b, "<?xml", 5) == 0 || strncmp(b, "<Error>", 7) == 0) && strstr(b, "<Error>"))
		return "200 OK with an XML error body";
	return NULL;
}

static nx_status request_once(nx_s3 *s, const char *method, const char *key, const char *query, const void *body,
                              size_t len, nx_s3_resp *r, nx_diag *d)
{
	/* Limits of this request; the defaults suit listings and markers. */
	size_t max_body = s->max_body > 0 ? (size_t)s->max_body : (size_t)64 << 20;
	long deadline = now_ms() + s->budget_ms + s->extra_ms;
	s->max_body = 0;
	s->extra_ms = 0;
	const char *bad = NULL;
	memset(r, 0, sizeof(*r));
	char *ekey = nx_s3_encode(key, true);
	size_t ulen = strlen(s->base) + strlen(ekey) + (query ? strlen(query) : 0) + 8;
	char *url = malloc(ulen);
	if (!url)
		abort();
	snprintf(url, ulen, "%s/%s%s%s", s->base, ekey, query ? "?" : "", query ? query : "");
	free(ekey);

	char hash[65], hdr[160];
	nx_sha256_hex(body ? body : "", body ? len : 0, hash);
	struct curl_slist *h = NULL;
	/* Debian 12's libcurl (7.88) does not add this header for s3, and S3
	 * rejects SigV4 requests without it. */
	snprintf(hdr, sizeof(hdr), "x-amz-content-sha256: %s", hash);
	h = curl_slist_append(h, hdr);
	h = curl_slist_append(h, "Expect:");
	if (body)
		h = curl_slist_append(h, "Content-Type: application/octet-stream");
	if (s->token) {
		char *t = malloc(strlen(s->token) + 32);
		if (!t)
			abort();
		sprintf(t, "x-amz-security-token: %s", s->token);
		h = curl_slist_append(h, t);
		free(t);
	}

	nx_status st = NX_ERR_IO;
	char errbuf[CURL_ERROR_SIZE];
	CURLcode last = CURLE_OK;
	for (int attempt = 0; attempt < NX_S3_TRIES; attempt++) {
		long left = deadline - now_ms();
		if (attempt && left > 0)
			backoff(s, attempt - 1, left);
		left = deadline - now_ms();
		if (left <= 0) {
			if (last == CURLE_OK)
				last = CURLE_OPERATION_TIMEDOUT;
			snprintf(errbuf, sizeof errbuf, "no answer within the %.1f s budget (NXCC_S3_TIMEOUT)",
			         (double)(s->budget_ms) / 1000);
			break;
		}
		sink out = {.max = max_body};
		CURL *c = s->curl;
		curl_easy_reset(c);
		errbuf[0] = 0;
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		/* the whole request, retries included, ends by the deadline: a
		 * stalled or dripping server costs the budget, not 5 x 900 s */
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, left < 5000 ? left : 5000L);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left);
		curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_body);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
		if (s->userpwd) {
			curl_easy_setopt(c, CURLOPT_AWS_SIGV4, s->sigv4);
			curl_easy_setopt(c, CURLOPT_USERPWD, s->userpwd);
		}
		if (strcmp(method, "HEAD") == 0) {
			curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
		} else if (body) {
			/* POSTFIELDS (not an upload callback) so that libcurl 7.88
			 * hashes the payload it signs; the method is then overridden. */
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
		} else if (strcmp(method, "GET") != 0) {
			curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
		}
		last = curl_easy_perform(c);
		r->tries = attempt + 1;
		if (last != CURLE_OK) {
			free(out.p);
			if (out.over || last == CURLE_FILESIZE_EXCEEDED) {
				snprintf(errbuf, sizeof errbuf, "response body over %zu bytes", max_body);
				break;
			}
			if (retryable_curl(last))
				continue;
			break;
		}
		long status = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		bad = invalid_response(c, method, status, &out);
		if (bad) {
			free(out.p);
			snprintf(errbuf, sizeof errbuf, "invalid response: %s", bad);
			continue; /* retried like a transport error */
		}
		if (retryable_http(status, out.p) && attempt + 1 < NX_S3_TRIES) {
			free(out.p);
			continue;
		}
		free(r->body);
		r->status = status;
		r->body = out.p;
		r->len = out.n;
		st = NX_OK;
		break;
	}
	if (st != NX_OK)
		nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "%s %s: %s", method, url,
		            errbuf[0] ? errbuf : curl_easy_strerror(last));
	curl_slist_free_all(h);
	free(url);
	return st;
}

/* Resolves (or refreshes, when temporary credentials near their expiry)
 * the credentials the requests are signed with. */
static nx_status use_creds(nx_s3 *s, bool force, nx_diag *d)
{
	if (s->have_creds && !force && !nx_aws_creds_stale(&s->creds, (int64_t)time(NULL)))
		return NX_OK;
	nx_aws_creds_free(&s->creds);
	s->have_creds = false;
	free(s->userpwd);
	free(s->token);
	s->userpwd = s->token = NULL;
	if (nx_aws_creds_resolve(&s->creds, d) != NX_OK)
		return NX_ERR_IO;
	s->have_creds = true;
	s->userpwd = nx_xasprintf("%s:%s", s->creds.access_key, s->creds.secret_key);
	s->token = s->creds.token ? nx_xstrdup(s->creds.token) : NULL;
	return NX_OK;
}

nx_status nx_s3_request(nx_s3 *s, const char *method, const char *key, const char *query, const void *body,
                        size_t len, nx_s3_resp *r, nx_diag *d)
{
	memset(r, 0, sizeof(*r));
	if (use_creds(s, false, d) != NX_OK)
		return NX_ERR_IO;
	nx_status st = request_once(s, method, key, query, body, len, r, d);
	/* temporary credentials can expire between our check and the server's */
	if (st == NX_OK && (r->status == 400 || r->status == 403) && s->creds.expires && r->body &&
	    strstr((const char *)r->body, "<Code>ExpiredToken</Code>")) {
		free(r->body);
		if (use_creds(s, true, d) != NX_OK)
			return NX_ERR_IO;
		st = request_once(s, method, key, query, body, len, r, d);
	}
	return st;
}
