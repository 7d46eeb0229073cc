import CBOR

extension BioEnrollmentRequest: PINUVAuthorizedRequest {
    /// be (CTAP 2.1 §6.7), also asked of a token for the FIDO_2_1_PRE command.
    public static var permission: PINUVAuthTokenPermissions { .bioEnrollment }
    /// modality ‖ subCommand ‖ CBOR(subCommandParams) (§6.7); getModality carries no
    /// pinUvAuthParam.
    public func pinUVAuthMessage() throws(CTAP2Error) -> [UInt8] {
        guard let modality, let subCommand else {
            throw .invalidRequest(
                "Only a bio enrollment request with a modality and subcommand is authenticated.")
        }
        return Self.pinUVAuthMessage(
            modality: UInt8(truncatingIfNeeded: modality.rawValue), subCommand: subCommand.rawValue,
            parameters: subCommandParams)
    }
    /// The message for a modality and subcommand byte and the parameters as they are sent.
    public static func pinUVAuthMessage(modality: UInt8, subCommand: UInt8, parameters: CBORMap?) -> [UInt8] {
        [modality] + subcommandMessage(subCommand, parameters)
    }
}
