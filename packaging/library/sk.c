/* The installed libsecuritykey-sk.so, OpenSSH's security-key provider: its four entry points
 * (sk-api.h, OpenSSH's PROTOCOL.u2f) call the same functions of libsecuritykey.so.0, exported
 * there as securitykey_sk_* (Sources/SecurityKeySK/EntryPoints.swift, aliased by make release).
 * Nothing else here; Sources/SecurityKeySK/exports.map keeps every other symbol local. */
#include "sk-api.h"

/* The library's functions have the entry points' own types (sk-api.h). */
__typeof__(sk_api_version) securitykey_sk_api_version;
__typeof__(sk_enroll) securitykey_sk_enroll;
__typeof__(sk_sign) securitykey_sk_sign;
__typeof__(sk_load_resident_keys) securitykey_sk_load_resident_keys;

uint32_t sk_api_version(void) {
    return securitykey_sk_api_version();
}

int sk_enroll(uint32_t alg, const uint8_t *challenge, size_t challenge_len,
    const char *application, uint8_t flags, const char *pin,
    struct sk_option **options, struct sk_enroll_response **enroll_response) {
    return securitykey_sk_enroll(alg, challenge, challenge_len, application, flags, pin, options,
        enroll_response);
}

int sk_sign(uint32_t alg, const uint8_t *data, size_t data_len,
    const char *application, const uint8_t *key_handle, size_t key_handle_len,
    uint8_t flags, const char *pin, struct sk_option **options,
    struct sk_sign_response **sign_response) {
    return securitykey_sk_sign(alg, data, data_len, application, key_handle, key_handle_len, flags,
        pin, options, sign_response);
}

int sk_load_resident_keys(const char *pin, struct sk_option **options,
    struct sk_resident_key ***rks, size_t *nrks) {
    return securitykey_sk_load_resident_keys(pin, options, rks, nrks);
}
