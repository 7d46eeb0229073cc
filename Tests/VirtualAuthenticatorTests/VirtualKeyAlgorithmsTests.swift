import CBOR
import Foundation
import Testing
import VirtualAuthenticator

/// The algorithms beyond ES256 and EdDSA: RSA keys kept in the state file, state files of older
/// builds still loading, the `--algorithms` list, and python-fido2 registering and signing in with
/// every algorithm (its Fido2Client and Fido2Server, its fido2.cose classes and packed verifier).
@Suite("VirtualKey algorithms")
struct VirtualKeyAlgorithmsTests {
    /// Signs in with `credential` on `key` and checks the signature with the registered public key.
    static func assertionVerifies(
        _ key: VirtualKey, _ credential: (id: [UInt8], publicKey: CBORMap)
    ) async throws -> Bool {
        let clientDataHash = randomClientDataHash()
        let reply = try await send(
            key, Spec.getAssertion, getAssertionRequest(clientDataHash: clientDataHash, allowList: [credential.id]))
        try #require(reply.status == Spec.ok)
        let authData = try #require(reply.body?[2]?.bytesValue)
        return try verify(
            signature: try #require(reply.body?[3]?.bytesValue), data: authData + clientDataHash,
            coseKey: credential.publicKey)
    }

    @Test func rsaCredentialKeysLiveInTheStateFile() async throws {
        try await VirtualKeyStateTests.withDirectory { directory in
            let path = directory + "/key.state"
            let (rs256, ps256, es256K) = try await {
                let first = try VirtualKey(stateFile: path)
                return (
                    try await register(first, algorithm: Spec.rs256),
                    try await register(first, userID: [7], algorithm: Spec.ps256, rk: true),
                    try await register(first, algorithm: Spec.es256K)
                )
            }()
            let second = try VirtualKey(stateFile: path)
            #expect(try await Self.assertionVerifies(second, rs256))
            #expect(try await Self.assertionVerifies(second, ps256))
            #expect(try await Self.assertionVerifies(second, es256K))
            // The discoverable PS256 credential is found without an allow list.
            let found = try await send(second, Spec.getAssertion, getAssertionRequest())
            #expect(found.body?[1]?.mapValue?["id"] == .byteString(ps256.id))
            // The file holds the two RSA keys; authenticatorReset erases them.
            func storedKeys() throws -> Int? {
                let state = try CBORDecoder().decode(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
                return state.mapValue?["credentialKeys"]?.mapValue?.count
            }
            #expect(try storedKeys() == 2)
            try #require(try await send(second, Spec.reset).status == Spec.ok)
            #expect(try storedKeys() == nil)
        }
    }

    /// State files written by earlier builds (the fuzz seeds in Fuzz/Sessions/states, made before
    /// RSA keys were stored) still load and keep their credentials; once reset (the recordings set a
    /// PIN), the same file takes an RS256 credential whose key survives a reload.
    @Test(arguments: ["ctap21", "extensions", "bio"])
    func olderStateFilesLoad(_ name: String) async throws {
        let seed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Sessions/states/\(name).state")
        // The discoverable credentials each recording left, as python-fido2's CBOR decoder reads the files.
        let recorded = ["ctap21": 2, "extensions": 4, "bio": 0]
        try await VirtualKeyStateTests.withDirectory { directory in
            let path = directory + "/key.state"
            try FileManager.default.copyItem(atPath: seed.path, toPath: path)
            let credential = try await {
                let key = try VirtualKey(configuration: .ctap21(), stateFile: path)
                #expect(await key.discoverableCredentialCount == recorded[name])
                // Within the power-up window authenticatorReset needs no PIN (CTAP 2.1 §6.6).
                try #require(try await send(key, Spec.reset).status == Spec.ok)
                return try await register(key, algorithm: Spec.rs256, rk: true)
            }()
            let reloaded = try VirtualKey(configuration: .ctap21(), stateFile: path)
            #expect(await reloaded.discoverableCredentialCount == 1)
            #expect(try await Self.assertionVerifies(reloaded, credential))
        }
    }

    @Test func theOfferedAlgorithmsAreConfigurable() async throws {
        var settings = VirtualKeySettings()
        settings.algorithms = [.mlDSA65, .es256]
        let key = try VirtualKey(configuration: settings.configuration)
        let info = try #require(try await send(key, Spec.getInfo).body)
        #expect(
            info[0x0A] == [.map(["type": "public-key", "alg": -49]), .map(["type": "public-key", "alg": -7])])
        // ML-DSA replies need CTAPHID's largest message (CTAP 2.1 §11.2.4: 57 + 128 × 59 bytes).
        #expect(info[5] == .int(57 + 128 * 59))
        let defaultInfo = try #require(try await send(try makeKey(), Spec.getInfo).body)
        #expect(defaultInfo[5] == 1200)
        #expect(throws: VirtualKeyError.self) {
            try VirtualKey(configuration: .init(maxMsgSize: 2048, algorithms: [.es256, .mlDSA87]))
        }
        // The platform's preference decides among those offered (CTAP 2.1 §6.1.2 step 3).
        let reply = try await send(
            key, Spec.makeCredential, makeCredentialRequest(algorithms: [Spec.rs256, Spec.es256, Spec.mlDSA65]))
        #expect(try ParsedAuthData(try #require(reply.body?[2]?.bytesValue)).publicKey?[3] == .int(Spec.es256))
        #expect(
            try await send(key, Spec.makeCredential, makeCredentialRequest(algorithms: [Spec.rs256])).status
                == Spec.unsupportedAlgorithm)
        #expect(COSEAlgorithm(name: "MLDSA87") == .mlDSA87)
        #expect(COSEAlgorithm(name: "es256k") == COSEAlgorithm(rawValue: -47))
        #expect(COSEAlgorithm(name: "-257") == .rs256)
        #expect(COSEAlgorithm(name: "rs1") == nil)
    }

    /// python-fido2 registers and signs in with each algorithm over CTAPHID/UDP; a key with self
    /// attestation signs the attestation with the credential key, so the packed verifier checks
    /// every algorithm's signature too.
    @Test func pythonFIDO2RegistersAndSignsInWithEveryAlgorithm() async throws {
        let key = try VirtualKey(configuration: .init(algorithms: COSEAlgorithm.implemented, attestation: .selfAttestation))
        guard
            let verdicts = try await runPythonCheck(
                "fido2_algorithms_check.py", key, arguments: Spec.allAlgorithms.map(String.init))
        else { return }
        // COSE key types: EC2 2, OKP 1, RSA 3 (RFC 9053, RFC 8230), AKP 7 (draft-ietf-cose-dilithium).
        let keyTypes = [
            Spec.es256: 2, Spec.edDSA: 1, Spec.es384: 2, Spec.es512: 2, Spec.es256K: 2, Spec.rs256: 3,
            Spec.ps256: 3, Spec.mlDSA65: 7, Spec.mlDSA87: 7,
        ]
        #expect(verdicts.count == Spec.allAlgorithms.count, "\(verdicts)")
        for algorithm in Spec.allAlgorithms {
            let verdict = verdicts[String(algorithm)] ?? [:]
            #expect(verdict["ok"] as? Bool == true, "\(algorithm): \(verdict)")
            #expect(verdict["keyAlg"] as? Int == algorithm)
            #expect(verdict["keyType"] as? Int == keyTypes[algorithm])
            #expect(verdict["fmt"] as? String == "packed")
            #expect(verdict["attStmtAlg"] as? Int == algorithm)
            #expect(verdict["selfAttestation"] as? Bool == true)
        }
        // FIPS 204 Table 2 signature sizes; a 2048-bit RSA signature is 256 bytes.
        #expect(verdicts[String(Spec.mlDSA65)]?["signatureLength"] as? Int == 3309)
        #expect(verdicts[String(Spec.mlDSA87)]?["signatureLength"] as? Int == 4627)
        #expect(verdicts[String(Spec.rs256)]?["signatureLength"] as? Int == 256)
        #expect(verdicts[String(Spec.ps256)]?["class"] as? String == "PS256")
        #expect(verdicts[String(Spec.es256K)]?["class"] as? String == "ES256K")
    }
}
