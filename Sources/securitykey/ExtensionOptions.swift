import _SecurityKeyInternals
import FoundationEssentials
import ArgumentParser
import CBOR
import CTAP2
import Crypto
import SecurityKeys

/// `register`'s extension options (CTAP 2.2 §12, WebAuthn L3 §10).
struct RegistrationExtensionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "credProtect level: 1, 2, 3 or userVerificationOptional, userVerificationOptionalWithCredentialIDList, userVerificationRequired.",
            valueName: "level"))
    var credProtect: String?

    @Flag(name: .long, help: "Fail (before creating anything) when the key cannot apply --cred-protect.")
    var enforceCredProtect = false

    @Option(
        name: .long,
        help: ArgumentHelp("Bytes (base64 or base64url) to store with the credential (credBlob).", valueName: "b64"))
    var credBlob: String?

    @Flag(name: .long, help: "Ask for a credential with a PRF (WebAuthn prf; prf.enabled in the result).")
    var prf = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --prf: evaluate the PRF at once on this input (base64 or base64url), where the key can (hmac-secret-mc).",
            valueName: "b64"))
    var prfSalt: String?

    @Option(name: .long, help: ArgumentHelp("With --prf-salt: a second PRF input.", valueName: "b64"))
    var prfSalt2: String?

    @Flag(name: .long, help: "Ask for a credential with an hmac-secret (hmacCreateSecret).")
    var hmacSecret = false

    @Flag(name: .long, help: "Ask for the key's minimum PIN length (minPinLength; only for RPs the key was told).")
    var minPinLength = false

    @Flag(name: .long, help: "Report whether the credential is discoverable (credProps).")
    var credProps = false

    @Flag(
        name: .long,
        help: "Make the credential usable for payments on other sites, where the key supports it (thirdPartyPayment).")
    var payment = false

    @Option(
        name: .long,
        help: ArgumentHelp("A legacy U2F AppID whose credentials are excluded too (appidExclude).", valueName: "url"))
    var appidExclude: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Ask for large-blob storage (largeBlob): required (fail on a key without it) or preferred.",
            valueName: "support"))
    var largeBlob: String?

    func validate() throws {
        if let largeBlob, SecurityKeyLargeBlobRegistrationInput.SupportRequirement(rawValue: largeBlob) == nil {
            throw ValidationError("--large-blob takes required or preferred.")
        }
        if let credProtect, CredentialProtectionPolicy(webAuthnName: credProtect) == nil {
            throw ValidationError("--cred-protect takes 1, 2, 3 or a WebAuthn policy name.")
        }
        if enforceCredProtect, credProtect == nil {
            throw ValidationError("--enforce-cred-protect needs --cred-protect.")
        }
        if prfSalt != nil, !prf { throw ValidationError("--prf-salt needs --prf.") }
        if prfSalt2 != nil, prfSalt == nil { throw ValidationError("--prf-salt2 needs --prf-salt.") }
    }

    /// Sets the request's extension inputs.
    func apply(to request: inout SecurityKeyCredentialRegistrationRequest) throws {
        if payment { request.thirdPartyPayment = true }
        if let credProtect, let level = CredentialProtectionPolicy(webAuthnName: credProtect),
            let name = level.webAuthnName
        {
            request.credentialProtection = SecurityKeyCredentialProtection(
                policy: .init(rawValue: name), isEnforced: enforceCredProtect)
        }
        if let credBlob {
            guard let bytes = Base64.decodeEitherAlphabet(credBlob) else {
                throw CLIError.usage("--cred-blob takes base64 or base64url.")
            }
            request.credentialBlob = bytes
        }
        if prf {
            if let prfSalt {
                request.prf = SecurityKeyPRFRegistrationInput(
                    inputValues: try prfInputValues(prfSalt, prfSalt2, option: "--prf-salt"))
            } else {
                request.prf = .checkForSupport
            }
        }
        request.hmacCreateSecret = hmacSecret
        request.minimumPINLength = minPinLength
        request.credentialProperties = credProps
        request.appIDExclude = appidExclude
        if let largeBlob, let support = SecurityKeyLargeBlobRegistrationInput.SupportRequirement(rawValue: largeBlob) {
            request.largeBlob = SecurityKeyLargeBlobRegistrationInput(supportRequirement: support)
        }
    }
}

/// `authenticate`'s extension options.
struct AssertionExtensionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp("Evaluate the credential's PRF on this input (base64 or base64url).", valueName: "b64"))
    var prfSalt: String?

    @Option(name: .long, help: ArgumentHelp("A second PRF input.", valueName: "b64"))
    var prfSalt2: String?

    @Option(
        name: .long,
        help: ArgumentHelp("A raw 32-byte hmac-secret salt (base64, base64url or hex).", valueName: "salt"))
    var hmacSalt: String?

    @Option(name: .long, help: ArgumentHelp("A second raw hmac-secret salt.", valueName: "salt"))
    var hmacSalt2: String?

    @Flag(name: .long, help: "Read the blob stored with the credential (getCredBlob).")
    var credBlob = false

    @Flag(name: .long, help: "Read the credential's large blob (largeBlob.read; base64url in the result).")
    var largeBlobRead = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Store these bytes (base64 or base64url) as the credential's large blob (largeBlob.write; needs --credential and the PIN).",
            valueName: "b64"))
    var largeBlobWrite: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A legacy U2F AppID to look the credentials up under too (appid; on the origin's own site, https).",
            valueName: "url"))
    var appid: String?

    func validate() throws {
        if largeBlobRead, largeBlobWrite != nil {
            throw ValidationError("--large-blob-read and --large-blob-write exclude each other.")
        }
        if prfSalt != nil, hmacSalt != nil { throw ValidationError("--prf-salt and --hmac-salt exclude each other.") }
        if prfSalt2 != nil, prfSalt == nil { throw ValidationError("--prf-salt2 needs --prf-salt.") }
        if hmacSalt2 != nil, hmacSalt == nil { throw ValidationError("--hmac-salt2 needs --hmac-salt.") }
    }

    /// Sets the request's extension inputs.
    func apply(to request: inout SecurityKeyCredentialAssertionRequest) throws {
        if let prfSalt {
            request.prf = SecurityKeyPRFAssertionInput(
                inputValues: try prfInputValues(prfSalt, prfSalt2, option: "--prf-salt"))
        }
        if let hmacSalt {
            request.hmacGetSecret = SecurityKeyHMACSecretInput(
                salt1: try parseSalt(hmacSalt, option: "--hmac-salt"),
                salt2: try hmacSalt2.map { try parseSalt($0, option: "--hmac-salt2") })
        }
        request.getCredentialBlob = credBlob
        request.appID = appid
        if largeBlobRead { request.largeBlob = .read }
        if let largeBlobWrite {
            guard let bytes = Base64.decodeEitherAlphabet(largeBlobWrite) else {
                throw CLIError.usage("--large-blob-write takes base64 or base64url.")
            }
            request.largeBlob = .write(bytes)
        }
    }
}

/// PRF inputs from base64 text (any length: they are hashed into salts).
func prfInputValues(_ first: String, _ second: String?, option: String) throws -> SecurityKeyPRFAssertionInput.InputValues {
    guard let one = Base64.decodeEitherAlphabet(first) else { throw CLIError.usage("\(option) takes base64 or base64url.") }
    var two: [UInt8]?
    if let second {
        guard let bytes = Base64.decodeEitherAlphabet(second) else {
            throw CLIError.usage("\(option)2 takes base64 or base64url.")
        }
        two = bytes
    }
    return .init(saltInput1: one, saltInput2: two)
}

/// A raw hmac-secret salt (``SecurityKeyHMACSecretInput/salt(text:)``).
func parseSalt(_ text: String, option: String) throws(CLIError) -> [UInt8] {
    guard let bytes = SecurityKeyHMACSecretInput.salt(text: text) else {
        throw CLIError.usage("\(option) takes a 32-byte salt as 64 hex digits, base64 or base64url.")
    }
    return bytes
}
