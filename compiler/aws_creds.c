/* compiler/aws_creds.c — the AWS credential chain (compiler/aws_creds.h). */
#include "compiler/aws_creds.h"
#include "compiler/s3.h"
#include "runtime-stub/json.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

void nx_aws_creds_free(nx_aws_creds *c)
{
	free(c->access_key);
	free(c->secret_key);
	free(c->token);
	free(c->source);
	free(c->region);
	memset(c, 0, sizeof(*c));
}

bool nx_aws_creds_stale(const nx_aws_creds *c, int64_t now)
{
	return c->expires != 0 && now >= c->expires - 300;
}

int64_t nx_aws_parse_time(const char *s)
{
	struct tm tm = {0};
	if (!s || sscanf(s, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
	                 &tm.tm_sec) != 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm);
}

static void set(nx_aws_creds *c, const char *ak, const char *sk, const char *tok, int64_t exp, const char *src)
{
	c->access_key = nx_xstrdup(ak);
	c->secret_key = nx_xstrdup(sk);
	c->token = tok && *tok ? nx_xstrdup(tok) : NULL;
	c->expires = exp;
	c->source = nx_xstrdup(src);
}

/* ------------------------------------------------------------------ HTTP */

typedef struct {
	char *p;
	size_t n;
} buf;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	buf *b = ud;
	size_t k = size * nmemb;
	/* credential documents are small: refuse anything absurd */
	if (b->n + k > (1u << 20))
		return 0;
	char *np = realloc(b->p, b->n + k + 1);
	if (!np)
		return 0;
	memcpy(np + b->n, ptr, k);
	b->n += k;
	np[b->n] = 0;
	b->p = np;
	return k;
}

/* One request, no retry. Returns the HTTP status (body in *out, malloc'd,
 * NUL-terminated) or -1 with *err set when no response came. */
static long http(const char *method, const char *url, const char *const *headers, const char *body,
                 long timeout_ms, char **out, char *err)
{
	*out = NULL;
	err[0] = 0;
	static bool inited;
	if (!inited) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
			snprintf(err, CURL_ERROR_SIZE, "libcurl initialization failed");
			return -1;
		}
		inited = true;
	}
	CURL *c = curl_easy_init();
	if (!c) {
		snprintf(err, CURL_ERROR_SIZE, "libcurl: cannot create a handle");
		return -1;
	}
	struct curl_slist *h = NULL;
	for (int i = 0; headers && headers[i]; i++)
		h = curl_slist_append(h, headers[i]);
	h = curl_slist_append(h, "Expect:");
	buf b = {0};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 4 * timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	/* credentials never follow a redirect to another host */
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}
	if (strcmp(method, "PUT") == 0 && !body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	CURLcode rc = curl_easy_perform(c);
	long status = -1;
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else if (!err[0])
		snprintf(err, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (status < 0)
		free(b.p);
	else
		*out = b.p ? b.p : nx_xstrdup("");
	return status;
}

/* -------------------------------------------------------------- sources */

static bool from_env(nx_aws_creds *c)
{
	const char *ak = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
	if (!ak || !sk)
		return false;
	set(c, ak, sk, env("AWS_SESSION_TOKEN"), 0, "environment");
	return true;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	return s;
}

/* Reads key=value pairs of section [name] (config files: [profile name],
 * or [default]) into the slots of want[] (values malloc'd). Returns whether
 * the section exists. */
static bool ini_section(const char *path, const char *name, bool config, const char *const *keys, char **vals)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char want[300];
	if (config && strcmp(name, "default") != 0)
		snprintf(want, sizeof(want), "profile %s", name);
	else
		snprintf(want, sizeof(want), "%s", name);
	char line[4096];
	bool in = false, found = false;
	while (fgets(line, sizeof(line), f)) {
		char *s = trim(line);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *e = strchr(s, ']');
			if (e)
				*e = 0;
			in = strcmp(trim(s + 1), want) == 0;
			found |= in;
			continue;
		}
		char *eq = strchr(s, '=');
		if (!in || !eq)
			continue;
		*eq = 0;
		char *k = trim(s), *v = trim(eq + 1);
		for (int i = 0; keys[i]; i++)
			if (strcmp(k, keys[i]) == 0 && !vals[i])
				vals[i] = nx_xstrdup(v);
	}
	fclose(f);
	return found;
}

static char *home_file(const char *var, const char *rel)
{
	const char *p = env(var);
	if (p)
		return nx_xstrdup(p);
	const char *home = env("HOME");
	return home ? nx_xasprintf("%s/%s", home, rel) : NULL;
}

/* The profile's keys from the credentials file, then from the config file
 * (the SDKs read both; the credentials file wins). */
static bool from_profile(nx_aws_creds *c, char *tried, size_t tn)
{
	const char *profile = env("AWS_PROFILE");
	if (!profile)
		profile = env("AWS_DEFAULT_PROFILE");
	if (!profile)
		profile = "default";
	static const char *const keys[] = {"aws_access_key_id", "aws_secret_access_key", "aws_session_token",
	                                   "region", NULL};
	char *vals[4] = {0};
	char *cred = home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
	char *conf = home_file("AWS_CONFIG_FILE", ".aws/config");
	bool found = false;
	if (cred)
		found |= ini_section(cred, profile, false, keys, vals);
	if (conf)
		found |= ini_section(conf, profile, true, keys, vals);
	bool ok = vals[0] && vals[1];
	if (ok) {
		char src[300];
		snprintf(src, sizeof(src), "profile %s", profile);
		set(c, vals[0], vals[1], vals[2], 0, src);
	}
	/* the region of the profile serves whatever source has the keys */
	c->region = vals[3];
	vals[3] = NULL;
	if (!ok)
		snprintf(tried + strlen(tried), tn - strlen(tried), "; profile '%s': %s", profile,
		         found ? "no aws_access_key_id/aws_secret_access_key" : "not in ~/.aws/credentials or ~/.aws/config");
	for (int i = 0; i < 4; i++)
		free(vals[i]);
	free(cred);
	free(conf);
	return ok;
}

static char *xml(const char *body, const char *tag)
{
	return body ? nx_s3_xml_get(body, tag, NULL) : NULL;
}

/* STS AssumeRoleWithWebIdentity: an unsigned call, the token is the proof. */
static int from_web_identity(nx_aws_creds *c, const char *region, char *tried, size_t tn, nx_diag *d)
{
	const char *tok_file = env("AWS_WEB_IDENTITY_TOKEN_FILE"), *role = env("AWS_ROLE_ARN");
	if (!tok_file || !role) {
		snprintf(tried + strlen(tried), tn - strlen(tried), "; web identity: AWS_WEB_IDENTITY_TOKEN_FILE/AWS_ROLE_ARN unset");
		return 0;
	}
	size_t len;
	nx_diag rd = {0};
	char *token = nx_read_whole_file(tok_file, &len, &rd);
	if (!token) {
		nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "web identity: cannot read AWS_WEB_IDENTITY_TOKEN_FILE %s: %s",
		            tok_file, rd.msg ? rd.msg : "error");
		nx_diag_clear(&rd);
		return -1;
	}
	const char *ep = env("AWS_ENDPOINT_URL_STS");
	if (!ep)
		ep = env("AWS_ENDPOINT_URL");
	char url[1024];
	if (ep)
		snprintf(url, sizeof(url), "%.*s/", (int)(strlen(ep) - (ep[strlen(ep) - 1] == '/')), ep);
	else
		snprintf(url, sizeof(url), "https://sts.%s.amazonaws.com/", region);
	const char *session = env("AWS_ROLE_SESSION_NAME");
	char *e_role = nx_s3_encode(role, false), *e_tok = nx_s3_encode(trim(token), false);
	char *e_sess = nx_s3_encode(session ? session : "nxcc", false);
	char *form = nx_xasprintf("Action=AssumeRoleWithWebIdentity&RoleArn=%s&RoleSessionName=%s&Version=2011-06-15"
	                          "&WebIdentityToken=%s",
	                          e_role, e_sess, e_tok);
	free(e_role);
	free(e_tok);
	free(e_sess);
	free(token);
	static const char *const hdr[] = {"Content-Type: application/x-www-form-urlencoded",
	                                  "Accept: application/xml", NULL};
	char err[CURL_ERROR_SIZE], *body;
	long st = http("POST", url, hdr, form, 5000, &body, err);
	free(form);
	if (st != 200) {
		char *code = xml(body, "Code"), *msg = xml(body, "Message");
		if (st < 0)
			nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "web identity: STS %s: %s", url, err);
		else
			nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "web identity: STS AssumeRoleWithWebIdentity for %s: HTTP %ld%s%s%s%s",
			            role, st, code ? " " : "", code ? code : "", msg ? ": " : "", msg ? msg : "");
		free(code);
		free(msg);
		free(body);
		return -1;
	}
	char *ak = xml(body, "AccessKeyId"), *sk = xml(body, "SecretAccessKey"), *tk = xml(body, "SessionToken");
	char *ex = xml(body, "Expiration");
	int r = 1;
	if (ak && sk)
		set(c, ak, sk, tk, nx_aws_parse_time(ex), "web identity");
	else {
		nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "web identity: STS answered without credentials");
		r = -1;
	}
	free(ak);
	free(sk);
	free(tk);
	free(ex);
	free(body);
	return r;
}

/* The JSON document of the container and instance metadata endpoints:
 * AccessKeyId, SecretAccessKey, Token, Expiration. */
static int from_json(nx_aws_creds *c, const char *body, const char *src, nx_diag *d)
{
	char err[128];
	nx_json *j = nx_json_parse(body, strlen(body), err, sizeof(err));
	const nx_json *ak = j ? nx_json_get(j, "AccessKeyId") : NULL, *sk = j ? nx_json_get(j, "SecretAccessKey") : NULL;
	const nx_json *tk = j ? nx_json_get(j, "Token") : NULL, *ex = j ? nx_json_get(j, "Expiration") : NULL;
	int r = 1;
	if (ak && sk && ak->type == NX_J_STR && sk->type == NX_J_STR) {
		set(c, ak->str, sk->str, tk && tk->type == NX_J_STR ? tk->str : NULL,
		    ex && ex->type == NX_J_STR ? nx_aws_parse_time(ex->str) : 0, src);
	} else {
		nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "%s: the credentials document has no AccessKeyId/SecretAccessKey", src);
		r = -1;
	}
	nx_json_free(j);
	return r;
}

static int from_container(nx_aws_creds *c, char *tried, size_t tn, nx_diag *d)
{
	const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"), *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	if (!rel && !full) {
		snprintf(tried + strlen(tried), tn - strlen(tried), "; container: AWS_CONTAINER_CREDENTIALS_*_URI unset");
		return 0;
	}
	char *url = rel ? nx_xasprintf("http://169.254.170.2%s", rel) : nx_xstrdup(full);
	char *auth = NULL;
	const char *tok = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	const char *tf = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	if (tf) {
		size_t len;
		nx_diag rd = {0};
		char *t = nx_read_whole_file(tf, &len, &rd);
		nx_diag_clear(&rd);
		if (t)
			auth = nx_xasprintf("Authorization: %s", trim(t));
		free(t);
	} else if (tok) {
		auth = nx_xasprintf("Authorization: %s", tok);
	}
	const char *hdr[] = {auth, NULL};
	char err[CURL_ERROR_SIZE], *body;
	long st = http("GET", url, auth ? hdr : NULL, NULL, 1000, &body, err);
	int r;
	if (st == 200) {
		r = from_json(c, body, "container", d);
	} else {
		if (st < 0)
			nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "container credentials: %s: %s", url, err);
		else
			nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "container credentials: %s: HTTP %ld", url, st);
		r = -1;
	}
	free(body);
	free(auth);
	free(url);
	return r;
}

/* IMDSv2: a session token first (PUT, with its TTL), then every read with it. */
static int from_imds(nx_aws_creds *c, char *tried, size_t tn)
{
	const char *dis = env("AWS_EC2_METADATA_DISABLED");
	if (dis && strcasecmp(dis, "true") == 0) {
		snprintf(tried + strlen(tried), tn - strlen(tried), "; instance metadata: disabled");
		return 0;
	}
	const char *ep = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	if (!ep)
		ep = "http://169.254.169.254";
	int el = (int)strlen(ep) - (ep[strlen(ep) - 1] == '/');
	char url[1200], err[CURL_ERROR_SIZE], *body = NULL;
	snprintf(url, sizeof(url), "%.*s/latest/api/token", el, ep);
	static const char *const ttl[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
	long st = http("PUT", url, ttl, NULL, 1000, &body, err);
	if (st != 200) {
		snprintf(tried + strlen(tried), tn - strlen(tried), "; instance metadata: %.*s: %s", el, ep,
		         st < 0 ? err : "no IMDSv2 token");
		free(body);
		return 0;
	}
	char *th = nx_xasprintf("X-aws-ec2-metadata-token: %s", trim(body));
	free(body);
	const char *hdr[] = {th, NULL};
	snprintf(url, sizeof(url), "%.*s/latest/meta-data/iam/security-credentials/", el, ep);
	st = http("GET", url, hdr, NULL, 1000, &body, err);
	int r = 0;
	if (st == 200 && *trim(body)) {
		char *role = trim(body);
		role[strcspn(role, "\r\n")] = 0;
		char *e_role = nx_s3_encode(role, false);
		snprintf(url, sizeof(url), "%.*s/latest/meta-data/iam/security-credentials/%s", el, ep, e_role);
		free(e_role);
		free(body);
		st = http("GET", url, hdr, NULL, 1000, &body, err);
		nx_diag jd = {0};
		if (st == 200 && from_json(c, body, "instance metadata", &jd) == 1)
			r = 1;
		else
			snprintf(tried + strlen(tried), tn - strlen(tried), "; instance metadata: role credentials: %s",
			         st < 0 ? err : jd.msg ? jd.msg : "HTTP error");
		nx_diag_clear(&jd);
	} else {
		snprintf(tried + strlen(tried), tn - strlen(tried), "; instance metadata: no IAM role on this instance");
	}
	free(body);
	free(th);
	return r;
}

nx_status nx_aws_creds_resolve(nx_aws_creds *c, nx_diag *d)
{
	memset(c, 0, sizeof(*c));
	char tried[2048] = "environment: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY unset";
	if (from_env(c))
		return NX_OK;
	if (from_profile(c, tried, sizeof(tried)))
		return NX_OK;
	const char *region = env("AWS_REGION");
	if (!region)
		region = env("AWS_DEFAULT_REGION");
	if (!region)
		region = c->region ? c->region : "us-east-1";
	/* a configured source that fails is the answer: falling through to
	 * the next would hide the misconfiguration behind other credentials */
	int r = from_web_identity(c, region, tried, sizeof(tried), d);
	if (r == 0)
		r = from_container(c, tried, sizeof(tried), d);
	if (r == 0)
		r = from_imds(c, tried, sizeof(tried));
	if (r == 1)
		return NX_OK;
	char *keep_region = c->region;
	c->region = NULL;
	nx_aws_creds_free(c);
	c->region = keep_region;
	if (r < 0)
		return d ? d->status : NX_ERR_IO;
	return nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "no AWS credentials found (%s)", tried);
}
