import CBOR
import Foundation
import TestProcesses
import Testing
import VirtualAuthenticator

/// python-fido2's view of the same exchanges: an independent implementation parses our
/// responses, verifies the packed attestation (including its §8.2.1 certificate checks), the
/// chain to the exposed root, an assertion signature and a U2F registration.
@Suite("VirtualKey as python-fido2 sees it")
struct VirtualKeyPythonTests {
    static let script = """
        import json, sys
        from fido2 import cbor
        from fido2.ctap2 import AttestationResponse, AssertionResponse, Info
        from fido2.attestation import Attestation, verify_x509_chain
        from fido2.cose import CoseKey
        from fido2.ctap1 import RegistrationData
        a = json.load(sys.stdin)
        h = bytes.fromhex
        info = Info.from_dict(cbor.decode(h(a["info"])))
        mc = AttestationResponse.from_dict(cbor.decode(h(a["mc"])))
        result = Attestation.for_type(mc.fmt)().verify(mc.att_stmt, mc.auth_data, h(a["mcHash"]))
        verify_x509_chain(list(result.trust_path) + [h(a["root"])])
        cd = mc.auth_data.credential_data
        ga = AssertionResponse.from_dict(cbor.decode(h(a["ga"])))
        ga.verify(h(a["gaHash"]), CoseKey.parse(cd.public_key))
        reg = RegistrationData(h(a["u2f"]))
        reg.verify(h(a["appParam"]), h(a["u2fChallenge"]))
        print(json.dumps({
            "versions": info.versions, "aaguid": bytes(info.aaguid).hex(), "options": info.options,
            "maxMsgSize": info.max_msg_size, "algorithms": [x["alg"] for x in info.algorithms],
            "attestationType": result.attestation_type.name, "credentialAaguid": bytes(cd.aaguid).hex(),
            "credentialId": cd.credential_id.hex(), "rpIdHash": mc.auth_data.rp_id_hash.hex(),
            "mcFlags": mc.auth_data.flags, "gaCounter": ga.auth_data.counter,
            "gaCredentialId": ga.credential["id"].hex(),
        }))
        """

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func pythonFido2AcceptsTheKey() async throws {
        guard let python = ProcessInfo.processInfo.environment["SECURITYKEY_PYTHON"] else {
            Issue.record(
                "SECURITYKEY_PYTHON is not set: point it at a Python with python-fido2 (e.g. .venv/bin/python3)."
            )
            return
        }
        let aaguid: [UInt8] = Array(0xA0..<0xB0)
        let key = try makeKey(.init(aaguid: aaguid))
        let info = await key.handleCBOR([Spec.getInfo], keepalive: { _ in })
        let mcHash = randomClientDataHash()
        let mc = await key.handleCBOR(
            [Spec.makeCredential] + CBOREncoder.encode(.map(makeCredentialRequest(clientDataHash: mcHash))),
            keepalive: { _ in })
        try #require(mc.first == Spec.ok)
        let authData = try ParsedAuthData(
            try #require(try CBORDecoder().decode(Array(mc.dropFirst())).mapValue?[2]?.bytesValue))
        let credentialID = try #require(authData.credentialID)
        let gaHash = randomClientDataHash()
        let ga = await key.handleCBOR(
            [Spec.getAssertion]
                + CBOREncoder.encode(
                    .map(getAssertionRequest(clientDataHash: gaHash, allowList: [credentialID]))),
            keepalive: { _ in })
        try #require(ga.first == Spec.ok)
        let challenge = randomClientDataHash()
        let appParam = sha256("example.org")
        let u2f = await key.handleU2F(VirtualKeyU2FTests.apdu(ins: 0x01, data: challenge + appParam))
        try #require(u2f.suffix(2) == [0x90, 0x00])

        let input: [String: String] = [
            "info": Self.hex(Array(info.dropFirst())), "mc": Self.hex(Array(mc.dropFirst())),
            "mcHash": Self.hex(mcHash), "root": Self.hex(key.attestationRootCertificateDER),
            "ga": Self.hex(Array(ga.dropFirst())), "gaHash": Self.hex(gaHash),
            "u2f": Self.hex(Array(u2f.dropLast(2))), "appParam": Self.hex(appParam),
            "u2fChallenge": Self.hex(challenge),
        ]
        let output = try await runPython(python, script: Self.script, input: try JSONEncoder().encode(input))
        let view = try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any])
        #expect(view["versions"] as? [String] == ["U2F_V2", "FIDO_2_0"])
        #expect(view["aaguid"] as? String == Self.hex(aaguid))
        #expect(view["credentialAaguid"] as? String == Self.hex(aaguid))
        #expect(
            view["options"] as? [String: Bool] == [
                "rk": true, "up": true, "plat": false, "clientPin": false, "pinUvAuthToken": true,
            ])
        #expect(view["maxMsgSize"] as? Int == 1200)
        #expect(view["algorithms"] as? [Int] == Spec.defaultAlgorithms)
        #expect(view["attestationType"] as? String == "BASIC")
        #expect(view["credentialId"] as? String == Self.hex(credentialID))
        #expect(view["gaCredentialId"] as? String == Self.hex(credentialID))
        #expect(view["rpIdHash"] as? String == Self.hex(sha256("example.org")))
        #expect(view["mcFlags"] as? Int == 0x41)
        #expect(view["gaCounter"] as? Int == Int(authData.signCount) + 1)
    }
}

/// Runs `script` with `python`, feeding `input` on stdin; fails with Python's stderr on error.
func runPython(_ python: String, script: String, input: Data) async throws -> Data {
    let output = try await TestProcess.run(python, ["-c", script], input: input)
    if output.status != 0 {
        Issue.record("python-fido2 rejected the exchange: \(output.stderrText)")
    }
    return output.stdout
}
