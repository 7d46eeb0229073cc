import ArgumentParser
import Authenticators
import Dispatch
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
    /// Set once the command has ended, so a pending grace-period exit does nothing.
    private static let finished = Atomic<Bool>(false)

    /// Runs `body`; a first signal cancels it, and if it has not ended a second later (a blocking
    /// read at a PIN prompt cannot be cancelled), or on a second signal, the process restores the
    /// terminal and exits with the "cancelled" status.
    static func run(_ body: @escaping @Sendable () async throws -> Void) async throws {
        let (signals, stop) = signalNames()
        defer {
            finished.store(true, ordering: .releasing)
            stop()
        }
        // Children answer true (the body finished) or false (a signal came).
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await body()
                return true
            }
            group.addTask {
                var received = 0
                for await _ in signals {
                    received += 1
                    if received > 1 { exitCancelled() }
                    if received == 1 {
                        // Make a cancelled but still blocked body end the process after a grace period.
                        DispatchQueue.global().asyncAfter(deadline: .now() + 1) {
                            if !finished.load(ordering: .acquiring) { exitCancelled() }
                        }
                        return false
                    }
                }
                return false
            }
            // The first child to end decides: the body's result, or the signal's cancellation.
            defer { group.cancelAll() }
            if try await group.next() == true { return }
            group.cancelAll()
            // A signal: the body, cancelled, usually ends at once. Its own `cancelled` error says
            // what it was doing (waiting for a card another application held, say); any other
            // ending is reported as the plain cancellation the user asked for.
            do {
                while let done = try await group.next() {
                    if done { break }
                }
            } catch let error as TransportError where error.code == .cancelled {
                throw error
            } catch let error as AuthenticatorError where error.code == .cancelled {
                throw error
            } catch let error as SecurityKeyError where error.code == .cancelled {
                throw error
            } catch {}
            throw CancellationError()
        }
    }

    /// SIGINT and SIGTERM (or `signals`), by name, as they arrive (their default actions are off meanwhile);
    /// `stop` ends the stream and the watching.
    static func signalNames(_ signals: [(Int32, String)] = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")])
        -> (stream: AsyncStream<String>, stop: () -> Void)
    {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        var sources: [any DispatchSourceSignal] = []
        for (number, name) in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(name) }
            source.resume()
            sources.append(source)
        }
        return (
            stream,
            {
                for source in sources { source.cancel() }
                continuation.finish()
            }
        )
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
