import CBOR
import Crypto
import Testing
import Transport

@testable import CTAP2

/// Hostile and edge-case replies to credential management, the checks made before a key is
/// asked, and authenticatorConfig's and reset's refusals.
@Suite struct CredentialManagementDecodingTests {
    static func token(permissions: PINUVAuthTokenPermissions = [.credentialManagement], rpID: String? = nil)
        -> PINUVAuthToken
    {
        PINUVAuthToken(
            token: ClientPINTestsAuthenticator.token, pinUVAuthProtocol: PINUVAuthProtocolTwo(),
            permissions: permissions, rpID: rpID)
    }

    static func manager(
        token: PINUVAuthToken = token(), preview: Bool = false,
        _ replies: @escaping @Sendable (UInt8, UInt64?) -> [UInt8]
    ) throws -> (CredentialManagement, ScriptedCTAPConnection) {
        let connection = ScriptedCTAPConnection(replies)
        let manager = try CredentialManagement(
            session: CTAP2Session(connection: connection),
            info: try CredentialManagementScript.info(preview: preview, version: 2), token: token)
        return (manager, connection)
    }

    struct Hostile: Sendable, CustomTestStringConvertible {
        var name: String
        var body: CBORMap
        var testDescription: String { name }
    }

    static let rp: CBORValue = .map(["id": "example.com"])
    static let hash: CBORValue = .byteString(CredentialManagementScript.hash("example.com"))
    static let user: CBORValue = .map(["id": .byteString([1])])
    static let credential: CBORValue = .map(["id": .byteString([9, 9]), "type": "public-key"])

    /// Replies to enumerateRPsBegin / enumerateCredentialsBegin that break §6.8's types.
    static let hostileRPReplies: [Hostile] = [
        Hostile(name: "rp is a text string", body: [3: "example.com", 4: hash, 5: 1]),
        Hostile(name: "rp without id", body: [3: .map(["name": "x"]), 4: hash, 5: 1]),
        Hostile(
            name: "rpIDHash of 31 bytes",
            body: [3: rp, 4: .byteString([UInt8](repeating: 0, count: 31)), 5: 1]),
        Hostile(name: "rpIDHash is text", body: [3: rp, 4: "hash", 5: 1]),
        Hostile(name: "totalRPs negative", body: [3: rp, 4: hash, 5: -1]),
        Hostile(name: "totalRPs missing", body: [3: rp, 4: hash]),
        Hostile(name: "rp missing", body: [4: hash, 5: 1]),
    ]

    static let hostileCredentialReplies: [Hostile] = [
        Hostile(
            name: "user is an array",
            body: [6: [1], 7: credential, 8: CredentialManagementScript.coseKey, 9: 1]),
        Hostile(
            name: "credentialID is bytes",
            body: [6: user, 7: .byteString([1]), 8: CredentialManagementScript.coseKey]),
        Hostile(name: "publicKey is bytes", body: [6: user, 7: credential, 8: .byteString([1])]),
        Hostile(name: "publicKey without kty", body: [6: user, 7: credential, 8: .map([3: -7])]),
        Hostile(
            name: "largeBlobKey of 5 bytes",
            body: [
                6: user, 7: credential, 8: CredentialManagementScript.coseKey,
                11: .byteString([1, 2, 3, 4, 5]),
            ]),
        Hostile(
            name: "credProtect is text",
            body: [6: user, 7: credential, 8: CredentialManagementScript.coseKey, 10: "3"]),
        Hostile(name: "publicKey missing", body: [6: user, 7: credential, 9: 1]),
    ]

    @Test(arguments: hostileRPReplies)
    func hostileRelyingPartyRepliesAreMalformed(_ hostile: Hostile) async throws {
        let (manager, _) = try Self.manager { _, _ in CredentialManagementScript.reply(hostile.body) }
        let error = await #expect(throws: CTAP2Error.self) { _ = try await manager.relyingParties() }
        #expect(error?.code == .malformedResponse)
    }

    @Test(arguments: hostileCredentialReplies)
    func hostileCredentialRepliesAreMalformed(_ hostile: Hostile) async throws {
        let (manager, _) = try Self.manager { _, _ in CredentialManagementScript.reply(hostile.body) }
        let error = await #expect(throws: CTAP2Error.self) {
            _ = try await manager.credentials(rpID: "example.com")
        }
        #expect(error?.code == .malformedResponse)
    }

    @Test(arguments: [[0x00, 0x83, 0x01, 0x02, 0x03], [0x00, 0xA1, 0x05], [0x00, 0xFF]] as [[UInt8]])
    func repliesThatAreNotACBORMapAreMalformed(_ reply: [UInt8]) async throws {
        let (manager, _) = try Self.manager { _, _ in reply }
        let error = await #expect(throws: CTAP2Error.self) { _ = try await manager.metadata() }
        #expect(error?.code == .malformedResponse)
    }

    @Test(arguments: [UInt64(1) << 32, UInt64.max, UInt64(CredentialManagement.defaultLimit + 1)])
    func aKeyClaimingHugeTotalsIsRefusedAfterOneRequest(total: UInt64) async throws {
        let (manager, connection) = try Self.manager { _, sub in
            sub == 2
                ? CredentialManagementScript.reply([3: Self.rp, 4: Self.hash, 5: .unsigned(total)])
                : CredentialManagementScript.reply([
                    6: Self.user, 7: Self.credential, 8: CredentialManagementScript.coseKey,
                    9: .unsigned(total),
                ])
        }
        let rpError = await #expect(throws: CTAP2Error.self) { _ = try await manager.relyingParties() }
        #expect(rpError?.code == .malformedResponse)
        let credError = await #expect(throws: CTAP2Error.self) {
            _ = try await manager.credentials(rpID: "example.com")
        }
        #expect(credError?.code == .malformedResponse)
        #expect(connection.requests.count == 2, "no getNext request followed either begin")
    }

    @Test func totalsUpToTheLimitAreReadInFull() async throws {
        let (manager, connection) = try Self.manager { _, sub in
            sub == 2
                ? CredentialManagementScript.reply([3: Self.rp, 4: Self.hash, 5: 5])
                : CredentialManagementScript.reply([3: Self.rp, 4: Self.hash])
        }
        #expect(try await manager.relyingParties().count == 5)
        #expect(connection.requests.map { $0.first } == [0x0A, 0x0A, 0x0A, 0x0A, 0x0A])
    }

    @Test func noCredentialsGivesEmptyLists() async throws {
        let (manager, _) = try Self.manager { _, _ in [CTAPStatus.noCredentials.rawValue] }
        #expect(try await manager.relyingParties().isEmpty)
        #expect(try await manager.credentials(rpID: "example.com").isEmpty)
    }

    @Test func aKeyWithoutCredentialManagementIsRefused() throws {
        let info = try clientPINInfo()
        #expect(CredentialManagementRequest.command(for: info) == nil)
        let error = #expect(throws: CTAP2Error.self) {
            _ = try CredentialManagement(
                session: CTAP2Session(connection: ScriptedCTAPConnection { _, _ in [0] }), info: info,
                token: Self.token())
        }
        #expect(error?.code == .unsupportedOption)
    }

    @Test func anRPBoundTokenIsCheckedBeforeTheKeyIsAsked() async throws {
        let bound = Self.token(rpID: "example.com")
        let (manager, connection) = try Self.manager(token: bound) { _, _ in
            CredentialManagementScript.reply([
                6: Self.user, 7: Self.credential, 8: CredentialManagementScript.coseKey, 9: 1,
            ])
        }
        let metadata = await #expect(throws: CTAP2Error.self) { _ = try await manager.metadata() }
        #expect(metadata?.code == .unauthorizedPermission)
        let parties = await #expect(throws: CTAP2Error.self) { _ = try await manager.relyingParties() }
        #expect(parties?.code == .unauthorizedPermission)
        let other = await #expect(throws: CTAP2Error.self) {
            _ = try await manager.credentials(rpID: "example.org")
        }
        #expect(other?.code == .unauthorizedPermission)
        #expect(connection.requests.isEmpty)
        #expect(try await manager.credentials(rpID: "example.com").count == 1)
        // The request carried the hash of the bound RP ID (§6.8.4 subCommandParams 0x01).
        let sent = try #require(connection.requests.first)
        let map = try #require(try CBORDecoder().decode(Array(sent.dropFirst())).mapValue)
        #expect(map[2]?.mapValue?[1]?.bytesValue == Array(SHA256.hash(data: Array("example.com".utf8))))
    }

    @Test func aTokenWithoutTheCMPermissionIsRefused() async throws {
        let (manager, connection) = try Self.manager(token: Self.token(permissions: [.getAssertion])) {
            _, _ in [0]
        }
        let error = await #expect(throws: CTAP2Error.self) { _ = try await manager.metadata() }
        #expect(error?.code == .unauthorizedPermission)
        #expect(connection.requests.isEmpty)
    }

    @Test func thePreviewCommandCannotUpdateUserInformation() async throws {
        let (manager, connection) = try Self.manager(preview: true) { _, _ in [0] }
        #expect(!manager.canUpdateUserInformation)
        await #expect(throws: CTAP2Error.self) {
            try await manager.updateUserInformation(credentialID: [1], user: UserEntity(id: [1], name: "a"))
        }
        #expect(connection.requests.isEmpty)
        try await manager.deleteCredential(id: [1])
        #expect(connection.requests.first?.first == 0x41)
    }

    @Test func getNextRequestsCarryNoPINUVAuthParam() throws {
        // §6.8.3 / §6.8.4: the "next" subcommands are sent with the subCommand alone.
        #expect(
            try CredentialManagementRequest.enumerateRPsGetNextRP().encoded() == [0x0A, 0xA1, 0x01, 0x03])
        #expect(
            try CredentialManagementRequest.enumerateCredentialsGetNextCredential(
                command: .credentialManagementPreview
            )
            .encoded() == [0x41, 0xA1, 0x01, 0x05])
    }

    // MARK: authenticatorConfig

    static func configInfo(extra: CBORMap = [:]) throws -> AuthenticatorInfo {
        var map: CBORMap = [
            1: ["FIDO_2_1"], 3: .byteString([UInt8](repeating: 0, count: 16)),
            4: .map([
                "clientPin": true, "pinUvAuthToken": true, "authnrCfg": true, "alwaysUv": false,
                "setMinPINLength": true,
            ]),
            0x0D: 6, 0x10: 1,
        ]
        for entry in extra { map[entry.key] = entry.value }
        return try AuthenticatorInfo(map: map)
    }

    @Test func configRefusesWhatGetInfoRulesOutWithoutAskingTheKey() async throws {
        let connection = ScriptedCTAPConnection { _, _ in [0] }
        let session = CTAP2Session(connection: connection)
        let token = Self.token(permissions: [.authenticatorConfiguration])
        let config = try AuthenticatorConfig(session: session, info: try Self.configInfo(), token: token)
        let lower = await #expect(throws: CTAP2Error.self) { try await config.setMinPINLength(5) }
        #expect(lower?.code == .pinPolicyViolation)
        let tooMany = await #expect(throws: CTAP2Error.self) {
            try await config.setMinPINLength(8, minPINLengthRPIDs: ["a.example", "b.example"])
        }
        #expect(tooMany?.code == .invalidRequest)
        let noEP = await #expect(throws: CTAP2Error.self) { try await config.enableEnterpriseAttestation() }
        #expect(noEP?.code == .unsupportedOption)
        let unlisted = try AuthenticatorConfig(
            session: session, info: try Self.configInfo(extra: [0x1F: [3]]), token: token)
        let notListed = await #expect(throws: CTAP2Error.self) { try await unlisted.toggleAlwaysUV() }
        #expect(notListed?.code == .unsupportedOption)
        #expect(connection.requests.isEmpty)
        try await unlisted.setMinPINLength(6, minPINLengthRPIDs: ["a.example"])
        #expect(connection.requests.count == 1)
    }

    // MARK: Reset

    @Test(arguments: [
        (CTAPStatus.notAllowed, CTAP2Error.Code.notAllowed),
        (CTAPStatus.operationDenied, CTAP2Error.Code.operationDenied),
        (CTAPStatus.userActionTimeout, CTAP2Error.Code.userActionTimeout),
    ])
    func resetRefusalsEachGetTheirOwnSentence(status: CTAPStatus, code: CTAP2Error.Code) async throws {
        let session = CTAP2Session(connection: ScriptedCTAPConnection { _, _ in [status.rawValue] })
        let error = await #expect(throws: CTAP2Error.self) { try await session.reset() }
        let generic = try #require(error)
        let explained = ResetRequest.explain(generic)
        #expect(explained.code == code)
        #expect(explained.status == status)
        #expect(explained.message != generic.message, "a reset-specific sentence replaces the generic one")
    }

    @Test func resetExplanationsDiffer() {
        let messages = [CTAPStatus.notAllowed, .operationDenied, .userActionTimeout].map {
            ResetRequest.explain(.authenticator($0)).message
        }
        #expect(Set(messages).count == 3)
        let other = CTAP2Error.authenticator(.pinBlocked)
        #expect(ResetRequest.explain(other).message == other.message)
    }
}
