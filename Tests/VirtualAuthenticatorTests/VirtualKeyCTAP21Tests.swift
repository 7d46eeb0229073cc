import CBOR
import CTAP2
import Foundation
import Logging
import Testing
@testable import VirtualAuthenticator

// CTAP 2.1 §6.8 (authenticatorCredentialManagement) and §6.11 (authenticatorConfig), written
// out for the tests.
enum CTAP21Spec {
    static let credentialManagement: UInt8 = 0x0A
    static let config: UInt8 = 0x0D
    static let credentialManagementPreview: UInt8 = 0x41

    static let getCredsMetadata: UInt64 = 0x01
    static let enumerateRPsBegin: UInt64 = 0x02
    static let enumerateRPsGetNextRP: UInt64 = 0x03
    static let enumerateCredentialsBegin: UInt64 = 0x04
    static let enumerateCredentialsGetNextCredential: UInt64 = 0x05
    static let deleteCredential: UInt64 = 0x06
    static let updateUserInformation: UInt64 = 0x07

    static let enableEnterpriseAttestation: UInt64 = 0x01
    static let toggleAlwaysUv: UInt64 = 0x02
    static let setMinPINLength: UInt64 = 0x03
}

/// The platform side of credential management and authenticatorConfig: pinUvAuthParams made
/// with the host module's PIN/UV auth protocol over the messages §6.8 and §6.11 define.
extension Platform {
    func credentialManagement(
        _ subCommand: UInt64, _ params: CBORMap? = nil, token: [UInt8]?,
        command: UInt8 = CTAP21Spec.credentialManagement
    ) async throws -> Reply {
        var request: CBORMap = [1: .unsigned(subCommand)]
        if let params { request[2] = .map(params) }
        if let token {
            let message = [UInt8(subCommand)] + (params.map { CBOREncoder.encode(.map($0)) } ?? [])
            request[3] = .int(version)
            request[4] = .byteString(pinProtocol.authenticate(key: token, message))
        }
        return try await send(key, command, request)
    }

    func config(_ subCommand: UInt64, _ params: CBORMap? = nil, token: [UInt8]?) async throws -> Reply {
        var request: CBORMap = [1: .unsigned(subCommand)]
        if let params { request[2] = .map(params) }
        if let token {
            let message =
                [UInt8](repeating: 0xFF, count: 32) + [CTAP21Spec.config, UInt8(subCommand)]
                + (params.map { CBOREncoder.encode(.map($0)) } ?? [])
            request[3] = .int(version)
            request[4] = .byteString(pinProtocol.authenticate(key: token, message))
        }
        return try await send(key, CTAP21Spec.config, request)
    }

    /// A token from the PIN "1234" that must be issued.
    func token(_ permissions: UInt64, rpID: String? = nil) async throws -> [UInt8] {
        try #require(try await token(pin: "1234", permissions: permissions, rpID: rpID).token)
    }
}

func descriptor(_ id: [UInt8]) -> CBORValue { .map(["type": "public-key", "id": .byteString(id)]) }

@Suite("VirtualKey CTAP 2.1: credential management, authenticatorConfig, permissions and RP binding")
struct VirtualKeyCTAP21Tests {
    /// A CTAP 2.1 key with discoverable credentials for example.com (two) and example.org
    /// (one), made before the PIN "1234" was set.
    static func populatedKey(
        _ configuration: VirtualKey.Configuration = .ctap21(), version: Int = 2, stateFile: String? = nil
    ) async throws -> (VirtualKey, Platform, [String: [UInt8]]) {
        let key = try VirtualKey(configuration: configuration, stateFile: stateFile)
        var ids: [String: [UInt8]] = [:]
        ids["com1"] = try await register(key, rpID: "example.com", userID: [1], rk: true).id
        ids["com2"] = try await register(key, rpID: "example.com", userID: [2], rk: true).id
        ids["org"] = try await register(key, rpID: "example.org", userID: [3], rk: true).id
        let platform = Platform(key: key, version: version)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        return (key, platform, ids)
    }

    @Test(arguments: [1, 2]) func credentialManagementNeedsAVerifiedCmToken(version: Int) async throws {
        let (_, platform, _) = try await Self.populatedKey(version: version)
        let sub = CTAP21Spec.getCredsMetadata
        // No pinUvAuthParam: PUAT_REQUIRED; one without its protocol: MISSING_PARAMETER.
        #expect(try await platform.credentialManagement(sub, token: nil).status == PINSpec.puatRequired)
        let key = platform.key
        #expect(
            try await send(
                key, CTAP21Spec.credentialManagement, [1: .unsigned(sub), 4: .byteString([1, 2])]
            ).status
                == Spec.missingParameter)
        // A token without cm, or a wrong pinUvAuthParam: PIN_AUTH_INVALID.
        let mcOnly = try await platform.token(PINSpec.mc | PINSpec.ga)
        #expect(try await platform.credentialManagement(sub, token: mcOnly).status == PINSpec.pinAuthInvalid)
        let cm = try await platform.token(PINSpec.cm)
        #expect(
            try await platform.credentialManagement(sub, token: cm.map { $0 ^ 1 }).status
                == PINSpec.pinAuthInvalid)
        let metadata = try await platform.credentialManagement(sub, token: cm)
        #expect(metadata.status == Spec.ok)
        #expect(metadata.body?[1]?.intValue == 3)
        #expect(metadata.body?[2]?.intValue == 22)
        // The pinUvAuthParam covers subCommandParams: one made over other params fails.
        let hash = sha256("example.com")
        var request: CBORMap = [
            1: .unsigned(CTAP21Spec.enumerateCredentialsBegin), 2: .map([1: .byteString(hash)]),
            3: .int(version),
        ]
        request[4] = .byteString(
            platform.pinProtocol.authenticate(key: cm, [UInt8(CTAP21Spec.enumerateCredentialsBegin)]))
        #expect(
            try await send(key, CTAP21Spec.credentialManagement, request).status == PINSpec.pinAuthInvalid)
        // The key does not grant cm without the credMgmt option.
        let (_, plain, _) = try await Self.populatedKey(.init(), version: version)
        #expect(
            try await plain.token(pin: "1234", permissions: PINSpec.cm).status
                == PINSpec.unauthorizedPermission)
        #expect(try await plain.credentialManagement(sub, token: mcOnly).status == Spec.invalidCommand)
    }

    @Test(arguments: [1, 2]) func rpBoundTokensManageOnlyTheirRP(version: Int) async throws {
        let (key, platform, ids) = try await Self.populatedKey(version: version)
        let bound = try await platform.token(PINSpec.cm, rpID: "example.org")
        #expect(
            try await platform.credentialManagement(CTAP21Spec.getCredsMetadata, token: bound).status
                == PINSpec.pinAuthInvalid)
        #expect(
            try await platform.credentialManagement(CTAP21Spec.enumerateRPsBegin, token: bound).status
                == PINSpec.pinAuthInvalid)
        #expect(
            try await platform.credentialManagement(
                CTAP21Spec.enumerateCredentialsBegin, [1: .byteString(sha256("example.com"))], token: bound
            ).status == PINSpec.pinAuthInvalid)
        let own = try await platform.credentialManagement(
            CTAP21Spec.enumerateCredentialsBegin, [1: .byteString(sha256("example.org"))], token: bound)
        #expect(own.status == Spec.ok)
        #expect(own.body?[7]?.mapValue?["id"] == .byteString(try #require(ids["org"])))
        #expect(
            try await platform.credentialManagement(
                CTAP21Spec.deleteCredential, [2: descriptor(try #require(ids["com1"]))], token: bound
            ).status == PINSpec.pinAuthInvalid)
        #expect(
            try await platform.credentialManagement(
                CTAP21Spec.deleteCredential, [2: descriptor(try #require(ids["org"]))], token: bound
            ).status == Spec.ok)
        #expect(await key.discoverableCredentials.map(\.rpID) == ["example.com", "example.com"])

        // Credential management checks a token's RP but never binds one: an unbound token
        // stays good for all RPs after acting on one.
        let unbound = try await platform.token(PINSpec.cm)
        #expect(
            try await platform.credentialManagement(
                CTAP21Spec.enumerateCredentialsBegin, [1: .byteString(sha256("example.com"))], token: unbound
            ).status == Spec.ok)
        #expect(
            try await platform.credentialManagement(CTAP21Spec.getCredsMetadata, token: unbound).status
                == Spec.ok)
    }

    @Test func enumerationsContinueOnlyRightAfterTheirBegin() async throws {
        let (key, platform, _) = try await Self.populatedKey()
        let cm = try await platform.token(PINSpec.cm)
        let next = CTAP21Spec.enumerateRPsGetNextRP
        #expect(try await platform.credentialManagement(next, token: nil).status == Spec.notAllowed)
        let begin = try await platform.credentialManagement(CTAP21Spec.enumerateRPsBegin, token: cm)
        #expect(begin.body?[5]?.intValue == 2)
        #expect(begin.body?[3]?.mapValue?["id"] == "example.com")
        #expect(begin.body?[4]?.bytesValue == sha256("example.com"))
        let second = try await platform.credentialManagement(next, token: nil)
        #expect(second.status == Spec.ok)
        #expect(second.body?[3]?.mapValue?["id"] == "example.org")
        #expect(try await platform.credentialManagement(next, token: nil).status == Spec.notAllowed)

        // Another command in between ends the enumeration.
        _ = try await platform.credentialManagement(CTAP21Spec.enumerateRPsBegin, token: cm)
        #expect(try await send(key, Spec.getInfo).status == Spec.ok)
        #expect(try await platform.credentialManagement(next, token: nil).status == Spec.notAllowed)

        // So does the window closing.
        let params: CBORMap = [1: .byteString(sha256("example.com"))]
        let credentials = try await platform.credentialManagement(
            CTAP21Spec.enumerateCredentialsBegin, params, token: cm)
        #expect(credentials.body?[9]?.intValue == 2)
        #expect(credentials.body?[0x0A]?.intValue == 1)
        await key.advanceClock(by: .seconds(31))
        #expect(
            try await platform.credentialManagement(
                CTAP21Spec.enumerateCredentialsGetNextCredential, token: nil
            )
            .status == Spec.notAllowed)
        // An RP without credentials: NO_CREDENTIALS.
        let cm2 = try await platform.token(PINSpec.cm)
        #expect(
            try await platform.credentialManagement(
                CTAP21Spec.enumerateCredentialsBegin, [1: .byteString(sha256("example.net"))], token: cm2
            ).status == Spec.noCredentials)
    }

    @Test func updateUserInformationKeepsTheUserID() async throws {
        let (key, platform, ids) = try await Self.populatedKey()
        let cm = try await platform.token(PINSpec.cm)
        let id = try #require(ids["com1"])
        let changed = try await platform.credentialManagement(
            CTAP21Spec.updateUserInformation,
            [2: descriptor(id), 3: .map(["id": .byteString([1]), "name": "new", "displayName": ""])],
            token: cm)
        #expect(changed.status == Spec.ok)
        let stored = try #require(await key.discoverableCredentials.first { $0.id == id })
        #expect(stored.userName == "new")
        // An empty field is removed (§6.8.6).
        #expect(stored.userDisplayName == nil)
        #expect(
            try await platform.credentialManagement(
                CTAP21Spec.updateUserInformation, [2: descriptor(id), 3: .map(["id": .byteString([9])])],
                token: cm
            ).status == Spec.invalidParameter)
        // The preview command has no updateUserInformation.
        let preview = try await Self.populatedKey(.ctap21Preview())
        let legacy = try #require(try await preview.1.token(pin: "1234", permissions: nil).token)
        #expect(
            try await preview.1.credentialManagement(
                CTAP21Spec.updateUserInformation,
                [2: descriptor(try #require(preview.2["com1"])), 3: .map(["id": .byteString([1])])],
                token: legacy,
                command: CTAP21Spec.credentialManagementPreview
            ).status == PINSpec.invalidSubcommand)
        #expect(
            try await preview.1.credentialManagement(
                CTAP21Spec.getCredsMetadata, token: legacy, command: CTAP21Spec.credentialManagement
            ).status == Spec.invalidCommand)
    }

    @Test(arguments: [1, 2]) func configNeedsAnAcfgTokenOnAProtectedKey(version: Int) async throws {
        // Unprotected: no pinUvAuthParam needed.
        let open = try makeKey(.ctap21())
        let openPlatform = Platform(key: open, version: version)
        #expect(try await openPlatform.config(CTAP21Spec.toggleAlwaysUv, token: nil).status == Spec.ok)
        #expect(await open.alwaysUVEnabled)
        // alwaysUv on makes even an unprotected key demand a pinUvAuthParam.
        #expect(
            try await openPlatform.config(CTAP21Spec.toggleAlwaysUv, token: nil).status
                == PINSpec.puatRequired)

        let (key, platform, _) = try await Self.populatedKey(version: version)
        #expect(
            try await platform.config(CTAP21Spec.toggleAlwaysUv, token: nil).status == PINSpec.puatRequired)
        let cm = try await platform.token(PINSpec.cm)
        #expect(
            try await platform.config(CTAP21Spec.toggleAlwaysUv, token: cm).status == PINSpec.pinAuthInvalid)
        let acfg = try await platform.token(PINSpec.acfg)
        #expect(try await platform.config(0x7E, token: acfg).status == PINSpec.invalidSubcommand)
        #expect(try await platform.config(CTAP21Spec.toggleAlwaysUv, token: acfg).status == Spec.ok)
        #expect(await key.alwaysUVEnabled)
        // U2F cannot verify the user, so alwaysUv turns it off.
        let register: [UInt8] = [0x00, 0x01, 0x03, 0x00, 0x40] + [UInt8](repeating: 1, count: 64)
        #expect(await key.handleU2F(register) == [0x6D, 0x00])
        // The default configuration has no authenticatorConfig.
        let plain = try makeKey()
        #expect(try await send(plain, CTAP21Spec.config, [1: .unsigned(2)]).status == Spec.invalidCommand)
    }

    @Test func setMinPINLengthOnlyGrows() async throws {
        let (key, platform, _) = try await Self.populatedKey()
        let acfg = try await platform.token(PINSpec.acfg)
        let tooMany: CBORMap = [2: .array((0..<9).map { .textString("rp\($0).example") })]
        #expect(
            try await platform.config(CTAP21Spec.setMinPINLength, tooMany, token: acfg).status
                == PINSpec.pinPolicyViolation)
        #expect(
            try await platform.config(CTAP21Spec.setMinPINLength, [1: 4, 2: ["example.com"]], token: acfg)
                .status
                == Spec.ok)
        // A length of 4 keeps the 4-character PIN usable; 3 would lower the minimum.
        #expect(await key.state.forcePINChange == false)
        #expect(
            try await platform.config(CTAP21Spec.setMinPINLength, [1: 3], token: acfg).status
                == PINSpec.pinPolicyViolation)
        #expect(try await platform.config(CTAP21Spec.setMinPINLength, [1: 5], token: acfg).status == Spec.ok)
        let info = try await send(key, Spec.getInfo)
        #expect(info.body?[0x0D]?.intValue == 5)
        #expect(info.body?[0x0C]?.boolValue == true)
        #expect(
            try await platform.token(pin: "1234", permissions: PINSpec.mc).status
                == PINSpec.pinPolicyViolation)
        // A key without a PIN cannot be forced to change it.
        let open = Platform(key: try makeKey(.ctap21()), version: 2)
        #expect(
            try await open.config(CTAP21Spec.setMinPINLength, [3: true], token: nil).status == Spec.pinNotSet)
    }

    @Test func enterpriseAttestationNeedsACapableKey() async throws {
        let plain = Platform(key: try makeKey(.ctap21(enterpriseAttestation: false)), version: 2)
        #expect(
            try await plain.config(CTAP21Spec.enableEnterpriseAttestation, token: nil).status
                == PINSpec.invalidSubcommand)
        let info = try await send(plain.key, Spec.getInfo)
        #expect(info.body?[4]?.mapValue?["ep"] == nil)
        #expect(plain.key.enterpriseAttestationCertificateDER == nil)
        var request = makeCredentialRequest()
        request[0x0A] = 2
        #expect(try await send(plain.key, Spec.makeCredential, request).status == Spec.invalidParameter)
    }

    @Test func everyCTAP21SettingSurvivesARestartAndResetClearsThem() async throws {
        let path = NSTemporaryDirectory() + "virtualkey-ctap21-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (key, platform, _) = try await Self.populatedKey(stateFile: path)
        let acfg = try await platform.token(PINSpec.acfg)
        #expect(
            try await platform.config(
                CTAP21Spec.setMinPINLength, [1: 6, 2: ["example.com"], 3: true], token: acfg
            ).status == Spec.ok)
        #expect(try await platform.config(CTAP21Spec.toggleAlwaysUv, token: acfg).status == Spec.ok)
        #expect(
            try await platform.config(CTAP21Spec.enableEnterpriseAttestation, token: acfg).status == Spec.ok)
        let certificate = try #require(key.enterpriseAttestationCertificateDER)

        // Read-only (the reset below stays in memory): the first key still holds the file's lock.
        let restarted = try VirtualKey(configuration: .ctap21(), stateFile: path, stateFileAccess: .readOnly)
        let info = try #require(try await send(restarted, Spec.getInfo).body)
        #expect(info[0x0D]?.intValue == 6)
        #expect(info[0x0C]?.boolValue == true)
        #expect(info[4]?.mapValue?["alwaysUv"] == true)
        #expect(info[4]?.mapValue?["makeCredUvNotRqd"] == false)
        #expect(info[4]?.mapValue?["ep"] == true)
        #expect(info[0x14]?.intValue == 22)
        #expect(restarted.enterpriseAttestationCertificateDER == certificate)
        #expect(await restarted.state.minPINLengthRPIDs == ["example.com"])

        // Reset (within the power-up window) puts the configured defaults back.
        #expect(try await send(restarted, Spec.reset).status == Spec.ok)
        let after = try #require(try await send(restarted, Spec.getInfo).body)
        #expect(after[0x0D]?.intValue == 4)
        #expect(after[0x0C]?.boolValue == false)
        #expect(after[4]?.mapValue?["alwaysUv"] == false)
        #expect(after[4]?.mapValue?["ep"] == false)
        #expect(after[0x14]?.intValue == 25)
    }

    @Test func aStateFromACTAP20KeyGainsAnEnterpriseIdentity() async throws {
        let path = NSTemporaryDirectory() + "virtualkey-ctap20-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Each start is released before the next: a state file has one holder at a time.
        let (oldAAGUID, oldCertificate) = try {
            let old = try VirtualKey(stateFile: path)
            #expect(old.enterpriseAttestationCertificateDER == nil)
            return (old.aaguid, old.attestationCertificateDER)
        }()
        let certificate = try {
            let upgraded = try VirtualKey(configuration: .ctap21(), stateFile: path)
            #expect(upgraded.aaguid == oldAAGUID)
            #expect(upgraded.attestationCertificateDER == oldCertificate)
            return try #require(upgraded.enterpriseAttestationCertificateDER)
        }()
        // The identity is kept: a second start finds the same one.
        #expect(try VirtualKey(configuration: .ctap21(), stateFile: path).enterpriseAttestationCertificateDER == certificate)
        // And the CTAP 2.0 key still starts from the file, with its behaviour unchanged.
        let back = try VirtualKey(stateFile: path)
        #expect(try await send(back, CTAP21Spec.config, [1: .unsigned(1)]).status == Spec.invalidCommand)
    }

    @Test func aCardPowerOnReopensTheResetWindow() async throws {
        let key = try makeKey(.ctap21())
        await key.advanceClock(by: .seconds(11))
        #expect(try await send(key, Spec.reset).status == Spec.notAllowed)
        // The vpcd card's power-on is the transports' power-up.
        let card = VPCDCard(
            handler: key, configuration: .init(host: "127.0.0.1", port: 1),
            logger: Logger(label: "test.vpcd"))
        _ = await card.receive([VPCDCard.Control.powerOn.rawValue])
        #expect(try await send(key, Spec.reset).status == Spec.ok)
    }
}
