import _SecurityKeyInternals
import ArgumentParser
import FoundationEssentials
import Logging

/// Options every device command takes.
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The key to use: hid:/dev/hidrawN, pcsc:READER (or pcsc:INDEX), udp:HOST:PORT. Default: the only key present (register and authenticate: the one touched).",
            valueName: "uri"))
    var device: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A CTAPHID-over-UDP key to list and choose from (HOST:PORT, udp:HOST:PORT, udp:[::1]:PORT); repeatable. Also SECURITYKEY_UDP=HOST:PORT,... .",
            valueName: "host:port"))
    var udp: [String] = []

    @Flag(
        name: .long,
        help: "Print machine-readable JSON on standard output (field names are stable; see Docs/CLI.md).")
    var json = false

    @Option(
        name: .long,
        help: ArgumentHelp("Seconds to wait for the key, including for a touch.", valueName: "seconds"))
    var timeout: Double = 30

    @Flag(
        name: .shortAndLong,
        help:
            "Log commands and statuses on standard error; twice for a wire trace (also SECURITYKEY_TRACE=1). PINs and tokens are never logged."
    )
    var verbose: Int

    /// The timeout as a Duration.
    var timeoutDuration: Duration {
        .milliseconds(Int64((max(timeout, 0.1) * 1000).rounded()))
    }

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else {
            throw ValidationError("--timeout must be between 0 and 3600 seconds.")
        }
    }

    /// A logger for the libraries, at the level `-v` and SECURITYKEY_TRACE ask for.
    func makeLogger(label: String = "securitykey") -> Logger {
        LogBootstrap.bootstrapOnce()
        var logger = Logger(label: label)
        if verbose >= 2 || EnvironmentSwitch.isOn(ProcessInfo.processInfo.environment[EnvironmentSwitch.trace]) {
            logger.logLevel = .trace
        } else if verbose == 1 {
            logger.logLevel = .debug
        } else {
            logger.logLevel = .warning
        }
        return logger
    }
}

enum LogBootstrap {
    private static let once: Void = {
        LoggingSystem.bootstrap { label in StreamLogHandler.standardError(label: label) }
    }()

    /// Sends every log to standard error; safe to call more than once.
    static func bootstrapOnce() { once }
}
