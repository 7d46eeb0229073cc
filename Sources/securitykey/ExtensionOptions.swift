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

    /// The options as the provider checks and parses them.
    var options: SecurityKeyRegistrationExtensionOptions {
        SecurityKeyRegistrationExtensionOptions(
            credProtect: credProtect, enforceCredProtect: enforceCredProtect, credBlob: credBlob, prf: prf,
            prfSalt: prfSalt, prfSalt2: prfSalt2, hmacSecret: hmacSecret, minPINLength: minPinLength,
            credProps: credProps, payment: payment, appIDExclude: appidExclude, largeBlob: largeBlob)
    }

    func validate() throws {
        do throws(SecurityKeyError) { try options.validate() } catch { throw ValidationError(error.message) }
    }

    /// Sets the request's extension inputs.
    func apply(to request: inout SecurityKeyCredentialRegistrationRequest) throws {
        try usage { () throws(SecurityKeyError) in try options.apply(to: &request) }
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

    /// The options as the provider checks and parses them.
    var options: SecurityKeyAssertionExtensionOptions {
        SecurityKeyAssertionExtensionOptions(
            prfSalt: prfSalt, prfSalt2: prfSalt2, hmacSalt: hmacSalt, hmacSalt2: hmacSalt2, credBlob: credBlob,
            largeBlobRead: largeBlobRead, largeBlobWrite: largeBlobWrite, appID: appid)
    }

    func validate() throws {
        do throws(SecurityKeyError) { try options.validate() } catch { throw ValidationError(error.message) }
    }

    /// Sets the request's extension inputs.
    func apply(to request: inout SecurityKeyCredentialAssertionRequest) throws {
        try usage { () throws(SecurityKeyError) in try options.apply(to: &request) }
    }
}

/// A raw hmac-secret salt (``SecurityKeyHMACSecretInput/salt(text:option:)``).
func parseSalt(_ text: String, option: String) throws(CLIError) -> [UInt8] {
    try usage { () throws(SecurityKeyError) in try SecurityKeyHMACSecretInput.salt(text: text, option: option) }
}
