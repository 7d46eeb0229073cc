import CBOR
import CTAP2
import Foundation
import Testing
@testable import VirtualAuthenticator

/// The persistent PinUvAuthToken (CTAP 2.2 §6.5.5.7 pcmr, getInfo `perCredMgmtRO`) and the
/// getInfo members it decrypts (encIdentifier 0x19, encCredStoreState 0x1E), read with the host
/// module's independent implementation of the decryption.
@Suite struct VirtualKeyPersistentTokenTests {
    static func configuration() -> VirtualKey.Configuration {
        var configuration = VirtualKey.Configuration.ctap21()
        configuration.persistentPINUVAuthToken = true
        return configuration
    }

    static func info(_ key: VirtualKey) async throws -> AuthenticatorInfo {
        let reply = try await send(key, Spec.getInfo)
        return try AuthenticatorInfo(map: try #require(reply.body))
    }

    static func hostToken(_ bytes: [UInt8], version: Int) -> PINUVAuthToken {
        PINUVAuthToken(
            token: bytes, pinUVAuthProtocol: version == 1 ? PINUVAuthProtocolOne() : PINUVAuthProtocolTwo(),
            permissions: .persistentCredentialManagementReadOnly, rpID: nil)
    }

    @Test(arguments: [1, 2]) func pcmrComesAloneAndOnlyFromAKeyThatOffersIt(version: Int) async throws {
        let key = try makeKey(Self.configuration())
        let platform = Platform(key: key, version: version)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        let first = try #require(try await platform.token(pin: "1234", permissions: PINSpec.pcmr).token)
        let second = try #require(try await platform.token(pin: "1234", permissions: PINSpec.pcmr).token)
        #expect(first == second, "the persistent token is the same for every request")
        #expect(first.count == 32)
        #expect(try await platform.token(pin: "1234", permissions: PINSpec.pcmr | PINSpec.cm).status == Spec.invalidParameter)

        let plain = try makeKey(.ctap21())
        let other = Platform(key: plain, version: version)
        #expect(try await other.setPIN("1234") == Spec.ok)
        #expect(try await other.token(pin: "1234", permissions: PINSpec.pcmr).status == PINSpec.unauthorizedPermission)
        let plainInfo = try await Self.info(plain)
        #expect(plainInfo.options[.perCredentialManagementReadOnly] == nil)
        #expect(plainInfo.encIdentifier == nil && plainInfo.encCredStoreState == nil)
    }

    @Test func theIdentifierIsStableAndTheStoreStateFollowsTheCredentials() async throws {
        let key = try makeKey(Self.configuration())
        let platform = Platform(key: key, version: 2)
        #expect(try await platform.setPIN("1234") == Spec.ok)
        let bytes = try #require(try await platform.token(pin: "1234", permissions: PINSpec.pcmr).token)
        let token = Self.hostToken(bytes, version: 2)
        let a = try await Self.info(key)
        let b = try await Self.info(key)
        #expect(a.options[.perCredentialManagementReadOnly] == true)
        #expect(a.encIdentifier?.count == 32 && a.encIdentifier != b.encIdentifier, "a fresh IV each time")
        let identifier = try #require(try a.identifier(decryptingWith: token))
        #expect(identifier.count == 16)
        #expect(try b.identifier(decryptingWith: token) == identifier)
        let before = try #require(try a.credentialStoreState(decryptingWith: token))
        #expect(try b.credentialStoreState(decryptingWith: token) == before)
        // A PIN/UV-protected key makes discoverable credentials with an mc token.
        let mc = try #require(try await platform.token(pin: "1234", permissions: PINSpec.mc).token)
        let made = try await send(key, Spec.makeCredential, platform.makeCredential(token: mc, rk: true))
        #expect(made.status == Spec.ok)
        let after = try #require(try await Self.info(key).credentialStoreState(decryptingWith: token))
        #expect(after != before)
        #expect(try await Self.info(key).identifier(decryptingWith: token) == identifier)
    }

    @Test func theTokenSurvivesARestartButNotAPINChange() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pcmr-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("state").path
        let before: [UInt8]
        let identifier: [UInt8]?
        do {
            let first = try VirtualKey(configuration: Self.configuration(), stateFile: path)
            let platform = Platform(key: first, version: 2)
            #expect(try await platform.setPIN("1234") == Spec.ok)
            before = try #require(try await platform.token(pin: "1234", permissions: PINSpec.pcmr).token)
            identifier = try await Self.info(first).identifier(decryptingWith: Self.hostToken(before, version: 2))
        }
        // The first key is gone (its state-file lock released): the same file is a power-up.
        let restarted = try VirtualKey(configuration: Self.configuration(), stateFile: path)
        let platform = Platform(key: restarted, version: 2)
        #expect(try await platform.token(pin: "1234", permissions: PINSpec.pcmr).token == before)
        #expect(try await Self.info(restarted).identifier(decryptingWith: Self.hostToken(before, version: 2)) == identifier)
        #expect(try await platform.changePIN(from: "1234", to: "5678") == Spec.ok)
        let after = try #require(try await platform.token(pin: "5678", permissions: PINSpec.pcmr).token)
        #expect(after != before)
        #expect(try await Self.info(restarted).identifier(decryptingWith: Self.hostToken(after, version: 2)) == identifier)
    }
}
