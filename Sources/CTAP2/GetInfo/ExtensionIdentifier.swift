/// An extension identifier an authenticator reports in getInfo (CTAP 2.2 §6.4 `extensions`,
/// §12 "Defined Extensions"; WebAuthn §10 for the client-side names).
///
/// Identifiers this library does not know keep their string, so nothing a key reports is lost.
public struct ExtensionIdentifier: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The identifier as the key sends it.
    public var rawValue: String
    /// An extension by identifier.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `credProtect` (§12.1): credential protection policy.
    public static let credProtect = ExtensionIdentifier(rawValue: "credProtect")
    /// `credBlob` (§12.2): a small blob stored with the credential.
    public static let credBlob = ExtensionIdentifier(rawValue: "credBlob")
    /// `largeBlobKey` (§12.3): a key for the credential's entry in the large-blob array.
    public static let largeBlobKey = ExtensionIdentifier(rawValue: "largeBlobKey")
    /// `minPinLength` (§12.4): tells chosen RPs the minimum PIN length.
    public static let minPINLength = ExtensionIdentifier(rawValue: "minPinLength")
    /// `hmac-secret` (§12.5): a per-credential PRF at assertion time.
    public static let hmacSecret = ExtensionIdentifier(rawValue: "hmac-secret")
    /// `hmac-secret-mc` (CTAP 2.2 §12.6): hmac-secret evaluated during makeCredential.
    public static let hmacSecretMakeCredential = ExtensionIdentifier(rawValue: "hmac-secret-mc")
    /// `thirdPartyPayment` (CTAP 2.2 §12.7): the credential may be used for third-party payments.
    public static let thirdPartyPayment = ExtensionIdentifier(rawValue: "thirdPartyPayment")
    /// `largeBlob` (WebAuthn §10.1.5): the client-side large-blob extension.
    public static let largeBlob = ExtensionIdentifier(rawValue: "largeBlob")
    /// `credProps` (WebAuthn §10.1.3): credential properties reported by the client.
    public static let credProps = ExtensionIdentifier(rawValue: "credProps")
    /// `prf` (WebAuthn §10.1.4): the client-side PRF built on hmac-secret.
    public static let prf = ExtensionIdentifier(rawValue: "prf")
    /// `uvm` (WebAuthn Level 2 §10.3): the user verification methods used.
    public static let uvm = ExtensionIdentifier(rawValue: "uvm")

    public static func < (lhs: ExtensionIdentifier, rhs: ExtensionIdentifier) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { rawValue }
}
