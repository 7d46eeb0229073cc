import CBOR

/// An authenticatorConfig subcommand (CTAP 2.1 §6.11, subcommand table).
public struct AuthenticatorConfigSubcommand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The subcommand number.
    public var rawValue: UInt8
    /// Creates a subcommand from its number.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// enableEnterpriseAttestation (0x01, §6.11.1).
    public static let enableEnterpriseAttestation = AuthenticatorConfigSubcommand(rawValue: 0x01)
    /// toggleAlwaysUv (0x02, §6.11.2).
    public static let toggleAlwaysUV = AuthenticatorConfigSubcommand(rawValue: 0x02)
    /// setMinPINLength (0x03, §6.11.4).
    public static let setMinPINLength = AuthenticatorConfigSubcommand(rawValue: 0x03)
    /// vendorPrototype (0xFF, §6.11.3): a vendor's own command, named by vendorCommandId.
    public static let vendorPrototype = AuthenticatorConfigSubcommand(rawValue: 0xFF)

    public var description: String {
        switch self {
        case .enableEnterpriseAttestation: "enableEnterpriseAttestation"
        case .toggleAlwaysUV: "toggleAlwaysUv"
        case .setMinPINLength: "setMinPINLength"
        case .vendorPrototype: "vendorPrototype"
        default: "subCommand(0x\(String(rawValue, radix: 16)))"
        }
    }
}

/// The parameters of authenticatorConfig (CTAP 2.1 §6.11, parameter table).
///
/// The factories compute the pinUvAuthParam over 32×0xff ‖ 0x0d ‖ subCommand ‖
/// CBOR(subCommandParams) (§6.11) with a token carrying the acfg permission. A key that has
/// neither a PIN nor built-in UV takes the command without one (§6.11 step 2), so the token is
/// optional.
public struct AuthenticatorConfigRequest: CTAP2Request, Hashable {
    /// The CBOR keys of the request.
    public enum Key {
        /// subCommand (0x01).
        public static let subCommand: CBORValue = 0x01
        /// subCommandParams (0x02).
        public static let subCommandParams: CBORValue = 0x02
        /// pinUvAuthProtocol (0x03).
        public static let pinUVAuthProtocol: CBORValue = 0x03
        /// pinUvAuthParam (0x04).
        public static let pinUVAuthParam: CBORValue = 0x04
    }

    /// The CBOR keys inside the setMinPINLength and vendorPrototype subCommandParams.
    public enum ParameterKey {
        /// newMinPINLength (0x01, setMinPINLength).
        public static let newMinPINLength: CBORValue = 0x01
        /// minPinLengthRPIDs (0x02, setMinPINLength).
        public static let minPINLengthRPIDs: CBORValue = 0x02
        /// forceChangePin (0x03, setMinPINLength).
        public static let forceChangePIN: CBORValue = 0x03
        /// pinComplexityPolicy (0x04, setMinPINLength, CTAP 2.2).
        public static let pinComplexityPolicy: CBORValue = 0x04
        /// vendorCommandId (0x01, vendorPrototype).
        public static let vendorCommandID: CBORValue = 0x01
    }

    /// The subcommand.
    public var subCommand: AuthenticatorConfigSubcommand
    /// The subcommand's parameters.
    public var subCommandParams: CBORMap?
    /// The PIN/UV auth protocol version of the token.
    public var pinUVAuthProtocol: UInt64?
    /// The pinUvAuthParam.
    public var pinUVAuthParam: [UInt8]?

    /// Creates a request from its members as they are sent; no check is made.
    public init(
        subCommand: AuthenticatorConfigSubcommand, subCommandParams: CBORMap? = nil,
        pinUVAuthProtocol: UInt64? = nil, pinUVAuthParam: [UInt8]? = nil
    ) {
        self.subCommand = subCommand
        self.subCommandParams = subCommandParams
        self.pinUVAuthProtocol = pinUVAuthProtocol
        self.pinUVAuthParam = pinUVAuthParam
    }

    /// A request authenticated with `token` where one is given: pinUvAuthParam over
    /// 32×0xff ‖ 0x0d ‖ subCommand ‖ CBOR(subCommandParams) (§6.11).
    public init(
        subCommand: AuthenticatorConfigSubcommand, subCommandParams: CBORMap? = nil, token: PINUVAuthToken?
    ) throws(CTAP2Error) {
        self.init(subCommand: subCommand, subCommandParams: subCommandParams)
        if let token { try authorize(with: token) }
    }

    // MARK: Subcommands

    /// enableEnterpriseAttestation: turns enterprise attestation on (getInfo `ep` becomes true).
    public static func enableEnterpriseAttestation(token: PINUVAuthToken?) throws(CTAP2Error)
        -> AuthenticatorConfigRequest
    {
        try AuthenticatorConfigRequest(subCommand: .enableEnterpriseAttestation, token: token)
    }

    /// toggleAlwaysUv: flips whether every makeCredential and getAssertion needs user
    /// verification (getInfo `alwaysUv`).
    public static func toggleAlwaysUV(token: PINUVAuthToken?) throws(CTAP2Error) -> AuthenticatorConfigRequest
    {
        try AuthenticatorConfigRequest(subCommand: .toggleAlwaysUV, token: token)
    }

    /// setMinPINLength: raises the minimum PIN length to `newMinPINLength` (never lowers it),
    /// names the relying parties `minPINLengthRPIDs` that may read it with the minPinLength
    /// extension, and with `forceChangePIN` makes the key demand a new PIN before its next use.
    ///
    /// forceChangePin is always sent, false included, as python-fido2 does; pinComplexityPolicy
    /// (CTAP 2.2) only when asked for.
    public static func setMinPINLength(
        _ newMinPINLength: UInt64? = nil, minPINLengthRPIDs: [String]? = nil, forceChangePIN: Bool = false,
        pinComplexityPolicy: Bool = false, token: PINUVAuthToken?
    ) throws(CTAP2Error) -> AuthenticatorConfigRequest {
        var params: CBORMap = [ParameterKey.forceChangePIN: .boolean(forceChangePIN)]
        if let newMinPINLength { params[ParameterKey.newMinPINLength] = .unsigned(newMinPINLength) }
        if let minPINLengthRPIDs {
            params[ParameterKey.minPINLengthRPIDs] = .array(minPINLengthRPIDs.map { .textString($0) })
        }
        if pinComplexityPolicy { params[ParameterKey.pinComplexityPolicy] = .boolean(true) }
        return try AuthenticatorConfigRequest(
            subCommand: .setMinPINLength, subCommandParams: params, token: token)
    }

    /// vendorPrototype: a vendor command named by `vendorCommandID` (one of getInfo's
    /// vendorPrototypeConfigCommands), with the vendor's `extra` parameters, if any.
    public static func vendorPrototype(vendorCommandID: UInt64, extra: CBORMap = [:], token: PINUVAuthToken?)
        throws(CTAP2Error) -> AuthenticatorConfigRequest
    {
        var params = extra
        params[ParameterKey.vendorCommandID] = .unsigned(vendorCommandID)
        return try AuthenticatorConfigRequest(
            subCommand: .vendorPrototype, subCommandParams: params, token: token)
    }

    // MARK: CTAP2Request

    /// authenticatorConfig.
    public var command: CTAP2Command { .config }

    /// The request's parameter map; absent members are omitted.
    public var parameters: CBORMap? {
        subcommandParameters(
            subCommand: subCommand.rawValue, subCommandParams: subCommandParams,
            pinUVAuthProtocol: pinUVAuthProtocol, pinUVAuthParam: pinUVAuthParam)
    }

    /// The decoded reply: nothing but the status.
    public typealias Response = EmptyResponse
}

extension CTAP2Command {
    /// authenticatorConfig (§6.11).
    public static let config = CTAP2Command(0x0D, name: "authenticatorConfig")
}
