import CBOR
import CTAP2
import Crypto
import Foundation
import Synchronization
import Testing
import Transport
import VirtualAuthenticator
import WebAuthnVerification

/// Our host's clientPIN against the virtual key's: every state a user can meet, reached for
/// real through the seam and reported with the code and attempts the spec says.
struct PINRoundTripTests {
    /// Counts the messages that reach the key, to prove client-side refusals ask nothing.
    final class CountingConnection: AuthenticatorConnection {
        let inner: InProcessConnection
        let count = Mutex(0)
        init(_ inner: InProcessConnection) { self.inner = inner }
        var descriptor: DeviceDescriptor { inner.descriptor }
        var capabilities: TransportCapabilities { inner.capabilities }
        var sent: Int { count.withLock { $0 } }
        func transact(
            _ command: TransportCommand, payload: [UInt8], deadline: Deadline,
            keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
        ) async throws(TransportError) -> [UInt8] {
            count.withLock { $0 += 1 }
            return try await inner.transact(
                command, payload: payload, deadline: deadline, keepalive: keepalive)
        }
        func close() async { await inner.close() }
    }

    struct Bench {
        let key: VirtualKey
        let connection: CountingConnection
        let session: CTAP2Session

        init(_ configuration: VirtualKey.Configuration = .init()) throws {
            key = try VirtualKey(configuration: configuration)
            connection = CountingConnection(InProcessConnection(handler: key))
            session = CTAP2Session(connection: connection)
        }

        func clientPIN() async throws -> ClientPIN { try await ClientPIN(session: session) }
    }

    private static let clientDataHash = Array(SHA256.hash(data: Array("pin round trip".utf8)))

    private func register(_ bench: Bench, token: PINUVAuthToken?) async throws -> MakeCredentialResponse {
        var request = MakeCredentialRequest(
            clientDataHash: Self.clientDataHash, rp: RelyingPartyEntity(id: "example.org"),
            user: UserEntity(id: [1, 2, 3], name: "anne"),
            pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)],
            options: CommandOptions(residentKey: true))
        if let token { try request.authorize(with: token) }
        return try await bench.session.makeCredential(request)
    }

    @Test func setPINThenRegisterAndSignInWithUserVerification() async throws {
        let bench = try Bench()
        #expect(try await bench.session.getInfo().options[.clientPIN] == false)
        try await bench.clientPIN().setPIN("123456")
        let info = try await bench.session.getInfo()
        #expect(info.options[.clientPIN] == true)
        let pin = try await bench.clientPIN()
        #expect(pin.pinUVAuthProtocol.version == 2)
        #expect(try await pin.pinRetries().retries == 8)

        let mcToken = try await pin.pinUVAuthToken(
            pin: "123456", permissions: [.makeCredential], rpID: "example.org")
        let registration = try await register(bench, token: mcToken)
        #expect(registration.authData.flags.contains(.userVerified))
        let credential = try #require(registration.authData.attestedCredentialData)

        let gaToken = try await pin.pinUVAuthToken(
            pin: "123456", permissions: [.getAssertion], rpID: "example.org")
        var assertionRequest = GetAssertionRequest(rpID: "example.org", clientDataHash: Self.clientDataHash)
        try assertionRequest.authorize(with: gaToken)
        let assertion = try await bench.session.getAssertion(assertionRequest)
        #expect(assertion.authData.flags.contains(.userVerified))
        try assertion.verify(clientDataHash: Self.clientDataHash, publicKey: credential.credentialPublicKey)

        // A token for getAssertion cannot make credentials, nor serve another RP.
        #expect(throws: CTAP2Error.self) {
            var request = MakeCredentialRequest(
                clientDataHash: Self.clientDataHash, rp: RelyingPartyEntity(id: "example.org"),
                user: UserEntity(id: [9], name: "x"),
                pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)])
            try request.authorize(with: gaToken)
        }
        #expect(throws: CTAP2Error.self) {
            var request = GetAssertionRequest(rpID: "other.example", clientDataHash: Self.clientDataHash)
            try request.authorize(with: gaToken)
        }
    }

    @Test func protocolOneWorksToo() async throws {
        let bench = try Bench(.init(pinUvAuthProtocols: [1]))
        try await bench.clientPIN().setPIN("1234")
        let pin = try await bench.clientPIN()
        #expect(pin.pinUVAuthProtocol.version == 1)
        let token = try await pin.pinUVAuthToken(
            pin: "1234", permissions: [.makeCredential], rpID: "example.org")
        #expect(try await register(bench, token: token).authData.flags.contains(.userVerified))
    }

    @Test func wrongPINsCountDownThenBlockUntilPowerCycleThenForGood() async throws {
        let bench = try Bench(.init(pin: "correct horse"))
        let pin = try await bench.clientPIN()
        var seen: [(CTAP2Error.Code, Int?)] = []
        for _ in 0..<3 {
            let error = await #expect(throws: CTAP2Error.self) {
                _ = try await pin.pinUVAuthToken(pin: "wrong pin", permissions: [.getAssertion])
            }
            seen.append((error?.code ?? .malformedResponse, error?.retriesLeft))
        }
        #expect(seen.map(\.0) == [.pinInvalid, .pinInvalid, .pinAuthBlocked])
        #expect(seen[0].1 == 7)
        #expect(seen[1].1 == 6)
        // Blocked until power cycle: even the right PIN is refused, and no attempt is spent.
        let blocked = await #expect(throws: CTAP2Error.self) {
            _ = try await pin.pinUVAuthToken(pin: "correct horse", permissions: [.getAssertion])
        }
        #expect(blocked?.code == .pinAuthBlocked)
        let retries = try await pin.pinRetries()
        #expect(retries.retries == 5)
        #expect(retries.powerCycleRequired == true)

        await bench.key.powerCycle()
        _ = try await pin.pinUVAuthToken(pin: "correct horse", permissions: [.getAssertion])
        #expect(try await pin.pinRetries().retries == 8)

        // Eight wrong PINs in all (power cycling after every third) block the PIN for good.
        var last: CTAP2Error?
        for attempt in 1...8 {
            last = await #expect(throws: CTAP2Error.self) {
                _ = try await pin.pinUVAuthToken(pin: "wrong pin", permissions: [.getAssertion])
            }
            if attempt % 3 == 0 { await bench.key.powerCycle() }
        }
        #expect(last?.code == .pinBlocked)
        let forGood = await #expect(throws: CTAP2Error.self) {
            _ = try await pin.pinUVAuthToken(pin: "correct horse", permissions: [.getAssertion])
        }
        #expect(forGood?.code == .pinBlocked)
    }

    @Test func pinRulesAreCheckedBeforeTheKeyIsAsked() async throws {
        let bench = try Bench(.init(minPINLength: 6))
        let pin = try await bench.clientPIN()
        let before = bench.connection.sent
        for bad in ["12", "12345", String(repeating: "x", count: 64), "12345\u{0}"] {
            let error = await #expect(throws: CTAP2Error.self) { try await pin.setPIN(bad) }
            #expect(error?.code == .pinPolicyViolation)
        }
        #expect(bench.connection.sent == before)
        try await pin.setPIN("123456")
    }

    @Test func notSetAndRequired() async throws {
        let bench = try Bench()
        let pin = try await bench.clientPIN()
        let notSet = await #expect(throws: CTAP2Error.self) {
            _ = try await pin.pinUVAuthToken(pin: "1234", permissions: [.makeCredential])
        }
        #expect(notSet?.code == .pinNotSet)

        try await pin.setPIN("1234")
        // A discoverable credential without a token on a key with a PIN: the user is told a PIN is needed.
        let raw = await #expect(throws: CTAP2Error.self) { _ = try await register(bench, token: nil) }
        let explained = await pin.explain(try #require(raw))
        #expect(explained.code == .pinRequired)
    }

    @Test func forcedPINChange() async throws {
        let bench = try Bench(.init(pin: "1234", forcePINChange: true))
        let pin = try await bench.clientPIN()
        #expect(pin.info.forcePINChange == true)
        let before = bench.connection.sent
        let error = await #expect(throws: CTAP2Error.self) {
            _ = try await pin.pinUVAuthToken(pin: "1234", permissions: [.makeCredential])
        }
        #expect(error?.code == .pinChangeRequired)
        #expect(bench.connection.sent == before)
        try await pin.changePIN(from: "1234", to: "5678")
        // The key drops the demand once the PIN changed; the new PIN gets tokens.
        let info = try await bench.session.getInfo()
        #expect(info.forcePINChange != true)
        _ = try await ClientPIN(session: bench.session, info: info)
            .pinUVAuthToken(pin: "5678", permissions: [.makeCredential], rpID: "example.org")
    }

    @Test func biometricFailuresFallBackToPIN() async throws {
        let bench = try Bench(
            .init(options: ["rk": true, "up": true, "plat": false, "uv": true], pin: "1234", maxUVRetries: 3))
        await bench.key.setUserVerification(.mismatch)
        let pin = try await bench.clientPIN()
        var codes: [CTAP2Error.Code] = []
        var retriesLeft: [Int?] = []
        for _ in 0..<3 {
            let error = await #expect(throws: CTAP2Error.self) {
                _ = try await pin.uvAuthToken(permissions: [.getAssertion], rpID: "example.org")
            }
            codes.append(error?.code ?? .malformedResponse)
            retriesLeft.append(error?.retriesLeft)
        }
        #expect(codes.first == .uvInvalid)
        #expect(retriesLeft.first == 2)
        #expect(codes.last == .uvBlocked)
        #expect(try await pin.uvRetries() == 0)
        // Built-in UV blocked: the PIN still works.
        let token = try await pin.pinUVAuthToken(
            pin: "1234", permissions: [.makeCredential], rpID: "example.org")
        #expect(try await register(bench, token: token).authData.flags.contains(.userVerified))

        // And a matching finger gives a token without a PIN.
        let fresh = try Bench(
            .init(options: ["rk": true, "up": true, "plat": false, "uv": true], pin: "1234"))
        let uvToken = try await fresh.clientPIN().uvAuthToken(
            permissions: [.makeCredential], rpID: "example.org")
        #expect(try await register(fresh, token: uvToken).authData.flags.contains(.userVerified))
    }
}
