import CBOR
import Crypto
import Foundation
import Logging
import Synchronization
import Testing
import Transport

@testable import CTAP2

/// An authenticator's side of authenticatorClientPIN, written from CTAP 2.1 §6.5.5: it keeps
/// a PIN hash, retry counters and the power-cycle state, derives the shared secret from the
/// platform's key with protocol one or two, checks every pinUvAuthParam and decrypts what the
/// platform encrypted. It records each request so tests can see what reached the "key".
final class ClientPINTestsAuthenticator: AuthenticatorConnection {
    struct State {
        var pinHash: [UInt8]?
        var pinRetries = 8
        var consecutiveMismatches = 0
        var powerCycleRequired = false
        var uvRetries = 3
        var uvSucceeds = false
        var forcePINChange = false
        var minPINLength = 4
        /// The newPin plaintexts received, zero padding stripped.
        var receivedPINs: [[UInt8]] = []
        var sharedSecrets: [[UInt8]] = []
        var requests: [[UInt8]] = []
        var issuedPermissions: [(UInt64?, String?)] = []
    }

    static let deviceScalar = [UInt8](repeating: 0x11, count: 32)
    static let token = (0..<32).map { UInt8($0) }

    let descriptor = DeviceDescriptor(uri: "fake-clientpin:", transport: .inProcess)
    let capabilities: TransportCapabilities = [.cbor]
    let state: Mutex<State>
    let deviceKey: P256.KeyAgreement.PrivateKey

    init(pin: String? = nil, configure: (inout State) -> Void = { _ in }) throws {
        var initial = State()
        initial.pinHash = pin.map { Array(SHA256.hash(data: Array($0.utf8)).prefix(16)) }
        configure(&initial)
        state = Mutex(initial)
        deviceKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.deviceScalar)
    }

    var requests: [[UInt8]] { state.withLock { $0.requests } }
    /// The clientPIN subcommand of each request.
    var subcommands: [UInt8] {
        requests.compactMap { bytes in
            guard bytes.first == 0x06, let map = try? CBORDecoder().decode(Array(bytes.dropFirst())).mapValue
            else { return nil }
            return map[2]?.uint64Value.map { UInt8($0) }
        }
    }

    func transact(
        _ command: TransportCommand, payload: [UInt8], deadline: Deadline,
        keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async throws(TransportError) -> [UInt8] {
        state.withLock { $0.requests.append(payload) }
        guard payload.first == 0x06,
            let request = try? CBORDecoder().decode(Array(payload.dropFirst())).mapValue
        else { return [CTAPStatus.invalidCommand.rawValue] }
        return state.withLock { handle(request, &$0) }
    }

    func close() async {}

    private func reply(_ map: CBORMap?) -> [UInt8] {
        [0x00] + (map.map { CBOREncoder.encode(.map($0)) } ?? [])
    }

    private func handle(_ request: CBORMap, _ s: inout State) -> [UInt8] {
        guard let sub = request[2]?.uint64Value else { return [CTAPStatus.missingParameter.rawValue] }
        let version = request[1]?.uint64Value
        let proto: (any PINUVAuthProtocol)? =
            version == 1 ? PINUVAuthProtocolOne() : version == 2 ? PINUVAuthProtocolTwo() : nil
        switch sub {
        case 0x01:
            return reply([3: .int(s.pinRetries), 4: .boolean(s.powerCycleRequired)])
        case 0x07:
            return reply([5: .int(s.uvRetries)])
        case 0x02:
            let point = Array(deviceKey.publicKey.x963Representation)
            return reply([
                1: .map([
                    1: 2, 3: -25, -1: 1, -2: .byteString(Array(point[1..<33])),
                    -3: .byteString(Array(point[33...])),
                ])
            ])
        default: break
        }
        guard let proto else { return [CTAPStatus.missingParameter.rawValue] }
        guard let shared = sharedSecret(request, proto) else { return [CTAPStatus.invalidParameter.rawValue] }
        s.sharedSecrets.append(shared)
        switch sub {
        case 0x03:
            guard s.pinHash == nil else { return [CTAPStatus.notAllowed.rawValue] }
            guard let newPINEnc = request[5]?.bytesValue, let param = request[4]?.bytesValue else {
                return [CTAPStatus.missingParameter.rawValue]
            }
            guard proto.verify(key: shared, newPINEnc, signature: param) else {
                return [CTAPStatus.pinAuthInvalid.rawValue]
            }
            return storeNewPIN(newPINEnc, shared, proto, &s)
        case 0x04:
            guard let newPINEnc = request[5]?.bytesValue, let hashEnc = request[6]?.bytesValue,
                let param = request[4]?.bytesValue
            else { return [CTAPStatus.missingParameter.rawValue] }
            guard proto.verify(key: shared, newPINEnc + hashEnc, signature: param) else {
                return [CTAPStatus.pinAuthInvalid.rawValue]
            }
            if let failure = checkPIN(hashEnc, shared, proto, &s) { return failure }
            return storeNewPIN(newPINEnc, shared, proto, &s)
        case 0x05, 0x09:
            guard let hashEnc = request[6]?.bytesValue else { return [CTAPStatus.missingParameter.rawValue] }
            if sub == 0x09 {
                guard let permissions = request[9]?.uint64Value else {
                    return [CTAPStatus.missingParameter.rawValue]
                }
                guard permissions != 0 else { return [CTAPStatus.invalidParameter.rawValue] }
            }
            if let failure = checkPIN(hashEnc, shared, proto, &s) { return failure }
            if s.forcePINChange { return [CTAPStatus.pinPolicyViolation.rawValue] }
            s.issuedPermissions.append((request[9]?.uint64Value, request[10]?.stringValue))
            return reply([2: .byteString((try? proto.encrypt(key: shared, Self.token)) ?? [])])
        case 0x06:
            if s.uvRetries == 0 { return [CTAPStatus.uvBlocked.rawValue] }
            guard s.uvSucceeds else {
                s.uvRetries -= 1
                return [s.uvRetries == 0 ? CTAPStatus.uvBlocked.rawValue : CTAPStatus.uvInvalid.rawValue]
            }
            s.issuedPermissions.append((request[9]?.uint64Value, request[10]?.stringValue))
            return reply([2: .byteString((try? proto.encrypt(key: shared, Self.token)) ?? [])])
        default:
            return [CTAPStatus.invalidSubcommand.rawValue]
        }
    }

    private func sharedSecret(_ request: CBORMap, _ proto: any PINUVAuthProtocol) -> [UInt8]? {
        guard let key = request[3]?.mapValue, let x = key[-2]?.bytesValue, let y = key[-3]?.bytesValue,
            let peer = try? P256.KeyAgreement.PublicKey(x963Representation: [0x04] + x + y),
            let z = try? deviceKey.sharedSecretFromKeyAgreement(with: peer)
        else { return nil }
        return proto.kdf(z.withUnsafeBytes { Array($0) })
    }

    /// §6.5.5.6 / §6.5.5.7.2 steps: blocked states first, then one attempt consumed.
    private func checkPIN(
        _ hashEnc: [UInt8], _ shared: [UInt8], _ proto: any PINUVAuthProtocol, _ s: inout State
    ) -> [UInt8]? {
        guard let stored = s.pinHash else { return [CTAPStatus.pinNotSet.rawValue] }
        if s.pinRetries == 0 { return [CTAPStatus.pinBlocked.rawValue] }
        if s.powerCycleRequired { return [CTAPStatus.pinAuthBlocked.rawValue] }
        s.pinRetries -= 1
        guard let hash = try? proto.decrypt(key: shared, hashEnc), hash == stored else {
            s.consecutiveMismatches += 1
            if s.pinRetries == 0 { return [CTAPStatus.pinBlocked.rawValue] }
            if s.consecutiveMismatches >= 3 {
                s.powerCycleRequired = true
                return [CTAPStatus.pinAuthBlocked.rawValue]
            }
            return [CTAPStatus.pinInvalid.rawValue]
        }
        s.pinRetries = 8
        s.consecutiveMismatches = 0
        return nil
    }

    private func storeNewPIN(
        _ newPINEnc: [UInt8], _ shared: [UInt8], _ proto: any PINUVAuthProtocol, _ s: inout State
    ) -> [UInt8] {
        guard let padded = try? proto.decrypt(key: shared, newPINEnc), padded.count == 64 else {
            return [CTAPStatus.invalidParameter.rawValue]
        }
        let pin = Array(padded.prefix { $0 != 0 })
        s.receivedPINs.append(pin)
        let codePoints = String(decoding: pin, as: UTF8.self).unicodeScalars.count
        guard codePoints >= s.minPINLength else { return [CTAPStatus.pinPolicyViolation.rawValue] }
        s.pinHash = Array(SHA256.hash(data: pin).prefix(16))
        s.pinRetries = 8
        s.forcePINChange = false
        return reply(nil)
    }
}

/// A getInfo response as a key with these options and protocols would send it.
func clientPINInfo(
    protocols: [Int] = [2, 1], options: CBORMap = ["clientPin": true, "pinUvAuthToken": true, "uv": true],
    extra: CBORMap = [:]
) throws -> AuthenticatorInfo {
    var map: CBORMap = [
        1: ["FIDO_2_0", "FIDO_2_1"], 3: .byteString([UInt8](repeating: 0, count: 16)), 4: .map(options),
    ]
    if !protocols.isEmpty { map[6] = .array(protocols.map { .int($0) }) }
    for entry in extra { map[entry.key] = entry.value }
    return try AuthenticatorInfo(map: map)
}

/// Where ``CapturingLogHandler`` keeps what it saw.
final class LogLines: Sendable {
    let lines = Mutex<[String]>([])
    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}

/// A swift-log handler that keeps every message with its metadata, at every level.
struct CapturingLogHandler: LogHandler {
    let sink: LogLines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        sink.lines.withLock { $0.append("\(event.level) \(event.message) \(all)") }
    }
}

@Suite struct ClientPINTests {
    static let pin = "1234"

    func session(_ fake: ClientPINTestsAuthenticator, logger: Logger = Logger(label: "test")) -> CTAP2Session
    {
        CTAP2Session(connection: fake, logger: logger)
    }

    // MARK: Protocol choice

    @Test(arguments: [([2, 1], 2), ([1, 2], 2), ([1], 1), ([2], 2), ([], 1)])
    func protocolTwoIsChosenWhenOffered(offered: [Int], expected: Int) throws {
        let info = try clientPINInfo(protocols: offered)
        #expect(try ClientPIN.preferredProtocol(for: info).version == expected)
    }

    @Test func noSharedProtocolIsRefused() throws {
        let unknown = try clientPINInfo(protocols: [3])
        let noPIN = try clientPINInfo(protocols: [], options: ["up": true])
        for info in [unknown, noPIN] {
            let error = #expect(throws: CTAP2Error.self) { try ClientPIN.preferredProtocol(for: info) }
            #expect(error?.code == .pinUVNotSupported)
        }
    }

    // MARK: Successful flows against the spec authenticator

    @Test(arguments: [1, 2])
    func setChangeAndTokenRoundTrip(version: Int) async throws {
        let fake = try ClientPINTestsAuthenticator()
        let client = try ClientPIN(session: session(fake), info: clientPINInfo(protocols: [version]))
        try await client.setPIN("1234")
        try await client.changePIN(from: "1234", to: "87654321")
        let token = try await client.pinUVAuthToken(
            pin: "87654321", permissions: [.makeCredential, .getAssertion], rpID: "example.com")
        #expect(token.pinUVAuthProtocol.version == version)
        #expect(token.rpID == "example.com")
        fake.state.withLock {
            #expect($0.receivedPINs == [Array("1234".utf8), Array("87654321".utf8)])
            #expect($0.issuedPermissions.map(\.0) == [0x03])
            #expect($0.issuedPermissions.map(\.1) == ["example.com"])
        }
        // The key's view: HMAC with its own token over the client data hash (§6.5.6/§6.5.7).
        let hash = [UInt8](repeating: 0x42, count: 32)
        let expected = Array(
            HMAC<SHA256>.authenticationCode(
                for: hash, using: SymmetricKey(data: ClientPINTestsAuthenticator.token)))
        let message = try MakeCredentialRequest.clientDataHashMessage(hash)
        #expect(try token.authenticate(message) == Array(expected.prefix(version == 1 ? 16 : 32)))
        #expect(fake.subcommands == [0x02, 0x03, 0x02, 0x04, 0x02, 0x09])
    }

    @Test func legacyKeysGetTheLegacySubcommandWithoutPermissions() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin)
        let info = try clientPINInfo(protocols: [1], options: ["clientPin": true])
        let client = try ClientPIN(session: session(fake), info: info)
        let token = try await client.pinUVAuthToken(
            pin: Self.pin, permissions: [.getAssertion], rpID: "example.com")
        #expect(fake.subcommands == [0x02, 0x05])
        #expect(token.rpID == nil)
        fake.state.withLock { #expect($0.issuedPermissions.map(\.0) == [nil]) }
    }

    @Test func uvTokenCarriesPermissionsAndRPID() async throws {
        let fake = try ClientPINTestsAuthenticator { $0.uvSucceeds = true }
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let permissions: PINUVAuthTokenPermissions = [.credentialManagement, .largeBlobWrite]
        let token = try await client.uvAuthToken(permissions: permissions, rpID: "example.org")
        #expect(token.permissions == permissions)
        fake.state.withLock {
            #expect($0.issuedPermissions.map(\.0) == [0x14])
            #expect($0.issuedPermissions.map(\.1) == ["example.org"])
        }
        #expect(fake.subcommands == [0x02, 0x06])
    }

    @Test func retriesAreRead() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin) {
            $0.pinRetries = 5
            $0.powerCycleRequired = true
            $0.uvRetries = 2
        }
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let retries = try await client.pinRetries()
        #expect(retries.retries == 5)
        #expect(retries.powerCycleRequired == true)
        #expect(try await client.uvRetries() == 2)
        #expect(fake.subcommands == [0x01, 0x07])
    }

    // MARK: Errors a user can act on

    @Test func wrongPINReportsAttemptsLeftWithoutAnotherAttempt() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin)
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let error = await #expect(throws: CTAP2Error.self) {
            try await client.pinUVAuthToken(pin: "9999", permissions: [.getAssertion], rpID: "example.com")
        }
        #expect(error?.code == .pinInvalid)
        #expect(error?.status == .pinInvalid)
        #expect(error?.retriesLeft == 7)
        // keyAgreement, the one PIN attempt, then the free getPINRetries: no second attempt.
        #expect(fake.subcommands == [0x02, 0x09, 0x01])
        fake.state.withLock { #expect($0.pinRetries == 7) }
    }

    @Test func threeWrongPINsBlockUntilReinsertedAndNothingIsResent() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin)
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        var codes: [CTAP2Error.Code?] = []
        for _ in 0..<3 {
            let error = await #expect(throws: CTAP2Error.self) {
                try await client.pinUVAuthToken(pin: "0000", permissions: [.getAssertion])
            }
            codes.append(error?.code)
        }
        #expect(codes == [.pinInvalid, .pinInvalid, .pinAuthBlocked])
        // The blocked call ends with the key's answer: no retry read, no second PIN.
        #expect(fake.subcommands == [0x02, 0x09, 0x01, 0x02, 0x09, 0x01, 0x02, 0x09])
        fake.state.withLock { #expect($0.pinRetries == 5) }
    }

    @Test func lastAttemptBlocksThePINForGood() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin) { $0.pinRetries = 1 }
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let error = await #expect(throws: CTAP2Error.self) {
            try await client.changePIN(from: "0000", to: "5678")
        }
        #expect(error?.code == .pinBlocked)
        #expect(error?.status == .pinBlocked)
    }

    @Test func pinNotSetIsReported() async throws {
        let fake = try ClientPINTestsAuthenticator()
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let error = await #expect(throws: CTAP2Error.self) {
            try await client.pinUVAuthToken(pin: Self.pin, permissions: [.makeCredential])
        }
        #expect(error?.code == .pinNotSet)
    }

    @Test func forcePINChangeIsRefusedBeforeTheKeyIsAsked() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin) { $0.forcePINChange = true }
        let info = try clientPINInfo(extra: [0x0C: true])
        let client = try ClientPIN(session: session(fake), info: info)
        let error = await #expect(throws: CTAP2Error.self) {
            try await client.pinUVAuthToken(pin: Self.pin, permissions: [.getAssertion])
        }
        #expect(error?.code == .pinChangeRequired)
        #expect(fake.requests.isEmpty)
    }

    @Test func keysPolicyViolationDuringTokenMeansChangeThePIN() async throws {
        // The key demands a change but the cached getInfo did not say so yet.
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin) { $0.forcePINChange = true }
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let error = await #expect(throws: CTAP2Error.self) {
            try await client.pinUVAuthToken(pin: Self.pin, permissions: [.getAssertion])
        }
        #expect(error?.code == .pinChangeRequired)
        #expect(error?.status == .pinPolicyViolation)
        try await client.changePIN(from: Self.pin, to: "24680")
        _ = try await client.pinUVAuthToken(pin: "24680", permissions: [.getAssertion])
    }

    @Test func keysPolicyViolationOnSetPINIsReported() async throws {
        let fake = try ClientPINTestsAuthenticator { $0.minPINLength = 8 }
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let error = await #expect(throws: CTAP2Error.self) { try await client.setPIN("123456") }
        #expect(error?.code == .pinPolicyViolation)
        #expect(error?.status == .pinPolicyViolation)
    }

    @Test func failedUVReportsAttemptsLeftThenBlocks() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin) { $0.uvRetries = 2 }
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let first = await #expect(throws: CTAP2Error.self) {
            try await client.uvAuthToken(permissions: [.getAssertion], rpID: "example.com")
        }
        #expect(first?.code == .uvInvalid)
        #expect(first?.retriesLeft == 1)
        let second = await #expect(throws: CTAP2Error.self) {
            try await client.uvAuthToken(permissions: [.getAssertion], rpID: "example.com")
        }
        #expect(second?.code == .uvBlocked)
        #expect(fake.subcommands == [0x02, 0x06, 0x07, 0x02, 0x06])
        // The fallback to the PIN still works.
        _ = try await client.pinUVAuthToken(pin: Self.pin, permissions: [.getAssertion], rpID: "example.com")
    }

    @Test(arguments: [
        (CTAPStatus.pinAuthInvalid, CTAP2Error.Code.pinAuthInvalid),
        (.pinUvAuthTokenRequired, .pinRequired),
        (.unauthorizedPermission, .unauthorizedPermission),
        (.uvBlocked, .uvBlocked),
        (.pinBlocked, .pinBlocked),
        (.pinAuthBlocked, .pinAuthBlocked),
        (.pinNotSet, .pinNotSet),
        (.noCredentials, .noCredentials),
        (CTAPStatus(rawValue: 0xF3), .authenticatorStatus),
    ])
    func commandStatusesAreExplained(status: CTAPStatus, code: CTAP2Error.Code) async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin)
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let explained = await client.explain(CTAP2Error.authenticator(status))
        #expect(explained.code == code)
        #expect(explained.status == status)
        #expect(fake.requests.isEmpty)
    }

    @Test func uvInvalidFromAnAssertionReadsUVRetries() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin) { $0.uvRetries = 4 }
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let explained = await client.explain(CTAP2Error.authenticator(.uvInvalid))
        #expect(explained.code == .uvInvalid)
        #expect(explained.retriesLeft == 4)
        #expect(fake.subcommands == [0x07])
    }

    // MARK: Hostile replies

    static let validKeyAgreement: CBORMap = {
        let point = Array(
            ((try? P256.KeyAgreement.PrivateKey(rawRepresentation: ClientPINTestsAuthenticator.deviceScalar))
                ?? P256.KeyAgreement.PrivateKey()).publicKey.x963Representation)
        return [
            1: 2, 3: -25, -1: 1, -2: .byteString(Array(point[1..<33])), -3: .byteString(Array(point[33...])),
        ]
    }()

    static func keyAgreementReply(_ edit: (inout CBORMap) -> Void) -> [UInt8] {
        var key = validKeyAgreement
        edit(&key)
        return [0x00] + CBOREncoder.encode(.map([1: .map(key)]))
    }

    static let hostileKeyAgreements: [(String, [UInt8])] = [
        ("no keyAgreement", [0x00, 0xA0]),
        ("keyAgreement not a map", [0x00] + CBOREncoder.encode(.map([1: 5]))),
        ("OKP key", keyAgreementReply { $0[1] = 1 }),
        ("P-384 curve", keyAgreementReply { $0[-1] = 2 }),
        ("short x", keyAgreementReply { $0[-2] = .byteString([1, 2, 3]) }),
        ("y missing", keyAgreementReply { $0[-3] = nil }),
        ("point off the curve", keyAgreementReply { $0[-3] = .byteString([UInt8](repeating: 1, count: 32)) }),
        ("not CBOR", [0x00, 0xFF, 0xFF]),
    ]

    @Test(arguments: hostileKeyAgreements)
    func hostileKeyAgreementIsRejected(name: String, reply: [UInt8]) async throws {
        let conn = ReplayConnection([.success(reply)])
        let client = try ClientPIN(session: CTAP2Session(connection: conn), info: clientPINInfo())
        let error = await #expect(throws: CTAP2Error.self, "\(name)") {
            try await client.pinUVAuthToken(pin: Self.pin, permissions: [.getAssertion])
        }
        #expect(error?.code == .malformedResponse || error?.code == .pinUVAuthProtocol, "\(name)")
        #expect(conn.requests.count == 1, "no PIN may follow a bad key agreement (\(name))")
    }

    @Test(arguments: [
        [0x00, 0xA0],  // no token
        [0x00] + CBOREncoder.encode(.map([2: .byteString([UInt8](repeating: 0, count: 47))])),
        [0x00] + CBOREncoder.encode(.map([2: .byteString([UInt8](repeating: 0, count: 64))])),
        [0x00] + CBOREncoder.encode(.map([2: "text"])),
    ])
    func hostileTokenReplyIsRejected(reply: [UInt8]) async throws {
        let conn = ReplayConnection([.success(Self.keyAgreementReply { _ in }), .success(reply)])
        let client = try ClientPIN(
            session: CTAP2Session(connection: conn), info: clientPINInfo(protocols: [2]))
        let error = await #expect(throws: CTAP2Error.self) {
            try await client.pinUVAuthToken(pin: Self.pin, permissions: [.getAssertion])
        }
        #expect(error?.code == .malformedResponse)
    }

    @Test(arguments: [
        [0x00, 0xA0],
        [0x00] + CBOREncoder.encode(.map([3: -1])),
        [0x00] + CBOREncoder.encode(.map([3: 8, 4: 1])),
    ])
    func hostileRetriesReplyIsRejected(reply: [UInt8]) async throws {
        let client = try ClientPIN(
            session: CTAP2Session(connection: ReplayConnection([.success(reply)])), info: clientPINInfo())
        let error = await #expect(throws: CTAP2Error.self) { try await client.pinRetries() }
        #expect(error?.code == .malformedResponse)
    }

    @Test func infoIsReadWhenTheSessionHasNone() async throws {
        let info = try #require(Vectors.python("test_ctap2/module/_INFO")).bytes
        let conn = ReplayConnection([.success([0x00] + info)])
        let client = try await ClientPIN(session: CTAP2Session(connection: conn))
        #expect(conn.requests == [[0x04]])
        #expect(client.pinUVAuthProtocol.version == 1)
    }

    // MARK: PIN rules, refused without any device call

    @Test(arguments: [
        ("123", "too short"),
        ("", "too short"),
        (String(repeating: "7", count: 64), "too long"),
        (String(repeating: "€", count: 22), "too long"),  // 22 code points, 66 bytes
        ("e\u{301}e\u{301}", "too short"),  // four code points, two after NFC
        ("12\u{0}45", "NUL"),
    ])
    func newPINRuleViolationsNeverReachTheKey(pin: String, reason: String) async throws {
        let fake = try ClientPINTestsAuthenticator()
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let error = await #expect(throws: CTAP2Error.self) { try await client.setPIN(pin) }
        #expect(error?.code == .pinPolicyViolation)
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
        #expect(fake.requests.isEmpty)
    }

    @Test func minPINLengthFromGetInfoIsEnforced() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin)
        let info = try clientPINInfo(extra: [0x0D: 6])
        let client = try ClientPIN(session: session(fake), info: info)
        let error = await #expect(throws: CTAP2Error.self) {
            try await client.changePIN(from: Self.pin, to: "12345")
        }
        #expect(error?.code == .pinPolicyViolation)
        #expect(fake.requests.isEmpty)
        // The current PIN may be shorter than a minPINLength raised after it was set.
        try await client.changePIN(from: Self.pin, to: "123456")
    }

    @Test func maxPINLengthFromGetInfoIsEnforced() async throws {
        let fake = try ClientPINTestsAuthenticator()
        let client = try ClientPIN(session: session(fake), info: clientPINInfo(extra: [0x1D: 8]))
        let error = await #expect(throws: CTAP2Error.self) { try await client.setPIN("123456789") }
        #expect(error?.code == .pinPolicyViolation)
        #expect(fake.requests.isEmpty)
    }

    @Test func wrongShapedCurrentPINIsRefusedWithoutCostingAnAttempt() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin)
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let error = await #expect(throws: CTAP2Error.self) {
            try await client.pinUVAuthToken(pin: "12", permissions: [.getAssertion])
        }
        #expect(error?.code == .pinPolicyViolation)
        #expect(fake.requests.isEmpty)
    }

    /// CTAP 2.1 §6.5.1: the PIN is sent as UTF-8 of its NFC form, and length counts code points.
    @Test func pinsAreSentInNFCAndCountedInCodePoints() async throws {
        let fake = try ClientPINTestsAuthenticator()
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        try await client.setPIN("cafe\u{301}1")  // e + COMBINING ACUTE ACCENT
        let emoji = try ClientPINTestsAuthenticator()
        try await ClientPIN(session: session(emoji), info: clientPINInfo()).setPIN("😀😀😀😀")
        // U+00E9 is C3 A9 in UTF-8; U+1F600 is F0 9F 98 80.
        fake.state.withLock { #expect($0.receivedPINs == [[0x63, 0x61, 0x66, 0xC3, 0xA9, 0x31]]) }
        emoji.state.withLock {
            #expect(
                $0.receivedPINs == [
                    Array(repeating: [0xF0, 0x9F, 0x98, 0x80] as [UInt8], count: 4).flatMap { $0 }
                ])
        }
    }

    // MARK: Permissions and tokens

    /// CTAP 2.1 §6.5.5.7 permission bits.
    @Test func permissionBitsFollowTheSpecification() {
        let table: [(PINUVAuthTokenPermissions, UInt8)] = [
            (.makeCredential, 0x01), (.getAssertion, 0x02), (.credentialManagement, 0x04),
            (.bioEnrollment, 0x08), (.largeBlobWrite, 0x10), (.authenticatorConfiguration, 0x20),
        ]
        for (permission, bit) in table { #expect(permission.rawValue == bit) }
        let request = ClientPINRequest(
            pinUVAuthProtocol: 2, subCommand: .getPINUVAuthTokenUsingUVWithPermissions,
            permissions: [.makeCredential, .authenticatorConfiguration], rpID: "example.com")
        // {1: 2, 2: 6, 9: 0x21, 10: "example.com"} in canonical CBOR.
        #expect(
            request.encoded()
                == [0x06, 0xA4, 0x01, 0x02, 0x02, 0x06, 0x09, 0x18, 0x21, 0x0A, 0x6B]
                + Array("example.com".utf8))
    }

    @Test func emptyPermissionsAreRefused() async throws {
        let fake = try ClientPINTestsAuthenticator(pin: Self.pin)
        let client = try ClientPIN(session: session(fake), info: clientPINInfo())
        let error = await #expect(throws: CTAP2Error.self) {
            try await client.pinUVAuthToken(pin: Self.pin, permissions: [])
        }
        #expect(error?.code == .invalidRequest)
        #expect(fake.requests.isEmpty)
    }

    @Test func tokenChecksPermissionAndRPIDBeforeUse() throws {
        let token = PINUVAuthToken(
            token: ClientPINTestsAuthenticator.token, pinUVAuthProtocol: PINUVAuthProtocolTwo(),
            permissions: [.getAssertion], rpID: "example.com")
        var assertion = GetAssertionRequest(
            rpID: "example.com", clientDataHash: [UInt8](repeating: 1, count: 32))
        try assertion.authorize(with: token)
        #expect(assertion.pinUVAuthProtocol == 2)
        #expect(assertion.pinUVAuthParam?.count == 32)
        var other = GetAssertionRequest(
            rpID: "evil.example", clientDataHash: [UInt8](repeating: 1, count: 32))
        #expect(throws: CTAP2Error.self) { try other.authorize(with: token) }
        var registration = MakeCredentialRequest(
            clientDataHash: [UInt8](repeating: 1, count: 32), rp: RelyingPartyEntity(id: "example.com"),
            user: UserEntity(id: [1]), pubKeyCredParams: [PublicKeyCredentialParameters(algorithm: .es256)])
        let error = #expect(throws: CTAP2Error.self) { try registration.authorize(with: token) }
        #expect(error?.code == .unauthorizedPermission)
        #expect(registration.pinUVAuthParam == nil)
    }

    @Test func wipedTokenCannotBeUsedAndNeverPrintsItsBytes() throws {
        let token = PINUVAuthToken(
            token: ClientPINTestsAuthenticator.token, pinUVAuthProtocol: PINUVAuthProtocolOne(),
            permissions: [.makeCredential], rpID: nil)
        _ = try token.authenticate([1, 2, 3])
        #expect(!token.description.contains(hexString(ClientPINTestsAuthenticator.token)))
        #expect(!token.isWiped)
        token.wipe()
        #expect(token.isWiped)
        let error = #expect(throws: CTAP2Error.self) { try token.authenticate([1, 2, 3]) }
        #expect(error?.code == .secretWiped)
    }

    // MARK: Logging

    @Test func noPINMaterialReachesTheLogAtTraceLevel() async throws {
        let sink = LogLines()
        var logger = Logger(label: "capture") { _ in CapturingLogHandler(sink: sink) }
        logger.logLevel = .trace
        let fake = try ClientPINTestsAuthenticator { $0.uvSucceeds = true }
        let client = try ClientPIN(
            session: session(fake, logger: logger), info: clientPINInfo(), logger: logger)
        try await client.setPIN("31415926")
        try await client.changePIN(from: "31415926", to: "27182818")
        _ = await #expect(throws: CTAP2Error.self) {
            try await client.pinUVAuthToken(pin: "11223344", permissions: [.getAssertion])
        }
        _ = try await client.pinUVAuthToken(
            pin: "27182818", permissions: [.getAssertion], rpID: "example.com")
        _ = try await client.uvAuthToken(permissions: [.credentialManagement])
        let log = sink.text
        #expect(log.contains("clientPIN"), "the capture saw nothing: \(log)")
        var secrets = ["31415926", "27182818", "11223344", hexString(ClientPINTestsAuthenticator.token)]
        for pin in ["31415926", "27182818", "11223344"] {
            secrets.append(hexString(Array(SHA256.hash(data: Array(pin.utf8)).prefix(16))))
        }
        secrets += fake.state.withLock { $0.sharedSecrets.map(hexString) }
        // Whole request payloads (ciphertexts included) must not be dumped either.
        secrets += fake.requests.filter { $0.count > 8 }.map { hexString(Array($0.suffix(16))) }
        for secret in secrets { #expect(!log.lowercased().contains(secret), "log leaks \(secret)") }
    }
}
