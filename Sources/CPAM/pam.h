/* Linux-PAM's service-module interface (libpam0g-dev), for pam_securitykey.so's entry points. */
#ifndef SECURITYKEY_CPAM_H
#define SECURITYKEY_CPAM_H

#include <security/pam_modules.h>
#include <security/pam_ext.h>

#endif
