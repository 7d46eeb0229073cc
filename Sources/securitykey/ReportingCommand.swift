import _SecurityKeyInternals
import ArgumentParser
import Authenticators
import SecurityKeys
import Synchronization
import Transport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A subcommand whose failures become one sentence on standard error (and a JSON error object
/// on standard output under `--json`) and a documented exit status.
protocol ReportingCommand: AsyncParsableCommand, Sendable {
    /// Whether the user asked for JSON.
    var wantsJSON: Bool { get }
    /// Whether SIGINT and SIGTERM cancel ``execute()`` (a touch wait sends CTAPHID_CANCEL, a PC/SC
    /// wait its cancel APDU) rather than kill the process; commands that handle them say false.
    var cancelsOnSignal: Bool { get }
    /// The command's work.
    func execute() async throws
}

extension ReportingCommand {
    var cancelsOnSignal: Bool { true }

    mutating func run() async throws {
        do {
            if cancelsOnSignal {
                try await SignalCancellation.run { [self] in try await self.execute() }
            } else {
                try await execute()
            }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            let failure = CLIError.from(error)
            report(failure)
            throw ExitCode(failure.status.rawValue)
        }
    }

    /// One sentence on standard error, and the JSON error object under `--json`.
    func report(_ failure: CLIError) {
        Console.err("securitykey: \(failure.message)")
        if wantsJSON {
            Console.json(.object([("error", failure.json)]))
        }
    }
}

/// Turns SIGINT and SIGTERM into task cancellation, so that an interrupted command still tells
/// the key to stop (CTAPHID_CANCEL) and leaves the terminal as it found it.
enum SignalCancellation {
    /// Terminal settings to put back if the process must exit while a PIN prompt has echo off.
    static let terminal = Mutex<(fd: Int32, settings: termios)?>(nil)
    /// Runs `body`; a first signal cancels it, and if it has not ended a second later (a blocking
    /// read at a PIN prompt cannot be cancelled), or on a second signal, the process restores the
    /// terminal and exits with the "cancelled" status.
    static func run(_ body: @escaping @Sendable () async throws -> Void) async throws {
        // The body's own `cancelled` error says what it was doing (waiting for a card another
        // application held, say); any other ending is reported as the plain cancellation the
        // user asked for.
        try await ProcessSignals.runCancellingOnInterrupt(body, keeping: { error in
            switch error {
            case let error as TransportError: error.code == .cancelled
            case let error as AuthenticatorError: error.code == .cancelled
            case let error as SecurityKeyError: error.code == .cancelled
            default: false
            }
        }, giveUp: { exitCancelled() })
    }

    /// Restores the terminal and exits with the documented "cancelled" status.
    static func exitCancelled() -> Never {
        terminal.withLock { saved in
            if var saved { _ = tcsetattr(saved.fd, TCSAFLUSH, &saved.settings) }
        }
        Console.err("securitykey: The operation was cancelled.")
        exit(CLIExitStatus.cancelled.rawValue)
    }
}
