#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
/* The bus thread's wake-up descriptor. */
#include <sys/eventfd.h>
