import CBOR
import CTAP2
import Foundation
import Testing
@testable import VirtualAuthenticator

/// The extension identifiers and members of CTAP 2.1 §12 and CTAP 2.2 §12.7, written out for
/// the tests.
enum ExtensionSpec {
    static let hmacSecret = "hmac-secret"
    static let hmacSecretMC = "hmac-secret-mc"
    static let credProtect = "credProtect"
    static let credBlob = "credBlob"
    static let minPinLength = "minPinLength"
    /// getInfo maxCredBlobLength (CTAP 2.1 §6.4).
    static let maxCredBlobLength = 0x0F
}

/// The extensions map at the end of authenticator data (WebAuthn §6.1), parsed by the test.
func authDataExtensions(_ authData: [UInt8]) throws -> CBORMap? {
    let parsed = try ParsedAuthData(authData)
    guard parsed.flags & 0x80 != 0 else { return nil }
    var start = 37
    if parsed.flags & 0x40 != 0 {
        let idLength = Int(authData[53]) << 8 | Int(authData[54])
        let (_, end) = try CBORDecoder(options: .ctap2).decodePrefix(authData[(55 + idLength)...])
        start = end
    }
    return try CBORDecoder(options: .ctap2).decode(authData[start...]).mapValue
}

extension Platform {
    /// An hmac-secret input (CTAP 2.1 §12.5) for `salts`, made with the host module's PIN/UV
    /// auth protocol; `corruptAuth` flips a bit of saltAuth. Returns the shared secret too.
    func hmacSecretInput(
        salts: [UInt8], corruptAuth: Bool = false, sendProtocol: Bool = true
    ) async throws -> (input: CBORMap, shared: [UInt8]) {
        let (platformKey, shared) = try await agree()
        let saltEnc = try pinProtocol.encrypt(key: shared, salts)
        var saltAuth = pinProtocol.authenticate(key: shared, saltEnc)
        if corruptAuth { saltAuth[0] ^= 1 }
        var input: CBORMap = [1: .map(platformKey), 2: .byteString(saltEnc), 3: .byteString(saltAuth)]
        if sendProtocol { input[4] = .int(version) }
        return (input, shared)
    }
}

@Suite("VirtualKey extensions: hmac-secret, credProtect, credBlob (CTAP 2.1 §12)")
struct VirtualKeyExtensionsTests {
    static func key(_ configuration: VirtualKey.Configuration = .ctap21()) throws -> VirtualKey {
        try VirtualKey(configuration: configuration)
    }

    /// makeCredential with extension inputs; returns the status, credential ID and extension outputs.
    static func register(
        _ key: VirtualKey, rpID: String = "example.org", userID: [UInt8] = [1], rk: Bool = true,
        extensions: CBORMap
    ) async throws -> (status: UInt8, id: [UInt8]?, outputs: CBORMap?) {
        var request = makeCredentialRequest(rpID: rpID, userID: userID, options: rk ? ["rk": true] : nil)
        request[6] = .map(extensions)
        let reply = try await send(key, Spec.makeCredential, request)
        guard reply.status == Spec.ok, let authData = reply.body?[2]?.bytesValue else {
            return (reply.status, nil, nil)
        }
        return (reply.status, try ParsedAuthData(authData).credentialID, try authDataExtensions(authData))
    }

    /// getAssertion with extension inputs; returns the status and extension outputs.
    static func assert(
        _ key: VirtualKey, rpID: String = "example.org", allowList: [[UInt8]]? = nil, extensions: CBORMap
    ) async throws -> (status: UInt8, outputs: CBORMap?) {
        var request = getAssertionRequest(rpID: rpID, allowList: allowList)
        request[4] = .map(extensions)
        let reply = try await send(key, Spec.getAssertion, request)
        guard reply.status == Spec.ok, let authData = reply.body?[2]?.bytesValue else {
            return (reply.status, nil)
        }
        return (reply.status, try authDataExtensions(authData))
    }

    @Test func getInfoListsTheProfilesExtensions() async throws {
        let ctap20 = try #require(try await send(try Self.key(.init()), Spec.getInfo).body)
        #expect(ctap20[2] == [.textString(ExtensionSpec.hmacSecret)])
        #expect(ctap20[ExtensionSpec.maxCredBlobLength] == nil)
        let preview = try #require(try await send(try Self.key(.ctap21Preview()), Spec.getInfo).body)
        #expect(
            preview[2] == [.textString(ExtensionSpec.hmacSecret), .textString(ExtensionSpec.credProtect)])
        var configuration = VirtualKey.Configuration.ctap21()
        configuration.maxCredBlobLength = 64
        let ctap21 = try #require(try await send(try Self.key(configuration), Spec.getInfo).body)
        #expect(ctap21[ExtensionSpec.maxCredBlobLength] == 64)
        #expect(ctap21[2]?.arrayValue?.contains(.textString(ExtensionSpec.credBlob)) == true)

        configuration.maxCredBlobLength = 31
        #expect(throws: VirtualKeyError.self) { try VirtualKey(configuration: configuration) }
        configuration.maxCredBlobLength = 32
        configuration.extensions = ["largeBlob-ish"]
        #expect(throws: VirtualKeyError.self) { try VirtualKey(configuration: configuration) }
    }

    @Test(arguments: [1, 2])
    func hmacSecretErrors(version: Int) async throws {
        let key = try Self.key()
        let platform = Platform(key: key, version: version)
        #expect(
            try await Self.register(key, extensions: [.textString(ExtensionSpec.hmacSecret): true]).status
                == Spec.ok)
        let salt = [UInt8](repeating: 0xA5, count: 32)

        // A good input works, and its output decrypts to one 32-byte secret.
        let good = try await platform.hmacSecretInput(salts: salt)
        let ok = try await Self.assert(
            key, extensions: [.textString(ExtensionSpec.hmacSecret): .map(good.input)])
        #expect(ok.status == Spec.ok)
        let encrypted = try #require(ok.outputs?[ExtensionSpec.hmacSecret]?.bytesValue)
        #expect(try platform.pinProtocol.decrypt(key: good.shared, encrypted).count == 32)

        let badAuth = try await platform.hmacSecretInput(salts: salt, corruptAuth: true)
        #expect(
            try await Self.assert(
                key, extensions: [.textString(ExtensionSpec.hmacSecret): .map(badAuth.input)]
            ).status
                == PINSpec.pinAuthInvalid)
        for length in [16, 48, 96] {
            let wrong = try await platform.hmacSecretInput(salts: [UInt8](repeating: 1, count: length))
            #expect(
                try await Self.assert(
                    key, extensions: [.textString(ExtensionSpec.hmacSecret): .map(wrong.input)]
                )
                .status == Spec.invalidLength, "salts of \(length) bytes")
        }
        var missing = good.input
        missing[3] = nil
        #expect(
            try await Self.assert(key, extensions: [.textString(ExtensionSpec.hmacSecret): .map(missing)])
                .status
                == Spec.missingParameter)
        var unsupported = try await platform.hmacSecretInput(salts: salt).input
        unsupported[4] = 3
        #expect(
            try await Self.assert(key, extensions: [.textString(ExtensionSpec.hmacSecret): .map(unsupported)])
                .status
                == Spec.invalidParameter)
        // Without member 4 the key assumes protocol one (§12.5): only a protocol-one input verifies.
        let implicit = try await platform.hmacSecretInput(salts: salt, sendProtocol: false)
        #expect(
            try await Self.assert(
                key, extensions: [.textString(ExtensionSpec.hmacSecret): .map(implicit.input)]
            )
            .status == (version == 1 ? Spec.ok : PINSpec.pinAuthInvalid))
    }

    @Test func hmacSecretOnlyForCredentialsMadeWithIt() async throws {
        let key = try Self.key()
        let platform = Platform(key: key, version: 2)
        let made = try await Self.register(key, extensions: [.textString(ExtensionSpec.credProtect): 1])
        #expect(made.status == Spec.ok)
        #expect(made.outputs?[ExtensionSpec.hmacSecret] == nil)
        let input = try await platform.hmacSecretInput(salts: [UInt8](repeating: 7, count: 64)).input
        let reply = try await Self.assert(
            key, extensions: [.textString(ExtensionSpec.hmacSecret): .map(input)])
        #expect(reply.status == Spec.ok)
        #expect(reply.outputs?[ExtensionSpec.hmacSecret] == nil)
    }

    @Test(arguments: [CBORValue.int(0), .int(4), .int(-1)])
    func invalidCredProtectLevels(level: CBORValue) async throws {
        let key = try Self.key()
        #expect(
            try await Self.register(key, extensions: [.textString(ExtensionSpec.credProtect): level]).status
                == Spec.invalidOption)
        #expect(
            try await Self.register(key, extensions: [.textString(ExtensionSpec.credProtect): "2"]).status
                == Spec.cborUnexpectedType)
        #expect(await key.discoverableCredentialCount == 0)
    }

    @Test func credBlobLimitAndRoundTrip() async throws {
        let key = try Self.key()
        let fits = [UInt8](repeating: 0x42, count: 32)
        let stored = try await Self.register(
            key, userID: [1], extensions: [.textString(ExtensionSpec.credBlob): .byteString(fits)])
        #expect(stored.outputs?[ExtensionSpec.credBlob] == true)
        let tooLong = try await Self.register(
            key, rpID: "example.com", userID: [2],
            extensions: [.textString(ExtensionSpec.credBlob): .byteString(fits + [0])])
        #expect(tooLong.status == Spec.ok)
        #expect(tooLong.outputs?[ExtensionSpec.credBlob] == false)
        let nonDiscoverable = try await Self.register(
            key, rpID: "example.net", rk: false,
            extensions: [.textString(ExtensionSpec.credBlob): .byteString([1])])
        #expect(nonDiscoverable.outputs?[ExtensionSpec.credBlob] == false)

        let read = try await Self.assert(key, extensions: [.textString(ExtensionSpec.credBlob): true])
        #expect(read.outputs?[ExtensionSpec.credBlob] == .byteString(fits))
        let none = try await Self.assert(
            key, rpID: "example.com", extensions: [.textString(ExtensionSpec.credBlob): true])
        #expect(none.outputs?[ExtensionSpec.credBlob] == .byteString([]))
        let notAsked = try await Self.assert(key, extensions: [:])
        #expect(notAsked.outputs == nil)
    }

    /// credProtect for a non-discoverable credential lives in its sealed ID: level 3 is refused
    /// without UV even when listed, level 2 only when listed.
    @Test func credProtectOfNonDiscoverableCredentials() async throws {
        let key = try Self.key()
        let level3 = try await Self.register(
            key, rk: false, extensions: [.textString(ExtensionSpec.credProtect): 3])
        #expect(level3.outputs?[ExtensionSpec.credProtect] == 3)
        let id3 = try #require(level3.id)
        #expect(try await Self.assert(key, allowList: [id3], extensions: [:]).status == Spec.noCredentials)
        let level2 = try await Self.register(
            key, rpID: "example.com", rk: false, extensions: [.textString(ExtensionSpec.credProtect): 2])
        let id2 = try #require(level2.id)
        #expect(
            try await Self.assert(key, rpID: "example.com", allowList: [id2], extensions: [:]).status
                == Spec.ok)
        // Without UV the level-3 credential does not exclude (§6.1.2 step 12).
        var request = makeCredentialRequest(userID: [9], excludeList: [id3])
        request[6] = .map([:])
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.ok)
    }

    @Test func extensionStateSurvivesTheStateFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ext-\(UUID()).state").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = try VirtualKey(configuration: .ctap21(), stateFile: path)
        let made = try await Self.register(
            first,
            extensions: [
                .textString(ExtensionSpec.hmacSecret): true, .textString(ExtensionSpec.credProtect): 2,
                .textString(ExtensionSpec.credBlob): .byteString([1, 2, 3]),
            ])
        #expect(made.status == Spec.ok)
        let id = try #require(made.id)
        let salt = [UInt8](repeating: 3, count: 32)
        let before = Platform(key: first, version: 2)
        let inputBefore = try await before.hmacSecretInput(salts: salt)
        let outBefore = try #require(
            try await Self.assert(
                first, allowList: [id],
                extensions: [.textString(ExtensionSpec.hmacSecret): .map(inputBefore.input)]
            )
            .outputs?[ExtensionSpec.hmacSecret]?.bytesValue)

        // Read-only: the first key still holds the file's lock.
        let second = try VirtualKey(configuration: .ctap21(), stateFile: path, stateFileAccess: .readOnly)
        let after = Platform(key: second, version: 2)
        let inputAfter = try await after.hmacSecretInput(salts: salt)
        let reply = try await Self.assert(
            second, allowList: [id],
            extensions: [
                .textString(ExtensionSpec.hmacSecret): .map(inputAfter.input),
                .textString(ExtensionSpec.credBlob): true,
            ])
        let outAfter = try #require(reply.outputs?[ExtensionSpec.hmacSecret]?.bytesValue)
        #expect(
            try before.pinProtocol.decrypt(key: inputBefore.shared, outBefore)
                == after.pinProtocol.decrypt(key: inputAfter.shared, outAfter))
        #expect(reply.outputs?[ExtensionSpec.credBlob] == .byteString([1, 2, 3]))
        // credProtect 2: not discoverable without UV.
        #expect(try await Self.assert(second, extensions: [:]).status == Spec.noCredentials)
    }

    /// python-fido2's Fido2Client with its extension classes, and Ctap2 where the client hides
    /// the key's answers, over CTAPHID/UDP (scripts/python/fido2_extensions_check.py).
    @Test func pythonFIDO2ClientExtensionsOverUDP() async throws {
        var configuration = VirtualKey.Configuration.ctap21()
        configuration.extensions = [
            ExtensionSpec.credProtect, ExtensionSpec.credBlob, ExtensionSpec.hmacSecret,
            ExtensionSpec.hmacSecretMC,
            ExtensionSpec.minPinLength, "largeBlobKey",
        ]
        let key = try VirtualKey(configuration: configuration)
        guard let verdicts = try await runPythonCheck("fido2_extensions_check.py", key) else { return }
        #expect(verdicts.count == 16, "\(verdicts.keys.sorted())")
        for (step, verdict) in verdicts {
            #expect(verdict["ok"] as? Bool == true, "\(step): \(verdict)")
        }
        let info = verdicts["getInfo"] ?? [:]
        #expect(Set(info["extensions"] as? [String] ?? []) == Set(configuration.extensions ?? []))
        #expect(info["maxCredBlobLength"] as? Int == 32)

        let registered = verdicts["registerPRF"] ?? [:]
        #expect(registered["prfEnabled"] as? Bool == true)
        #expect(registered["mcResult"] as? Bool == true)
        #expect(registered["credProps"] as? Bool == true)
        #expect(registered["hmacSecret"] as? Bool == true)
        #expect(registered["credBlob"] as? Bool == true)
        #expect(registered["credProtect"] as? Int == 1)
        #expect(registered["uv"] as? Bool == false)

        let noUV = verdicts["prfWithoutUV"] ?? [:]
        #expect(noUV["uv"] as? Bool == false)
        #expect(noUV["length"] as? Int == 32)
        for name in ["stable", "matchesRegistration", "differsAcrossSalts", "pairMatches"] {
            #expect(noUV[name] as? Bool == true, "prfWithoutUV \(name)")
        }
        #expect(verdicts["hmacSecretWithoutUV"]?["equalsPRF"] as? Bool == true)
        #expect(verdicts["hmacSecretWithoutUV"]?["output2Length"] as? Int == 0)

        #expect(verdicts["credBlob"]?["blob"] as? String == "a credential blob")
        #expect(verdicts["credBlob"]?["nonDiscoverableStored"] as? Bool == false)

        let nonRK = verdicts["nonDiscoverablePRF"] ?? [:]
        #expect(nonRK["prfEnabled"] as? Bool == true)
        #expect(nonRK["credProps"] as? Bool == false)
        #expect(nonRK["stable"] as? Bool == true)
        #expect(nonRK["differsFromDiscoverable"] as? Bool == true)
        #expect(nonRK["withoutHmacSecret"] is NSNull)

        let protectNoUV = verdicts["credProtectWithoutUV"] ?? [:]
        #expect(protectNoUV["level3Output"] as? Int == 3)
        #expect(protectNoUV["level2Output"] as? Int == 2)
        #expect(protectNoUV["level3Discovery"] as? String == "NO_CREDENTIALS")
        #expect(protectNoUV["level3AllowList"] as? String == "NO_CREDENTIALS")
        #expect(protectNoUV["level2Discovery"] as? String == "NO_CREDENTIALS")
        #expect(protectNoUV["level2AllowList"] as? String == "ok")
        #expect(verdicts["excludeWithoutUV"]?["created"] as? Bool == true)

        // python-fido2's LargeBlobExtension: supported at registration, the write (with the
        // getAssertion's token, left with only lbw) and the read back.
        let largeBlob = verdicts["largeBlob"] ?? [:]
        for name in ["supported", "written", "readBack"] {
            #expect(largeBlob[name] as? Bool == true, "largeBlob \(name): \(largeBlob)")
        }

        let withUV = verdicts["prfWithUV"] ?? [:]
        for name in ["uv", "stable", "differsFromNoUV", "noUVStillSame"] {
            #expect(withUV[name] as? Bool == true, "prfWithUV \(name)")
        }
        let protectUV = verdicts["credProtectWithUV"] ?? [:]
        for name in ["level3Discovery", "level3AllowList", "level2Discovery"] {
            #expect(protectUV[name] as? Bool == true, "credProtectWithUV \(name)")
        }
        #expect(protectUV["excludeWithUV"] as? String == "CREDENTIAL_EXCLUDED")

        let levels = verdicts["enumerateCredProtect"]?["levels"] as? [String: [Int]] ?? [:]
        #expect(levels == ["example.com": [1], "cp2.example": [2], "cp3.example": [3]])

        let one = verdicts["protocolOne"] ?? [:]
        #expect(one["equalsProtocolTwo"] as? Bool == true)
        #expect(one["defaultIsOne"] as? Bool == true)
        #expect(one["badSaltAuth"] as? String == "PIN_AUTH_INVALID")
        #expect(one["shortSalt"] as? String == "INVALID_LENGTH")

        #expect(verdicts["minPinLength"]?["listed"] as? Int == 4)
        #expect(verdicts["minPinLength"]?["unlisted"] is NSNull)
    }
}
