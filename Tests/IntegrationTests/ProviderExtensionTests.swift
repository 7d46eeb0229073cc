import Authenticators
import CBOR
import CTAP2
import Crypto
import Foundation
import SecurityKeys
import Synchronization
import Testing
import Transport
import VirtualAuthenticator

/// Forwards to a virtual key, leaving chosen extensions out of its getInfo (a key that lacks
/// them) and counting the makeCredential requests that reach it.
final class ExtensionHidingHandler: CTAPMessageHandler {
    let inner: any CTAPMessageHandler
    let hidden: Set<String>
    let makeCredentials = Mutex(0)
    init(inner: any CTAPMessageHandler, hiding hidden: Set<String>) {
        self.inner = inner
        self.hidden = hidden
    }
    func handleCBOR(_ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void) async
        -> [UInt8]
    {
        if message.first == 0x01 { makeCredentials.withLock { $0 += 1 } }
        let reply = await inner.handleCBOR(message, keepalive: keepalive)
        guard message.first == 0x04, reply.first == 0x00,
            var info = (try? CBORDecoder().decode(Array(reply.dropFirst())))?.mapValue,
            let extensions = info[0x02]?.arrayValue
        else { return reply }
        info[0x02] = .array(extensions.filter { !hidden.contains($0.stringValue ?? "") })
        return [0x00] + CBOREncoder.encode(.map(info))
    }
    func handleU2F(_ apdu: [UInt8]) async -> [UInt8] { await inner.handleU2F(apdu) }
    func powerCycle() async { await inner.powerCycle() }
    func wink() async { await inner.wink() }
}

/// The provider's extensions end to end against the virtual key.
///
struct ProviderExtensionTests {
    let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")
    static let pin = "1234"

    func controller(_ handler: any CTAPMessageHandler) -> SecurityKeyAuthorizationController {
        SecurityKeyAuthorizationController(
            sources: [.connection(InProcessConnection(handler: handler))],
            interaction: ScriptedInteraction(pins: [String](repeating: Self.pin, count: 20)))
    }

    func registration(_ user: UInt8, resident: Bool = false) -> SecurityKeyCredentialRegistrationRequest {
        var request = provider.createCredentialRegistrationRequest(
            challenge: randomBytes(32), displayName: "U\(user)", name: "u\(user)", userID: [user])
        request.residentKeyPreference = resident ? .required : .discouraged
        return request
    }

    func assertion(
        _ credentialIDs: [[UInt8]], uv: UserVerificationPreference = .discouraged
    ) -> SecurityKeyCredentialAssertionRequest {
        var request = provider.createCredentialAssertionRequest(challenge: randomBytes(32))
        request.allowedCredentials = credentialIDs.map { SecurityKeyCredentialDescriptor(credentialID: $0) }
        request.userVerificationPreference = uv
        return request
    }

    // MARK: Runs with today's virtual key

    /// credProps (WebAuthn L3 §10.1.3): rk is the requireResidentKey makeCredential was sent
    /// with; absent when not asked for.
    @Test func credPropsReportsTheResidentKeyRequest() async throws {
        let controller = controller(try VirtualKey(configuration: .init(pin: Self.pin)))
        var resident = registration(1, resident: true)
        resident.credentialProperties = true
        let made = try await controller.performRegistration(resident)
        #expect(made.credentialProperties == SecurityKeyCredentialProperties(residentKey: true))
        #expect(made.clientExtensionResultsJSON == #"{"credProps":{"rk":true}}"#)

        var serverSide = registration(2)
        serverSide.credentialProperties = true
        #expect(try await controller.performRegistration(serverSide).credentialProperties?.residentKey == false)

        var preferred = registration(3)
        preferred.residentKeyPreference = .preferred
        preferred.credentialProperties = true
        // The virtual key can store credentials (rk option), so "preferred" makes one.
        #expect(try await controller.performRegistration(preferred).credentialProperties?.residentKey == true)

        #expect(try await controller.performRegistration(registration(4)).credentialProperties == nil)
    }

    /// An enforced credProtect above level 1 on a key without credProtect fails before any
    /// makeCredential is sent (CTAP 2.2 §12.1); not enforced, the credential is made unprotected.
    @Test func enforcedCredProtectFailsBeforeCreating() async throws {
        let hiding = ExtensionHidingHandler(
            inner: try VirtualKey(configuration: .init(pin: Self.pin)), hiding: ["credProtect"])
        let controller = controller(hiding)
        var request = registration(5)
        request.credentialProtection = .init(policy: .userVerificationRequired, isEnforced: true)
        let error = await #expect(throws: SecurityKeyError.self) { try await controller.performRegistration(request) }
        #expect(error?.code == .notHandled)
        #expect(hiding.makeCredentials.withLock { $0 } == 0)

        request.credentialProtection = .init(policy: .userVerificationRequired, isEnforced: false)
        let made = try await controller.performRegistration(request)
        #expect(made.authenticatorExtensionOutputs.credProtect == nil)
        #expect(hiding.makeCredentials.withLock { $0 } == 1)
    }

    /// A key without hmac-secret: prf.enabled is false and no PRF results appear.
    @Test func prfOnAKeyWithoutHMACSecretIsNotEnabled() async throws {
        let hiding = ExtensionHidingHandler(
            inner: try VirtualKey(configuration: .init(pin: Self.pin)), hiding: ["hmac-secret", "hmac-secret-mc"])
        let controller = controller(hiding)
        var request = registration(6)
        request.prf = .checkForSupport
        let made = try await controller.performRegistration(request)
        #expect(made.prf == SecurityKeyPRFRegistrationOutput(isSupported: false))
        var signIn = assertion([made.credentialID])
        signIn.prf = SecurityKeyPRFAssertionInput(inputValues: .init(saltInput1: [1]))
        #expect(try await controller.performAssertion(signIn).prf == nil)
    }

    // MARK: Needs the virtual key's extensions

    @Test
    func prfOutputsAreStableDifferAcrossSaltsAndUserVerification() async throws {
        let controller = controller(try VirtualKey(configuration: .init(pin: Self.pin)))
        var request = registration(7)
        request.prf = .checkForSupport
        let made = try await controller.performRegistration(request)
        #expect(made.prf?.isSupported == true)
        #expect(made.clientExtensionResultsJSON.contains(#""enabled":true"#))

        func evaluate(_ first: [UInt8], _ second: [UInt8]? = nil, uv: Bool = false) async throws
            -> SecurityKeyPRFAssertionOutput
        {
            var signIn = assertion([made.credentialID], uv: uv ? .required : .discouraged)
            signIn.prf = SecurityKeyPRFAssertionInput(inputValues: .init(saltInput1: first, saltInput2: second))
            return try #require(try await controller.performAssertion(signIn).prf)
        }
        let a = try await evaluate(Array("a".utf8))
        let again = try await evaluate(Array("a".utf8))
        let b = try await evaluate(Array("b".utf8))
        let both = try await evaluate(Array("a".utf8), Array("b".utf8))
        let verified = try await evaluate(Array("a".utf8), uv: true)
        let verifiedAgain = try await evaluate(Array("a".utf8), uv: true)
        #expect(a.first == again.first)
        #expect(a.first != b.first)
        #expect(both.first == a.first)
        #expect(both.second == b.first)
        // CTAP 2.2 §12.5: one CredRandom with UV, another without.
        #expect(verified.first != a.first)
        #expect(verified.first == verifiedAgain.first)
        #expect(a.first.bitCount == 256)
    }

    @Test
    func rawHMACSecretIsThePRFOfTheHashedSalt() async throws {
        let controller = controller(try VirtualKey(configuration: .init(pin: Self.pin)))
        var request = registration(8)
        request.hmacCreateSecret = true
        let made = try await controller.performRegistration(request)
        #expect(made.hmacCreateSecret == true)
        let input = Array("salt".utf8)
        var prf = assertion([made.credentialID])
        prf.prf = SecurityKeyPRFAssertionInput(inputValues: .init(saltInput1: input))
        let viaPRF = try #require(try await controller.performAssertion(prf).prf)
        // The same secret through raw hmac-secret with the salt WebAuthn L3 §10.1.4 derives.
        var raw = assertion([made.credentialID])
        let salt = Array(SHA256.hash(data: Array("WebAuthn PRF".utf8) + [0] + input))
        raw.hmacGetSecret = SecurityKeyHMACSecretInput(salt1: salt)
        let viaRaw = try #require(try await controller.performAssertion(raw).hmacGetSecret)
        #expect(viaRaw.output1 == viaPRF.first)
    }

    @Test
    func prfResultsAtRegistrationMatchTheAssertion() async throws {
        var configuration = VirtualKey.Configuration.ctap21(pin: Self.pin)
        configuration.extensions = ["credProtect", "credBlob", "hmac-secret", "hmac-secret-mc", "minPinLength"]
        let controller = controller(try VirtualKey(configuration: configuration))
        var request = registration(9)
        request.userVerificationPreference = .required
        request.prf = SecurityKeyPRFRegistrationInput(inputValues: .init(saltInput1: [7]))
        let made = try await controller.performRegistration(request)
        let atRegistration = try #require(made.prf?.first)
        var signIn = assertion([made.credentialID], uv: .required)
        signIn.prf = SecurityKeyPRFAssertionInput(inputValues: .init(saltInput1: [7]))
        #expect(try await controller.performAssertion(signIn).prf?.first == atRegistration)
    }

    @Test
    func credProtectThreeIsInvisibleWithoutUserVerification() async throws {
        let controller = controller(try VirtualKey(configuration: .ctap21(pin: Self.pin)))
        var request = registration(10, resident: true)
        request.credentialProtection = .init(policy: .userVerificationRequired, isEnforced: true)
        let made = try await controller.performRegistration(request)
        #expect(made.authenticatorExtensionOutputs.credProtect == .userVerificationRequired)
        #expect(made.clientExtensionResultsJSON == "{}")

        for allow in [[], [made.credentialID]] {
            let hidden = await #expect(throws: SecurityKeyError.self) {
                try await controller.performAssertion(assertion(allow))
            }
            #expect(hidden?.code == .noCredentials)
        }
        let verified = try await controller.performAssertion(assertion([made.credentialID], uv: .required))
        #expect(verified.credentialID == made.credentialID)
    }

    @Test
    func credBlobIsStoredAndReadBack() async throws {
        let key = try VirtualKey(configuration: .ctap21(pin: Self.pin))
        let controller = controller(key)
        let authenticator = try await Authenticator.open(
            InProcessConnection(handler: key), deadline: .after(.seconds(60)))
        let maximum = Int(try #require(await authenticator.info.maxCredBlobLength))
        #expect(maximum >= 32)
        // credBlob is kept with discoverable credentials (CTAP 2.1 §12.2).
        var request = registration(11, resident: true)
        request.credentialBlob = Array(repeating: 0xAB, count: maximum)
        let made = try await controller.performRegistration(request)
        #expect(made.credentialBlobStored == true)
        var signIn = assertion([made.credentialID])
        signIn.getCredentialBlob = true
        #expect(try await controller.performAssertion(signIn).credentialBlob == request.credentialBlob)

        request.credentialBlob = Array(repeating: 0xAB, count: maximum + 1)
        let tooLong = await #expect(throws: SecurityKeyError.self) { try await controller.performRegistration(request) }
        #expect(tooLong?.code == .invalidRequest)
    }
}
