import CBOR

/// authenticatorGetInfo (CTAP 2.1 §6.4): what the authenticator supports.
public struct GetInfoRequest: CTAP2Request, Hashable {
    /// The getInfo request (it takes no parameters).
    public init() {}

    /// authenticatorGetInfo.
    public var command: CTAP2Command { .getInfo }
    /// None.
    public var parameters: CBORMap? { nil }
    /// The decoded reply.
    public typealias Response = AuthenticatorInfo
}

extension AuthenticatorInfo: CTAP2Response {}

extension CTAP2Command {
    /// authenticatorGetInfo (§6.4).
    public static let getInfo = CTAP2Command(0x04, name: "authenticatorGetInfo")
}
