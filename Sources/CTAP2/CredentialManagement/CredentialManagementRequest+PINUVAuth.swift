import CBOR

extension CredentialManagementRequest: PINUVAuthorizedRequest {
    /// cm (CTAP 2.1 §6.8), also for the FIDO_2_1_PRE command.
    public static var permission: PINUVAuthTokenPermissions { .credentialManagement }
    /// pcmr for the read-only subcommands when the token is a persistent one (CTAP 2.2 §6.8),
    /// else cm.
    public func requiredPermission(of token: PINUVAuthToken) -> PINUVAuthTokenPermissions {
        let readOnly: [CredentialManagementSubcommand] = [
            .getCredsMetadata, .enumerateRPsBegin, .enumerateCredentialsBegin,
        ]
        if readOnly.contains(subCommand), token.permissions.contains(.persistentCredentialManagementReadOnly) {
            return .persistentCredentialManagementReadOnly
        }
        return Self.permission
    }
    /// subCommand ‖ CBOR(subCommandParams) (§6.8).
    public func pinUVAuthMessage() -> [UInt8] {
        Self.pinUVAuthMessage(subCommand: subCommand.rawValue, parameters: subCommandParams)
    }
    /// The message for a subcommand byte and its parameters as they are sent.
    public static func pinUVAuthMessage(subCommand: UInt8, parameters: CBORMap?) -> [UInt8] {
        subcommandMessage(subCommand, parameters)
    }
}
