import CBOR
import CTAP2
import Crypto
import Testing
@testable import VirtualAuthenticator

// CTAP 2.1 §6.5.5 (authenticatorClientPIN) and §8.2 (status codes), written out for the tests.
enum PINSpec {
    static let pinInvalid: UInt8 = 0x31
    static let pinBlocked: UInt8 = 0x32
    static let pinAuthInvalid: UInt8 = 0x33
    static let pinAuthBlocked: UInt8 = 0x34
    static let puatRequired: UInt8 = 0x36
    static let pinPolicyViolation: UInt8 = 0x37
    static let uvBlocked: UInt8 = 0x3C
    static let invalidSubcommand: UInt8 = 0x3E
    static let uvInvalid: UInt8 = 0x3F
    static let unauthorizedPermission: UInt8 = 0x40

    static let getPINRetries: UInt64 = 0x01
    static let getKeyAgreement: UInt64 = 0x02
    static let setPIN: UInt64 = 0x03
    static let changePIN: UInt64 = 0x04
    static let getPINToken: UInt64 = 0x05
    static let getTokenUsingUV: UInt64 = 0x06
    static let getUVRetries: UInt64 = 0x07
    static let getTokenUsingPIN: UInt64 = 0x09

    // Parameter keys: 1 pinUvAuthProtocol, 2 subCommand, 3 keyAgreement, 4 pinUvAuthParam,
    // 5 newPinEnc, 6 pinHashEnc, 9 permissions, 10 rpId. Response: 1 keyAgreement,
    // 2 pinUvAuthToken, 3 pinRetries, 4 powerCycleState, 5 uvRetries.
    static let mc: UInt64 = 0x01
    static let ga: UInt64 = 0x02
    static let cm: UInt64 = 0x04
    static let be: UInt64 = 0x08
    static let lbw: UInt64 = 0x10
    static let acfg: UInt64 = 0x20
    static let pcmr: UInt64 = 0x40
}

/// The platform side of clientPIN for one PIN/UV auth protocol, using the host module's
/// implementation of the protocol (written independently of the authenticator's).
struct Platform {
    let key: VirtualKey
    let version: Int

    var pinProtocol: any PINUVAuthProtocol {
        version == 1 ? PINUVAuthProtocolOne() : PINUVAuthProtocolTwo()
    }

    func clientPIN(_ subCommand: UInt64, _ parameters: CBORMap = [:], withProtocol: Bool = true) async throws
        -> Reply
    {
        var request = parameters
        request[2] = .unsigned(subCommand)
        if withProtocol && request[1] == nil { request[1] = .int(version) }
        return try await send(key, Spec.clientPIN, request)
    }

    /// The authenticator's key-agreement key (COSE map).
    func keyAgreement() async throws -> CBORMap {
        let reply = try await clientPIN(PINSpec.getKeyAgreement)
        try #require(reply.status == Spec.ok)
        return try #require(reply.body?[1]?.mapValue)
    }

    /// getKeyAgreement and encapsulate: the platform's COSE key and the shared secret.
    func agree() async throws -> (platformKey: CBORMap, shared: [UInt8]) {
        let peer = try await keyAgreement()
        #expect(
            peer[1] == 2 && peer[3] == -25 && peer[-1] == 1,
            "§6.5.6 getPublicKey: EC2, ECDH-ES+HKDF-256, P-256")
        let (x, y, shared) = try pinProtocol.encapsulate(
            peerX: try #require(peer[-2]?.bytesValue), peerY: try #require(peer[-3]?.bytesValue))
        let platformKey: CBORMap = [1: 2, 3: -25, -1: 1, -2: .byteString(x), -3: .byteString(y)]
        return (platformKey, shared)
    }

    static func padded(_ pin: String) -> [UInt8] {
        let bytes = Array(pin.utf8)
        return bytes + [UInt8](repeating: 0, count: max(0, 64 - bytes.count))
    }

    static func pinHash(_ pin: String) -> [UInt8] {
        Array(Array(SHA256.hash(data: Array(pin.utf8))).prefix(16))
    }

    /// setPIN with a padded PIN (or raw padded bytes) and a correct pinUvAuthParam unless told otherwise.
    func setPIN(_ pin: String, padded: [UInt8]? = nil, corruptParam: Bool = false) async throws -> UInt8 {
        let (platformKey, shared) = try await agree()
        let newPinEnc = try pinProtocol.encrypt(key: shared, padded ?? Self.padded(pin))
        var param = pinProtocol.authenticate(key: shared, newPinEnc)
        if corruptParam { param[0] ^= 1 }
        return try await clientPIN(
            PINSpec.setPIN, [3: .map(platformKey), 5: .byteString(newPinEnc), 4: .byteString(param)]
        ).status
    }

    func changePIN(from old: String, to new: String, corruptParam: Bool = false) async throws -> UInt8 {
        let (platformKey, shared) = try await agree()
        let newPinEnc = try pinProtocol.encrypt(key: shared, Self.padded(new))
        let pinHashEnc = try pinProtocol.encrypt(key: shared, Self.pinHash(old))
        var param = pinProtocol.authenticate(key: shared, newPinEnc + pinHashEnc)
        if corruptParam { param[0] ^= 1 }
        return try await clientPIN(
            PINSpec.changePIN,
            [
                3: .map(platformKey), 5: .byteString(newPinEnc), 6: .byteString(pinHashEnc),
                4: .byteString(param),
            ]
        ).status
    }

    /// A token from the PIN: getPinToken when `permissions` is nil, else
    /// getPinUvAuthTokenUsingPinWithPermissions.
    func token(
        pin: String, permissions: UInt64? = PINSpec.mc | PINSpec.ga, rpID: String? = nil
    ) async throws -> (status: UInt8, token: [UInt8]?) {
        let (platformKey, shared) = try await agree()
        var request: CBORMap = [
            3: .map(platformKey), 6: .byteString(try pinProtocol.encrypt(key: shared, Self.pinHash(pin))),
        ]
        if let permissions { request[9] = .unsigned(permissions) }
        if let rpID { request[0x0A] = .textString(rpID) }
        let reply = try await clientPIN(
            permissions == nil ? PINSpec.getPINToken : PINSpec.getTokenUsingPIN, request)
        guard reply.status == Spec.ok else { return (reply.status, nil) }
        let encrypted = try #require(reply.body?[2]?.bytesValue)
        return (reply.status, try pinProtocol.decrypt(key: shared, encrypted))
    }

    /// A token from built-in user verification (getPinUvAuthTokenUsingUvWithPermissions).
    func uvToken(permissions: UInt64 = PINSpec.mc | PINSpec.ga, rpID: String? = nil) async throws -> (
        status: UInt8, token: [UInt8]?
    ) {
        let (platformKey, shared) = try await agree()
        var request: CBORMap = [3: .map(platformKey), 9: .unsigned(permissions)]
        if let rpID { request[0x0A] = .textString(rpID) }
        let reply = try await clientPIN(PINSpec.getTokenUsingUV, request)
        guard reply.status == Spec.ok else { return (reply.status, nil) }
        return (reply.status, try pinProtocol.decrypt(key: shared, try #require(reply.body?[2]?.bytesValue)))
    }

    func retries() async throws -> (pin: Int?, powerCycle: Bool?) {
        let reply = try await clientPIN(PINSpec.getPINRetries)
        try #require(reply.status == Spec.ok)
        return (reply.body?[3]?.intValue, reply.body?[4]?.boolValue)
    }

    /// makeCredential parameters with pinUvAuthParam = authenticate(token, clientDataHash).
    func makeCredential(token: [UInt8], rpID: String = "example.org", rk: Bool = false) -> CBORMap {
        let clientDataHash = randomClientDataHash()
        var request = makeCredentialRequest(
            clientDataHash: clientDataHash, rpID: rpID, options: rk ? ["rk": true] : nil)
        request[8] = .byteString(pinProtocol.authenticate(key: token, clientDataHash))
        request[9] = .int(version)
        return request
    }

    func getAssertion(token: [UInt8], rpID: String = "example.org", up: Bool = true) -> CBORMap {
        let clientDataHash = randomClientDataHash()
        var request = getAssertionRequest(
            rpID: rpID, clientDataHash: clientDataHash, options: up ? nil : ["up": false])
        request[6] = .byteString(pinProtocol.authenticate(key: token, clientDataHash))
        request[7] = .int(version)
        return request
    }
}

func authData(_ reply: Reply) throws -> ParsedAuthData {
    try ParsedAuthData(try #require(reply.body?[2]?.bytesValue))
}

@Suite("VirtualKey clientPIN: setPIN, changePIN, retries and blocking")
struct VirtualKeyPINTests {
    static let protocols = [1, 2]

    @Test(arguments: protocols) func getInfoFollowsThePINState(version: Int) async throws {
        let key = try makeKey()
        var info = try #require(try await send(key, Spec.getInfo).body)
        #expect(info[4]?.mapValue?["clientPin"] == false)
        #expect(info[4]?.mapValue?["pinUvAuthToken"] == true)
        #expect(info[6] == [2, 1])
        #expect(info[0x0C] == false)
        #expect(info[0x0D] == 4)
        #expect(try await Platform(key: key, version: version).setPIN("1234") == Spec.ok)
        info = try #require(try await send(key, Spec.getInfo).body)
        #expect(info[4]?.mapValue?["clientPin"] == true)

        let noPIN = try makeKey(.init(pinUvAuthProtocols: []))
        info = try #require(try await send(noPIN, Spec.getInfo).body)
        #expect(info[4]?.mapValue?["clientPin"] == nil)
        #expect(info[6] == nil)
        #expect(try await send(noPIN, Spec.clientPIN, [1: 1, 2: 1]).status == Spec.invalidCommand)
    }

    @Test(arguments: protocols) func setPINThenRetriesAndNoSecondSet(version: Int) async throws {
        let key = try makeKey()
        let platform = Platform(key: key, version: version)
        #expect(try await platform.retries() == (8, false))
        #expect(try await platform.setPIN("1234", corruptParam: true) == PINSpec.pinAuthInvalid)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        #expect(try await platform.setPIN("5678") == Spec.notAllowed)
        #expect(try await platform.token(pin: "1234").status == Spec.ok)
        // getPINRetries works without a protocol.
        let reply = try await platform.clientPIN(PINSpec.getPINRetries, withProtocol: false)
        #expect(reply.status == Spec.ok && reply.body?[3] == 8)
    }

    @Test(arguments: protocols) func pinPolicy(version: Int) async throws {
        let key = try makeKey(.init(minPINLength: 6))
        let platform = Platform(key: key, version: version)
        #expect(try await platform.setPIN("12345") == PINSpec.pinPolicyViolation)
        // Code points count, not bytes: five two-byte characters are still five.
        #expect(try await platform.setPIN("ééééé") == PINSpec.pinPolicyViolation)
        // 64 non-zero bytes: a PIN longer than 63 bytes.
        #expect(
            try await platform.setPIN("", padded: [UInt8](repeating: 0x31, count: 64))
                == PINSpec.pinPolicyViolation)
        // A padded PIN of 80 bytes is not the 64 the spec requires.
        #expect(
            try await platform.setPIN(
                "", padded: Platform.padded("123456") + [UInt8](repeating: 0, count: 16))
                == PINSpec.pinPolicyViolation)
        // Invalid UTF-8.
        #expect(
            try await platform.setPIN(
                "", padded: [0xFF, 0xFE, 0xFD, 0xFC, 0xFB, 0xFA] + [UInt8](repeating: 0, count: 58))
                == PINSpec.pinPolicyViolation)
        #expect(try await platform.setPIN("éééééé") == Spec.ok)
        #expect(try await platform.token(pin: "éééééé").status == Spec.ok)
        #expect(try await platform.changePIN(from: "éééééé", to: "12345") == PINSpec.pinPolicyViolation)
        #expect(try await platform.changePIN(from: "éééééé", to: "123456") == Spec.ok)
    }

    @Test(arguments: protocols) func changePIN(version: Int) async throws {
        let key = try makeKey()
        let platform = Platform(key: key, version: version)
        #expect(try await platform.changePIN(from: "1234", to: "5678") == Spec.pinNotSet)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        #expect(
            try await platform.changePIN(from: "1234", to: "5678", corruptParam: true)
                == PINSpec.pinAuthInvalid)
        #expect(try await platform.retries().pin == 8, "A bad pinUvAuthParam spends no retry.")
        #expect(try await platform.changePIN(from: "0000", to: "5678") == PINSpec.pinInvalid)
        #expect(try await platform.retries().pin == 7)
        let (status, oldToken) = try await platform.token(pin: "1234")
        #expect(status == Spec.ok)
        #expect(try await platform.retries().pin == 8, "A correct PIN refills the retries.")
        #expect(try await platform.changePIN(from: "1234", to: "5678") == Spec.ok)
        // changePIN invalidates every token.
        let request = platform.makeCredential(token: try #require(oldToken))
        #expect(try await send(key, Spec.makeCredential, request).status == PINSpec.pinAuthInvalid)
        #expect(try await platform.token(pin: "1234").status == PINSpec.pinInvalid)
        #expect(try await platform.token(pin: "5678").status == Spec.ok)
    }

    @Test(arguments: protocols) func threeWrongPINsNeedAPowerCycle(version: Int) async throws {
        let key = try makeKey()
        let platform = Platform(key: key, version: version)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        #expect(try await platform.token(pin: "0000").status == PINSpec.pinInvalid)
        #expect(try await platform.retries() == (7, false))
        #expect(try await platform.token(pin: "0000").status == PINSpec.pinInvalid)
        #expect(try await platform.token(pin: "0000").status == PINSpec.pinAuthBlocked)
        #expect(try await platform.retries() == (5, true))
        // Even the right PIN is refused now, without spending a retry.
        #expect(try await platform.token(pin: "1234").status == PINSpec.pinAuthBlocked)
        #expect(try await platform.changePIN(from: "1234", to: "5678") == PINSpec.pinAuthBlocked)
        #expect(try await platform.retries() == (5, true))
        await key.powerCycle()
        #expect(try await platform.retries() == (5, false))
        #expect(try await platform.token(pin: "1234").status == Spec.ok)
        #expect(try await platform.retries() == (8, false))
    }

    @Test(arguments: protocols) func eightWrongPINsBlockUntilReset(version: Int) async throws {
        let key = try makeKey()
        let platform = Platform(key: key, version: version)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        var statuses: [UInt8] = []
        for attempt in 1...8 {
            statuses.append(try await platform.token(pin: "9999").status)
            if attempt % 3 == 0 { await key.powerCycle() }
        }
        #expect(
            statuses == [
                PINSpec.pinInvalid, PINSpec.pinInvalid, PINSpec.pinAuthBlocked,
                PINSpec.pinInvalid, PINSpec.pinInvalid, PINSpec.pinAuthBlocked,
                PINSpec.pinInvalid, PINSpec.pinBlocked,
            ])
        #expect(try await platform.retries().pin == 0)
        #expect(try await platform.token(pin: "1234").status == PINSpec.pinBlocked)
        await key.powerCycle()
        #expect(try await platform.token(pin: "1234").status == PINSpec.pinBlocked)
        #expect(try await platform.changePIN(from: "1234", to: "5678") == PINSpec.pinBlocked)
        // Reset clears the PIN and its counters.
        #expect(try await send(key, Spec.reset).status == Spec.ok)
        #expect(try await platform.retries() == (8, false))
        let info = try #require(try await send(key, Spec.getInfo).body)
        #expect(info[4]?.mapValue?["clientPin"] == false)
        #expect(try await platform.token(pin: "1234").status == Spec.pinNotSet)
        #expect(try await platform.setPIN("4321") == Spec.ok)
        #expect(try await platform.token(pin: "4321").status == Spec.ok)
    }

    @Test func keyAgreementKeyIsRegeneratedAfterAWrongPINAndAPowerCycle() async throws {
        let key = try makeKey()
        let platform = Platform(key: key, version: 2)
        let first = try await platform.keyAgreement()
        #expect(try await platform.keyAgreement() == first, "The key stays for the power-up otherwise.")
        #expect(try await platform.setPIN("1234") == Spec.ok)
        #expect(try await platform.keyAgreement() == first)
        #expect(try await platform.token(pin: "0000").status == PINSpec.pinInvalid)
        let second = try await platform.keyAgreement()
        #expect(second != first)
        await key.powerCycle()
        #expect(try await platform.keyAgreement() != second)
        // Each protocol has its own key.
        #expect(
            try await Platform(key: key, version: 1).keyAgreement() != (try await platform.keyAgreement()))
    }

    @Test func aSharedSecretFromBeforeAWrongPINNoLongerWorks() async throws {
        let key = try makeKey()
        let platform = Platform(key: key, version: 1)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        let (platformKey, shared) = try await platform.agree()
        #expect(try await platform.token(pin: "0000").status == PINSpec.pinInvalid)
        // The platform reuses its old secret: the key now derives another one, so even the
        // right PIN hash decrypts to garbage and counts as wrong.
        let pinHashEnc = try platform.pinProtocol.encrypt(key: shared, Platform.pinHash("1234"))
        let reply = try await platform.clientPIN(
            PINSpec.getTokenUsingPIN,
            [3: .map(platformKey), 6: .byteString(pinHashEnc), 9: .unsigned(PINSpec.mc)])
        #expect(reply.status == PINSpec.pinInvalid)
    }

    @Test func malformedClientPINRequests() async throws {
        let key = try makeKey()
        let platform = Platform(key: key, version: 2)
        #expect(try await send(key, Spec.clientPIN, [1: 2]).status == Spec.missingParameter)
        #expect(try await send(key, [Spec.clientPIN]).status == Spec.missingParameter)
        #expect(try await platform.clientPIN(0x42).status == PINSpec.invalidSubcommand)
        #expect(try await platform.clientPIN(0x08).status == PINSpec.invalidSubcommand)
        #expect(try await send(key, Spec.clientPIN, [1: 3, 2: 2]).status == Spec.invalidParameter)
        #expect(try await send(key, Spec.clientPIN, [1: "two", 2: 2]).status == Spec.cborUnexpectedType)
        #expect(
            try await platform.clientPIN(PINSpec.getKeyAgreement, withProtocol: false).status
                == Spec.missingParameter)
        #expect(try await platform.setPIN("1234") == Spec.ok)

        let (platformKey, shared) = try await platform.agree()
        let pinHashEnc = try platform.pinProtocol.encrypt(key: shared, Platform.pinHash("1234"))
        // Missing parameters.
        #expect(
            try await platform.clientPIN(PINSpec.getTokenUsingPIN, [3: .map(platformKey), 9: 3]).status
                == Spec.missingParameter)
        #expect(
            try await platform.clientPIN(
                PINSpec.getTokenUsingPIN, [3: .map(platformKey), 6: .byteString(pinHashEnc)]
            ).status
                == Spec.missingParameter)
        #expect(
            try await platform.clientPIN(PINSpec.setPIN, [3: .map(platformKey)]).status
                == Spec.missingParameter)
        // A point that is not on the curve, and a key of the wrong shape.
        var offCurve = platformKey
        offCurve[-3] = .byteString([UInt8](repeating: 1, count: 32))
        #expect(
            try await platform.clientPIN(
                PINSpec.getTokenUsingPIN, [3: .map(offCurve), 6: .byteString(pinHashEnc), 9: 3]
            ).status == Spec.invalidParameter)
        var short = platformKey
        short[-2] = .byteString([1, 2, 3])
        #expect(
            try await platform.clientPIN(
                PINSpec.getTokenUsingPIN, [3: .map(short), 6: .byteString(pinHashEnc), 9: 3]
            ).status == Spec.invalidParameter)
        // A ciphertext that is not whole AES blocks spends no retry.
        #expect(
            try await platform.clientPIN(
                PINSpec.getTokenUsingPIN,
                [3: .map(platformKey), 6: .byteString(Array(pinHashEnc.dropLast())), 9: 3]
            ).status == Spec.invalidParameter)
        #expect(try await platform.retries().pin == 8)
        // Permissions: none, or one this key does not offer.
        #expect(try await platform.token(pin: "1234", permissions: 0).status == Spec.invalidParameter)
        for permission in [PINSpec.cm, PINSpec.be, PINSpec.lbw, PINSpec.acfg, PINSpec.pcmr] {
            #expect(
                try await platform.token(pin: "1234", permissions: PINSpec.mc | permission).status
                    == PINSpec.unauthorizedPermission)
        }
        // Undefined permissions are ignored.
        let withUndefined = try await platform.token(pin: "1234", permissions: PINSpec.ga | 0x100)
        #expect(withUndefined.status == Spec.ok)
        let request = platform.makeCredential(token: try #require(withUndefined.token))
        #expect(try await send(key, Spec.makeCredential, request).status == PINSpec.pinAuthInvalid)
        // getPinToken takes no permissions or rpId.
        let legacy = try await platform.clientPIN(
            PINSpec.getPINToken, [3: .map(platformKey), 6: .byteString(pinHashEnc), 0x0A: "example.org"])
        #expect(legacy.status == Spec.invalidParameter)
        #expect(try await platform.retries().pin == 8)
    }

    @Test(arguments: protocols) func forcePINChange(version: Int) async throws {
        let key = try makeKey(.init(pin: "1234", forcePINChange: true))
        let platform = Platform(key: key, version: version)
        var info = try #require(try await send(key, Spec.getInfo).body)
        #expect(info[4]?.mapValue?["clientPin"] == true)
        #expect(info[0x0C] == true)
        #expect(try await platform.token(pin: "1234").status == PINSpec.pinPolicyViolation)
        // getPinToken predates PIN_POLICY_VIOLATION: it answers PIN_INVALID (§6.5.5.7.1 step 11).
        #expect(try await platform.token(pin: "1234", permissions: nil).status == PINSpec.pinInvalid)
        #expect(try await platform.retries().pin == 8, "The PIN was right: no retry is lost.")
        #expect(try await platform.changePIN(from: "1234", to: "1234") == PINSpec.pinPolicyViolation)
        #expect(try await platform.changePIN(from: "1234", to: "2345") == Spec.ok)
        info = try #require(try await send(key, Spec.getInfo).body)
        #expect(info[0x0C] == false)
        #expect(try await platform.token(pin: "2345").status == Spec.ok)
    }

    @Test func invalidPINConfigurationsAreRefused() {
        #expect(throws: VirtualKeyError.self) { try VirtualKey(configuration: .init(pin: "123")) }
        #expect(throws: VirtualKeyError.self) {
            try VirtualKey(configuration: .init(pin: String(repeating: "1", count: 64)))
        }
        #expect(throws: VirtualKeyError.self) {
            try VirtualKey(configuration: .init(pinUvAuthProtocols: [3]))
        }
        #expect(throws: VirtualKeyError.self) {
            try VirtualKey(configuration: .init(pinUvAuthProtocols: [1, 1]))
        }
        #expect(throws: VirtualKeyError.self) { try VirtualKey(configuration: .init(minPINLength: 3)) }
        #expect(throws: VirtualKeyError.self) {
            try VirtualKey(configuration: .init(pinUvAuthProtocols: [], pin: "1234"))
        }
        #expect(throws: VirtualKeyError.self) { try VirtualKey(configuration: .init(maxUVRetries: 0)) }
    }
}
