// OpenSSL's libcrypto, for secp256k1 (ES256K) only: BoringSSL in swift-crypto lacks the curve.
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
