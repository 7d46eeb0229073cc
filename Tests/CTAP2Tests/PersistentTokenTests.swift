import CBOR
import Foundation
import Testing
import VectorFiles

@testable import CTAP2

/// encIdentifier and encCredStoreState (CTAP 2.2/2.3 §6.4) decrypted with a persistent token:
/// the ciphertexts are made by the `cryptography` package (HKDF-SHA-256 with 32 zero bytes of
/// salt and the member's name as info, AES-128-CBC) and checked by python-fido2 2.2.1's own
/// `Info.get_identifier`/`get_cred_store_state` before this library decrypts them.
@Suite struct PersistentTokenTests {
    static let token: [UInt8] = Array(0x01...0x20)
    static let identifier: [UInt8] = Array(0xA0...0xAF)
    static let storeState: [UInt8] = Array(0x50...0x5F)

    static let harness = #"""
        import json, sys
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
        from fido2.ctap2.base import Info
        token, ident, state = (bytes.fromhex(x) for x in sys.argv[1:4])
        def enc(info, plaintext, iv):
            key = HKDF(algorithm=hashes.SHA256(), length=16, salt=b"\0" * 32, info=info).derive(token)
            e = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
            return iv + e.update(plaintext) + e.finalize()
        enc_id = enc(b"encIdentifier", ident, bytes(range(16)))
        enc_state = enc(b"encCredStoreState", state, bytes(range(16, 32)))
        info = Info(versions=["FIDO_2_2"], enc_identifier=enc_id, enc_cred_store_state=enc_state)
        assert info.get_identifier(token) == ident
        assert info.get_cred_store_state(token) == state
        print(json.dumps({"encIdentifier": enc_id.hex(), "encCredStoreState": enc_state.hex()}))
        """#

    static func pcmrToken(version: Int = 2) -> PINUVAuthToken {
        PINUVAuthToken(
            token: token, pinUVAuthProtocol: version == 2 ? PINUVAuthProtocolTwo() : PINUVAuthProtocolOne(),
            permissions: .persistentCredentialManagementReadOnly, rpID: nil)
    }

    static func info(encIdentifier: [UInt8]?, encCredStoreState: [UInt8]?) throws -> AuthenticatorInfo {
        var map: CBORMap = [1: .array(["FIDO_2_2"]), 3: .byteString([UInt8](repeating: 0, count: 16))]
        if let encIdentifier { map[0x19] = .byteString(encIdentifier) }
        if let encCredStoreState { map[0x1E] = .byteString(encCredStoreState) }
        return try AuthenticatorInfo(map: map)
    }

    @Test func decryptsWhatPythonFIDO2Decrypts() async throws {
        let output = try await runPython(
            Self.harness, [hexString(Self.token), hexString(Self.identifier), hexString(Self.storeState)])
        let members = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: String])
        let info = try Self.info(
            encIdentifier: members["encIdentifier"].flatMap { hexBytes($0) },
            encCredStoreState: members["encCredStoreState"].flatMap { hexBytes($0) })
        #expect(try info.identifier(decryptingWith: Self.pcmrToken()) == Self.identifier)
        #expect(try info.credentialStoreState(decryptingWith: Self.pcmrToken(version: 1)) == Self.storeState)
        let other = PINUVAuthToken(
            token: [UInt8](repeating: 7, count: 32), pinUVAuthProtocol: PINUVAuthProtocolTwo(),
            permissions: .persistentCredentialManagementReadOnly, rpID: nil)
        #expect(try info.identifier(decryptingWith: other) != Self.identifier, "another token: other bytes")
        #expect(try Self.info(encIdentifier: nil, encCredStoreState: nil).identifier(decryptingWith: other) == nil)
    }

    @Test(arguments: [0, 15, 16, 17, 33, 16 + 80])
    func refusesMembersThatAreNotAnIVAndWholeBlocks(length: Int) throws {
        let info = try Self.info(encIdentifier: [UInt8](repeating: 1, count: length), encCredStoreState: nil)
        #expect(throws: CTAP2Error.self) { try info.identifier(decryptingWith: Self.pcmrToken()) }
    }

    @Test func aPersistentTokenReadsCredentialsAndNothingElse() throws {
        let token = Self.pcmrToken()
        _ = try CredentialManagementRequest.getCredsMetadata(token: token)
        _ = try CredentialManagementRequest.enumerateRPsBegin(token: token)
        _ = try CredentialManagementRequest.enumerateCredentialsBegin(rpIDHash: [UInt8](repeating: 3, count: 32), token: token)
        #expect(throws: CTAP2Error.self) {
            try CredentialManagementRequest.deleteCredential(PublicKeyCredentialDescriptor(id: [1, 2, 3]), token: token)
        }
        #expect(try token.persistentTokenBytes() == Self.token)
        let ordinary = PINUVAuthToken(
            token: Self.token, pinUVAuthProtocol: PINUVAuthProtocolTwo(), permissions: .credentialManagement, rpID: nil)
        #expect(throws: CTAP2Error.self) { try ordinary.persistentTokenBytes() }
        #expect(!"\(token)".contains(hexString(Self.token)))
    }
}
