import CBOR

/// A request that carries a pinUvAuthParam (CTAP 2.1 §6.5.5.8 "Using pinUvAuthToken"): it
/// names, in its own folder, the permission its token needs and the message its pinUvAuthParam
/// authenticates; ``authorize(with:)`` does the rest the same way for every command.
public protocol PINUVAuthorizedRequest: CTAP2Request {
    /// The permission a token must carry for this command (§6.5.5.7).
    static var permission: PINUVAuthTokenPermissions { get }
    /// The RP ID an RP-bound permission is checked against; nil for none.
    var permissionRPID: String? { get }
    /// The message the pinUvAuthParam authenticates, laid out as the command's section says.
    func pinUVAuthMessage() throws(CTAP2Error) -> [UInt8]
    /// The permission `token` must carry for this request: ``permission``, or another one the
    /// request also accepts and the token has (a persistent token's pcmr for the read-only
    /// credential management subcommands, CTAP 2.2 §6.8).
    func requiredPermission(of token: PINUVAuthToken) -> PINUVAuthTokenPermissions
    /// The pinUvAuthParam as sent.
    var pinUVAuthParam: [UInt8]? { get set }
    /// The PIN/UV auth protocol version as sent.
    var pinUVAuthProtocol: UInt64? { get set }
}

extension PINUVAuthorizedRequest {
    /// No RP ID unless the command binds one.
    public var permissionRPID: String? { nil }

    /// ``permission``, whatever the token.
    public func requiredPermission(of token: PINUVAuthToken) -> PINUVAuthTokenPermissions { Self.permission }

    /// Sets pinUvAuthParam and pinUvAuthProtocol from `token`, after checking that the token
    /// carries ``permission`` (for ``permissionRPID`` when the permission is RP-bound).
    public mutating func authorize(with token: PINUVAuthToken) throws(CTAP2Error) {
        try token.check(permission: requiredPermission(of: token), rpID: permissionRPID)
        pinUVAuthParam = try token.authenticate(pinUVAuthMessage())
        pinUVAuthProtocol = UInt64(token.pinUVAuthProtocol.version)
    }

    /// The message of the commands whose pinUvAuthParam authenticates the client data hash
    /// alone (makeCredential §6.1.2, getAssertion §6.2.2).
    public static func clientDataHashMessage(_ clientDataHash: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        guard clientDataHash.count == 32 else {
            throw CTAP2Error(
                .invalidRequest, "The client data hash must be 32 bytes, not \(clientDataHash.count).")
        }
        return clientDataHash
    }

    /// subCommand ‖ CBOR(subCommandParams), the tail of the subcommand commands' messages
    /// (§6.7, §6.8, §6.11).
    static func subcommandMessage(_ subCommand: UInt8, _ parameters: CBORMap?) -> [UInt8] {
        [subCommand] + (parameters.map { CBOREncoder.encode(.map($0)) } ?? [])
    }

    /// 32×0xff ‖ the command byte: the prefix of authenticatorConfig's and authenticatorLargeBlobs'
    /// messages (§6.10.2, §6.11), which no client data hash can start with by chance.
    static func commandPrefix(_ command: CTAP2Command) -> [UInt8] {
        [UInt8](repeating: 0xFF, count: 32) + [command.rawValue]
    }
}

extension PINUVAuthToken {
    /// The pinUvAuthParam of a `Request` over `message`: checks that the token carries the
    /// request type's permission (for `rpID` when it is RP-bound), then authenticates.
    public func pinUVAuthParam<Request: PINUVAuthorizedRequest>(
        for request: Request.Type, rpID: String? = nil, message: () throws(CTAP2Error) -> [UInt8]
    ) throws(CTAP2Error) -> [UInt8] {
        try check(permission: Request.permission, rpID: rpID)
        return try authenticate(message())
    }
}
