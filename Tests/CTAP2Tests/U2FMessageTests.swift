import CBOR
import Synchronization
import Testing
import Transport
import VectorFiles

@testable import CTAP2

/// A connection that answers U2F APDUs from a script and records them.
final class U2FScriptConnection: AuthenticatorConnection {
    let descriptor = DeviceDescriptor(uri: "u2f-script:", transport: .inProcess)
    let capabilities: TransportCapabilities = []
    private let replies: Mutex<[[UInt8]]>
    private let sent = Mutex<[[UInt8]]>([])
    /// The reply once the script is used up.
    let last: [UInt8]

    init(_ replies: [[UInt8]], then last: [UInt8]) {
        self.replies = Mutex(replies)
        self.last = last
    }

    var requests: [[UInt8]] { sent.withLock { $0 } }

    func transact(
        _ command: TransportCommand, payload: [UInt8], deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        guard command == .u2f else { throw TransportError(.notSupported, "U2F only.") }
        sent.withLock { $0.append(payload) }
        return replies.withLock { $0.isEmpty ? last : $0.removeFirst() }
    }

    func close() async {}
}

/// CTAP1/U2F messages (FIDO U2F Raw Message Formats) against python-fido2's recorded U2F
/// exchanges (tests/test_ctap1.py, tests/test_ctap2.py) and against hostile replies.
@Suite struct U2FMessageTests {
    static func vector(_ suffix: String) throws -> [UInt8] {
        try #require(Vectors.python(suffix), "vector \(suffix) missing").bytes
    }

    static var registerData: [UInt8] {
        get throws { try vector("test_ctap1/TestCtap1.test_register/device.call.return_value") }
    }
    static var authenticateData: [UInt8] {
        get throws { try vector("test_ctap1/TestCtap1.test_authenticate/device.call.return_value") }
    }

    @Test func registrationResponseMatchesPythonFIDO2Fields() throws {
        let response = try U2FRegistrationResponse(reply: try Self.registerData + [0x90, 0x00])
        let base = "test_ctap1/TestCtap1.test_register/arg-of:self.assertEqual"
        #expect(response.userPublicKey == (try Self.vector(base)))
        #expect(response.keyHandle == (try Self.vector(base + "#2")))
        #expect(response.attestationCertificate == (try Self.vector(base + "#3")))
        #expect(response.signature == (try Self.vector(base + "#4")))
    }

    @Test func authenticationResponseMatchesPythonFIDO2Fields() throws {
        let response = try U2FAuthenticationResponse(reply: try Self.authenticateData + [0x90, 0x00])
        #expect(response.userPresent)
        #expect(response.counter == 1)
        #expect(
            response.signature == (try Self.vector("test_ctap1/TestCtap1.test_authenticate/arg-of:self.assertEqual")))
    }

    /// CTAP 2.1 §10.3: "Copy bits 0 (the UP bit) and bit 1 from the CTAP2/U2F response user
    /// presence byte to bits 0 and 1 of the CTAP2 flags, respectively. Set all other bits of
    /// flags to zero." A presence byte with AT, ED, UV, BE or BS set is converted, not refused.
    @Test(arguments: [(UInt8(0x01), UInt8(0x01)), (0xC1, 0x01), (0x41, 0x01), (0x81, 0x01), (0xFF, 0x03), (0x1D, 0x01), (0x02, 0x02), (0x00, 0x00)])
    func authenticationPresenceByteBecomesFlagsAsSection10_3Says(presence: UInt8, flags: UInt8) throws {
        var data = try Self.authenticateData
        data[0] = presence
        let response = try U2FAuthenticationResponse(data: data)
        #expect(response.flags == presence)
        let rpIDHash = [UInt8](repeating: 0xA5, count: 32)
        let authData = try response.authenticatorData(rpIDHash: rpIDHash)
        #expect(authData.bytes == rpIDHash + [flags] + Array(data[1..<5]))
        #expect(authData.flags.rawValue == flags)
        #expect(authData.attestedCredentialData == nil)
        #expect(authData.extensions == nil)
        #expect(authData.signCount == 1)
    }

    /// python-fido2's AttestationObject.from_ctap1 on a YubiKey's registration gave this
    /// authenticator data (tests/test_attestation.py uses it as the fido-u2f example).
    @Test func attestationObjectMatchesPythonFIDO2Conversion() throws {
        let scope = "test_ctap2/TestAttestationObject.test_fido_u2f_attestation/"
        let rpIDHash = try Self.vector(scope + "arg-of:AttestationObject.from_ctap1")
        let registration = try U2FRegistrationResponse(data: try Self.vector(scope + "arg-of:RegistrationData"))
        let object = try registration.attestationObject(rpIDHash: rpIDHash)
        let expected = try Self.vector(
            "test_attestation/TestAttestationObject.test_fido_u2f_attestation/arg-of:AuthenticatorData")
        #expect(object.format == .fidoU2F)
        #expect(object.authData.bytes == expected)
        #expect(object.attestationStatement[CBORValue("sig")] == .byteString(registration.signature))
        #expect(object.attestationStatement[CBORValue("x5c")] == .array([.byteString(registration.attestationCertificate)]))
        // The encoded object reads back the same.
        #expect(try AttestationObject(cbor: object.cborEncoded) == object)
    }

    @Test func everyTruncatedRegistrationIsRejected() throws {
        let data = try Self.registerData
        for count in 0..<data.count {
            #expect(throws: CTAP2Error.self) { try U2FRegistrationResponse(data: data.prefix(count)) }
        }
        #expect(throws: CTAP2Error.self) { try U2FRegistrationResponse(data: data + [0x00]) }
    }

    @Test func hostileRegistrationFieldsAreRejected() throws {
        let data = try Self.registerData
        var wrongReserved = data
        wrongReserved[0] = 0x04
        var compressed = data
        compressed[1] = 0x02
        var emptyHandle = data
        emptyHandle[66] = 0
        var longHandle = data
        longHandle[66] = 0xFF  // past the end of the message
        var indefinite = data
        let certificateStart = 67 + Int(data[66])
        indefinite[certificateStart + 1] = 0x80
        var hugeLength = data
        hugeLength[certificateStart + 1] = 0x83
        for hostile in [wrongReserved, compressed, emptyHandle, longHandle, indefinite, hugeLength] {
            #expect(throws: CTAP2Error.self) { try U2FRegistrationResponse(data: hostile) }
        }
    }

    @Test func everyTruncatedAuthenticationIsRejected() throws {
        let data = try Self.authenticateData
        for count in 0..<data.count {
            #expect(throws: CTAP2Error.self) { try U2FAuthenticationResponse(data: data.prefix(count)) }
        }
        #expect(throws: CTAP2Error.self) { try U2FAuthenticationResponse(data: data + [0x30, 0x00]) }
    }

    @Test(arguments: [
        ([0x69, 0x85], CTAP2Error.Code.userActionTimeout), ([0x6A, 0x80], .noCredentials),
        ([0x6D, 0x00], .invalidCommand), ([0x67, 0x00], .u2fStatus), ([0x90], .malformedResponse),
        ([], .malformedResponse),
    ] as [([UInt8], CTAP2Error.Code)])
    func statusWordsAreTyped(reply: [UInt8], code: CTAP2Error.Code) {
        do {
            _ = try U2FAuthenticationResponse(reply: reply)
            Issue.record("a reply of \(reply) was accepted")
        } catch {
            #expect(error.code == code)
        }
    }

    @Test func conditionsNotSatisfiedIsPolledUntilTheTouch() async throws {
        let reply = try Self.registerData + [0x90, 0x00]
        let connection = U2FScriptConnection([[0x69, 0x85], [0x69, 0x85]], then: reply)
        let session = CTAP2Session(connection: connection)
        let told = Mutex<[KeepaliveStatus]>([])
        let response = try await session.u2fRegister(
            challenge: [UInt8](repeating: 1, count: 32), application: [UInt8](repeating: 2, count: 32),
            // Generous: the point is the polling, and a loaded machine may pause the poll loop.
            deadline: .after(.seconds(30)), keepalive: { status in told.withLock { $0.append(status) } })
        #expect(response.keyHandle.count == 64)
        #expect(connection.requests.count == 3)
        #expect(told.withLock { $0 } == [.userPresenceNeeded])
    }

    @Test func aTouchThatNeverComesEndsAtTheDeadline() async throws {
        let connection = U2FScriptConnection([], then: [0x69, 0x85])
        let session = CTAP2Session(connection: connection)
        await #expect(throws: CTAP2Error(.userActionTimeout, "")) {
            _ = try await session.u2fAuthenticate(
                challenge: [UInt8](repeating: 1, count: 32), application: [UInt8](repeating: 2, count: 32),
                keyHandle: [1, 2, 3], deadline: .after(.milliseconds(400)))
        }
        #expect(connection.requests.count >= 2)
    }

    @Test func checkOnlyAnswersAreRead() async throws {
        let known = CTAP2Session(connection: U2FScriptConnection([], then: [0x69, 0x85]))
        #expect(try await known.u2fCheck(keyHandle: [1], application: [UInt8](repeating: 0, count: 32)))
        let unknown = CTAP2Session(connection: U2FScriptConnection([], then: [0x6A, 0x80]))
        #expect(try await !unknown.u2fCheck(keyHandle: [1], application: [UInt8](repeating: 0, count: 32)))
        // A key that signs on check-only breaks the protocol.
        let signer = CTAP2Session(connection: U2FScriptConnection([], then: try Self.authenticateData + [0x90, 0x00]))
        await #expect(throws: CTAP2Error.self) {
            _ = try await signer.u2fCheck(keyHandle: [1], application: [UInt8](repeating: 0, count: 32))
        }
    }

    @Test func requestsRefuseWrongSizes() {
        #expect(throws: CTAP2Error.self) { try U2FRequest.register(challenge: [1], application: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: CTAP2Error.self) {
            try U2FRequest.authenticate(
                .checkOnly, challenge: [UInt8](repeating: 0, count: 32), application: [UInt8](repeating: 0, count: 32),
                keyHandle: [UInt8](repeating: 0, count: 256))
        }
    }

    /// The APDUs python-fido2's Ctap1 sends for the same requests (run live; needs SECURITYKEY_PYTHON).
    @Test func apdusMatchPythonFIDO2Ctap1() async throws {
        let script = """
            import sys
            from fido2.ctap1 import Ctap1
            class Device:
                sent = []
                def call(self, cmd, data=b"", event=None, on_keepalive=None):
                    self.sent.append(bytes(data))
                    if data[1] == 3: return b"U2F_V2\\x90\\x00"
                    if data[1] == 1: return bytes.fromhex(sys.argv[1]) + b"\\x90\\x00"
                    return bytes.fromhex(sys.argv[2]) + b"\\x90\\x00"
            d = Device(); c = Ctap1(d)
            c.get_version()
            c.register(bytes(range(32)), bytes(range(32, 64)))
            c.authenticate(bytes(range(32)), bytes(range(32, 64)), bytes([7] * 70), check_only=False)
            try:
                c.authenticate(bytes(range(32)), bytes(range(32, 64)), bytes([7] * 70), check_only=True)
            except Exception:
                pass
            print(" ".join(x.hex() for x in d.sent))
            """
        let out = try await runPython(script, [hexString(try Self.registerData), hexString(try Self.authenticateData)])
        let sent = out.split(separator: " ").map { hexBytes(String($0)) ?? [] }
        let challenge = Array(UInt8(0)..<32), application = Array(UInt8(32)..<64)
        let handle = [UInt8](repeating: 7, count: 70)
        // U2F_VERSION: python-fido2 (like libfido2) sends an empty extended Lc before Le, which
        // ISO 7816-4 has no case for; ours is case 2E (header ‖ 00 ‖ Le), which PC/SC readers take.
        #expect(sent.first.map { Array($0.prefix(4)) + Array($0.suffix(3)) } == U2FRequest.version.apdu)
        #expect(
            Array(sent.dropFirst()) == [
                try U2FRequest.register(challenge: challenge, application: application).apdu,
                try U2FRequest.authenticate(
                    .enforceUserPresence, challenge: challenge, application: application, keyHandle: handle
                ).apdu,
                try U2FRequest.authenticate(
                    .checkOnly, challenge: challenge, application: application, keyHandle: handle
                ).apdu,
            ])
    }
}
