/*
 * The glibc GNU extensions the PAM module needs and the C library module does not expose
 * (they are declared only under _GNU_SOURCE): each declared under its own name, bound to the C
 * library's symbol.
 */
#ifndef SECURITYKEY_SYSTEM_EXTENSIONS_H
#define SECURITYKEY_SYSTEM_EXTENSIONS_H

#include <sys/types.h>

/* setfsuid(2), setfsgid(2): the identity file access is checked with, for the calling thread only. */
int securitykey_setfsuid(uid_t fsuid) __asm__("setfsuid");
int securitykey_setfsgid(gid_t fsgid) __asm__("setfsgid");

/* secure_getenv(3): NULL in a privileged (AT_SECURE) process, such as setuid sudo or su. */
char *securitykey_secure_getenv(const char *name) __asm__("secure_getenv");

/* dladdr(3): the file a library (OpenSSH's provider, the PAM module) was loaded from. */
typedef struct {
    const char *dli_fname;
    void *dli_fbase;
    const char *dli_sname;
    void *dli_saddr;
} securitykey_dl_info;

int securitykey_dladdr(const void *address, securitykey_dl_info *info) __asm__("dladdr");

/* mallinfo2(3): malloc's statistics over every arena (HeapStatistics). */
#include <malloc.h>

#endif
