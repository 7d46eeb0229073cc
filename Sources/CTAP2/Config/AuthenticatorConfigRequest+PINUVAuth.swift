import CBOR

extension AuthenticatorConfigRequest: PINUVAuthorizedRequest {
    /// acfg (CTAP 2.1 §6.11).
    public static var permission: PINUVAuthTokenPermissions { .authenticatorConfiguration }
    /// 32×0xff ‖ 0x0d ‖ subCommand ‖ CBOR(subCommandParams) (§6.11).
    public func pinUVAuthMessage() -> [UInt8] {
        Self.pinUVAuthMessage(subCommand: subCommand.rawValue, parameters: subCommandParams)
    }
    /// The message for a subcommand byte and its parameters as they are sent.
    public static func pinUVAuthMessage(subCommand: UInt8, parameters: CBORMap?) -> [UInt8] {
        commandPrefix(.config) + subcommandMessage(subCommand, parameters)
    }
}
