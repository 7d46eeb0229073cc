#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads PINs from the terminal without echo, or from standard input (`--pin-stdin`).
/// PINs are never logged nor printed.
struct PINReader {
    /// Read PINs from standard input, one per line, instead of the terminal.
    var fromStandardInput: Bool

    /// Reads one PIN, prompting with `prompt` on the terminal.
    func read(_ prompt: String) throws(CLIError) -> String {
        let pin: String?
        if fromStandardInput {
            pin = readLine(strippingNewline: true)
        } else {
            pin = try Self.readFromTerminal(prompt)
        }
        guard let pin, !pin.isEmpty else {
            throw CLIError(
                .pinProblem, code: "pin-missing",
                fromStandardInput ? "No PIN was given on standard input." : "No PIN was entered.")
        }
        return pin
    }

    /// Reads a new PIN: once from standard input, or twice (to confirm) on the terminal.
    func readNew(_ prompt: String) throws(CLIError) -> String {
        let first = try read(prompt)
        if fromStandardInput { return first }
        let second = try read("Repeat the new PIN: ")
        guard first == second else {
            throw CLIError(
                .pinProblem, code: "pin-mismatch", "The two PINs entered differ; nothing was changed.")
        }
        return first
    }

    /// Prompts on /dev/tty and reads a line with echo off (termios), restoring the terminal after.
    private static func readFromTerminal(_ prompt: String) throws(CLIError) -> String? {
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
        var line = Self.promptAndReadLine(fd, prompt, limit: 256)
        defer { for i in line.indices { line[i] = 0 } }
        return String(decoding: line, as: UTF8.self)
    }

    /// Writes `prompt` to the terminal `fd` and reads one line of at most `limit` bytes
    /// (without the line end). The one place the tool reads a terminal byte by byte.
    static func promptAndReadLine(_ fd: Int32, _ prompt: String, limit: Int) -> [UInt8] {
        let promptBytes = Array(prompt.utf8)
        _ = promptBytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < limit {
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
