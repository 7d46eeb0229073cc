import CBOR

/// The parameters of authenticatorGetAssertion (CTAP 2.2 §6.2).
public struct GetAssertionRequest: CTAP2Request, Hashable {
    /// The relying party ID.
    public var rpID: String
    /// SHA-256 of the serialized client data (32 bytes).
    public var clientDataHash: [UInt8]
    /// Credentials acceptable to the relying party; empty or nil asks for discoverable ones.
    public var allowList: [PublicKeyCredentialDescriptor]?
    /// Authenticator extension inputs, by extension identifier.
    public var extensions: CBORMap?
    /// up / uv options (rk is not valid here).
    public var options: CommandOptions?
    /// The PIN/UV auth parameter, where a pinUvAuthToken is used.
    public var pinUVAuthParam: [UInt8]?
    /// The PIN/UV auth protocol version of ``pinUVAuthParam``.
    public var pinUVAuthProtocol: UInt64?

    /// Creates a request.
    public init(
        rpID: String, clientDataHash: [UInt8], allowList: [PublicKeyCredentialDescriptor]? = nil,
        extensions: CBORMap? = nil, options: CommandOptions? = nil, pinUVAuthParam: [UInt8]? = nil,
        pinUVAuthProtocol: UInt64? = nil
    ) {
        self.rpID = rpID
        self.clientDataHash = clientDataHash
        self.allowList = allowList
        self.extensions = extensions
        self.options = options
        self.pinUVAuthParam = pinUVAuthParam
        self.pinUVAuthProtocol = pinUVAuthProtocol
    }
}

extension GetAssertionRequest {
    /// authenticatorGetAssertion.
    public var command: CTAP2Command { .getAssertion }
    /// The decoded reply.
    public typealias Response = GetAssertionResponse

    /// Refuses what the spec forbids before anything is sent.
    public func validate() throws(CTAP2Error) {
        guard clientDataHash.count == 32 else {
            throw CTAP2Error(
                .invalidRequest, "The client data hash must be 32 bytes, not \(clientDataHash.count).")
        }
        guard options?.residentKey == nil else {
            throw CTAP2Error(.invalidRequest, "The rk option is not valid for getAssertion.")
        }
    }
}

extension CTAP2Command {
    /// authenticatorGetAssertion (§6.2).
    public static let getAssertion = CTAP2Command(0x02, name: "authenticatorGetAssertion")
}
