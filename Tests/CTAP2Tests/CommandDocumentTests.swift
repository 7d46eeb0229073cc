import CBOR
import Testing

@testable import CTAP2

/// The JSON documents and lines `securitykey` prints for credential management, bio enrollment,
/// large blobs and getInfo, built from values written out here by hand; base64url per RFC 4648
/// §5 (FB FF is "-_8"), status names per CTAP 2.1 §6.7.4's lastEnrollSampleStatus table.
@Suite struct CommandDocumentTests {
    @Test func credentialDocumentAndLine() throws {
        let credential = CredentialManagement.Credential(
            user: UserEntity(id: [0xFB, 0xFF], name: "alice", displayName: "Alice A."),
            credentialID: PublicKeyCredentialDescriptor(id: [0x00, 0x01, 0x02]),
            publicKey: try COSEKey(map: [.unsigned(1): .unsigned(1)]), credProtect: 3, largeBlobKey: nil,
            thirdPartyPayment: nil)
        #expect(
            credential.json(relyingParty: RelyingPartyEntity(id: "example.org")).text()
                == #"{"rpId":"example.org","rpName":null,"userId":"-_8","userName":"alice","displayName":"Alice A.","credentialId":"AAEC","credProtect":3,"largeBlobKey":false,"thirdPartyPayment":null}"#
        )
        #expect(credential.summary == "  AAEC  alice (Alice A.)  credProtect 3")
        var bare = credential
        bare.user = UserEntity(id: [1], name: nil, displayName: nil)
        bare.credProtect = nil
        bare.largeBlobKey = [1]
        #expect(bare.summary == "  AAEC  (no name)  largeBlobKey")
        bare.thirdPartyPayment = true
        #expect(
            bare.json(relyingParty: RelyingPartyEntity(id: "pay.example")).text()
                == #"{"rpId":"pay.example","rpName":null,"userId":"AQ","userName":null,"displayName":null,"credentialId":"AAEC","credProtect":null,"largeBlobKey":true,"thirdPartyPayment":true}"#
        )
        #expect(bare.summary == "  AAEC  (no name)  largeBlobKey  thirdPartyPayment")
    }

    @Test func bioDocuments() {
        #expect(FingerprintTemplate(id: [0xFB, 0xFF], friendlyName: "").json.text() == #"{"id":"-_8","name":null}"#)
        #expect(FingerprintTemplate(id: [1], friendlyName: "thumb").json.text() == #"{"id":"AQ","name":"thumb"}"#)
        let sample = BioEnrollment.Sample(status: FingerprintSampleStatus(rawValue: 0x01), remainingSamples: 2)
        #expect(
            sample.json(number: 3).text() == #"{"sample":3,"status":"too-high","statusCode":1,"remaining":2}"#)
        let sensor = BioEnrollment.SensorInfo(
            modality: nil, fingerprintKind: FingerprintKind(rawValue: 1), maxCaptureSamplesRequiredForEnroll: 4,
            maxTemplateFriendlyName: nil)
        #expect(
            sensor.json(device: "udp:x", enrolled: true).text()
                == #"{"device":"udp:x","modality":"fingerprint","fingerprintKind":"touch","samplesRequired":4,"maxNameLength":null,"enrolled":true}"#
        )
    }

    @Test func corruptionDocument() {
        #expect(
            LargeBlobArray.Corruption.hashMismatch.json.text()
                == #"{"code":"hash-mismatch","message":"its trailing hash does not match its content"}"#)
    }

    /// getInfo {1: ["FIDO_2_0"], 3: 16 zero bytes} (CTAP 2.1 §6.4) as `info --json` frames it.
    @Test func infoDocumentFramesGetInfo() throws {
        let info = try AuthenticatorInfo(
            map: [.unsigned(1): .array([.textString("FIDO_2_0")]), .unsigned(3): .byteString([UInt8](repeating: 0, count: 16))])
        let text = info.json(
            device: "udp:x", model: nil, pinRetries: ClientPIN.PINRetries(retries: 8, powerCycleRequired: false),
            uvRetries: 3
        ).text()
        #expect(text.hasPrefix(#"{"device":"udp:x","model":null,"u2fOnly":false,"versions":["FIDO_2_0"],"#))
        #expect(text.hasSuffix(#","pinRetries":8,"powerCycleRequired":false,"uvRetries":3}"#))
        #expect(info.summaryLines.first == "Versions:        FIDO_2_0")
        #expect(info.summaryLines.contains("PIN:             not supported"))
    }
}
