import CBOR
import Crypto

/// pinUvAuthParams for the commands that take one (CTAP 2.1 §6.1.2, §6.2.2, §6.7, §6.8,
/// §6.10, §6.11): each command authenticates its own message layout with the token.
extension PINUVAuthToken {
    /// The message of a makeCredential or getAssertion pinUvAuthParam: the client data hash.
    public func pinUVAuthParam(clientDataHash: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        guard clientDataHash.count == 32 else {
            throw CTAP2Error(
                .invalidRequest, "The client data hash must be 32 bytes, not \(clientDataHash.count).")
        }
        return try authenticate(clientDataHash)
    }

    /// authenticatorCredentialManagement (§6.8): subCommand ‖ CBOR(subCommandParams).
    public func credentialManagementParam(subCommand: UInt8, parameters: CBORMap?) throws(CTAP2Error)
        -> [UInt8]
    {
        try check(permission: .credentialManagement, rpID: nil)
        return try authenticate([subCommand] + (parameters.map { CBOREncoder.encode(.map($0)) } ?? []))
    }

    /// authenticatorBioEnrollment (§6.7): modality ‖ subCommand ‖ CBOR(subCommandParams).
    public func bioEnrollmentParam(modality: UInt8, subCommand: UInt8, parameters: CBORMap?)
        throws(CTAP2Error) -> [UInt8]
    {
        try check(permission: .bioEnrollment, rpID: nil)
        return try authenticate(
            [modality, subCommand] + (parameters.map { CBOREncoder.encode(.map($0)) } ?? []))
    }

    /// authenticatorConfig (§6.11): 32×0xff ‖ 0x0d ‖ subCommand ‖ CBOR(subCommandParams).
    public func configParam(subCommand: UInt8, parameters: CBORMap?) throws(CTAP2Error) -> [UInt8] {
        try check(permission: .authenticatorConfiguration, rpID: nil)
        let prefix = [UInt8](repeating: 0xFF, count: 32) + [CTAP2Command.config.rawValue, subCommand]
        return try authenticate(prefix + (parameters.map { CBOREncoder.encode(.map($0)) } ?? []))
    }

    /// authenticatorLargeBlobs set (§6.10.2): 32×0xff ‖ 0x0c 0x00 ‖ uint32LE(offset) ‖
    /// SHA-256(fragment).
    public func largeBlobsWriteParam(offset: UInt32, fragment: [UInt8]) throws(CTAP2Error) -> [UInt8] {
        try check(permission: .largeBlobWrite, rpID: nil)
        let littleEndian = (0..<4).map { UInt8(truncatingIfNeeded: offset >> (8 * $0)) }
        let message =
            [UInt8](repeating: 0xFF, count: 32) + [CTAP2Command.largeBlobs.rawValue, 0x00] + littleEndian
            + Array(SHA256.hash(data: fragment))
        return try authenticate(message)
    }
}

extension MakeCredentialRequest {
    /// Sets pinUvAuthParam and pinUvAuthProtocol from `token`, after checking that the token
    /// carries the mc permission for this request's RP ID.
    public mutating func authorize(with token: PINUVAuthToken) throws(CTAP2Error) {
        try token.check(permission: .makeCredential, rpID: rp.id)
        pinUVAuthParam = try token.pinUVAuthParam(clientDataHash: clientDataHash)
        pinUVAuthProtocol = UInt64(token.pinUVAuthProtocol.version)
    }
}

extension GetAssertionRequest {
    /// Sets pinUvAuthParam and pinUvAuthProtocol from `token`, after checking that the token
    /// carries the ga permission for this request's RP ID.
    public mutating func authorize(with token: PINUVAuthToken) throws(CTAP2Error) {
        try token.check(permission: .getAssertion, rpID: rpID)
        pinUVAuthParam = try token.pinUVAuthParam(clientDataHash: clientDataHash)
        pinUVAuthProtocol = UInt64(token.pinUVAuthProtocol.version)
    }
}
