/* The installed pam_securitykey.so: Linux-PAM's two authentication entry points
 * (pam_sm_authenticate(3), pam_sm_setcred(3)) call the same functions of libsecuritykey.so.0,
 * exported there as securitykey_pam_sm_* (Sources/SecurityKeyPAM/EntryPoints.swift, aliased by
 * make release). Nothing else here; Sources/SecurityKeyPAM/exports.map keeps every other symbol
 * local. */
#include <security/pam_modules.h>

/* The library's functions have the entry points' own types (pam_modules.h). */
__typeof__(pam_sm_authenticate) securitykey_pam_sm_authenticate;
__typeof__(pam_sm_setcred) securitykey_pam_sm_setcred;

int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    return securitykey_pam_sm_authenticate(pamh, flags, argc, argv);
}

int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
    return securitykey_pam_sm_setcred(pamh, flags, argc, argv);
}
