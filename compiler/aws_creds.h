/* compiler/aws_creds.h — AWS credentials, found the way the AWS SDKs find
 * them (docs/cache.md "Credentials"), for the S3 cache (compiler/s3.c).
 *
 * The chain, first match wins:
 *   1. environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY
 *      (+ AWS_SESSION_TOKEN);
 *   2. shared files: profile AWS_PROFILE (else "default") in
 *      AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) and then
 *      AWS_CONFIG_FILE (~/.aws/config, "[profile NAME]" sections):
 *      aws_access_key_id, aws_secret_access_key, aws_session_token;
 *   3. web identity (EKS IRSA): AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN
 *      (+ AWS_ROLE_SESSION_NAME), STS AssumeRoleWithWebIdentity at
 *      AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else
 *      https://sts.<region>.amazonaws.com;
 *   4. ECS container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
 *      (on http://169.254.170.2) or AWS_CONTAINER_CREDENTIALS_FULL_URI, with
 *      AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE) as the Authorization header;
 *   5. EC2 instance metadata, IMDSv2: a token from PUT /latest/api/token,
 *      then the role under /latest/meta-data/iam/security-credentials/, at
 *      AWS_EC2_METADATA_SERVICE_ENDPOINT (default http://169.254.169.254);
 *      AWS_EC2_METADATA_DISABLED=true skips it.
 * Temporary credentials (3-5) carry an expiry; nx_aws_creds_stale says when
 * to look again (5 minutes before it, as the SDKs refresh).
 *
 * The metadata endpoints are asked with a 1 s timeout and no retry, so a
 * machine outside AWS pays at most about a second, once per process, and
 * only when no earlier source had credentials. */
#ifndef NX_AWS_CREDS_H
#define NX_AWS_CREDS_H

#include "ir/ir.h"

#include <stdint.h>

typedef struct nx_aws_creds {
	char *access_key;
	char *secret_key;
	char *token;      /* session token, or NULL */
	int64_t expires;  /* seconds since the epoch; 0 = does not expire */
	char *source;     /* "environment", "profile default", "web identity", "container", "instance metadata" */
	char *region;     /* the profile's region=, or NULL */
} nx_aws_creds;

/* Walks the chain. NX_OK with *c filled; otherwise NX_ERR_IO with *d saying
 * what each source lacked ("no AWS credentials found: ..."), or what a
 * source that was configured failed with (an STS error, a bad file). */
nx_status nx_aws_creds_resolve(nx_aws_creds *c, nx_diag *d);
/* True when c is temporary and expires within 5 minutes of now. */
bool nx_aws_creds_stale(const nx_aws_creds *c, int64_t now);
void nx_aws_creds_free(nx_aws_creds *c);

/* "2024-05-01T12:34:56Z" (also with fractional seconds or "+00:00") as
 * seconds since the epoch; 0 when malformed. */
int64_t nx_aws_parse_time(const char *s);

#endif
