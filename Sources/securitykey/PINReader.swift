#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

import FoundationEssentials
import _SecurityKeyInternals

/// Reads PINs from the terminal without echo, or from standard input (`--pin-stdin`).
/// PINs are never logged nor printed.
struct PINReader: Sendable {
    /// Read PINs from standard input, one per line, instead of the terminal.
    var fromStandardInput: Bool

    /// Reads one PIN (a new one, confirmed on the terminal, when `new`) on a thread of its own:
    /// the read blocks, so never on a cooperative thread. Cancelling the calling task ends a
    /// terminal prompt at once, with the terminal restored, as `cancelled`: a ceremony that ends
    /// elsewhere (its daemon request timed out, Ctrl-C) does not wait for someone to type.
    /// A `--pin-stdin` read cannot be interrupted; it ends with its input.
    func read(_ prompt: String, new: Bool) async -> Result<String, CLIError> {
        let stop = PromptCancellation()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<String, CLIError>, Never>) in
                let started = OSThread.detach(name: "pin prompt") {
                    continuation.resume(
                        returning: Result { () throws(CLIError) in
                            new ? try readNew(prompt, stop: stop) : try read(prompt, stop: stop)
                        })
                }
                if !started {
                    continuation.resume(returning: .failure(CLIError(.failure, code: "io", "Cannot start the PIN prompt.")))
                }
            }
        } onCancel: {
            stop.cancel()
        }
    }

    /// Whether `error` is a prompt ended by cancellation (not by the user or its input).
    static func wasCancelled(_ error: CLIError) -> Bool { error.code == promptCancelled }

    private static let promptCancelled = "cancelled"

    /// Reads one PIN, prompting with `prompt` on the terminal; `stop` ends a terminal prompt.
    func read(_ prompt: String, stop: PromptCancellation? = nil) throws(CLIError) -> String {
        let pin: String?
        if fromStandardInput {
            pin = readLine(strippingNewline: true)
        } else {
            pin = try Self.readFromTerminal(prompt, stop: stop)
        }
        guard let pin, !pin.isEmpty else {
            throw CLIError(
                .pinProblem, code: "pin-missing",
                fromStandardInput ? "No PIN was given on standard input." : "No PIN was entered.")
        }
        return pin
    }

    /// Reads a new PIN: once from standard input, or twice (to confirm) on the terminal.
    func readNew(_ prompt: String, stop: PromptCancellation? = nil) throws(CLIError) -> String {
        let first = try read(prompt, stop: stop)
        if fromStandardInput { return first }
        let second = try read("Repeat the new PIN: ", stop: stop)
        guard first == second else {
            throw CLIError(
                .pinProblem, code: "pin-mismatch", "The two PINs entered differ; nothing was changed.")
        }
        return first
    }

    /// Prompts on /dev/tty and reads a line with echo off (termios), restoring the terminal after.
    private static func readFromTerminal(_ prompt: String, stop: PromptCancellation?) throws(CLIError) -> String? {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            throw CLIError(
                .pinProblem, code: "no-terminal",
                "A PIN is needed but there is no terminal to ask on; pass --pin-stdin and write it to standard input."
            )
        }
        defer { close(fd) }
        var saved = termios()
        let haveTermios = tcgetattr(fd, &saved) == 0
        if haveTermios {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            quiet.c_lflag |= tcflag_t(ECHONL)
            SignalCancellation.terminal.withLock { $0 = (fd, saved) }
            _ = tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer {
            if haveTermios {
                _ = tcsetattr(fd, TCSAFLUSH, &saved)
                SignalCancellation.terminal.withLock { $0 = nil }
            }
        }
        guard var line = Self.promptAndReadLine(fd, prompt, limit: 256, stop: stop) else {
            throw CLIError(.cancelled, code: promptCancelled, "The operation ended before a PIN was entered.")
        }
        defer { for i in line.indices { line[i] = 0 } }
        return String(decoding: line, as: UTF8.self)
    }

    /// Writes `prompt` to the terminal `fd` and reads one line of at most `limit` bytes
    /// (without the line end); nil when `stop` was cancelled first. The one place the tool
    /// reads a terminal byte by byte.
    static func promptAndReadLine(_ fd: Int32, _ prompt: String, limit: Int, stop: PromptCancellation? = nil)
        -> [UInt8]?
    {
        let promptBytes = Array(prompt.utf8)
        _ = promptBytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < limit {
            if let stop, !stop.waitReadable(fd) {
                for i in line.indices { line[i] = 0 }
                Console.err("")
                return nil
            }
            let n = systemRead(fd, &byte, 1)
            if n < 0, errno == EINTR { continue }
            if n <= 0 || byte == 0x0A { break }
            if byte != 0x0D { line.append(byte) }
        }
        return line
    }
}

// Inside PINReader `read` names the method, not the C function.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}

/// Ends a terminal prompt from another thread: a pipe whose read end the prompt polls beside
/// the terminal, written once by `cancel` (a task cancellation handler).
final class PromptCancellation: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    init() {
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
    func cancel() {
        guard writeEnd >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Waits until `fd` can be read (true) or the prompt was cancelled (false).
    func waitReadable(_ fd: Int32) -> Bool {
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
