import CTAP2
import Crypto
import Foundation
import NFCTransport
import Testing
import Transport
import VirtualAuthenticator
import WebAuthnVerification

/// The virtual key served as a vpcd card, reached through the real pcscd: by our own host
/// (CTAP2 over PCSCConnection) and by python-fido2 (CtapPcscDevice), an independent host.
extension VPCDEndToEndTests {
    /// python-fido2 runs getInfo, makeCredential (rk and not) and getAssertion against the
    /// VirtualKey served as a card, verifying attestation and assertion signatures itself.
    @Test(arguments: [false, true])
    func pythonFIDO2AcceptsTheVirtualKeyOverNFC(extended: Bool) async throws {
        guard let bed = VPCDTestBed.fromEnvironment(), let python = pythonForCrossCheck() else { return }
        let key = try VirtualKey()
        let result = try await withCard(key, bed: bed) { _ in
            try await runProcess(
                python,
                [
                    pythonScriptsDirectory.appendingPathComponent("fido2_pcsc_check.py").path,
                    "--reader", bed.readers[0],
                ] + (extended ? ["--extended"] : []))
        }
        #expect(result.status == 0, "\(result.output)")
        // Every step's verdict is python-fido2's, printed as one JSON object per line.
        let verdicts = result.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(verdicts.count >= 5)
        #expect(verdicts.allSatisfy { ($0["ok"] as? Bool) == true }, "\(result.output)")
    }

    /// Our host registers and signs in with the virtual card through pcscd, in every APDU mode
    /// (extended, chained short APDUs, and a card that only takes short APDUs), with presence
    /// after a delay so the 9100 polling path runs.
    @Test(arguments: [
        (PCSCConnection.APDUMode.automatic, false), (.short, false), (.extended, false), (.automatic, true),
    ])
    func hostRegistersAndSignsInOverPCSC(mode: PCSCConnection.APDUMode, shortOnlyCard: Bool) async throws {
        guard let bed = VPCDTestBed.fromEnvironment() else { return }
        let key = try VirtualKey(userPresence: .approveAfter(.milliseconds(300)))
        try await withCard(key, bed: bed, shortAPDUsOnly: shortOnlyCard) { _ in
            let connection = try await openWhenPresent(bed.readers[0], options: .init(apduMode: mode))
            let session = CTAP2Session(connection: connection)
            let info = try await session.getInfo()
            #expect(info.aaguid.bytes == key.aaguid)

            let clientDataHash = Array(SHA256.hash(data: Array("nfc registration".utf8)))
            let keepalives = Recorder<KeepaliveStatus>()
            let registration = try await session.makeCredential(
                MakeCredentialRequest(
                    clientDataHash: clientDataHash, rp: RelyingPartyEntity(id: "example.org"),
                    // A long user name makes the request span several short APDUs.
                    user: UserEntity(
                        id: Array(repeating: 7, count: 64), name: String(repeating: "n", count: 64),
                        displayName: String(repeating: "d", count: 64)),
                    pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)],
                    options: CommandOptions(residentKey: true)),
                keepalive: { keepalives.append($0) })
            #expect(keepalives.all.contains(.userPresenceNeeded))
            _ = try registration.attestationObject.verify(clientDataHash: clientDataHash)
            let credential = try #require(registration.authData.attestedCredentialData)

            let assertionHash = Array(SHA256.hash(data: Array("nfc assertion".utf8)))
            let assertion = try await session.getAssertion(
                GetAssertionRequest(rpID: "example.org", clientDataHash: assertionHash))
            try assertion.verify(clientDataHash: assertionHash, publicKey: credential.credentialPublicKey)
            #expect(assertion.user?.id == Array(repeating: 7, count: 64))
            await connection.close()
        }
    }
}

extension VPCDEndToEndTests {
    /// python-fido2's ClientPin against the virtual card through pcscd, protocols 1 and 2: set
    /// and change the PIN, a wrong PIN, tokens with permissions and an RP ID, and
    /// makeCredential / getAssertion with user verification — python-fido2's verdicts.
    @Test(arguments: [1, 2])
    func pythonFIDO2ClientPINOverNFC(protocolVersion: Int) async throws {
        guard let bed = VPCDTestBed.fromEnvironment(), let python = pythonForCrossCheck() else { return }
        let key = try VirtualKey()
        let result = try await withCard(key, bed: bed) { _ in
            try await runProcess(
                python,
                [
                    pythonScriptsDirectory.appendingPathComponent("fido2_pcsc_pin_check.py").path,
                    "--reader", bed.readers[0], "--protocol", String(protocolVersion),
                ])
        }
        #expect(result.status == 0, "\(result.output)")
        let verdicts = result.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(verdicts.count == 8, "\(result.output)")
        #expect(verdicts.allSatisfy { ($0["ok"] as? Bool) == true }, "\(result.output)")
    }
}
