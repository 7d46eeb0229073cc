import _SecurityKeyInternals

extension BlockingIOThread {
    /// Names the calling thread for the kernel (`/proc/thread-self/comm`, first 15 bytes): what
    /// `ps -L`, debuggers and tests that check a watch thread ended see. Best effort.
    public static func nameCurrentThread(_ name: String) {
        OSThread.nameCurrent(name)
    }
}
