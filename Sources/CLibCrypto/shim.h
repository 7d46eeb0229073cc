// OpenSSL's libcrypto, for secp256k1 (ES256K) only: BoringSSL in swift-crypto lacks the curve.
//
// Loaded with dlopen when a secp256k1 key is first used, not linked (as libcurl is, CCurl): linked,
// libcrypto.so.3 was mapped and relocated in every process that loads libsecuritykey.so.0 (1.4 MiB
// resident in each, issue 30), for a curve few keys use. The declarations come from OpenSSL's
// headers; the functions through the pointers below, each typed as the header declares it.
#include <dlfcn.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>

// EVP_PKEY_fromdata selections; the macros are expressions Swift does not import.
static const int CLibCrypto_EVP_PKEY_KEYPAIR = EVP_PKEY_KEYPAIR;
static const int CLibCrypto_EVP_PKEY_PUBLIC_KEY = EVP_PKEY_PUBLIC_KEY;

// OSSL_PARAM_BLD keeps parameter names and string values by reference until the parameters are
// freed: these point at static storage, which Swift strings converted per call do not.
static const char *const CLibCrypto_PARAM_GROUP_NAME = OSSL_PKEY_PARAM_GROUP_NAME;
static const char *const CLibCrypto_PARAM_PUB_KEY = OSSL_PKEY_PARAM_PUB_KEY;
static const char *const CLibCrypto_PARAM_PRIV_KEY = OSSL_PKEY_PARAM_PRIV_KEY;
static const char *const CLibCrypto_GROUP_SECP256K1 = SN_secp256k1;

// Every libcrypto function the Secp256k1 module calls, listed once: X(name).
#define CLIBCRYPTO_FUNCTIONS(X) \
    X(BN_bin2bn) X(BN_clear_free) X(BN_cmp) X(BN_is_zero) \
    X(EC_GROUP_new_by_curve_name) X(EC_GROUP_free) X(EC_GROUP_get0_order) \
    X(EC_POINT_new) X(EC_POINT_free) X(EC_POINT_mul) X(EC_POINT_oct2point) X(EC_POINT_point2oct) \
    X(EVP_sha256) X(EVP_MD_CTX_new) X(EVP_MD_CTX_free) \
    X(EVP_DigestSignInit) X(EVP_DigestSign) X(EVP_DigestVerifyInit) X(EVP_DigestVerify) \
    X(EVP_PKEY_CTX_new_from_name) X(EVP_PKEY_CTX_free) X(EVP_PKEY_fromdata_init) X(EVP_PKEY_fromdata) \
    X(EVP_PKEY_free) \
    X(OSSL_PARAM_BLD_new) X(OSSL_PARAM_BLD_free) X(OSSL_PARAM_BLD_push_BN) \
    X(OSSL_PARAM_BLD_push_utf8_string) X(OSSL_PARAM_BLD_push_octet_string) X(OSSL_PARAM_BLD_to_param) \
    X(OSSL_PARAM_free)

// The functions, each a pointer of its own declared type (a field named as the function).
typedef struct {
#define CLIBCRYPTO_FIELD(name) __typeof__(&name) name;
    CLIBCRYPTO_FUNCTIONS(CLIBCRYPTO_FIELD)
#undef CLIBCRYPTO_FIELD
} CLibCrypto_API;

// Fills api from libcrypto.so.3 (OpenSSL 3's soname); 0 when it cannot be loaded or lacks a
// function (dlerror() says why).
static inline int CLibCrypto_load(CLibCrypto_API *api) {
    void *library = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) return 0;
#define CLIBCRYPTO_LOAD(name) \
    if ((api->name = (__typeof__(&name))dlsym(library, #name)) == NULL) return 0;
    CLIBCRYPTO_FUNCTIONS(CLIBCRYPTO_LOAD)
#undef CLIBCRYPTO_LOAD
    return 1;
}

// The reason of the last dlopen or dlsym failure, or NULL.
static inline const char *CLibCrypto_loadError(void) { return dlerror(); }
