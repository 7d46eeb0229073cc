import _SecurityKeyInternals
import CTAP2

/// A registration's extension inputs as a command line or a form states them (flags and text),
/// checked against each other (``validate()``) and parsed into the request's typed inputs
/// (``apply(to:)``). Errors are ``SecurityKeyError/Code/invalidRequest`` and name the option as
/// `securitykey register` spells it (`--prf-salt`).
public struct SecurityKeyRegistrationExtensionOptions: Sendable, Hashable {
    /// credProtect: 1, 2, 3 or a WebAuthn policy name (`CredentialProtectionPolicy(webAuthnName:)` in CTAP2).
    public var credProtect: String?
    /// Refuse, before anything is created, a key that cannot apply ``credProtect``.
    public var enforceCredProtect: Bool
    /// Bytes to store with the credential (credBlob), base64 or base64url.
    public var credBlob: String?
    /// Ask for a credential with a PRF.
    public var prf: Bool
    /// With ``prf``: a PRF input to evaluate at once (hmac-secret-mc), base64 or base64url.
    public var prfSalt: String?
    /// With ``prfSalt``: a second PRF input.
    public var prfSalt2: String?
    /// Ask for a credential with an hmac-secret.
    public var hmacSecret: Bool
    /// Ask for the key's minimum PIN length.
    public var minPINLength: Bool
    /// Ask whether the credential is discoverable (credProps).
    public var credProps: Bool
    /// Make the credential usable for payments on other sites (thirdPartyPayment).
    public var payment: Bool
    /// A legacy U2F AppID whose credentials are excluded too (appidExclude).
    public var appIDExclude: String?
    /// Large-blob support: `required` or `preferred`.
    public var largeBlob: String?

    /// Options as given; none by default.
    public init(
        credProtect: String? = nil, enforceCredProtect: Bool = false, credBlob: String? = nil, prf: Bool = false,
        prfSalt: String? = nil, prfSalt2: String? = nil, hmacSecret: Bool = false, minPINLength: Bool = false,
        credProps: Bool = false, payment: Bool = false, appIDExclude: String? = nil, largeBlob: String? = nil
    ) {
        self.credProtect = credProtect
        self.enforceCredProtect = enforceCredProtect
        self.credBlob = credBlob
        self.prf = prf
        self.prfSalt = prfSalt
        self.prfSalt2 = prfSalt2
        self.hmacSecret = hmacSecret
        self.minPINLength = minPINLength
        self.credProps = credProps
        self.payment = payment
        self.appIDExclude = appIDExclude
        self.largeBlob = largeBlob
    }

    /// Checks the options' names and how they go together, before any value is decoded.
    public func validate() throws(SecurityKeyError) {
        if let largeBlob, SecurityKeyLargeBlobRegistrationInput.SupportRequirement(rawValue: largeBlob) == nil {
            throw SecurityKeyError.invalidOption("--large-blob takes required or preferred.")
        }
        if let credProtect, CredentialProtectionPolicy(webAuthnName: credProtect) == nil {
            throw SecurityKeyError.invalidOption("--cred-protect takes 1, 2, 3 or a WebAuthn policy name.")
        }
        if enforceCredProtect, credProtect == nil { throw SecurityKeyError.invalidOption("--enforce-cred-protect needs --cred-protect.") }
        if prfSalt != nil, !prf { throw SecurityKeyError.invalidOption("--prf-salt needs --prf.") }
        if prfSalt2 != nil, prfSalt == nil { throw SecurityKeyError.invalidOption("--prf-salt2 needs --prf-salt.") }
    }

    /// Sets the request's extension inputs, decoding the values given as text.
    public func apply(to request: inout SecurityKeyCredentialRegistrationRequest) throws(SecurityKeyError) {
        if payment { request.thirdPartyPayment = true }
        if let credProtect, let level = CredentialProtectionPolicy(webAuthnName: credProtect),
            let name = level.webAuthnName
        {
            request.credentialProtection = SecurityKeyCredentialProtection(
                policy: .init(rawValue: name), isEnforced: enforceCredProtect)
        }
        if let credBlob {
            guard let bytes = Base64.decodeEitherAlphabet(credBlob) else {
                throw SecurityKeyError.invalidOption("--cred-blob takes base64 or base64url.")
            }
            request.credentialBlob = bytes
        }
        if prf {
            if let prfSalt {
                request.prf = SecurityKeyPRFRegistrationInput(
                    inputValues: try SecurityKeyPRFAssertionInput.InputValues(text: prfSalt, prfSalt2, option: "--prf-salt"))
            } else {
                request.prf = .checkForSupport
            }
        }
        request.hmacCreateSecret = hmacSecret
        request.minimumPINLength = minPINLength
        request.credentialProperties = credProps
        request.appIDExclude = appIDExclude
        if let largeBlob, let support = SecurityKeyLargeBlobRegistrationInput.SupportRequirement(rawValue: largeBlob) {
            request.largeBlob = SecurityKeyLargeBlobRegistrationInput(supportRequirement: support)
        }
    }
}

/// A sign-in's extension inputs as a command line or a form states them, checked and parsed
/// as ``SecurityKeyRegistrationExtensionOptions`` does (errors name `securitykey authenticate`'s
/// options).
public struct SecurityKeyAssertionExtensionOptions: Sendable, Hashable {
    /// A PRF input, base64 or base64url.
    public var prfSalt: String?
    /// A second PRF input.
    public var prfSalt2: String?
    /// A raw 32-byte hmac-secret salt (``SecurityKeyHMACSecretInput/salt(text:)``).
    public var hmacSalt: String?
    /// A second raw hmac-secret salt.
    public var hmacSalt2: String?
    /// Read the blob stored with the credential (getCredBlob).
    public var credBlob: Bool
    /// Read the credential's large blob.
    public var largeBlobRead: Bool
    /// Bytes to store as the credential's large blob, base64 or base64url.
    public var largeBlobWrite: String?
    /// A legacy U2F AppID to look the credentials up under too (appid).
    public var appID: String?

    /// Options as given; none by default.
    public init(
        prfSalt: String? = nil, prfSalt2: String? = nil, hmacSalt: String? = nil, hmacSalt2: String? = nil,
        credBlob: Bool = false, largeBlobRead: Bool = false, largeBlobWrite: String? = nil, appID: String? = nil
    ) {
        self.prfSalt = prfSalt
        self.prfSalt2 = prfSalt2
        self.hmacSalt = hmacSalt
        self.hmacSalt2 = hmacSalt2
        self.credBlob = credBlob
        self.largeBlobRead = largeBlobRead
        self.largeBlobWrite = largeBlobWrite
        self.appID = appID
    }

    /// Checks how the options go together, before any value is decoded.
    public func validate() throws(SecurityKeyError) {
        if largeBlobRead, largeBlobWrite != nil {
            throw SecurityKeyError.invalidOption("--large-blob-read and --large-blob-write exclude each other.")
        }
        if prfSalt != nil, hmacSalt != nil { throw SecurityKeyError.invalidOption("--prf-salt and --hmac-salt exclude each other.") }
        if prfSalt2 != nil, prfSalt == nil { throw SecurityKeyError.invalidOption("--prf-salt2 needs --prf-salt.") }
        if hmacSalt2 != nil, hmacSalt == nil { throw SecurityKeyError.invalidOption("--hmac-salt2 needs --hmac-salt.") }
    }

    /// Sets the request's extension inputs, decoding the values given as text.
    public func apply(to request: inout SecurityKeyCredentialAssertionRequest) throws(SecurityKeyError) {
        if let prfSalt {
            request.prf = SecurityKeyPRFAssertionInput(
                inputValues: try SecurityKeyPRFAssertionInput.InputValues(text: prfSalt, prfSalt2, option: "--prf-salt"))
        }
        if let hmacSalt {
            request.hmacGetSecret = SecurityKeyHMACSecretInput(
                salt1: try SecurityKeyHMACSecretInput.salt(text: hmacSalt, option: "--hmac-salt"),
                salt2: try hmacSalt2.map { (text) throws(SecurityKeyError) in
                    try SecurityKeyHMACSecretInput.salt(text: text, option: "--hmac-salt2")
                })
        }
        request.getCredentialBlob = credBlob
        request.appID = appID
        if largeBlobRead { request.largeBlob = .read }
        if let largeBlobWrite {
            guard let bytes = Base64.decodeEitherAlphabet(largeBlobWrite) else {
                throw SecurityKeyError.invalidOption("--large-blob-write takes base64 or base64url.")
            }
            request.largeBlob = .write(bytes)
        }
    }
}

extension SecurityKeyPRFAssertionInput.InputValues {
    /// PRF inputs from base64 or base64url text (any length: they are hashed into salts); an
    /// error names `option` for the first and `option` + "2" for the second.
    public init(text first: String, _ second: String?, option: String) throws(SecurityKeyError) {
        guard let one = Base64.decodeEitherAlphabet(first) else { throw SecurityKeyError.invalidOption("\(option) takes base64 or base64url.") }
        var two: [UInt8]?
        if let second {
            guard let bytes = Base64.decodeEitherAlphabet(second) else {
                throw SecurityKeyError.invalidOption("\(option)2 takes base64 or base64url.")
            }
            two = bytes
        }
        self.init(saltInput1: one, saltInput2: two)
    }
}

extension SecurityKeyHMACSecretInput {
    /// ``salt(text:)``, or an error naming `option` as the one that takes it.
    public static func salt(text: String, option: String) throws(SecurityKeyError) -> [UInt8] {
        guard let bytes = salt(text: text) else {
            throw SecurityKeyError.invalidOption("\(option) takes a 32-byte salt as 64 hex digits, base64 or base64url.")
        }
        return bytes
    }
}
