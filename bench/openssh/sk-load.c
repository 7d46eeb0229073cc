/*
 * sk-load: loads an OpenSSH security-key provider library the way ssh-sk-helper does (dlopen,
 * then dlsym of the four entry points, then sk_api_version first) and prints how long that took,
 * as one line of key=value pairs:
 *
 *   sk-load LIBRARY              dlopen_ms=... first_call_ms=... api_version=0x000a0000
 *   sk-load LIBRARY --resident   also calls sk_load_resident_keys (no PIN, no options) and adds
 *                                resident_ms=... (from before dlopen) and resident_result=N
 *
 * Both end with rss_before_kib=... (resident memory before dlopen) and rss_added_kib=... (the
 * process's peak resident memory at the end minus that): what the library adds to its host.
 *
 * One process is one measurement: a library is loaded once per process (ssh-sk-helper starts
 * for every operation), so scripts/bench/ssh-in-guest.sh runs it many times. Exit 0 when the
 * library loads, exports all four entry points and reports API version 0x000a.xxxx; 1 otherwise.
 * Used by `make bench-ssh` and by scripts/test-packaging.sh (the packaged library loads in a
 * chroot without a Swift toolchain).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../load-measure.h"

/* Only what is called here, from OpenSSH's documented middleware ABI (PROTOCOL.u2f). */
#define SK_VERSION_MAJOR 0x000a0000u
#define SK_VERSION_MAJOR_MASK 0xffff0000u
struct sk_option;
struct sk_resident_key;
typedef uint32_t (*sk_api_version_fn)(void);
typedef int (*sk_load_resident_keys_fn)(const char *, struct sk_option **, struct sk_resident_key ***, size_t *);

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--resident") != 0)) {
        fprintf(stderr, "usage: %s LIBRARY [--resident]\n", argv[0]);
        return 2;
    }
    long rss_before = status_kib("VmRSS");
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    /* ssh-sk-helper's flags (ssh-sk.c sshsk_open). */
    void *library = dlopen(argv[1], RTLD_NOW);
    if (library == NULL) {
        fprintf(stderr, "sk-load: dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    double dlopen_ms = milliseconds_since(&start);
    static const char *const entry_points[] = {"sk_api_version", "sk_enroll", "sk_sign", "sk_load_resident_keys"};
    void *symbols[4];
    for (size_t i = 0; i < 4; i++) {
        symbols[i] = dlsym(library, entry_points[i]);
        if (symbols[i] == NULL) {
            fprintf(stderr, "sk-load: %s does not export %s\n", argv[1], entry_points[i]);
            return 1;
        }
    }
    sk_api_version_fn api_version;
    memcpy(&api_version, &symbols[0], sizeof api_version);
    uint32_t version = api_version();
    double first_call_ms = milliseconds_since(&start);
    printf("dlopen_ms=%.3f first_call_ms=%.3f api_version=0x%08x", dlopen_ms, first_call_ms, (unsigned)version);
    if ((version & SK_VERSION_MAJOR_MASK) != SK_VERSION_MAJOR) {
        printf("\n");
        fprintf(stderr, "sk-load: API version 0x%08x, not 0x%08x\n", (unsigned)version, SK_VERSION_MAJOR);
        return 1;
    }
    if (argc == 3) {
        sk_load_resident_keys_fn load_resident_keys;
        memcpy(&load_resident_keys, &symbols[3], sizeof load_resident_keys);
        struct sk_option *no_options[] = {NULL};
        struct sk_resident_key **keys = NULL;
        size_t count = 0;
        int result = load_resident_keys(NULL, no_options, &keys, &count);
        /* The keys (and every buffer in them) would be the caller's to free; this process ends. */
        printf(" resident_ms=%.3f resident_result=%d resident_keys=%zu", milliseconds_since(&start), result, count);
    }
    printf(" rss_before_kib=%ld rss_added_kib=%ld\n", rss_before, status_kib("VmHWM") - rss_before);
    return 0;
}
