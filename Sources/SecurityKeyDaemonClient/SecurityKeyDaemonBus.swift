/// The D-Bus names of securitykeyd (Docs/Daemon.md, dbus/org.securitykey.Daemon1.xml): one
/// definition that the daemon exports and its clients call.
public enum SecurityKeyDaemonBus {
    /// The well-known bus name.
    public static let busName = "org.securitykey.Daemon1"
    /// The one object.
    public static let objectPath = "/org/securitykey/Daemon1"
    /// The interface.
    public static let interface = "org.securitykey.Daemon1"
    /// The prefix of the error names (`org.securitykey.Daemon1.Error.NotAllowedError`).
    public static let errorPrefix = interface + ".Error."

    /// A method of the interface.
    public struct Method: RawRepresentable, Hashable, Sendable {
        /// The member name.
        public var rawValue: String
        /// Wraps a member name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// `CreateCredential(origin, topOrigin, optionsJSON) -> responseJSON`: a registration.
        public static let createCredential = Method(rawValue: "CreateCredential")
        /// `GetCredential(origin, topOrigin, optionsJSON) -> responseJSON`: a sign-in.
        public static let getCredential = Method(rawValue: "GetCredential")
        /// `GetClientCapabilities() -> a{sb}`.
        public static let getClientCapabilities = Method(rawValue: "GetClientCapabilities")
        /// `ListDevices() -> responseJSON`.
        public static let listDevices = Method(rawValue: "ListDevices")
        /// `EnterClientPin(requestID, pin)`: the PIN a NEEDS_PIN state asked for.
        public static let enterClientPin = Method(rawValue: "EnterClientPin")
        /// `SelectCredential(requestID, credentialID)`: the account a SELECT_CREDENTIAL state offered.
        public static let selectCredential = Method(rawValue: "SelectCredential")
        /// `CancelRequest(requestID)`.
        public static let cancelRequest = Method(rawValue: "CancelRequest")
    }

    /// The signal of a request: `StateChanged(requestID, state, details a{sv})`.
    public static let stateChanged = "StateChanged"
    /// The signal of a key arriving: `DeviceAdded(uri)`.
    public static let deviceAdded = "DeviceAdded"
    /// The signal of a key leaving: `DeviceRemoved(uri)`.
    public static let deviceRemoved = "DeviceRemoved"

    /// A request's state, as `StateChanged` names it.
    public struct State: RawRepresentable, Hashable, Sendable {
        /// The state name.
        public var rawValue: String
        /// Wraps a state name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The request was taken; `call_serial` names the call it answers.
        public static let started = State(rawValue: "STARTED")
        /// No key is present yet.
        public static let waiting = State(rawValue: "WAITING")
        /// Several keys blink; `count` of them.
        public static let selectingDevice = State(rawValue: "SELECTING_DEVICE")
        /// A key was chosen; `device` is its URI.
        public static let connected = State(rawValue: "CONNECTED")
        /// The key waits for a touch; `device` is its URI.
        public static let needsUserPresence = State(rawValue: "NEEDS_USER_PRESENCE")
        /// Built-in verification failed; `attempts_left` (-1 when unknown).
        public static let needsUserVerification = State(rawValue: "NEEDS_USER_VERIFICATION")
        /// The key needs its PIN (answer with `EnterClientPin`); `attempts_left` (-1 when unknown).
        public static let needsPIN = State(rawValue: "NEEDS_PIN")
        /// Several accounts: `credentials` lists them as JSON (answer with `SelectCredential`).
        public static let selectCredential = State(rawValue: "SELECT_CREDENTIAL")
        /// The request succeeded.
        public static let completed = State(rawValue: "COMPLETED")
        /// The request failed.
        public static let failed = State(rawValue: "FAILED")
    }

    /// The DOMException name of a failure (WebAuthn L3 §5.1.3–4), sent as the D-Bus error
    /// ``SecurityKeyDaemonBus/errorPrefix`` + name.
    public struct ErrorName: RawRepresentable, Hashable, Sendable {
        /// The DOMException name.
        public var rawValue: String
        /// Wraps a DOMException name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The catch-all: the user or the key declined, the deadline passed, no key answered.
        public static let notAllowed = ErrorName(rawValue: "NotAllowedError")
        /// The origin may not claim the RP ID, or the caller may not claim the origin.
        public static let security = ErrorName(rawValue: "SecurityError")
        /// The caller cancelled the request (or left the bus, or the daemon is stopping).
        public static let abort = ErrorName(rawValue: "AbortError")
        /// The key already holds an excluded credential; or no such request of the caller's.
        public static let invalidState = ErrorName(rawValue: "InvalidStateError")
        /// The options are malformed (wrong types, bad base64url, too large).
        public static let type = ErrorName(rawValue: "TypeError")
        /// No algorithm or authenticator kind asked for is available.
        public static let notSupported = ErrorName(rawValue: "NotSupportedError")

        /// The D-Bus error name.
        public var busName: String { SecurityKeyDaemonBus.errorPrefix + rawValue }
    }
}
