import Authenticators
import CBOR
import Synchronization
import Testing
import Transport

@testable import CTAP2

/// A key whose getInfo names the AAGUIDs given in turn (the last one from then on): a key
/// swapped for another between two getInfo calls.
final class SwappingKey: AuthenticatorConnection {
    let descriptor = DeviceDescriptor(uri: "fake:swap", transport: .usb, product: "Swap Key")
    let capabilities: TransportCapabilities = [.cbor]
    let aaguids: Mutex<[[UInt8]]>

    init(_ aaguids: [[UInt8]]) { self.aaguids = Mutex(aaguids) }

    func transact(
        _ command: TransportCommand, payload: [UInt8], deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        guard payload.first == 0x04 else { return [0x01] }
        let aaguid = aaguids.withLock { list in list.count > 1 ? list.removeFirst() : list[0] }
        // getInfo {1: ["FIDO_2_1"], 3: aaguid} (CTAP 2.1 §6.4).
        return [0x00, 0xA2, 0x01, 0x81, 0x68] + Array("FIDO_2_1".utf8) + [0x03, 0x50] + aaguid
    }

    func close() async {}
}

/// The device layer's documents and checks that `securitykey` commands print and rely on:
/// large-blob listings, the re-identification before destructive operations, PIN status JSON.
@Suite struct CommandDocumentTests {
    static let keyA = [UInt8](repeating: 0x0A, count: 32)
    static let keyB = [UInt8](repeating: 0x0B, count: 32)

    /// A COSE key with only its kty (OKP, RFC 9053 §7.1): enough for a listing.
    static func credential(rpID: String, id: [UInt8], name: String?, largeBlobKey: [UInt8]) throws
        -> LargeBlobCredential
    {
        let okpKey = try COSEKey(map: [.unsigned(1): .unsigned(1)])
        return LargeBlobCredential(
            rpID: rpID,
            credential: CredentialManagement.Credential(
                user: UserEntity(id: [1], name: name), credentialID: PublicKeyCredentialDescriptor(id: id),
                publicKey: okpKey, credProtect: nil, largeBlobKey: largeBlobKey, thirdPartyPayment: nil))
    }

    @Test func largeBlobEntriesAreMatchedToTheCredentialWhoseKeyOpensThem() throws {
        let entry = try LargeBlobEntry.seal(Array("hello".utf8), key: Self.keyB, nonce: [UInt8](repeating: 7, count: 12))
        let array = LargeBlobArray(elements: [entry.cbor, .unsigned(5)])
        let other = try Self.credential(rpID: "a.example", id: [0xFB, 0xFF], name: "alice", largeBlobKey: Self.keyA)
        let owner = try Self.credential(rpID: "b.example", id: [0xFB, 0xFF], name: "bob", largeBlobKey: Self.keyB)
        let rows = LargeBlobListing.all(array, credentials: [other, owner])
        #expect(rows.count == 2)
        #expect(rows[0].owner == owner)
        #expect(rows[0].damage == nil)
        #expect(rows[1].entry == nil)
        #expect(rows[1].owner == nil)
        // Base64url of FB FF is "-_8" (RFC 4648 §5); the nonce in hex.
        let json = rows[0].json.text()
        #expect(json.contains(#""credentialId":"-_8","rpId":"b.example","userName":"bob","damaged":null"#))
        #expect(json.contains(#""nonce":"070707070707070707070707""#))
        #expect(rows[0].summary.hasSuffix("  b.example -_8 (bob)"))
        #expect(rows[1].json.text() == #"{"index":1,"entry":false,"ciphertextSize":null,"nonce":null,"origSize":null,"credentialId":null,"rpId":null,"userName":null,"damaged":null}"#)
        #expect(rows[1].summary == "  #1  not a large-blob entry (kept as it is)")
        // No known key: no owner.
        #expect(LargeBlobListing.all(array, credentials: [other])[0].owner == nil)
    }

    @Test func reidentifyRefusesAKeySwappedForAnother() async throws {
        let a = [UInt8](repeating: 0xA1, count: 16), b = [UInt8](repeating: 0xB2, count: 16)
        let same = try await Authenticator.open(SwappingKey([a, a]), deadline: .after(.seconds(5)))
        #expect(await same.identification == "the security key at fake:swap (usb, Swap Key, AAGUID a1a1a1a1-a1a1-a1a1-a1a1-a1a1a1a1a1a1)")
        let expected = try #require(AAGUID(uuidString: "a1a1a1a1-a1a1-a1a1-a1a1-a1a1a1a1a1a1"))
        try await same.reidentify(as: expected, deadline: .after(.seconds(5)))
        let swapped = try await Authenticator.open(SwappingKey([a, b]), deadline: .after(.seconds(5)))
        let error = await #expect(throws: AuthenticatorError.self) {
            try await swapped.reidentify(as: expected, deadline: .after(.seconds(5)))
        }
        #expect(error?.code == .differentDevice)
    }

    @Test func pinStatusDocumentOfAKeyWithoutPINSupport() async throws {
        let key = try await Authenticator.open(SwappingKey([[UInt8](repeating: 0, count: 16)]), deadline: .after(.seconds(5)))
        let json = PINStatus.json(nil, device: "fake:swap", info: await key.info).text()
        // No clientPIN option (CTAP 2.1 §6.4): unsupported, not set, the default minimum of 4; no
        // CTAP 2.2 members (maxPINLength, pinComplexityPolicy, uvCountSinceLastPinEntry): null.
        #expect(json == #"{"device":"fake:swap","pinSupported":false,"pinSet":false,"pinRetries":null,"pinBlocked":false,"minPINLength":4,"forcePINChange":false,"maxPINLength":null,"pinComplexityPolicy":null,"uvCountSinceLastPinEntry":null}"#)
    }
}
