/// A pinUvAuthToken obtained from an authenticator (CTAP 2.1 §6.5.2 "pinUvAuthToken"), with
/// the protocol, permissions and permissions RP ID it was issued for.
///
/// The token bytes stay inside this object: callers get pinUvAuthParams
/// (``authenticate(_:)``), never the token. ``wipe()`` overwrites the bytes when the caller is
/// done, and `deinit` does so at the latest; a wiped token throws
/// ``CTAP2Error/Code/secretWiped``.
///
/// Limits of wiping in Swift: `[UInt8]` is copy-on-write, and the optimizer, swift-crypto
/// (`SymmetricKey`, HMAC and AES contexts) and the CBOR encoder make copies this type cannot
/// reach. Wiping shortens how long the token sits in memory; it cannot promise that no copy
/// remains.
public final class PINUVAuthToken: Sendable, CustomStringConvertible {
    /// The PIN/UV auth protocol the token belongs to.
    public let pinUVAuthProtocol: any PINUVAuthProtocol
    /// The permissions asked for when the token was issued.
    public let permissions: PINUVAuthTokenPermissions
    /// The permissions RP ID the token was bound to, if one was given.
    public let rpID: String?
    private let token: PINUVSecretBytes

    /// Wraps token bytes (for example from a recording); the bytes are copied.
    public init(
        token: [UInt8], pinUVAuthProtocol: any PINUVAuthProtocol, permissions: PINUVAuthTokenPermissions,
        rpID: String?
    ) {
        self.token = PINUVSecretBytes(token)
        self.pinUVAuthProtocol = pinUVAuthProtocol
        self.permissions = permissions
        self.rpID = rpID
    }

    /// Whether ``wipe()`` has run.
    public var isWiped: Bool { token.isWiped }

    /// Overwrites the token with zeros; the token cannot be used afterwards.
    public func wipe() { token.wipe() }

    /// The pinUvAuthParam of `message`: `authenticate(pinUvAuthToken, message)` of the token's
    /// protocol (§6.5.6 / §6.5.7).
    public func authenticate(_ message: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        try token.withBytes("pinUvAuthToken") { (bytes) throws(CTAP2Error) in
            pinUVAuthProtocol.authenticate(key: bytes, message)
        }
    }

    /// Runs `body` with the token bytes (for this module's key derivations and the export of a
    /// persistent token); throws once wiped.
    func withSecretBytes<R>(_ body: ([UInt8]) throws(CTAP2Error) -> R) throws(CTAP2Error) -> R {
        try token.withBytes("pinUvAuthToken", body)
    }

    /// Checks, before the key is asked, that the token carries `permission` and, for
    /// RP-bound permissions, that `rpID` matches the permissions RP ID.
    public func check(permission: PINUVAuthTokenPermissions, rpID: String?) throws(CTAP2Error) {
        guard permissions.contains(permission) else {
            throw CTAP2Error(
                .unauthorizedPermission,
                "The PIN/UV token was issued for \(permissions), not \(permission); get a token with that permission."
            )
        }
        if PINUVAuthTokenPermissions.rpBound.contains(permission), let bound = self.rpID, let rpID,
            bound != rpID
        {
            throw CTAP2Error(
                .unauthorizedPermission,
                "The PIN/UV token is bound to the relying party \(bound), not \(rpID).")
        }
    }

    /// Redacted: names the protocol, permissions and RP ID, never the token.
    public var description: String {
        "PINUVAuthToken(protocol: \(pinUVAuthProtocol.version), permissions: \(permissions), rpID: \(rpID ?? "none"))"
    }
}
