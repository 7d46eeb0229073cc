import Authenticators
import CTAP2
import Crypto
import Foundation
import Testing
import Transport
import VirtualAuthenticator

/// thirdPartyPayment (CTAP 2.2 §12.9) through the host's typed extension inputs and outputs,
/// against a ctap22 virtual key: the flag sticks to discoverable credentials (in the state file,
/// across a restart) and to non-discoverable ones (in their sealed ID).
struct ThirdPartyPaymentTests {
    func open(_ key: VirtualKey) async throws -> Authenticator {
        try await Authenticator.open(InProcessConnection(handler: key, uri: "test:pay"), deadline: .after(.seconds(5)))
    }

    func register(_ authenticator: Authenticator, user: UInt8, resident: Bool, payment: Bool) async throws -> [UInt8] {
        var inputs = MakeCredentialExtensionInputs()
        inputs.thirdPartyPayment = payment
        let request = MakeCredentialRequest(
            clientDataHash: Array(SHA256.hash(data: [user])), rp: RelyingPartyEntity(id: "example.org"),
            user: UserEntity(id: [user], name: "u\(user)"),
            pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)],
            extensions: inputs.isEmpty ? nil : inputs.cbor,
            options: CommandOptions(residentKey: resident ? true : nil))
        let response = try await authenticator.session.makeCredential(request, deadline: .after(.seconds(5)))
        return try #require(response.authData.attestedCredentialData?.credentialID)
    }

    func paymentOutput(_ authenticator: Authenticator, id: [UInt8]) async throws -> Bool? {
        var inputs = GetAssertionExtensionInputs()
        inputs.thirdPartyPayment = true
        let request = GetAssertionRequest(
            rpID: "example.org", clientDataHash: Array(SHA256.hash(data: [9])),
            allowList: [PublicKeyCredentialDescriptor(id: id)], extensions: inputs.cbor)
        let response = try await authenticator.session.getAssertion(request, deadline: .after(.seconds(5)))
        return try response.authData.extensionOutputs().thirdPartyPayment
    }

    @Test func theFlagSticksToEveryKindOfCredentialAndSurvivesARestart() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("pay-\(UUID()).state").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        var ids: [String: [UInt8]] = [:]
        do {
            let authenticator = try await open(try VirtualKey(configuration: .ctap22(), stateFile: state))
            #expect(await authenticator.info.extensions.contains(.thirdPartyPayment))
            ids["residentPay"] = try await register(authenticator, user: 1, resident: true, payment: true)
            ids["residentPlain"] = try await register(authenticator, user: 2, resident: true, payment: false)
            ids["sealedPay"] = try await register(authenticator, user: 3, resident: false, payment: true)
            ids["sealedPlain"] = try await register(authenticator, user: 4, resident: false, payment: false)
            await authenticator.close()
        }
        // A new key on the same state file: the stored flags and the sealed IDs still say so.
        let authenticator = try await open(try VirtualKey(configuration: .ctap22(), stateFile: state))
        for (name, id) in ids.sorted(by: { $0.key < $1.key }) {
            #expect(try await paymentOutput(authenticator, id: id) == name.hasSuffix("Pay"), "\(name)")
        }
    }

    @Test func aKeyBeforeCTAP22NeitherListsNorAnswersIt() async throws {
        let authenticator = try await open(try VirtualKey(configuration: .ctap21()))
        #expect(!(await authenticator.info.extensions.contains(.thirdPartyPayment)))
        let id = try await register(authenticator, user: 1, resident: true, payment: true)
        #expect(try await paymentOutput(authenticator, id: id) == nil)
    }
}
