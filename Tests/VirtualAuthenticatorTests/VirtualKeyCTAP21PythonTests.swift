import Crypto
import Foundation
import Testing
import VirtualAuthenticator

/// python-fido2's CredentialManagement and Config drive a CTAP 2.1 virtual key
/// (scripts/python/fido2_ctap21_check.py) over CTAPHID/UDP here and over PC/SC in the bed
/// (``VPCDEndToEndTests``); the assertions are on what python-fido2 saw.
@Suite struct VirtualKeyCTAP21PythonTests {
    @Test func pythonFIDO2ManagesACTAP21KeyOverUDP() async throws {
        let key = try VirtualKey(configuration: .ctap21())
        guard let verdicts = try await runCTAP21Check(key, arguments: []) else { return }
        checkCTAP21View(verdicts, key: key)
    }

    @Test func pythonFIDO2ManagesAPreviewKeyOverUDP() async throws {
        let key = try VirtualKey(configuration: .ctap21Preview())
        guard let verdicts = try await runCTAP21Check(key, arguments: ["--preview"]) else { return }
        #expect(verdicts.allSatisfy { $0.value["ok"] as? Bool == true }, "\(verdicts)")
        let info = verdicts["getInfo"] ?? [:]
        #expect(info["versions"] as? [String] == ["U2F_V2", "FIDO_2_0", "FIDO_2_1_PRE"])
        let options = info["options"] as? [String: Bool] ?? [:]
        #expect(options["credentialMgmtPreview"] == true)
        #expect(options["credMgmt"] == nil)
        #expect(options["pinUvAuthToken"] == nil)
        #expect(verdicts["getCredsMetadata"]?["existing"] as? Int == 3)
        #expect(verdicts["getCredsMetadata"]?["remaining"] as? Int == 22)
        #expect(verdicts["updateUserInformation"]?["updateSupported"] as? Bool == false)
        #expect(verdicts["deleteCredential"]?["existing"] as? Int == 2)
        #expect(verdicts["deleteCredential"]?["deleteAgain"] as? String == "NO_CREDENTIALS")
        #expect(await key.discoverableCredentials.map(\.userName) == ["alice", "bob"])
    }
}

/// Serves `key` over CTAPHID/UDP while fido2_ctap21_check.py runs against it; returns the
/// verdicts by step, or nil (with an issue) when python is not set up.
func runCTAP21Check(_ key: VirtualKey, arguments: [String]) async throws -> [String: [String: Any]]? {
    try await runPythonCheck("fido2_ctap21_check.py", key, arguments: arguments)
}

/// Serves `key` over CTAPHID/UDP while the python-fido2 check `script` (in scripts/python, one
/// JSON verdict line per step) runs against it; returns the verdicts by step, or nil (with an
/// issue) when python is not set up. The script's exit status must be 0.
func runPythonCheck(_ script: String, _ key: VirtualKey, arguments: [String] = []) async throws
    -> [String: [String: Any]]?
{
    guard let python = pythonForCrossCheck() else { return nil }
    let server = try UDPCTAPHIDServer(handler: key, configuration: .init(host: "127.0.0.1", port: 0))
    let result = try await withThrowingTaskGroup(of: ChildProcessResult?.self) { group in
        group.addTask {
            try await server.run()
            return nil
        }
        defer { group.cancelAll() }
        return try await runChild(
            python,
            [pythonScriptsDirectory.appendingPathComponent(script).path, "--udp", String(server.port)] + arguments)
    }
    #expect(result.status == 0, "\(result.output)\(result.errors)")
    return ctap21Verdicts(result.output)
}

/// The JSON verdict lines of fido2_ctap21_check.py, by step name.
func ctap21Verdicts(_ output: String) -> [String: [String: Any]] {
    var verdicts: [String: [String: Any]] = [:]
    for line in output.split(separator: "\n") {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let step = object["step"] as? String
        else { continue }
        verdicts[step] = object
    }
    return verdicts
}

/// What python-fido2 must have seen of a fresh `.ctap21()` key after the full check.
func checkCTAP21View(_ verdicts: [String: [String: Any]], key: VirtualKey) {
    #expect(verdicts.count == 14, "\(verdicts.keys.sorted())")
    for (step, verdict) in verdicts {
        #expect(verdict["ok"] as? Bool == true, "\(step): \(verdict)")
    }
    let info = verdicts["getInfo"] ?? [:]
    #expect(info["versions"] as? [String] == ["U2F_V2", "FIDO_2_0", "FIDO_2_1"])
    let options = info["options"] as? [String: Bool] ?? [:]
    for name in ["credMgmt", "authnrCfg", "setMinPINLength", "makeCredUvNotRqd", "pinUvAuthToken", "rk"] {
        #expect(options[name] == true, "option \(name)")
    }
    #expect(options["alwaysUv"] == false)
    #expect(options["ep"] == false)
    #expect(options["clientPin"] == false)
    #expect(info["remaining"] as? Int == 25)
    #expect(info["minPINLength"] as? Int == 4)
    #expect(info["maxRPIDs"] as? Int == 8)
    #expect(info["extensions"] as? [String] == ["hmac-secret", "credProtect", "credBlob", "minPinLength", "largeBlobKey"])

    #expect(verdicts["getCredsMetadata"]?["existing"] as? Int == 3)
    #expect(verdicts["getCredsMetadata"]?["remaining"] as? Int == 22)
    let rps = verdicts["enumerateRPs"]?["rps"] as? [[String: Any]] ?? []
    #expect(rps.map { $0["id"] as? String } == ["example.com", "example.org"])
    #expect(rps.map { $0["name"] as? String } == ["Example", "Other"])
    let credentials = verdicts["enumerateCredentials"]?["credentials"] as? [[String: Any]] ?? []
    #expect(credentials.map { $0["credential"] as? String } == ["alice", "bob"])
    #expect(credentials.map { $0["userId"] as? String } == ["0101010101010101", "0202020202020202"])
    #expect(credentials.map { $0["displayName"] as? String } == ["Alice", "Bob"])
    #expect(credentials.map { $0["credProtect"] as? Int } == [1, 1])

    let update = verdicts["updateUserInformation"] ?? [:]
    #expect(update["wrongUserID"] as? String == "INVALID_PARAMETER")
    let updated = update["credentials"] as? [[String: Any]] ?? []
    #expect(updated.map { $0["name"] as? String } == ["alice", "robert"])
    #expect(updated.map { $0["displayName"] as? String } == ["Alice", "Robert B."])

    let delete = verdicts["deleteCredential"] ?? [:]
    #expect(delete["existing"] as? Int == 2)
    #expect(delete["remaining"] as? Int == 23)
    #expect(delete["deleteAgain"] as? String == "NO_CREDENTIALS")
    #expect((delete["rps"] as? [[String: Any]])?.map { $0["id"] as? String } == ["example.com"])

    let bound = verdicts["rpBoundToken"] ?? [:]
    #expect(bound["metadata"] as? String == "PIN_AUTH_INVALID")
    #expect(bound["otherRP"] as? String == "PIN_AUTH_INVALID")
    #expect(bound["ownRP"] as? Int == 2)

    let minPIN = verdicts["setMinPINLength"] ?? [:]
    #expect(minPIN["minPINLength"] as? Int == 6)
    #expect(minPIN["forcePINChange"] as? Bool == true)
    #expect(minPIN["tokenBeforeChange"] as? String == "PIN_POLICY_VIOLATION")
    #expect(minPIN["tooShort"] as? String == "PIN_POLICY_VIOLATION")
    #expect(minPIN["forcePINChangeAfterChange"] as? Bool == false)
    #expect(minPIN["lower"] as? String == "PIN_POLICY_VIOLATION")
    #expect(minPIN["forcedAgain"] as? Bool == true)
    #expect(minPIN["forcedToken"] as? String == "PIN_POLICY_VIOLATION")
    #expect(minPIN["forcePINChangeAtEnd"] as? Bool == false)
    #expect(minPIN["extensionListed"] as? Int == 6)
    #expect(minPIN["extensionUnlisted"] is NSNull)

    let alwaysUV = verdicts["toggleAlwaysUv"] ?? [:]
    #expect(alwaysUV["alwaysUvOn"] as? Bool == true)
    #expect(alwaysUV["makeCredUvNotRqdOn"] as? Bool == false)
    #expect(alwaysUV["makeCredential"] as? String == "PUAT_REQUIRED")
    #expect(alwaysUV["getAssertion"] as? String == "PUAT_REQUIRED")
    #expect(alwaysUV["withTokenUV"] as? Bool == true)
    #expect(alwaysUV["alwaysUvOff"] as? Bool == false)
    #expect(alwaysUV["makeCredUvNotRqdOff"] as? Bool == true)

    let ep = verdicts["enterpriseAttestation"] ?? [:]
    #expect(ep["epBefore"] as? Bool == false)
    #expect(ep["beforeEnable"] as? String == "INVALID_PARAMETER")
    #expect(ep["epAfter"] as? Bool == true)
    #expect(ep["epAtt"] as? Bool == true)
    #expect(ep["badValue"] as? String == "INVALID_OPTION")
    // The certificate python-fido2 verified is the key's enterprise one; other requests,
    // including a vendor-facilitated one for an RP not on the key's list, get the ordinary one.
    let enterpriseHex = key.enterpriseAttestationCertificateDER.map(hexString)
    #expect(enterpriseHex != nil)
    #expect(ep["epCertificate"] as? String == enterpriseHex)
    #expect(ep["vendorUnlistedEpAtt"] is NSNull)
    #expect(ep["vendorCertificate"] as? String == hexString(key.attestationCertificateDER))
    #expect(ep["plainEpAtt"] is NSNull)
    #expect(ep["plainCertificate"] as? String == hexString(key.attestationCertificateDER))
    #expect(key.enterpriseAttestationCertificateDER != key.attestationCertificateDER)

    let end = verdicts["getInfoAtEnd"] ?? [:]
    let endOptions = end["options"] as? [String: Bool] ?? [:]
    #expect(endOptions["ep"] == true)
    #expect(endOptions["alwaysUv"] == false)
    #expect(end["minPINLength"] as? Int == 6)
    #expect(end["remaining"] as? Int == 23)
}

func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16) }.joined()
}

extension VPCDEndToEndTests {
    /// python-fido2's CredentialManagement and Config against a CTAP 2.1 virtual card through
    /// pcscd: the same check and the same view as over UDP.
    @Test func pythonFIDO2ManagesACTAP21KeyOverNFC() async throws {
        guard let bed = VPCDTestBed.fromEnvironment(), let python = pythonForCrossCheck() else { return }
        let key = try VirtualKey(configuration: .ctap21())
        let result = try await withCard(key, bed: bed) { _ in
            try await runChild(
                python,
                [
                    pythonScriptsDirectory.appendingPathComponent("fido2_ctap21_check.py").path,
                    "--reader", bed.readers[0],
                ])
        }
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        checkCTAP21View(ctap21Verdicts(result.output), key: key)
    }

    /// The FIDO_2_1_PRE profile's credentialMgmtPreview through pcscd.
    @Test func pythonFIDO2ManagesAPreviewKeyOverNFC() async throws {
        guard let bed = VPCDTestBed.fromEnvironment(), let python = pythonForCrossCheck() else { return }
        let key = try VirtualKey(configuration: .ctap21Preview())
        let result = try await withCard(key, bed: bed) { _ in
            try await runChild(
                python,
                [
                    pythonScriptsDirectory.appendingPathComponent("fido2_ctap21_check.py").path,
                    "--reader", bed.readers[0], "--preview",
                ])
        }
        #expect(result.status == 0, "\(result.output)\(result.errors)")
        let verdicts = ctap21Verdicts(result.output)
        #expect(verdicts.count == 9, "\(verdicts.keys.sorted())")
        #expect(verdicts["deleteCredential"]?["existing"] as? Int == 2)
        #expect(verdicts["updateUserInformation"]?["updateSupported"] as? Bool == false)
    }
}
