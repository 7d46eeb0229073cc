/*
 * pam-load: loads a PAM module the way Linux-PAM does (dlopen with RTLD_NOW, dlsym of the service
 * functions), calls pam_sm_setcred (which needs no handle from pam_securitykey.so: it grants no
 * credential) and prints, as one line of key=value pairs:
 *
 *   pam-load MODULE [CYCLES]   dlopen_ms=... first_call_ms=... setcred=0 rss_before_kib=...
 *                              rss_added_kib=... cycles=N
 *
 * rss_added_kib is the process's peak resident memory at the end minus the resident memory before
 * the first dlopen: what the module adds to its host (sudo, login). With CYCLES (default 1) the
 * module is loaded, called and closed with dlclose that many times, as a PAM application that
 * opens and ends several PAM transactions does; the first cycle is the one timed. Exit 0 when
 * every cycle loads, finds both entry points and pam_sm_setcred returns PAM_SUCCESS (0).
 * Used by scripts/bench/footprint.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../load-measure.h"

typedef int (*pam_sm_fn)(void *, int, int, const char **);

int main(int argc, char **argv) {
    long cycles = argc == 3 ? strtol(argv[2], NULL, 10) : 1;
    if (argc < 2 || argc > 3 || cycles < 1 || cycles > 1000) {
        fprintf(stderr, "usage: %s MODULE [CYCLES]\n", argv[0]);
        return 2;
    }
    long rss_before = status_kib("VmRSS");
    double dlopen_ms = 0, first_call_ms = 0;
    for (long cycle = 0; cycle < cycles; cycle++) {
        struct timespec start;
        clock_gettime(CLOCK_MONOTONIC, &start);
        void *module = dlopen(argv[1], RTLD_NOW);
        if (module == NULL) {
            fprintf(stderr, "pam-load: dlopen %s: %s\n", argv[1], dlerror());
            return 1;
        }
        if (cycle == 0) dlopen_ms = milliseconds_since(&start);
        void *authenticate = dlsym(module, "pam_sm_authenticate");
        void *setcred_symbol = dlsym(module, "pam_sm_setcred");
        if (authenticate == NULL || setcred_symbol == NULL) {
            fprintf(stderr, "pam-load: %s does not export pam_sm_authenticate and pam_sm_setcred\n", argv[1]);
            return 1;
        }
        pam_sm_fn setcred;
        memcpy(&setcred, &setcred_symbol, sizeof setcred);
        int result = setcred(NULL, 0, 0, NULL);
        if (cycle == 0) first_call_ms = milliseconds_since(&start);
        if (result != 0) {
            fprintf(stderr, "pam-load: pam_sm_setcred returned %d in cycle %ld\n", result, cycle + 1);
            return 1;
        }
        if (dlclose(module) != 0) {
            fprintf(stderr, "pam-load: dlclose: %s\n", dlerror());
            return 1;
        }
    }
    printf("dlopen_ms=%.3f first_call_ms=%.3f setcred=0 rss_before_kib=%ld rss_added_kib=%ld cycles=%ld\n",
        dlopen_ms, first_call_ms, rss_before, status_kib("VmHWM") - rss_before, cycles);
    return 0;
}
