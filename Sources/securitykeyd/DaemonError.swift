import SecurityKeyDaemonClient
import SecurityKeys

/// A failure as WebAuthn names it (WebAuthn L3 §5.1.3–4: the DOMException a client rejects
/// with), sent as the D-Bus error `org.securitykey.Daemon1.Error.<name>` with one sentence.
struct DaemonError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The DOMException name (the names are shared with the daemon's clients).
    typealias Name = SecurityKeyDaemonBus.ErrorName

    var name: Name
    var message: String

    init(_ name: Name, _ message: String) {
        self.name = name
        self.message = message
    }

    /// The D-Bus error name.
    var busName: String { name.busName }

    var description: String { "\(name.rawValue): \(message)" }

    /// The provider's error as WebAuthn names it.
    init(_ error: SecurityKeyError) {
        switch error.code {
        case .invalidRequest: self.init(.type, error.message)
        case .invalidOrigin, .invalidRelyingParty: self.init(.security, error.message)
        case .matchedExcludedCredential: self.init(.invalidState, error.message)
        case .notHandled: self.init(.notSupported, error.message)
        default: self.init(.notAllowed, error.message)
        }
    }
}
