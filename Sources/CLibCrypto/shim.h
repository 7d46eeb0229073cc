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
