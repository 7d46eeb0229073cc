import Glibc
import Logging

/// Where the module's `debug` output goes, and only there (the PAM line's `debug_file=`):
/// standard error or output, syslog, or an existing regular file opened without following a
/// symbolic link (pam-u2f never creates it either). Refusals (a bad option, a refused file) go
/// to syslog as well, whether or not `debug` is on.
public final class PAMLog: Sendable {
    private enum Sink: Sendable { case none, descriptor(Int32, owned: Bool), syslog }
    private let sink: Sink
    private let level: Logger.Level?

    /// A log for `options`: nothing without `debug`.
    public init(options: PAMModuleOptions) {
        guard options.debug else {
            sink = .none
            level = nil
            return
        }
        level = options.trace ? .trace : .debug
        switch options.debugDestination {
        case .standardError: sink = .descriptor(STDERR_FILENO, owned: false)
        case .standardOutput: sink = .descriptor(STDOUT_FILENO, owned: false)
        case .syslog: sink = .syslog
        case .file(let path):
            let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK)
            var status = stat()
            if fd >= 0, fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG {
                sink = .descriptor(fd, owned: true)
            } else {
                if fd >= 0 { close(fd) }
                sink = .none
            }
        }
    }

    deinit {
        if case .descriptor(let fd, owned: true) = sink { close(fd) }
    }

    /// A logger writing here at the level the options ask for (off without `debug`).
    public var logger: Logger {
        guard let level else { return Logger(label: "securitykey.pam") { _ in SwiftLogNoOpLogHandler() } }
        var logger = Logger(label: "securitykey.pam") { _ in PAMLogHandler(log: self) }
        logger.logLevel = level
        return logger
    }

    /// Writes one line.
    func write(_ line: String) {
        switch sink {
        case .none: return
        case .syslog: Self.syslog(LOG_AUTHPRIV | LOG_DEBUG, line)
        case .descriptor(let fd, _):
            let bytes = Array("pam_securitykey: \(line)\n".utf8)
            bytes.withUnsafeBytes { buffer in
                guard let base = buffer.baseAddress else { return }
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(fd, base + offset, buffer.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    guard written > 0 else { return }
                    offset += written
                }
            }
        }
    }

    /// Logs a refusal: to syslog always, and to the debug destination when `debug` is on.
    public func refusal(_ message: String) {
        Self.syslog(LOG_AUTHPRIV | LOG_ERR, message)
        if case .syslog = sink { return }
        write(message)
    }

    /// One syslog message (vsyslog, since syslog's own variadic form is not callable from Swift).
    static func syslog(_ priority: Int32, _ message: String) {
        message.withCString { text in
            withVaList([text]) { vsyslog(priority, "pam_securitykey: %s", $0) }
        }
    }
}

/// swift-log's view of a ``PAMLog``.
struct PAMLogHandler: LogHandler {
    let log: PAMLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let details = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        log.write(details.isEmpty ? "\(event.message)" : "\(event.message) \(details)")
    }
}
