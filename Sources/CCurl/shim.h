#include <curl/curl.h>
#include <dlfcn.h>
#include <stddef.h>

/* libcurl, loaded with dlopen when a download starts rather than linked: linked, it and the
 * two dozen libraries it needs (TLS, Kerberos, LDAP, IDN, ...) would be mapped and relocated at
 * every start of the CLI, which downloads only in `mds update`. The types and constants come
 * from curl.h; the functions through these pointers (void *: two of them are variadic, which
 * Swift can neither call nor store as a type, so only the wrappers below touch them). */
typedef struct {
    void *global_init, *easy_init, *easy_setopt, *easy_perform, *easy_getinfo, *easy_cleanup, *easy_strerror;
} securitykey_curl_api;

/* Fills api from libcurl.so.4 (the soname of libcurl 7 and 8); 0 when it cannot be loaded or
 * lacks a function (dlerror() says why). */
static inline int securitykey_curl_load(securitykey_curl_api *api) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return 0;
    api->global_init = dlsym(library, "curl_global_init");
    api->easy_init = dlsym(library, "curl_easy_init");
    api->easy_setopt = dlsym(library, "curl_easy_setopt");
    api->easy_perform = dlsym(library, "curl_easy_perform");
    api->easy_getinfo = dlsym(library, "curl_easy_getinfo");
    api->easy_cleanup = dlsym(library, "curl_easy_cleanup");
    api->easy_strerror = dlsym(library, "curl_easy_strerror");
    return api->global_init && api->easy_init && api->easy_setopt && api->easy_perform && api->easy_getinfo
        && api->easy_cleanup && api->easy_strerror;
}

/* The reason of the last dlopen or dlsym failure, or NULL. */
static inline const char *securitykey_curl_load_error(void) { return dlerror(); }

/* One typed wrapper per libcurl function and argument type the MDS download uses. */
static inline CURLcode securitykey_curl_global_init(const securitykey_curl_api *api, long flags) {
    return ((CURLcode (*)(long))api->global_init)(flags);
}
static inline CURL *securitykey_curl_easy_init(const securitykey_curl_api *api) {
    return ((CURL * (*)(void)) api->easy_init)();
}
static inline CURLcode securitykey_curl_easy_perform(const securitykey_curl_api *api, CURL *handle) {
    return ((CURLcode (*)(CURL *))api->easy_perform)(handle);
}
static inline void securitykey_curl_easy_cleanup(const securitykey_curl_api *api, CURL *handle) {
    ((void (*)(CURL *))api->easy_cleanup)(handle);
}
static inline const char *securitykey_curl_easy_strerror(const securitykey_curl_api *api, CURLcode code) {
    return ((const char *(*)(CURLcode))api->easy_strerror)(code);
}
static inline CURLcode securitykey_curl_setopt_long(
    const securitykey_curl_api *api, CURL *handle, CURLoption option, long value) {
    return ((CURLcode (*)(CURL *, CURLoption, ...))api->easy_setopt)(handle, option, value);
}
static inline CURLcode securitykey_curl_setopt_string(
    const securitykey_curl_api *api, CURL *handle, CURLoption option, const char *value) {
    return ((CURLcode (*)(CURL *, CURLoption, ...))api->easy_setopt)(handle, option, value);
}
static inline CURLcode securitykey_curl_setopt_pointer(
    const securitykey_curl_api *api, CURL *handle, CURLoption option, void *value) {
    return ((CURLcode (*)(CURL *, CURLoption, ...))api->easy_setopt)(handle, option, value);
}
static inline CURLcode securitykey_curl_setopt_write_function(
    const securitykey_curl_api *api, CURL *handle, size_t (*function)(char *, size_t, size_t, void *)) {
    return ((CURLcode (*)(CURL *, CURLoption, ...))api->easy_setopt)(handle, CURLOPT_WRITEFUNCTION, function);
}
static inline CURLcode securitykey_curl_setopt_progress_function(
    const securitykey_curl_api *api, CURL *handle,
    int (*function)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) {
    return ((CURLcode (*)(CURL *, CURLoption, ...))api->easy_setopt)(handle, CURLOPT_XFERINFOFUNCTION, function);
}
static inline CURLcode securitykey_curl_getinfo_long(
    const securitykey_curl_api *api, CURL *handle, CURLINFO info, long *value) {
    return ((CURLcode (*)(CURL *, CURLINFO, ...))api->easy_getinfo)(handle, info, value);
}
static inline CURLcode securitykey_curl_getinfo_offset(
    const securitykey_curl_api *api, CURL *handle, CURLINFO info, curl_off_t *value) {
    return ((CURLcode (*)(CURL *, CURLINFO, ...))api->easy_getinfo)(handle, info, value);
}
