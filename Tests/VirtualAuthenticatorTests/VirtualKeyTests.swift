import CBOR
import Crypto
import _CryptoExtras
import Foundation
import Secp256k1
import Testing
import Transport
@testable import VirtualAuthenticator

// Constants written out from CTAP 2.1 §6 and §8.2 for the tests, independently of the module's.
enum Spec {
    static let makeCredential: UInt8 = 0x01
    static let getAssertion: UInt8 = 0x02
    static let getInfo: UInt8 = 0x04
    static let clientPIN: UInt8 = 0x06
    static let reset: UInt8 = 0x07
    static let getNextAssertion: UInt8 = 0x08
    static let selection: UInt8 = 0x0B

    static let ok: UInt8 = 0x00
    static let invalidCommand: UInt8 = 0x01
    static let invalidParameter: UInt8 = 0x02
    static let invalidLength: UInt8 = 0x03
    static let cborUnexpectedType: UInt8 = 0x11
    static let invalidCBOR: UInt8 = 0x12
    static let missingParameter: UInt8 = 0x14
    static let limitExceeded: UInt8 = 0x15
    static let credentialExcluded: UInt8 = 0x19
    static let unsupportedAlgorithm: UInt8 = 0x26
    static let operationDenied: UInt8 = 0x27
    static let keyStoreFull: UInt8 = 0x28
    static let unsupportedOption: UInt8 = 0x2B
    static let invalidOption: UInt8 = 0x2C
    static let keepaliveCancel: UInt8 = 0x2D
    static let noCredentials: UInt8 = 0x2E
    static let userActionTimeout: UInt8 = 0x2F
    static let notAllowed: UInt8 = 0x30
    static let pinNotSet: UInt8 = 0x35
    static let requestTooLarge: UInt8 = 0x39

    static let es256 = -7
    static let edDSA = -8
    static let es384 = -35
    static let rs256 = -257
    // IANA "COSE Algorithms": ES512, ES256K (RFC 8812), PS256 (RFC 8230), RS384, and ML-DSA
    // (draft-ietf-cose-dilithium).
    static let es512 = -36
    static let es256K = -47
    static let ps256 = -37
    static let rs384 = -258
    static let mlDSA65 = -49
    static let mlDSA87 = -50
    /// Every algorithm the virtual key implements.
    static let allAlgorithms = [es256, edDSA, es384, es512, es256K, rs256, ps256, mlDSA65, mlDSA87]
    /// What a key offers by default: all but ML-DSA, whose replies outgrow a 1200-byte maxMsgSize.
    static let defaultAlgorithms = [es256, edDSA, es384, es512, es256K, rs256, ps256]
}

/// A reply split into status and decoded body.
struct Reply {
    var status: UInt8
    var body: CBORMap?
}

/// Sends a raw message and splits the reply; the body is decoded with the strict decoder, so a
/// non-canonical response from the key fails the test.
func send(
    _ key: VirtualKey, _ message: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
) async throws -> Reply {
    let reply = await key.handleCBOR(message, keepalive: keepalive)
    let status = try #require(reply.first, "The key sent an empty reply.")
    guard reply.count > 1 else { return Reply(status: status, body: nil) }
    let body = try CBORDecoder(options: .ctap2).decode(Array(reply.dropFirst()))
    guard let map = body.mapValue else {
        Issue.record("The response is not a map.")
        return Reply(status: status, body: nil)
    }
    return Reply(status: status, body: map)
}

/// Sends a command with a parameter map built by the test.
func send(
    _ key: VirtualKey, _ command: UInt8, _ parameters: CBORMap? = nil,
    keepalive: @escaping @Sendable (KeepaliveStatus) -> Void = { _ in }
) async throws -> Reply {
    var message = [command]
    if let parameters { message += CBOREncoder.encode(.map(parameters)) }
    return try await send(key, message, keepalive: keepalive)
}

func sha256(_ text: String) -> [UInt8] { Array(SHA256.hash(data: Array(text.utf8))) }

func randomClientDataHash() -> [UInt8] { (0..<32).map { _ in UInt8.random(in: 0...255) } }

/// authenticatorMakeCredential parameters (CTAP 2.1 §6.1: 1 clientDataHash, 2 rp, 3 user,
/// 4 pubKeyCredParams, 5 excludeList, 7 options).
func makeCredentialRequest(
    clientDataHash: [UInt8] = randomClientDataHash(), rpID: String = "example.org",
    userID: [UInt8] = [1, 2, 3, 4], userName: String = "alice", algorithms: [Int] = [Spec.es256],
    excludeList: [[UInt8]]? = nil, options: CBORMap? = nil
) -> CBORMap {
    var request: CBORMap = [
        1: .byteString(clientDataHash),
        2: .map(["id": .textString(rpID), "name": "Example"]),
        3: .map(["id": .byteString(userID), "name": .textString(userName), "displayName": "Alice"]),
        4: .array(algorithms.map { .map(["type": "public-key", "alg": .int($0)]) }),
    ]
    if let excludeList {
        request[5] = .array(excludeList.map { .map(["type": "public-key", "id": .byteString($0)]) })
    }
    if let options { request[7] = .map(options) }
    return request
}

/// authenticatorGetAssertion parameters (CTAP 2.1 §6.2: 1 rpId, 2 clientDataHash, 3 allowList, 5 options).
func getAssertionRequest(
    rpID: String = "example.org", clientDataHash: [UInt8] = randomClientDataHash(),
    allowList: [[UInt8]]? = nil, options: CBORMap? = nil
) -> CBORMap {
    var request: CBORMap = [1: .textString(rpID), 2: .byteString(clientDataHash)]
    if let allowList {
        request[3] = .array(allowList.map { .map(["type": "public-key", "id": .byteString($0)]) })
    }
    if let options { request[5] = .map(options) }
    return request
}

/// Authenticator data parsed by the test itself (WebAuthn §6.1, §6.5.2).
struct ParsedAuthData {
    var rpIDHash: [UInt8]
    var flags: UInt8
    var signCount: UInt32
    var aaguid: [UInt8]?
    var credentialID: [UInt8]?
    var publicKey: CBORMap?

    init(_ bytes: [UInt8]) throws {
        try #require(bytes.count >= 37, "authData is shorter than 37 bytes.")
        rpIDHash = Array(bytes[0..<32])
        flags = bytes[32]
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        guard flags & 0x40 != 0 else {
            try #require(bytes.count == 37 || flags & 0x80 != 0, "authData has trailing bytes.")
            return
        }
        try #require(bytes.count >= 55, "attestedCredentialData is truncated.")
        aaguid = Array(bytes[37..<53])
        let length = Int(bytes[53]) << 8 | Int(bytes[54])
        try #require(bytes.count >= 55 + length, "The credential ID is truncated.")
        credentialID = Array(bytes[55..<(55 + length)])
        let (key, end) = try CBORDecoder(options: .ctap2).decodePrefix(bytes[(55 + length)...])
        publicKey = key.mapValue
        if flags & 0x80 == 0 { try #require(end == bytes.count, "authData has trailing bytes.") }
    }

    var userPresent: Bool { flags & 0x01 != 0 }
    var userVerified: Bool { flags & 0x04 != 0 }
}

/// Verifies a WebAuthn signature with swift-crypto (OpenSSL for secp256k1) from a COSE key map
/// (RFC 9053; RFC 8230 RSA; RFC 8812 secp256k1; draft-ietf-cose-dilithium AKP).
func verify(signature: [UInt8], data: [UInt8], coseKey: CBORMap) throws -> Bool {
    let alg = try #require(coseKey[3]?.intValue)
    switch alg {
    case Spec.rs256, Spec.ps256:
        #expect(coseKey[1] == 3)
        let key = try _RSA.Signing.PublicKey(
            n: try #require(coseKey[-1]?.bytesValue), e: try #require(coseKey[-2]?.bytesValue))
        #expect(key.keySizeInBits == 2048)
        return key.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: data),
            padding: alg == Spec.ps256 ? .PSS : .insecurePKCS1v1_5)
    case Spec.mlDSA65:
        #expect(coseKey[1] == 7)
        let raw = try #require(coseKey[-1]?.bytesValue)
        #expect(raw.count == 1952 && signature.count == 3309, "FIPS 204 Table 2 sizes")
        return try MLDSA65.PublicKey(rawRepresentation: raw).isValidSignature(signature, for: data)
    case Spec.mlDSA87:
        #expect(coseKey[1] == 7)
        let raw = try #require(coseKey[-1]?.bytesValue)
        #expect(raw.count == 2592 && signature.count == 4627, "FIPS 204 Table 2 sizes")
        return try MLDSA87.PublicKey(rawRepresentation: raw).isValidSignature(signature, for: data)
    default:
        break
    }
    let x = try #require(coseKey[-2]?.bytesValue)
    switch alg {
    case Spec.es512:
        #expect(coseKey[1] == 2 && coseKey[-1] == 3)
        let y = try #require(coseKey[-3]?.bytesValue)
        let key = try P521.Signing.PublicKey(rawRepresentation: x + y)
        return key.isValidSignature(try P521.Signing.ECDSASignature(derRepresentation: signature), for: data)
    case Spec.es256K:
        #expect(coseKey[1] == 2 && coseKey[-1] == 8)
        let y = try #require(coseKey[-3]?.bytesValue)
        return try Secp256k1.PublicKey(x963Representation: [0x04] + x + y).isValidSignature(signature, for: data)
    case Spec.es256:
        #expect(coseKey[1] == 2 && coseKey[-1] == 1)
        let y = try #require(coseKey[-3]?.bytesValue)
        let key = try P256.Signing.PublicKey(rawRepresentation: x + y)
        return key.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: signature), for: data)
    case Spec.es384:
        #expect(coseKey[1] == 2 && coseKey[-1] == 2)
        let y = try #require(coseKey[-3]?.bytesValue)
        let key = try P384.Signing.PublicKey(rawRepresentation: x + y)
        return key.isValidSignature(try P384.Signing.ECDSASignature(derRepresentation: signature), for: data)
    case Spec.edDSA:
        #expect(coseKey[1] == 1 && coseKey[-1] == 6)
        let key = try Curve25519.Signing.PublicKey(rawRepresentation: x)
        return key.isValidSignature(signature, for: data)
    default:
        Issue.record("Unexpected COSE algorithm \(alg)")
        return false
    }
}

/// A fresh key in memory.
func makeKey(
    _ configuration: VirtualKey.Configuration = .init(), userPresence: UserPresencePolicy = .approve
) throws -> VirtualKey {
    try VirtualKey(configuration: configuration, userPresence: userPresence)
}

/// Registers a credential and returns its ID and COSE public key.
func register(
    _ key: VirtualKey, rpID: String = "example.org", userID: [UInt8] = [1, 2, 3, 4],
    algorithm: Int = Spec.es256, rk: Bool = false
) async throws -> (id: [UInt8], publicKey: CBORMap) {
    let reply = try await send(
        key, Spec.makeCredential,
        makeCredentialRequest(
            rpID: rpID, userID: userID, algorithms: [algorithm], options: rk ? ["rk": true] : nil))
    try #require(reply.status == Spec.ok)
    let authData = try ParsedAuthData(try #require(reply.body?[2]?.bytesValue))
    return (try #require(authData.credentialID), try #require(authData.publicKey))
}

@Suite("VirtualKey getInfo and request validation")
struct VirtualKeyTests {
    @Test func getInfoReportsTheConfiguration() async throws {
        let aaguid: [UInt8] = Array(0x10..<0x20)
        let key = try makeKey(.init(aaguid: aaguid, maxMsgSize: 2048, firmwareVersion: 0x050702))
        let reply = try await send(key, Spec.getInfo)
        #expect(reply.status == Spec.ok)
        let info = try #require(reply.body)
        // CTAP 2.1 §6.4 member keys.
        #expect(info[1] == ["U2F_V2", "FIDO_2_0"])
        #expect(info[3] == .byteString(aaguid))
        let options = try #require(info[4]?.mapValue)
        #expect(options["rk"] == true)
        #expect(options["up"] == true)
        #expect(options["plat"] == false)
        #expect(options["clientPin"] == false, "clientPIN is supported and no PIN is set.")
        #expect(options["pinUvAuthToken"] == true)
        #expect(info[5] == 2048)
        #expect(info[6] == [2, 1], "pinUvAuthProtocols, most preferred first.")
        #expect(info[8] == 64)
        #expect(info[9] == ["nfc", "usb"])
        #expect(
            info[0x0A] == .array(Spec.defaultAlgorithms.map { .map(["type": "public-key", "alg": .int($0)]) }))
        #expect(info[0x0E] == .int(0x050702))
    }

    @Test func unknownCommandIsInvalidCommand() async throws {
        let key = try makeKey()
        #expect(try await send(key, [0x55]).status == Spec.invalidCommand)
        #expect(try await send(key, [0x40, 0xA0]).status == Spec.invalidCommand)
        #expect(try await send(key, []).status == Spec.invalidLength)
    }

    @Test func nonCanonicalCBORIsInvalidCBOR() async throws {
        let key = try makeKey()
        let canonical = CBOREncoder.encode(.map(makeCredentialRequest()))
        // 0xB8 0x04: a map length in the two-byte form where the one-byte form fits.
        var longForm = [0xB8, 0x04] + canonical.dropFirst()
        #expect(try await send(key, [Spec.makeCredential] + longForm).status == Spec.invalidCBOR)
        // Indefinite-length map.
        longForm = [0xBF] + canonical.dropFirst() + [0xFF]
        #expect(try await send(key, [Spec.makeCredential] + longForm).status == Spec.invalidCBOR)
        // Truncated.
        #expect(try await send(key, [Spec.makeCredential] + canonical.dropLast()).status == Spec.invalidCBOR)
        // Keys out of canonical order: 2 before 1.
        let unordered: [UInt8] = [0xA2, 0x02, 0x61, 0x78, 0x01, 0x41, 0x00]
        #expect(try await send(key, [Spec.getAssertion] + unordered).status == Spec.invalidCBOR)
    }

    @Test(arguments: [1, 2, 3, 4])
    func missingMakeCredentialParameter(_ missing: Int) async throws {
        let key = try makeKey()
        var request = makeCredentialRequest()
        request[missing] = nil
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.missingParameter)
    }

    @Test(arguments: [
        (1, CBORValue.textString("not bytes")), (2, .byteString([1])), (3, .array([])), (4, .map([:])),
        (5, .map([:])), (6, .array([])), (7, .unsigned(1)),
    ])
    func illTypedMakeCredentialParameter(_ key: Int, _ value: CBORValue) async throws {
        let virtualKey = try makeKey()
        var request = makeCredentialRequest()
        request[key] = value
        #expect(try await send(virtualKey, Spec.makeCredential, request).status == Spec.cborUnexpectedType)
    }

    @Test func illTypedNestedMembers() async throws {
        let key = try makeKey()
        var request = makeCredentialRequest()
        request[2] = .map(["id": .byteString([1])])
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.cborUnexpectedType)
        request = makeCredentialRequest()
        request[3] = .map(["id": "text id"])
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.cborUnexpectedType)
        request = makeCredentialRequest()
        request[2] = .map(["name": "no id"])
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.missingParameter)
        request = makeCredentialRequest(options: ["rk": 1])
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.cborUnexpectedType)
        request = makeCredentialRequest()
        request[4] = [.map(["type": "public-key", "alg": "ES256"])]
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.cborUnexpectedType)
        request[4] = [.map(["type": "public-key"])]
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.missingParameter)
        #expect(try await send(key, [Spec.makeCredential, 0x80]).status == Spec.cborUnexpectedType)
        #expect(try await send(key, [Spec.makeCredential]).status == Spec.missingParameter)
    }

    @Test func getAssertionParameterErrors() async throws {
        let key = try makeKey()
        var request = getAssertionRequest()
        request[1] = nil
        #expect(try await send(key, Spec.getAssertion, request).status == Spec.missingParameter)
        request = getAssertionRequest()
        request[2] = nil
        #expect(try await send(key, Spec.getAssertion, request).status == Spec.missingParameter)
        request = getAssertionRequest()
        request[1] = .byteString([1])
        #expect(try await send(key, Spec.getAssertion, request).status == Spec.cborUnexpectedType)
        request = getAssertionRequest()
        request[3] = .map(["id": .byteString([1])])
        #expect(try await send(key, Spec.getAssertion, request).status == Spec.cborUnexpectedType)
        request = getAssertionRequest()
        request[3] = [.map(["type": "public-key"])]
        #expect(try await send(key, Spec.getAssertion, request).status == Spec.missingParameter)
        request = getAssertionRequest(options: ["rk": true])
        #expect(try await send(key, Spec.getAssertion, request).status == Spec.unsupportedOption)
        request = getAssertionRequest(options: ["uv": true])
        #expect(try await send(key, Spec.getAssertion, request).status == Spec.invalidOption)
    }

    @Test func unsupportedAlgorithmsAreSkippedInOrder() async throws {
        let key = try makeKey()
        // RS384 first (not supported), an unknown type, then EdDSA and ES256: EdDSA is chosen.
        var request = makeCredentialRequest()
        request[4] = [
            .map(["type": "public-key", "alg": .int(Spec.rs384)]),
            .map(["type": "future-type", "alg": .int(Spec.es256)]),
            .map(["type": "public-key", "alg": .int(Spec.edDSA)]),
            .map(["type": "public-key", "alg": .int(Spec.es256)]),
        ]
        let reply = try await send(key, Spec.makeCredential, request)
        #expect(reply.status == Spec.ok)
        let authData = try ParsedAuthData(try #require(reply.body?[2]?.bytesValue))
        #expect(authData.publicKey?[3] == .int(Spec.edDSA))

        request[4] = [
            .map(["type": "public-key", "alg": .int(Spec.rs384)]), .map(["type": "other", "alg": -7]),
        ]
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.unsupportedAlgorithm)
        let es256Only = try makeKey(.init(algorithms: [.es256]))
        #expect(
            try await send(es256Only, Spec.makeCredential, makeCredentialRequest(algorithms: [Spec.edDSA]))
                .status
                == Spec.unsupportedAlgorithm)
    }

    @Test func optionErrors() async throws {
        let key = try makeKey()
        #expect(
            try await send(key, Spec.makeCredential, makeCredentialRequest(options: ["up": false])).status
                == Spec.invalidOption)
        #expect(
            try await send(key, Spec.makeCredential, makeCredentialRequest(options: ["uv": true])).status
                == Spec.invalidOption)
        // Unknown options are ignored.
        #expect(
            try await send(key, Spec.makeCredential, makeCredentialRequest(options: ["future": true])).status
                == Spec.ok)
        let noRK = try makeKey(.init(options: ["up": true]))
        #expect(
            try await send(noRK, Spec.makeCredential, makeCredentialRequest(options: ["rk": true])).status
                == Spec.unsupportedOption)
        // A key with built-in UV accepts uv=true and reports UV.
        let withUV = try makeKey(.init(options: ["rk": true, "up": true, "uv": true]))
        let reply = try await send(withUV, Spec.makeCredential, makeCredentialRequest(options: ["uv": true]))
        #expect(reply.status == Spec.ok)
        #expect(try ParsedAuthData(try #require(reply.body?[2]?.bytesValue)).userVerified)
    }

    @Test func lengthsAndLimits() async throws {
        let key = try makeKey(.init(maxMsgSize: 300))
        #expect(
            try await send(
                key, Spec.makeCredential, makeCredentialRequest(userID: Array(repeating: 7, count: 65))
            )
            .status == Spec.invalidLength)
        #expect(
            try await send(
                key, Spec.makeCredential, makeCredentialRequest(userID: Array(repeating: 7, count: 64))
            )
            .status == Spec.ok)
        #expect(
            try await send(key, Spec.makeCredential, makeCredentialRequest(clientDataHash: [1, 2, 3])).status
                == Spec.invalidLength)
        #expect(
            try await send(
                key, Spec.getAssertion, getAssertionRequest(allowList: [Array(repeating: 1, count: 65)])
            )
            .status == Spec.invalidLength)
        let nine = (0..<9).map { [UInt8]([UInt8($0)]) }
        #expect(
            try await send(key, Spec.getAssertion, getAssertionRequest(allowList: nine)).status
                == Spec.limitExceeded)
        #expect(
            try await send(try makeKey(), Spec.makeCredential, makeCredentialRequest(excludeList: nine))
                .status
                == Spec.limitExceeded)
        let big = makeCredentialRequest(userName: String(repeating: "x", count: 400))
        #expect(try await send(key, Spec.makeCredential, big).status == Spec.requestTooLarge)
    }

    @Test func pinUvAuthParamWithoutAPIN() async throws {
        let key = try makeKey()
        var request = makeCredentialRequest()
        request[8] = .byteString([])
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.pinNotSet)
        request[8] = .byteString(Array(repeating: 1, count: 16))
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.missingParameter)
        request[9] = 3
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.invalidParameter)
        request[9] = 1
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.pinNotSet)
        request = makeCredentialRequest()
        request[0x0A] = 1
        #expect(try await send(key, Spec.makeCredential, request).status == Spec.invalidParameter)
    }

    @Test func selectionNeedsPresence() async throws {
        let key = try makeKey()
        #expect(try await send(key, Spec.selection).status == Spec.ok)
        await key.setUserPresence(.deny)
        #expect(try await send(key, Spec.selection).status == Spec.operationDenied)
    }

    @Test func invalidConfigurationsAreRefused() throws {
        #expect(throws: VirtualKeyError.self) { try VirtualKey(configuration: .init(aaguid: [1, 2, 3])) }
        #expect(throws: VirtualKeyError.self) { try VirtualKey(configuration: .init(algorithms: [])) }
        #expect(throws: VirtualKeyError.self) {
            try VirtualKey(configuration: .init(algorithms: [COSEAlgorithm(rawValue: Spec.rs384)]))
        }
        #expect(throws: VirtualKeyError.self) {
            try VirtualKey(configuration: .init(algorithms: [.es256, .edDSA, .es256]))
        }
        #expect(throws: VirtualKeyError.self) {
            try VirtualKey(configuration: .init(maxCredentialIdLength: 32))
        }
    }
}

@Suite("VirtualKey message size limit")
struct VirtualKeyMessageSizeTests {
    @Test func maxMsgSizeCountsTheWholeMessage() async throws {
        let request = makeCredentialRequest()
        let size = 1 + CBOREncoder.encode(.map(request)).count
        let exact = try makeKey(.init(maxMsgSize: size))
        #expect(try await send(exact, Spec.makeCredential, request).status == Spec.ok)
        let smaller = try makeKey(.init(maxMsgSize: size - 1))
        #expect(try await send(smaller, Spec.makeCredential, request).status == Spec.requestTooLarge)
    }
}

@Suite("VirtualKey hostile requests")
struct VirtualKeyHostileRequestTests {
    /// Every truncation and every single-bit flip of valid requests is answered with one status
    /// byte, or with OK and a well-formed canonical CBOR map; nothing traps.
    @Test(arguments: [Spec.makeCredential, Spec.getAssertion])
    func truncatedAndFlippedRequests(_ command: UInt8) async throws {
        let key = try makeKey()
        let (id, _) = try await register(key)
        let parameters =
            command == Spec.makeCredential
            ? makeCredentialRequest(excludeList: [[1, 2, 3]], options: ["rk": false])
            : getAssertionRequest(allowList: [id], options: ["up": true])
        let valid = [command] + CBOREncoder.encode(.map(parameters))
        var variants: [[UInt8]] = (1..<valid.count).map { Array(valid[0..<$0]) }
        for index in 1..<valid.count {
            for bit in [0, 3, 7] {
                var flipped = valid
                flipped[index] ^= UInt8(1 << bit)
                variants.append(flipped)
            }
        }
        for message in variants {
            let reply = await key.handleCBOR(message, keepalive: { _ in })
            let status = try #require(reply.first)
            if status == Spec.ok {
                #expect(try CBORDecoder(options: .ctap2).decode(Array(reply.dropFirst())).mapValue != nil)
            } else {
                #expect(reply.count == 1)
            }
        }
        // Truncations are never accepted.
        for length in 1..<valid.count {
            let reply = await key.handleCBOR(Array(valid[0..<length]), keepalive: { _ in })
            #expect(reply.first != Spec.ok)
        }
    }
}
