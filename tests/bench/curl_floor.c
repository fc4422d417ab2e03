/* The floor under any client of the project's libraries (issue 28): one HTTPS GET through libcurl and OpenSSL,
 * the server checked against a CA, a bearer token sent, the body thrown away, nothing else. Its peak RSS is what
 * any kvcon command that reads a cluster costs before it keeps anything; engine_100k.sh prints it beside kvcon's
 * and kubectl's.
 *
 *   curl_floor URL CA_FILE TOKEN_FILE      exit 0 when the answer was 200, else 1 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static char *slurp(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *b = malloc(max + 1);
	*len = b ? fread(b, 1, max, f) : 0;
	fclose(f);
	if (b)
		b[*len] = '\0';
	return b;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: curl_floor URL CA_FILE TOKEN_FILE\n");
		return 2;
	}
	size_t ca_len, tok_len;
	char *ca = slurp(argv[2], 1 << 20, &ca_len), *tok = slurp(argv[3], 1 << 16, &tok_len);
	if (ca == NULL || tok == NULL) {
		fprintf(stderr, "curl_floor: cannot read the CA or the token\n");
		return 2;
	}
	tok[strcspn(tok, "\r\n")] = '\0';
	curl_global_init(CURL_GLOBAL_DEFAULT);
	CURL *e = curl_easy_init();
	struct curl_blob blob = { .data = ca, .len = ca_len, .flags = CURL_BLOB_COPY };
	curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
	char *auth = malloc(strlen(tok) + 32);
	sprintf(auth, "Authorization: Bearer %s", tok);
	struct curl_slist *headers = curl_slist_append(NULL, auth);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_URL, argv[1]);
	CURLcode rc = curl_easy_perform(e);
	long code = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK || code != 200)
		fprintf(stderr, "curl_floor: %s, HTTP %ld\n", curl_easy_strerror(rc), code);
	curl_slist_free_all(headers);
	curl_easy_cleanup(e);
	curl_global_cleanup();
	free(auth);
	free(ca);
	free(tok);
	return rc == CURLE_OK && code == 200 ? 0 : 1;
}
