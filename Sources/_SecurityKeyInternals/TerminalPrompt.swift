#if canImport(Glibc)
    import Glibc
#endif

/// Questions asked on the controlling terminal (`/dev/tty`), line by line: the one place a
/// program of ours reads a terminal byte by byte. A prompt ends early, with the terminal put
/// back, when its ``PromptCancellation`` is cancelled from another thread.
public enum TerminalPrompt {
    /// How a secret line read ended.
    public enum SecretLine {
        /// The line typed (without its end); the caller wipes it.
        case line([UInt8])
        /// There is no controlling terminal to ask on.
        case noTerminal
        /// `stop` was cancelled before the line ended.
        case cancelled
    }

    /// Prompts on `/dev/tty` and reads a line of at most `limit` bytes with echo off (termios),
    /// restoring the terminal after. `echoOff` is told the descriptor and the settings to put
    /// back while echo is off (nil once restored), so a process that must exit meanwhile can
    /// restore them.
    public static func readSecretLine(
        _ prompt: String, limit: Int, stop: PromptCancellation?,
        echoOff: (_ saved: (fd: Int32, settings: termios)?) -> Void = { _ in }
    ) -> SecretLine {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return .noTerminal }
        defer { close(fd) }
        var saved = termios()
        let haveTermios = tcgetattr(fd, &saved) == 0
        if haveTermios {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            quiet.c_lflag |= tcflag_t(ECHONL)
            echoOff((fd, saved))
            _ = tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer {
            if haveTermios {
                _ = tcsetattr(fd, TCSAFLUSH, &saved)
                echoOff(nil)
            }
        }
        guard let line = readLine(fd, prompt: prompt, limit: limit, stop: stop) else { return .cancelled }
        return .line(line)
    }

    /// Writes `prompt` to the terminal `fd` and reads one line of at most `limit` bytes
    /// (without the line end, carriage returns dropped); nil when `stop` was cancelled first
    /// (a line end is then written to standard error, where the prompt's answer would have ended).
    public static func readLine(_ fd: Int32, prompt: String, limit: Int, stop: PromptCancellation? = nil) -> [UInt8]? {
        let promptBytes = Array(prompt.utf8)
        _ = promptBytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < limit {
            if let stop, !stop.waitReadable(fd) {
                for i in line.indices { line[i] = 0 }
                FileIO.write(descriptor: FileIO.standardError, "\n")
                return nil
            }
            let n = read(fd, &byte, 1)
            if n < 0, errno == EINTR { continue }
            if n <= 0 || byte == 0x0A { break }
            if byte != 0x0D { line.append(byte) }
        }
        return line
    }
}

/// Ends a terminal prompt from another thread: a pipe whose read end the prompt polls beside
/// the terminal, written once by `cancel` (a task cancellation handler).
public final class PromptCancellation: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    /// A prompt not cancelled yet.
    public init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            // Not inherited by children; a full pipe (it never is: one byte) must not block cancel.
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        } else {
            ends = [-1, -1]
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        if readEnd >= 0 { close(readEnd) }
        if writeEnd >= 0 { close(writeEnd) }
    }

    /// Makes the prompt end (now, or as soon as it starts waiting).
    public func cancel() {
        guard writeEnd >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Waits until `fd` can be read (true) or the prompt was cancelled (false).
    public func waitReadable(_ fd: Int32) -> Bool {
        guard readEnd >= 0 else { return true }
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = poll(&fds, 2, -1)
            if ready < 0, errno == EINTR { continue }
            // A poll failure leaves the blocking read to decide, as before there was a poll.
            if ready < 0 { return true }
            if fds[1].revents != 0 { return false }
            return true
        }
    }
}
