import Crypto

/// The `prf` extension's assertion input (WebAuthn L3 §10.1.4 `AuthenticationExtensionsPRFInputs`;
/// AuthenticationServices' `ASAuthorizationPublicKeyCredentialPRFAssertionInput`): the values to
/// evaluate the credential's PRF on, for any credential or per credential.
public struct SecurityKeyPRFAssertionInput: Hashable, Sendable {
    /// One or two PRF inputs (`AuthenticationExtensionsPRFValues`): arbitrary bytes, hashed into
    /// hmac-secret salts with ``salts``.
    public struct InputValues: Hashable, Sendable, CustomStringConvertible {
        /// The first input (`first`).
        public var saltInput1: [UInt8]
        /// The optional second input (`second`).
        public var saltInput2: [UInt8]?

        /// Inputs to evaluate.
        public init(saltInput1: [UInt8], saltInput2: [UInt8]? = nil) {
            self.saltInput1 = saltInput1
            self.saltInput2 = saltInput2
        }

        /// The hmac-secret salts for these inputs: SHA-256(UTF-8 "WebAuthn PRF" ‖ 0x00 ‖ input)
        /// each (WebAuthn L3 §10.1.4, client extension processing), so that values a web page
        /// chooses can never collide with salts other hmac-secret users send.
        public var salts: (salt1: [UInt8], salt2: [UInt8]?) {
            (Self.salt(saltInput1), saltInput2.map(Self.salt))
        }

        static func salt(_ input: [UInt8]) -> [UInt8] {
            var hash = SHA256()
            hash.update(data: Array("WebAuthn PRF".utf8) + [0x00])
            hash.update(data: input)
            return Array(hash.finalize())
        }

        /// Leaves the inputs out: applications derive keys from them.
        public var description: String { "InputValues(\(saltInput2 == nil ? 1 : 2) input(s), redacted)" }
    }

    /// Values for whichever credential is used (`eval`).
    public var inputValues: InputValues?
    /// Values by credential ID (`evalByCredential`), preferred over ``inputValues`` for that
    /// credential; only with allowed credentials, and only IDs among them.
    public var perCredentialInputValues: [[UInt8]: InputValues]?

    /// An input.
    public init(inputValues: InputValues?, perCredentialInputValues: [[UInt8]: InputValues]? = nil) {
        self.inputValues = inputValues
        self.perCredentialInputValues = perCredentialInputValues
    }
}

/// The `prf` extension's registration input (WebAuthn L3 §10.1.4; AuthenticationServices'
/// `ASAuthorizationPublicKeyCredentialPRFRegistrationInput`): ask for a credential with a PRF,
/// and optionally evaluate it at once where the key can (CTAP 2.2 `hmac-secret-mc`).
public struct SecurityKeyPRFRegistrationInput: Hashable, Sendable {
    /// Whether only support is asked for (no evaluation).
    public var shouldCheckForSupport: Bool
    /// Values to evaluate during registration, where the key can.
    public var inputValues: SecurityKeyPRFAssertionInput.InputValues?

    /// Ask whether the new credential supports the PRF, evaluating nothing.
    public static var checkForSupport: Self { Self(shouldCheckForSupport: true, inputValues: nil) }

    /// Ask for a PRF-capable credential and evaluate `inputValues` at once where the key can.
    public init(inputValues: SecurityKeyPRFAssertionInput.InputValues?) {
        self.init(shouldCheckForSupport: inputValues == nil, inputValues: inputValues)
    }

    private init(shouldCheckForSupport: Bool, inputValues: SecurityKeyPRFAssertionInput.InputValues?) {
        self.shouldCheckForSupport = shouldCheckForSupport
        self.inputValues = inputValues
    }
}

/// The `prf` extension's registration output (AuthenticationServices'
/// `ASAuthorizationPublicKeyCredentialPRFRegistrationOutput`; WebAuthn `enabled` and `results`).
public struct SecurityKeyPRFRegistrationOutput: Hashable, Sendable, CustomStringConvertible {
    /// Whether the new credential has a PRF (the key's hmac-secret output).
    public var isSupported: Bool
    /// The PRF of the first input, when the key evaluated it during registration.
    public var first: SymmetricKey?
    /// The PRF of the second input, when one was given and evaluated.
    public var second: SymmetricKey?

    /// An output.
    public init(isSupported: Bool, first: SymmetricKey? = nil, second: SymmetricKey? = nil) {
        self.isSupported = isSupported
        self.first = first
        self.second = second
    }

    /// Hashes only what is not secret; equality compares the keys (in constant time).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(isSupported)
        hasher.combine(first == nil)
        hasher.combine(second == nil)
    }

    public var description: String {
        "SecurityKeyPRFRegistrationOutput(isSupported: \(isSupported), results: \(first == nil ? "none" : "redacted"))"
    }
}

/// The `prf` extension's assertion output (AuthenticationServices'
/// `ASAuthorizationPublicKeyCredentialPRFAssertionOutput`; WebAuthn `results`).
public struct SecurityKeyPRFAssertionOutput: Hashable, Sendable, CustomStringConvertible {
    /// The PRF of the first input (32 bytes).
    public var first: SymmetricKey
    /// The PRF of the second input, when one was given.
    public var second: SymmetricKey?

    /// An output.
    public init(first: SymmetricKey, second: SymmetricKey? = nil) {
        self.first = first
        self.second = second
    }

    /// Hashes only what is not secret; equality compares the keys (in constant time).
    public func hash(into hasher: inout Hasher) { hasher.combine(second == nil) }

    public var description: String { "SecurityKeyPRFAssertionOutput(\(second == nil ? 1 : 2) result(s), redacted)" }
}
