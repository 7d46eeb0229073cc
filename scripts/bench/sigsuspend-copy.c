/*
 * sigsuspend-copy.c: an LD_PRELOAD shim that lets Swift programs run under valgrind 3.19
 * (Debian 12). libdispatch's dispatch_main, which a Swift async main ends in, parks the main
 * thread in sigsuspend() with a mask kept in read-only memory; valgrind 3.19 edits that mask in
 * place before the system call and dies of SIGSEGV. This sigsuspend passes a copy on the stack
 * instead. Built and used by scripts/bench/callgrind.sh only; it runs once per process, so it
 * adds nothing measurable to the counts.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int
sigsuspend(const sigset_t *mask)
{
	sigset_t copy = *mask;

	/* The kernel's sigset is 8 bytes on Linux; glibc's sigset_t is larger. */
	return (int)syscall(SYS_rt_sigsuspend, &copy, (size_t)8);
}
