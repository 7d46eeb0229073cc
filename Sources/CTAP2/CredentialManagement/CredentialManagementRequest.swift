import CBOR
import Crypto

/// An authenticatorCredentialManagement subcommand (CTAP 2.1 §6.8, subcommand table).
public struct CredentialManagementSubcommand: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The subcommand number.
    public var rawValue: UInt8
    /// Creates a subcommand from its number.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// getCredsMetadata (0x01, §6.8.2).
    public static let getCredsMetadata = CredentialManagementSubcommand(rawValue: 0x01)
    /// enumerateRPsBegin (0x02, §6.8.3).
    public static let enumerateRPsBegin = CredentialManagementSubcommand(rawValue: 0x02)
    /// enumerateRPsGetNextRP (0x03, §6.8.3).
    public static let enumerateRPsGetNextRP = CredentialManagementSubcommand(rawValue: 0x03)
    /// enumerateCredentialsBegin (0x04, §6.8.4).
    public static let enumerateCredentialsBegin = CredentialManagementSubcommand(rawValue: 0x04)
    /// enumerateCredentialsGetNextCredential (0x05, §6.8.4).
    public static let enumerateCredentialsGetNextCredential = CredentialManagementSubcommand(rawValue: 0x05)
    /// deleteCredential (0x06, §6.8.5).
    public static let deleteCredential = CredentialManagementSubcommand(rawValue: 0x06)
    /// updateUserInformation (0x07, §6.8.6; not in the FIDO_2_1_PRE preview).
    public static let updateUserInformation = CredentialManagementSubcommand(rawValue: 0x07)

    /// Whether the subcommand only reads (what a read-only token may do).
    public var isReadOnly: Bool { rawValue <= 0x05 }

    public var description: String {
        switch self {
        case .getCredsMetadata: "getCredsMetadata"
        case .enumerateRPsBegin: "enumerateRPsBegin"
        case .enumerateRPsGetNextRP: "enumerateRPsGetNextRP"
        case .enumerateCredentialsBegin: "enumerateCredentialsBegin"
        case .enumerateCredentialsGetNextCredential: "enumerateCredentialsGetNextCredential"
        case .deleteCredential: "deleteCredential"
        case .updateUserInformation: "updateUserInformation"
        default: "subCommand(0x\(String(rawValue, radix: 16)))"
        }
    }
}

/// The parameters of authenticatorCredentialManagement (CTAP 2.1 §6.8, parameter table).
///
/// Build requests with the static factories: they compute the pinUvAuthParam over
/// subCommand ‖ CBOR(subCommandParams) with the token (§6.8) and check, before the key is asked,
/// that the token carries the cm permission and, for a token bound to a relying party, that the
/// subcommand may use it.
public struct CredentialManagementRequest: CTAP2Request, Hashable {
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

    /// The CBOR keys inside subCommandParams.
    public enum ParameterKey {
        /// rpIDHash (0x01).
        public static let rpIDHash: CBORValue = 0x01
        /// credentialID (0x02): a PublicKeyCredentialDescriptor.
        public static let credentialID: CBORValue = 0x02
        /// user (0x03): a PublicKeyCredentialUserEntity.
        public static let user: CBORValue = 0x03
    }

    /// authenticatorCredentialManagement (0x0A), or the FIDO_2_1_PRE preview command (0x41).
    public var command: CTAP2Command
    /// The subcommand.
    public var subCommand: CredentialManagementSubcommand
    /// The subcommand's parameters.
    public var subCommandParams: CBORMap?
    /// The PIN/UV auth protocol version of the token.
    public var pinUVAuthProtocol: UInt64?
    /// The pinUvAuthParam.
    public var pinUVAuthParam: [UInt8]?

    /// Creates a request from its members as they are sent; no check is made.
    public init(
        command: CTAP2Command = .credentialManagement, subCommand: CredentialManagementSubcommand,
        subCommandParams: CBORMap? = nil, pinUVAuthProtocol: UInt64? = nil, pinUVAuthParam: [UInt8]? = nil
    ) {
        self.command = command
        self.subCommand = subCommand
        self.subCommandParams = subCommandParams
        self.pinUVAuthProtocol = pinUVAuthProtocol
        self.pinUVAuthParam = pinUVAuthParam
    }

    /// A request authenticated with `token`: pinUvAuthParam over subCommand ‖
    /// CBOR(subCommandParams) (§6.8).
    public init(
        command: CTAP2Command = .credentialManagement, subCommand: CredentialManagementSubcommand,
        subCommandParams: CBORMap? = nil, token: PINUVAuthToken
    ) throws(CTAP2Error) {
        self.init(command: command, subCommand: subCommand, subCommandParams: subCommandParams)
        try authorize(with: token)
    }

    /// The command a key answers: 0x0A when getInfo lists `credMgmt`, else 0x41 when it lists
    /// only the FIDO_2_1_PRE `credentialMgmtPreview`, else nil (no credential management).
    public static func command(for info: AuthenticatorInfo) -> CTAP2Command? {
        if info.options.isEnabled(.credentialManagement) { return .credentialManagement }
        if info.options.isEnabled(.credentialManagementPreview) { return .credentialManagementPreview }
        return nil
    }

    // MARK: Subcommands

    /// getCredsMetadata: how many discoverable credentials there are and how many more fit.
    /// Needs a token without a permissions RP ID.
    public static func getCredsMetadata(token: PINUVAuthToken, command: CTAP2Command = .credentialManagement)
        throws(CTAP2Error) -> CredentialManagementRequest
    {
        try requireUnbound(token, .getCredsMetadata)
        return try CredentialManagementRequest(command: command, subCommand: .getCredsMetadata, token: token)
    }

    /// enumerateRPsBegin: the first relying party and how many there are. Needs a token without
    /// a permissions RP ID.
    public static func enumerateRPsBegin(token: PINUVAuthToken, command: CTAP2Command = .credentialManagement)
        throws(CTAP2Error) -> CredentialManagementRequest
    {
        try requireUnbound(token, .enumerateRPsBegin)
        return try CredentialManagementRequest(command: command, subCommand: .enumerateRPsBegin, token: token)
    }

    /// enumerateRPsGetNextRP: the next relying party (unauthenticated, §6.8.3).
    public static func enumerateRPsGetNextRP(command: CTAP2Command = .credentialManagement)
        -> CredentialManagementRequest
    {
        CredentialManagementRequest(command: command, subCommand: .enumerateRPsGetNextRP)
    }

    /// enumerateCredentialsBegin: the first credential of the relying party whose RP ID hashes
    /// to `rpIDHash`, and how many it has. A token bound to an RP ID must be bound to this one.
    public static func enumerateCredentialsBegin(
        rpIDHash: [UInt8], token: PINUVAuthToken, command: CTAP2Command = .credentialManagement
    ) throws(CTAP2Error) -> CredentialManagementRequest {
        guard rpIDHash.count == 32 else {
            throw .invalidRequest("An rpIDHash is 32 bytes (SHA-256), not \(rpIDHash.count).")
        }
        if let bound = token.rpID, Array(SHA256.hash(data: Array(bound.utf8))) != rpIDHash {
            throw CTAP2Error(
                .unauthorizedPermission,
                "The PIN/UV token is bound to the relying party \(bound); it cannot list another one's credentials."
            )
        }
        return try CredentialManagementRequest(
            command: command, subCommand: .enumerateCredentialsBegin,
            subCommandParams: [ParameterKey.rpIDHash: .byteString(rpIDHash)], token: token)
    }

    /// enumerateCredentialsGetNextCredential: the next credential (unauthenticated, §6.8.4).
    public static func enumerateCredentialsGetNextCredential(command: CTAP2Command = .credentialManagement)
        -> CredentialManagementRequest
    {
        CredentialManagementRequest(command: command, subCommand: .enumerateCredentialsGetNextCredential)
    }

    /// deleteCredential: removes the discoverable credential `credential` names.
    public static func deleteCredential(
        _ credential: PublicKeyCredentialDescriptor, token: PINUVAuthToken,
        command: CTAP2Command = .credentialManagement
    ) throws(CTAP2Error) -> CredentialManagementRequest {
        try CredentialManagementRequest(
            command: command, subCommand: .deleteCredential,
            subCommandParams: [ParameterKey.credentialID: credential.cbor], token: token)
    }

    /// updateUserInformation: replaces the name and display name stored with the credential;
    /// `user.id` must be the credential's user handle (§6.8.6). Not in the preview command.
    public static func updateUserInformation(
        _ credential: PublicKeyCredentialDescriptor, user: UserEntity, token: PINUVAuthToken,
        command: CTAP2Command = .credentialManagement
    ) throws(CTAP2Error) -> CredentialManagementRequest {
        guard command != .credentialManagementPreview else {
            throw CTAP2Error(
                .unsupportedOption,
                "This key offers only the preview of credential management, which cannot update user information."
            )
        }
        return try CredentialManagementRequest(
            command: command, subCommand: .updateUserInformation,
            subCommandParams: [ParameterKey.credentialID: credential.cbor, ParameterKey.user: user.cbor],
            token: token)
    }

    private static func requireUnbound(_ token: PINUVAuthToken, _ subCommand: CredentialManagementSubcommand)
        throws(CTAP2Error)
    {
        if let bound = token.rpID {
            throw CTAP2Error(
                .unauthorizedPermission,
                "\(subCommand) needs a PIN/UV token for every relying party, not one bound to \(bound).")
        }
    }

    // MARK: CTAP2Request

    /// The request's parameter map; absent members are omitted.
    public var parameters: CBORMap? {
        subcommandParameters(
            subCommand: subCommand.rawValue, subCommandParams: subCommandParams,
            pinUVAuthProtocol: pinUVAuthProtocol, pinUVAuthParam: pinUVAuthParam)
    }

    /// Refuses a command byte other than the two credential management commands.
    public func validate() throws(CTAP2Error) {
        guard command == .credentialManagement || command == .credentialManagementPreview else {
            throw .invalidRequest("\(command) is not a credential management command.")
        }
    }

    /// The decoded reply.
    public typealias Response = CredentialManagementResponse
}

extension CTAP2Command {
    /// authenticatorCredentialManagement (§6.8).
    public static let credentialManagement = CTAP2Command(0x0A, name: "authenticatorCredentialManagement")
    /// The pre-standard (FIDO_2_1_PRE) authenticatorCredentialManagement.
    public static let credentialManagementPreview = CTAP2Command(
        0x41, name: "authenticatorCredentialManagement (preview)")
}
