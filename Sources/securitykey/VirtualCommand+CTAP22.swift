import ArgumentParser
import VirtualAuthenticator

/// `virtual serve`'s CTAP 2.2 choices (the default ctap22 profile only).
struct VirtualCTAP22Options: ParsableArguments {
    @Flag(
        name: .long,
        help:
            "With --profile ctap22: enforce a PIN complexity policy (pinComplexityPolicy): a PIN of one repeated character or a run of consecutive characters is refused."
    )
    var pinComplexity = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --pin-complexity: where the policy is described (pinComplexityPolicyURL, https).", valueName: "url"))
    var pinComplexityURL: String?

    @Option(
        name: .long,
        help: ArgumentHelp("With --profile ctap22: the longest PIN in code points (maxPINLength, 4 to 63).", valueName: "n"))
    var maxPINLength: Int?

    @Flag(
        name: .long, help: "With --profile ctap22: say that a reset needs a long touch (longTouchForReset).")
    var longTouchReset = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --profile ctap22: the transports a reset works over (transportsForReset, comma-separated: usb, nfc, ...).",
            valueName: "list"))
    var resetTransports: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --profile ctap22 and --bio: built-in verifications a platform should try before the PIN (preferredPlatformUvAttempts, 1 to 25; default 3).",
            valueName: "n"))
    var uvAttempts: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --bio: how the simulated finger answers built-in user verification: match (the default) or mismatch (every verification fails, spending uvRetries until UV blocks).",
            valueName: "answer"))
    var fingerprint: String?

    /// The built-in verification answer --fingerprint names (match when not given).
    var userVerification: UserVerificationPolicy { fingerprint == "mismatch" ? .mismatch : .match }

    /// Whether any of these options was given.
    var isUsed: Bool {
        pinComplexity || pinComplexityURL != nil || maxPINLength != nil || longTouchReset
            || resetTransports != nil || uvAttempts != nil
    }

    func validate() throws {
        if pinComplexityURL != nil, !pinComplexity {
            throw ValidationError("--pin-complexity-url needs --pin-complexity.")
        }
        if let maxPINLength, !(4...63).contains(maxPINLength) {
            throw ValidationError("--max-pin-length takes 4 to 63.")
        }
        if let uvAttempts, !(1...25).contains(uvAttempts) {
            throw ValidationError("--uv-attempts takes 1 to 25.")
        }
        if let fingerprint, !["match", "mismatch"].contains(fingerprint) {
            throw ValidationError("--fingerprint takes match or mismatch.")
        }
    }

    /// Sets the CTAP 2.2 features of `settings`.
    func apply(to settings: inout VirtualKeySettings) {
        settings.ctap22.pinComplexityPolicy = pinComplexity
        settings.ctap22.pinComplexityPolicyURL = pinComplexityURL
        if let maxPINLength { settings.ctap22.maxPINLength = maxPINLength }
        settings.ctap22.longTouchForReset = longTouchReset
        settings.ctap22.transportsForReset = resetTransports.map {
            $0.split(separator: ",").map { String($0.filter { !$0.isWhitespace }) }
        }
        if let uvAttempts { settings.ctap22.preferredPlatformUVAttempts = uvAttempts }
    }
}
