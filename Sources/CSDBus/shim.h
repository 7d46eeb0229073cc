#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
/* The seat check of system-bus callers. */
#include <systemd/sd-login.h>
/* The bus thread's wake-up descriptor. */
#include <sys/eventfd.h>
