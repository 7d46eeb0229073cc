#if canImport(Glibc)
    import Glibc
#endif

extension BlockingIOThread {
    /// Names the calling thread for the kernel (`/proc/thread-self/comm`, first 15 bytes): what
    /// `ps -L`, debuggers and tests that check a watch thread ended see. Foundation keeps
    /// `Thread.name` to itself and Swift cannot see `pthread_setname_np`. Best effort.
    public static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = write(fd, bytes, bytes.count)
        close(fd)
    }
}
