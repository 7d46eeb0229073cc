/*
 * fido2-udp-driver: the libfido2 host of the securitykey benchmark.
 *
 *   fido2-udp-driver --device udp:HOST:PORT[?local=P] [--local-port P] [--timeout MS]
 *   fido2-udp-driver --device /dev/hidrawN        (or hid:/dev/hidrawN)
 *
 * --timeout is libfido2's per-operation timeout (default 15000 ms).
 *
 * It opens one device with libfido2 (CTAPHID over UDP through fido_dev_set_io_functions, or
 * libfido2's own hidraw backend), runs getInfo and makeCredential once to have a credential,
 * prints {"ready":true} and then answers each line "OP COUNT" (OP: getinfo, mc, ga) on stdin
 * with one JSON line on stdout:
 *
 *   {"op":"mc","latencies_ns":[COUNT integers],"cpu_ns":N}
 *   {"op":"mc","error":"text"}
 *
 * Each latency is CLOCK_MONOTONIC around what a host application does per operation: build the
 * request, transact, parse the answer. The answer is then checked outside the timed region
 * (fido_cred_verify / fido_assert_verify), so latencies compare with hosts that do not verify;
 * cpu_ns is the CLOCK_PROCESS_CPUTIME_ID time of the same timed regions, summed over the batch.
 * Under callgrind, collection is switched off around the checks for the same reason.
 * "quit" or end of input ends the driver (exit 0).
 *
 * Fleet mode, the libfido2 host of the fleet benchmark:
 *
 *   fido2-udp-driver --fleet --repeat R [--warmup W] [--timeout MS] udp:HOST:PORT...
 *
 * opens each key (CTAPHID_INIT; libfido2's fido_dev_open also runs its own getInfo) and runs
 * getInfo on it, one key after the other, as a plain C program using libfido2 does (its API is
 * blocking and keeps no thread of its own). After W rounds (default 1) it prints {"warm":true},
 * measures R rounds and prints {"times_ns":[R],"found":[R],"cpu_ns":N,"mode":"sequential"}
 * (found: keys whose getInfo answered and checked), the line fido2_fleet.py prints; then it waits
 * for a line or the end of its input before it exits, so the orchestrator can read its memory.
 *
 * Everything the device sends is hostile: datagrams of the wrong size are dropped, every wait
 * has a deadline (the libfido2 operation timeout, never infinite).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <fido.h>
#include <fido/es256.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_TOGGLE_COLLECT
#endif

/* One CTAPHID report (CTAP 2.1 §11.2.4); one report per datagram. */
#define REPORT_LEN 64
/* libfido2's default operation timeout (--timeout); it also caps every single read. */
#define OP_TIMEOUT_MS 15000
/* Longest --timeout accepted. */
#define MAX_TIMEOUT_MS 600000
/* Largest COUNT accepted on one line. */
#define MAX_COUNT 1000000UL
/* Longest command line accepted. */
#define MAX_LINE 128
/* Our own result code (libfido2's are small negative or CTAP status numbers). */
#define BENCH_ERR_UNVERIFIABLE (-1000)

static const char rp_id[] = "bench.example";
static const char rp_name[] = "Bench";
/* The same user as the other hosts' drivers, so the requests are the same size. */
static const unsigned char user_id[15] = {'b', 'e', 'n', 'c', 'h', '-', 'u', 's', 'e', 'r', '-',
    '0', '0', '0', '1'};
static const char user_name[] = "bench";
static const char user_display_name[] = "Bench User";

/* --local-port, read by udp_open (libfido2 hands the open function the path only). */
static int local_port_option = -1;
/* --timeout: libfido2's per-operation timeout, and the longest single read. */
static int timeout_ms = OP_TIMEOUT_MS;

/* ------------------------------------------------------------------------------------------- */
/* JSON output                                                                                 */

static void
json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void
print_error(const char *op, const char *text)
{
	fputs("{\"op\":", stdout);
	json_string(stdout, op);
	fputs(",\"error\":", stdout);
	json_string(stdout, text);
	fputs("}\n", stdout);
	fflush(stdout);
}

/* ------------------------------------------------------------------------------------------- */
/* CTAPHID over UDP: libfido2 I/O functions                                                    */

struct udp_handle {
	int fd;
};

/*
 * Splits "udp:HOST:PORT[?local=P]" (HOST may be [v6]) into host, port and local port.
 * Returns 0 on success.
 */
static int
parse_udp_uri(const char *uri, char *host, size_t host_size, char *port, size_t port_size,
    int *local_port)
{
	char buf[256];
	char *rest, *query, *colon;

	if (strncmp(uri, "udp:", 4) != 0 || strlen(uri + 4) >= sizeof(buf))
		return -1;
	strcpy(buf, uri + 4);
	if ((query = strchr(buf, '?')) != NULL) {
		char *end;
		unsigned long value;

		*query++ = '\0';
		if (strncmp(query, "local=", 6) != 0 || query[6] == '\0')
			return -1;
		errno = 0;
		value = strtoul(query + 6, &end, 10);
		if (errno != 0 || *end != '\0' || value > 65535)
			return -1;
		*local_port = (int)value;
	}
	if ((colon = strrchr(buf, ':')) == NULL || colon == buf || colon[1] == '\0')
		return -1;
	*colon = '\0';
	rest = buf;
	if (rest[0] == '[') {
		size_t n = strlen(rest);
		if (n < 3 || rest[n - 1] != ']')
			return -1;
		rest[n - 1] = '\0';
		rest++;
	}
	for (const char *p = colon + 1; *p != '\0'; p++)
		if (*p < '0' || *p > '9')
			return -1;
	if (strlen(rest) >= host_size || strlen(colon + 1) >= port_size)
		return -1;
	strcpy(host, rest);
	strcpy(port, colon + 1);
	return 0;
}

/* fido_dev_io_open_t: a UDP socket bound to the local port and connected to the device. */
static void *
udp_open(const char *path)
{
	char host[200], port[8], local[16];
	int local_port = 0;
	struct addrinfo hints, *remote = NULL, *bindaddr = NULL;
	struct udp_handle *h = NULL;
	int fd = -1, rc;

	if (parse_udp_uri(path, host, sizeof(host), port, sizeof(port), &local_port) != 0) {
		fprintf(stderr, "fido2-udp-driver: '%s' is not udp:HOST:PORT\n", path);
		return NULL;
	}
	if (local_port_option >= 0)
		local_port = local_port_option;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_DGRAM;
	if ((rc = getaddrinfo(host, port, &hints, &remote)) != 0) {
		fprintf(stderr, "fido2-udp-driver: cannot resolve %s: %s\n", host, gai_strerror(rc));
		return NULL;
	}
	snprintf(local, sizeof(local), "%d", local_port);
	hints.ai_family = remote->ai_family;
	hints.ai_flags = AI_PASSIVE;
	if ((rc = getaddrinfo(NULL, local, &hints, &bindaddr)) != 0) {
		fprintf(stderr, "fido2-udp-driver: local port %s: %s\n", local, gai_strerror(rc));
		goto fail;
	}
	if ((fd = socket(remote->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0 ||
	    bind(fd, bindaddr->ai_addr, bindaddr->ai_addrlen) != 0 ||
	    connect(fd, remote->ai_addr, remote->ai_addrlen) != 0) {
		fprintf(stderr, "fido2-udp-driver: UDP socket to %s: %s\n", path, strerror(errno));
		goto fail;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL)
		goto fail;
	h->fd = fd;
	freeaddrinfo(remote);
	freeaddrinfo(bindaddr);
	return h;
fail:
	if (fd >= 0)
		close(fd);
	if (remote != NULL)
		freeaddrinfo(remote);
	if (bindaddr != NULL)
		freeaddrinfo(bindaddr);
	return NULL;
}

/* fido_dev_io_close_t */
static void
udp_close(void *handle)
{
	struct udp_handle *h = handle;

	if (h == NULL)
		return;
	close(h->fd);
	free(h);
}

static int64_t
monotonic_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * fido_dev_io_read_t: one report, waiting at most ms milliseconds (libfido2's remaining
 * operation time; a negative ms, "forever", is capped at --timeout). Datagrams that are
 * not exactly one report are dropped and the wait goes on until the deadline.
 */
static int
udp_read(void *handle, unsigned char *buf, size_t len, int ms)
{
	struct udp_handle *h = handle;
	unsigned char report[REPORT_LEN + 1];
	int64_t deadline, now;

	if (h == NULL || len < REPORT_LEN)
		return -1;
	if (ms < 0 || ms > timeout_ms)
		ms = timeout_ms;
	if ((now = monotonic_ms()) < 0)
		return -1;
	deadline = now + ms;
	for (;;) {
		struct pollfd pfd = {.fd = h->fd, .events = POLLIN};
		ssize_t n;
		int left = (int)(deadline - now), r;

		if (left < 0)
			left = 0;
		if ((r = poll(&pfd, 1, left)) < 0 && errno != EINTR)
			return -1;
		if (r == 0)
			return -1; /* timed out */
		if (r > 0) {
			/* MSG_TRUNC: n is the datagram's real size even when it did not fit. */
			n = recv(h->fd, report, sizeof(report), MSG_TRUNC);
			if (n < 0 && errno != EINTR && errno != EAGAIN)
				return -1; /* e.g. ECONNREFUSED: nobody listens */
			if (n == REPORT_LEN) {
				memcpy(buf, report, REPORT_LEN);
				return REPORT_LEN;
			}
			if (n >= 0)
				fprintf(stderr, "fido2-udp-driver: dropped a %zd-byte datagram\n", n);
		}
		if ((now = monotonic_ms()) < 0 || now >= deadline)
			return -1;
	}
}

/*
 * fido_dev_io_write_t: libfido2 passes a HID report ID byte (0) followed by the report; the
 * datagram carries the report only.
 */
static int
udp_write(void *handle, const unsigned char *buf, size_t len)
{
	struct udp_handle *h = handle;
	ssize_t n;

	if (h == NULL || len != REPORT_LEN + 1 || buf[0] != 0)
		return -1;
	do
		n = send(h->fd, buf + 1, REPORT_LEN, 0);
	while (n < 0 && errno == EINTR);
	if (n != REPORT_LEN)
		return -1;
	return (int)len;
}

/* ------------------------------------------------------------------------------------------- */
/* Operations                                                                                  */

/* The credential made at start-up, which every getAssertion asks for. */
struct bench_credential {
	unsigned char *id;
	size_t id_len;
	es256_pk_t *pk;
};

static int
random_bytes(unsigned char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = getrandom(buf + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static uint64_t
clock_ns(clockid_t clock)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* getInfo, timed part. */
static int
getinfo_run(fido_dev_t *dev, fido_cbor_info_t **out)
{
	fido_cbor_info_t *ci;

	if ((*out = ci = fido_cbor_info_new()) == NULL)
		return FIDO_ERR_INTERNAL;
	return fido_dev_get_cbor_info(dev, ci);
}

/* getInfo, check: a CTAP2 key announces versions and a 16-byte AAGUID (CTAP 2.1 §6.4). */
static int
getinfo_check(const fido_cbor_info_t *ci)
{
	if (fido_cbor_info_versions_len(ci) == 0 || fido_cbor_info_aaguid_len(ci) != 16)
		return FIDO_ERR_INVALID_CBOR;
	return FIDO_OK;
}

/* makeCredential, timed part: ES256, rk=false, fixed RP and user. */
static int
mc_run(fido_dev_t *dev, const unsigned char *cdh, fido_cred_t **out)
{
	fido_cred_t *cred;
	int r;

	if ((*out = cred = fido_cred_new()) == NULL)
		return FIDO_ERR_INTERNAL;
	if ((r = fido_cred_set_type(cred, COSE_ES256)) != FIDO_OK ||
	    (r = fido_cred_set_clientdata_hash(cred, cdh, 32)) != FIDO_OK ||
	    (r = fido_cred_set_rp(cred, rp_id, rp_name)) != FIDO_OK ||
	    (r = fido_cred_set_user(cred, user_id, sizeof(user_id), user_name, user_display_name,
	    NULL)) != FIDO_OK ||
	    (r = fido_cred_set_rk(cred, FIDO_OPT_FALSE)) != FIDO_OK)
		return r;
	return fido_dev_make_cred(dev, cred, NULL);
}

/*
 * makeCredential, check: the attestation signature verifies (against the x5c leaf for packed
 * full attestation, against the credential key for self attestation), and the credential has
 * an ID and an ES256 public key.
 */
static int
mc_check(const fido_cred_t *cred)
{
	const char *fmt = fido_cred_fmt(cred);
	int r;

	if (fmt == NULL || strcmp(fmt, "packed") != 0)
		return BENCH_ERR_UNVERIFIABLE;
	if (fido_cred_x5c_ptr(cred) != NULL)
		r = fido_cred_verify(cred);
	else
		r = fido_cred_verify_self(cred);
	if (r != FIDO_OK)
		return r;
	if (fido_cred_id_len(cred) == 0 || fido_cred_pubkey_ptr(cred) == NULL)
		return FIDO_ERR_INVALID_CREDENTIAL;
	return FIDO_OK;
}

/* getAssertion, timed part: allow list with the start-up credential, up=true. */
static int
ga_run(fido_dev_t *dev, const unsigned char *cdh, const struct bench_credential *bc,
    fido_assert_t **out)
{
	fido_assert_t *assert;
	int r;

	if ((*out = assert = fido_assert_new()) == NULL)
		return FIDO_ERR_INTERNAL;
	if ((r = fido_assert_set_clientdata_hash(assert, cdh, 32)) != FIDO_OK ||
	    (r = fido_assert_set_rp(assert, rp_id)) != FIDO_OK ||
	    (r = fido_assert_allow_cred(assert, bc->id, bc->id_len)) != FIDO_OK ||
	    (r = fido_assert_set_up(assert, FIDO_OPT_TRUE)) != FIDO_OK)
		return r;
	return fido_dev_get_assert(dev, assert, NULL);
}

/* getAssertion, check: one assertion, for our credential, whose signature verifies. */
static int
ga_check(const fido_assert_t *assert, const struct bench_credential *bc)
{
	if (fido_assert_count(assert) != 1)
		return FIDO_ERR_INVALID_CBOR;
	if (fido_assert_id_len(assert, 0) != 0 && (fido_assert_id_len(assert, 0) != bc->id_len ||
	    memcmp(fido_assert_id_ptr(assert, 0), bc->id, bc->id_len) != 0))
		return FIDO_ERR_INVALID_CREDENTIAL;
	return fido_assert_verify(assert, 0, COSE_ES256, bc->pk);
}

static const char *
error_text(int r)
{
	if (r == BENCH_ERR_UNVERIFIABLE)
		return "the attestation is not packed, so its signature cannot be checked; serve the "
		    "key with packed or self attestation";
	return fido_strerr(r);
}

enum op_kind { OP_GETINFO, OP_MC, OP_GA };

/*
 * Runs one operation: the timed part, then (untimed, and not counted by callgrind) the check.
 * Stores the monotonic latency and adds the CPU time of the timed part to *cpu_ns.
 */
static int
run_one(fido_dev_t *dev, enum op_kind kind, const struct bench_credential *bc,
    uint64_t *latency_ns, uint64_t *cpu_ns)
{
	unsigned char cdh[32];
	fido_cbor_info_t *ci = NULL;
	fido_cred_t *cred = NULL;
	fido_assert_t *assert = NULL;
	uint64_t cpu0, t0, t1, cpu1;
	int r;

	if (random_bytes(cdh, sizeof(cdh)) != 0)
		return FIDO_ERR_INTERNAL;
	cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = clock_ns(CLOCK_MONOTONIC);
	switch (kind) {
	case OP_GETINFO:
		r = getinfo_run(dev, &ci);
		break;
	case OP_MC:
		r = mc_run(dev, cdh, &cred);
		break;
	default:
		r = ga_run(dev, cdh, bc, &assert);
		break;
	}
	t1 = clock_ns(CLOCK_MONOTONIC);
	cpu1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	*latency_ns = t1 - t0;
	*cpu_ns += cpu1 - cpu0;
	if (r == FIDO_OK) {
		CALLGRIND_TOGGLE_COLLECT;
		switch (kind) {
		case OP_GETINFO:
			r = getinfo_check(ci);
			break;
		case OP_MC:
			r = mc_check(cred);
			break;
		default:
			r = ga_check(assert, bc);
			break;
		}
		CALLGRIND_TOGGLE_COLLECT;
	}
	fido_cbor_info_free(&ci);
	fido_cred_free(&cred);
	fido_assert_free(&assert);
	return r;
}

/* Runs "OP COUNT" and prints its one JSON line. */
static void
run_batch(fido_dev_t *dev, const char *op, enum op_kind kind, unsigned long count,
    const struct bench_credential *bc)
{
	uint64_t *latencies, cpu_ns = 0;
	int r = FIDO_OK;

	if ((latencies = calloc(count, sizeof(*latencies))) == NULL) {
		print_error(op, "out of memory for the latencies");
		return;
	}
	for (unsigned long i = 0; i < count && r == FIDO_OK; i++)
		r = run_one(dev, kind, bc, &latencies[i], &cpu_ns);
	if (r != FIDO_OK) {
		print_error(op, error_text(r));
	} else {
		printf("{\"op\":\"%s\",\"latencies_ns\":[", op);
		for (unsigned long i = 0; i < count; i++)
			printf("%s%" PRIu64, i == 0 ? "" : ",", latencies[i]);
		printf("],\"cpu_ns\":%" PRIu64 "}\n", cpu_ns);
		fflush(stdout);
	}
	free(latencies);
}

/* The start-up: one getInfo, one makeCredential whose credential getAssertion will use. */
static int
setup(fido_dev_t *dev, struct bench_credential *bc, const char **what)
{
	unsigned char cdh[32];
	fido_cbor_info_t *ci = NULL;
	fido_cred_t *cred = NULL;
	int r;

	*what = "getInfo";
	if ((r = getinfo_run(dev, &ci)) == FIDO_OK)
		r = getinfo_check(ci);
	fido_cbor_info_free(&ci);
	if (r != FIDO_OK)
		return r;
	*what = "makeCredential";
	if (random_bytes(cdh, sizeof(cdh)) != 0)
		return FIDO_ERR_INTERNAL;
	if ((r = mc_run(dev, cdh, &cred)) == FIDO_OK && (r = mc_check(cred)) == FIDO_OK) {
		bc->id_len = fido_cred_id_len(cred);
		if ((bc->id = malloc(bc->id_len)) == NULL || (bc->pk = es256_pk_new()) == NULL)
			r = FIDO_ERR_INTERNAL;
		else {
			memcpy(bc->id, fido_cred_id_ptr(cred), bc->id_len);
			r = es256_pk_from_ptr(bc->pk, fido_cred_pubkey_ptr(cred),
			    fido_cred_pubkey_len(cred));
		}
	}
	fido_cred_free(&cred);
	return r;
}

/* Maximum keys in fleet mode (the benchmark's largest fleet is 128). */
#define MAX_FLEET 1024
/* Maximum rounds in fleet mode. */
#define MAX_ROUNDS 10000UL

/* Fleet mode: open one key, getInfo, close. Returns true when it answered and checked. */
static bool
fleet_probe(const char *uri)
{
	static const fido_dev_io_t udp_io = {udp_open, udp_close, udp_read, udp_write};
	fido_dev_t *dev;
	fido_cbor_info_t *ci = NULL;
	bool ok = false;

	if ((dev = fido_dev_new()) == NULL)
		return false;
	if (fido_dev_set_io_functions(dev, &udp_io) == FIDO_OK &&
	    fido_dev_set_timeout(dev, timeout_ms) == FIDO_OK &&
	    fido_dev_open(dev, uri) == FIDO_OK) {
		ok = getinfo_run(dev, &ci) == FIDO_OK && getinfo_check(ci) == FIDO_OK;
		fido_cbor_info_free(&ci);
		fido_dev_close(dev);
	}
	fido_dev_free(&dev);
	return ok;
}

/* Fleet mode: one round over every key, in order; returns how many answered. */
static unsigned long
fleet_round(char **uris, int count)
{
	unsigned long found = 0;

	for (int i = 0; i < count; i++)
		if (fleet_probe(uris[i]))
			found++;
	return found;
}

/* Parses a count from 1 to max; returns 0 when the text is not one. */
static unsigned long
parse_count(const char *text, unsigned long max)
{
	char *end;
	unsigned long value;

	if (text[0] < '0' || text[0] > '9')
		return 0;
	errno = 0;
	value = strtoul(text, &end, 10);
	if (errno != 0 || *end != '\0' || value > max)
		return 0;
	return value;
}

/* Fleet mode: argv holds the options after --fleet. */
static int
fleet_main(int argc, char **argv)
{
	unsigned long repeat = 0, warmup = 1, *found;
	uint64_t *times, cpu_start;
	int first = argc;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
			if ((repeat = parse_count(argv[++i], MAX_ROUNDS)) == 0)
				goto bad;
		} else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
			const char *text = argv[++i];

			warmup = parse_count(text, MAX_ROUNDS);
			if (warmup == 0 && strcmp(text, "0") != 0)
				goto bad;
		} else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
			unsigned long ms = parse_count(argv[++i], MAX_TIMEOUT_MS);

			if (ms == 0)
				goto bad;
			timeout_ms = (int)ms;
		} else if (strncmp(argv[i], "udp:", 4) == 0) {
			first = i;
			break;
		} else
			goto bad;
	}
	if (repeat == 0 || first >= argc || argc - first > MAX_FLEET)
		goto bad;
	for (int i = first; i < argc; i++)
		if (strncmp(argv[i], "udp:", 4) != 0)
			goto bad;
	fido_init(0);
	for (unsigned long r = 0; r < warmup; r++)
		(void)fleet_round(argv + first, argc - first);
	puts("{\"warm\":true}");
	if ((times = calloc(repeat, sizeof(*times))) == NULL ||
	    (found = calloc(repeat, sizeof(*found))) == NULL) {
		puts("{\"error\":\"out of memory\"}");
		return 1;
	}
	cpu_start = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (unsigned long r = 0; r < repeat; r++) {
		uint64_t start = clock_ns(CLOCK_MONOTONIC);

		found[r] = fleet_round(argv + first, argc - first);
		times[r] = clock_ns(CLOCK_MONOTONIC) - start;
	}
	cpu_start = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu_start;
	fputs("{\"times_ns\":[", stdout);
	for (unsigned long r = 0; r < repeat; r++)
		printf("%s%" PRIu64, r == 0 ? "" : ",", times[r]);
	fputs("],\"found\":[", stdout);
	for (unsigned long r = 0; r < repeat; r++)
		printf("%s%lu", r == 0 ? "" : ",", found[r]);
	printf("],\"cpu_ns\":%" PRIu64 ",\"mode\":\"sequential\"}\n", cpu_start);
	free(times);
	free(found);
	{
		char line[MAX_LINE];

		(void)fgets(line, sizeof(line), stdin);
	}
	return 0;
bad:
	fputs("usage: fido2-udp-driver --fleet --repeat R [--warmup W] [--timeout MS] udp:HOST:PORT...\n",
	    stderr);
	return 2;
}

static void
usage(FILE *f)
{
	fputs("usage: fido2-udp-driver --device udp:HOST:PORT[?local=P] [--local-port P] [--timeout MS]\n"
	    "       fido2-udp-driver --device /dev/hidrawN [--timeout MS]\n"
	    "       fido2-udp-driver --fleet --repeat R [--warmup W] [--timeout MS] udp:HOST:PORT...\n"
	    "Then reads lines 'getinfo|mc|ga COUNT' and 'quit' on standard input.\n", f);
}

int
main(int argc, char **argv)
{
	static const fido_dev_io_t udp_io = {udp_open, udp_close, udp_read, udp_write};
	const char *device = NULL, *what = "open", *path;
	struct bench_credential bc = {NULL, 0, NULL};
	char line[MAX_LINE];
	fido_dev_t *dev;
	bool udp;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && strcmp(argv[1], "--fleet") == 0)
		return fleet_main(argc - 2, argv + 2);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
			device = argv[++i];
		} else if (strcmp(argv[i], "--local-port") == 0 && i + 1 < argc) {
			char *end;
			unsigned long p;

			errno = 0;
			p = strtoul(argv[++i], &end, 10);
			if (errno != 0 || *end != '\0' || argv[i][0] == '\0' || p > 65535) {
				fprintf(stderr, "fido2-udp-driver: --local-port takes 0 to 65535\n");
				return 2;
			}
			local_port_option = (int)p;
		} else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
			char *end;
			unsigned long ms;

			errno = 0;
			ms = strtoul(argv[++i], &end, 10);
			if (errno != 0 || *end != '\0' || argv[i][0] < '1' || argv[i][0] > '9' ||
			    ms > MAX_TIMEOUT_MS) {
				fprintf(stderr, "fido2-udp-driver: --timeout takes 1 to %d ms\n",
				    MAX_TIMEOUT_MS);
				return 2;
			}
			timeout_ms = (int)ms;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (device == NULL) {
		usage(stderr);
		return 2;
	}
	udp = strncmp(device, "udp:", 4) == 0;
	path = strncmp(device, "hid:", 4) == 0 ? device + 4 : device;

	fido_init(0);
	if ((dev = fido_dev_new()) == NULL)
		return 1;
	if ((udp && (r = fido_dev_set_io_functions(dev, &udp_io)) != FIDO_OK) ||
	    (r = fido_dev_set_timeout(dev, timeout_ms)) != FIDO_OK ||
	    (r = fido_dev_open(dev, path)) != FIDO_OK ||
	    (r = setup(dev, &bc, &what)) != FIDO_OK) {
		fprintf(stderr, "fido2-udp-driver: %s on %s failed: %s\n", what, device, error_text(r));
		fputs("{\"ready\":false,\"error\":", stdout);
		json_string(stdout, error_text(r));
		fputs("}\n", stdout);
		fido_dev_close(dev);
		fido_dev_free(&dev);
		free(bc.id);
		es256_pk_free(&bc.pk);
		return 1;
	}
	puts("{\"ready\":true}");

	while (fgets(line, sizeof(line), stdin) != NULL) {
		char op[16], extra[2];
		unsigned long count;
		enum op_kind kind;
		int c, fields;

		if (strchr(line, '\n') == NULL && !feof(stdin)) {
			while ((c = getchar()) != EOF && c != '\n')
				;
			print_error("?", "line too long; expected 'OP COUNT'");
			continue;
		}
		fields = sscanf(line, "%15s %lu %1s", op, &count, extra);
		if (fields <= 0)
			continue; /* blank line */
		if (fields == 1 && strcmp(op, "quit") == 0)
			break;
		if (strcmp(op, "getinfo") == 0)
			kind = OP_GETINFO;
		else if (strcmp(op, "mc") == 0)
			kind = OP_MC;
		else if (strcmp(op, "ga") == 0)
			kind = OP_GA;
		else {
			print_error(op, "unknown operation; expected getinfo, mc, ga or quit");
			continue;
		}
		/* %lu accepts "-1"; the digit check keeps COUNT a plain positive number. */
		if (fields != 2 || count == 0 || count > MAX_COUNT ||
		    strpbrk(line, "-+") != NULL) {
			print_error(op, "COUNT must be a number from 1 to 1000000");
			continue;
		}
		run_batch(dev, op, kind, count, &bc);
	}

	fido_dev_close(dev);
	fido_dev_free(&dev);
	free(bc.id);
	es256_pk_free(&bc.pk);
	return 0;
}
