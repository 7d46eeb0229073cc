/*
 * The one dynamic-loader call the entry points need beyond <dlfcn.h>'s portable part: glibc's
 * dladdr (a GNU extension the C library module does not expose), to find the file this library
 * was loaded from. Declared under its own name, bound to the C library's symbol.
 */
#ifndef SECURITYKEY_SK_LOADER_H
#define SECURITYKEY_SK_LOADER_H

typedef struct {
    const char *dli_fname;
    void *dli_fbase;
    const char *dli_sname;
    void *dli_saddr;
} securitykey_dl_info;

int securitykey_dladdr(const void *address, securitykey_dl_info *info) __asm__("dladdr");

#endif
