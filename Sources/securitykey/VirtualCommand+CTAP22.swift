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

    /// The options as the virtual authenticator's.
    var options: VirtualKeyOptions.CTAP22 {
        var o = VirtualKeyOptions.CTAP22()
        (o.pinComplexity, o.pinComplexityURL, o.maxPINLength, o.longTouchReset) = (pinComplexity, pinComplexityURL, maxPINLength, longTouchReset)
        (o.resetTransports, o.uvAttempts, o.fingerprint) = (resetTransports, uvAttempts, fingerprint)
        return o
    }

    func validate() throws {
        do { try options.validate() } catch { throw ValidationError(error.message) }
    }
}
