import CBOR

/// An authenticatorClientPIN subcommand (CTAP 2.1 §6.5.5 "authenticatorClientPIN (0x06)").
public struct ClientPINSubcommand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The subcommand number.
    public var rawValue: UInt8
    /// Creates a subcommand from its number.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// getPINRetries (0x01, §6.5.5.3).
    public static let getPINRetries = ClientPINSubcommand(rawValue: 0x01)
    /// getKeyAgreement (0x02, §6.5.5.4).
    public static let getKeyAgreement = ClientPINSubcommand(rawValue: 0x02)
    /// setPIN (0x03, §6.5.5.5).
    public static let setPIN = ClientPINSubcommand(rawValue: 0x03)
    /// changePIN (0x04, §6.5.5.6).
    public static let changePIN = ClientPINSubcommand(rawValue: 0x04)
    /// getPinToken (0x05, §6.5.5.7.1): the legacy token with default permissions.
    public static let getPINToken = ClientPINSubcommand(rawValue: 0x05)
    /// getPinUvAuthTokenUsingUvWithPermissions (0x06, §6.5.5.7.3).
    public static let getPINUVAuthTokenUsingUVWithPermissions = ClientPINSubcommand(rawValue: 0x06)
    /// getUVRetries (0x07, §6.5.5.8).
    public static let getUVRetries = ClientPINSubcommand(rawValue: 0x07)
    /// getPinUvAuthTokenUsingPinWithPermissions (0x09, §6.5.5.7.2).
    public static let getPINUVAuthTokenUsingPINWithPermissions = ClientPINSubcommand(rawValue: 0x09)

    public var description: String {
        switch self {
        case .getPINRetries: "getPINRetries"
        case .getKeyAgreement: "getKeyAgreement"
        case .setPIN: "setPIN"
        case .changePIN: "changePIN"
        case .getPINToken: "getPinToken"
        case .getPINUVAuthTokenUsingUVWithPermissions: "getPinUvAuthTokenUsingUvWithPermissions"
        case .getUVRetries: "getUVRetries"
        case .getPINUVAuthTokenUsingPINWithPermissions: "getPinUvAuthTokenUsingPinWithPermissions"
        default: "subCommand(0x\(String(rawValue, radix: 16)))"
        }
    }
}

/// The parameters of authenticatorClientPIN (CTAP 2.1 §6.5.5, parameter table).
///
/// The encrypted and authenticated members hold ciphertexts and MACs, never a PIN or a
/// token in the clear; ``ClientPIN`` builds these requests.
public struct ClientPINRequest: CTAP2Request, Hashable {
    /// The CBOR keys of the request.
    public enum Key {
        /// pinUvAuthProtocol (0x01).
        public static let pinUVAuthProtocol: CBORValue = 0x01
        /// subCommand (0x02).
        public static let subCommand: CBORValue = 0x02
        /// keyAgreement (0x03): the platform's COSE key.
        public static let keyAgreement: CBORValue = 0x03
        /// pinUvAuthParam (0x04).
        public static let pinUVAuthParam: CBORValue = 0x04
        /// newPinEnc (0x05).
        public static let newPINEnc: CBORValue = 0x05
        /// pinHashEnc (0x06).
        public static let pinHashEnc: CBORValue = 0x06
        /// permissions (0x09).
        public static let permissions: CBORValue = 0x09
        /// rpId (0x0A): the permissions RP ID.
        public static let rpID: CBORValue = 0x0A
    }

    /// The PIN/UV auth protocol version. Sent with every subcommand, as python-fido2 and
    /// libfido2 do: CTAP 2.0 keys require it even for getPINRetries.
    public var pinUVAuthProtocol: UInt64?
    /// The subcommand.
    public var subCommand: ClientPINSubcommand
    /// The platform's key-agreement public key, as a COSE_Key map.
    public var keyAgreement: CBORMap?
    /// The pinUvAuthParam.
    public var pinUVAuthParam: [UInt8]?
    /// The encrypted, padded new PIN.
    public var newPINEnc: [UInt8]?
    /// The encrypted hash of the current PIN.
    public var pinHashEnc: [UInt8]?
    /// The permissions asked for.
    public var permissions: PINUVAuthTokenPermissions?
    /// The permissions RP ID.
    public var rpID: String?

    /// Creates a request.
    public init(
        pinUVAuthProtocol: UInt64?, subCommand: ClientPINSubcommand, keyAgreement: CBORMap? = nil,
        pinUVAuthParam: [UInt8]? = nil, newPINEnc: [UInt8]? = nil, pinHashEnc: [UInt8]? = nil,
        permissions: PINUVAuthTokenPermissions? = nil, rpID: String? = nil
    ) {
        self.pinUVAuthProtocol = pinUVAuthProtocol
        self.subCommand = subCommand
        self.keyAgreement = keyAgreement
        self.pinUVAuthParam = pinUVAuthParam
        self.newPINEnc = newPINEnc
        self.pinHashEnc = pinHashEnc
        self.permissions = permissions
        self.rpID = rpID
    }

    /// The request's parameter map; absent parameters are omitted.
    public var cbor: CBORMap {
        var m = CBORMap()
        if let pinUVAuthProtocol { m[Key.pinUVAuthProtocol] = .unsigned(pinUVAuthProtocol) }
        m[Key.subCommand] = .unsigned(UInt64(subCommand.rawValue))
        if let keyAgreement { m[Key.keyAgreement] = .map(keyAgreement) }
        if let pinUVAuthParam { m[Key.pinUVAuthParam] = .byteString(pinUVAuthParam) }
        if let newPINEnc { m[Key.newPINEnc] = .byteString(newPINEnc) }
        if let pinHashEnc { m[Key.pinHashEnc] = .byteString(pinHashEnc) }
        if let permissions { m[Key.permissions] = .unsigned(UInt64(permissions.rawValue)) }
        if let rpID { m[Key.rpID] = .textString(rpID) }
        return m
    }

    /// authenticatorClientPIN.
    public var command: CTAP2Command { .clientPIN }
    /// The parameters as sent: the same map as ``cbor``.
    public var parameters: CBORMap? { cbor }
    /// The decoded reply.
    public typealias Response = ClientPINResponse

    /// The message to send: the command byte followed by the canonical CBOR parameters.
    public func encoded() -> [UInt8] {
        [command.rawValue] + CBOREncoder.encode(.map(cbor))
    }
}

extension CTAP2Command {
    /// authenticatorClientPIN (§6.5).
    public static let clientPIN = CTAP2Command(0x06, name: "authenticatorClientPIN")
}
