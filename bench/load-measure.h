/*
 * load-measure.h: what the library loaders (bench/openssh/sk-load.c, bench/pam/pam-load.c) read
 * about their own process: a line of /proc/self/status in KiB, and milliseconds on the monotonic
 * clock since a start.
 */
#ifndef SECURITYKEY_BENCH_LOAD_MEASURE_H
#define SECURITYKEY_BENCH_LOAD_MEASURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A "Name:   N kB" line of /proc/self/status, in KiB; -1 when absent. */
static long status_kib(const char *name) {
    FILE *status = fopen("/proc/self/status", "r");
    if (status == NULL) return -1;
    char line[256];
    long value = -1;
    size_t length = strlen(name);
    while (fgets(line, sizeof line, status) != NULL) {
        if (strncmp(line, name, length) == 0 && line[length] == ':') {
            value = strtol(line + length + 1, NULL, 10);
            break;
        }
    }
    fclose(status);
    return value;
}

static double milliseconds_since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) * 1e3 + (double)(now.tv_nsec - start->tv_nsec) / 1e6;
}

#endif
