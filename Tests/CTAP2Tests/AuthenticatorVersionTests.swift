import CBOR
import Testing

@testable import CTAP2

/// getInfo versions and extensions are typed, named by the spec's strings, and keep what this
/// library does not know.
@Suite struct AuthenticatorVersionTests {
    /// The strings of CTAP 2.2 §6.4 (versions) and §12 / WebAuthn §10 (extension identifiers).
    @Test func namesAreTheSpecStrings() {
        #expect(
            [AuthenticatorVersion.u2fV2, .fido2_0, .fido2_1Pre, .fido2_1, .fido2_2].map(\.rawValue)
                == ["U2F_V2", "FIDO_2_0", "FIDO_2_1_PRE", "FIDO_2_1", "FIDO_2_2"])
        #expect(
            [
                ExtensionIdentifier.credProtect, .credBlob, .largeBlobKey, .minPINLength, .hmacSecret,
                .hmacSecretMakeCredential, .thirdPartyPayment, .largeBlob, .credProps, .prf,
            ].map(\.rawValue)
                == [
                    "credProtect", "credBlob", "largeBlobKey", "minPinLength", "hmac-secret",
                    "hmac-secret-mc",
                    "thirdPartyPayment", "largeBlob", "credProps", "prf",
                ])
    }

    /// python-fido2's recorded getInfo: a CTAP 2.0 key with U2F, uvm and hmac-secret.
    @Test func pythonFIDO2InfoIsTyped() throws {
        let info = try AuthenticatorInfo(cbor: try #require(Vectors.python("test_ctap2/module/_INFO")).bytes)
        #expect(info.versions == [.u2fV2, .fido2_0])
        #expect(info.extensions == [.uvm, .hmacSecret])
        #expect(info.supportsU2F)
        #expect(!info.supportsCTAP21)
        #expect(!info.supportsCTAP22)
    }

    @Test(arguments: [
        (["FIDO_2_0", "FIDO_2_1_PRE"], true), (["FIDO_2_1"], true), (["FIDO_2_0", "FIDO_2_2"], false),
        (["U2F_V2", "FIDO_2_0"], false),
    ])
    func ctap21IsFinalOrPreview(versions: [String], expected: Bool) throws {
        let info = try AuthenticatorInfo(map: Self.info(versions: versions, extensions: []))
        #expect(info.supportsCTAP21 == expected)
    }

    @Test func unknownVersionsAndExtensionsAreKeptInOrder() throws {
        let info = try AuthenticatorInfo(
            map: Self.info(
                versions: ["FIDO_2_1", "FIDO_3_0_DRAFT"],
                extensions: ["credProtect", "example.com:vendorExt", "hmac-secret-mc"]))
        #expect(info.versions.map(\.rawValue) == ["FIDO_2_1", "FIDO_3_0_DRAFT"])
        #expect(info.versions.contains(AuthenticatorVersion(rawValue: "FIDO_3_0_DRAFT")))
        #expect(
            info.extensions.map(\.rawValue) == ["credProtect", "example.com:vendorExt", "hmac-secret-mc"])
        #expect(info.extensions.contains(.hmacSecretMakeCredential))
        #expect(!info.extensions.contains(.hmacSecret))
    }

    /// A getInfo map with the required members (CTAP 2.2 §6.4: versions 0x01, aaguid 0x03).
    static func info(versions: [String], extensions: [String]) -> CBORMap {
        var map: CBORMap = [
            0x01: .array(versions.map { .textString($0) }),
            0x03: .byteString([UInt8](repeating: 0, count: 16)),
        ]
        if !extensions.isEmpty { map[0x02] = .array(extensions.map { .textString($0) }) }
        return map
    }
}
