#if canImport(Glibc)
    import Glibc
#endif
import _SecurityKeyInternals
import CSSHSecurityKeyAPI
import FoundationEssentials
import Logging
import SSHSecurityKeyProvider

/// One provider call from a C entry point: the provider over this process's keys and
/// environment, run to completion on the calling thread (``SynchronousCall``).
enum ProviderCall {
    /// `body`'s result, or the failure it ended with.
    static func run<T: Sendable>(
        _ body: @escaping @Sendable (SSHSecurityKeyProvider) async throws(SSHSecurityKeyError) -> T
    ) -> Result<T, SSHSecurityKeyError> {
        ProcessSetup.keepLoaded()
        let logger = ProcessLogging.logger
        let environment = ProcessInfo.processInfo.environment
        let lost = SSHSecurityKeyError(.general, "The security-key call ended without a result.")
        return SynchronousCall.run(orElse: .failure(lost)) { () async -> Result<T, SSHSecurityKeyError> in
            do throws(SSHSecurityKeyError) {
                let provider = try SSHSecurityKeyProvider.system(
                    environment: environment, logger: logger, report: StandardError.line)
                return .success(try await body(provider))
            } catch {
                return .failure(error)
            }
        }
    }
}

/// The library stays loaded once called: OpenSSH dlclose()s its provider after every call,
/// while threads of the concurrency runtime may still be finishing the call's task in this
/// library's code (and, linked statically, run the runtime itself from it). A reference that is
/// never released, taken with RTLD_NODELETE, makes every dlclose() leave it in place.
enum ProcessSetup {
    private static let pinned: Void = LoadedLibrary.pin(containing: #dsohandle)

    static func keepLoaded() { pinned }
}

/// Logging for the host process, set up once: the host (ssh-sk-helper) owns standard output
/// for its protocol, so logs go to standard error, and only when asked for: SECURITYKEY_TRACE=1
/// for the wire trace, SSH_SK_HELPER_DEBUG (OpenSSH's `-v`) for commands and statuses.
enum ProcessLogging {
    static let logger: Logger = {
        let environment = ProcessInfo.processInfo.environment
        let isSet = { (name: String) in EnvironmentSwitch.isOn(environment[name]) }
        let level: Logger.Level? =
            isSet(EnvironmentSwitch.trace) ? .trace : isSet("SSH_SK_HELPER_DEBUG") ? .debug : nil
        LoggingSystem.bootstrap { label in
            guard let level else { return SwiftLogNoOpLogHandler() }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "securitykey.ssh")
    }()
}

/// One sentence for the user on standard error (ssh-sk-helper's standard error is the user's).
enum StandardError {
    @Sendable static func line(_ message: String) {
        FileIO.write(descriptor: FileIO.standardError, "securitykey-sk: \(message)\n")
    }
}
