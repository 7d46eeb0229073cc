import Transport

/// Why the device layer asks for a PIN.
public struct PINPrompt: Hashable, Sendable {
    /// What the PIN is asked for.
    public struct Purpose: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The current PIN, to verify the user (a PIN/UV token).
        public static let verify = Purpose(rawValue: "verify")
        /// The current PIN, before a PIN change the key demands (forcePINChange).
        public static let currentForChange = Purpose(rawValue: "current-for-change")
        /// A new PIN, replacing the current one because the key demands it.
        public static let newPIN = Purpose(rawValue: "new-pin")
        public var description: String { rawValue }
    }

    /// What the PIN is asked for.
    public var purpose: Purpose
    /// The key that asks.
    public var device: DeviceDescriptor
    /// PIN attempts left as the key reported them, where it did; a prompt for a new PIN has none.
    public var attemptsLeft: Int?
    /// The shortest PIN the key accepts, in Unicode code points (for a new PIN).
    public var minimumLength: Int

    /// Creates a prompt.
    public init(purpose: Purpose, device: DeviceDescriptor, attemptsLeft: Int?, minimumLength: Int = 4) {
        self.purpose = purpose
        self.device = device
        self.attemptsLeft = attemptsLeft
        self.minimumLength = minimumLength
    }
}

/// What an operation is waiting for, as a user interface shows it.
public enum AuthenticatorActivity: Hashable, Sendable {
    /// No key is present yet: insert or tap one.
    case waitingForDevice
    /// Several keys are present and blink: touch the one to use.
    case selectingByTouch(count: Int)
    /// A key left a pending choice: removed, declined, or failed (the others carry on).
    case deviceLeft(deviceURI: String, error: AuthenticatorError)
    /// The key at this URI waits for a touch.
    case touchNeeded(deviceURI: String)
    /// Built-in user verification (a fingerprint) failed; the user may try again.
    case userVerificationRetry(deviceURI: String, attemptsLeft: Int?)
    /// Built-in user verification is blocked; the PIN is used instead.
    case fallingBackToPIN(deviceURI: String)
}

/// The user, as the device layer sees them: answers PIN prompts and hears what an operation
/// waits for. The provider API and the CLI each implement it once; securitykeyd reaches the user
/// through the provider API's.
public protocol AuthenticatorInteraction: Sendable {
    /// Whether ``pin(_:)`` can reach a person; when false, operations that need a PIN fail
    /// with ``AuthenticatorError/Code/notInteractive`` instead of asking.
    var canPrompt: Bool { get }
    /// The PIN the prompt asks for, or nil to cancel the operation.
    func pin(_ prompt: PINPrompt) async -> String?
    /// Called (from any thread) each time an operation starts waiting on the user.
    func activity(_ activity: AuthenticatorActivity)
    /// Called (from any thread) when the user must do something specific with the key (hold
    /// the touch, remove and re-insert it); the interface shows ``AuthenticatorInstruction/message``.
    func instruct(_ instruction: AuthenticatorInstruction)
}

extension AuthenticatorInteraction {
    /// Default: a person can be asked.
    public var canPrompt: Bool { true }

    /// Default: activities are not shown.
    public func activity(_ activity: AuthenticatorActivity) {}

    /// Default: instructions are not shown.
    public func instruct(_ instruction: AuthenticatorInstruction) {}
}

/// Something the user must do with a key for an operation to go on, with the sentence to show.
public struct AuthenticatorInstruction: Hashable, Sendable {
    /// What is asked of the user; a set that can grow.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// Touch the key to confirm the reset.
        public static let touchToReset = Kind(rawValue: "touch-to-reset")
        /// Touch the key and hold it (longTouchForReset) to confirm the reset.
        public static let holdTouchToReset = Kind(rawValue: "hold-touch-to-reset")
        /// Remove the key and insert it again (or lift the card and put it back): it accepts a
        /// reset only just after power-up.
        public static let reinsertToReset = Kind(rawValue: "reinsert-to-reset")
        public var description: String { rawValue }
    }

    /// What is asked.
    public var kind: Kind
    /// The key concerned.
    public var deviceURI: String
    /// One sentence for the user.
    public var message: String

    /// Creates an instruction.
    public init(kind: Kind, deviceURI: String, message: String) {
        self.kind = kind
        self.deviceURI = deviceURI
        self.message = message
    }
}
