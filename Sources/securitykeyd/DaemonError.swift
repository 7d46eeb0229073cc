import SecurityKeys

/// A failure as WebAuthn names it (WebAuthn L3 §5.1.3–4: the DOMException a client rejects
/// with), sent as the D-Bus error `org.securitykey.Daemon1.Error.<name>` with one sentence.
struct DaemonError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The DOMException name.
    struct Name: RawRepresentable, Hashable, Sendable {
        var rawValue: String
        /// The catch-all: the user or the key declined, the deadline passed, no key answered.
        static let notAllowed = Name(rawValue: "NotAllowedError")
        /// The origin may not claim the RP ID, or the caller may not claim the origin.
        static let security = Name(rawValue: "SecurityError")
        /// The caller cancelled the request (or left the bus, or the daemon is stopping).
        static let abort = Name(rawValue: "AbortError")
        /// The key already holds an excluded credential; or no such request of the caller's.
        static let invalidState = Name(rawValue: "InvalidStateError")
        /// The options are malformed (wrong types, bad base64url, too large).
        static let type = Name(rawValue: "TypeError")
        /// No algorithm or authenticator kind asked for is available.
        static let notSupported = Name(rawValue: "NotSupportedError")
    }

    var name: Name
    var message: String

    init(_ name: Name, _ message: String) {
        self.name = name
        self.message = message
    }

    /// The D-Bus error name.
    var busName: String { DaemonInterface.errorPrefix + name.rawValue }

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
